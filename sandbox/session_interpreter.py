"""A session's interpreter as its manager holds it: start it, send it cells, watch them from outside.

The interpreter (`sandbox._session_child`) is forked by a slot's fork server under a run's walls and kept
alive between cells; it joins cgroups of its own, so its memory and processes are capped across its
whole life, not per cell. Everything that decides a cell's status is seen from here: the wall clock,
the interpreter's death (its pidfd), the cgroup's OOM kills. The cell's own report says only what the
cell did in the process it owns: its value, or the exception it raised.

A cell past its `timeout_s` is interrupted (SIGINT: KeyboardInterrupt in the cell, as a notebook's
interrupt); the session survives when the cell gives up within `INTERRUPT_GRACE_S`, with its state
as the interrupt left it. A cell that ignores the interrupt is killed with its whole interpreter: the
status is `timeout` and the session has ended (`alive` false).

A session of kind `bash` is the same under the same walls, holding bash shells instead of an
interpreter (`sandbox._shell_child`): a cell is a command in one of its shells (its exit code in the
result; a non-zero one is `runtime_error`), interrupted as a terminal's Ctrl-C interrupts it; it also
runs programs outside its shells (`execute`, killed at their timeout). Either kind reads, writes and
unpacks its own files for its manager (`request`, `read_file`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import select
import signal
import socket
import time
from typing import Any

from evalfarm.limits import Limits
from evalfarm.sandbox import _cgroups, _linux, _payload, _protocol
from evalfarm.sandbox.slot import Sandbox, SandboxError
from evalfarm.status import Status

INTERRUPT_GRACE_S = 1.0  # how long an interrupted cell has to give up before the session is killed
START_TIMEOUT_S = 30.0
MAX_REPORT_BYTES = 256 << 10  # sandbox._session_child writes its report within this
MIN_OUTPUT_BYTES = 4096  # the least a session's output cap may be
MALFORMED = "the cell's report was malformed"
MAX_DISPLAY_BYTES = 8 << 20  # a Python cell's display (its figures) read back, at most
REQUEST_TIMEOUT_S = 60.0  # a file or shell request's answer, before the session is presumed stuck
# A session's processes are capped by its own pids cgroup; RLIMIT_NPROC counts every process of the
# slot's uid, which all the node's sessions share, so where the cgroup caps it is set past any use.
SHARED_NPROC = 1 << 14


@dataclasses.dataclass(frozen=True)
class CellResult:
    """What one cell did: its status, its output, the repr of its last expression's value."""

    status: Status
    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    error: str | None = None
    alive: bool = True  # whether the session lives on after this cell
    run_s: float = 0.0
    truncated: tuple[str, ...] = ()  # streams cut at the output cap
    exception: dict[str, Any] | None = None  # what the cell raised: ename, evalue, traceback (lines)
    output_bytes: int = 0  # the cap each stream was held to
    notice: str | None = None  # what cut the output, when a stream was cut
    exit_code: int | None = None  # a shell command's (or program's) exit status
    display: tuple[dict[str, str], ...] = ()  # a Python cell's MIME bundles (figures), as Jupyter's

    def to_dict(self) -> dict[str, Any]:
        """The cell's result as the gateway answers it (the contract's status names)."""
        return {
            "status": self.status.value,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "value": self.value,
            "error": self.error,
            "session_alive": self.alive,
            "run_s": round(self.run_s, 6),
            "truncated": list(self.truncated),
            "exception": self.exception,
            "output_bytes": self.output_bytes,
            "notice": self.notice,
            "exit_code": self.exit_code,
            "display": list(self.display),
        }


class Interpreter:
    """One live session interpreter: `run` cells one at a time, `close` to end it."""

    def __init__(
        self,
        channel: socket.socket,
        pidfd: int,
        cgroups: _cgroups.SlotCgroups | None,
        limits: Limits,
        kind: str = "python",
    ):
        self.kind = kind
        self.channel = channel
        self.pidfd = pidfd
        self.cgroups = cgroups
        self.limits = limits
        self.ended: str | None = None  # why the interpreter is gone, once it is
        self.output_note = "the session's output_bytes"  # what sets the output cap, for a cut's notice

    @classmethod
    def start(
        cls,
        sandbox: Sandbox,
        limits: Limits,
        cgroup_name: str | None = None,
        output_note: str | None = None,
        kind: str = "python",
        workspace: str | None = None,
    ) -> Interpreter:
        """A new interpreter on `sandbox`'s slot, in cgroups named `cgroup_name` (when the machine
        has a writable hierarchy) capping its memory and processes; raises SandboxError.
        `output_note`: what set `limits.output_bytes`, when not the session's own limit (a notice
        of each cut says it). `kind` "bash": a session of shells (none open yet: `open_shell`).
        `workspace`: a directory of this machine's the session finds at /workspace, shared
        read-only by every session on it, each writing its own copy (an overlay where this process
        may clone a mount, as root; else a copy)."""
        cgroups = None
        if cgroup_name is not None:
            cgroups, _ = _cgroups.create(cgroup_name, cpu=True)
        own = limits
        if cgroups is not None:
            cgroups.prepare(limits.memory_mb, limits.workdir_mb, limits.processes)
            own = dataclasses.replace(limits, processes=SHARED_NPROC)
        tree, mode = _workspace_tree(workspace)
        try:
            procs = cgroups.procs_fds if cgroups else ()
            channel, pidfd = sandbox.open_session(own, procs, kind, tree, mode)
        except SandboxError:
            if cgroups is not None:
                cgroups.remove()
            raise
        finally:
            _close(tree)
        interpreter = cls(channel, pidfd, cgroups, limits, kind)
        interpreter.output_note = output_note or interpreter.output_note
        interpreter._hello()
        if cgroups is not None:
            cgroups.joined()
        return interpreter

    def _hello(self) -> None:
        self.channel.settimeout(START_TIMEOUT_S)
        try:
            hello, fds = _protocol.recv(self.channel)
        except (OSError, _protocol.ProtocolError) as error:
            self.close()
            raise SandboxError(f"the session did not start: {error}") from error
        for fd in fds:
            os.close(fd)
        self.channel.settimeout(None)
        if not hello.get("ready"):
            self.close()
            raise SandboxError(f"the session did not start: {hello.get('setup_error', hello)}")

    @property
    def alive(self) -> bool:
        """Whether the interpreter still runs (it may have exited, or been killed, between cells)."""
        if self.ended is None and _readable(self.pidfd, 0):
            self.ended = "its interpreter exited"
        return self.ended is None

    def run(
        self,
        code: bytes,
        stdin: bytes = b"",
        timeout_s: float | None = None,
        shell: str | None = None,
        merge: bool = False,
        check_syntax: bool = False,
    ) -> CellResult:
        """Run one cell (a Python session's) or command (in a bash session's shell `shell`; `merge`:
        its stderr into its stdout; `check_syntax`: `bash -n` first); its result. Never raises for
        what the cell does."""
        header: dict[str, Any] = {"kind": _protocol.Kind.CELL}
        if self.kind == "bash":
            header.update(shell=shell or "default", merge=merge, check_syntax=check_syntax)
        return self._cell(header, code, stdin, timeout_s)

    def execute(self, spec: dict[str, Any], timeout_s: float | None = None) -> CellResult:
        """Run a program outside the shells of a bash session (`spec`: `command`, a list of
        arguments or a string for `/bin/sh -c`; `env`, `cwd`, `merge`), killed at its timeout."""
        return self._cell({"kind": _protocol.Kind.EXEC}, json.dumps(spec).encode(), b"", timeout_s)

    def _cell(self, header: dict[str, Any], code: bytes, stdin: bytes, timeout_s: float | None) -> CellResult:
        if not self.alive:
            return CellResult(Status.RUNTIME_ERROR, error=f"the session has ended: {self.ended}", alive=False)
        if self.cgroups is not None:
            self.cgroups.prepare(self.limits.memory_mb, self.limits.workdir_mb, self.limits.processes)
        cell = _Cell(self.limits.output_bytes)
        started = time.monotonic()
        display = _payload.empty_memfd("evalfarm-display") if self.kind == "python" else None
        try:
            self._send(header, code, stdin, cell, display)
        except (OSError, _protocol.ProtocolError):  # the interpreter is gone: it closed its channel
            cell.close()
            _close(display)
            return self._ended_result(cell, started, timed_out=False)
        timed_out = self._watch(cell, started + (timeout_s or self.limits.wall_s))
        if cell.report is None:
            _close(display)
            return self._with_notice(self._ended_result(cell, started, timed_out))
        result = self._with_notice(self._reported(cell, started, timed_out))
        shown = _display_of(display)
        return dataclasses.replace(result, display=shown) if shown else result

    def request(
        self, header: dict[str, Any], content: bytes = b"", want: bool = False
    ) -> tuple[dict[str, Any], bytes]:
        """One request that is not a cell (a file's read, write or upload; a shell opened or closed):
        its report and, with `want`, the bytes it wrote back. A session that does not answer within
        REQUEST_TIMEOUT_S is killed (it is stuck), and the report says it ended."""
        if not self.alive:
            return {"ended": self.ended}, b""
        given = _payload.memfd(content, "evalfarm-file-in")
        back = _payload.empty_memfd("evalfarm-file-out")
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        try:
            try:
                _protocol.send(self.channel, header, [given, back, write_end])
            finally:
                os.close(given)
                os.close(write_end)
            report = self._await_report(read_end)
            data = _payload.read_fd(back) if want and "error" not in report else b""
        except (OSError, _protocol.ProtocolError):
            report, data = {}, b""
        finally:
            os.close(read_end)
            os.close(back)
        if not report:
            self.kill(self.ended or "the session did not answer a request")
            return {"ended": self.ended}, b""
        return report, data

    def _await_report(self, fd: int) -> dict[str, Any]:
        """The one-line report on `fd`; {} when the session ended, or did not answer in time."""
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.register(self.pidfd, select.POLLIN)
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        data = b""
        while b"\n" not in data and len(data) <= MAX_REPORT_BYTES:
            left = deadline - time.monotonic()
            events = dict(poller.poll(max(left, 0) * 1000)) if left > 0 else {}
            if fd in events:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                data += chunk
            elif self.pidfd in events or not events:
                return {}
        return _parsed(data.split(b"\n", 1)[0])

    def open_shell(self, name: str, vital: bool = False) -> dict[str, Any]:
        """Open the bash shell `name` in this session (`vital`: the session ends if it does); the
        report (`opened`, or an `error` naming it, as SWE-ReX's SessionExistsError)."""
        return self.request({"kind": _protocol.Kind.SHELL, "op": "open", "name": name, "vital": vital})[0]

    def close_shell(self, name: str) -> dict[str, Any]:
        """Close the bash shell `name`; the report (`closed`, or an `error`)."""
        return self.request({"kind": _protocol.Kind.SHELL, "op": "close", "name": name})[0]

    def _with_notice(self, result: CellResult) -> CellResult:
        """The result with its streams' cap, and a notice of what cut them when they were cut."""
        cap = self.limits.output_bytes
        notice = None
        if result.truncated:
            notice = f"{' and '.join(result.truncated)} cut at {cap} bytes ({self.output_note})"
        return dataclasses.replace(result, output_bytes=cap, notice=notice)

    def _send(
        self, header: dict[str, Any], code: bytes, stdin: bytes, cell: _Cell, display: int | None
    ) -> None:
        ours = [_payload.memfd(code, "evalfarm-cell"), _payload.memfd(stdin, "evalfarm-stdin")]
        theirs = [cell.open_pipe("stdout"), cell.open_pipe("stderr"), cell.open_pipe("report")]
        try:
            _protocol.send(self.channel, header, ours + theirs + ([display] if display is not None else []))
        finally:
            for fd in ours + theirs:
                os.close(fd)

    def _watch(self, cell: _Cell, deadline: float) -> bool:
        """Drain the cell's output until its report, the interpreter's end or the deadline (then the
        interrupt, then the kill); whether the cell ran out of time."""
        interrupted = False
        poller = select.poll()
        for fd in cell.names:
            poller.register(fd, select.POLLIN)
        poller.register(self.pidfd, select.POLLIN)
        while cell.report is None:
            wait_s = deadline - time.monotonic()
            if wait_s <= 0:
                if interrupted:
                    self.kill("killed: a cell ignored the interrupt at its timeout")
                    return True
                self._signal(signal.SIGINT)
                interrupted, deadline = True, time.monotonic() + INTERRUPT_GRACE_S
                continue
            for fd, _ in poller.poll(wait_s * 1000):
                if fd == self.pidfd:
                    cell.drain()
                    return interrupted
                if not cell.read(fd):
                    poller.unregister(fd)
        cell.drain()
        return interrupted

    def _reported(self, cell: _Cell, started: float, timed_out: bool) -> CellResult:
        """The result of a cell whose interpreter reported on it (it lives on)."""
        report = cell.report or {}
        status, error, value, exception = Status.OK, None, None, None
        if timed_out or report.get("interrupted"):
            status, error = Status.TIMEOUT, "the cell ran past its timeout and was interrupted"
        else:
            try:
                status, error, value, exception = _said(report)
            except Exception:  # a report the cell's process wrote is its own, however it is made
                status, error = Status.RUNTIME_ERROR, MALFORMED
        # A shell command the kernel killed for memory is its exit code 137 to the shell.
        outcomes = (Status.OK, Status.RUNTIME_ERROR) if self.kind == "bash" else (Status.OK,)
        if status in outcomes and self.cgroups is not None and self.cgroups.oom_killed():
            status, error = Status.MEMORY_LIMIT, "a process of the session was killed for memory"
        result = cell.result(status, value, error, alive=True, run_s=time.monotonic() - started)
        return dataclasses.replace(result, exception=exception, exit_code=_exit_code(report))

    def _ended_result(self, cell: _Cell, started: float, timed_out: bool) -> CellResult:
        """The result of a cell whose interpreter died under it (killed here, or for memory, or it
        exited): the session has ended."""
        run_s = time.monotonic() - started
        oom = self.cgroups is not None and self.cgroups.oom_killed()
        self.kill(self.ended or ("killed for memory" if oom else "its interpreter exited"))
        if timed_out:
            status, error = Status.TIMEOUT, "the cell ran past its timeout and ignored the interrupt"
        elif oom:
            status, error = Status.MEMORY_LIMIT, "the session ran out of memory"
        elif self.kind == "bash":
            status, error = Status.RUNTIME_ERROR, "the command ended the session's shell"
        else:
            status, error = Status.RUNTIME_ERROR, "the cell ended the session's interpreter"
        return cell.result(status, None, f"{error}; the session has ended", alive=False, run_s=run_s)

    def _signal(self, signum: int) -> None:
        if self.pidfd < 0:  # closed: the interpreter was ended already
            return
        try:
            signal.pidfd_send_signal(self.pidfd, signum)
        except ProcessLookupError:
            pass

    def kill(self, reason: str) -> None:
        """End the interpreter and everything it started (it is PID 1 of its namespace)."""
        if self.ended is None:
            self.ended = reason
        self._signal(signal.SIGKILL)

    def close(self, reason: str = "closed") -> None:
        """End the session and release what it held: its channel, its pidfd, its cgroups (removed
        once its processes are gone)."""
        self.kill(reason)
        self.channel.close()
        if self.pidfd >= 0:
            _readable(self.pidfd, 1.0)  # its end, so that its cgroups are empty
            os.close(self.pidfd)
            self.pidfd = -1
        if self.cgroups is not None:
            self.cgroups.remove()
            self.cgroups = None


def held_bytes(output_bytes: int) -> int:
    """The most a session's manager holds of one cell at once: both streams at their cap, and the
    report."""
    return 2 * output_bytes + MAX_REPORT_BYTES


def _readable(fd: int, timeout_s: float) -> bool:
    """Whether `fd` becomes readable within `timeout_s` (poll: a host holds thousands of them)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(timeout_s * 1000))


def _said(report: dict[str, Any]) -> tuple[Status, str | None, str | None, dict[str, Any] | None]:
    """What a cell's report says: its status, error, value and exception (a shell command's: a
    non-zero exit code is its runtime_error)."""
    if report.get("shell_ended"):
        return Status.RUNTIME_ERROR, "the shell exited", None, None
    code = _exit_code(report)
    if code:
        return Status.RUNTIME_ERROR, f"exit code {code}", None, None
    if isinstance(report.get("error"), dict):
        exception = _exception(report["error"])
        name, text = exception["ename"], exception["evalue"]
        status = Status.MEMORY_LIMIT if name == "MemoryError" else Status.RUNTIME_ERROR
        return status, f"{name}: {text}" if text else name, None, exception
    if "value" in report:
        return Status.OK, None, report["value"] if isinstance(report["value"], str) else None, None
    return Status.RUNTIME_ERROR, MALFORMED, None, None


def _exit_code(report: dict[str, Any]) -> int | None:
    code = report.get("exit_code")
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _display_of(fd: int | None) -> tuple[dict[str, str], ...]:
    """A Python cell's display, as its process wrote it (its own words: kept only where they are
    MIME bundles of strings)."""
    if fd is None:
        return ()
    try:
        shown = json.loads(_payload.read_fd(fd, MAX_DISPLAY_BYTES) or b"[]")
    except Exception:  # the cell's process may write anything there
        shown = []
    finally:
        os.close(fd)
    if not isinstance(shown, list):
        return ()
    return tuple(
        {str(k): v for k, v in bundle.items() if isinstance(v, str)}
        for bundle in shown
        if isinstance(bundle, dict)
    )


def _workspace_tree(path: str | None) -> tuple[int | None, str]:
    """What a session is sent of its workspace: a detached clone of it (an overlay's lower layer)
    where this process may make one, else the directory itself (copied)."""
    if path is None:
        return None, "copy"
    try:
        return _linux.clone_tree(path), "overlay"
    except OSError:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC), "copy"


def _close(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


def _parsed(line: bytes) -> dict[str, Any]:
    """A report line as the cell's process wrote it. Anything there may be the cell's own writing
    (it holds the pipe while it runs), so a line that does not parse, whatever the parser raises
    (a RecursionError for deep nesting, a ValueError, a MemoryError), is a malformed report, the
    cell's failure, never the host's."""
    try:
        report = json.loads(line)
    except Exception:
        return {"malformed": True}
    return report if isinstance(report, dict) else {"malformed": True}


def _exception(reported: dict[str, Any]) -> dict[str, Any]:
    """What a cell raised, as its report says (its own words: plain strings, nothing else)."""
    lines = reported.get("traceback")
    said: dict[str, Any] = {
        "ename": str(reported.get("ename", "Exception")),
        "evalue": str(reported.get("evalue", "")),
        "traceback": [str(line) for line in lines] if isinstance(lines, list) else [],
    }
    extra = reported.get("extra")
    if isinstance(extra, dict):  # a shell's refusal's words (bash -n's output)
        said["extra"] = {str(k): str(v) for k, v in extra.items()}
    return said


class _Cell:
    """One cell's pipes (this end), its captured output under the cap, and its report."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.names: dict[int, str] = {}  # read end -> stream name
        self.chunks: dict[str, list[bytes]] = {"stdout": [], "stderr": [], "report": []}
        self.sizes = {"stdout": 0, "stderr": 0, "report": 0}
        self.truncated: set[str] = set()
        self.report: dict[str, Any] | None = None

    def open_pipe(self, name: str) -> int:
        """A pipe for stream `name`: its read end kept here (non-blocking), its write end returned."""
        read_end, write_end = os.pipe2(os.O_CLOEXEC)  # the cell's end blocks, as a program expects
        os.set_blocking(read_end, False)
        self.names[read_end] = name
        return write_end

    def read(self, fd: int) -> bool:
        """Read what `fd` holds now; False at its end."""
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return True
        self._take(self.names[fd], data)
        return bool(data)

    def drain(self) -> None:
        """Read what is left in the pipes now, without waiting for their ends (a thread or a child
        of the cell may hold them open past it)."""
        for fd, name in self.names.items():
            try:
                while data := os.read(fd, 1 << 16):
                    self._take(name, data)
            except BlockingIOError:
                continue
            self._take(name, b"")

    def _take(self, name: str, data: bytes) -> None:
        """Keep `data` of stream `name` up to its cap (b"": the stream ended)."""
        if name == "report" and (data.endswith(b"\n") or (not data and self.sizes[name])):
            self._keep(name, data, MAX_REPORT_BYTES)
            self._parse_report()  # a complete line, or what came before the end (a pipe closed
            # without a word, when the interpreter died, is no report at all)
        else:
            self._keep(name, data, MAX_REPORT_BYTES if name == "report" else self.cap)

    def _keep(self, name: str, data: bytes, cap: int) -> None:
        room = cap - self.sizes[name]
        if len(data) > room:
            self.truncated.add(name)
        if room > 0 and data:
            self.chunks[name].append(data[:room])
            self.sizes[name] += min(room, len(data))

    def _parse_report(self) -> None:
        if self.report is not None:
            return
        self.report = _parsed(b"".join(self.chunks["report"]).split(b"\n", 1)[0])

    def result(
        self, status: Status, value: str | None, error: str | None, alive: bool, run_s: float
    ) -> CellResult:
        self.close()
        text = {name: b"".join(self.chunks[name]).decode("utf-8", "replace") for name in ("stdout", "stderr")}
        truncated = tuple(sorted(self.truncated - {"report"}))
        return CellResult(status, text["stdout"], text["stderr"], value, error, alive, run_s, truncated)

    def close(self) -> None:
        for fd in self.names:
            os.close(fd)
        self.names = {}
