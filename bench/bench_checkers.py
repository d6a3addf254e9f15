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

Then what the replay of a failing checker costs (`envs/codecontests/replay.py`), per test, the checker
asked directly on the 50 tests (`ProgramJudge.judge`), with the farm's replay and without it (a
failure taken as `judge_error` as it stands, as before the replay existed), test by test:

4. the common path: the C++ and the Python checker on the right outputs (accepted) and on wrong
   ones (rejected): no checker fails, so no replay runs; the two columns should be equal;
5. a failing checker (a Python checker whose int() raises on a word, fed a word): without replay (one
   run, `judge_error`), replayed for the first time (two runs: the output, then the expected answer),
   and replayed with the outcome cached (one run and a lookup).

Usage: python bench/bench_checkers.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

from bench_cpp import SOLUTION, TESTS, problem  # noqa: E402

from evalfarm.envs.base import Context  # noqa: E402
from evalfarm.envs.codecontests.checkers import ProgramChecker  # noqa: E402
from evalfarm.envs.codecontests.judging import ProgramJudge  # noqa: E402
from evalfarm.envs.codecontests.replay import ReplayCache  # noqa: E402
from evalfarm.envs.scoring import score_job  # noqa: E402
from evalfarm.sandbox import Sandbox  # noqa: E402
from evalfarm.status import Status  # noqa: E402

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
# The dataset style: the output parsed without a check, so a word makes int() raise (FAIL, exit 3).
CRASHING_CHECKER = """
import sys
output = [int(token) for token in open(sys.argv[2]).read().split()]
answer = [int(token) for token in open(sys.argv[3]).read().split()]
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


def per_test_ms(judge: ProgramJudge, tests: list[dict[str, str]], output: Any, status: Status) -> float:
    """Milliseconds per test of the checker's verdict on `output(test)` for each test, all `status`."""
    started = time.perf_counter()
    for test in tests:
        verdict = judge.judge(test["input"], output(test), test["output"])
        assert verdict.status is status, verdict
    return (time.perf_counter() - started) / len(tests) * 1e3


def side_by_side_ms(
    judges: dict[str, ProgramJudge], tests: list[dict[str, str]], output: Any, status: Status
) -> dict[str, float]:
    """Milliseconds per test of each judge on the same outputs, test by test in alternating order (so
    the machine's drift falls on both alike)."""
    spent = dict.fromkeys(judges, 0.0)
    for number, test in enumerate(tests):
        order = list(judges) if number % 2 == 0 else list(reversed(judges))
        for label in order:
            started = time.perf_counter()
            verdict = judges[label].judge(test["input"], output(test), test["output"])
            spent[label] += time.perf_counter() - started
            assert verdict.status is status, verdict
    return {label: seconds / len(tests) * 1e3 for label, seconds in spent.items()}


def _right(test: dict[str, str]) -> bytes:
    return test["output"].encode()


def _wrong(test: dict[str, str]) -> bytes:
    return b"0 0\n"


def _garbage(test: dict[str, str]) -> bytes:
    return b"many words\n"


COMMON = {"right": (_right, Status.OK), "wrong": (_wrong, Status.WRONG_ANSWER)}


def replay_costs(ctx: Context, tests: list[dict[str, str]], rounds: int) -> dict[str, list[float]]:
    """Per-test milliseconds of each way of asking a checker (module docstring, 4 and 5)."""
    healthy = {name: ProgramChecker(spec["language"], spec["code"], "testlib")
               for name, spec in CHECKERS.items() if name != "tokens"}  # fmt: skip
    crashing = ProgramChecker("python", CRASHING_CHECKER, "testlib")
    times: dict[str, list[float]] = collections.defaultdict(list)
    for round_no in range(rounds):
        for name, checker in healthy.items():
            judges = {
                "with replay": ProgramJudge(checker, ctx.sandbox, replays=ReplayCache()),
                "without replay": ProgramJudge(checker, ctx.sandbox, replays=None),
            }
            for kind, (output, status) in COMMON.items():
                for label, ms in side_by_side_ms(judges, tests, output, status).items():
                    times[f"{name}, {kind} output, {label}"].append(ms)
        without = ProgramJudge(crashing, ctx.sandbox, replays=None)
        ms = per_test_ms(without, tests, _garbage, Status.JUDGE_ERROR)
        times["failing checker, without replay (judge_error)"].append(ms)
        replayed = ProgramJudge(crashing, ctx.sandbox, replays=ReplayCache())
        for label in ("first time", "cached"):
            ms = per_test_ms(replayed, tests, _garbage, Status.WRONG_ANSWER)
            times[f"failing checker, replayed, {label} (wrong_answer)"].append(ms)
        print(f"replay round {round_no + 1}/{rounds} done", flush=True)
    return times


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
    replays = replay_costs(ctx, prob["hidden_tests"], args.rounds)
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
    print_replays(replays, args.rounds)


def print_replays(times: dict[str, list[float]], rounds: int) -> None:
    """The replay's costs, per test (medians), the common path's columns side by side."""
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"\nThe checker asked directly, {TESTS} tests, ms per test ({rounds} rounds; medians)")
    for name in CHECKERS:
        for kind in ("right", "wrong"):
            key = f"{name}, {kind} output"
            if f"{key}, with replay" in median:
                with_, without = median[f"{key}, with replay"], median[f"{key}, without replay"]
                print(f"  {key:<36} with replay {with_:6.3f}, without {without:6.3f}"
                      f"  (ratio {with_ / without:.3f})")  # fmt: skip
    for key in [name for name in median if name.startswith("failing")]:
        print(f"  {key:<58} {median[key]:6.3f}")


if __name__ == "__main__":
    main()
