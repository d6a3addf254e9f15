"""Sandboxes for agents, measured side by side in one run on a farm this script starts (`evalfarm up
--http`, one node):

1. `echo` round trip through SWE-ReX's `RemoteRuntime` against a farm sandbox, p50 and p99; the same
   client against SWE-ReX's own server started here (`swerex-remote`, no sandbox at all), the anchor.
2. Sessions one node holds at once, bash and Python, and what each costs idle (the machine's
   available memory before and after opening them, over their number).
3. A group of 16 sessions on one 50 MB workspace (uploaded once, unpacked once, an overlay each):
   time to start them and the disk they take, against 16 separate uploads (16 workspaces, each
   unpacked on its own).

The anchor needs SWE-ReX's server, which the farm does not install: give `--swerex PYTHON`, an
interpreter with `swe-rex` and its dependencies (`bench/swerex_runtime_tests.py` makes one under its
snapshot); without it that row is skipped.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _up import RunningUp  # noqa: E402

TOKEN = "bench-token"
HEADERS = {"X-API-Key": TOKEN}


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p50, p99 = ordered[len(ordered) // 2], ordered[int(len(ordered) * 0.99) - 1]
    return f"p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms ({len(samples)} runs)"


async def echo_round_trips(url: str, runs: int) -> list[float]:
    from swerex.runtime.abstract import BashAction, CreateBashSessionRequest
    from swerex.runtime.remote import RemoteRuntime

    runtime = RemoteRuntime(host=url, port=None, auth_token=TOKEN, timeout=10)
    await runtime.create_session(CreateBashSessionRequest())
    times = []
    for _ in range(runs + 10):
        started = time.perf_counter()
        observation = await runtime.run_in_session(BashAction(command="echo hi", timeout=10))
        times.append(time.perf_counter() - started)
        assert observation.output.strip() == "hi", observation
    await runtime.close()
    return times[10:]


def anchor(python: str, runs: int) -> list[float] | None:
    """The same client against SWE-ReX's own server (`swerex-remote`), started here."""
    port = free_port()
    server = subprocess.Popen(
        [python, "-m", "swerex.server", "--port", str(port), "--host", "127.0.0.1", "--auth-token", TOKEN],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                requests.get(f"{url}/is_alive", headers=HEADERS, timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.1)
        return asyncio.run(echo_round_trips(url, runs))
    finally:
        server.terminate()
        server.wait(10)


def gateway_floor(http: str, runs: int) -> str:
    """What the gateway costs without a shell: GET /v1/health, and `1` in a Python session."""
    session = requests.post(f"{http}/v1/sessions", json={}, headers=HEADERS, timeout=60).json()["session_id"]
    health, python = [], []
    for _ in range(runs):
        started = time.perf_counter()
        requests.get(f"{http}/v1/health", timeout=60)
        health.append(time.perf_counter() - started)
        started = time.perf_counter()
        requests.post(f"{http}/v1/sessions/{session}/run", json={"code": "1"}, headers=HEADERS, timeout=60)
        python.append(time.perf_counter() - started)
    requests.delete(f"{http}/v1/sessions/{session}", headers=HEADERS, timeout=60)
    return f"health p50 {statistics.median(health) * 1000:.2f} ms; a Python session's run p50 " + (
        f"{statistics.median(python) * 1000:.2f} ms"
    )


def sandbox(http: str) -> str:
    answer = requests.post(f"{http}/v1/sandboxes", headers=HEADERS, timeout=60)
    answer.raise_for_status()
    return str(answer.json()["url"])


def session_memory_mb(ids: list[str]) -> tuple[float, float, int]:
    """What the sessions `ids` hold now: the memory their cgroups are charged (their pages, their
    /tmp), the proportional set size of their processes (shared pages split among their sharers),
    both in MB, and how many were found (a session's cgroup is named after its id's start)."""
    import glob

    names = {f"s-{session[:16]}" for session in ids}
    charged, pss, sessions = 0, 0, 0
    found = glob.glob("/sys/fs/cgroup/memory/**/evalfarm-sessions-*/s-*", recursive=True)
    found += glob.glob("/sys/fs/cgroup/unified/**/evalfarm-sessions-*/s-*", recursive=True)
    for folder in (f for f in found if os.path.basename(f) in names):
        name = "memory.usage_in_bytes" if "/memory/" in folder else "memory.current"
        try:
            charged += int(Path(folder, name).read_text())
            pids = Path(folder, "cgroup.procs").read_text().split()
        except OSError:
            continue
        sessions += 1
        for pid in pids:
            try:
                rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
            except OSError:
                continue
            pss += sum(int(line.split()[1]) << 10 for line in rollup.splitlines() if line.startswith("Pss:"))
    return charged / (1 << 20), pss / (1 << 20), sessions


def open_sessions(http: str, count: int, body: dict[str, Any]) -> tuple[list[str], float]:
    """Open up to `count` sessions (stopping at the first refusal); their ids and the time taken."""
    from concurrent.futures import ThreadPoolExecutor

    def one(_: int) -> str | None:
        answer = requests.post(f"{http}/v1/sessions", json=body, headers=HEADERS, timeout=120)
        return str(answer.json()["session_id"]) if answer.status_code == 201 else None

    started = time.perf_counter()
    with ThreadPoolExecutor(16) as pool:
        opened = [session for session in pool.map(one, range(count)) if session is not None]
    return opened, time.perf_counter() - started


def close_sessions(http: str, sessions: list[str]) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(16) as pool:
        list(
            pool.map(
                lambda s: requests.delete(f"{http}/v1/sessions/{s}", headers=HEADERS, timeout=60), sessions
            )
        )


def run(http: str, session: str, code: str) -> dict[str, Any]:
    answer = requests.post(
        f"{http}/v1/sessions/{session}/run", json={"code": code}, headers=HEADERS, timeout=120
    )
    return dict(answer.json())


def held_at_once(http: str, kind: str, count: int) -> None:
    sessions, took = open_sessions(http, count, {"kind": kind, "ttl_s": 600})
    code = "echo ok" if kind == "bash" else "'ok'"
    answered = sum(1 for s in sessions if "ok" in str(run(http, s, code)))
    time.sleep(2)
    charged, pss, counted = session_memory_mb(sessions)
    each = max(1, counted)
    print(f"  {kind:<6} {len(sessions)} of {count} open at once ({took:.1f} s to open, {answered} answered);"
          f" idle, each: {charged / each:.2f} MB charged to its cgroups, {pss / each:.2f} MB PSS"
          f" ({counted} sessions' cgroups read)")  # fmt: skip
    close_sessions(http, sessions)


def workspace_archive(size_mb: int, salt: int) -> bytes:
    """A repository-like tree of `size_mb` MB of incompressible files (salt: a distinct archive)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as out:
        for index in range(size_mb * 10):
            content = os.urandom(100 << 10) if index else f"salt {salt}\n".encode()
            info = tarfile.TarInfo(f"src/pkg{index // 50}/file{index}.bin")
            info.size = len(content)
            out.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def group_on_workspaces(http: str, archives: list[bytes]) -> tuple[float, str]:
    """Upload the archives, open one session on each (16 in all, cycling), and run one command in
    each: the time from the first upload to the last answer, and what they took: the node's
    unpacked trees on disk, the sessions' own memory (their cgroups: their copies' pages) and
    Redis's (the archives kept)."""
    redis_before = _redis_mb()
    started = time.perf_counter()
    ids = []
    for data in archives:
        answer = requests.post(f"{http}/v1/workspaces", data=data, headers=HEADERS, timeout=300)
        answer.raise_for_status()
        ids.append(answer.json()["workspace_id"])
    bodies = [{"kind": "bash", "ttl_s": 600, "workspace": ids[i % len(ids)]} for i in range(16)]

    from concurrent.futures import ThreadPoolExecutor

    def one(body: dict[str, Any]) -> str:
        answer = requests.post(f"{http}/v1/sessions", json=body, headers=HEADERS, timeout=300)
        answer.raise_for_status()
        session = str(answer.json()["session_id"])
        assert run(http, session, "ls src | wc -l")["exit_code"] == 0
        return session

    with ThreadPoolExecutor(16) as pool:
        sessions = list(pool.map(one, bodies))
    took = time.perf_counter() - started
    charged, _, _ = session_memory_mb(sessions)
    taken = f"{_trees_mb():.0f} MB of trees on disk, {charged:.0f} MB in the sessions, "
    taken += f"{_redis_mb() - redis_before:.0f} MB more in Redis"
    close_sessions(http, sessions)
    return took, taken


def copy_cost(http: str, data: bytes) -> str:
    """What each session would pay to have the workspace copied into its own tmpfs (where a node
    may not clone a mount): the copy's time and its size, measured by copying /workspace there."""
    uploaded = requests.post(f"{http}/v1/workspaces", data=data, headers=HEADERS, timeout=300)
    body = {
        "kind": "bash",
        "ttl_s": 600,
        "workspace": uploaded.json()["workspace_id"],
        "limits": {"workdir_mb": 1024},
    }
    opened = requests.post(f"{http}/v1/sessions", json=body, headers=HEADERS, timeout=300)
    session = opened.json()["session_id"]
    timed = "start=$(date +%s%N); cp -a /workspace /tmp/copy; end=$(date +%s%N); du -sm /tmp/copy | cut -f1"
    out = run(http, session, f"{timed}; echo $(( (end - start) / 1000000 ))")["stdout"].split()
    close_sessions(http, [session])
    return f"{out[1]} ms and {out[0]} MB of the session's memory (its tmpfs) per session"


REDIS_URL: list[str] = []


def _redis_mb() -> float:
    import redis

    return int(redis.Redis.from_url(REDIS_URL[0]).info("memory")["used_memory"]) / (1 << 20)


def _trees_mb() -> float:
    """The node's unpacked workspaces (workers.workspaces keeps them under the temporary folder)."""
    import glob
    import tempfile

    total = 0
    for root in glob.glob(f"{tempfile.gettempdir()}/evalfarm-workspaces-*"):
        for folder, _, files in os.walk(root):
            total += sum(os.lstat(os.path.join(folder, name)).st_size for name in files)
    return total / (1 << 20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--swerex", help="a python with swe-rex and its server's dependencies (the anchor)")
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=128)
    parser.add_argument("--workspace-mb", type=int, default=50)
    args = parser.parse_args()
    environment = {"EVALFARM_GATEWAY_TOKEN": TOKEN, "EVALFARM_SESSIONS": str(args.sessions)}
    with RunningUp("--http", str(free_port()), workers=1, **environment) as farm:
        print(
            "1. echo through SWE-ReX's RemoteRuntime (a new connection per request, as its client makes them)"
        )
        farm_times = asyncio.run(echo_round_trips(sandbox(farm.http), args.runs))
        print(f"  farm sandbox (gateway, Redis, session host, bash): {percentiles(farm_times)}")
        own = anchor(args.swerex, args.runs) if args.swerex else None
        if own is not None:
            print(f"  swerex-remote here, no sandbox (the anchor):        {percentiles(own)}")
            ratio = statistics.median(farm_times) / statistics.median(own)
            print(f"  ratio of p50s (farm / anchor): {ratio:.2f}")
        else:
            print("  swerex-remote anchor: skipped (no --swerex)")
        print(f"  the same gateway, a new connection per request too: {gateway_floor(farm.http, args.runs)}")
        print(f"2. sessions one node holds at once (EVALFARM_SESSIONS={args.sessions})")
        for kind in ("bash", "python"):
            held_at_once(farm.http, kind, args.sessions)
        print(f"3. 16 sessions on a {args.workspace_mb} MB workspace")
        shared = workspace_archive(args.workspace_mb, 0)
        REDIS_URL.append(farm.broker)
        took, taken = group_on_workspaces(farm.http, [shared])
        print(f"  one upload, shared (overlay): {took:.1f} s to start all 16; {taken}")
        separate = [workspace_archive(args.workspace_mb, salt) for salt in range(1, 17)]
        took_apart, taken_apart = group_on_workspaces(farm.http, separate)
        print(f"  16 separate uploads:          {took_apart:.1f} s; {taken_apart}")
        print(f"  ratio of times: {took_apart / took:.1f}x")
        print(f"  a copy instead of an overlay, in one session: {copy_cost(farm.http, shared)}")


if __name__ == "__main__":
    main()
