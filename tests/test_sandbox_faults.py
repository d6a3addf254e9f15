"""Faults of the sandbox itself are never the program's: a lost server or a kill from outside is retried.

Real fork servers and real runs; the faults are real SIGKILLs from this process, as an operator, the
host's OOM killer or a container runtime would send them.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalfarm.envs.runtime import sandbox_config
from evalfarm.sandbox import Limits, Sandbox, SandboxConfig, Status

pytestmark = pytest.mark.sandbox

SLEEP_THEN_PRINT = "import time\ntime.sleep(0.6)\nprint('done')"


@pytest.fixture
def sandbox():
    with Sandbox(slot=912) as sandbox:
        yield sandbox


def children(pid: int) -> list[int]:
    """Direct children of `pid` (none once it has exited)."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except FileNotFoundError:
        return []


def run_pids(server_pid: int) -> list[int]:
    """The runs a fork server has forked: its children (as root) or its inner server's (a user
    namespace, where the launched process only waits on the real server)."""
    found = children(server_pid)
    if os.geteuid() != 0:
        found = [run for inner in found for run in children(inner)]
    return found


def kill_when(find: Callable[[], list[int]], times: int, timeout_s: float = 10.0) -> threading.Thread:
    """A thread that SIGKILLs the first pid `find` returns, `times` times (a new one each time)."""

    def loop() -> None:
        killed: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(killed) < times and time.monotonic() < deadline:
            fresh = [pid for pid in find() if pid not in killed]
            if fresh:
                time.sleep(0.1)  # let the run get going: the fault lands mid-run
                os.kill(fresh[0], signal.SIGKILL)
                killed.add(fresh[0])
            time.sleep(0.01)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_a_server_that_died_between_runs_is_replaced_before_the_next_run(sandbox: Sandbox) -> None:
    process = sandbox.server_process
    assert process is not None
    tree = [process.pid, *children(process.pid)]  # without root, the real server is a child
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 5
    while any(Path(f"/proc/{pid}").exists() for pid in tree) and time.monotonic() < deadline:
        time.sleep(0.01)
    result = sandbox.run("print(1)")
    assert (result.status, result.stdout) == (Status.OK, b"1\n")
    assert sandbox.take_restarts() == {"server_died_idle": 1}


def test_a_server_killed_mid_run_is_restarted_and_the_run_done_again(sandbox: Sandbox) -> None:
    pid = sandbox.server_pid
    assert pid is not None
    killer = kill_when(lambda: [pid] if run_pids(pid) else [], times=1)
    result = sandbox.run(SLEEP_THEN_PRINT)
    killer.join()
    assert (result.status, result.stdout) == (Status.OK, b"done\n"), result.error
    assert sandbox.take_restarts() == {"server_died_in_run": 1}
    assert sandbox.server_pid != pid


def test_the_numpy_server_killed_mid_run_is_restarted_too(sandbox: Sandbox) -> None:
    code = "import numpy as np, time\ntime.sleep(0.6)\nprint(int(np.arange(5).sum()))"
    assert sandbox.run("import numpy\nprint(1)").status is Status.OK  # the second server is up

    def extended_server() -> list[int]:
        pids = [p.pid for p in sandbox.server_processes if p.pid != sandbox.server_pid]
        return [pid for pid in pids if run_pids(pid)]

    killer = kill_when(extended_server, times=1)
    result = sandbox.run(code)
    killer.join()
    assert (result.status, result.stdout) == (Status.OK, b"10\n"), result.error
    assert sandbox.take_restarts() == {"server_died_in_run": 1}


def test_a_run_killed_from_outside_is_run_again_not_scored_as_a_crash(sandbox: Sandbox) -> None:
    killer = kill_when(lambda: run_pids(sandbox.server_pid or 0), times=1)
    result = sandbox.run(SLEEP_THEN_PRINT)
    killer.join()
    assert (result.status, result.stdout) == (Status.OK, b"done\n"), result.error
    assert sandbox.take_restarts() == {"run_killed_outside": 1}


def test_a_run_killed_from_outside_on_every_attempt_is_an_infra_error(sandbox: Sandbox) -> None:
    attempts = sandbox.config.run_attempts
    killer = kill_when(lambda: run_pids(sandbox.server_pid or 0), times=attempts)
    result = sandbox.run(SLEEP_THEN_PRINT)
    killer.join()
    assert result.status is Status.INFRA_ERROR
    assert "from outside the sandbox" in (result.error or "")
    assert f"{attempts} attempts" in (result.error or "")
    assert sandbox.take_restarts() == {"run_killed_outside": attempts}
    assert sandbox.run("print(2)").stdout == b"2\n"  # the slot still serves


def test_a_server_lost_on_every_attempt_is_an_infra_error_and_the_slot_recovers() -> None:
    with Sandbox(slot=913, config=SandboxConfig(run_attempts=2)) as sandbox:

        def busy_server() -> list[int]:
            pid = sandbox.server_pid
            return [pid] if pid and run_pids(pid) else []

        killer = kill_when(busy_server, times=2)
        result = sandbox.run(SLEEP_THEN_PRINT)
        killer.join()
        assert result.status is Status.INFRA_ERROR
        assert "lost during the run" in (result.error or "")
        assert sandbox.take_restarts() == {"server_died_in_run": 2}
        assert sandbox.run("print(3)").stdout == b"3\n"


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("import ctypes\nctypes.string_at(0)", Status.RUNTIME_ERROR),  # SIGSEGV: the program's own
        ("import os\nos.abort()", Status.RUNTIME_ERROR),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\nprint('alive')", Status.OK),
        ("while True: pass", Status.TIMEOUT),  # RLIMIT_CPU's SIGKILL is the program's limit
    ],
)
def test_genuine_verdicts_keep_their_status(sandbox: Sandbox, code: str, status: Status) -> None:
    result = sandbox.run(code, limits=Limits(cpu_s=1, wall_s=5))
    assert result.status is status, (result.error, result.stderr[-300:])
    assert sandbox.take_restarts() == {}


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="creating the unprivileged user needs root")
def test_the_same_faults_as_an_unprivileged_user() -> None:
    # Without root the slot lives in a user namespace: its servers and runs sit one level deeper.
    import subprocess
    import sys

    import unprivileged

    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__]
    argv += ["-k", "not unprivileged and not slots_cgroups"]  # the slot's cgroups are root's alone
    completed = subprocess.run(
        unprivileged.command(argv),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).resolve().parent.parent,
        env={"PATH": os.environ["PATH"], "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-2000:]
    assert " passed" in completed.stdout and "skipped" not in completed.stdout


def test_a_slow_compiling_interactor_is_waited_for_compiled_once_and_judged() -> None:
    """The client's wait for a run counts every compile in it, the interactor's too when the
    program is Python: with a margin far below testlib's compile time, a wait that counted only the
    program's language took the server for lost on every try, and the interactor was never kept."""
    from test_judging import GUESS_CPP, SEARCH

    from evalfarm.envs.codecontests.interactive import InteractiveJudge, Interactor

    config = dataclasses.replace(sandbox_config(), margin_s=0.5)
    limits = Limits(wall_s=1.0, cpu_s=1.0)
    with Sandbox(slot=914, config=config) as sandbox:
        judge = InteractiveJudge(Interactor("cpp", GUESS_CPP), sandbox)
        runs = [judge.run(SEARCH, "python", secret, "", limits) for secret in ("777\n", "1\n")]
        restarts = sandbox.take_restarts()
    assert [verdict.status for verdict, _ in runs] == [Status.OK, Status.OK], runs
    assert [run.judge["compile"]["cached"] for _, run in runs] == [False, True]
    assert restarts == {}


# A compile that blocks until something ends it: cc1plus reads its own stdout (a pipe nobody writes).
BLOCKING_COMPILE = '#include "/dev/stdout"\nint main() {}\n'


def tree(pid: int) -> list[int]:
    """`pid` and all its descendants."""
    return [pid] + [found for child in children(pid) for found in tree(child)]


def gone(pid: int) -> bool:
    """Whether `pid` has exited (no longer there, or a zombie waiting for its reaper)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def replace_a_stuck_server(sandbox: Sandbox, report: Any) -> None:
    """In a process that did not start the slot's server (as an inline pool's): stop the server in
    the middle of a compile, so that the client takes it for lost and starts another; report what
    was left of the first, the retried job's result and the next job's."""
    sandbox.start()
    launched = sandbox.server_pid
    assert launched is not None
    server = launched if os.geteuid() == 0 else children(launched)[0]  # (the real one, not root)
    stopped: list[int] = []

    def stop_the_server_mid_compile() -> None:
        deadline = time.monotonic() + 30
        while not any(Path(f"/proc/{pid}/comm").read_text().strip() == "cc1plus" for pid in tree(server)[1:]):
            assert time.monotonic() < deadline, "the compile did not start"
            time.sleep(0.05)
        stopped.extend(tree(launched))
        os.kill(server, signal.SIGSTOP)

    stopper = threading.Thread(target=stop_the_server_mid_compile, daemon=True)
    stopper.start()
    limits = Limits(wall_s=1.0, cpu_s=1.0, compile_wall_s=3.0)
    stuck = sandbox.run(BLOCKING_COMPILE, language="cpp", limits=limits)
    stopper.join()
    left = [pid for pid in stopped if not gone(pid)]
    for pid in left:  # where they outlived it: the old server, stopped, and its compile, blocked
        os.kill(pid, signal.SIGKILL)
    after = sandbox.run("print(6 * 7)")
    restarts = dict(sandbox.restarts)
    report.put((left, len(stopped), stuck.status, stuck.error, after.status, after.stdout, restarts))


def test_a_replaced_server_and_its_compile_are_gone_before_the_next_one_starts() -> None:
    """An inline pool's process cannot wait for the slot's server (its parent started it): a server
    that stopped answering in the middle of a compile is killed, its compile with it, before the
    next server starts (as root, in the same cgroups), and the slot's next job is judged normally."""
    import multiprocessing

    config = dataclasses.replace(sandbox_config(), margin_s=1.0, run_attempts=2)
    sandbox = Sandbox(slot=915, config=config)
    sandbox.launch()  # as an inline pool: launched here, used in a forked process
    context = multiprocessing.get_context("fork")
    report = context.Queue()
    child = context.Process(target=replace_a_stuck_server, args=(sandbox, report))
    child.start()
    try:
        left, stopped, stuck, error, after, stdout, restarts = report.get(timeout=120)
    finally:
        child.join(30)
        sandbox.close()
    assert stopped >= 3  # the server, the compile's own process, and the compiler
    assert left == [], "the old server or its compile outlived the server that replaced it"
    assert (stuck, "wall-clock" in (error or "")) == (Status.TIMEOUT, True), error  # the retry's compile
    assert (after, stdout) == (Status.OK, b"42\n")
    assert restarts == {"server_died_in_run": 1}


@pytest.mark.skipif(os.geteuid() != 0, reason="the slot's cgroups need root")
def test_a_new_server_ends_what_is_left_in_its_slots_cgroups_before_it_serves() -> None:
    """What an earlier server left in the slot's cgroups (here a process holding 400 MB, as a
    compile would) is ended before the new server runs anything: it no longer refuses the new
    server's first memory limit (EBUSY, below what the leftover holds), so the next job is judged."""
    import subprocess
    import sys

    from evalfarm.sandbox import _cgroups

    hog = "import sys\nsys.stdin.readline()\nheld = bytearray(400 << 20)\nprint('held', flush=True)\n"
    hog += "sys.stdin.read()"
    with Sandbox(slot=916) as sandbox:
        assert sandbox.run("print(1)").status is Status.OK  # the slot's memory limit: 512 MB and more
        cgroups, _ = _cgroups.create(f"evalfarm-slot-{sandbox.uid}")  # the slot's, as its server has them
        assert cgroups is not None
        with subprocess.Popen(
            [sys.executable, "-c", hog], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        ) as left:
            assert left.stdin is not None and left.stdout is not None
            for fd in cgroups.procs_fds:
                os.write(fd, str(left.pid).encode())
            left.stdin.write(b"go\n")
            left.stdin.flush()
            assert left.stdout.readline() == b"held\n"  # its 400 MB are the slot's
            os.kill(sandbox.server_pid or 0, signal.SIGKILL)  # the server goes; what it left stays
            result = sandbox.run("print(6 * 7)")
            try:  # killed by the new server (nothing else would end it), its 400 MB freed
                ended = left.wait(timeout=10)
            except subprocess.TimeoutExpired:
                ended = None
                left.kill()
        cgroups.remove()
    assert (result.status, result.stdout) == (Status.OK, b"42\n"), result.error
    assert ended == -signal.SIGKILL, "the new server served beside what the old one left"
