"""The fork server of one sandbox slot.

Started once per slot as a clean, single-threaded `python -I -S` with the allowed imports
preloaded, it walls itself into private mount, network and UTS namespaces (and a user namespace
when not root), then serves runs: for each request it starts the run's processes, each in a fresh
PID namespace, supervises them (`sandbox._server_supervise`) and answers with what it observed (a run's
descriptors and processes are `sandbox._server_run`'s). A run pays neither Python's start-up nor numpy's
import.

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
import signal
import socket
import sys
import time
from collections.abc import Callable
from typing import Any, cast

from evalfarm.limits import Limits
from evalfarm.sandbox import (
    _binaries,
    _cgroups,
    _child,
    _judge_host,  # noqa: F401 - preloaded: the judge host runs it
    _landlock,
    _linux,
    _native,
    _payload,
    _probe,
    _protocol,
    _rootfs,
    _seccomp,
    _session_child,  # noqa: F401 - preloaded: sessions run it
    _shell_child,  # noqa: F401 - preloaded: shell sessions run it
    bridge,  # noqa: F401 - preloaded: runs that call or judge use it
    languages,
)
from evalfarm.sandbox._protocol import Kind, RequestHeader
from evalfarm.sandbox._server_run import JudgeHost, Run
from evalfarm.sandbox._server_supervise import Member

CONTROL_FD = 200  # the client's socket is moved here, clear of the run's descriptors
RUN_UID = 1000  # a run's uid inside the user namespace, when the worker is not root
CLEAR_TIMEOUT_S = 10.0  # how long an earlier server's runs may take to end before this one fails


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
        self.native_arguments: dict[tuple[Any, ...], list[str]] = {}  # (limits, ...) -> argv
        self.runtimes: dict[str, int] = {}  # a runtime's path -> its executable's descriptor
        # A run's environment, as a plain dict: os.environ is re-encoded on every use.
        self.environment = dict(os.environ)
        cache = config.get("binary_cache") or {}
        self.binaries = _binaries.Binaries(cache.get("entries", 32), cache.get("bytes", 256 << 20))
        self.judge_host = JudgeHost(self)
        self.sessions: set[int] = set()  # pids of the sessions this server forked, until reaped

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
        files.update({path: path for path in languages.system_paths()})  # a runtime's configuration
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
        _child.install_stdio()
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
        if self.cgroups is not None:  # the slot's earlier server's runs: gone before this one's start
            self.cgroups.clear(CLEAR_TIMEOUT_S)

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
                {"kind": Kind.RUN, "limits": limits, "mode": "program"}, {"payload": payload}
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
            received = time.monotonic()
            named = dict(zip(request.pop("fds", []), fds, strict=False))
            try:
                header, outputs = self.handle(cast(RequestHeader, request), named)
            except Exception as error:
                header, outputs = {"server_error": f"{type(error).__name__}: {error}"}, []
            finally:
                for fd in fds:
                    os.close(fd)
            if self.config.get("trace"):
                stamps = {"server_received": received, "server_replied": time.monotonic()}
                header["trace"] = {**stamps, **header.get("trace", {})}
            try:
                _protocol.send(channel, header, outputs)
            finally:
                for fd in outputs:
                    os.close(fd)

    def handle(self, request: RequestHeader, fds: dict[str, int]) -> tuple[dict[str, Any], list[int]]:
        """One request, by its kind (`_protocol.Kind`): a run (a Python program or a compiled one), a
        judged run (a Python candidate serving calls and a judge calling it), an interactive run, or
        a session started."""
        self._reap_sessions()
        kind = Kind(request["kind"])
        if kind is Kind.SESSION:
            return self._session(request, fds)
        if kind is Kind.JUDGED:
            return Run(self, request["limits"]).judged(fds, request["judge"])
        if kind is Kind.INTERACTIVE:
            return self._interactive(request, fds)
        if request.get("native"):
            return self._native(request, fds)
        run = Run(self, request["limits"])
        return run.program(request["mode"], fds, request.get("reply_bytes", 0), bool(request.get("fetch")))

    def _session(self, request: RequestHeader, fds: dict[str, int]) -> tuple[dict[str, Any], list[int]]:
        """Fork a session's interpreter (`sandbox._session_child`), or its shells' process
        (`sandbox._shell_child`, `session_kind` "bash"), and hand back, unsupervised, its channel and
        a pidfd: its manager (`sandbox.session_interpreter`) sends it cells and ends it. It joins the
        cgroups whose `cgroup.procs` descriptors came with the request (the session's own, so its
        memory and processes are capped across its whole life), else none; a `workspace` directory
        sent with it is mounted at /workspace (see `sandbox._child`)."""
        ours, theirs = _protocol.channel_pair()
        stdio = _payload.empty_memfd("evalfarm-session-stdio")
        mode = "shell" if request.get("session_kind") == "bash" else "session"
        plan = self.plan(dict(request["limits"], cpu_s=None), mode, cgroup=False)
        plan["cgroup_fds"] = [fds[name] for name in sorted(fds) if name.startswith("cgroup")]
        if "workspace" in fds:
            plan["workspace_fd"] = fds["workspace"]
            plan["workspace_mode"] = request.get("workspace_mode", "copy")
            plan["writable"] = ("/tmp", _rootfs.WORKSPACE)
        try:
            member = self.fork("session", plan, {0: stdio, 1: stdio, 2: stdio, 3: theirs.fileno()})
        finally:
            theirs.close()
            os.close(stdio)
        self.sessions.add(member.pid)
        return {"pid": member.pid, "fds": ["channel", "pidfd"]}, [ours.detach(), os.pidfd_open(member.pid)]

    def _reap_sessions(self) -> None:
        """Collect the sessions that ended (their manager killed them, or they exited)."""
        for pid in list(self.sessions):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                self.sessions.discard(pid)

    def _native(self, request: RequestHeader, fds: dict[str, int]) -> tuple[dict[str, Any], list[int]]:
        """Compile the payload's source unless its binary is held, then run the binary."""
        if not self.config.get("launcher"):
            return self._no_launcher(), []
        native = request["native"]
        binary_fd, compiled, failed = self._binary(native, fds)
        if failed is not None:
            return failed
        try:
            executable = self.runtime(native["runtime"]) if native.get("runtime") else binary_fd
        except OSError as error:
            return {"unavailable": f"the runtime {native['runtime']}: {error.strerror}"}, []
        header, outputs = Run(self, request["limits"]).native(
            executable, native["argv"], fds, native, binary_fd, request.get("files")
        )
        if native.get("compile") is not None:
            header["compile"] = compiled
        return header, outputs

    def _interactive(self, request: RequestHeader, fds: dict[str, int]) -> tuple[dict[str, Any], list[int]]:
        """A program and an interactor talking over two pipes: compile whichever is native (the
        program's failed compile is its own; the interactor's is reported as such), then run both."""
        binaries: dict[str, int] = {}
        compiled: dict[str, Any] = {}
        members = {"candidate": request["candidate"], "interactor": request["interactor"]}
        for role, payload in (("candidate", "payload"), ("interactor", "interactor_payload")):
            native = members[role].get("native")
            if native is None:
                continue
            if not self.config.get("launcher"):
                return self._no_launcher(), []
            binaries[role], compiled[role], failed = self._binary(native, {"payload": fds[payload]})
            if failed is not None:
                failed[0]["compile_failed_role"] = role
                return failed
            if native.get("runtime"):
                try:
                    self.runtime(native["runtime"])
                except OSError as error:
                    return {"unavailable": f"the runtime {native['runtime']}: {error.strerror}"}, []
        header, outputs = Run(self, request["limits"]).interactive(fds, request, binaries)
        if "candidate" in compiled:
            header["compile"] = compiled["candidate"]
        if "interactor" in compiled:
            header["interactor_compile"] = compiled["interactor"]
        return header, outputs

    def _binary(
        self, native: dict[str, Any], fds: dict[str, int]
    ) -> tuple[int, dict[str, Any], tuple[dict[str, Any], list[int]] | None]:
        """The build of a native program: held, or compiled now from its payload's source (and then
        held); for a language with no compile, its source (`fds["source"]`) sealed and held as it is;
        the compile's facts; the failed compile's reply, if it failed."""
        binary_fd = self.binaries.get(native["key"])
        compiled: dict[str, Any] = {"status": "ok", "cached": binary_fd is not None, "wall_s": 0.0}
        if binary_fd is None and native.get("compile") is None:
            size = os.fstat(fds["source"]).st_size
            binary_fd = _binaries.keep(fds["source"], size)
            self.binaries.put(native["key"], binary_fd, size)
        elif binary_fd is None:
            run = Run(self, native["compile"]["limits"])
            failed, binary_fd, facts = run.compile(
                {"payload": fds["payload"]}, native["compile"].get("memory")
            )
            if failed is not None:
                return -1, compiled, failed
            compiled.update(wall_s=facts["wall_s"], binary_bytes=facts["binary_bytes"])
            self.binaries.put(native["key"], binary_fd, facts["binary_bytes"])
        return binary_fd, compiled, None

    def runtime(self, path: str) -> int:
        """A descriptor of a runtime's executable (the JVM, node, pypy3), opened once per server."""
        fd = self.runtimes.get(path)
        if fd is None:
            fd = self.runtimes[path] = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        return fd

    def _no_launcher(self) -> dict[str, Any]:
        return {"unavailable": f"native runs are off ({self.config.get('launcher_error') or 'no launcher'})"}

    # -- what runs need ---------------------------------------------------------------------

    def plan(
        self, limits: dict[str, Any], mode: str, cgroup: bool = True, memory: str | None = None
    ) -> dict[str, Any]:
        """What a forked run's child needs to put up its walls (`sandbox._child`); `memory`
        "cgroup": no address-space cap where the slot's cgroup caps the run (a compiler that is a
        runtime reserving address space: javac, go)."""
        uncapped = memory == "cgroup" and self.cgroups is not None and cgroup
        return {
            "mode": mode,
            "uid": self.uid,
            "user_namespace": self.user_namespace,
            "limits": limits,
            "landlock_abi": self.landlock_abi,
            "seccomp_filter": self.seccomp_filter,
            "address_space_bytes": -1
            if uncapped
            else self.baseline_address_space + (limits["memory_mb"] << 20),
            "max_fd": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            "trace": bool(self.config.get("trace")),
            "cgroup_fds": self.cgroups.procs_fds if self.cgroups and cgroup else [],
        }

    def start(self, role: str, begin: Callable[[], int], native: bool = False) -> Member:
        """Start one process of a run, PID 1 of a new PID namespace: `begin()` forks or spawns it and
        gives its pid. Every process of every run starts here, and is then supervised by
        `sandbox._server_supervise` until its end."""
        _linux.unshare(_linux.CLONE_NEWPID)
        started = time.monotonic()
        try:
            pid = begin()
        finally:
            _linux.setns(self.pid_ns_fd, _linux.CLONE_NEWPID)  # so the next unshare may create another
        return Member(role, pid, started, native=native)

    def fork(self, role: str, plan: dict[str, Any], fds: dict[int, int]) -> Member:
        """A Python process of a run (this interpreter, forked), its descriptors at `fds`."""

        def begin() -> int:
            pid = os.fork()
            if pid == 0:
                _child.child_main(plan, fds)  # puts up the walls, runs the program; never returns
            return pid

        return self.start(role, begin)

    def spawn_native(
        self,
        limits: dict[str, Any],
        binary_fd: int,
        argv: list[str],
        fds: tuple[int, ...],
        attached: tuple[int, ...] = (),
        role: str = "candidate",
        cgroup: bool = True,
        language: dict[str, Any] | None = None,
        stage_fd: int | None = None,
        links: tuple[str, ...] = (),
    ) -> Member:
        """A compiled program's process (or a runtime's, its program staged from `stage_fd`),
        through the launcher (a vfork and two small execs, no fork of this interpreter), under the
        same walls; `links` name its first attachments in its /tmp (its files)."""
        cgroup_fds = self.cgroups.procs_fds if self.cgroups and cgroup else []
        facts = {name: (language or {}).get(name) for name in ("memory", "threads", "stage")}
        key = (json.dumps(limits, sort_keys=True), len(cgroup_fds), *facts.values())
        launcher_argv = self.native_arguments.get(key)
        if launcher_argv is None:  # a job's tests share limits: built once for them all
            launcher_argv = _native.launcher_argv(
                limits, self.uid, self.landlock_abi, self.seccomp_code, len(cgroup_fds), facts
            )
            if len(self.native_arguments) >= 8:
                self.native_arguments.clear()
            self.native_arguments[key] = launcher_argv
        return self.start(
            role,
            lambda: _native.spawn(
                launcher_argv, argv, self.environment, fds, binary_fd, cgroup_fds, attached, stage_fd, links
            ),
            native=True,
        )


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
