"""The fork server of one sandbox slot.

Started once per slot as a clean, single-threaded `python -I -S` with the allowed imports
preloaded, it walls itself into private mount, network and UTS namespaces (and a user namespace
when not root), then serves runs: for each request it starts the run's processes, each in a fresh
PID namespace, supervises them (`sandbox._supervise`) and answers with what it observed. A run pays
neither Python's start-up nor numpy's import.

It never holds a job's bytes: code, input and tests arrive in memfds it passes to the run's
processes unread, and output leaves in memfds it fills by splicing. Every run is forked from this
process, so no run can find another job's data in its memory. Nor does it judge: the verdict is
the client's (`sandbox.verdict`), from the facts this server reports.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import json
import os
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
    _judge_host,  # noqa: F401 - preloaded: the judge host runs it
    _landlock,
    _linux,
    _native,
    _payload,
    _probe,
    _protocol,
    _rootfs,
    _runner,
    _seccomp,
    bridge,  # noqa: F401 - preloaded: runs that call or judge use it
)
from sandbox._supervise import Capture, Host, Member, supervise
from sandbox.limits import Limits

CONTROL_FD = 200  # the client's socket is moved here, clear of the run's descriptors
RUN_UID = 1000  # a run's uid inside the user namespace, when the worker is not root
MAX_BINARY_BYTES = 64 << 20  # a compiled program larger than this is not kept
JUDGE_OUTPUT_BYTES = 64 << 10  # what a judge prints is kept up to this, then dropped


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
        self.sink = -1  # /dev/null, where output past a dropping cap goes
        self.cgroups: _cgroups.SlotCgroups | None = None
        self.seccomp_code = b""  # the filter's bytes, for the launcher's command line
        self.native_arguments: tuple[dict[str, Any], list[str]] | None = None  # limits -> argv
        # A run's environment, as a plain dict: os.environ is re-encoded on every use.
        self.environment = dict(os.environ)
        cache = config.get("binary_cache") or {}
        self.binaries = _binaries.Binaries(cache.get("entries", 32), cache.get("bytes", 256 << 20))
        self.judge_host = JudgeHost(self)

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
        self.sink = os.open("/dev/null", os.O_WRONLY | os.O_CLOEXEC)
        self._setup_cgroups()
        launcher = self.config.get("launcher")
        files = {_native.LAUNCHER: launcher} if launcher else {}
        moved = _rootfs.build(
            self.config["python_dirs"], self.user_namespace, files, self.config.get("site_dirs")
        )
        _rootfs.follow(moved)
        self._setup_native(launcher)
        self.layers["filesystem"] = (
            "on (read-only skeleton root, private /proc and /tmp per run, installed packages allowlisted)"
        )
        self._setup_seccomp()
        self._setup_landlock()
        _runner.install_stdio()
        # Exit handlers the preloaded modules registered are the server's, not a program's: a run
        # runs only the handlers its own program registers.
        atexit._clear()
        gc.freeze()  # runs then never scan (and so never copy) the preloaded objects
        self.layers["rlimits"] = "on (as, cpu, fsize, nofile, nproc, core=0, stack; locked)"
        self.layers["memory"] = "on (runs get their code and input after the fork; no job's bytes here)"

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
            self.layers["seccomp"] = (
                f"on ({len(_seccomp.DENIED)} calls denied, namespace clones, AF_VSOCK, rlimit changes)"
            )
        else:
            self.layers["seccomp"] = f"off (no filter for {_linux.MACHINE})"

    def _setup_landlock(self) -> None:
        self.landlock_abi = abi = _landlock.abi_version()
        if abi:
            self.layers["landlock"] = f"on (ABI {abi}: writes only in /tmp, no TCP, scoped)"
        else:
            self.layers["landlock"] = "off (not supported by this kernel)"

    def verify(self) -> None:
        """Run the probe program; raise when a layer reported on does not hold."""
        limits = Limits(memory_mb=256, output_bytes=4096, file_size_mb=1, workdir_mb=1, processes=8).to_dict()
        payload = _payload.memfd(_payload.pack({}, _probe.PROBE.encode()))
        try:
            header, fds = self.handle(
                {"kind": "run", "limits": limits, "mode": "program"}, {"payload": payload}
            )
        finally:
            os.close(payload)
        outputs = dict(zip(header["fds"], fds, strict=True))
        stdout = _payload.read_fd(outputs["stdout"])
        stderr = _payload.read_fd(outputs["stderr"])
        for fd in fds:
            os.close(fd)
        failed = _probe.failed_layers(self.layers, stdout)
        if failed:
            raise RuntimeError(
                f"isolation check failed for {', '.join(failed)}: {stderr.decode(errors='replace')[-500:]}"
            )

    # -- serving ----------------------------------------------------------------------------

    def serve(self, channel: socket.socket) -> None:
        """Answer run requests until the client closes the channel."""
        try:
            _protocol.send(channel, {"ready": True, "layers": self.layers, "pid": os.getpid()})
        except OSError:  # the client went away before the slot was ready
            return
        while True:
            try:
                request, fds = _protocol.recv(channel)
            except (_protocol.ProtocolError, OSError):  # the client went away
                return
            named = dict(zip(request.pop("fds", []), fds, strict=False))
            try:
                header, outputs = self.handle(request, named)
            except Exception as error:
                header, outputs = {"server_error": f"{type(error).__name__}: {error}"}, []
            finally:
                for fd in fds:
                    os.close(fd)
            try:
                _protocol.send(channel, header, outputs)
            finally:
                for fd in outputs:
                    os.close(fd)

    def handle(self, request: dict[str, Any], fds: dict[str, int]) -> tuple[dict[str, Any], list[int]]:
        """One request: a run (`kind` "run", a Python program or a compiled one) or a judged run
        (`kind` "judged": a Python candidate serving calls and a judge calling it)."""
        if request["kind"] == "judged":
            return _Run(self, request["limits"]).judged(fds, request["judge"])
        if request.get("native"):
            return self._native(request, fds)
        run = _Run(self, request["limits"])
        return run.program(request["mode"], fds, request.get("reply_bytes", 0), bool(request.get("fetch")))

    def _native(self, request: dict[str, Any], fds: dict[str, int]) -> tuple[dict[str, Any], list[int]]:
        """Compile the payload's source unless its binary is held, then run the binary."""
        if not self.config.get("launcher"):
            return {
                "unavailable": f"native runs are off ({self.config.get('launcher_error') or 'no launcher'})"
            }, []
        native = request["native"]
        binary_fd = self.binaries.get(native["key"])
        compiled: dict[str, Any] = {"status": "ok", "cached": binary_fd is not None, "wall_s": 0.0}
        if binary_fd is None:
            failed, binary_fd, compile_facts = _Run(self, native["compile"]["limits"]).compile(fds)
            if failed is not None:
                return failed
            compiled.update(wall_s=compile_facts["wall_s"], binary_bytes=compile_facts["binary_bytes"])
            self.binaries.put(native["key"], binary_fd, compile_facts["binary_bytes"])
        header, outputs = _Run(self, request["limits"]).native(binary_fd, native["argv"], fds)
        header["compile"] = compiled
        return header, outputs

    # -- what runs need ---------------------------------------------------------------------

    def plan(self, limits: dict[str, Any], mode: str, cgroup: bool = True) -> dict[str, Any]:
        """What a forked run's child needs to put up its walls (`sandbox._runner`)."""
        return {
            "mode": mode,
            "uid": self.uid,
            "user_namespace": self.user_namespace,
            "limits": limits,
            "landlock_abi": self.landlock_abi,
            "seccomp_filter": self.seccomp_filter,
            "address_space_bytes": self.baseline_address_space + (limits["memory_mb"] << 20),
            "max_fd": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            "cgroup_fds": self.cgroups.procs_fds if self.cgroups and cgroup else [],
        }

    def fork(self, role: str, plan: dict[str, Any], fds: dict[int, int]) -> Member:
        """Fork a Python run's child, PID 1 of a new PID namespace, its descriptors at `fds`."""
        _linux.unshare(_linux.CLONE_NEWPID)
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            _runner.child_main(plan, fds)
        _linux.setns(self.pid_ns_fd, _linux.CLONE_NEWPID)  # so the next unshare may create another
        return Member(role, pid, started)

    def spawn_native(
        self, limits: dict[str, Any], binary_fd: int, argv: list[str], fds: tuple[int, ...]
    ) -> Member:
        """Start a binary through the launcher (a vfork and two small execs, no fork of this
        interpreter), PID 1 of a new PID namespace."""
        cgroup_fds = self.cgroups.procs_fds if self.cgroups else []
        if self.native_arguments is None or self.native_arguments[0] != limits:
            arguments = _native.launcher_argv(
                limits, self.uid, self.landlock_abi, self.seccomp_code, len(cgroup_fds)
            )
            self.native_arguments = (limits, arguments)
        _linux.unshare(_linux.CLONE_NEWPID)
        started = time.monotonic()
        try:
            pid = _native.spawn(self.native_arguments[1], argv, self.environment, fds, binary_fd, cgroup_fds)
        finally:
            _linux.setns(self.pid_ns_fd, _linux.CLONE_NEWPID)
        return Member("candidate", pid, started, native=True)


class JudgeHost:
    """The slot's judge host (`sandbox._judge_host`): started for the first judged run, and again
    whenever it died or was killed for a run's limit."""

    # Its own walls, as any run's; no CPU rlimit (it lives for many jobs: each job's CPU time is
    # reported and judged against that job's limit) and an address space it sets per job below.
    LIMITS = Limits(memory_mb=8192, workdir_mb=8, file_size_mb=8, open_files=256, processes=8).to_dict()

    def __init__(self, server: Server) -> None:
        self.server = server
        self.pid: int | None = None
        self.pidfd = -1
        self.channel: socket.socket | None = None

    def ready(self) -> None:
        """Make sure a host is running and waiting for a job; start one if not."""
        if self.pid is not None and not self._gone():
            return
        self._forget()
        ours, theirs = _protocol.channel_pair()
        quiet = _payload.memfd(b"", "evalfarm-quiet")  # its own output outside a job: nowhere
        plan = self.server.plan(dict(self.LIMITS, cpu_s=None), "judge_host", cgroup=False)
        try:
            member = self.server.fork("judge", plan, {0: quiet, 1: quiet, 2: quiet, 3: theirs.fileno()})
        finally:
            theirs.close()
            os.close(quiet)
        self.pid, self.channel = member.pid, ours
        self.pidfd = os.pidfd_open(member.pid)
        ours.settimeout(30)
        hello, _ = _protocol.recv(ours)  # walls up, or why not
        ours.settimeout(None)
        if not hello.get("ready"):
            self._forget()
            raise RuntimeError(f"the judge host did not start: {hello.get('setup_error', hello)}")

    def submit(self, job: dict[str, int], memory_mb: int, key: str) -> Host:
        """Hand the host one job's descriptors (`key`: its problem's, which picks its judge); the Host
        the run's supervision watches."""
        assert self.channel is not None and self.pid is not None
        names = list(job)
        request = {"fds": names, "memory_mb": memory_mb, "key": key}
        _protocol.send(self.channel, request, [job[n] for n in names])
        return Host("judge", self.pid, self.pidfd, self.channel, time.monotonic())

    def after(self, host: Host) -> None:
        """Once a job is over: let the host go when it died or was killed for the run's limits."""
        if host.wait_status is not None:
            self.pid = None  # reaped by the supervision
        if host.reply is None:
            self._forget()

    def _gone(self) -> bool:
        assert self.pid is not None
        readable, _, _ = select.select([self.pidfd], [], [], 0)
        return bool(readable)

    def _forget(self) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = None
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1
        if self.channel is not None:
            self.channel.close()
            self.channel = None


class _Run:
    """One run's descriptors, processes and supervision; what it observed, as a reply."""

    def __init__(self, server: Server, limits: dict[str, Any]) -> None:
        self.server = server
        self.limits = limits
        self.owned: list[int] = []  # descriptors to close once the run is over
        self.captures: list[Capture] = []
        self.outputs: dict[str, int] = {}  # name -> memfd handed to the client

    # -- kinds of run -----------------------------------------------------------------------

    def program(
        self, mode: str, fds: dict[str, int], reply_bytes: int, fetch: bool
    ) -> tuple[dict[str, Any], list[int]]:
        """A Python program (`mode`: program, or call with its value on REPLIES_FD)."""
        child = self._standard_fds(fds)
        if mode == "call":
            child[_runner.REPLIES_FD] = self._capture("reply", reply_bytes, reason="reply")
        if fetch:
            child[_runner.FILES_FD] = self._output_memfd("files")
        member = self._start(
            lambda: self.server.fork("candidate", self.server.plan(self.limits, mode), child)
        )
        return self._finish([member], "candidate")

    def native(
        self, binary_fd: int, argv: list[str], fds: dict[str, int]
    ) -> tuple[dict[str, Any], list[int]]:
        """A compiled program's binary, on the job's stdin."""
        child = self._standard_fds(fds)
        order = (child[0], child[1], child[2], child[_runner.RESULT_FD])
        member = self._start(lambda: self.server.spawn_native(self.limits, binary_fd, argv, order))
        return self._finish([member], "candidate")

    def compile(
        self, fds: dict[str, int]
    ) -> tuple[tuple[dict[str, Any], list[int]] | None, int, dict[str, Any]]:
        """The compiler on the payload's source: (the failure's reply, or None), the binary's sealed
        memfd and the compile's facts."""
        child = self._standard_fds(fds)
        binary = _binaries.new_memfd()
        child[_runner.FILES_FD] = binary
        member = self._start(
            lambda: self.server.fork("compile", self.server.plan(self.limits, "compile"), child)
        )
        header, outputs = self._finish([member], "compile")
        facts = header["members"]["compile"]
        size = os.fstat(binary).st_size
        facts["binary_bytes"] = size
        if facts["exit_code"] == 0 and facts["ended_by"] is None and 0 < size <= MAX_BINARY_BYTES:
            for fd in outputs:
                os.close(fd)
            try:
                return None, _binaries.keep(binary, size), facts
            finally:
                os.close(binary)
        os.close(binary)
        header["compile_failed"] = True
        return (header, outputs), -1, facts

    def judged(self, fds: dict[str, int], judge: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
        """A candidate serving calls, and the slot's judge host calling it over two pipes for this
        job; the judge's end of the job is the run's."""
        requests_r, requests_w = self._pipe()
        replies_r, replies_w = self._pipe()
        candidate_fds = self._standard_fds(fds)
        candidate_fds.update({_runner.REQUESTS_FD: requests_r, _runner.REPLIES_FD: replies_w})
        job = {
            "payload": fds["judge_payload"],
            "requests": requests_w,
            "replies": replies_r,
            "report": self._output_memfd("judge_report"),
            "output": self._capture("judge_output", JUDGE_OUTPUT_BYTES, drop=True),
        }
        hosts = self.server.judge_host
        hosts.ready()
        plan = self.server.plan(self.limits, "serve")
        candidate = self._start(lambda: self.server.fork("candidate", plan, candidate_fds), keep_open=True)
        try:
            host = hosts.submit(job, self.limits["memory_mb"], str(judge["key"]))
        finally:
            self._close_owned()
        try:
            return self._finish([candidate], "judge", host)
        finally:
            hosts.after(host)

    # -- descriptors ------------------------------------------------------------------------

    def _standard_fds(self, fds: dict[str, int]) -> dict[int, int]:
        """stdin (the job's memfd, or an empty one), stdout and stderr captured, the report and
        the payload."""
        child = {
            0: fds["stdin"] if "stdin" in fds else self._empty_stdin(),
            1: self._capture("stdout", self.limits["output_bytes"]),
            2: self._capture("stderr", self.limits["output_bytes"]),
            _runner.RESULT_FD: self._output_memfd("report"),
        }
        if "payload" in fds:
            child[_runner.PAYLOAD_FD] = fds["payload"]
        return child

    def _empty_stdin(self) -> int:
        fd = _payload.empty_memfd("evalfarm-stdin")
        self.owned.append(fd)
        return fd

    def _pipe(self) -> tuple[int, int]:
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        self.owned += [read_end, write_end]
        return read_end, write_end

    def _output_memfd(self, name: str) -> int:
        fd = _payload.empty_memfd(f"evalfarm-{name}")
        self.outputs[name] = fd
        return fd

    def _capture(self, name: str, cap: int, reason: str = "output", drop: bool = False) -> int:
        """A pipe whose read end this server drains into a memfd; the write end, for the child."""
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        self.owned.append(write_end)
        memfd = self._output_memfd(name) if not drop else _payload.empty_memfd(f"evalfarm-{name}")
        self.captures.append(Capture(name, read_end, memfd, cap, reason=reason, drop=drop))
        return write_end

    # -- processes --------------------------------------------------------------------------

    def _start(self, start: Any, keep_open: bool = False) -> Member:
        """Start the run's member, then close this server's copies of the ends that are its (so a
        capture sees end-of-file when it is gone), unless others still need them."""
        cgroups = self.server.cgroups
        if cgroups:
            cgroups.prepare(self.limits["memory_mb"], self.limits["workdir_mb"], self.limits["processes"])
        try:
            return start()
        finally:
            if not keep_open:
                self._close_owned()

    def _close_owned(self) -> None:
        for fd in self.owned:
            os.close(fd)
        self.owned = []

    def _finish(
        self, members: list[Member], main: str, host: Host | None = None
    ) -> tuple[dict[str, Any], list[int]]:
        """Supervise the members to their end; the reply's header and the output memfds."""
        started = min(member.started for member in members)
        deadline = started + self.limits["wall_s"]
        try:
            stopped_for = supervise(members, self.captures, deadline, main, self.server.sink, host)
        finally:
            for capture in self.captures:
                os.close(capture.read_fd)
                if capture.drop:
                    os.close(capture.memfd)
        cgroups = self.server.cgroups
        oom_killed = bool(cgroups and cgroups.oom_killed())
        cgroup_cpu_s = cgroups.cpu_s() if cgroups else None
        facts = {}
        for member in members:
            observed = member.facts()
            facts[member.role] = dict(observed, ended_by=stopped_for or observed["ended_by"])
            if member.role != "judge":  # the one process of the run in the slot's cgroups
                facts[member.role]["oom_killed"] = oom_killed
                if cgroup_cpu_s is not None:  # its children's CPU too, reaped or not
                    facts[member.role]["cpu_s"] = max(facts[member.role]["cpu_s"], cgroup_cpu_s)
        if host is not None:
            facts[host.role] = dict(host.facts(), ended_by=stopped_for or host.ended_by)
        truncated = {capture.name: capture.truncated for capture in self.captures}
        names = list(self.outputs)
        return {"members": facts, "truncated": truncated, "fds": names}, [self.outputs[n] for n in names]


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
