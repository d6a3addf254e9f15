"""Metrics without a farm: bounded labels, what a result counts for, and folding dead processes' files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector

from evalfarm.workers.metrics import instruments as m
from evalfarm.workers.metrics.hooks import Labels, Recorder, record_chunk, sandbox_runs
from evalfarm.workers.metrics.multiproc import fold_dead, prepare_dir

LABELS = Labels(envs=frozenset({"program", "codecontests", "weight_edits"}), queues=frozenset({"code"}))


def registry() -> CollectorRegistry:
    """A registry of the instruments as this process holds them (plain in-process metrics here)."""
    reg = CollectorRegistry()
    for instrument in m.INSTRUMENTS:
        reg.register(instrument)
    return reg


def value(reg: CollectorRegistry, name: str, **labels: str) -> float:
    return reg.get_sample_value(name, labels) or 0.0


def test_labels_come_from_bounded_sets_only() -> None:
    assert LABELS.env("program") == "program"
    assert [LABELS.env(v) for v in ("job-1234", None, 3)] == ["unknown"] * 3
    assert LABELS.queue("code") == "code" and LABELS.queue("q-of-a-stranger") == "other"


def test_a_chunk_counts_jobs_by_env_and_status_parts_apart_and_the_runs_it_shows() -> None:
    reg = registry()
    before = {
        key: value(reg, *key[:1], **dict(key[1:]))
        for key in [
            ("evalfarm_jobs_total", ("env", "program"), ("status", "ok")),
            ("evalfarm_jobs_total", ("env", "unknown"), ("status", "invalid_job")),
            ("evalfarm_jobs_total", ("env", "codecontests"), ("status", "wrong_answer")),
            ("evalfarm_job_parts_total", ("env", "weight_edits"), ("status", "ok")),
            ("evalfarm_sandbox_runs_total", ("status", "ok")),
            ("evalfarm_sandbox_runs_total", ("status", "wrong_answer")),
            ("evalfarm_job_duration_seconds_count", ("env", "program")),
        ]
    }
    jobs: list[Any] = [{"id": "a"}, {"id": "b"}, {"id": "c"}, {"id": "d", "episode_range": [0, 10]}, "junk"]
    results = [
        {"id": "a", "env": "program", "status": "ok", "run_s": 0.01, "wall_s": 0.01},
        {"id": "b", "env": "no-such-env", "status": "invalid_job", "run_s": 0.0},
        {"id": "c", "env": "codecontests", "status": "wrong_answer", "run_s": 0.1,
         "tests": [{"status": "ok"}, {"status": "ok"}, {"status": "wrong_answer"}]},
        {"id": "d", "env": "weight_edits", "status": "ok", "run_s": 1.0},
        "not a result",
    ]  # fmt: skip
    record_chunk(LABELS, jobs, results)
    after = {key: value(reg, *key[:1], **dict(key[1:])) for key in before}
    assert [after[k] - before[k] for k in before] == [1, 1, 1, 1, 3, 1, 1]


def test_sandbox_runs_are_read_from_the_result() -> None:
    assert sandbox_runs({"status": "timeout", "wall_s": 1.0}) == ["timeout"]
    assert sandbox_runs({"status": "invalid_job"}) == []
    assert sandbox_runs({"status": "ok", "tests": [{"status": "ok"}, "x"]}) == ["ok"]


def test_receivers_track_busy_and_idle_and_never_raise_on_odd_messages() -> None:
    from evalfarm.broker.settings import WorkerSettings
    from evalfarm.tasks import WorkerProcess

    reg = registry()
    process = WorkerProcess(WorkerSettings(warm_sandbox=False))
    recorder = Recorder(LABELS, process)
    recorder.process_started()
    assert value(reg, "evalfarm_worker_processes", state="idle") == 1
    recorder.task_started(task=None, kwargs={"sent_at": "yesterday"})
    assert value(reg, "evalfarm_worker_processes", state="busy") == 1
    recorder.task_finished(task=None, args=("not jobs",), retval=[{"env": 1, "status": None}, 7])
    assert value(reg, "evalfarm_worker_processes", state="busy") == 0
    assert value(reg, "evalfarm_worker_processes", state="idle") == 1
    assert value(reg, "evalfarm_jobs_total", env="unknown", status="unknown") >= 1
    process.close()


def test_prepare_dir_empties_a_configured_directory_of_metrics_files_only(tmp_path: Path) -> None:
    (tmp_path / "counter_1.db").write_bytes(b"x")
    (tmp_path / "keep.txt").write_text("not ours")
    assert prepare_dir(str(tmp_path)) == tmp_path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_a_private_directory_is_removed_at_exit_and_orphans_of_dead_nodes_at_the_next_start(
    tmp_path: Path,
) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    orphan = tmp_path / f"evalfarm-metrics-{dead.pid}-abc"
    orphan.mkdir()
    alive = tmp_path / f"evalfarm-metrics-{os.getpid()}-def"
    alive.mkdir()
    probe = (
        "import sys; from evalfarm.workers.metrics.multiproc import prepare_dir; "
        "print(prepare_dir(None)); sys.stdout.flush()"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    made = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert Path(made.stdout.strip()).parent == tmp_path
    assert not Path(made.stdout.strip()).exists()  # removed when its process exited
    assert not orphan.exists() and alive.exists()


WRITER = """
import sys
from evalfarm.workers.metrics import instruments as m
m.JOBS.labels("program", "ok").inc(int(sys.argv[1]))
m.JOB_DURATION.labels("program").observe(0.02)
m.WORKER_PROCESSES.labels("busy").set(1)
m.PROCESS_STARTS.inc()
if sys.argv[2] == "stay":
    print("ready", flush=True)
    sys.stdin.read()
"""


def _writer(directory: Path, count: int, stay: bool) -> subprocess.Popen[str]:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(count), "stay" if stay else "exit"],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def _samples(directory: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    collected = MultiProcessCollector(None, str(directory)).collect()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in collected for s in f.samples}


def test_dead_processes_files_fold_into_totals_and_live_ones_stay(tmp_path: Path) -> None:
    for count in (2, 3):
        dead = _writer(tmp_path, count, stay=False)
        dead.communicate(timeout=30)
        assert dead.returncode == 0
    live = _writer(tmp_path, 5, stay=True)
    try:
        assert live.stdout is not None and live.stdout.readline().strip() == "ready"
        before = _samples(tmp_path)
        folded = fold_dead(tmp_path, owner=os.getpid())
        after = _samples(tmp_path)
        names = sorted(p.name for p in tmp_path.iterdir())
    finally:
        live.communicate("", timeout=30)
    assert len(folded) == 2
    assert after[("evalfarm_jobs_total", (("env", "program"), ("status", "ok")))] == 10
    assert after[("evalfarm_worker_process_starts_total", ())] == 3
    assert after[("evalfarm_job_duration_seconds_count", (("env", "program"),))] == 3
    # Only the live writer's gauge is left; every summed value is unchanged by folding.
    assert after[("evalfarm_worker_processes", (("state", "busy"),))] == 1
    assert {k: v for k, v in before.items() if k[0] != "evalfarm_worker_processes"} == {
        k: v for k, v in after.items() if k[0] != "evalfarm_worker_processes"
    }
    pid = live.pid
    assert names == sorted(
        ["counter_dead.db", "histogram_dead.db", f"counter_{pid}.db", f"histogram_{pid}.db",
         f"gauge_livesum_{pid}.db"]
    )  # fmt: skip
    assert fold_dead(tmp_path, owner=os.getpid()) == [pid]  # now it is gone too
    assert _samples(tmp_path)[("evalfarm_jobs_total", (("env", "program"), ("status", "ok")))] == 10


def test_a_scrape_skips_files_a_process_has_made_but_not_yet_sized(tmp_path: Path) -> None:
    # prometheus-client makes a process's file empty and sizes it a moment later: a pool child
    # starting mid-scrape, or one killed in between. Either left /metrics answering 500.
    from evalfarm.workers.metrics.server import ProcessFilesCollector

    done = _writer(tmp_path, 4, stay=False)
    done.communicate(timeout=30)
    assert done.returncode == 0
    starting = tmp_path / f"counter_{os.getpid()}.db"  # the collector's owner stands for a live child
    starting.touch()
    killed = subprocess.Popen([sys.executable, "-c", "pass"])
    killed.wait()
    (tmp_path / f"histogram_{killed.pid}.db").touch()
    families = ProcessFilesCollector(tmp_path, owner=os.getpid()).collect()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}
    assert samples[("evalfarm_jobs_total", (("env", "program"), ("status", "ok")))] == 4
    assert samples[("evalfarm_job_duration_seconds_count", (("env", "program"),))] == 1
    assert starting.exists()  # its process is alive and will size it
    assert not (tmp_path / f"histogram_{killed.pid}.db").exists()  # folded away with nothing to add


def test_serve_is_off_at_port_zero() -> None:
    from evalfarm.broker.settings import WorkerSettings
    from evalfarm.tasks import WorkerProcess
    from evalfarm.workers.metrics import serve

    assert serve(WorkerProcess(WorkerSettings(metrics_port=0))) is None


def test_serve_refuses_when_prometheus_client_came_first_instead_of_serving_nothing_useful() -> None:
    probe = (
        "import os, prometheus_client; os.environ.pop('PROMETHEUS_MULTIPROC_DIR', None)\n"
        "from evalfarm.broker.settings import WorkerSettings; from evalfarm.workers.metrics import serve\n"
        "from evalfarm.tasks import WorkerProcess\n"
        "print(serve(WorkerProcess(WorkerSettings(metrics_port=1))))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "None"
    assert "imported before" in done.stderr
