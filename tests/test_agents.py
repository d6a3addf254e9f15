"""Sandboxes for agents: bash sessions, their files and shared workspaces on a real sandbox slot, then on
a real farm (Redis, a worker node and its session host) through the Python client, the HTTP gateway
and SWE-ReX's own client (`swerex.runtime.remote.RemoteRuntime`, pinned in the test requirements).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import tarfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from farm_support import Workers, client_settings, kill_node, wait_for, worker_env
from test_sessions import session_hosts

from evalfarm import archive
from evalfarm.broker.farm import Farm
from evalfarm.broker.session_client import FileRefused, SessionNotFound
from evalfarm.envs.runtime import sandbox_config
from evalfarm.sandbox import Limits, Sandbox, Status
from evalfarm.sandbox.session_interpreter import Interpreter
from evalfarm.workers.embedded import GatewayProcess, RedisServer, free_port
from evalfarm.workers.session_host import SESSION_PACKAGES

LIMITS = Limits(memory_mb=256, wall_s=5, workdir_mb=16, processes=32, output_bytes=1 << 16)
ROOT = os.geteuid() == 0


def tar_of(
    files: dict[str, bytes], links: dict[str, str] | None = None, gz: bool = False, links_first: bool = False
) -> bytes:
    """A tar archive holding `files` (path -> bytes) and symbolic `links` (path -> target)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if gz else "w") as out:

        def add_links() -> None:
            for name, target in (links or {}).items():
                info = tarfile.TarInfo(name)
                info.type, info.linkname = tarfile.SYMTYPE, target
                out.addfile(info)

        if links_first:
            add_links()
        for name, content in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(content), 0o755 if name.endswith(".sh") else 0o644
            out.addfile(info, io.BytesIO(content))
        if not links_first:
            add_links()
    return buffer.getvalue()


def zip_of(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        for name, content in files.items():
            out.writestr(name, content)
    return buffer.getvalue()


# A small repository with its tests: the rollout of the docs' example (fix the bug, run the tests).
REPOSITORY = {
    "calc/calc.py": b"def add(a, b):\n    return a - b\n",
    "calc/__init__.py": b"",
    "tests/__init__.py": b"",
    "tests/test_calc.py": (
        b"import unittest\nfrom calc.calc import add\n\n\nclass T(unittest.TestCase):\n"
        b"    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"
    ),
}


def git_repository() -> bytes:
    """REPOSITORY committed in a git repository, as a tar of its folder (`.git` included)."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        for name, content in REPOSITORY.items():
            (Path(folder) / name).parent.mkdir(parents=True, exist_ok=True)
            (Path(folder) / name).write_bytes(content)
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", folder]
        for step in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
            subprocess.run([*git, *step], check=True, capture_output=True)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as out:
            out.add(folder, arcname=".")
        return buffer.getvalue()


# -- archives, unpacked without trusting them ------------------------------------------------------


def big_zip(size: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out:
        out.writestr("zeros", b"\0" * size)
    return buffer.getvalue()


HOSTILE_ARCHIVES = {
    "absolute_path": (tar_of({"/etc/evil": b"x"}), "absolute path"),
    "dot_dot": (tar_of({"../../evil": b"x"}), "'..'"),
    "dot_dot_inside": (tar_of({"a/../../evil": b"x"}), "'..'"),
    "link_out_absolute": (tar_of({}, {"out": "/etc"}), "outside the tree"),
    "link_out_relative": (tar_of({}, {"a/out": "../../etc"}), "outside the tree"),
    "write_through_a_link": (
        tar_of({"inside/passwd": b"x"}, {"inside": "."}, links_first=True),
        "not a directory",
    ),
    "link_over_a_directory": (tar_of({"inside/a": b"x"}, {"inside": "."}), "over a directory"),
    "zip_slip": (zip_of({"../evil": b"x"}), "'..'"),
    "zip_bomb": (big_zip(64 << 20), "more bytes than the cap"),
    "not_an_archive": (b"hello", "not a tar or zip"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_ARCHIVES))
def test_a_hostile_archive_is_refused_whole_and_writes_nothing_outside(case: str, tmp_path: Path) -> None:
    data, reason = HOSTILE_ARCHIVES[case]
    target = tmp_path / "tree"
    target.mkdir()
    caps = archive.Caps(max_bytes=16 << 20, max_members=100)
    fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(archive.ArchiveRefused, match=reason):
            archive.unpack(data, fd, caps)
    finally:
        os.close(fd)
    with pytest.raises(archive.ArchiveRefused, match=reason):
        archive.check(data, caps)
    outside = {p.name for p in tmp_path.iterdir()}
    assert outside == {"tree"} and not (tmp_path.parent / "evil").exists()


def test_an_archive_past_its_member_cap_is_refused() -> None:
    data = tar_of({f"f{i}": b"" for i in range(20)})
    with pytest.raises(archive.ArchiveRefused, match="more than 10 members"):
        archive.check(data, archive.Caps(max_members=10))


def test_an_honest_archive_unpacks_with_its_links_inside(tmp_path: Path) -> None:
    data = tar_of({"run.sh": b"echo hi\n", "d/e.txt": b"e"}, {"d/link": "e.txt", "up": "d/e.txt"}, gz=True)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        done = archive.unpack(data, fd)
    finally:
        os.close(fd)
    assert (done.members, done.bytes) == (4, 9)
    assert (tmp_path / "up").read_text() == "e" and os.readlink(tmp_path / "d" / "link") == "e.txt"
    assert os.access(tmp_path / "run.sh", os.X_OK) and not os.access(tmp_path / "d" / "e.txt", os.X_OK)
    assert archive.check(zip_of({"a/b.txt": b"bb"})).bytes == 2


# -- one bash session on a sandbox slot --------------------------------------------------------------


@pytest.fixture(scope="module")
def slot() -> Iterator[Sandbox]:
    with Sandbox(slot=89, config=sandbox_config(packages=SESSION_PACKAGES)) as sandbox:
        yield sandbox


def cgroup_name() -> str | None:
    return f"evalfarm-agents-test-{os.getpid()}/s-{time.monotonic_ns()}" if ROOT else None


def start(
    slot: Sandbox, kind: str = "bash", workspace: str | None = None, limits: Limits = LIMITS
) -> Interpreter:
    session = Interpreter.start(slot, limits, cgroup_name(), kind=kind, workspace=workspace)
    if kind == "bash":
        assert "opened" in session.open_shell("default", vital=True)
    return session


@pytest.fixture
def shell(slot: Sandbox) -> Iterator[Interpreter]:
    session = start(slot)
    try:
        yield session
    finally:
        session.close()


def sh(session: Interpreter, command: str, **options: Any) -> Any:
    return session.run(command.encode(), **options)


@pytest.mark.sandbox
@pytest.mark.check
def test_a_shell_keeps_its_directory_variables_functions_and_background_processes(shell: Interpreter) -> None:
    assert (
        sh(shell, 'mkdir -p work && cd work && export GREETING=hi && f() { echo "f:$1"; }').status
        is Status.OK
    )
    result = sh(shell, "pwd; echo $GREETING; f x; echo kept > notes.txt")
    assert (result.status, result.exit_code, result.stdout) == (Status.OK, 0, "/tmp/work\nhi\nf:x\n")
    assert sh(shell, "sleep 300 & echo $! > pid").status is Status.OK
    assert sh(shell, "kill -0 $(cat pid) && echo running; cat notes.txt").stdout == "running\nkept\n"


@pytest.mark.sandbox
def test_a_command_reports_its_exit_code_and_its_streams(shell: Interpreter) -> None:
    failed = sh(shell, "echo out; echo err >&2; exit_with() { return $1; }; exit_with 3")
    assert (failed.status, failed.exit_code, failed.stdout, failed.stderr) == (
        Status.RUNTIME_ERROR, 3, "out\n", "err\n"
    )  # fmt: skip
    assert failed.alive
    merged = sh(shell, "echo out; echo err >&2; echo out2", merge=True)
    assert merged.stdout == "out\nerr\nout2\n"
    assert sh(shell, "cat; echo", stdin=b"from stdin").stdout == "from stdin\n"
    assert sh(shell, "read line; echo got:$line").stdout == "got:\n"  # no stdin: the empty file
    assert sh(shell, "nosuchcommand").exit_code == 127
    syntax = sh(shell, "(a", check_syntax=True)
    assert syntax.exception is not None and syntax.exception["ename"] == "BashIncorrectSyntaxError"
    assert "syntax error" in syntax.exception["extra"]["bash_stderr"]


@pytest.mark.parametrize(
    ("command", "plain"),
    [
        (b"echo hi", True),
        (b"python3 -m pytest tests/test_x.py -q", True),
        (b"ls $HOME/*.py", True),
        (b"echo 'a'", False),
        (b"ls | wc", False),
        (b"a && b", False),
        (b"echo (", False),
        (b"if x", False),
        (b"done", False),
        (b"echo a\necho b", False),
        (b"echo \\", False),
    ],
)
def test_only_commands_of_plain_words_skip_the_syntax_check(command: bytes, plain: bool) -> None:
    """A command of plain words always parses, so `bash -n` is spared for it; anything else is checked."""
    import subprocess

    from evalfarm.sandbox._shell_child import parses_plainly

    assert parses_plainly(command) is plain
    if plain:
        assert subprocess.run(["bash", "-n"], input=command, capture_output=True).returncode == 0


@pytest.mark.sandbox
def test_output_past_the_cap_is_cut_and_says_so(shell: Interpreter) -> None:
    result = sh(shell, "head -c 200000 /dev/zero | tr '\\0' x; echo; echo done >&2")
    assert result.truncated == ("stdout",) and len(result.stdout) == LIMITS.output_bytes
    assert result.output_bytes == LIMITS.output_bytes and "stdout cut at" in (result.notice or "")
    assert result.stderr == "done\n" and result.exit_code == 0


@pytest.mark.sandbox
@pytest.mark.parametrize(
    "command",
    [
        "sleep 60; echo after",
        "while true; do :; done",  # a loop of builtins: the shell itself is interrupted
        "f() { while true; do sleep 0.1; done; }; f; echo after",  # the whole line ends, not just f
        "python3 -c 'import time; time.sleep(60)'",
    ],
)
def test_a_command_past_its_timeout_is_interrupted_and_the_shell_lives_on(
    shell: Interpreter, command: str
) -> None:
    sh(shell, "x=1; cd /tmp")
    started = time.monotonic()
    result = sh(shell, command, timeout_s=0.5)
    assert time.monotonic() - started < 3
    assert (result.status, result.alive, result.exit_code) == (Status.TIMEOUT, True, 130), result
    assert "after" not in result.stdout
    assert sh(shell, "echo $x; pwd").stdout == "1\n/tmp\n"


@pytest.mark.sandbox
def test_a_command_that_ignores_the_interrupt_ends_the_session(shell: Interpreter) -> None:
    result = sh(shell, "trap '' INT; sleep 60", timeout_s=0.5)
    assert (result.status, result.alive) == (Status.TIMEOUT, False)
    assert "ignored the interrupt" in (result.error or "")
    after = sh(shell, "echo hi")
    assert (after.status, after.alive) == (Status.RUNTIME_ERROR, False)


@pytest.mark.sandbox
def test_exiting_the_shell_ends_the_session_and_says_so(shell: Interpreter) -> None:
    result = sh(shell, "exit 3")
    assert (result.status, result.alive) == (Status.RUNTIME_ERROR, False)
    assert "ended the session's shell" in (result.error or "")


@pytest.mark.sandbox
def test_shells_of_one_session_are_apart_but_share_its_files(slot: Sandbox) -> None:
    session = start(slot)
    try:
        assert "opened" in session.open_shell("second")
        assert session.open_shell("second")["error"]["ename"] == "SessionExistsError"
        sh(session, "x=1; echo shared > /tmp/f")
        other = sh(session, "echo [$x]; cat /tmp/f", shell="second")
        assert other.stdout == "[]\nshared\n"
        assert "closed" in session.close_shell("second")
        missing = sh(session, "echo", shell="second")
        assert missing.exception is not None and missing.exception["ename"] == "SessionDoesNotExistError"
        assert session.close_shell("second")["error"]["ename"] == "SessionDoesNotExistError"
    finally:
        session.close()


@pytest.mark.sandbox
def test_a_program_runs_outside_the_shells_and_is_killed_at_its_timeout(shell: Interpreter) -> None:
    ran = shell.execute({"command": ["sh", "-c", "echo out; echo err >&2; pwd; exit 4"], "cwd": "/"})
    assert (ran.stdout, ran.stderr, ran.exit_code, ran.status) == (
        "out\n/\n",
        "err\n",
        4,
        Status.RUNTIME_ERROR,
    )
    merged = shell.execute({"command": "echo a; echo b >&2", "merge": True})
    assert merged.stdout == "a\nb\n" and merged.stderr == ""
    missing = shell.execute({"command": ["no-such-program"]})
    assert missing.exception is not None and missing.exception["ename"] == "FileNotFoundError"
    started = time.monotonic()
    slow = shell.execute({"command": ["sleep", "60"]}, timeout_s=0.3)
    assert slow.status is Status.TIMEOUT and slow.alive and time.monotonic() - started < 3
    assert sh(shell, "echo still").stdout == "still\n"


# The hostile cases: what a session may not do to the node, another session, or its own caps.
@pytest.mark.sandbox
def test_a_command_that_forks_forever_is_held_to_the_sessions_processes(slot: Sandbox) -> None:
    if not ROOT:
        pytest.skip("the session's pids cgroup needs root")
    bomb = start(slot, limits=Limits(memory_mb=256, wall_s=5, workdir_mb=16, processes=24))
    other = start(slot)
    try:
        result = sh(bomb, "b() { b | b & }; b", timeout_s=2)
        assert result.status in (Status.TIMEOUT, Status.OK, Status.RUNTIME_ERROR)
        assert sh(other, "for i in 1 2 3 4 5; do (true) & done; wait; echo fine").stdout == "fine\n"
    finally:
        bomb.close()
        other.close()


@pytest.mark.sandbox
def test_a_session_filling_its_disk_is_told_so_and_lives_on(shell: Interpreter) -> None:
    fill = "for i in 1 2 3 4 5 6; do head -c 4000000 /dev/zero > /tmp/big$i || { full=1; break; }; done"
    full = sh(shell, f'{fill}; test -z "$full"')
    assert full.exit_code != 0 and "No space left" in full.stderr
    assert sh(shell, "rm /tmp/big*").exit_code == 0  # room again
    refused, _ = shell.request({"kind": "file", "op": "write", "path": "huge"}, b"x" * (20 << 20))
    assert refused["error"]["ename"] == "OSError" and "disk is full" in refused["error"]["evalue"]
    assert sh(shell, "echo ok").stdout == "ok\n"


@pytest.mark.sandbox
def test_a_command_killed_for_memory_is_memory_limit_and_the_shell_lives_on(shell: Interpreter) -> None:
    if not ROOT:
        pytest.skip("the session's memory cgroup needs root")
    result = sh(shell, "head -c 2000000000 /dev/zero | tail > /dev/null")
    assert (result.status, result.alive) == (Status.MEMORY_LIMIT, True), result
    assert sh(shell, "echo ok").stdout == "ok\n"


@pytest.mark.sandbox
def test_sessions_cannot_reach_each_other_the_node_or_the_network(slot: Sandbox) -> None:
    first, second = start(slot), start(slot)
    try:
        sh(first, "echo secret > /tmp/secret; sleep 300 &")
        seen = sh(second, "ls /tmp; ls /proc | grep -c '^[0-9]'; cat /proc/1/cmdline | tr '\\0' ' '")
        assert "secret" not in seen.stdout
        assert seen.stdout.splitlines()[0].isdigit() or seen.stdout.startswith("0")
        for path in ("/tmp/secret", "/etc/shadow", "/root", "/proc/1/root/tmp/secret"):
            report, _ = second.request(
                {"kind": "file", "op": "read", "path": path, "max_bytes": 100}, want=True
            )
            assert "error" in report, path
        network = sh(second, "echo > /dev/tcp/1.1.1.1/80 || echo > /dev/tcp/127.0.0.1/22 || echo refused")
        assert network.stdout.strip().endswith("refused")
        assert sh(second, "id -u").stdout.strip() != "0"
    finally:
        first.close()
        second.close()


FILE_REFUSALS = [
    ("/etc/passwd", "PermissionError"),
    ("/tmp/../etc/passwd", "PermissionError"),
    ("../etc/passwd", "PermissionError"),
    ("/tmp/link/hosts", "PermissionError"),  # through a link
    ("/tmp/link", "PermissionError"),  # a link itself
    ("/tmp/missing", "FileNotFoundError"),
    ("/tmp", "IsADirectoryError"),
    ("/tmp/big", "ValueError"),  # past the request's cap
]


@pytest.mark.sandbox
def test_files_are_read_and_written_within_the_session_and_refused_elsewhere(shell: Interpreter) -> None:
    written, _ = shell.request({"kind": "file", "op": "write", "path": "a/b/c.txt"}, b"hello\n")
    assert written == {"bytes": 6}
    read, content = shell.request(
        {"kind": "file", "op": "read", "path": "/tmp/a/b/c.txt", "max_bytes": 100}, want=True
    )
    assert (read, content) == ({"bytes": 6}, b"hello\n")
    assert sh(shell, "cat a/b/c.txt; ln -s /etc /tmp/link; head -c 1000 /dev/zero > big").stdout == "hello\n"
    for path, ename in FILE_REFUSALS:
        report, _ = shell.request({"kind": "file", "op": "read", "path": path, "max_bytes": 100}, want=True)
        assert report["error"]["ename"] == ename, (path, report)
    refused, _ = shell.request({"kind": "file", "op": "write", "path": "/tmp/link/x"}, b"x")
    assert refused["error"]["ename"] == "PermissionError"


@pytest.mark.sandbox
@pytest.mark.parametrize("case", sorted(HOSTILE_ARCHIVES))
def test_an_upload_that_could_escape_is_refused_inside_the_session(shell: Interpreter, case: str) -> None:
    data, reason = HOSTILE_ARCHIVES[case]
    header = {"kind": "file", "op": "upload", "path": "dest", "max_bytes": 8 << 20, "max_members": 100}
    report, _ = shell.request(header, data)
    assert report["error"]["ename"] == "ValueError" and reason in report["error"]["evalue"], report
    escaped = "ls /etc/evil /tmp/evil /tmp/dest/passwd /tmp/dest/inside/passwd 2>/dev/null | wc -l"
    assert sh(shell, escaped).stdout == "0\n"


@pytest.mark.sandbox
def test_an_uploaded_directory_unpacks_where_it_is_asked(shell: Interpreter) -> None:
    header = {"kind": "file", "op": "upload", "path": "proj", "max_bytes": 8 << 20, "max_members": 100}
    report, _ = shell.request(header, zip_of({"a.txt": b"A", "sub/b.txt": b"BB"}))
    assert report == {"members": 2, "bytes": 3}
    assert sh(shell, "cat /tmp/proj/a.txt /tmp/proj/sub/b.txt").stdout == "ABB"


# -- workspaces: one tree, read by a group, each session writing its own copy ---------------------


@pytest.fixture
def workspace(tmp_path: Path, slot: Sandbox) -> str:
    tree = tmp_path / "workspace"
    tree.mkdir()
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:
        archive.unpack(git_repository(), fd)
    finally:
        os.close(fd)
    if ROOT:
        for directory, names, files in os.walk(tree):
            for name in [directory, *(os.path.join(directory, n) for n in names + files)]:
                os.chown(name, slot.uid or 0, slot.uid or 0, follow_symlinks=False)
    os.chmod(tmp_path, 0o755)
    return str(tree)


@pytest.mark.sandbox
def test_a_group_shares_one_workspace_each_writing_its_own_copy(slot: Sandbox, workspace: str) -> None:
    group = [start(slot, workspace=workspace) for _ in range(3)]
    try:
        first = sh(
            group[0], "pwd; git status --short; sed -i 's/a - b/a + b/' calc/calc.py; python3 -m unittest -q"
        )
        assert first.stdout.startswith("/workspace\n") and first.exit_code == 0, first
        assert "OK" in first.stderr
        assert sh(group[0], "git diff --stat").stdout.strip().startswith("calc/calc.py | 2")
        for other in group[1:]:
            untouched = sh(other, "cat calc/calc.py; python3 -m unittest -q 2>&1 | tail -1")
            assert untouched.stdout == "def add(a, b):\n    return a - b\nFAILED (failures=1)\n", untouched
        assert sh(group[1], "rm -rf calc && ls").stdout == "tests\n"
        assert sh(group[2], "ls").stdout == "calc\ntests\n"
    finally:
        for session in group:
            session.close()
    assert Path(workspace, "calc", "calc.py").read_text() == "def add(a, b):\n    return a - b\n"


@pytest.mark.sandbox
def test_a_python_session_shows_its_figures_as_a_notebook_does(slot: Sandbox) -> None:
    session = start(slot, kind="python", limits=Limits(memory_mb=1024, wall_s=60, workdir_mb=64))
    try:
        assert session.run(b"import matplotlib.pyplot as plt").status is Status.OK
        shown = session.run(b"plt.plot([1, 2, 3], [2, 4, 9])\nplt.title('t')\nplt.show()")
        assert shown.status is Status.OK and len(shown.display) == 1, shown
        png = __import__("base64").b64decode(shown.display[0]["image/png"])
        assert png.startswith(b"\x89PNG\r\n") and "Figure" in shown.display[0]["text/plain"]
        assert "non-interactive" not in shown.stderr
        left = session.run(b"fig = plt.figure()\n_ = plt.plot([1, 2])\n7")
        assert left.value == "7" and [set(b) for b in left.display] == [{"image/png", "text/plain"}]
        assert session.run(b"1 + 1").display == ()  # shown figures are closed
        rich = session.run(
            b"class Table:\n    def _repr_html_(self): return '<table></table>'\n"
            b"    def __repr__(self): return 'Table()'\nTable()"
        )
        assert rich.display == ({"text/html": "<table></table>", "text/plain": "Table()"},)
    finally:
        session.close()


# -- on a farm -----------------------------------------------------------------------------------------


@pytest.fixture
def farm_with_sessions(tmp_path: Path) -> Iterator[tuple[str, Workers]]:
    server = RedisServer(directory=str(tmp_path)).start()
    workers = Workers(server.url)
    try:
        yield server.url, workers
    finally:
        workers.stop_all()
        server.close()


def start_node(url: str, workers: Workers, sessions: int = 8, **env: str) -> Any:
    node = workers.start(concurrency=1, EVALFARM_SESSIONS=str(sessions), **env)
    wait_for(lambda: len(session_hosts(url)) == len(workers.started), 60, "the session host")
    return node


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_the_python_client_drives_shells_files_and_workspaces(
    farm_with_sessions: tuple[str, Workers],
) -> None:
    url, workers = farm_with_sessions
    start_node(url, workers, sessions=4)
    with Farm(settings=client_settings(url), progress=False) as farm:
        workspace = farm.upload_workspace(git_repository())
        assert farm.upload_workspace(git_repository()) != workspace or True  # gz carries a time: any id
        with pytest.raises(ValueError, match="absolute path"):
            farm.upload_workspace(HOSTILE_ARCHIVES["absolute_path"][0])
        with farm.session(kind="bash", workspace=workspace) as session:
            assert (
                session.run("sed -i 's/a - b/a + b/' calc/calc.py && python3 -m unittest -q").exit_code == 0
            )
            assert session.read_file("calc/calc.py") == b"def add(a, b):\n    return a + b\n"
            session.write_file("/tmp/notes/n.txt", b"note")
            assert session.run("cat /tmp/notes/n.txt").stdout == "note"
            assert session.upload("/tmp/up", zip_of({"u.txt": b"U"})) == {"members": 1, "bytes": 1}
            with pytest.raises(FileRefused) as refused:
                session.read_file("/etc/passwd")
            assert refused.value.ename == "PermissionError"
            ran = session.execute(["git", "log", "--oneline"], cwd="/workspace")
            assert ran.exit_code == 0 and ran.stdout.endswith(" start\n")
        with pytest.raises(ValueError):
            farm.session(kind="bash", workspace="0" * 32)  # no such workspace
        with pytest.raises(SessionNotFound):
            session.run("echo")


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_64_shell_and_python_sessions_at_once_each_keep_their_own_state(
    farm_with_sessions: tuple[str, Workers],
) -> None:
    """A node whose capacity is raised holds 64 sessions at once (48 shells on one workspace, 16
    interpreters), each keeping its state through interleaved commands; the 65th is refused."""
    url, workers = farm_with_sessions
    start_node(url, workers, sessions=64)

    async def rollout(farm: Any, index: int, workspace: str) -> tuple[str, str]:
        if index % 4 == 3:
            async with farm.session(ttl_s=120) as session:
                await session.run(f"state = [{index}]")
                for step in range(3):
                    await session.run(f"state.append({step})")
                    await asyncio.sleep(0)
                return (await session.run("state")).value or "", str([index, 0, 1, 2])
        async with farm.session(ttl_s=120, kind="bash", workspace=workspace) as session:
            await session.run(f"cd calc && echo {index} > mine && export N={index}")
            for step in range(3):
                await session.run(f"echo {step} >> mine")
                await asyncio.sleep(0)
            result = await session.run("echo $N; cat mine; ls | wc -l")
            return result.stdout, f"{index}\n{index}\n0\n1\n2\n3\n"

    async def main(workspace: str) -> list[tuple[str, str]]:
        from evalfarm.broker.async_farm import AsyncFarm

        async with AsyncFarm(settings=client_settings(url)) as farm:
            return await asyncio.gather(*(rollout(farm, i, workspace) for i in range(64)))

    with Farm(settings=client_settings(url), progress=False) as farm:
        workspace = farm.upload_workspace(git_repository())
    answers = asyncio.run(main(workspace))
    assert [got for got, _ in answers] == [expected for _, expected in answers]
    wait_for(lambda: session_hosts(url)[0]["open"] == 0, 30, "every session closed")


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_dead_node_loses_its_shells_and_says_so(farm_with_sessions: tuple[str, Workers]) -> None:
    url, workers = farm_with_sessions
    doomed = start_node(url, workers, sessions=2)
    with Farm(settings=client_settings(url), progress=False) as farm:
        session = farm.session(kind="bash", ttl_s=300)
        session.run("export X=1")
        start_node(url, workers, sessions=2)
        kill_node(doomed)
        lost = session.run("echo $X")
        assert (lost.status, lost.infra_reason, lost.session_alive) == ("infra_error", "session_lost", False)
        assert session.run("echo $X").status == "infra_error"  # never a fresh shell in its place
        with farm.session(kind="bash") as fresh:
            assert fresh.run("echo [$X]").stdout == "[]\n"


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_the_nodes_metrics_count_sessions_by_kind(
    farm_with_sessions: tuple[str, Workers], tmp_path: Path
) -> None:
    from test_metrics_farm import metrics_node, scrape

    url, workers = farm_with_sessions
    metrics = metrics_node(workers, tmp_path, concurrency=1, EVALFARM_SESSIONS="4")
    wait_for(lambda: len(session_hosts(url)) == 1, 60, "the session host")
    with Farm(settings=client_settings(url), progress=False) as farm:
        shell = farm.session(kind="bash", ttl_s=600)
        shell.run("echo one")
        farm.session(kind="bash").run("exit")  # ended by what it ran
        python = farm.session()
        bash, python_label = frozenset({("language", "bash")}), frozenset({("language", "python")})

        def counted() -> bool:  # the open gauges and the advertisement follow the host's next beat
            samples = scrape(metrics)
            kinds = session_hosts(url)[0].get("kinds")
            opened = (
                samples.get(("evalfarm_sessions_open", bash)),
                samples.get(("evalfarm_sessions_open", python_label)),
            )
            return opened == (1, 1) and kinds == {"python": 1, "bash": 1}

        wait_for(counted, 20, "the counts")
        samples = scrape(metrics)
        assert samples[("evalfarm_sessions_opened_total", bash)] == 2
        assert samples[("evalfarm_sessions_ended_total", bash)] == 1
        assert samples[("evalfarm_session_run_seconds_count", bash)] == 2
        shell.close()
        python.close()


# -- the gateway: native routes, and SWE-ReX's client ---------------------------------------------


TOKEN = "agents-test-token"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = RedisServer(directory=str(tmp_path_factory.mktemp("agents"))).start()
    workers = Workers(server.url)
    gateway = GatewayProcess(server.url, free_port(), worker_env(EVALFARM_GATEWAY_TOKEN=TOKEN)).start()
    try:
        start_node(server.url, workers, sessions=6)
        gateway.wait_ready(60)
        yield gateway.url
    finally:
        gateway.stop(grace_s=10)
        workers.stop_all()
        server.close()


def http(method: str, url: str, **options: Any) -> requests.Response:
    return requests.request(method, url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60, **options)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_shell_sessions_files_and_workspaces_over_http(gateway: str) -> None:
    uploaded = http("POST", f"{gateway}/v1/workspaces", data=tar_of(REPOSITORY))
    assert uploaded.status_code == 201, uploaded.text
    workspace = uploaded.json()["workspace_id"]
    assert uploaded.json()["members"] == 4
    refused = http("POST", f"{gateway}/v1/workspaces", data=HOSTILE_ARCHIVES["link_out_absolute"][0])
    assert refused.status_code == 400 and "outside the tree" in refused.json()["error"]
    opened = http("POST", f"{gateway}/v1/sessions", json={"kind": "bash", "workspace": workspace})
    assert opened.status_code == 201, opened.text
    base = f"{gateway}/v1/sessions/{opened.json()['session_id']}"
    try:
        ran = http("POST", f"{base}/run", json={"code": "ls; false"}).json()
        assert (ran["status"], ran["exit_code"], ran["stdout"]) == ("runtime_error", 1, "calc\ntests\n")
        assert http("PUT", f"{base}/files?path=calc/new.py", data=b"X = 1\n").json() == {"bytes": 6}
        assert http("GET", f"{base}/files?path=/workspace/calc/new.py").content == b"X = 1\n"
        put = http("PUT", f"{base}/files?path=/tmp/d&archive=true", data=tar_of({"t.txt": b"T"}))
        assert put.json() == {"members": 1, "bytes": 1}
        missing = http("GET", f"{base}/files?path=nope")
        assert missing.status_code == 404 and missing.json()["ename"] == "FileNotFoundError"
        outside = http("GET", f"{base}/files?path=/etc/passwd")
        assert outside.status_code == 400 and outside.json()["ename"] == "PermissionError"
        escape = http("PUT", f"{base}/files?path=x&archive=true", data=HOSTILE_ARCHIVES["dot_dot"][0])
        assert escape.status_code == 400 and "'..'" in escape.json()["error"]
    finally:
        http("DELETE", base)
    assert http("GET", f"{base}/files?path=calc/new.py").status_code == 404
    metrics = requests.get(f"{gateway}/metrics", timeout=30).text
    for line in (
        'evalfarm_gateway_session_files_total{op="read",outcome="refused"} 2.0',
        'evalfarm_gateway_session_files_total{op="workspace",outcome="refused"} 1.0',
        'evalfarm_gateway_session_runs_total{status="runtime_error"}',
    ):
        assert line in metrics, line


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_a_full_node_refuses_sandboxes_with_429_and_retry_after(gateway: str) -> None:
    held = [http("POST", f"{gateway}/v1/sandboxes") for _ in range(6)]
    try:
        assert [h.status_code for h in held] == [201] * 6
        full = http("POST", f"{gateway}/v1/sandboxes")
        assert full.status_code == 429 and int(full.headers["Retry-After"]) >= 1
    finally:
        for h in held:
            http("POST", f"{h.json()['url']}/close")


def sandbox(gateway: str) -> str:
    opened = http("POST", f"{gateway}/v1/sandboxes", json={"ttl_s": 120})
    assert opened.status_code == 201, opened.text
    return str(opened.json()["url"])


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_swerex_remote_runtime_drives_a_farm_sandbox(gateway: str) -> None:
    """SWE-ReX's own client, unchanged: a short SWE-style rollout, and each failure as the
    exception its client raises."""
    from swerex.exceptions import (
        BashIncorrectSyntaxError,
        CommandTimeoutError,
        NonZeroExitCodeError,
        SessionDoesNotExistError,
        SessionExistsError,
    )
    from swerex.runtime.abstract import (
        BashAction,
        BashInterruptAction,
        CloseBashSessionRequest,
        Command,
        CreateBashSessionRequest,
        ReadFileRequest,
        UploadRequest,
        WriteFileRequest,
    )
    from swerex.runtime.remote import RemoteRuntime

    url = sandbox(gateway)

    async def rollout(tmp: Path) -> None:
        runtime = RemoteRuntime(host=url, port=None, auth_token=TOKEN, timeout=5)
        assert await runtime.is_alive()
        await runtime.create_session(CreateBashSessionRequest())
        with pytest.raises(SessionExistsError):
            await runtime.create_session(CreateBashSessionRequest())
        (tmp / "repo" / "calc").mkdir(parents=True)
        for name, content in REPOSITORY.items():
            (tmp / "repo" / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / "repo" / name).write_bytes(content)
        await runtime.upload(UploadRequest(source_path=str(tmp / "repo"), target_path="/tmp/repo"))
        run = runtime.run_in_session
        failing = await run(BashAction(command="cd /tmp/repo && python3 -B -m unittest -q", check="silent"))
        assert failing.exit_code == 1 and "FAILED (failures=1)" in failing.output
        source = (await runtime.read_file(ReadFileRequest(path="/tmp/repo/calc/calc.py"))).content
        await runtime.write_file(
            WriteFileRequest(path="/tmp/repo/calc/calc.py", content=source.replace("-", "+"))
        )
        passing = await run(BashAction(command="python3 -B -m unittest -q 2>&1 | tail -1"))
        assert passing.output == "OK\n" and passing.exit_code == 0
        with pytest.raises(NonZeroExitCodeError):
            await run(BashAction(command="false"))
        with pytest.raises(BashIncorrectSyntaxError):
            await run(BashAction(command="(a"))
        with pytest.raises(CommandTimeoutError):
            await run(BashAction(command="sleep 30", timeout=0.5))
        await run(BashInterruptAction())
        assert (await run(BashAction(command="pwd"))).output == "/tmp/repo\n"  # the shell lived on
        with pytest.raises(SessionDoesNotExistError):
            await run(BashAction(command="echo", session="other"))
        executed = await runtime.execute(Command(command=["ls", "/tmp/repo"], shell=False))
        assert executed.stdout == "calc\ntests\n" and executed.exit_code == 0
        with pytest.raises(CommandTimeoutError):
            await runtime.execute(Command(command="sleep 30", shell=True, timeout=0.3))
        with pytest.raises(FileNotFoundError):
            await runtime.read_file(ReadFileRequest(path="/tmp/missing.txt"))
        with pytest.raises(PermissionError):
            await runtime.read_file(ReadFileRequest(path="/etc/hostname"))
        await runtime.close_session(CloseBashSessionRequest())
        await runtime.close()
        assert not await runtime.is_alive()

    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(rollout(Path(folder)))


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_swerex_idempotency_key_answers_a_retry_without_running_it_again(gateway: str) -> None:
    url = sandbox(gateway)
    headers = {"X-API-Key": TOKEN, "X-Request-ID": "retry-1"}
    requests.post(f"{url}/create_session", json={}, headers={"X-API-Key": TOKEN}, timeout=30)
    body = {"command": "echo x >> /tmp/count; wc -l < /tmp/count", "check": "silent"}
    first = requests.post(f"{url}/run_in_session", json=body, headers=headers, timeout=30)
    again = requests.post(f"{url}/run_in_session", json=body, headers=headers, timeout=30)
    assert first.json()["output"] == again.json()["output"] == "1\n"
    other = requests.post(
        f"{url}/run_in_session", json=body, headers={**headers, "X-Request-ID": "2"}, timeout=30
    )
    assert other.json()["output"] == "2\n"
    assert (
        requests.get(f"{url}/is_alive", timeout=30).status_code == 403
    )  # the key is required, as SWE-ReX says
    requests.post(f"{url}/close", headers={"X-API-Key": TOKEN}, timeout=30)


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_run_jupyter_shows_a_plot_as_image_png(gateway: str) -> None:
    """SandboxFusion's test_jupyter_plot, as its test sends it."""
    cells = [
        "import matplotlib.pyplot as plt",
        "plt.plot([1, 2, 3], [2, 3, 5])\nplt.title('Simple Plot')\nplt.show()",
    ]
    answer = http("POST", f"{gateway}/run_jupyter", json={"cells": cells}).json()
    assert answer["status"] == "Success", answer
    assert "image/png" in answer["cells"][1]["display"][0]


@pytest.mark.sandbox
@pytest.mark.parametrize("user", ["root", "unprivileged"])
def test_bash_sessions_and_workspaces_work_as_root_and_as_an_unprivileged_user(user: str) -> None:
    """As an unprivileged user the slot is a user namespace, sessions have no cgroups and a
    workspace is copied into each session (no mount can be cloned without privilege): the shell's
    state, the interrupt and each session's own copy hold the same."""
    if not ROOT:
        pytest.skip("creating the unprivileged user needs root")
    import subprocess
    import sys

    import unprivileged

    probe = [sys.executable, str(Path(__file__).parent / "agents_probe.py"), "93"]
    command = unprivileged.command(probe) if user == "unprivileged" else probe
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r.get("status"), r["stdout"], r.get("session_alive")) for r in results] == [
        ("ok", "/workspace/sub\n", True),
        ("ok", "shared\n1\n", True),
        ("timeout", "", True),
        ("ok", f"1 /workspace/sub\n{results[3]['stdout'].split()[-1]}\n", True),
        ("ok", "shared\n", True),
        (None, "shared\n", None),
    ]
    assert results[3]["stdout"].split()[-1] != "0"  # never root inside


def test_the_fork_servers_preload_no_threading_for_sessions() -> None:
    """The session modules every fork server preloads import neither threading (whose after-fork
    hook every run would pay) nor the archive readers (zipfile imports threading)."""
    import subprocess
    import sys

    code = (
        "import sys\nimport evalfarm.sandbox._session_child, evalfarm.sandbox._shell_child\n"
        "print(sorted({'threading', 'zipfile', 'tarfile'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_swerex_remote_deployment_starts_and_stops_a_farm_sandbox(gateway: str) -> None:
    from swerex.deployment.remote import RemoteDeployment
    from swerex.exceptions import DeploymentNotStartedError
    from swerex.runtime.abstract import BashAction, CreateBashSessionRequest

    async def deploy(url: str) -> str:
        deployment = RemoteDeployment(host=url, port=None, auth_token=TOKEN, timeout=5)
        with pytest.raises(DeploymentNotStartedError):
            await deployment.is_alive()
        await deployment.start()
        assert await deployment.is_alive()
        await deployment.runtime.create_session(CreateBashSessionRequest())
        output = (await deployment.runtime.run_in_session(BashAction(command="echo deployed"))).output
        await deployment.stop()
        return output

    url = sandbox(gateway)
    assert asyncio.run(deploy(url)) == "deployed\n"
    assert http("GET", f"{url}/is_alive").status_code == 404  # stopped: the sandbox has ended
