"""The worker's handle on one sandbox slot: starts the slot's fork server and sends it runs."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import fcntl
import functools
import importlib.util
import json
import logging
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Any

from evalfarm.limits import Limits
from evalfarm.sandbox import _client_request, _native, _payload, _protocol, languages
from evalfarm.sandbox._child import RUN_ENVIRONMENT
from evalfarm.sandbox._client_request import CallSpec, InteractorSpec, JudgeRun, JudgeSpec, Request
from evalfarm.sandbox.run_result import RunResult
from evalfarm.status import Status

__all__ = ["CallSpec", "JudgeSpec", "Sandbox", "SandboxConfig", "SandboxError"]

log = logging.getLogger("evalfarm.sandbox")

# The fork server runs `python -I -S`: no site, so no editable install's import hook. It finds the
# farm's packages through a finder of its own, given where each one's folder is (`_package_parents`).
_BOOT = """import sys
from importlib.machinery import PathFinder
PARENTS = {parents!r}
class Packages:
    @staticmethod
    def find_spec(name, path=None, target=None):
        return PathFinder.find_spec(name, [PARENTS[name]]) if name in PARENTS else None
sys.meta_path.append(Packages)
sys.path[:0] = {paths!r}
from evalfarm.sandbox._server import main
main()
"""

# Imported once by every fork server, so runs find them already in memory. Not `threading` (nor
# `logging`, which imports it): a module that registers an after-fork hook makes every run pay for
# it, threading's about 50 page copies; a program that starts threads imports it itself.
DEFAULT_PRELOAD = (
    "collections", "itertools", "functools", "heapq", "bisect", "math", "cmath", "re",
    "json", "string", "random", "fractions", "decimal", "statistics", "typing", "dataclasses",
    "copy", "operator", "array", "traceback", "atexit", "enum", "struct", "time",
    "datetime", "textwrap", "unittest",
)  # fmt: skip
# Imported as well by a slot's second server, started when a program first names one of them.
# Forking an interpreter with numpy in it costs every run about half a millisecond more (its
# pages are copied and torn down with each child), so programs that do not name it run without.
DEFAULT_EXTRA_PRELOAD = ("numpy",)
# Native requests a sandbox keeps built: a job's program, its checker, and the next job's.
NATIVE_REQUESTS_KEPT = 4
STOP_GRACE_S = 2.0  # a server told to stop (its channel closed) has this long to exit, then is killed


class SandboxError(Exception):
    """The sandbox itself failed (not the program): it could not start or lost its server."""


@dataclasses.dataclass(frozen=True)
class SandboxConfig:
    """How slots are set up on this machine."""

    preload: tuple[str, ...] = DEFAULT_PRELOAD
    extra_preload: tuple[str, ...] = DEFAULT_EXTRA_PRELOAD
    uid_base: int = 1_990_000  # runs of slot n use the first free uid from here when root
    uid_count: int = 4096
    lock_dir: str = "/run/evalfarm/slots"
    # Directories put first on the servers' import path: where modules preloaded for programs, beyond
    # the stdlib and site-packages, are found (they are imported before the server walls itself in).
    import_paths: tuple[str, ...] = ()
    # Installed packages (top-level names) runs may see; the rest of every site-packages directory
    # is hidden from them. The preloaded packages (both lists above) are always added.
    packages: tuple[str, ...] = ()
    start_timeout_s: float = 60.0
    margin_s: float = 10.0  # beyond a run's wall limit before the server is presumed lost
    # Tries of one run when the sandbox fails under it (its server dies, or something outside kills
    # it): the run is started again on a fresh server, and after this many it is an infra_error.
    run_attempts: int = 2
    # Compiled programs each server keeps (sandbox._binaries): how many, and their bytes in all.
    binary_cache_entries: int = 32
    binary_cache_mb: int = 256
    # Where the native-run launcher is built once per machine (default: sandbox._native's choice).
    cache_dir: str | None = None
    # Stamp each run's steps (`RunResult.trace`: CLOCK_MONOTONIC times of the client, the server,
    # the run's processes and the judge): bench/bench_profile.py reads them. Off in production.
    trace: bool = False


# Why a slot had to start a run (and maybe its server) again: a bounded set, for logs and metrics.
RESTART_REASONS = (
    "server_died_idle",
    "server_died_in_run",
    "server_start_failed",
    "run_killed_outside",
    "run_setup_failed",
)


class Sandbox:
    """One slot: fork servers running one program at a time, each in a fresh child.

    A slot has a base server (the stdlib preload), started by `launch`/`start`, and an extended one
    (`extra_preload` as well), started the first time a program names one of those packages. A
    program that imports one without naming it (through `importlib`, say) still works on the base
    server: it pays the import, within its own limits.
    """

    def __init__(
        self, slot: int = 0, config: SandboxConfig | None = None, cpus: set[int] | None = None
    ) -> None:
        """`cpus`: cores this slot's servers (and so its runs) are pinned to; default: the caller's."""
        self.slot = slot
        self.config = config or SandboxConfig()
        self.cpus = sorted(cpus) if cpus else None
        self.uid: int | None = None
        self._uid_lock: int | None = None
        self._base = _Server(self, "base", self.config.preload)
        self._extended = _Server(self, "extended", self.config.preload + self.config.extra_preload)
        self._wants_extended = _names_pattern(self.config.extra_preload)
        self._lock = threading.Lock()
        # The last few native requests built, by what they were built from (see _native_request).
        self._offered: tuple[dict[str, str], tuple[str, ...]] | None = None  # (layers, languages)
        self._native_requests: collections.OrderedDict[tuple[Any, ...], Request] = collections.OrderedDict()
        # Restarts by reason (RESTART_REASONS) since the last `take_restarts`.
        self.restarts: collections.Counter[str] = collections.Counter()

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def layers(self) -> dict[str, str]:
        """Isolation layer -> its state, as the base server's probe run found them."""
        return self._base.layers

    @property
    def server_process(self) -> subprocess.Popen[bytes] | None:
        """This slot's base fork server process, once launched."""
        return self._base.process

    @property
    def server_pid(self) -> int | None:
        """The pid of this slot's base fork server, while it runs."""
        return self._base.process.pid if self._base.process is not None else None

    @property
    def server_processes(self) -> list[subprocess.Popen[bytes]]:
        """Every fork server process of this slot that was launched."""
        return [s.process for s in (self._base, self._extended) if s.process is not None]

    @property
    def status_line(self) -> str:
        """One line saying which isolation layers are active."""
        layers = "; ".join(f"{k} {v}" for k, v in self.layers.items())
        return f"sandbox slot {self.slot} (layers checked by a probe run): {layers}"

    def offered_languages(self) -> tuple[str, ...]:
        """The languages this slot runs: those whose tools the machine has, less the runtimes only
        a cgroup caps where the slot has none (sandbox.languages.offered)."""
        self.start()
        layers = self.layers
        if self._offered is None or self._offered[0] is not layers:  # once per start of the server
            native = layers.get("native", "").startswith("on")
            offered = languages.offered(cgroups=layers.get("cgroups", "").startswith("on"))
            self._offered = (layers, tuple(name for name in offered if name == "python" or native))
        return self._offered[1]

    def start(self) -> None:
        """Start the base server (unless `launch` did) and wait until it reports its isolation layers."""
        if not self._base.layers:
            self._base.start()
            log.info("%s", self.status_line)

    def start_extended(self) -> dict[str, str]:
        """Start the extended server (the one sessions are forked from) and wait for it; its layers."""
        with self._lock:
            self._extended.start()
            log.info("sandbox slot %d (extended server): %s", self.slot,
                     "; ".join(f"{k} {v}" for k, v in self._extended.layers.items()))  # fmt: skip
            return self._extended.layers

    def launch(self) -> None:
        """Spawn the base server without waiting for it, so it can set up while the caller works."""
        self._base.launch()

    def run(
        self,
        code: str | bytes,
        stdin: str | bytes = b"",
        limits: Limits | None = None,
        call: CallSpec | None = None,
        files: dict[str, str] | None = None,
        fetch: list[str] | None = None,
        language: str = "python",
        judge: JudgeRun | None = None,
        headers: dict[str, bytes] | None = None,
    ) -> RunResult:
        """Run `code` as a fresh isolated process; the sandbox's own failure is an INFRA_ERROR result.

        `language`: `python`, or a compiled language of `sandbox.languages` (`cpp`): then `code` is
        source, compiled in a run of its own under the limits' `compile_*` caps unless this slot
        already holds its binary, and the binary runs under the same walls a Python program does;
        `call` is Python's only, and a compiled program's `files` and `fetch` are names in its
        working directory (a path is a ValueError), each a file it may read and write; every name
        it fetches comes back, empty when it wrote nothing there.

        `judge`: the program is a judge (a checker): its argv, its read-only attachments (opened as
        /proc/self/fd/N), its crash's exit code; `headers` go beside a compiled program's source.

        `call`: after the program ran, its function is called and what it returned comes back as
        data in `RunResult.reply`. `files` ({relative path: base64 content}) are written into the
        run's /tmp before it starts; the `fetch` paths under /tmp that exist when the program ends
        come back in `RunResult.files`.

        A fault of the sandbox under a run (its server died, or a SIGKILL from outside ended it) is
        not the program's: the run starts again, on a fresh server where needed, up to
        `run_attempts` times in all; only then is it an INFRA_ERROR.
        """
        limits = limits or Limits()
        code_bytes = code.encode() if isinstance(code, str) else code
        stdin_bytes = stdin.encode() if isinstance(stdin, str) else stdin
        language = languages.canonical(language)
        if language != "python":
            try:
                request = self._native_request(language, code_bytes, stdin_bytes, limits, judge, headers)
                if files or fetch:
                    request = _client_request.with_files(
                        request, files, fetch, request.header["native"]["stage"]
                    )
            except languages.CompilerMissing as error:
                return RunResult(status=Status.INFRA_ERROR, error=str(error), infra_reason="no_compiler")
            return self._run(self._base, request)
        request = _client_request.program(code_bytes, stdin_bytes, limits, call, files, fetch, judge)
        return self._run(self._server_for(code_bytes), request)

    def run_interactive(
        self,
        code: str | bytes,
        interactor: InteractorSpec,
        limits: Limits | None = None,
        language: str = "python",
    ) -> RunResult:
        """Run `code` talking to `interactor` over its stdin and stdout (each the other's), as an
        interactive problem is judged: the result is the program's run (its stdout went to the
        interactor), and `judge` says how the interactor ended (the env reads its protocol)."""
        limits = limits or Limits()
        code_bytes = code.encode() if isinstance(code, str) else code
        try:
            request = _client_request.interactive(code_bytes, language, interactor, limits)
        except languages.CompilerMissing as error:
            return RunResult(status=Status.INFRA_ERROR, error=str(error), infra_reason="no_compiler")
        server = (
            self._server_for(code_bytes)
            if language == "python" and interactor.language == "python"
            else self._base
        )
        return self._run(server, request)

    def run_judged(self, code: str | bytes, judge: JudgeSpec, limits: Limits | None = None) -> RunResult:
        """Run Python `code` as a candidate serving calls, judged by `judge` in a process of its own.

        The judge's code and data never enter the candidate's process, and what the candidate's
        functions return reaches the judge only as plain values. The status is the judge's
        verdict once every fact about the candidate is clean (see `sandbox.verdict.classify_judged`).
        """
        limits = limits or Limits()
        code_bytes = code.encode() if isinstance(code, str) else code
        return self._run(
            self._server_for(code_bytes + judge.data), _client_request.judged(code_bytes, judge, limits)
        )

    def open_session(
        self,
        limits: Limits,
        cgroup_procs: list[int] | tuple[int, ...] = (),
        kind: str = "python",
        workspace_fd: int | None = None,
        workspace_mode: str = "copy",
    ) -> tuple[socket.socket, int]:
        """Fork a session's interpreter (`sandbox.session_interpreter.Interpreter` drives it) on the slot's
        extended server (numpy already in memory, shared with every session): its channel and a
        pidfd. `cgroup_procs`: `cgroup.procs` descriptors of the session's own cgroups, which it
        joins. `kind` "bash": a process holding bash shells instead of a Python interpreter.
        `workspace_fd`: what the session finds at /workspace, each session writing its own copy:
        a detached mount (`workspace_mode` "overlay": the lower layer of an overlay) or a
        directory ("copy": copied into the session's tmpfs). A server lost under the request is
        started again once; then SandboxError.

        Call it from a thread that outlives the sessions: the server may be started by this call,
        and a fork server (with its sessions) dies with the thread that started it."""
        names = [f"cgroup{index}" for index in range(len(cgroup_procs))]
        sent = list(cgroup_procs)
        if workspace_fd is not None:
            names.append("workspace")
            sent.append(workspace_fd)
        header: _protocol.RequestHeader = {
            "kind": _protocol.Kind.SESSION, "limits": limits.to_dict(), "fds": names, "session_kind": kind,
            "workspace_mode": workspace_mode,
        }  # fmt: skip
        with self._lock:
            for attempt in (1, 2):
                server = self._extended
                try:
                    if server.lost():
                        server.stop()
                    server.start()
                    assert server.channel is not None
                    server.channel.settimeout(self.config.start_timeout_s)
                    _protocol.send(server.channel, header, sent)
                    reply, fds = _protocol.recv(server.channel)
                except (OSError, _protocol.ProtocolError, SandboxError) as error:
                    server.stop()
                    if attempt == 2:
                        raise SandboxError(f"could not start a session: {error}") from error
                    continue
                if "server_error" in reply:
                    for fd in fds:
                        os.close(fd)
                    raise SandboxError(f"the fork server failed: {reply['server_error']}")
                return socket.socket(fileno=fds[0]), fds[1]
        raise AssertionError("unreachable")

    def _server_for(self, code: bytes) -> _Server:
        return self._extended if self._wants_extended.search(code) else self._base

    def _run(self, server: _Server, request: Request) -> RunResult:
        with self._lock:
            for attempt in range(1, self.config.run_attempts + 1):
                result, reason = self._attempt(server, request)
                if reason is None:
                    return result
                self.restarts[reason] += 1
                log.warning(
                    "sandbox slot %d: %s (%s server, attempt %d of %d): %s", self.slot, reason,
                    server.name, attempt, self.config.run_attempts, result.error,
                )  # fmt: skip
            return dataclasses.replace(
                result, error=f"{result.error} ({self.config.run_attempts} attempts, each lost)"
            )

    def _native_request(
        self,
        language: str,
        source: bytes,
        stdin: bytes,
        limits: Limits,
        judge: JudgeRun | None = None,
        headers: dict[str, bytes] | None = None,
    ) -> Request:
        """The request of a native run, its compile part kept for the next runs: a job's tests come
        one after another with the same source and limits, alternating with its checker's runs
        (same source, headers and argv each time), and hashing the sources each time would cost
        them. The last NATIVE_REQUESTS_KEPT requests are kept."""
        argv = judge.argv if judge is not None else ()
        key = (language, source, limits, argv, tuple(sorted((headers or {}).items())))
        cached = self._native_requests.get(key)
        if cached is None:
            cached = _client_request.native(languages.LANGUAGES[language], source, b"", limits, headers, argv)
            self._native_requests[key] = cached
            while len(self._native_requests) > NATIVE_REQUESTS_KEPT:
                self._native_requests.popitem(last=False)
        else:
            self._native_requests.move_to_end(key)
        blobs = dict(cached.blobs, stdin=stdin) if stdin else cached.blobs
        if judge is not None:
            blobs = judge.with_attachments(blobs)
        return dataclasses.replace(cached, blobs=blobs)

    def _attempt(self, server: _Server, request: Request) -> tuple[RunResult, str | None]:
        """One try of a run: its result, and why it must be tried again (None when it need not)."""
        if server.lost():
            server.stop()  # it died between runs: no run was lost, but say so
            self.restarts["server_died_idle"] += 1
            log.warning("sandbox slot %d: its %s server had died; starting a new one", self.slot, server.name)
        try:
            if server is self._base:
                self.start()
            else:
                server.start()
        except (OSError, _protocol.ProtocolError, SandboxError) as error:
            server.stop()
            failure = f"sandbox failure: {error}"
            return RunResult(status=Status.INFRA_ERROR, error=failure), "server_start_failed"
        try:
            result = server.exchange(request)
        except (OSError, _protocol.ProtocolError, SandboxError) as error:
            server.stop()
            failure = f"sandbox failure: its server was lost during the run ({error})"
            return RunResult(status=Status.INFRA_ERROR, error=failure), "server_died_in_run"
        if result.status is Status.INFRA_ERROR:  # the server says why: a kill from outside, a setup
            return result, result.infra_reason or "server_died_in_run"
        return result, None

    def take_restarts(self) -> dict[str, int]:
        """Restarts by reason since the last call (for a caller's metrics); the count starts again."""
        taken, self.restarts = dict(self.restarts), collections.Counter()
        return taken

    def close(self) -> None:
        """Stop the fork servers and release the slot's uid."""
        with self._lock:
            self._base.stop()
            self._extended.stop()
            if self._uid_lock is not None:
                os.close(self._uid_lock)
                self._uid_lock = None
                self.uid = None

    def release(self) -> None:
        """Let go of a sandbox this process holds only by inheritance (a fork): our copies of its
        channels are closed, its servers are left to the process that owns them."""
        self._base.release()
        self._extended.release()
        if self._uid_lock is not None:
            os.close(self._uid_lock)  # the lock stays held through the owner's descriptor
            self._uid_lock = None

    def _claim(self) -> int | None:
        """The slot's uid when root (claimed on first use), None otherwise."""
        if os.geteuid() == 0 and self.uid is None:
            self.uid, self._uid_lock = _claim_uid(self.config, self.slot)
        return self.uid


class _Server:
    """One fork server process of a slot and the socket to it."""

    def __init__(self, sandbox: Sandbox, name: str, preload: tuple[str, ...]) -> None:
        self.sandbox = sandbox
        self.name = name
        self.preload = preload
        self.layers: dict[str, str] = {}
        self.process: subprocess.Popen[bytes] | None = None
        # The server's pidfd: it waits for (and kills) the server from any process holding it, where
        # `process.wait` works only in the process that started it (an inline pool forks after that).
        self.pidfd = -1
        self.channel: socket.socket | None = None

    def launch(self) -> None:
        if self.process is not None:
            return
        uid = self.sandbox._claim()
        config = self.sandbox.config
        ours, theirs = _protocol.channel_pair()
        server_config = {
            "uid": uid,
            # Servers of a slot take turns, but each caches the limits it wrote: one cgroup each.
            "cgroup": f"evalfarm-slot-{uid}" + ("" if self.name == "base" else f"-{self.name}"),
            "parent_pid": os.getpid(),
            "control_fd": theirs.fileno(),
            "preload": list(self.preload),
            "python_dirs": _python_dirs(),
            "site_dirs": _site_dirs(config.preload + config.extra_preload + config.packages),
            "cpus": self.sandbox.cpus,
            "trace": config.trace,
            **_launcher(self.sandbox.config.cache_dir or _native.default_cache_dir()),
            "binary_cache": {
                "entries": self.sandbox.config.binary_cache_entries,
                "bytes": self.sandbox.config.binary_cache_mb << 20,
            },
        }
        paths = [*self.sandbox.config.import_paths, *_import_paths()]
        boot = _BOOT.format(parents=_package_parents(), paths=paths)
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", boot, json.dumps(server_config)],
            pass_fds=[theirs.fileno()],
            env=RUN_ENVIRONMENT,  # the server's whole environment, inherited as is by its runs
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            cwd="/",
        )
        self.pidfd = os.pidfd_open(self.process.pid)
        theirs.close()
        self.channel = ours

    def start(self) -> None:
        """Launch (if not yet) and wait for the server's report of its isolation layers."""
        if self.layers:
            return
        self.launch()
        assert self.channel is not None
        slot = self.sandbox.slot
        self.channel.settimeout(self.sandbox.config.start_timeout_s)
        try:
            hello, _ = _protocol.recv(self.channel)
        except (OSError, _protocol.ProtocolError) as error:
            self.stop()
            raise SandboxError(f"sandbox slot {slot} ({self.name}) did not start: {error}") from error
        if not hello.get("ready"):
            self.stop()
            raise SandboxError(f"sandbox slot {slot} ({self.name}) failed to set up: {hello.get('error')}")
        self.layers = hello["layers"]

    def exchange(self, request: Request) -> RunResult:
        """Send one run (its bytes in memfds made for this attempt) and make its result."""
        assert self.channel is not None
        self.channel.settimeout(request.limits.wall_s + self._margin(request))
        names = list(request.blobs)
        sent = time.monotonic()
        fds = [_payload.memfd(request.blobs[name]) for name in names]
        try:
            _protocol.send(self.channel, dict(request.header, fds=names), fds)
        finally:
            for fd in fds:
                os.close(fd)
        reply, returned = _protocol.recv(self.channel)
        try:
            if "server_error" in reply:
                raise SandboxError(f"the fork server failed: {reply['server_error']}")
            names = reply.get("fds", [])
            outputs = {name: _payload.read_fd(fd) for name, fd in zip(names, returned, strict=True)}
        finally:
            for fd in returned:
                os.close(fd)
        if "trace" in reply:
            reply["trace"].update(client_sent=sent, client_received=time.monotonic())
        return request.result(reply, outputs)

    def _margin(self, request: Request) -> float:
        """Time beyond the run's wall limit before the server is presumed lost: its compiles' too,
        whichever side of the run compiles (sandbox._client_request.Request.compile_wall_s)."""
        return self.sandbox.config.margin_s + request.compile_wall_s

    def lost(self) -> bool:
        """True when the server's end of the channel has closed: it died between runs.

        Read from the channel, not the process: a slot's servers may belong to another process
        (an inline pool launches them before it forks), which alone can wait for them.
        """
        if self.channel is None:
            return False
        readable, _, _ = select.select([self.channel], [], [], 0)
        if not readable:  # nothing to read: alive and idle, as it should be
            return False
        try:
            return self.channel.recv(1, socket.MSG_PEEK) == b""  # end of file: the server is gone
        except OSError:
            return True

    def release(self) -> None:
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1
        self.process = None

    def stop(self) -> None:
        """End the server and return once it is gone. A closed channel ends its loop after the run
        it is in; one still there after STOP_GRACE_S (a run it no longer supervises, or a server
        that stopped answering) is killed, and its runs die with it (their parent-death signal).
        Whatever of them is left in the slot's cgroups, the next server clears before it serves."""
        self.layers = {}
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        if self.pidfd >= 0:
            if not _exited(self.pidfd, STOP_GRACE_S):
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                _exited(self.pidfd, None)
            os.close(self.pidfd)
            self.pidfd = -1
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=1)  # reaped here when this process started it
            self.process = None


def _exited(pidfd: int, timeout_s: float | None) -> bool:
    """Whether the process of `pidfd` exits within `timeout_s` (None: wait for it)."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(None if timeout_s is None else timeout_s * 1000))


@functools.cache
def _launcher(cache_dir: str) -> dict[str, str | None]:
    """The server config's launcher entries: its path, or why native runs are off."""
    try:
        return {"launcher": _native.build(cache_dir), "launcher_error": None}
    except _native.LauncherUnavailable as error:
        log.warning("native (compiled) programs cannot run on this worker: %s", error)
        return {"launcher": None, "launcher_error": str(error)}


def _names_pattern(packages: tuple[str, ...]) -> re.Pattern[bytes]:
    """Matches a program's text that names one of `packages` (their top-level names) as a word."""
    names = sorted({name.split(".")[0] for name in packages})
    if not names:
        return re.compile(rb"(?!)")  # matches nothing
    return re.compile(rb"\b(?:" + b"|".join(re.escape(n.encode()) for n in names) + rb")\b")


def _claim_uid(config: SandboxConfig, slot: int) -> tuple[int, int]:
    """A uid no other live slot on this machine uses, held by an flock for the slot's lifetime."""
    os.makedirs(config.lock_dir, mode=0o700, exist_ok=True)
    for offset in range(config.uid_count):
        uid = config.uid_base + (slot + offset) % config.uid_count
        fd = os.open(f"{config.lock_dir}/{uid}.lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return uid, fd
        except BlockingIOError:
            os.close(fd)
    raise SandboxError(f"all {config.uid_count} sandbox uids from {config.uid_base} are in use")


def _import_paths() -> list[str]:
    """What the fork server needs on sys.path beyond the stdlib: site-packages."""
    return [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]


@functools.cache
def _package_parents() -> dict[str, str]:
    """`evalfarm` and its rooms -> the folder each is found in (a checkout's root, or site-packages and
    the installed package), as this process found them."""
    parents = {}
    rooms: tuple[str, ...] = sys.modules["evalfarm"].ROOMS
    for name in ("evalfarm", *(f"evalfarm.{room}" for room in rooms)):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None, name
        parents[name] = os.path.dirname(os.path.dirname(spec.origin))
    return parents


def _site_dirs(packages: tuple[str, ...]) -> dict[str, list[str]]:
    """Every installed-package directory of this interpreter -> its entries that `packages` need
    (the package or module, its bundled libraries, its metadata)."""
    import site

    tops = {name.split(".")[0] for name in packages}
    candidates = {*site.getsitepackages([sys.prefix, sys.base_prefix]), *_import_paths()}
    found: dict[str, list[str]] = {}
    for directory in sorted(candidates):
        if not os.path.isdir(directory):
            continue
        found[directory] = sorted(
            entry for entry in os.listdir(directory)
            if entry.split("-")[0].removesuffix(".py").removesuffix(".libs") in tops
        )  # fmt: skip
    return found


def _python_dirs() -> list[str]:
    """Directories a run must see for the interpreter and the preloaded packages to work."""
    return [sys.base_prefix, sys.prefix] + [
        p for p in sys.path if p.endswith(("site-packages", "dist-packages"))
    ]
