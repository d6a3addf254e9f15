"""Flower, Celery's dashboard, shows the farm: checked in a real browser (headless Chromium).

`evalfarm up --flower PORT` starts Flower beside the farm; the workers send Celery's task events.
After a batch, Chromium loads Flower's pages and the node and the `evalfarm.score_chunk` tasks must
be in what it rendered. Skipped where Chromium is absent (Debian's `chromium` package runs headless).
Without a browser, a test reads the events themselves as Flower does, with Celery's own receiver.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import farm_support
import pytest
import requests
from celery.events.receiver import EventReceiver
from farm_support import ROOT, Workers, client_settings, wait_until, worker_env

from evalfarm.broker.app import make_app
from evalfarm.broker.farm import Farm
from evalfarm.workers.embedded import free_port

# Fixtures of the farm's test support: a private Redis and worker nodes on it.
redis_server = farm_support.redis_server
workers = farm_support.workers

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# A closed network: no background connections, no first-run work (they fail and slow it down).
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


def rendered(url: str) -> str:
    """The DOM Chromium built for `url`, its scripts run (their requests answered) first."""
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="evalfarm-chromium-") as profile:
        command = [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=8000",
                   "--dump-dom", url]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=90).stdout


@pytest.fixture
def farm_with_flower(request: Any) -> Iterator[tuple[str, str]]:
    port = free_port()
    env = worker_env(EVALFARM_WARM_SANDBOX="0", **getattr(request, "param", {}))
    command = [sys.executable, "-m", "evalfarm.workers.cli", "up", "--workers", "1", "--flower", str(port)]
    with subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True) as up:
        assert up.stdout is not None
        lines = [up.stdout.readline() for _ in range(3)]
        assert lines[2] == f"flower:  http://127.0.0.1:{port}\n", lines
        try:
            yield lines[0].split()[1], f"http://127.0.0.1:{port}"
        finally:
            up.send_signal(signal.SIGTERM)
            up.wait(60)


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium here (Debian: apt-get install chromium)")
def test_flower_shows_the_node_and_its_chunks_in_a_browser(farm_with_flower: tuple[str, str]) -> None:
    broker, flower = farm_with_flower
    with Farm(settings=client_settings(broker), progress=False) as farm:
        results = farm.score([{"id": f"f{i}", "env": "program", "code": f"print({i})"} for i in range(12)])
    assert [r["status"] for r in results] == ["ok"] * 12
    nodes = wait_until(
        lambda: (page := rendered(f"{flower}/workers")) and "evalfarm-" in page and page, 60, 0.5
    )
    assert "evalfarm-" in nodes and "Online" in nodes  # the node, by its name, and its state
    tasks = wait_until(
        lambda: (page := rendered(f"{flower}/tasks")) and "evalfarm.score_chunk" in page and page, 60, 0.5
    )
    assert "evalfarm.score_chunk" in tasks and "SUCCESS" in tasks


@pytest.mark.parametrize("farm_with_flower", [{"EVALFARM_FLOWER_AUTH": "operator:s3cret"}], indirect=True)
def test_flower_asks_for_its_basic_auth(farm_with_flower: tuple[str, str]) -> None:
    _, flower = farm_with_flower
    wait_until(lambda: requests.get(f"{flower}/healthcheck", timeout=5).status_code == 200, 30, 0.5)
    assert requests.get(f"{flower}/workers", timeout=10).status_code == 401
    assert requests.get(f"{flower}/workers", auth=("operator", "s3cret"), timeout=10).status_code == 200


class CountingReceiver(EventReceiver):
    """Celery's event receiver, counting the messages the events came in."""

    messages = 0

    def _receive(self, body: Any, message: Any, *args: Any, **kwargs: Any) -> None:
        self.messages += 1
        super()._receive(body, message, *args, **kwargs)


def test_every_chunk_reaches_a_monitor_in_few_messages(workers: Workers) -> None:
    """What Flower reads, without Flower: a task-received and a task-succeeded event for every chunk
    a node ran, the events of a batch batched into fewer messages than events."""
    workers.start(concurrency=2)
    app = make_app(client_settings(workers.url))
    events: list[dict[str, Any]] = []

    def of_type(kind: str) -> set[str]:
        return {e["uuid"] for e in list(events) if e["type"] == kind}

    with app.connection_for_read() as connection:
        receiver = CountingReceiver(connection, handlers={"*": events.append}, app=app)
        listening = threading.Thread(target=receiver.capture, kwargs={"wakeup": False}, daemon=True)
        listening.start()
        time.sleep(1.0)  # the receiver's queue bound before the batch
        jobs = [{"id": f"e{i}", "env": "program", "code": f"print({i})"} for i in range(40)]
        with Farm(settings=client_settings(workers.url), progress=False) as farm:
            results = farm.score(jobs)
        assert [r["status"] for r in results] == ["ok"] * len(jobs)
        wait_until(lambda: (seen := of_type("task-received")) and seen <= of_type("task-succeeded"), 30, 0.5)
        receiver.should_stop = True
        listening.join(10)
    assert {e["name"] for e in events if e["type"] == "task-received"} == {"evalfarm.score_chunk"}
    assert of_type("task-received") and of_type("task-received") == of_type("task-succeeded")
    task_events = [e for e in events if e["type"].startswith("task-")]
    assert receiver.messages < len(task_events), (receiver.messages, len(task_events))
