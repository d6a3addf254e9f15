"""Inside a shell session: the process that holds a session's bash shells and runs their commands.

It is forked by a fork server and walls itself in like any run (`sandbox._child`): PID 1 of the
session's namespace, so every shell, every command and every background process the session starts
dies with it. It then serves requests on its control channel (descriptor 3), one at a time, until the
channel closes: a command in a named shell (`cell`), a program outside any shell (`exec`), a shell
opened or closed (`shell`), a file read, written or unpacked (`file`, `sandbox._session_files`).

A shell is `bash -i` (interactive, so that an interrupt ends the command line as a terminal's Ctrl-C
does, loops and functions included, and the shell lives on) with its own process group, reading its
command lines from a pipe this process writes. A command runs as one line,
`eval $'<command>' <stdin 3>&-`, followed by a line that writes its exit status on the shell's report
pipe (descriptor 3, closed for the command itself): the shell's working directory, variables,
functions and background processes persist from one command to the next. What the shell writes on
its stdout and stderr is copied to the command's own pipes while it runs (and dropped between
commands). Nothing here is a verdict: the manager (`sandbox.session_interpreter`) watches the time,
interrupts (SIGINT to this process, passed on to the running command's process group) and kills.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import time
from typing import Any, NoReturn

from evalfarm.sandbox import _payload, _protocol, _session_files

CONTROL_FD = 3
BASH = "/bin/bash"
SH = "/bin/sh"
RESEND_MARK_S = 0.3  # an interrupted shell that wrote no status by then is asked for it again
# The shell's environment beyond a run's: no prompt (nothing but output comes back), no pager.
SHELL_ENVIRONMENT = {
    "PS1": "", "PS2": "", "PS0": "", "PROMPT_COMMAND": "", "TERM": "dumb", "PAGER": "cat",
    "GIT_PAGER": "cat", "HISTFILE": "",
}  # fmt: skip
# `python` is python3 where the system has no `python` (an agent's commands often say it).
_SETUP = (
    "set +H +o history +m; unset HISTFILE; command -v python >/dev/null || alias python=python3; cd {home}\n"
)


# A command of plain words only (no quotes, operators, brackets, escapes or reserved words) is a simple
# command, which always parses: `bash -n`, a process of its own, is spared for it.
_PLAIN = re.compile(rb"[A-Za-z0-9_./=:,+@%^~*?#$ \t-]*")
_RESERVED = frozenset(
    b"! case coproc do done elif else esac fi for function if in select then time until while".split()
)


def parses_plainly(command: bytes) -> bool:
    """Whether `command` is plain words, which bash always parses (see _PLAIN)."""
    return _PLAIN.fullmatch(command) is not None and not _RESERVED.intersection(command.split())


def quote(data: bytes) -> str:
    """`data` as one bash word, `$'...'`, every byte but printable ASCII escaped (NUL dropped)."""
    out = ["$'"]
    for byte in data:
        if byte == 0x5C:
            out.append("\\\\")
        elif byte == 0x27:
            out.append("\\'")
        elif 0x20 <= byte < 0x7F:
            out.append(chr(byte))
        elif byte:
            out.append(f"\\x{byte:02x}")
    out.append("'")
    return "".join(out)


def spawn(argv: list[str], environment: dict[str, str], fds: dict[int, int], cwd: str | None = None) -> int:
    """Start `argv` with `fds` at their numbers, in a session of its own (its own process group);
    its pid. OSError (as exec said it) when it could not start. Without `cwd`, through posix_spawn
    (a vfork: this process, a fork of an interpreter with numpy loaded, is not copied)."""
    if cwd is None:
        actions = [(os.POSIX_SPAWN_DUP2, source, target) for target, source in fds.items()]
        return os.posix_spawn(
            argv[0], argv, environment, file_actions=actions, setsid=True, setsigdef=(signal.SIGINT,)
        )
    ready_r, ready_w = os.pipe2(os.O_CLOEXEC)
    pid = os.fork()
    if pid == 0:  # the child: nothing here may return
        try:
            os.setsid()
            for target, source in fds.items():
                os.dup2(source, target, inheritable=True)
            os.closerange(max(fds) + 1, os.sysconf("SC_OPEN_MAX"))  # nothing of this process's
            if cwd is not None:
                os.chdir(cwd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.set_wakeup_fd(-1)
            os.execve(argv[0], argv, environment)
        except OSError as error:
            os.write(ready_w, json.dumps([error.errno, error.strerror, argv[0]]).encode())
        finally:
            os._exit(127)
    os.close(ready_w)
    failed = b""
    while chunk := os.read(ready_r, 4096):
        failed += chunk
    os.close(ready_r)
    if failed:
        os.waitpid(pid, 0)
        number, text, name = json.loads(failed)
        raise OSError(number, text, name)
    return pid


def find(program: str, path: str) -> str:
    """`program` as exec finds it on `path` (a name with a slash as it is)."""
    if "/" in program:
        return program
    for directory in path.split(":"):
        candidate = os.path.join(directory or ".", program)
        if os.access(candidate, os.X_OK) and not os.path.isdir(candidate):
            return candidate
    raise FileNotFoundError(2, f"No such file or directory: {program!r}", program)


class Shell:
    """One bash shell of the session, and the pipes this process holds to it."""

    def __init__(self, name: str, vital: bool) -> None:
        self.name = name
        self.vital = vital  # the session ends with it (a `kind: bash` session's own shell)
        self.count = 0
        self.reports = b""
        environment = {**os.environ, **SHELL_ENVIRONMENT}
        ends = {target: os.pipe2(os.O_CLOEXEC) for target in (0, 1, 2, 3)}
        given = {0: ends[0][0], 1: ends[1][1], 2: ends[2][1], 3: ends[3][1]}
        try:
            self.pid = spawn([BASH, "--noprofile", "--norc", "--noediting", "-i"], environment, given)
        except OSError:
            for fd in (ends[0][1], ends[1][0], ends[2][0], ends[3][0]):
                os.close(fd)
            raise
        finally:
            for fd in given.values():
                os.close(fd)
        self.commands = ends[0][1]
        self.stdout, self.stderr, self.report = ends[1][0], ends[2][0], ends[3][0]
        for fd in (self.stdout, self.stderr, self.report):
            os.set_blocking(fd, False)
        self.alive = True
        self._write(_SETUP.format(home=_session_files.home()).encode())
        self.settle()

    @property
    def outputs(self) -> tuple[int, int]:
        return self.stdout, self.stderr

    def _write(self, line: bytes) -> None:
        view = memoryview(line)
        while view:
            view = view[os.write(self.commands, view) :]

    def settle(self) -> None:
        """Wait for the shell to have read everything sent, dropping what it said (its start-up
        notes: no job control without a terminal)."""
        self.count += 1
        self._write(f"printf 'M{self.count} %d\\n' $? >&3\n".encode())
        while self.alive and self._mark(self.count) is None:
            select.select([self.report], [], [], 1.0)
            self.read_report()
            self.drop_output()

    def send(self, command: bytes, stdin: bytes, merge: bool) -> int:
        """Send one command's lines; its number."""
        self.count += 1
        source = "</dev/null" if not stdin else f"< <(printf %s {quote(stdin)})"
        line = (
            f"printf 'S{self.count}\\n' >&3; eval {quote(command)} {source} 3>&-{' 2>&1' if merge else ''}\n"
            f"printf 'M{self.count} %d\\n' $? >&3\n"
        )
        self._write(line.encode())
        return self.count

    def ask_status(self, number: int) -> None:
        """Ask again for a command's status (an interrupt that came as the shell read its status
        line made it drop that line)."""
        self._write(f"printf 'M{number} %d\\n' 130 >&3\n".encode())

    def read_report(self) -> None:
        try:
            while chunk := os.read(self.report, 4096):
                self.reports += chunk[: 1 << 16]
            self.alive = False  # end of the pipe: the shell has exited
        except BlockingIOError:
            pass

    def started(self, number: int) -> bool:
        return f"S{number}\n".encode() in self.reports

    def _mark(self, number: int) -> int | None:
        """The status the shell wrote for command `number`, once it has."""
        key = f"M{number} ".encode()
        at = self.reports.find(key)
        if at < 0:
            return None
        line = self.reports[at + len(key) :].split(b"\n", 1)
        if len(line) < 2:
            return None
        self.reports = line[1]
        return int(line[0]) if line[0].isdigit() else None

    def drop_output(self) -> None:
        for fd in self.outputs:
            try:
                while os.read(fd, 1 << 16):
                    pass
            except BlockingIOError:
                pass

    def interrupt(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    def close(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for fd in (self.commands, self.stdout, self.stderr, self.report):
            os.close(fd)
        self.alive = False


class Driver:
    """The session's shells and the request being served."""

    def __init__(self, channel: socket.socket) -> None:
        self.channel = channel
        self.shells: dict[str, Shell] = {}
        self.interrupted = False
        self.running: Shell | None = None  # the shell of the command being run
        self.program: int | None = None  # the pid of an `exec` being run
        wake_r, wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self.wake = wake_r
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGINT, self._on_interrupt)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the poll: a shell may have ended

    def _on_interrupt(self, *_: Any) -> None:
        """The manager's interrupt at a timeout: for the command running, if any."""
        self.interrupted = True
        if self.program is not None:
            try:
                os.killpg(self.program, signal.SIGKILL)  # as subprocess.run ends one at its timeout
            except ProcessLookupError:
                pass

    # -- serving ------------------------------------------------------------------------------

    def serve(self) -> NoReturn:
        _protocol.send(self.channel, {"ready": True})
        while True:
            self._idle()
            try:
                header, fds = _protocol.recv(self.channel)
            except (_protocol.ProtocolError, OSError):
                os._exit(0)
            self.interrupted = False
            for fd in fds:  # what the request carries reaches a program only where it is put
                os.set_inheritable(fd, False)
            try:
                self._handle(header, fds)
            finally:
                for fd in fds:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self._reap()

    def _idle(self) -> None:
        """Until a request comes: drop the shells' output, reap what ended, notice a dead shell."""
        while True:
            poller = select.poll()
            poller.register(self.channel.fileno(), select.POLLIN)
            poller.register(self.wake, select.POLLIN)
            for shell in self.shells.values():
                for fd in (*shell.outputs, shell.report):
                    poller.register(fd, select.POLLIN)
            ready = {fd for fd, _ in poller.poll(1000)}
            _drain(self.wake)
            for shell in list(self.shells.values()):
                shell.drop_output()
                shell.read_report()
                if not shell.alive:
                    self._shell_ended(shell)
            self._reap()
            if self.channel.fileno() in ready:
                return

    def _shell_ended(self, shell: Shell) -> None:
        if shell.vital:
            os._exit(0)  # the session's own shell: the session ends with it
        self.shells.pop(shell.name, None)
        shell.close()

    def _reap(self) -> None:
        """Collect every process that ended and is this one's (PID 1's: orphans come here)."""
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def _handle(self, header: dict[str, Any], fds: list[int]) -> None:
        kind = header.get("kind")
        if kind == "cell":
            self._command(header, fds)
        elif kind == "exec":
            self._exec(header, fds)
        elif kind == "shell":
            _report(fds[-1], self._shell_request(header))
        elif kind == "file":
            _report(fds[-1], _session_files.handle(header, fds))

    def _shell_request(self, header: dict[str, Any]) -> dict[str, Any]:
        name, op = str(header.get("name", "")), header.get("op")
        if op == "open":
            if name in self.shells:
                return _refused("SessionExistsError", f"session {name} already exists")
            try:
                self.shells[name] = Shell(name, bool(header.get("vital")))
            except OSError as error:
                return _refused("OSError", f"the shell did not start: {error}")
            return {"opened": name}
        if name not in self.shells:
            return _refused("SessionDoesNotExistError", f"session {name!r} does not exist")
        self.shells.pop(name).close()
        return {"closed": name}

    # -- a command in a shell -----------------------------------------------------------------

    def _command(self, header: dict[str, Any], fds: list[int]) -> None:
        code_fd, stdin_fd, stdout_fd, stderr_fd, report_fd = fds[:5]
        shell = self.shells.get(str(header.get("shell", "")))
        if shell is None:
            name = header.get("shell")
            _report(report_fd, _refused("SessionDoesNotExistError", f"session {name!r} does not exist"))
            return
        command, stdin = _payload.read_fd(code_fd), _payload.read_fd(stdin_fd)
        if header.get("check_syntax") and not parses_plainly(command):
            failed = self._syntax(command)
            if failed is not None:
                _report(report_fd, failed)
                return
        merge = bool(header.get("merge"))
        shell.drop_output()
        number = shell.send(command, stdin, merge)
        targets = {shell.stdout: stdout_fd, shell.stderr: stdout_fd if merge else stderr_fd}
        self.running = shell
        try:
            status = self._relay(shell, number, targets)
        finally:
            self.running = None
        if status is None:  # the shell ended under the command
            if shell.vital:
                os._exit(0)
            self._shell_ended(shell)
            _report(report_fd, {"shell_ended": True, "exit_code": None})
            return
        report: dict[str, Any] = {"value": None, "exit_code": status}
        if self.interrupted:
            report["interrupted"] = True
        _report(report_fd, report)

    def _relay(self, shell: Shell, number: int, targets: dict[int, int]) -> int | None:
        """Copy the shell's output to the command's pipes until it writes the command's status;
        that status (None when the shell ended first)."""
        asked_at: float | None = None
        signalled = False
        while True:
            poller = select.poll()
            for fd in (*targets, shell.report, self.wake):
                poller.register(fd, select.POLLIN)
            poller.poll(100 if self.interrupted else 1000)
            _drain(self.wake)
            _copy(targets)
            shell.read_report()
            status = shell._mark(number)
            if status is not None:
                _copy(targets)  # what the command wrote before its status is in the pipes now
                return status
            if not shell.alive:
                _copy(targets)
                return None
            if self.interrupted and shell.started(number):
                now = time.monotonic()
                if not signalled:
                    shell.interrupt()
                    signalled, asked_at = True, now
                elif asked_at is not None and now - asked_at > RESEND_MARK_S:
                    shell.interrupt()
                    shell.ask_status(number)
                    asked_at = now

    def _syntax(self, command: bytes) -> dict[str, Any] | None:
        """`bash -n` on the command, as SWE-ReX checks one: None when it parses, else the refusal
        with bash's words."""
        code_r, code_w = os.pipe2(os.O_CLOEXEC)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        try:
            pid = spawn([BASH, "-n"], dict(os.environ), {0: code_r, 1: out_w, 2: out_w})
        finally:
            os.close(code_r)
            os.close(out_w)
        try:
            view = memoryview(command + b"\n")
            while view:
                view = view[os.write(code_w, view) :]
        except BrokenPipeError:
            pass
        os.close(code_w)
        said = b""
        while chunk := os.read(out_r, 1 << 16):
            said += chunk[: 1 << 16]
        os.close(out_r)
        _, status = os.waitpid(pid, 0)
        if status == 0:
            return None
        text = said.decode("utf-8", "replace")
        return _refused(
            "BashIncorrectSyntaxError",
            f"Error (exit code {os.waitstatus_to_exitcode(status)}) while checking bash command\n{text}",
            {"bash_stdout": "", "bash_stderr": text},
        )

    # -- a program outside the shells ---------------------------------------------------------

    def _exec(self, header: dict[str, Any], fds: list[int]) -> None:
        code_fd, _, stdout_fd, stderr_fd, report_fd = fds[:5]
        spec = json.loads(_payload.read_fd(code_fd) or b"{}")
        environment = spec.get("env") or dict(os.environ)
        command = spec.get("command")
        argv = [SH, "-c", command] if isinstance(command, str) else [str(arg) for arg in command or []]
        if not argv:
            _report(report_fd, _refused("ValueError", "an empty command"))
            return
        quiet = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        given = {0: quiet, 1: stdout_fd, 2: stdout_fd if spec.get("merge") else stderr_fd}
        try:
            argv[0] = find(argv[0], str(environment.get("PATH", os.environ.get("PATH", ""))))
            self.program = spawn(
                argv, {str(k): str(v) for k, v in environment.items()}, given, spec.get("cwd")
            )
        except OSError as error:
            name = {2: "FileNotFoundError", 13: "PermissionError", 20: "NotADirectoryError"}.get(
                error.errno or 0, "OSError"
            )
            _report(report_fd, _refused(name, str(error)))
            return
        finally:
            os.close(quiet)
        _, status = os.waitpid(self.program, 0)
        self.program = None
        report: dict[str, Any] = {"value": None, "exit_code": _returncode(status)}
        if self.interrupted:
            report["interrupted"] = True
        _report(report_fd, report)


def _returncode(status: int) -> int:
    """As subprocess says it: the exit code, or minus the signal that ended the program."""
    return os.waitstatus_to_exitcode(status)


def _copy(targets: dict[int, int]) -> None:
    """What the shell wrote, to the command's pipes (its end may be gone: then dropped)."""
    for source, target in targets.items():
        try:
            while data := os.read(source, 1 << 16):
                try:
                    view = memoryview(data)
                    while view:
                        view = view[os.write(target, view) :]
                except OSError:
                    pass
        except BlockingIOError:
            pass


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except BlockingIOError:
        pass


def _refused(ename: str, message: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "error": {"ename": ename, "evalue": message, "traceback": [], **({"extra": extra} if extra else {})}
    }


def _report(fd: int, report: dict[str, Any]) -> None:
    try:
        view = memoryview(json.dumps(report).encode() + b"\n")
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass


def serve() -> NoReturn:
    """Say the walls are up, then serve the manager's requests until the channel closes."""
    os.chdir(_session_files.home())
    Driver(socket.socket(fileno=CONTROL_FD)).serve()
