"""Sessions: the round trip of a trivial run, and how many idle sessions one node holds.

The farm is `evalfarm up --workers 1 --http PORT` with the node's session host allowed `--idle`
sessions (started once, before timing). Side by side in one run:

1. A trivial run (`x += 1`) `--calls` times in a row, p50 and p99 of the round trip: the same
   interpreter driven in this process with no queue (the sandbox alone), then through the Python
   client (`Farm.session`: Redis to the node and back), then through the gateway
   (`POST /v1/sessions/{id}/run` with requests, keep-alive). Goals: gateway p50 < 5 ms and p99 < 15 ms;
   the Python client's p50 < 3 ms.
2. Idle sessions: `--idle` sessions opened and each given a little state, then the memory their
   cgroups hold (their own pages, their /tmp: what they do not share with the fork server), per
   session; every one is then run once more to show it still answers, with that run's p50.

    .venv/bin/python bench/bench_sessions.py [--calls 1000] [--idle 400]
"""

from __future__ import annotations

import argparse
import glob
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

import requests  # noqa: E402
from _up import RunningUp  # noqa: E402

from evalfarm.broker import Farm  # noqa: E402
from evalfarm.broker.session_client import SessionSpec  # noqa: E402
from evalfarm.envs.runtime import sandbox_config  # noqa: E402
from evalfarm.sandbox import Sandbox  # noqa: E402
from evalfarm.sandbox.session_interpreter import Interpreter  # noqa: E402
from evalfarm.workers.embedded import free_port  # noqa: E402

GOAL_GATEWAY_P50_MS, GOAL_GATEWAY_P99_MS, GOAL_CLIENT_P50_MS = 5.0, 15.0, 3.0


def percentiles(seconds: list[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    return ordered[len(ordered) // 2] * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def timed(call: object, calls: int) -> tuple[float, float]:
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        call()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return percentiles(times)


def bare(calls: int) -> tuple[float, float]:
    """The interpreter driven in this process: the sandbox's own cost, no queue."""
    with Sandbox(slot=120, config=sandbox_config()) as sandbox:
        interpreter = Interpreter.start(sandbox, SessionSpec().sandbox_limits())
        try:
            interpreter.run(b"x = 0")
            timed(lambda: interpreter.run(b"x += 1"), 50)
            return timed(lambda: interpreter.run(b"x += 1"), calls)
        finally:
            interpreter.close()


def through_client(farm: Farm, calls: int) -> tuple[float, float]:
    with farm.session(ttl_s=600) as session:
        session.run("x = 0")
        timed(lambda: session.run("x += 1"), 50)
        result = timed(lambda: session.run("x += 1"), calls)
        assert session.run("x").value == str(50 + calls)
        return result


def through_gateway(url: str, calls: int) -> tuple[float, float]:
    http = requests.Session()
    opened = http.post(f"{url}/v1/sessions", json={"ttl_s": 600}, timeout=30).json()
    run = f"{url}/v1/sessions/{opened['session_id']}/run"
    http.post(run, json={"code": "x = 0"}, timeout=30)
    timed(lambda: http.post(run, json={"code": "x += 1"}, timeout=30), 50)
    result = timed(lambda: http.post(run, json={"code": "x += 1"}, timeout=30), calls)
    assert http.post(run, json={"code": "x"}, timeout=30).json()["value"] == str(50 + calls)
    http.delete(f"{url}/v1/sessions/{opened['session_id']}", timeout=30)
    return result


def session_memory_mb() -> tuple[int, float]:
    """The node's sessions (their cgroups) and the memory they hold in all, in MB."""
    pattern = "/sys/fs/cgroup/memory/**/evalfarm-sessions-*/s-*/memory.usage_in_bytes"
    files = glob.glob(pattern, recursive=True) or glob.glob(
        "/sys/fs/cgroup/evalfarm/evalfarm-sessions-*/s-*/memory.current"
    )
    return len(files), sum(int(Path(f).read_text()) for f in files) / (1 << 20)


def host_descriptors() -> tuple[int, int]:
    """The session host's open descriptors, and its limit of them."""
    for status in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            if b"evalfarm.workers.session_host" in Path(status).read_bytes():
                proc = Path(status).parent
                limit = next(
                    line for line in (proc / "limits").read_text().splitlines() if "open files" in line
                )
                return len(list((proc / "fd").iterdir())), int(limit.split()[3])
        except (OSError, StopIteration):
            continue
    return 0, 0


def idle(farm: Farm, count: int) -> None:
    available_before = _available_mb()
    descriptors_before, limit = host_descriptors()
    started = time.perf_counter()
    sessions = [farm.session(ttl_s=600) for _ in range(count)]
    opened_s = time.perf_counter() - started
    descriptors = (host_descriptors()[0] - descriptors_before) / count
    for index, session in enumerate(sessions):
        session.run(f"import math, json\nstate = {{'index': {index}, 'seen': list(range(100))}}")
    found, total_mb = session_memory_mb()
    machine_mb = (available_before - _available_mb()) / count
    times = []
    for index, session in enumerate(sessions):
        begun = time.perf_counter()
        assert session.run("state['index']").value == str(index)
        times.append(time.perf_counter() - begun)
    p50, _ = percentiles(times)
    for session in sessions:
        session.close()
    print(f"\nidle sessions: {count} opened in {opened_s:.1f} s ({opened_s / count * 1000:.1f} ms each)")
    if found:
        per = total_mb / found
        free_mb = _available_mb()
        print(f"  memory their cgroups hold: {total_mb:.0f} MB in all, {per:.2f} MB per session")
        print(f"  the machine's available memory fell by {machine_mb:.2f} MB per session (noisy: shared)")
        worst = max(per, machine_mb)
        print(f"  by memory, {free_mb / 1024:.1f} GiB free holds about {free_mb / worst:,.0f} idle sessions")
    else:
        print("  (no session cgroups: run as root to measure their memory)")
    if descriptors > 0 and limit:
        print(
            f"  by descriptors, the host holds {descriptors:.1f} per session; its limit of {limit:,} allows"
            f" about {limit / descriptors:,.0f} sessions"
        )
    print(f"  with all {count} open, a run in each: p50 {p50:.2f} ms (Python client)")


def _available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--idle", type=int, default=400)
    args = parser.parse_args()
    port = free_port()
    print(f"round trip of `x += 1`, {args.calls} calls in a row (ms):")
    bare_p50, bare_p99 = bare(args.calls)
    print(f"  sandbox alone (no queue)       p50 {bare_p50:6.2f}  p99 {bare_p99:6.2f}")
    with RunningUp("--http", str(port), workers=1, EVALFARM_SESSIONS=str(args.idle + 8)) as up:
        farm = Farm(up.broker, progress=False)
        deadline = time.monotonic() + 60
        while True:
            try:
                farm.session().close()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        client_p50, client_p99 = through_client(farm, args.calls)
        gateway_p50, gateway_p99 = through_gateway(up.http, args.calls)
        print(f"  Python client (Farm.session)   p50 {client_p50:6.2f}  p99 {client_p99:6.2f}"
              f"   goal p50 < {GOAL_CLIENT_P50_MS:g}")  # fmt: skip
        print(f"  gateway (POST .../run)         p50 {gateway_p50:6.2f}  p99 {gateway_p99:6.2f}"
              f"   goal p50 < {GOAL_GATEWAY_P50_MS:g}, p99 < {GOAL_GATEWAY_P99_MS:g}")  # fmt: skip
        ratios = f"client {client_p50 / bare_p50:.1f}x, gateway {gateway_p50 / bare_p50:.1f}x"
        print(f"  ratios to the sandbox alone: {ratios}")
        idle(farm, args.idle)
        farm.close()
    verdict = (
        gateway_p50 < GOAL_GATEWAY_P50_MS
        and gateway_p99 < GOAL_GATEWAY_P99_MS
        and client_p50 < GOAL_CLIENT_P50_MS
    )
    print(f"\ngoals {'met' if verdict else 'NOT met'}")


if __name__ == "__main__":
    main()
