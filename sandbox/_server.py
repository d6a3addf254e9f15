"""The fork server of one sandbox slot.

Started once per slot as a clean, single-threaded `python -I -S` with the allowed imports
preloaded, it walls itself into private mount, network and UTS namespaces (and a user namespace
when not root), then serves runs: for each request it forks one child in a fresh PID namespace,
feeds its stdin, drains its output into bounded buffers, enforces the wall clock and classifies the
outcome. A run pays neither Python's start-up nor numpy's import.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
import re
import resource
import select
import signal
import socket
import sys
import time
from typing import Any

from sandbox import (
    _binaries,
    _cgroups,
    _landlock,
    _linux,
    _native,
    _probe,
    _protocol,
    _rootfs,
    _runner,
    _seccomp,
)
from sandbox.limits import Limits
from sandbox.status import Status

CONTROL_FD = 200  # the client's socket is moved here, clear of the run's 0-3
RUN_UID = 1000  # a run's uid inside the user namespace, when the worker is not root
_READ_CHUNK = 1 << 16


class Server:
    """One slot's fork server: isolation set up once, then one run per request."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.uid: int | None = config["uid"]
        self.user_namespace = self.uid is None
        self.layers: dict[str, str] = {}
        self.seccomp_filter: _seccomp.Loadable | None = None
        self.landlock_abi = 0
        self.baseline_address_space = 0
        self.pid_ns_fd = -1
        self.cgroups: _cgroups.SlotCgroups | None = None
        self.seccomp_code = b""  # the filter's bytes, for the launcher's command line
        self.native_arguments: tuple[dict[str, Any], list[str]] | None = None  # limits -> argv
        # A run's environment, as a plain dict: os.environ is re-encoded on every use.
        self.environment = dict(os.environ)
        cache = config.get("binary_cache") or {}
        self.binaries = _binaries.Binaries(cache.get("entries", 32), cache.get("bytes", 256 << 20))

    # -- start-up ---------------------------------------------------------------------------

    def setup(self) -> None:
        """Enter the slot's namespaces and build its filesystem view; record each layer's state."""
        _linux.set_pdeathsig(signal.SIGKILL)
        if os.getppid() != self.config["parent_pid"]:
            sys.exit(1)
        for name in self.config["preload"]:
            try:
                importlib.import_module(name)
            except ImportError as error:
                self.layers[f"preload {name}"] = f"off ({error})"
        self.baseline_address_space = _address_space()
        self._enter_namespaces()
        self.pid_ns_fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        self._setup_cgroups()
        launcher = self.config.get("launcher")
        files = {_native.LAUNCHER: launcher} if launcher else {}
        moved = _rootfs.build(self.config["python_dirs"], keep_host_proc=self.user_namespace, files=files)
        _rootfs.follow(moved)
        self._setup_native(launcher)
        self.layers["filesystem"] = "on (read-only skeleton root, private /proc and /tmp per run)"
        self._setup_seccomp()
        self._setup_landlock()
        _runner.install_stdio()
        # Exit handlers the preloaded modules registered are the server's, not a program's: a run
        # runs only the handlers its own program registers.
        atexit._clear()
        gc.freeze()  # runs then never scan (and so never copy) the preloaded objects
        self.layers["rlimits"] = "on (as, cpu, fsize, nofile, nproc, core=0, stack)"

    def _setup_native(self, launcher: str | None) -> None:
        if not launcher:
            self.layers["native"] = f"off ({self.config.get('launcher_error') or 'no launcher'})"
            return
        if self.user_namespace:
            # The launcher is executed, and a non-root execve drops capabilities: it keeps the two it
            # needs to put up a run's walls (new namespaces and mounts; dropping the rest).
            _linux.keep_across_exec((_linux.CAP_SYS_ADMIN, _linux.CAP_SETPCAP))
        self.layers["native"] = "on (compiled programs start through a launcher, under the same walls)"

    def _enter_namespaces(self) -> None:
        flags = _linux.CLONE_NEWNS | _linux.CLONE_NEWNET | _linux.CLONE_NEWUTS
        if self.user_namespace:
            outer_uid, outer_gid = os.getuid(), os.getgid()
            _linux.unshare(flags | _linux.CLONE_NEWUSER | _linux.CLONE_NEWPID)
            _write("/proc/self/setgroups", "deny")
            # Runs see a non-root uid: the server keeps its capabilities as the namespace's creator.
            _write("/proc/self/uid_map", f"{RUN_UID} {outer_uid} 1")
            _write("/proc/self/gid_map", f"{RUN_UID} {outer_gid} 1")
            _become_pid_namespace_init()
            self.layers["user"] = f"on (user namespace, outer uid {outer_uid}, capabilities dropped per run)"
        else:
            _linux.unshare(flags)
            self.layers["user"] = f"on (uid {self.uid} for this slot)"
        socket.sethostname("sandbox")
        self.layers["namespaces"] = "on (pid and ipc per run; mount, net, uts per slot; no network)"

    def _setup_cgroups(self) -> None:
        if self.user_namespace:
            self.layers["cgroups"] = "off (not root: no writable hierarchy)"
            return
        self.cgroups, reason = _cgroups.create(self.config["cgroup"])
        self.layers["cgroups"] = f"on ({self.cgroups.description})" if self.cgroups else f"off ({reason})"

    def _setup_seccomp(self) -> None:
        if _seccomp.supported():
            self.seccomp_code = _seccomp.assemble(_linux.MACHINE)
            self.seccomp_filter = _seccomp.Loadable(self.seccomp_code)
            self.layers["seccomp"] = f"on ({len(_seccomp.DENIED)} calls denied, namespace clones, AF_VSOCK)"
        else:
            self.layers["seccomp"] = f"off (no filter for {_linux.MACHINE})"

    def _setup_landlock(self) -> None:
        self.landlock_abi = abi = _landlock.abi_version()
        if abi:
            self.layers["landlock"] = f"on (ABI {abi}: writes only in /tmp, no TCP, scoped)"
        else:
            self.layers["landlock"] = "off (not supported by this kernel)"

    # -- runs -------------------------------------------------------------------------------

    def verify(self) -> None:
        """Run the probe program; raise when a layer reported on does not hold."""
        limits = Limits(memory_mb=256, output_bytes=4096, file_size_mb=1, workdir_mb=1, processes=8).to_dict()
        header, (stdout, stderr) = self.run({"limits": limits}, _probe.PROBE.encode(), b"", b"")
        failed = _probe.failed_layers(self.layers, stdout)
        if failed:
            detail = header.get("error") or stderr.decode(errors="replace")[-500:]
            raise RuntimeError(f"isolation check failed for {', '.join(failed)}: {detail}")

    def serve(self, channel: socket.socket) -> None:
        """Answer run requests until the client closes the channel."""
        try:
            _protocol.send(channel, {"ready": True, "layers": self.layers, "pid": os.getpid()})
        except OSError:  # the client went away before the slot was ready
            return
        while True:
            try:
                request, blobs = _protocol.recv(channel)
            except (_protocol.ProtocolError, OSError):  # the client went away
                return
            header, outputs = self.run(request, *blobs)
            _protocol.send(channel, header, *outputs)

    def run(
        self, request: dict[str, Any], code: bytes, stdin: bytes, args: bytes, files: bytes = b""
    ) -> tuple[dict, list[bytes]]:
        """Run one program; return the result header and [stdout, stderr].

        `files`: JSON {relative path: base64 content} written into the run's /tmp before it starts;
        `request["fetch"]`: paths under /tmp whose contents come back in the result;
        `request["native"]`: `code` is source to compile (or find compiled) and run as a binary.
        """
        if request.get("native"):
            return self.run_native(request, code, stdin)
        extra = {"call": request.get("call"), "fetch": request.get("fetch") or []}
        return self._fork_run(request["limits"], extra, code, stdin, args, files)

    def run_native(self, request: dict[str, Any], source: bytes, stdin: bytes) -> tuple[dict, list[bytes]]:
        """Compile `source` unless this server holds its binary, then run the binary on `stdin`."""
        native = request["native"]
        binary_fd = self.binaries.get(native["key"])
        compiled: dict[str, Any] = {"status": Status.OK.value, "cached": binary_fd is not None, "wall_s": 0.0}
        if binary_fd is None:
            header, outputs, binary = self.compile(native["compile"], source)
            if binary is None:
                return header, outputs
            binary_fd = self.binaries.put(native["key"], binary)
            compiled.update(wall_s=header["wall_s"], binary_bytes=len(binary))
        header, outputs = self._spawn_native(request["limits"], binary_fd, native["argv"], stdin)
        header["compile"] = compiled
        return header, outputs

    def compile(self, spec: dict[str, Any], source: bytes) -> tuple[dict, list[bytes], bytes | None]:
        """Run the compiler on `source` as a run of its own; the header of a failed compile (as the
        job's result) and its output, and the binary when it compiled."""
        limits = spec["limits"]
        run = self._fork(limits, {"compile": spec}, source, b"", b"", b"", result_cap=MAX_BINARY_BYTES + 4096)
        return _compile_verdict(run)

    def _spawn_native(
        self, limits: dict[str, Any], binary_fd: int, argv: list[str], stdin: bytes
    ) -> tuple[dict, list[bytes]]:
        """Start the binary through the launcher (a vfork and two small execs, no fork of this
        interpreter) and supervise it as any run."""
        if not self.config.get("launcher"):
            error = (
                f"{_SETUP_FAILED}: native runs are off ({self.config.get('launcher_error') or 'no launcher'})"
            )
            return {"status": Status.INFRA_ERROR.value, "error": error, "infra_reason": "run_setup_failed"}, [
                b"",
                b"",
            ]
        cgroup_fds = self.cgroups.procs_fds if self.cgroups else []
        if self.cgroups:
            self.cgroups.prepare(limits["memory_mb"], limits["workdir_mb"], limits["processes"])
        if self.native_arguments is None or self.native_arguments[0] != limits:
            arguments = _native.launcher_argv(
                limits, self.uid, self.landlock_abi, self.seccomp_code, len(cgroup_fds)
            )
            self.native_arguments = (limits, arguments)
        pipes = [os.pipe() for _ in range(4)]  # stdin, stdout, stderr, result
        child_ends = (pipes[0][0], pipes[1][1], pipes[2][1], pipes[3][1])
        _linux.unshare(_linux.CLONE_NEWPID)
        started = time.monotonic()
        try:
            pid = _native.spawn(
                self.native_arguments[1], argv, self.environment, child_ends, binary_fd, cgroup_fds
            )
        finally:
            _linux.setns(self.pid_ns_fd, _linux.CLONE_NEWPID)
            for fd in child_ends:
                os.close(fd)
        supervisor = _Supervision(pid, limits, started, is_call=False, native=True)
        supervisor.pump(stdin, pipes[0][1], pipes[1][0], pipes[2][0], pipes[3][0])
        supervisor.oom_killed = bool(self.cgroups and self.cgroups.oom_killed())
        header = supervisor.result()
        # Not measured: the kernel's max RSS of a native run is this server's, as the launcher
        # starts in a vfork on this process's memory and the exec keeps that high-water mark.
        header["max_rss_mb"] = None
        return header, [bytes(supervisor.stdout), bytes(supervisor.stderr)]

    def _fork_run(
        self,
        limits: dict[str, Any],
        extra: dict[str, Any],
        code: bytes,
        stdin: bytes,
        args: bytes,
        files: bytes,
    ) -> tuple[dict, list[bytes]]:
        run = self._fork(limits, extra, code, stdin, args, files)
        return run.result(), [bytes(run.stdout), bytes(run.stderr)]

    def _fork(
        self,
        limits: dict[str, Any],
        extra: dict[str, Any],
        code: bytes,
        stdin: bytes,
        args: bytes,
        files: bytes,
        result_cap: int = 1 << 24,
    ) -> _Supervision:
        """Fork one run in a fresh PID namespace and supervise it to its end."""
        plan = {
            "uid": self.uid,
            "user_namespace": self.user_namespace,
            "limits": limits,
            "landlock_abi": self.landlock_abi,
            "seccomp_filter": self.seccomp_filter,
            "address_space_bytes": self.baseline_address_space + (limits["memory_mb"] << 20),
            "max_fd": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            "cgroup_fds": self.cgroups.procs_fds if self.cgroups else [],
            **extra,
        }
        if self.cgroups:
            self.cgroups.prepare(limits["memory_mb"], limits["workdir_mb"], limits["processes"])
        pipes = [os.pipe() for _ in range(4)]  # stdin, stdout, stderr, result
        child_ends = (pipes[0][0], pipes[1][1], pipes[2][1], pipes[3][1])
        _linux.unshare(_linux.CLONE_NEWPID)
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _runner.child_main(plan, child_ends, code, args, files)
        _linux.setns(self.pid_ns_fd, _linux.CLONE_NEWPID)  # so the next unshare may create another
        for fd in child_ends:
            os.close(fd)
        supervisor = _Supervision(
            pid, limits, started, is_call=bool(plan.get("call")), native=bool(plan.get("native")),
            result_cap=result_cap,
        )  # fmt: skip
        supervisor.pump(stdin, pipes[0][1], pipes[1][0], pipes[2][0], pipes[3][0])
        supervisor.oom_killed = bool(self.cgroups and self.cgroups.oom_killed())
        return supervisor


class _Supervision:
    """The parent's side of one run: I/O, the wall clock, the output cap, then the verdict."""

    def __init__(
        self,
        pid: int,
        limits: dict[str, Any],
        started: float,
        is_call: bool,
        native: bool = False,
        result_cap: int = 1 << 24,
    ) -> None:
        self.pid = pid
        self.native = native
        self.result_cap = result_cap
        self.is_call = is_call
        self.limits = limits
        self.started = started
        self.deadline = started + limits["wall_s"]
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.outcome_text = bytearray()
        self.truncated = {"stdout": False, "stderr": False}
        self.killed_for: str | None = None
        self.oom_killed = False
        self.wait_status = 0
        self.rusage: Any = None
        self.wall_s = 0.0

    def pump(self, stdin: bytes, stdin_fd: int, stdout_fd: int, stderr_fd: int, result_fd: int) -> None:
        """Move bytes until every output closes, killing the run on the wall clock or the cap."""
        pidfd = os.pidfd_open(self.pid)
        os.set_blocking(stdin_fd, False)
        poller = select.poll()
        buffers = {stdout_fd: ("stdout", self.stdout), stderr_fd: ("stderr", self.stderr)}
        open_reads = {stdout_fd, stderr_fd, result_fd}
        for fd in open_reads:
            poller.register(fd, select.POLLIN)
        poller.register(pidfd, select.POLLIN)
        view = memoryview(stdin)
        if view:
            poller.register(stdin_fd, select.POLLOUT)
        else:
            os.close(stdin_fd)
        exited = False
        while open_reads or not exited:
            timeout_ms = max(0, int((self.deadline - time.monotonic()) * 1000) + 1)
            events = poller.poll(timeout_ms if self.killed_for is None else 1000)
            if not events and self.killed_for is None and time.monotonic() >= self.deadline:
                self._kill("wall")
            for fd, _event in events:
                if fd == pidfd:
                    poller.unregister(pidfd)
                    exited = True
                elif fd == stdin_fd:
                    view = self._feed(stdin_fd, view, poller)
                elif fd == result_fd:
                    if not self._read_into(fd, self.outcome_text, self.result_cap):
                        open_reads.discard(fd)
                        poller.unregister(fd)
                        os.close(fd)
                elif fd in buffers and not self._drain(fd, *buffers[fd]):
                    open_reads.discard(fd)
                    poller.unregister(fd)
                    os.close(fd)
        if view:
            os.close(stdin_fd)
        os.close(pidfd)
        _, self.wait_status, self.rusage = os.wait4(self.pid, 0)
        self.wall_s = time.monotonic() - self.started

    def _feed(self, fd: int, view: memoryview, poller: select.poll) -> memoryview:
        try:
            view = view[os.write(fd, view[:_READ_CHUNK]) :]
        except BlockingIOError:
            pass
        except BrokenPipeError:  # the program stopped reading: the rest of stdin is dropped
            view = view[len(view) :]
        if not view:
            poller.unregister(fd)
            os.close(fd)
        return view

    def _drain(self, fd: int, name: str, buffer: bytearray) -> bool:
        """Read what is there; False at end of file. Past the cap, the run is killed."""
        chunk = os.read(fd, _READ_CHUNK)
        if not chunk:
            return False
        room = self.limits["output_bytes"] - len(buffer)
        buffer += chunk[: max(room, 0)]
        if len(chunk) > room:
            self.truncated[name] = True
            self._kill("output")
        return True

    @staticmethod
    def _read_into(fd: int, buffer: bytearray, cap: int) -> bool:
        chunk = os.read(fd, _READ_CHUNK)
        if chunk and len(buffer) < cap:
            buffer += chunk
        return bool(chunk)

    def _kill(self, reason: str) -> None:
        if self.killed_for is None:
            self.killed_for = reason
            try:
                os.kill(self.pid, signal.SIGKILL)  # PID 1 of the run: its namespace dies with it
            except ProcessLookupError:
                pass

    def result(self) -> dict[str, Any]:
        """The result header: status, exit, costs and the runner's own report."""
        outcome = _parse_outcome(bytes(self.outcome_text))
        exit_code = os.WEXITSTATUS(self.wait_status) if os.WIFEXITED(self.wait_status) else None
        signum = os.WTERMSIG(self.wait_status) if os.WIFSIGNALED(self.wait_status) else None
        cpu_s = self.rusage.ru_utime + self.rusage.ru_stime
        status, error = _classify(self, outcome, exit_code, signum, cpu_s)
        return {
            "status": status.value,
            "error": error,
            "infra_reason": _infra_reason(status, error),
            "exit_code": exit_code,
            "signal": signum,
            "stdout_truncated": self.truncated["stdout"],
            "stderr_truncated": self.truncated["stderr"],
            "wall_s": self.wall_s,
            "cpu_s": cpu_s,
            "max_rss_mb": self.rusage.ru_maxrss / 1024,
            # A binary that exited 0 ran to its end; a Python program's runner says whether it did.
            "completed": (self.native or bool(outcome.get("completed"))) and status is Status.OK,
            "value": outcome.get("value"),
            "exception": outcome.get("exception"),
            "files": outcome.get("files"),
        }


def _parse_outcome(text: bytes) -> dict[str, Any]:
    """The runner's report: JSON objects one per line, merged in order.

    The runner writes `{"started": true}` just before the program's own code runs. What follows
    is written from inside the program's process (a Python program shares it with the runner): a
    setup error claimed there is not believed, so no program can pass its failure off as the farm's.
    """
    outcome: dict[str, Any] = {}
    for line in text.split(b"\n"):
        if not line.strip():
            continue
        try:
            part = json.loads(line)
        except ValueError:
            continue
        if isinstance(part, dict):
            if outcome.get("started"):
                part.pop("setup_error", None)
                part.pop("started", None)
            outcome.update(part)
    return outcome


def _classify(
    run: _Supervision, outcome: dict[str, Any], exit_code: int | None, signum: int | None, cpu_s: float
) -> tuple[Status, str | None]:
    """The run's status and a one-line reason, in a fixed order of evidence."""
    limits = run.limits
    if "setup_error" in outcome or (exit_code == _runner.SETUP_FAILED_EXIT and not outcome.get("started")):
        return Status.INFRA_ERROR, f"{_SETUP_FAILED}: {outcome.get('setup_error', 'no report')}"
    if run.native and "exec_error" in outcome:  # only the launcher holds a native run's channel
        return Status.INFRA_ERROR, f"{_SETUP_FAILED}: {outcome['exec_error']}"
    if run.killed_for == "output":
        return Status.OUTPUT_LIMIT, f"output exceeded {limits['output_bytes']} bytes"
    if run.killed_for == "wall":
        return Status.TIMEOUT, f"wall-clock limit of {limits['wall_s']} s exceeded"
    if "syntax_error" in outcome:
        return Status.SYNTAX_ERROR, outcome["syntax_error"]
    if signum == signal.SIGXCPU or (signum == signal.SIGKILL and cpu_s >= limits["cpu_s"]):
        return Status.TIMEOUT, f"CPU limit of {limits['cpu_s']} s exceeded"
    memory = _memory_verdict(run, outcome, exit_code, signum)
    if memory:
        return Status.MEMORY_LIMIT, memory
    if "value_too_large" in outcome:
        return Status.OUTPUT_LIMIT, f"returned value of {outcome['value_too_large']} bytes is over the cap"
    if signum is not None:
        return _killed_by(signum, aborted=run.native and bool(_ABORTED.search(run.stderr)))
    if exit_code:
        reason = outcome.get("exception")
        return Status.RUNTIME_ERROR, f"exit code {exit_code}" + (f" ({reason})" if reason else "")
    if "value_error" in outcome:
        return Status.RUNTIME_ERROR, outcome["value_error"]
    if run.is_call and "value" not in outcome:
        return Status.RUNTIME_ERROR, "the program exited before returning a value"
    return Status.OK, None


def _compile_verdict(run: _Supervision) -> tuple[dict, list[bytes], bytes | None]:
    """A compile run's result header (the job's, when it failed), its output, and the binary."""
    line, _, binary = bytes(run.outcome_text).lstrip(b"\n").partition(b"\n")
    run.outcome_text = bytearray(line)  # the binary's bytes are not the runner's report
    report = _parse_outcome(line)
    header = run.result()
    limits = run.limits
    message = bytes(run.stderr or run.stdout)[:COMPILER_MESSAGE_BYTES].decode("utf-8", "replace")
    status, error = Status.OK, None
    if run.killed_for == "wall":
        status, error = Status.TIMEOUT, f"the compile exceeded its wall-clock limit of {limits['wall_s']} s"
    elif run.killed_for == "output":
        flood = f"the compiler's messages passed {limits['output_bytes']} bytes"
        status, error = Status.SYNTAX_ERROR, f"compile error ({flood}): {_first_error(message)}"
    elif "compiler_exit" not in report:  # the run failed around the compiler: the farm's fault
        status, error = Status.INFRA_ERROR, header["error"] or f"{_SETUP_FAILED}: {report.get('setup_error')}"
    elif run.oom_killed or _COMPILER_OUT_OF_MEMORY.search(message):
        status, error = (
            Status.MEMORY_LIMIT,
            f"the compile exceeded its memory limit of {limits['memory_mb']} MB",
        )
    elif "CPU time limit exceeded" in message:
        status, error = Status.TIMEOUT, f"the compile exceeded its CPU limit of {limits['cpu_s']} s"
    elif report["compiler_exit"] != 0:
        status, error = (
            Status.SYNTAX_ERROR,
            "compile error: " + (_first_error(message) or "the compiler failed"),
        )
    elif report.get("binary_bytes") != len(binary) or not binary:
        status, error = Status.INFRA_ERROR, f"{_SETUP_FAILED}: the compiler's binary did not come back whole"
    if status is Status.OK:
        return header, [], binary
    header.update(
        status=status.value, error=error, infra_reason=_infra_reason(status, error), completed=False,
        compile={"status": status.value, "cached": False, "wall_s": header["wall_s"]},
    )  # fmt: skip
    return header, [bytes(run.stdout), bytes(run.stderr)[:COMPILER_MESSAGE_BYTES]], None


MAX_BINARY_BYTES = 64 << 20  # a compiled program larger than this is not brought back
COMPILER_MESSAGE_BYTES = 16 << 10  # of the compiler's messages, what a failed compile's result keeps
_COMPILER_OUT_OF_MEMORY = re.compile(
    r"out of memory allocating|virtual memory exhausted|Cannot allocate memory"
)


def _first_error(message: str) -> str:
    """The compiler's first error line (`main.cpp:3:5: error: ...`), else its first line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        if "error" in line:
            return line[:500]
    return lines[0][:500] if lines else ""


def _memory_verdict(
    run: _Supervision, outcome: dict[str, Any], exit_code: int | None, signum: int | None
) -> str | None:
    """Why the run hit its memory limit, when the evidence says it did; None otherwise."""
    limit = f"memory limit of {run.limits['memory_mb']} MB exceeded"
    if outcome.get("exception") == "MemoryError":
        return f"{limit} (MemoryError)"
    if run.oom_killed and (signum or exit_code):
        return f"{limit} (killed by the cgroup)"
    if run.native and (signum or exit_code) and b"std::bad_alloc" in run.stderr:
        return f"{limit} (std::bad_alloc)"
    return None


_KILLED_OUTSIDE = "killed by SIGKILL from outside the sandbox (not by a limit of the run)"
_SETUP_FAILED = "sandbox setup failed"


def _infra_reason(status: Status, error: str | None) -> str | None:
    """Why an INFRA_ERROR run failed, as the client's bounded restart reasons name it."""
    if status is not Status.INFRA_ERROR or error is None:
        return None
    return "run_killed_outside" if error == _KILLED_OUTSIDE else "run_setup_failed"


# What libstdc++ and glibc print before abort(): a native run, PID 1 of its namespace, cannot die of
# the SIGABRT abort() raises (init ignores signals from inside), so abort() ends in the SIGSEGV of
# its last resort, and these lines say what really happened.
_ABORTED = re.compile(rb"terminate called|Assertion .* failed|stack smashing detected")


def _killed_by(signum: int, aborted: bool = False) -> tuple[Status, str]:
    """The status of a run whose init died of `signum`, once the sandbox's own kills and the
    run's limits are ruled out.

    A run is PID 1 of its PID namespace, so nothing inside it can SIGKILL it: such a kill came from
    outside (the host's OOM killer, an operator, a container runtime) and says nothing of the
    program. Other signals are the program's own faults (SIGSEGV, SIGBUS, SIGFPE, ...).
    """
    if signum == signal.SIGKILL:
        return Status.INFRA_ERROR, _KILLED_OUTSIDE
    if aborted and signum == signal.SIGSEGV:
        return Status.RUNTIME_ERROR, "aborted (an uncaught exception or a failed assertion)"
    return Status.RUNTIME_ERROR, f"killed by signal {signal.Signals(signum).name}"


def _become_pid_namespace_init() -> None:
    """Continue as PID 1 of the PID namespace just unshared; the original process only waits.

    Each run's PID namespace is unshared from, and the server returns with setns to, its own
    active one: that needs privilege over it, which a user namespace has only over namespaces it
    owns, not over the host's.
    """
    pid = os.fork()
    if pid:
        os.close(CONTROL_FD)
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    _linux.set_pdeathsig(signal.SIGKILL)


def _address_space() -> int:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def main() -> None:
    """Entry point: `python -I -S -c ...` with the config as JSON in argv[1]."""
    config = json.loads(sys.argv[1])
    if config.get("cpus"):
        os.sched_setaffinity(0, config["cpus"])  # first, so every process of the slot inherits it
    if config["control_fd"] != CONTROL_FD:  # the client's descriptor may already be that number
        os.dup2(config["control_fd"], CONTROL_FD)
        os.close(config["control_fd"])
    channel = socket.socket(fileno=CONTROL_FD)
    server = Server(config)
    try:
        server.setup()
        server.verify()
    except Exception as error:
        _protocol.send(channel, {"ready": False, "error": f"{type(error).__name__}: {error}"})
        sys.exit(1)
    server.serve(channel)
