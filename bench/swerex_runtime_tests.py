"""SWE-ReX's own tests of its remote runtime, unchanged, against farm sandboxes through the gateway.

SWE-ReX's tests (`tests/test_execution.py`, `test_server.py`, `test_remote_deployment.py` of its
source release) get their server from `tests/conftest.py`, which starts SWE-ReX's own server in a
thread. This script runs them with that one file replaced: `remote_runtime` is a
`RemoteRuntime(host=URL, port=None, auth_token=...)` on a fresh farm sandbox (`POST /v1/sandboxes`)
for each test, and `remote_server` (whose tests take a port on 127.0.0.1) a small forwarding proxy
to one sandbox's URL. The test files and the rest of SWE-ReX's package are its own; the farm it
starts (`evalfarm up --http`) has `testkey`, the tests' API key, as the gateway's token.

It needs a snapshot of SWE-ReX at a release (it is not in `make test`):

    git clone https://github.com/SWE-agent/SWE-ReX /tmp/SWE-ReX && git -C /tmp/SWE-ReX checkout v1.4.0
    python bench/swerex_runtime_tests.py /tmp/SWE-ReX

A virtualenv with SWE-ReX and its test dependencies is made under the snapshot the first time.
Prints passed/total per file and the failing tests.
"""

# ruff: noqa: E501 - the conftest written for the tests is kept as it reads

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _up import RunningUp  # noqa: E402

TOKEN = "testkey"  # the tests' TEST_API_KEY
FILES = ("test_execution.py", "test_server.py", "test_remote_deployment.py")
DEPENDENCIES = ("pytest", "pytest-asyncio", "aiohttp", "httpx")

# Replaces tests/conftest.py: the fixtures the tests use, on farm sandboxes.
CONFTEST = """
import asyncio, os, socket, threading, time
from dataclasses import dataclass, field

import httpx
import pytest
import requests
import uvicorn

from swerex.runtime.abstract import BashAction, CloseBashSessionRequest, Command, CreateBashSessionRequest
from swerex.runtime.remote import RemoteRuntime

TEST_API_KEY = "testkey"
GATEWAY = os.environ["EVALFARM_GATEWAY_URL"]


def new_sandbox() -> str:
    answer = requests.post(GATEWAY + "/v1/sandboxes", headers={"X-API-Key": TEST_API_KEY}, timeout=60)
    answer.raise_for_status()
    return answer.json()["url"]


@dataclass
class RemoteServer:
    port: int
    headers: dict[str, str] = field(default_factory=lambda: {"X-API-Key": TEST_API_KEY})


def _proxy(target: str):
    clients = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"] if k.lower() not in (b"host", b"content-length")}
        if not clients:  # one client for the proxy's life: its connections are kept
            clients.append(httpx.AsyncClient(timeout=300))
        answer = await clients[0].request(scope["method"], target + scope["path"], content=body, headers=headers)
        await send({"type": "http.response.start", "status": answer.status_code,
                    "headers": [(b"content-type", answer.headers.get("content-type", "application/json").encode())]})
        await send({"type": "http.response.body", "body": answer.content})
    return app


@pytest.fixture(scope="session")
def remote_server() -> RemoteServer:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    app = _proxy(new_sandbox())
    threading.Thread(target=lambda: uvicorn.run(app, host="127.0.0.1", port=port, log_level="error"), daemon=True).start()
    for _ in range(100):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            time.sleep(0.1)
    # The proxy's first request builds its HTTP client (an SSL context among its parts), longer than
    # the 0.15 s RemoteRuntime gives is_alive: made here, so the tests time the sandbox, not the proxy.
    requests.get(f"http://127.0.0.1:{port}/is_alive", headers={"X-API-Key": TEST_API_KEY}, timeout=30)
    return RemoteServer(port)


@pytest.fixture
async def remote_runtime():
    r = RemoteRuntime(host=new_sandbox(), port=None, auth_token=TEST_API_KEY)
    try:
        yield r
    finally:
        await r.close()


@pytest.fixture
async def runtime_with_default_session(remote_runtime: RemoteRuntime):
    await remote_runtime.create_session(CreateBashSessionRequest())
    try:
        yield remote_runtime
    finally:
        await remote_runtime.close_session(CloseBashSessionRequest())


class _Action(BashAction):
    timeout: float | None = 5


class _Command(Command):
    timeout: float | None = 5
"""
PYTEST_INI = """[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
"""


def environment(snapshot: Path) -> Path:
    """A virtualenv with SWE-ReX (from the snapshot, with its dependencies) and the tests' own; its python."""
    home = snapshot / ".evalfarm-venv"
    python = home / "bin" / "python"
    if not python.exists():
        venv.create(home, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", str(snapshot), *DEPENDENCIES], check=True)
    return python


def run_file(python: Path, snapshot: Path, name: str, url: str) -> tuple[int, int, list[str]]:
    """One of SWE-ReX's test files against the gateway: (passed, total, failed tests)."""
    with tempfile.TemporaryDirectory() as directory:
        tests = Path(directory) / "tests"
        tests.mkdir()
        (tests / "__init__.py").write_text("")
        (tests / "conftest.py").write_text(CONFTEST)
        (Path(directory) / "pytest.ini").write_text(PYTEST_INI)
        (tests / name).write_text((snapshot / "tests" / name).read_text())
        report = Path(directory) / "report.txt"
        environment_ = {"EVALFARM_GATEWAY_URL": url, "PATH": "/usr/bin:/bin"}
        subprocess.run(
            [str(python), "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", f"tests/{name}"],
            cwd=directory, env=environment_, stdout=report.open("w"), stderr=subprocess.STDOUT, timeout=1800,
        )  # fmt: skip
        text = report.read_text()
        if "-v" in sys.argv:
            print(text)
    passed = sum(int(n) for n in re.findall(r"(\d+) passed", text))
    failed = re.findall(r"(?:FAILED|ERROR) \S+::(\w+)", text)
    others = sum(int(n) for n in re.findall(r"(\d+) (?:failed|errors?|xfailed)", text))
    return passed, passed + others, failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", type=Path, help="a checkout of SWE-agent/SWE-ReX at a release")
    parser.add_argument("-v", action="store_true", help="print each file's pytest report")
    parser.add_argument("--files", default=",".join(FILES))
    args = parser.parse_args()
    python = environment(args.snapshot)
    rows = []
    port = _free_port()
    with RunningUp(
        "--http", str(port), workers=2, EVALFARM_GATEWAY_TOKEN=TOKEN, EVALFARM_SESSIONS="16"
    ) as farm:
        for name in args.files.split(","):
            rows.append((name, *run_file(python, args.snapshot, name, farm.http)))
            print(f"{name}: {rows[-1][1]}/{rows[-1][2]}", flush=True)
    print("\nSWE-ReX's remote runtime tests against farm sandboxes (POST /v1/sandboxes)")
    for name, passed, total, failed in rows:
        print(f"  {name:<28} {passed}/{total} passed" + (f"  failed: {', '.join(failed)}" if failed else ""))
    print(json.dumps({name: [passed, total, failed] for name, passed, total, failed in rows}))


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


if __name__ == "__main__":
    main()
