"""Sandboxed runs against bare interpreter starts, side by side in one run.

1. N trivial programs through `evalfarm score --inline --workers 2` against N bare
   `python -I -S -c pass` processes, two at a time (goal: ratio <= 0.7).
2. N numpy-importing programs the same way against N cold `python -c "import numpy"`
   (goal: ratio <= 0.1).

Usage: python bench/bench_sandbox.py [N]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVALFARM = [sys.executable, "-m", "evalfarm.workers.cli"]


def bare_processes(argv: list[str], count: int, parallel: int = 2) -> float:
    """Seconds to run `count` processes of `argv`, `parallel` at a time."""
    started = time.perf_counter()
    running: list[subprocess.Popen[bytes]] = []
    for _ in range(count):
        if len(running) == parallel:
            running.pop(0).wait()
        running.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL))
    for process in running:
        process.wait()
    return time.perf_counter() - started


def farm_inline(code: str, count: int, workers: int = 2) -> float:
    """Seconds for `evalfarm score --inline` to score `count` program jobs of `code`, start-up included."""
    with tempfile.TemporaryDirectory() as directory:
        jobs = Path(directory) / "jobs.jsonl"
        with jobs.open("w") as handle:
            for index in range(count):
                handle.write(json.dumps({"id": f"j{index}", "env": "program", "code": code}) + "\n")
        results = Path(directory) / "results.jsonl"
        started = time.perf_counter()
        subprocess.run(
            [
                *EVALFARM,
                "score",
                str(jobs),
                "-o",
                str(results),
                "--inline",
                "--workers",
                str(workers),
                "--no-progress",
            ],
            check=True,
            cwd=ROOT,
            stderr=subprocess.DEVNULL,
        )
        elapsed = time.perf_counter() - started
        statuses = {json.loads(line)["status"] for line in results.open()}
        if statuses != {"ok"}:
            raise SystemExit(f"benchmark runs failed: {statuses}")
        return elapsed


def compare(label: str, ours: float, theirs: float, count: int, goal: float) -> None:
    ratio = ours / theirs
    verdict = "meets" if ratio <= goal else "misses"
    print(
        f"{label}: sandboxed {ours:.2f} s ({ours / count * 1000:.2f} ms/run) vs bare {theirs:.2f} s "
        f"({theirs / count * 1000:.2f} ms/run): ratio {ratio:.3f} ({verdict} the goal <= {goal})"
    )


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print(f"{count} runs each, 2 at a time, on {os.cpu_count()} cores")
    trivial_bare = bare_processes([sys.executable, "-I", "-S", "-c", "pass"], count)
    trivial_ours = farm_inline("pass", count)
    compare("trivial program", trivial_ours, trivial_bare, count, 0.7)
    numpy_count = max(count // 4, 50)
    numpy_bare = bare_processes([sys.executable, "-c", "import numpy"], numpy_count)
    numpy_ours = farm_inline("import numpy\nnumpy.ones(3).sum()", numpy_count)
    compare("numpy program", numpy_ours, numpy_bare, numpy_count, 0.1)


if __name__ == "__main__":
    main()
