"""The farm end to end: the same verdicts as inline scoring, pinned children, the commands.

Real Redis (a private one per test, on a free port), real worker nodes, real sandboxed programs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import farm_support
import pytest
from farm_support import ROOT, pool_children, wait_for, worker_env

from evalfarm.broker.farm import Farm
from evalfarm.workers.demo_jobs import (
    codecontests_jobs,
    hostile_jobs,
    humaneval_jobs,
    program_jobs,
    weight_edit_jobs,
)

# Fixtures of the farm's test support: a private Redis, worker nodes on it, a producer client.
redis_server = farm_support.redis_server
workers = farm_support.workers
farm = farm_support.farm

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(240)]

# What differs between two runs of the same job: timings, where and when it ran.
VOLATILE = {
    *("run_s", "wall_s", "cpu_s", "max_rss_mb", "queued_s", "latency_s", "attempt", "infra", "feedback"),
    *("parts", "merge_s"),
}


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """A result without the fields that legitimately differ from run to run."""
    kept = {k: v for k, v in result.items() if k not in VOLATILE}
    if isinstance(kept.get("tests"), list):
        kept["tests"] = [{k: v for k, v in t.items() if k not in VOLATILE} for t in kept["tests"]]
    return kept


def mixed_jobs() -> list[dict[str, Any]]:
    """Jobs of every code env and many statuses, plus malformed ones."""
    programs = [
        {"id": "ok", "env": "program", "code": "print(input()[::-1])", "stdin": "abc"},
        {"id": "exit3", "env": "program", "code": "import sys; sys.exit(3)"},
        {"id": "syntax", "env": "program", "code": "def f(:"},
        {"id": "slow", "env": "program", "code": "while True: pass", "limits": {"wall_s": 1, "cpu_s": 1}},
        {"id": "bad-limits", "env": "program", "code": "pass", "limits": {"wall_s": -1}},
        {"id": "no-env", "code": "pass"},
        {"id": "unknown-env", "env": "nope"},
    ]
    # Hostile programs whose output is deterministic (a fork bomb's stderr is not).
    hostile = [
        j for j in hostile_jobs() if j["id"].split("-", 1)[1] in ("infinite_loop", "read_secrets", "network")
    ]
    return [*programs, *program_jobs(20), *humaneval_jobs(count=12), *codecontests_jobs()[:4], *hostile]


@pytest.mark.sandbox
def test_farm_results_equal_inline_results(workers, farm) -> None:
    from evalfarm.workers.inline import InlinePool

    jobs = mixed_jobs()
    with InlinePool(2) as pool:
        inline = list(pool.score(jobs))
    workers.start(EVALFARM_SLOT_BASE="8", EVALFARM_EXTRA_ENVS="{}")  # slots apart from the inline pool's
    through_farm = farm.score(jobs)
    assert [r["id"] for r in through_farm] == [j.get("id") for j in jobs]
    differ = [
        {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
        for a, b in zip(map(comparable, through_farm), map(comparable, inline), strict=True)
        if a != b
    ]
    assert differ == []
    assert not [(r["id"], r["error"]) for r in through_farm if r.is_infra]


@pytest.mark.minatar
def test_weight_edits_split_by_episodes_merge_to_the_whole_jobs_result(redis_server, workers) -> None:
    from evalfarm.envs import Context, score_job

    jobs = weight_edit_jobs(episodes=12)
    whole = [score_job(job, Context()) for job in jobs]
    workers.start(EVALFARM_EXTRA_ENVS="{}")
    settings = farm_support.client_settings(redis_server.url, episodes_per_part=4)
    with Farm(settings=settings, progress=False) as client:
        split = client.score(jobs)
        assert client.last_stats.split_jobs == len(jobs)
    assert [r["parts"] for r in split] == [3] * len(jobs)
    assert [comparable(r) for r in split] == [comparable(r) for r in whole]
    assert any(r["status"] == "ok" and r["reward"] > 0 for r in split)


def affinities(node: Any) -> dict[int, set[int]]:
    """The CPUs each live pool child of `node` may run on (children exiting meanwhile are skipped)."""
    found = {}
    for pid in pool_children(node):
        try:
            found[pid] = os.sched_getaffinity(pid)
        except ProcessLookupError:
            continue
    return found


def test_pool_children_are_pinned_and_replacements_repinned(workers) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    node = workers.start(concurrency=len(cpus))

    def pinned() -> dict[int, set[int]]:
        return affinities(node)

    wait_for(lambda: all(len(c) == 1 for c in pinned().values()), 10, "children pinned")
    before = pinned()
    assert sorted(next(iter(c)) for c in before.values()) == cpus
    victim = next(iter(before))
    os.kill(victim, signal.SIGKILL)
    wait_for(lambda: victim not in pinned() and len(pinned()) == len(cpus), 20, "a replacement child")
    wait_for(lambda: all(len(c) == 1 for c in pinned().values()), 10, "replacement pinned")
    after = pinned()
    assert sorted(next(iter(c)) for c in after.values()) == cpus  # the freed core is taken again


def test_a_child_killed_at_start_up_is_replaced_and_one_that_failed_stops_the_node() -> None:
    """Celery's start check (did_start_ok) on real pool processes: killed by a signal is a fault
    maintenance mends; exited on its own means the pool cannot start."""
    import billiard

    from evalfarm.workers.pool import AsynPool

    def children(*exits: int | None) -> list[Any]:
        made = []
        for code in exits:
            # None: a child still running; a number: one that exits with that code.
            target, arg = (time.sleep, 30) if code is None else (sys.exit, code)
            child = billiard.Process(target=target, args=(arg,))
            child.start()
            made.append(child)
        return made

    class Pool:  # only the children the check reads, and the farm's rule
        did_start_ok = AsynPool.did_start_ok
        children_started = staticmethod(AsynPool.children_started)

    pool = Pool()
    pool._pool = children(None, None)  # type: ignore[attr-defined]
    try:
        assert pool.did_start_ok()
        os.kill(pool._pool[0].pid, signal.SIGKILL)  # type: ignore[attr-defined]
        pool._pool[0].join()  # type: ignore[attr-defined]
        assert pool._pool[0].exitcode == -signal.SIGKILL  # type: ignore[attr-defined]
        assert pool.did_start_ok()
        failed = children(1)[0]
        failed.join()
        pool._pool.append(failed)  # type: ignore[attr-defined]
        assert not pool.did_start_ok()
    finally:
        for child in pool._pool:  # type: ignore[attr-defined]
            if child.exitcode is None:
                os.kill(child.pid, signal.SIGKILL)
            child.join()


def test_recycled_children_are_replaced_and_pinned(workers, farm) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    node = workers.start(concurrency=len(cpus), EVALFARM_MAX_TASKS_PER_CHILD="2")
    jobs = farm_support.sleepy_jobs(40, 0.02)
    results = farm.score(jobs)
    farm_support.assert_each_once(jobs, results)
    assert len({r["pid"] for r in results}) > len(cpus)  # children were recycled along the way

    def full_and_pinned() -> bool:
        # One snapshot for every condition: the pool may still be replacing its last recycled child.
        pinned = affinities(node)
        return all(len(c) == 1 for c in pinned.values()) and sorted(min(c) for c in pinned.values()) == cpus

    wait_for(full_and_pinned, 20, "a full pool, one child pinned to each core")


def _evalfarm(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "evalfarm.workers.cli", *args]
    return subprocess.run(command, cwd=ROOT, env=worker_env(), capture_output=True, text=True, **kwargs)


@pytest.mark.sandbox
def test_score_local_matches_inline(tmp_path: Path) -> None:
    jobs = [*program_jobs(10), *humaneval_jobs(count=4), {"id": "unknown-env", "env": "nope"}]
    source = tmp_path / "jobs.jsonl"
    source.write_text("".join(json.dumps(j) + "\n" for j in jobs) + "not json\n")
    outputs = {}
    for mode in ("--inline", "--local"):
        out = tmp_path / f"out{mode}.jsonl"
        done = _evalfarm("score", str(source), "-o", str(out), mode, "--workers", "2", timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        outputs[mode] = [comparable(json.loads(line)) for line in out.read_text().splitlines()]
    assert outputs["--local"] == outputs["--inline"]
    assert len(outputs["--local"]) == len(jobs) + 1
    assert outputs["--local"][-1]["status"] == "invalid_job"


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                children = {int(c) for c in (task / "children").read_text().split()}
            except OSError:
                continue
            todo.extend(children - found)
            found |= children
    return found


def test_up_serves_a_farm_and_stops_everything_it_started() -> None:
    with farm_support.running_up(worker_env()) as (up, url, _):
        with Farm(settings=farm_support.client_settings(url), progress=False) as client:
            jobs = farm_support.sleepy_jobs(10, 0.01)
            farm_support.assert_each_once(jobs, client.score(jobs))
        started = _descendants(up.pid)
        assert len(started) >= 3  # redis, the node, its pool child
        up.send_signal(signal.SIGTERM)
        assert up.wait(60) == 0
        time.sleep(0.2)
        assert not [pid for pid in started if Path(f"/proc/{pid}").exists()]


def test_a_killed_score_local_leaves_nothing_running(tmp_path: Path) -> None:
    source = tmp_path / "jobs.jsonl"
    source.write_text("".join(json.dumps(j) + "\n" for j in farm_support.sleepy_jobs(200, 0.05)))
    command = [sys.executable, "-m", "evalfarm.workers.cli", "score", str(source), "--local", "--no-progress"]
    score = subprocess.Popen(command, cwd=ROOT, env=worker_env(), stdout=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(_descendants(score.pid)) >= 3, 60, "redis, the node and its pool")
        started = _descendants(score.pid)
        time.sleep(1.0)
        score.kill()  # no clean-up code runs: the parent-death signal must stop the rest
        score.wait()
        wait_for(lambda: not [p for p in started if Path(f"/proc/{p}").exists()], 60, "everything stopped")
    finally:
        if score.poll() is None:
            score.kill()
            score.wait()


@pytest.mark.sandbox
@pytest.mark.minatar
def test_demo_scores_every_registered_env_and_prints_a_summary() -> None:
    done = _evalfarm("demo", "--no-progress", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split() for line in done.stdout.splitlines()]
    assert ["humaneval", "ok", "41"] in rows  # every canonical completion passes
    assert {row[0] for row in rows if len(row) == 3} >= {
        "humaneval",
        "codecontests",
        "program",
        "weight_edits",
    }
    assert "infra errors: 0" in done.stdout
    assert "latency (batch start to result): p50" in done.stdout
    # A user reads results, not the farm's workings: no Celery banner, no warning about root, no
    # log line of the node's (its slots' layers, its shutdown): without the progress bar, nothing on
    # stderr at all.
    for noise in (
        "-------------- ",
        "[config]",
        "SecurityWarning",
        "superuser privileges",
        "INFO",
        "Warm shutdown",
    ):
        assert noise not in done.stdout + done.stderr, noise
    assert done.stderr == ""
