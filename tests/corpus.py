"""The hostile-program corpus: one case per file in tests/hostile/, with the statuses that count as
contained and an optional host-side check. Used by test_hostile.py, as root in-process and as an
unprivileged user through `python tests/corpus.py` (which prints one JSON verdict per case).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from evalfarm.sandbox import Limits, RunResult, Sandbox

CORPUS = Path(__file__).resolve().parent / "hostile"
SECRET_VARIABLE = "EVALFARM_HOSTILE_SECRET"
ESCAPE_PATHS = ("/evalfarm-escape", "/etc/evalfarm-escape", "/usr/evalfarm-escape", "/root/evalfarm-escape")
FORBIDDEN_MARKERS = ("ALLOWED", "CONNECTED", "WROTE", "READ ", "LISTED", "ROOT")


@dataclasses.dataclass(frozen=True)
class Case:
    """One hostile program and what counts as contained."""

    name: str
    code: str
    expect: tuple[str, ...]
    limits: Limits
    check: str | None
    language: str = "python"


# A case file's language by its suffix, and the prefix of its header comments.
LANGUAGES = {".py": ("python", "# "), ".cpp": ("cpp", "// ")}


def load_cases() -> list[Case]:
    """Every case of the corpus (Python and C++), parsed from its header comments."""
    cases = []
    for path in sorted(p for p in CORPUS.iterdir() if p.suffix in LANGUAGES):
        language, prefix = LANGUAGES[path.suffix]
        code = path.read_text()
        header = dict(
            line[len(prefix) :].split(": ", 1)
            for line in code.splitlines()
            if line.startswith(prefix) and ": " in line[:20]
        )
        cases.append(
            Case(
                name=path.stem,
                code=code,
                expect=tuple(header["expect"].split()),
                limits=Limits(wall_s=5.0, cpu_s=3.0).merged(json.loads(header.get("limits", "{}"))),
                check=header.get("check"),
                language=language,
            )
        )
    return cases


_SANDBOXES: list[Sandbox] = []  # the sandbox under test
_UIDS: list[int] = []  # the host uid of its runs


def run_case(sandbox: Sandbox, case: Case) -> tuple[RunResult, list[str]]:
    """Run one case; return its result and the host-side problems found (empty when contained)."""
    sandbox.start()
    _SANDBOXES[:] = [sandbox]
    _UIDS[:] = [run_uid(sandbox)]
    with _CHECKS.get(case.check or "", _no_check)(case) as (stdin, verify):
        result = sandbox.run(case.code, stdin, case.limits, language=case.language)
        problems = verify(result)
    if result.status.value not in case.expect:
        problems.append(f"status {result.status.value} not in {case.expect}: {result.error}")
    return result, problems


Verifier = Callable[[RunResult], list[str]]


@contextlib.contextmanager
def _no_check(case: Case) -> Iterator[tuple[str, Verifier]]:
    yield "", lambda result: []


@contextlib.contextmanager
def _stopped_early(case: Case) -> Iterator[tuple[str, Verifier]]:
    def verify(result: RunResult) -> list[str]:
        late = result.wall_s > case.limits.wall_s / 2
        return [f"flood ran {result.wall_s:.1f} s: not stopped at the output cap"] if late else []

    yield "", verify


@contextlib.contextmanager
def _no_leftover_processes(case: Case) -> Iterator[tuple[str, Verifier]]:
    def verify(result: RunResult) -> list[str]:
        time.sleep(2.5)  # past the moment the daemon would write its file
        case_servers = tuple(server.pid for server in sandbox.server_processes)
        # The kernel kills a namespace's processes when its init ends, but not at once: on a loaded
        # machine they may take a while to go. One that lives on (it sleeps an hour) is still here.
        deadline = time.monotonic() + 15
        while (pids := leftover_processes(case_uid, case_servers)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return [f"processes left behind: {pids}"] if pids else []

    sandbox = _SANDBOXES[0]
    case_uid = _UIDS[0]
    yield "", verify


@contextlib.contextmanager
def _no_worker_secret(case: Case) -> Iterator[tuple[str, Verifier]]:
    def verify(result: RunResult) -> list[str]:
        leaked = os.environ[SECRET_VARIABLE].encode() in result.stdout + result.stderr
        return ["the worker's environment reached the program"] if leaked else []

    yield "", verify


@contextlib.contextmanager
def _only_own_processes(case: Case) -> Iterator[tuple[str, Verifier]]:
    def verify(result: RunResult) -> list[str]:
        line = next((x for x in result.stdout.decode().splitlines() if x.startswith("PIDS")), "PIDS []")
        pids = json.loads(line[5:])
        return [] if pids == [1] else [f"/proc shows other processes: {pids}"]

    yield "", verify


@contextlib.contextmanager
def _no_loopback_connection(case: Case) -> Iterator[tuple[str, Verifier]]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield str(server.getsockname()[1]), _unreached(server, "a loopback server of the host")


@contextlib.contextmanager
def _no_unix_connection(case: Case) -> Iterator[tuple[str, Verifier]]:
    with tempfile.TemporaryDirectory() as directory:
        path = f"{directory}/host.sock"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(path)
            os.chmod(directory, 0o755)
            os.chmod(path, 0o777)
            server.listen()
            yield path, _unreached(server, "a UNIX socket of the host")


def _unreached(server: socket.socket, what: str) -> Verifier:
    """A verifier that fails when `server` has a connection waiting."""
    server.setblocking(False)

    def verify(result: RunResult) -> list[str]:
        try:
            server.accept()
        except BlockingIOError:
            return _markers(result)
        return [f"{what} was reached"]

    return verify


@contextlib.contextmanager
def _all_blocked(case: Case) -> Iterator[tuple[str, Verifier]]:
    yield "", _markers


@contextlib.contextmanager
def _no_host_writes(case: Case) -> Iterator[tuple[str, Verifier]]:
    def verify(result: RunResult) -> list[str]:
        problems = [f"{path} was written on the host" for path in ESCAPE_PATHS if os.path.exists(path)]
        if b"inside ok" not in result.stdout:
            problems.append("the program could not write its own working directory")
        return problems + _markers(result)

    yield "", verify


@contextlib.contextmanager
def _project_hidden(case: Case) -> Iterator[tuple[str, Verifier]]:
    yield str(Path(__file__).resolve()) + "\n", _markers


@contextlib.contextmanager
def _binary_exact(case: Case) -> Iterator[tuple[str, Verifier]]:
    yield "", lambda result: [] if result.stdout == bytes(range(256)) * 4 else ["binary output was altered"]


@contextlib.contextmanager
def _compiler_saw_no_host_file(case: Case) -> Iterator[tuple[str, Verifier]]:
    def verify(result: RunResult) -> list[str]:
        messages = result.stderr.decode(errors="replace")
        if "No such file or directory" not in messages or "root:" in messages:
            return [f"the compiler read a host file: {messages[:300]!r}"]
        return []

    yield "", verify


def _markers(result: RunResult) -> list[str]:
    text = result.stdout.decode(errors="replace")
    return [f"the program reports {marker.strip()!r}" for marker in FORBIDDEN_MARKERS if marker in text]


_CHECKS: dict[str, Callable[[Case], contextlib.AbstractContextManager[tuple[str, Verifier]]]] = {
    "stopped_early": _stopped_early,
    "no_leftover_processes": _no_leftover_processes,
    "no_worker_secret": _no_worker_secret,
    "only_own_processes": _only_own_processes,
    "no_loopback_connection": _no_loopback_connection,
    "no_unix_connection": _no_unix_connection,
    "all_blocked": _all_blocked,
    "no_host_writes": _no_host_writes,
    "binary_exact": _binary_exact,
    "project_hidden": _project_hidden,
    "compiler_saw_no_host_file": _compiler_saw_no_host_file,
}


def leftover_processes(uid: int, servers: tuple[int, ...] = ()) -> list[int]:
    """Processes of `uid` living in a PID namespace other than ours: runs that survived.

    `servers`: live sandbox server processes, whose children are not leftovers (in a user
    namespace the server itself lives in a PID namespace of its own).
    """
    own = os.stat("/proc/self/ns/pid").st_ino
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            namespace = os.stat(f"/proc/{entry}/ns/pid").st_ino
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        owner = int(status.split("\nUid:\t")[1].split()[0])
        parent = int(status.split("\nPPid:\t")[1].split()[0])
        if namespace != own and owner == uid and parent not in servers:
            found.append(int(entry))
    return found


def run_uid(sandbox: Sandbox) -> int:
    """The host uid a sandbox's runs have: the slot's uid when root, our own otherwise."""
    return sandbox.uid if sandbox.uid is not None else os.getuid()


def main() -> None:
    """Run the whole corpus in one sandbox and print one JSON verdict per case, then a final check."""
    os.environ[SECRET_VARIABLE] = secrets.token_hex(16)
    with Sandbox(slot=int(os.environ.get("EVALFARM_TEST_SLOT", "900"))) as sandbox:
        print(json.dumps({"layers": sandbox.layers}), flush=True)
        for case in load_cases():
            result, problems = run_case(sandbox, case)
            print(
                json.dumps({"case": case.name, "status": result.status.value, "problems": problems}),
                flush=True,
            )
        after = sandbox.run("print(6 * 7)")
        print(json.dumps({"after": after.status.value, "stdout": after.stdout.decode()}), flush=True)
        uid = run_uid(sandbox)
    time.sleep(0.5)
    print(json.dumps({"leftover": leftover_processes(uid)}), flush=True)


if __name__ == "__main__":
    main()
