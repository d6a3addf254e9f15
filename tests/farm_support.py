"""Fixtures of the farm's integration tests: a private Redis per test, worker nodes as subprocesses.

Every process started here is stopped by the fixture that started it, whatever the test did.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from farm_test_envs import EXTRA_ENVS

from evalfarm.broker.farm import Farm
from evalfarm.broker.keys import NODE_KEY_PREFIX
from evalfarm.broker.settings import Settings
from evalfarm.workers.embedded import NodeProcess, RedisServer

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

# Test workers run with the farm's default timeouts: a fault must heal within them, as in production.
WORKER_SETTINGS = {
    "EVALFARM_EXTRA_ENVS": json.dumps(EXTRA_ENVS),
    "EVALFARM_METRICS_PORT": "0",  # no fixed port that tests running side by side would fight over
}


def worker_env(**overrides: str) -> dict[str, str]:
    """The environment of a test worker: this one, minus EVALFARM_*, plus the test settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALFARM_")}
    env.update(WORKER_SETTINGS)
    env.update(overrides)
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(ROOT), env.get("PYTHONPATH", "")])
    return env


@contextlib.contextmanager
def running_up(env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    """`evalfarm up --workers 1` with `env`: the process, its broker URL and its metrics URL.

    Killed at exit if the test did not stop it.
    """
    command = [sys.executable, "-m", "evalfarm.workers.cli", "up", "--workers", "1"]
    up = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert up.stdout is not None
        broker_line, metrics_line = up.stdout.readline(), up.stdout.readline()
        assert broker_line.startswith("broker:  redis://127.0.0.1:"), broker_line
        assert metrics_line.startswith("metrics: "), metrics_line
        yield up, broker_line.split()[1], metrics_line.split()[1]
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
        if up.stdout is not None:
            up.stdout.close()


def docker_missing(probe: list[str], missing: str) -> str | None:
    """Why a test of a Docker deployment cannot run here (no client, `docker PROBE` fails: `missing`,
    no engine answering), or None when it can."""
    import shutil

    if shutil.which("docker") is None:
        return "no docker client here"
    if subprocess.run(["docker", *probe], capture_output=True, timeout=60).returncode:
        return missing
    if subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode:
        return "no Docker engine answers here"
    return None


def client_settings(url: str, **overrides: Any) -> Settings:
    """Producer settings for a test farm (never read from the test process's environment)."""
    values: dict[str, Any] = {"broker_url": url, "farm_processes": 2, "batch_deadline_s": 120.0}
    values.update(overrides)
    return Settings(**values)


class Workers:
    """Starts worker nodes against one Redis and stops them all at teardown."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.started: list[NodeProcess] = []

    def start(self, concurrency: int = 2, name: str | None = None, **env: str) -> NodeProcess:
        """Start a node and wait until it has announced itself."""
        name = name or f"test{len(self.started)}@localhost"
        args = ["--concurrency", str(concurrency), "--name", name]
        worker = NodeProcess(self.url, args, worker_env(EVALFARM_WARM_SANDBOX="0", **env)).start()
        self.started.append(worker)
        wait_for(lambda: _advertised(self.url, name), 60.0, f"worker {name} ready")
        return worker

    def stop_all(self) -> None:
        """Stop every node started here (warm, then kill)."""
        for worker in self.started:
            worker.stop(grace_s=10.0)


def _advertised(url: str, name: str) -> bool:
    client = redis.Redis.from_url(url)
    try:
        # One key per node incarnation; its pool size once ready (0 while it starts).
        keys = client.keys(NODE_KEY_PREFIX + name + "#*")
        return any(v not in (None, b"0") for v in client.mget(keys)) if keys else False
    except redis.RedisError:
        return False
    finally:
        client.close()


def wait_until(condition: Callable[[], Any], timeout_s: float, poll_s: float = 0.01) -> Any:
    """Poll `condition` until it gives a true value, and return that; its last value after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(poll_s)
    return condition()


def wait_for(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll `condition` until true; fail the test after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def flower_sees(flower_url: str, node: str) -> bool:
    """Whether Flower has the node online: its events reached Flower through the farm's Redis."""
    import requests

    try:
        page = requests.get(f"{flower_url}/metrics", timeout=10).text
    except requests.RequestException:
        return False
    return f'flower_worker_online{{worker="{node}"}} 1.0' in page


@contextlib.contextmanager
def whole_farm(url: str, name: str, concurrency: int = 1, **farm_env: str) -> Iterator[dict[str, Any]]:
    """A node, the gateway and Flower on one broker URL, each ready: the producers' settings and
    where each serves. `farm_env`: the farm's settings for every process (EVALFARM_REDIS_MASTER,
    EVALFARM_REDIS_SENTINEL_PASSWORD), the producers' too."""
    from evalfarm.workers.embedded import FlowerProcess, GatewayProcess, free_port

    metrics_port = free_port()
    node_env = worker_env(**farm_env, EVALFARM_METRICS_PORT=str(metrics_port))
    node = NodeProcess(url, ["--concurrency", str(concurrency), "--name", name], node_env).start()
    gateway = GatewayProcess(url, free_port(), worker_env(**farm_env)).start()
    flower = FlowerProcess(url, free_port(), worker_env(**farm_env)).start()
    try:
        names = {key.removeprefix("EVALFARM_").lower(): value for key, value in farm_env.items()}
        settings = Settings(broker_url=url, batch_deadline_s=120.0, **names)
        with Farm(settings=settings, progress=False) as farm:
            wait_for(lambda: farm.status()["processes"] > 0, 60, f"the node {name}")
        gateway.wait_ready(60)
        yield {
            "settings": settings,
            "node": node,
            "gateway": gateway.url,
            "metrics": f"http://127.0.0.1:{metrics_port}/metrics",
            "flower": flower.url,
        }
    finally:
        flower.stop(grace_s=10)
        gateway.stop(grace_s=10)
        node.stop(grace_s=10)


def assert_producers_score(settings: Settings) -> None:
    """A sync producer scores a batch and runs a session, and an asyncio producer scores a batch."""
    import asyncio

    from evalfarm.broker.async_farm import AsyncFarm

    jobs = [{"id": f"p{i}", "env": "program", "code": f"print({i} * 7)"} for i in range(12)]
    with Farm(settings=settings, progress=False) as farm:
        results = farm.score(jobs)
        assert [(r["status"], r["stdout"]) for r in results] == [("ok", f"{i * 7}\n") for i in range(12)]
        with farm.session() as session:
            session.run("import math; r = 3")
            assert session.run("math.floor(r * 2.5)").value == "7"

    async def scored() -> list[Any]:
        async with AsyncFarm(settings=settings) as farm:
            return await farm.score(jobs[:4])

    assert [r["stdout"] for r in asyncio.run(scored())] == [f"{i * 7}\n" for i in range(4)]


def pool_children(worker: NodeProcess) -> list[int]:
    """The pids of a node's pool processes (the direct children of its main process)."""
    assert worker.proc is not None
    pid = worker.proc.pid
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def kill_node(worker: NodeProcess) -> None:
    """SIGKILL a node's whole process group at once: no warm shutdown, nothing acked or requeued."""
    assert worker.proc is not None
    os.killpg(worker.proc.pid, signal.SIGKILL)
    worker.proc.wait()


def sleepy_jobs(n: int, sleep_s: float = 0.05, prefix: str = "s") -> list[dict[str, Any]]:
    """`n` jobs of the test env that sleeps."""
    return [{"id": f"{prefix}{i}", "env": "sleepy", "sleep_s": sleep_s, "value": i} for i in range(n)]


def assert_each_once(jobs: list[dict[str, Any]], results: list[Any], status: str = "ok") -> None:
    """One result per job, in order, with the job's id and the expected status."""
    assert [r["id"] for r in results] == [j["id"] for j in jobs]
    assert [r["status"] for r in results] == [status] * len(jobs), [
        (r["id"], r["status"], r.get("error")) for r in results if r["status"] != status
    ]


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A private Redis on a free loopback port with AOF, in the test's directory."""
    server = RedisServer(directory=str(tmp_path)).start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def workers(redis_server: RedisServer) -> Iterator[Workers]:
    """A starter of worker nodes on `redis_server`; all stopped at teardown."""
    started = Workers(redis_server.url)
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture
def farm(redis_server: RedisServer) -> Iterator[Farm]:
    """A producer client of `redis_server`."""
    with Farm(settings=client_settings(redis_server.url), progress=False) as client:
        yield client
