"""Every language of the toolchain table, side by side in one run on one sandbox slot, pinned to one
core as a worker's pool process and its slot are:

1. per test: a sandboxed test of a program already built (a `Sandbox.run` round trip, the build
   held) against the same build run bare with `subprocess.run` (compiled on the host with the same
   command lines; a runtime's program run by the same runtime). Goal: under 1.5 ms more for the
   compiled languages; for the runtimes (Java, Node.js, PyPy), their own start is the cost;
2. compile once per job (the `codecontests` job of 50 tests: one compile, 50 runs) against compile
   per test, as a per-test API does (50 compiles and runs), for the compiled languages.

The program adds two numbers (tests/test_languages.py's `sum` in each language).

Usage: python bench/bench_languages.py [--rounds 20] [--tests 50] [--languages c,cpp,...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from _host_build import bare_command  # noqa: E402
from test_languages import PROGRAMS  # noqa: E402

from evalfarm.envs.base import Context  # noqa: E402
from evalfarm.envs.scoring import score_job  # noqa: E402
from evalfarm.sandbox import Limits, Sandbox, languages  # noqa: E402


def per_test(box: Sandbox, language: str, code: str, command: list[str], rounds: int) -> tuple[float, float]:
    """Median milliseconds of a sandboxed test (the build held) and of the same build run bare."""
    box.run(code, "1 2\n", Limits(), language=language)
    sandboxed, bare = [], []
    for index in range(rounds):
        stdin = f"{index} 2\n"
        started = time.perf_counter()
        result = box.run(code, stdin, Limits(), language=language)
        sandboxed.append(time.perf_counter() - started)
        assert result.stdout == f"{index + 2}\n".encode(), result
        started = time.perf_counter()
        done = subprocess.run(command, input=stdin.encode(), capture_output=True, check=True)
        bare.append(time.perf_counter() - started)
        assert done.stdout == f"{index + 2}\n".encode()
    return statistics.median(sandboxed) * 1e3, statistics.median(bare) * 1e3


def compile_once_and_per_test(ctx: Context, language: str, code: str, tests: int) -> tuple[float, float]:
    """Seconds of a `codecontests` job of `tests` tests (one compile) and of `tests` compiles and runs."""
    problem = {
        "id": "add",
        "hidden_tests": [{"input": f"{i} 1\n", "output": f"{i + 1}\n"} for i in range(tests)],
    }
    comment = "#" if language == "pypy3" else "//"
    job = {"id": "j", "env": "codecontests", "problem": problem, "language": language}
    started = time.perf_counter()
    result = score_job({**job, "code": code + f"\n{comment} {time.time_ns()}\n"}, ctx)
    once = time.perf_counter() - started
    assert result["status"] == "ok" and result["compile"]["cached"] is False, result
    started = time.perf_counter()
    for index in range(tests):
        fresh = code + f"\n{comment} {time.time_ns()} {index}\n"
        run = ctx.sandbox.run(fresh, f"{index} 1\n", Limits(), language=language)
        assert run.stdout == f"{index + 1}\n".encode(), run
    return once, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rounds", type=int, default=20, help="tests timed per language (sandboxed and bare)"
    )
    parser.add_argument("--tests", type=int, default=50, help="tests of the compile-once job")
    parser.add_argument("--languages", default=",".join(languages.LANGUAGES), help="comma-separated")
    args = parser.parse_args()
    core = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    wanted = [name for name in args.languages.split(",") if name in languages.installed()]
    ctx = Context(slot=0, sandbox=Sandbox(slot=0, cpus={core}))
    ctx.sandbox.start()
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for name in wanted:
            language, code = languages.LANGUAGES[name], PROGRAMS[name]["sum"]
            command = bare_command(language, code, Path(directory))
            sandboxed, bare = per_test(ctx.sandbox, name, code, command, args.rounds)
            once = each = None
            if language.compiled:
                once, each = compile_once_and_per_test(ctx, name, code, args.tests)
            rows.append((name, sandboxed, bare, once, each))
            print(f"{name}: done", flush=True)
    ctx.close()
    print(f"\nPer test, median of {args.rounds} (ms), and a {args.tests}-test job, one core")
    header = ("language", "sandboxed", "bare", "overhead", "compile once", "per test", "ratio")
    print("  {:<9} {:>9} {:>8} {:>9}   {:>12} {:>9} {:>6}".format(*header))
    for name, sandboxed, bare, once, each in rows:
        compiled = f"{once:10.2f} s {each:7.1f} s {each / once:5.1f}x" if once else f"{'(no compile)':>30}"
        print(f"  {name:<9} {sandboxed:9.2f} {bare:8.2f} {sandboxed - bare:+9.2f}   {compiled}")
    print("  goal: overhead under 1.5 ms for compiled languages; a runtime's start for the others")


if __name__ == "__main__":
    main()
