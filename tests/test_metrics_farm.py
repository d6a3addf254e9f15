"""A running farm's /metrics: the jobs it scored by env and status, and a bounded multiprocess directory.

Real Redis and real worker nodes from the farm's test fixtures; each node serves /metrics on a free
port and keeps its multiprocess files in the test's directory.
"""

from __future__ import annotations

import signal
import urllib.request
from pathlib import Path
from typing import Any

import farm_support
import pytest
from farm_support import client_settings, running_up, sleepy_jobs, wait_for, worker_env
from prometheus_client.parser import text_string_to_metric_families

from evalfarm.broker.farm import Farm
from evalfarm.broker.settings import Settings
from evalfarm.workers.embedded import free_port

redis_server = farm_support.redis_server
workers = farm_support.workers
farm = farm_support.farm

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(180)]

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(url: str) -> Samples:
    """Every sample of a /metrics page, keyed by name and labels."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def jobs_by_env_status(samples: Samples) -> dict[tuple[str, str], float]:
    """evalfarm_jobs_total as {(env, status): count}."""
    return {
        (dict(labels)["env"], dict(labels)["status"]): v
        for (name, labels), v in samples.items()
        if name == "evalfarm_jobs_total"
    }


def metrics_node(workers: Any, tmp_path: Path, concurrency: int = 2, **env: str) -> str:
    """Start a node serving /metrics on a free port; its URL."""
    port = free_port()
    workers.start(
        concurrency,
        EVALFARM_METRICS_PORT=str(port),
        EVALFARM_METRICS_DIR=str(tmp_path / "metrics"),
        **env,
    )
    return f"http://127.0.0.1:{port}/metrics"


def scraped_until(url: str, expected: dict[tuple[str, str], float], **durations: float) -> Samples:
    """Scrape until the job counts (and the run-time observations per env in `durations`) are as
    expected: children record a message's metrics just after pushing its results."""
    seen: list[Samples] = []

    def counted() -> bool:
        seen.append(scrape(url))
        observed = {
            env: seen[-1].get(("evalfarm_job_duration_seconds_count", frozenset({("env", env)})))
            for env in durations
        }
        return jobs_by_env_status(seen[-1]) == expected and observed == durations

    try:
        wait_for(counted, 20.0, "the scraped job counts")
    except AssertionError:
        assert jobs_by_env_status(seen[-1]) == expected
    return seen[-1]


@pytest.mark.sandbox
def test_metrics_count_the_jobs_a_farm_scored_by_env_and_status(workers, farm, tmp_path: Path) -> None:
    url = metrics_node(workers, tmp_path)
    jobs = [
        # Distinct programs, so that none rides as a duplicate of another and each is counted.
        *({"id": f"ok{i}", "env": "program", "code": f"print({i})"} for i in range(3)),
        *({"id": f"exit{i}", "env": "program", "code": f"import sys; sys.exit(3)  # {i}"} for i in range(2)),
        {"id": "syntax", "env": "program", "code": "def f(:"},
        {"id": "slow", "env": "program", "code": "while True: pass", "limits": {"wall_s": 1, "cpu_s": 1}},
        {"id": "stranger", "env": "no-such-env"},
        *sleepy_jobs(4, sleep_s=0.0),
    ]
    results = farm.score(jobs)
    assert [r["status"] for r in results] == [
        *["ok"] * 3, *["runtime_error"] * 2, "syntax_error", "timeout", "invalid_job", *["ok"] * 4
    ]  # fmt: skip
    samples = scraped_until(
        url,
        {
            ("program", "ok"): 3,
            ("program", "runtime_error"): 2,
            ("program", "syntax_error"): 1,
            ("program", "timeout"): 1,
            ("unknown", "invalid_job"): 1,  # a producer's env string never becomes a label
            ("sleepy", "ok"): 4,
        },
        program=7,
    )
    assert samples[("evalfarm_job_duration_seconds_count", frozenset({("env", "program")}))] == 7
    assert samples[("evalfarm_sandbox_runs_total", frozenset({("status", "runtime_error")}))] == 2
    assert samples[("evalfarm_sandbox_runs_total", frozenset({("status", "ok")}))] == 3
    assert samples[("evalfarm_queue_wait_seconds_count", frozenset({("queue", "code")}))] >= 1
    idle = ("evalfarm_worker_processes", frozenset({("state", "idle")}))
    wait_for(
        lambda: scrape(url).get(idle) == 2, 10.0, "both processes idle once their last message is recorded"
    )
    samples = scrape(url)
    assert samples[("evalfarm_worker_processes", frozenset({("state", "busy")}))] == 0
    assert samples[("evalfarm_broker_up", frozenset())] == 1
    assert samples[("evalfarm_queue_depth", frozenset({("queue", "code")}))] == 0


def test_recycled_children_keep_totals_and_a_bounded_directory(redis_server, workers, tmp_path: Path) -> None:
    # One job per message and one message per child: every job is scored by a fresh child.
    # No session host: its own files (one process's) would count here beside the pool's.
    url = metrics_node(
        workers, tmp_path, concurrency=1, EVALFARM_MAX_TASKS_PER_CHILD="1", EVALFARM_SESSIONS="0"
    )
    jobs = sleepy_jobs(12, sleep_s=0.0)
    settings = client_settings(redis_server.url, max_chunk_jobs=1, farm_processes=1)
    with Farm(settings=settings, progress=False) as client:
        assert [r["status"] for r in client.score(jobs)] == ["ok"] * 12
    samples = scraped_until(url, {("sleepy", "ok"): 12})
    assert samples[("evalfarm_worker_process_starts_total", frozenset())] >= 12
    assert samples.get(("evalfarm_worker_processes", frozenset({("state", "idle")})), 0) <= 1
    # The node's files, the live child's, and one archive per summed type: not one set per child.
    files = sorted(p.name for p in (tmp_path / "metrics").iterdir())
    assert len(files) <= 6, files
    assert {"counter_dead.db", "histogram_dead.db"} <= set(files)


def test_metrics_count_retries_and_failures_of_messages_whose_process_died(workers, farm, tmp_path) -> None:
    # The node's main process sees the deaths: a retry per redelivery, then the failure for good.
    url = metrics_node(workers, tmp_path)
    results = farm.score([{"id": "killer", "env": "crash"}, *sleepy_jobs(3, 0.0)])
    assert [r["status"] for r in results] == ["infra_error", "ok", "ok", "ok"]
    retries = Settings().worker_lost_retries  # the default the node runs with
    lost = frozenset({("queue", "code"), ("reason", "worker_lost")})

    def counted() -> bool:
        samples = scrape(url)
        return (
            samples.get(("evalfarm_task_retries_total", lost)) == retries
            and samples.get(("evalfarm_task_failures_total", lost), 0) >= 1
            # The two first children and a replacement for each death.
            and samples.get(("evalfarm_worker_process_starts_total", frozenset()), 0) >= 2 + retries + 1
        )

    wait_for(counted, 20.0, "worker_lost retries, failures and replacements on /metrics")
    samples = scrape(url)
    # The dead children's busy gauges are gone with their files.
    assert samples[("evalfarm_worker_processes", frozenset({("state", "busy")}))] == 0
    assert ("unknown", "infra_error") not in jobs_by_env_status(samples)  # a lost job is the producer's


def test_up_prints_the_metrics_url_it_serves(tmp_path: Path) -> None:
    port = free_port()
    env = worker_env(EVALFARM_METRICS_PORT=str(port), EVALFARM_WARM_SANDBOX="0")
    with running_up(env) as (up, broker, metrics):
        assert metrics == f"http://127.0.0.1:{port}/metrics"
        with Farm(settings=client_settings(broker), progress=False) as client:
            assert [r["status"] for r in client.score(sleepy_jobs(5, 0.0))] == ["ok"] * 5
        scraped_until(metrics, {("sleepy", "ok"): 5})
        up.send_signal(signal.SIGTERM)
        assert up.wait(60) == 0


def test_a_second_farm_on_the_machine_prints_its_own_metrics_url_not_the_firsts(tmp_path: Path) -> None:
    port = free_port()
    env = worker_env(EVALFARM_METRICS_PORT=str(port), EVALFARM_WARM_SANDBOX="0")
    with running_up(env) as (first, _, first_metrics), running_up(env) as (second, broker, metrics):
        assert first_metrics == f"http://127.0.0.1:{port}/metrics"
        assert metrics.startswith("http://127.0.0.1:") and metrics != first_metrics  # moved to a free port
        with Farm(settings=client_settings(broker), progress=False) as client:
            assert [r["status"] for r in client.score(sleepy_jobs(3, 0.0))] == ["ok"] * 3
        scraped_until(metrics, {("sleepy", "ok"): 3})  # the second farm's jobs, on the URL it printed
        assert ("sleepy", "ok") not in jobs_by_env_status(scrape(first_metrics))  # and not on the first's
        for up in (second, first):
            up.send_signal(signal.SIGTERM)
            assert up.wait(60) == 0


@pytest.mark.sandbox
def test_metrics_count_sessions(redis_server, workers, tmp_path: Path) -> None:
    """The node's session host records into the node's metrics: sessions open, opened, closed,
    ended by a run, expired, and the runs' durations."""
    url = metrics_node(workers, tmp_path, concurrency=1, EVALFARM_SESSIONS="4")
    with Farm(settings=client_settings(redis_server.url), progress=False) as client:
        wait_for(lambda: _can_open(client), 60.0, "the session host")
        kept = client.session(ttl_s=600)
        for code in ("x = 1", "x + 1", "1/0"):
            kept.run(code)
        ended = client.session(ttl_s=600)
        ended.run("import os\nos._exit(0)")
        client.session(ttl_s=1)  # left idle: it expires
        python = frozenset({("language", "python")})
        open_now = ("evalfarm_sessions_open", python)

        def counted() -> bool:
            samples = scrape(url)
            return (
                samples.get(("evalfarm_sessions_expired_total", python)) == 1 and samples.get(open_now) == 1
            )

        wait_for(counted, 20.0, "the idle session to expire and the counts to show it")
        samples = scrape(url)
        assert samples[("evalfarm_sessions_opened_total", python)] == 4  # the probe's one, then three
        assert samples[("evalfarm_sessions_closed_total", python)] == 1  # the probe's
        assert samples[("evalfarm_sessions_ended_total", python)] == 1
        assert samples[("evalfarm_session_run_seconds_count", python)] == 4
        kept.close()
        wait_for(lambda: scrape(url).get(open_now) == 0, 10.0, "no session open")


def _can_open(client: Farm) -> bool:
    try:
        client.session().close()
    except Exception:
        return False
    return True
