"""SandboxFusion's own runner tests, unchanged, against the gateway's `/run_code` (and, for
`--languages jupyter`, `/run_jupyter`) over HTTP.

SandboxFusion's tests (`sandbox/tests/runners/test_<language>.py` in its repository) build
`TestClient(app)` from `sandbox.server.server`. This script runs them with that one module replaced:
its `app` is a small ASGI app that forwards each request over HTTP to a farm this script starts
(`evalfarm up --http`), so every assertion is SandboxFusion's, on the farm's answers. The rest of
their `sandbox` package (the request and response models) is SandboxFusion's own.

It needs a snapshot of the repository (it is not in `make test`):

    git clone https://github.com/bytedance/SandboxFusion /tmp/SandboxFusion
    python bench/sandbox_fusion_runners.py /tmp/SandboxFusion [--languages python,cpp,java,nodejs,go,rust]

A virtualenv with SandboxFusion's own test dependencies (fastapi, structlog, httpx, pytest) is made
under the snapshot the first time. Prints passed/total per language and the failing tests.
"""

# ruff: noqa: E501 - the proxy and conftest written for the tests are kept as they read

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _up import RunningUp  # noqa: E402

# Replaces sandbox/server/server.py for the tests: forwards every request to the gateway.
PROXY = """
import os
import httpx

GATEWAY = os.environ["EVALFARM_GATEWAY_URL"]


async def app(scope, receive, send):
    assert scope["type"] == "http"
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    headers = {k.decode(): v.decode() for k, v in scope["headers"] if k.lower() not in (b"host", b"content-length")}
    async with httpx.AsyncClient(timeout=300) as client:
        answer = await client.request(scope["method"], GATEWAY + scope["path"], content=body, headers=headers)
    await send({"type": "http.response.start", "status": answer.status_code,
                "headers": [(b"content-type", answer.headers.get("content-type", "application/json").encode())]})
    await send({"type": "http.response.body", "body": answer.content})
"""
CONFTEST = """
import sys, types, importlib.util
spec = importlib.util.spec_from_file_location("sandbox.server.server", __file__.replace("conftest.py", "proxy.py"))
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
sys.modules["sandbox.server.server"] = module
"""
# SandboxFusion's request models import its runners, which import psutil, PyYAML and aiofiles.
DEPENDENCIES = (
    "fastapi==0.110.*", "pydantic>=2.4,<2.7", "structlog", "httpx", "pytest", "pytest-asyncio", "psutil",
    "pyyaml", "aiofiles",
)  # fmt: skip


def environment(snapshot: Path) -> Path:
    """A virtualenv with SandboxFusion's test dependencies; its python."""
    home = snapshot / ".evalfarm-venv"
    python = home / "bin" / "python"
    if not python.exists():
        venv.create(home, with_pip=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *DEPENDENCIES], check=True)
    return python


def run_language(python: Path, snapshot: Path, language: str, url: str) -> tuple[int, int, list[str]]:
    """SandboxFusion's test file for `language` against the gateway: (passed, total, failed tests)."""
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        (work / "proxy.py").write_text(PROXY)
        (work / "conftest.py").write_text(CONFTEST)
        test = snapshot / "sandbox" / "tests" / "runners" / f"test_{language}.py"
        (work / test.name).write_text(test.read_text())
        report = work / "report.txt"
        env = {**os.environ, "EVALFARM_GATEWAY_URL": url, "PYTHONPATH": str(snapshot)}
        subprocess.run(
            [str(python), "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", str(work / test.name)],
            cwd=work, env=env, stdout=report.open("w"), stderr=subprocess.STDOUT, timeout=1800,
        )  # fmt: skip
        text = report.read_text()
    passed = sum(int(n) for n in re.findall(r"(\d+) passed", text))
    failed = re.findall(r"FAILED \S+::(\w+)", text)
    errors = sum(int(n) for n in re.findall(r"(\d+) (?:failed|error)", text))
    return passed, passed + errors, failed


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot", type=Path, help="a checkout of bytedance/SandboxFusion")
    parser.add_argument("--languages", default="python,cpp,java,nodejs,go,rust")
    args = parser.parse_args()
    python = environment(args.snapshot)
    rows = []
    with RunningUp("--http", str(free_port()), workers=2) as farm:
        for language in args.languages.split(","):
            rows.append((language, *run_language(python, args.snapshot, language, farm.http)))
            print(f"{language}: {rows[-1][1]}/{rows[-1][2]}", flush=True)
    print("\nSandboxFusion's runner tests against the gateway's /run_code and /run_jupyter")
    for language, passed, total, failed in rows:
        print(
            f"  {language:<8} {passed}/{total} passed" + (f"  failed: {', '.join(failed)}" if failed else "")
        )
    print(json.dumps({language: [passed, total] for language, passed, total, _ in rows}))


if __name__ == "__main__":
    main()
