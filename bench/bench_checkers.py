"""Checker programs: what a C++ testlib checker adds to each test, beside the same job judged by a
built-in comparison, side by side in one run, on one sandbox slot.

A CodeContests-style problem (the sum and the maximum of n numbers) with 50 hidden tests and a C++
solution, judged three ways, each job scored twice (the first scoring compiles what it needs; the
second is timed with the solution's and the checker's binaries held, as every later sample of a
problem finds them):

1. `tokens`: the built-in comparison (testlib's wcmp rule), no checker process;
2. a C++ checker under testlib's protocol (`#include "testlib.h"`), compiled once per problem;
3. the same checker written in Python.

The per-test cost of a checker is (job time with it - job time with `tokens`) / 50 (goal for C++:
under 2 ms). The bench and its slot are pinned to one core, as a worker's pool process is.

Usage: python bench/bench_checkers.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

from bench_cpp import SOLUTION, TESTS, problem  # noqa: E402

from evalfarm.envs.base import Context  # noqa: E402
from evalfarm.envs.scoring import score_job  # noqa: E402
from evalfarm.sandbox import Sandbox  # noqa: E402

CPP_CHECKER = r"""
#include "testlib.h"
int main(int argc, char* argv[]) {
    registerTestlibCmd(argc, argv);
    long long sum = ans.readLong(), best = ans.readLong();
    long long got_sum = ouf.readLong(), got_best = ouf.readLong();
    if (got_sum != sum) quitf(_wa, "sum %lld, expected %lld", got_sum, sum);
    if (got_best != best) quitf(_wa, "maximum %lld, expected %lld", got_best, best);
    quitf(_ok, "sum and maximum");
}
"""
PY_CHECKER = """
import sys
output, answer = (open(path).read().split() for path in sys.argv[2:4])
sys.exit(0 if output == answer else 1)
"""
CHECKERS: dict[str, Any] = {
    "tokens": "tokens",
    "C++ testlib checker": {"type": "program", "language": "cpp", "code": CPP_CHECKER},
    "Python checker": {"type": "program", "language": "python", "code": PY_CHECKER},
}


def judged_twice(ctx: Context, prob: dict[str, Any], checker: Any, round_no: int) -> float:
    """Seconds of the second scoring of the job (binaries held); both scorings pass every test."""
    job = {
        "id": f"r{round_no}", "env": "codecontests", "language": "cpp",
        "code": SOLUTION + f"// round {round_no}\n", "problem": {**prob, "checker": checker},
    }  # fmt: skip
    timings = []
    for _ in range(2):
        started = time.perf_counter()
        result = score_job(job, ctx)
        timings.append(time.perf_counter() - started)
        assert (result["status"], result["passed"]) == ("ok", TESTS), result
    return timings[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the three jobs, interleaved")
    args = parser.parse_args()
    prob = problem()
    core = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    ctx = Context(slot=0, sandbox=Sandbox(slot=0, cpus={core}))
    ctx.sandbox.start()
    times: dict[str, list[float]] = {name: [] for name in CHECKERS}
    for round_no in range(args.rounds):
        for name, checker in CHECKERS.items():
            times[name].append(judged_twice(ctx, prob, checker, round_no))
        line = ", ".join(f"{name} {times[name][-1]:.3f} s" for name in CHECKERS)
        print(f"round {round_no + 1}/{args.rounds}: {line}", flush=True)
    ctx.close()
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"\nA C++ solution, {TESTS} hidden tests, binaries held, one core ({args.rounds} rounds; medians)")
    base = median["tokens"]
    for name in CHECKERS:
        per_test = median[name] / TESTS * 1e3
        extra = (median[name] - base) / TESTS * 1e3
        note = "" if name == "tokens" else f"  {extra:+.3f} ms per test over `tokens`"
        print(f"  {name:<20} job {median[name]:6.3f} s, {per_test:6.3f} ms per test{note}")
    cpp = (median["C++ testlib checker"] - base) / TESTS * 1e3
    print(f"  goal: a C++ checker adds under 2 ms per test ({cpp:.3f} ms)")


if __name__ == "__main__":
    main()
