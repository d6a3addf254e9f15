"""Sessions: a sandboxed interpreter kept alive between runs, on a real sandbox slot, then on a real
farm (Redis, a worker node with its session host) through the Python clients and the HTTP gateway.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import requests
from farm_support import Workers, client_settings, kill_node, wait_for, worker_env

from evalfarm.broker import keys
from evalfarm.broker.async_farm import AsyncFarm
from evalfarm.broker.farm import Farm
from evalfarm.broker.session_client import SessionNotFound, SessionsFull, SessionSpec
from evalfarm.envs.runtime import sandbox_config
from evalfarm.sandbox import Limits, Sandbox, Status
from evalfarm.sandbox.session_interpreter import Interpreter
from evalfarm.workers.embedded import GatewayProcess, RedisServer, free_port

LIMITS = Limits(memory_mb=256, wall_s=5, workdir_mb=16, processes=16, output_bytes=4096)


# -- one interpreter on a sandbox slot ------------------------------------------------------------


@pytest.fixture(scope="module")
def slot() -> Iterator[Sandbox]:
    with Sandbox(slot=91, config=sandbox_config()) as sandbox:
        yield sandbox


@pytest.fixture
def interpreter(slot: Sandbox) -> Iterator[Interpreter]:
    name = f"evalfarm-sessions-test-{os.getpid()}/s-{time.monotonic_ns()}" if os.geteuid() == 0 else None
    started = Interpreter.start(slot, LIMITS, name)
    try:
        yield started
    finally:
        started.close()


def run(interpreter: Interpreter, code: str, stdin: str = "", timeout_s: float | None = None) -> Any:
    return interpreter.run(code.encode(), stdin.encode(), timeout_s)


@pytest.mark.sandbox
@pytest.mark.check
def test_state_lives_across_runs(interpreter: Interpreter) -> None:
    assert run(interpreter, "x = 41\nimport fractions").status is Status.OK
    assert run(interpreter, "open('/tmp/notes.txt', 'w').write('kept')").value == "4"
    result = run(interpreter, "x + 1")
    assert (result.status, result.value, result.stdout) == (Status.OK, "42", "")
    assert run(interpreter, "fractions.Fraction(1, 3) * 3").value == "Fraction(1, 1)"
    assert run(interpreter, "open('/tmp/notes.txt').read()").value == "'kept'"


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("code", "value", "stdout"),
    [
        ("1 + 1", "2", ""),
        ("print('a')\n'b'", "'b'", "a\n"),
        ("y = 3", None, ""),  # an assignment shows nothing
        ("None", None, ""),  # nor does None
        ("2 + 2;", None, ""),  # nor a trailing semicolon, as in a notebook
        ("for i in range(2):\n    print(i)", None, "0\n1\n"),
        ("import numpy as np\nnp.arange(3)", "array([0, 1, 2])", ""),
        ("", None, ""),
        ("# only a comment", None, ""),
    ],
)
def test_value_is_the_repr_of_the_last_expression(
    interpreter: Interpreter, code: str, value: Any, stdout: str
) -> None:
    result = run(interpreter, code)
    assert (result.status, result.value, result.stdout) == (Status.OK, value, stdout)


@pytest.mark.sandbox
def test_stdin_reaches_each_run_fresh(interpreter: Interpreter) -> None:
    assert run(interpreter, "input()", stdin="first\nleft over\n").value == "'first'"
    assert run(interpreter, "input()", stdin="second\n").value == "'second'"  # nothing of the last run's
    assert run(interpreter, "import sys\nsys.stdin.read()").value == "''"


@pytest.mark.sandbox
def test_a_raising_run_leaves_the_session_usable(interpreter: Interpreter) -> None:
    run(interpreter, "x = 1")
    failed = run(interpreter, "print('before')\nx = 2\nraise KeyError('k')")
    assert failed.status is Status.RUNTIME_ERROR and failed.alive
    assert failed.stdout == "before\n" and "KeyError: 'k'" in failed.stderr
    assert failed.exception is not None and failed.exception["ename"] == "KeyError"
    assert failed.exception["traceback"][-1] == "KeyError: 'k'\n"
    assert run(interpreter, "x").value == "2"  # what ran before the exception stays, as in a notebook
    assert run(interpreter, "def f(:").status is Status.RUNTIME_ERROR  # a syntax error is the run's
    assert run(interpreter, "raise SystemExit(3)").alive  # a kernel keeps going
    assert run(interpreter, "x").value == "2"


@pytest.mark.sandbox
def test_a_timed_out_run_is_interrupted_and_the_session_survives(interpreter: Interpreter) -> None:
    run(interpreter, "x = 1")
    started = time.monotonic()
    result = run(interpreter, "x = 2\nwhile True:\n    pass", timeout_s=1.0)
    assert time.monotonic() - started < 3
    assert (result.status, result.alive) == (Status.TIMEOUT, True)
    assert "KeyboardInterrupt" in result.stderr
    assert run(interpreter, "x").value == "2"


@pytest.mark.sandbox
def test_a_run_that_ignores_the_interrupt_is_killed_with_its_session(interpreter: Interpreter) -> None:
    code = (
        "import signal, time\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    time.sleep(0.01)"
    )
    result = run(interpreter, code, timeout_s=0.5)
    assert (result.status, result.alive) == (Status.TIMEOUT, False)
    after = run(interpreter, "1")
    assert (after.status, after.alive) == (Status.RUNTIME_ERROR, False)


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("code", "status", "alive"),
    [
        ("import os\nos._exit(0)", Status.RUNTIME_ERROR, False),  # the interpreter ended itself
        ("import ctypes\nctypes.string_at(0)", Status.RUNTIME_ERROR, False),  # a crash
        # PID 1 of its namespace: a signal from inside is ignored, so the session lives on.
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", Status.OK, True),
        ("b = bytearray(1 << 30)", Status.MEMORY_LIMIT, True),  # past the address space: MemoryError
    ],
)
def test_how_a_session_ends(interpreter: Interpreter, code: str, status: Status, alive: bool) -> None:
    result = run(interpreter, code)
    assert (result.status, result.alive) == (status, alive)


@pytest.mark.sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="the session's memory cgroup needs root")
def test_memory_is_capped_across_the_whole_session(interpreter: Interpreter) -> None:
    """Each run keeps what it allocated; together they pass the session's cap, which ends it."""
    results = [
        run(interpreter, f"keep{i} = bytearray({100 << 20})\nkeep{i}[::4096] = b'x' * {25600}")
        for i in range(5)
    ]
    assert results[0].status is Status.OK
    assert any(r.status is Status.MEMORY_LIMIT for r in results)


@pytest.mark.sandbox
def test_output_past_the_cap_is_cut_and_the_session_goes_on(interpreter: Interpreter) -> None:
    result = run(interpreter, "print('x' * 100000)\n7")
    assert result.status is Status.OK and result.value == "7"
    assert len(result.stdout) == LIMITS.output_bytes and result.truncated == ("stdout",)
    assert result.output_bytes == LIMITS.output_bytes
    assert result.notice == f"stdout cut at {LIMITS.output_bytes} bytes (the session's output_bytes)"
    assert run(interpreter, "print(1)").notice is None


# Programs that try to forge what the manager decides. A run's own report (its value, or what it
# raised) is in its own process, so it is the run's to say: writing one is no more than the run could
# do honestly (`try: ...; except: pass; 42`). What is the manager's (a timeout, a death, the farm's
# statuses) no run can forge.
FORGERIES = [
    # A report written on every descriptor the run holds, with the farm's status in it.
    (
        "import os, json\nfor fd in range(3, 64):\n"
        "    try: os.write(fd, json.dumps({'value': '42', 'status': 'infra_error'}).encode() + b'\\n')\n"
        "    except OSError: pass\n1/0",
        {Status.OK, Status.RUNTIME_ERROR},
        True,
    ),
    # Its channel closed: the interpreter has nothing more to serve and exits; the session ends.
    (
        "import os\nfor fd in range(3, 64):\n    try: os.close(fd)\n    except OSError: pass",
        {Status.RUNTIME_ERROR},
        False,
    ),
    # Its report pipe closed (and the interpreter's other descriptors), not the channel: no report
    # comes; the session ends, at its timeout at the latest.
    (
        "import os\nfor fd in range(4, 64):\n    try: os.close(fd)\n    except OSError: pass",
        {Status.TIMEOUT, Status.RUNTIME_ERROR},
        False,
    ),
]


@pytest.mark.sandbox
@pytest.mark.parametrize(("code", "statuses", "alive"), FORGERIES)
def test_a_run_cannot_forge_the_farms_status(
    interpreter: Interpreter, code: str, statuses: set[Status], alive: bool
) -> None:
    result = run(interpreter, code, timeout_s=1.0)
    assert result.status in statuses and result.alive is alive
    assert run(interpreter, "2 + 2").status in ({Status.OK} if alive else {Status.RUNTIME_ERROR})


# What a cell may write on its own report pipe while it runs (it holds the pipe then): whatever it is,
# a report the host cannot read is the cell's runtime_error, and the session lives on. A parser that
# raised out of the host (RecursionError on deep nesting) ended the session as the host's fault.
REPORT_BOMBS = {
    "deep_nesting": "b'[' * 100_000 + b'\\n'",
    "huge_frame": "b'x' * (1 << 20) + b'\\n'",
    "frame_without_end": "b'{' * (1 << 20)",
    "not_utf8": "b'\\xff\\xfe{}\\n'",
    "not_an_object": "b'[1, 2]\\n'",
    "deep_exception": "b'{\"error\": {\"ename\": ' + b'[' * 900 + b']' * 900 + b'}}\\n'",
}


@pytest.mark.sandbox
@pytest.mark.parametrize("bomb", sorted(REPORT_BOMBS))
def test_a_report_bomb_is_the_cells_runtime_error_and_the_session_lives_on(
    interpreter: Interpreter, bomb: str
) -> None:
    run(interpreter, "x = 41")
    write = f"os.write(fd, {REPORT_BOMBS[bomb]})"
    code = f"import os\nfor fd in range(4, 64):\n    try: {write}\n    except OSError: pass\n"
    result = run(interpreter, code)
    assert (result.status, result.alive) == (Status.RUNTIME_ERROR, True), result
    assert run(interpreter, "x + 1").value == "42"


@pytest.mark.sandbox
@pytest.mark.parametrize("text", ["'\\u00e9' * 70_000", "'\\U0001F600' * 70_000", "[chr(0xd800)] * 20_000"])
def test_a_long_value_is_cut_never_taken_for_a_malformed_report(interpreter: Interpreter, text: str) -> None:
    """A value whose repr escapes to more than the host keeps of a report (non-ASCII, lone
    surrogates) is cut to fit: the cell's honest report always reaches the host whole."""
    result = run(interpreter, text)
    assert (result.status, result.alive) == (Status.OK, True), result
    assert result.value is not None and result.value.endswith("...")
    failed = run(interpreter, f"raise ValueError({text})")
    assert failed.status is Status.RUNTIME_ERROR and failed.exception["ename"] == "ValueError", failed


@pytest.mark.sandbox
def test_reports_planted_in_one_session_never_reach_another(slot: Sandbox, interpreter: Interpreter) -> None:
    """A thread left behind writes reports on every descriptor it can find, all the time: what it
    plants is its own session's words (a notebook's background thread writes into later cells too),
    and another session's results stay exact."""
    code = (
        "import os, json, threading, time\n"
        "def plant():\n"
        "    while True:\n"
        "        for fd in range(3, 64):\n"
        "            try: os.write(fd, json.dumps({'value': '666'}).encode() + b'\\n')\n"
        "            except OSError: pass\n"
        "        time.sleep(0.001)\n"
        "threading.Thread(target=plant, daemon=True).start()"
    )
    run(interpreter, code)
    other = Interpreter.start(slot, LIMITS)
    try:
        for i in range(30):
            run(interpreter, f"{i}")
            assert run(other, f"{i} * 2").value == str(i * 2)
    finally:
        other.close()


@pytest.mark.sandbox
def test_sessions_cannot_see_each_other(slot: Sandbox) -> None:
    first, second = Interpreter.start(slot, LIMITS), Interpreter.start(slot, LIMITS)
    try:
        run(first, "secret = 'first'\nopen('/tmp/secret', 'w').write('first')\nimport os\npid = os.getpid()")
        assert run(second, "'secret' in globals()").value == "False"
        assert run(second, "import os\nos.path.exists('/tmp/secret')").value == "False"
        assert run(second, "sorted(p for p in os.listdir('/proc') if p.isdigit())").value == "['1']"
        assert run(first, "os.getpid()").value == "1"  # each is PID 1 of a namespace of its own
        # An abstract socket bound in one is not reachable from the other (Landlock scopes them).
        run(first, "import socket\ns = socket.socket(socket.AF_UNIX)\ns.bind('\\0evalfarm-test')\ns.listen()")
        reached = run(
            second, "import socket\nc = socket.socket(socket.AF_UNIX)\nc.connect('\\0evalfarm-test')"
        )
        assert reached.status is Status.RUNTIME_ERROR
    finally:
        first.close()
        second.close()


# -- on a farm --------------------------------------------------------------------------------------


def session_hosts(url: str) -> list[dict[str, Any]]:
    """The live session hosts' advertisements."""
    client = redis.Redis.from_url(url)
    try:
        names = client.smembers(keys.SESSION_HOSTS_KEY)
        adverts = client.mget([keys.SESSION_HOST_PREFIX + n.decode() for n in names]) if names else []
        return [json.loads(a) for a in adverts if a is not None]
    finally:
        client.close()


@pytest.fixture
def farm_with_sessions(tmp_path: Path) -> Iterator[tuple[str, Workers]]:
    server = RedisServer(directory=str(tmp_path)).start()
    workers = Workers(server.url)
    try:
        yield server.url, workers
    finally:
        workers.stop_all()
        server.close()


def start_node(url: str, workers: Workers, sessions: int = 8) -> Any:
    node = workers.start(concurrency=1, EVALFARM_SESSIONS=str(sessions))
    wait_for(lambda: len(session_hosts(url)) == len(workers.started), 60, "the session host")
    return node


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_the_python_client(farm_with_sessions: tuple[str, Workers]) -> None:
    url, workers = farm_with_sessions
    start_node(url, workers, sessions=2)
    with Farm(settings=client_settings(url), progress=False) as farm:
        with farm.session(ttl_s=60) as session:
            session.run("x = 41")
            assert session.run("x + 1").value == "42"
            assert farm.attach(session.id).run("x").value == "41"  # found by its id elsewhere
            failed = session.run("1/0")
            assert (failed.status, failed.session_alive) == ("runtime_error", True)
            timed_out = session.run("import time\nx = 5\ntime.sleep(60)", timeout_s=1)
            assert (timed_out.status, timed_out.session_alive) == ("timeout", True)
            assert session.run("x").value == "5"
        with pytest.raises(SessionNotFound, match="never opened, closed, or expired"):
            session.run("x")
        held = [farm.session(), farm.session()]
        with pytest.raises(SessionsFull):
            farm.session()
        held[0].close()
        farm.session().close()  # the closed one's place is free again
        with pytest.raises(ValueError):
            farm.session(limits={"memory_mb": 10**9})


@pytest.mark.parametrize("budget_mb", [1, 2, 64, 256, 4096])
@pytest.mark.parametrize("sessions", [1, 2, 32, 4096])
def test_a_hosts_output_budget_bounds_all_its_sessions_at_once(budget_mb: int, sessions: int) -> None:
    from evalfarm.sandbox.session_interpreter import MIN_OUTPUT_BYTES, held_bytes
    from evalfarm.workers.session_host import output_budget

    capacity, cap = output_budget(budget_mb << 20, sessions)
    assert capacity * held_bytes(cap) <= budget_mb << 20  # every session's cell at its cap, at once
    assert capacity == min(sessions, (budget_mb << 20) // held_bytes(MIN_OUTPUT_BYTES))
    assert capacity == 0 or cap >= MIN_OUTPUT_BYTES


def test_the_default_budget_keeps_the_default_output_cap() -> None:
    from evalfarm.broker.settings import WorkerSettings
    from evalfarm.workers.session_host import output_budget

    settings = WorkerSettings()
    capacity, cap = output_budget(settings.session_output_mb << 20, settings.sessions)
    assert capacity == settings.sessions and cap >= SessionSpec().limits.output_bytes


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_nodes_output_budget_caps_its_sessions_and_a_report_bomb_ends_none(
    farm_with_sessions: tuple[str, Workers],
) -> None:
    """Two sessions that each may print 64 MiB on a node that holds 2 MB of output for both: each
    is held to its share and says so; and a cell's unreadable report is its runtime_error, not the
    node's failure, its session living on."""
    from evalfarm.workers.session_host import output_budget

    url, workers = farm_with_sessions
    workers.start(concurrency=1, EVALFARM_SESSIONS="2", EVALFARM_SESSION_OUTPUT_MB="2")
    wait_for(lambda: len(session_hosts(url)) == 1, 60, "the session host")
    _, cap = output_budget(2 << 20, 2)
    flood = "import sys\nsys.stdout.write('x' * (4 << 20))\nsys.stderr.write('y' * (4 << 20))\n7"
    write = f"os.write(fd, {REPORT_BOMBS['deep_nesting']})"
    bomb = f"import os\nfor fd in range(4, 64):\n    try: {write}\n    except OSError: pass\n"
    with Farm(settings=client_settings(url), progress=False) as farm:
        sessions = [farm.session(limits={"output_bytes": 64 << 20}) for _ in range(2)]
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda session: session.run(flood), sessions))
        for result in results:
            assert (result.status, result.value, result.output_bytes) == ("ok", "7", cap), result.notice
            assert (len(result.stdout), len(result.stderr)) == (cap, cap)
            assert result.truncated == ("stderr", "stdout")
            assert result.notice is not None and "holds 2 MB of output for its 2 sessions" in result.notice
        bombed = sessions[0].run(bomb)
        assert (bombed.status, bombed.session_alive) == ("runtime_error", True), bombed
        assert sessions[0].run("6 * 7").value == "42"
        for session in sessions:
            session.close()


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_the_asyncio_client_with_64_concurrent_sessions(farm_with_sessions: tuple[str, Workers]) -> None:
    """Each of 64 sessions, opened and run at once, keeps its own state through interleaved runs."""
    url, workers = farm_with_sessions
    start_node(url, workers, sessions=64)

    async def rollout(farm: AsyncFarm, index: int) -> list[str | None]:
        async with farm.session(ttl_s=60) as session:
            await session.run(f"state = [{index}]")
            for step in range(5):
                await session.run(f"state.append({index} * 100 + {step})")
                await asyncio.sleep(0)
            return [(await session.run("state")).value, (await session.run("len(state)")).value]

    async def main() -> list[list[str | None]]:
        async with AsyncFarm(settings=client_settings(url)) as farm:
            return await asyncio.gather(*(rollout(farm, i) for i in range(64)))

    answers = asyncio.run(main())
    for index, (state, length) in enumerate(answers):
        assert state == repr([index, *(index * 100 + step for step in range(5))])
        assert length == "6"
    assert session_hosts(url)[0]["capacity"] == 64
    wait_for(lambda: session_hosts(url)[0]["open"] == 0, 10, "every session closed")


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_idle_sessions_expire_and_free_their_place(farm_with_sessions: tuple[str, Workers]) -> None:
    url, workers = farm_with_sessions
    start_node(url, workers, sessions=1)
    with Farm(settings=client_settings(url), progress=False) as farm:
        session = farm.session(ttl_s=2)
        session.run("x = 1")
        time.sleep(1.5)
        assert session.run("x").value == "1"  # a run resets its idle time
        with pytest.raises(SessionsFull):
            farm.session()
        wait_for(lambda: session_hosts(url)[0]["open"] == 0, 10, "the idle session to expire")
        with pytest.raises(SessionNotFound, match="expired"):
            session.run("x")
        farm.session().close()


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_dead_node_loses_its_sessions_and_says_so(farm_with_sessions: tuple[str, Workers]) -> None:
    """Killed with SIGKILL (no warm shutdown): the next run answers infra_error session_lost within
    the node's liveness time, never a fresh interpreter; a new session opens on a live node."""
    url, workers = farm_with_sessions
    doomed = start_node(url, workers)
    with Farm(settings=client_settings(url), progress=False) as farm:
        session = farm.session(ttl_s=300)
        session.run("x = 1")
        start_node(url, workers)
        kill_node(doomed)
        started = time.monotonic()
        lost = session.run("x")
        assert (lost.status, lost.infra_reason, lost.session_alive) == ("infra_error", "session_lost", False)
        assert time.monotonic() - started < client_settings(url).node_dead_after_s + 5
        assert session.run("x").status == "infra_error"  # again, not a fresh interpreter
        with farm.session() as fresh:
            assert fresh.run("'x' in globals()").value == "False"


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_session_cannot_see_a_batch_jobs_files(farm_with_sessions: tuple[str, Workers]) -> None:
    url, workers = farm_with_sessions
    start_node(url, workers)
    job = {
        "id": "j",
        "env": "program",
        "code": "open('/tmp/job-secret', 'w').write('s')\nimport time\ntime.sleep(2)",
    }
    farm = Farm(settings=client_settings(url), progress=False)
    with farm, concurrent.futures.ThreadPoolExecutor(1) as pool, farm.session() as session:
        scored = pool.submit(farm.score, [job])
        time.sleep(0.5)
        seen = session.run(
            "import os\nos.listdir('/tmp'), sorted(p for p in os.listdir('/proc') if p.isdigit())"
        )
        assert scored.result()[0]["status"] == "ok"
    assert seen.value == "([], ['1'])"


# -- the gateway --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = RedisServer(directory=str(tmp_path_factory.mktemp("sessions"))).start()
    workers = Workers(server.url)
    gateway = GatewayProcess(server.url, free_port(), worker_env()).start()
    try:
        start_node(server.url, workers, sessions=3)
        gateway.wait_ready(60)
        yield gateway.url
    finally:
        gateway.stop(grace_s=10)
        workers.stop_all()
        server.close()


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_sessions_over_http(gateway: str) -> None:
    health = requests.get(f"{gateway}/v1/health", timeout=30).json()
    assert health["sessions"] == {"hosts": 1, "capacity": 3, "open": 0}
    opened = requests.post(f"{gateway}/v1/sessions", json={"language": "python", "ttl_s": 60}, timeout=30)
    assert opened.status_code == 201, opened.text
    session_id = opened.json()["session_id"]
    assert opened.json()["expires_at"] > time.time() + 50
    runs = f"{gateway}/v1/sessions/{session_id}/run"
    assert requests.post(runs, json={"code": "x = 41"}, timeout=30).json()["value"] is None
    answer = requests.post(runs, json={"code": "print(input())\nx + 1", "stdin": "hi\n"}, timeout=30).json()
    assert (answer["status"], answer["stdout"], answer["value"]) == ("ok", "hi\n", "42")
    timed_out = requests.post(runs, json={"code": "while True: pass", "timeout_s": 0.5}, timeout=30).json()
    assert (timed_out["status"], timed_out["session_alive"]) == ("timeout", True)
    assert requests.delete(f"{gateway}/v1/sessions/{session_id}", timeout=30).status_code == 204
    gone = requests.post(runs, json={"code": "x"}, timeout=30)
    assert gone.status_code == 404 and "error" in gone.json()
    assert requests.delete(f"{gateway}/v1/sessions/{session_id}", timeout=30).status_code == 404
    assert requests.post(f"{gateway}/v1/sessions/nope/run", json={"code": "1"}, timeout=30).status_code == 404
    metrics = requests.get(f"{gateway}/metrics", timeout=30).text
    assert 'evalfarm_gateway_session_runs_total{status="timeout"} 1.0' in metrics
    assert 'evalfarm_gateway_request_duration_seconds_count{route="/v1/sessions/{session_id}/run"}' in metrics


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "body",
    [
        {"language": "cobol"},
        {"ttl_s": -1},
        {"limits": {"memory_mb": 0}},
        {"limits": {"gpus": 1}},
        {"extra": 1},
    ],
)
def test_a_bad_session_request_is_400(gateway: str, body: dict[str, Any]) -> None:
    answer = requests.post(f"{gateway}/v1/sessions", json=body, timeout=30)
    assert answer.status_code == 400 and "error" in answer.json()


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_full_farm_is_429_with_retry_after(gateway: str) -> None:
    held = [requests.post(f"{gateway}/v1/sessions", json={}, timeout=30) for _ in range(3)]
    try:
        assert [h.status_code for h in held] == [201] * 3
        full = requests.post(f"{gateway}/v1/sessions", json={}, timeout=30)
        assert full.status_code == 429 and int(full.headers["Retry-After"]) >= 1
    finally:
        for h in held:
            requests.delete(f"{gateway}/v1/sessions/{h.json()['session_id']}", timeout=30)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_run_jupyter_answers_in_sandbox_fusions_shape(gateway: str) -> None:
    """SandboxFusion's own test cases (sandbox/tests/runners/test_jupyter.py) and its documented
    response shape."""
    cells = [
        'a = "hello"',
        'import sys\nsys.stderr.write("This is an error message\\n")',
        "assert False",
        "print(a)",
        "a",
    ]
    body = {"cells": cells, "files": {"in.txt": "aGk="}, "fetch_files": ["in.txt", "missing.txt"]}
    answer = requests.post(f"{gateway}/run_jupyter", json=body, timeout=60)
    assert answer.status_code == 200
    result = answer.json()
    assert set(result) == {"status", "message", "driver", "cells", "executor_pod_name", "files"}
    assert (result["status"], result["driver"]["status"], result["driver"]["return_code"]) == (
        "Success",
        "Finished",
        0,
    )
    assert [set(cell) for cell in result["cells"]] == [{"stdout", "stderr", "display", "error"}] * 5
    assert result["cells"][0]["stdout"] == ""
    assert result["cells"][1]["stderr"] == "This is an error message\n"
    assert result["cells"][1]["display"] == [
        {"text/plain": "25"}
    ]  # write's return value, as Jupyter shows it
    assert result["cells"][2]["error"][0]["ename"] == "AssertionError" and result["cells"][2]["stderr"] == ""
    assert result["cells"][3]["stdout"] == "hello\n"
    assert result["cells"][4]["display"] == [{"text/plain": "'hello'"}]
    assert result["files"] == {"in.txt": "aGk="}
    slow = requests.post(
        f"{gateway}/run_jupyter", json={"cells": ["1", "while True: pass"], "cell_timeout": 0.5}, timeout=60
    )
    assert (slow.json()["status"], slow.json()["cells"]) == ("Failed", [])
    bad = requests.post(f"{gateway}/run_jupyter", json={"cells": "print(1)"}, timeout=60)
    assert bad.status_code == 422 and "detail" in bad.json()


@pytest.mark.sandbox
@pytest.mark.parametrize("user", ["root", "unprivileged"])
def test_sessions_work_as_root_and_as_an_unprivileged_user(user: str) -> None:
    """As an unprivileged user the slot is a user namespace and sessions have no cgroups: the
    state, the interrupt and the isolation hold the same."""
    if os.geteuid() != 0:
        pytest.skip("creating the unprivileged user needs root")
    import subprocess
    import sys

    import unprivileged

    probe = [sys.executable, str(Path(__file__).parent / "session_probe.py"), "96"]
    command = unprivileged.command(probe) if user == "unprivileged" else probe
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["status"], r["value"], r["session_alive"]) for r in results] == [
        ("ok", None, True),
        ("ok", "42", True),
        ("ok", "3", True),
        ("timeout", None, True),
        ("ok", "('yes', 41)", True),
        ("ok", "(1000, 1)" if user == "unprivileged" else results[5]["value"], True),
        ("ok", "(False, False)", True),
    ]
    assert results[5]["value"] != "(0, 1)"  # never root inside


@pytest.mark.integration
@pytest.mark.timeout(300)
@pytest.mark.skipif(os.geteuid() != 0, reason="the sessions' CPU quota is a cgroup's: root")
def test_sessions_take_no_more_than_their_share_of_the_cores(farm_with_sessions: tuple[str, Workers]) -> None:
    """A session spinning for 2 s of wall time gets the CPU its node's share allows (a quarter of
    the node's cores here, half a core), not a whole core: the rest is batch scoring's."""
    url, workers = farm_with_sessions
    workers.start(concurrency=1, EVALFARM_SESSIONS="4", EVALFARM_SESSION_CPU_SHARE="0.25")
    wait_for(lambda: bool(session_hosts(url)), 60, "the session host")
    spin = (
        "import time\nstart = time.monotonic()\n"
        "while time.monotonic() - start < 2:\n    pass\ntime.process_time()"
    )
    with Farm(settings=client_settings(url), progress=False) as farm, farm.session() as session:
        cpu_s = float(session.run(spin, timeout_s=10).value or 0)
    cores = len(os.sched_getaffinity(0))
    assert cpu_s < 2 * 0.25 * cores * 1.3, cpu_s  # its quota, and some slack for the period's edges


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_gateway_restart_leaks_no_session(farm_with_sessions: tuple[str, Workers]) -> None:
    """The gateway holds nothing: sessions opened through one that is then killed are found by the
    next one by their id, and those left idle end on their node."""
    url, workers = farm_with_sessions
    start_node(url, workers, sessions=4)
    first = GatewayProcess(url, free_port(), worker_env()).start()
    try:
        first.wait_ready(60)
        kept = requests.post(f"{first.url}/v1/sessions", json={"ttl_s": 60}, timeout=30).json()["session_id"]
        requests.post(f"{first.url}/v1/sessions/{kept}/run", json={"code": "x = 7"}, timeout=30)
        requests.post(f"{first.url}/v1/sessions", json={"ttl_s": 2}, timeout=30)  # left behind
    finally:
        first.stop(grace_s=0)
    second = GatewayProcess(url, free_port(), worker_env()).start()
    try:
        second.wait_ready(60)
        answer = requests.post(f"{second.url}/v1/sessions/{kept}/run", json={"code": "x"}, timeout=30).json()
        assert answer["value"] == "7"
        wait_for(lambda: session_hosts(url)[0]["open"] == 1, 15, "the abandoned session to expire")
    finally:
        second.stop(grace_s=10)
