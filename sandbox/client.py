"""The worker's handle on one sandbox slot: starts the slot's fork server and sends it runs."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import logging
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from sandbox import _protocol
from sandbox._runner import RUN_ENVIRONMENT
from sandbox.limits import Limits
from sandbox.result import RunResult
from sandbox.status import Status

log = logging.getLogger("evalfarm.sandbox")

PROJECT_ROOT = str(Path(__file__).resolve().parent.parent)

# Imported once by the fork server so runs find them already in memory.
DEFAULT_PRELOAD = (
    "numpy", "collections", "itertools", "functools", "heapq", "bisect", "math", "cmath", "re",
    "json", "string", "random", "fractions", "decimal", "statistics", "typing", "dataclasses",
    "copy", "operator", "array", "traceback", "threading", "atexit", "enum", "struct", "time",
    "datetime", "textwrap", "unittest",
)  # fmt: skip


class SandboxError(Exception):
    """The sandbox itself failed (not the program): it could not start or lost its server."""


@dataclasses.dataclass(frozen=True)
class CallSpec:
    """Call `func_name(*args, **kwargs)` after the program ran; its value comes back as JSON."""

    func_name: str
    args: list[Any] = dataclasses.field(default_factory=list)
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    max_value_bytes: int = 1 << 20


@dataclasses.dataclass(frozen=True)
class SandboxConfig:
    """How slots are set up on this machine."""

    preload: tuple[str, ...] = DEFAULT_PRELOAD
    uid_base: int = 1_990_000  # runs of slot n use the first free uid from here when root
    uid_count: int = 4096
    lock_dir: str = "/run/evalfarm/slots"
    start_timeout_s: float = 60.0
    margin_s: float = 10.0  # beyond a run's wall limit before the server is presumed lost


class Sandbox:
    """One slot: a fork server process running one program at a time, each in a fresh child."""

    def __init__(self, slot: int = 0, config: SandboxConfig | None = None) -> None:
        self.slot = slot
        self.config = config or SandboxConfig()
        self.layers: dict[str, str] = {}
        self.uid: int | None = None
        self._uid_lock: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._channel: socket.socket | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def server_process(self) -> subprocess.Popen[bytes] | None:
        """This slot's fork server process, once launched."""
        return self._process

    @property
    def server_pid(self) -> int | None:
        """The pid of this slot's fork server process, while it runs."""
        return self._process.pid if self._process is not None else None

    @property
    def status_line(self) -> str:
        """One line saying which isolation layers are active."""
        layers = "; ".join(f"{k} {v}" for k, v in self.layers.items())
        return f"sandbox slot {self.slot} (layers checked by a probe run): {layers}"

    def start(self) -> None:
        """Start the fork server (unless `launch` did) and wait until it reports its isolation layers."""
        if self.layers:
            return
        self.launch()
        assert self._channel is not None
        self._channel.settimeout(self.config.start_timeout_s)
        try:
            hello, _ = _protocol.recv(self._channel)
        except (OSError, _protocol.ProtocolError) as error:
            self._stop()
            raise SandboxError(f"sandbox slot {self.slot} did not start: {error}") from error
        if not hello.get("ready"):
            self._stop()
            raise SandboxError(f"sandbox slot {self.slot} failed to set up: {hello.get('error')}")
        self.layers = hello["layers"]
        log.info("%s", self.status_line)

    def launch(self) -> None:
        """Spawn the fork server without waiting for it, so it can set up while the caller works."""
        if self._process is not None:
            return
        if os.geteuid() == 0 and self.uid is None:
            self.uid, self._uid_lock = _claim_uid(self.config, self.slot)
        ours, theirs = socket.socketpair()
        server_config = {
            "uid": self.uid,
            "parent_pid": os.getpid(),
            "control_fd": theirs.fileno(),
            "preload": list(self.config.preload),
            "python_dirs": _python_dirs(),
        }
        boot = f"import sys; sys.path[:0] = {_import_paths()!r}; from sandbox._server import main; main()"
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", boot, json.dumps(server_config)],
            pass_fds=[theirs.fileno()],
            env=RUN_ENVIRONMENT,  # the server's whole environment, inherited as is by its runs
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            cwd="/",
        )
        theirs.close()
        self._channel = ours

    def run(
        self,
        code: str | bytes,
        stdin: str | bytes = b"",
        limits: Limits | None = None,
        call: CallSpec | None = None,
    ) -> RunResult:
        """Run `code` as a fresh isolated process; the sandbox's own failure is an INFRA_ERROR result."""
        limits = limits or Limits()
        code_bytes = code.encode() if isinstance(code, str) else code
        stdin_bytes = stdin.encode() if isinstance(stdin, str) else stdin
        request: dict[str, Any] = {"limits": limits.to_dict()}
        args = b""
        if call is not None:
            request["call"] = {"func_name": call.func_name, "max_value_bytes": call.max_value_bytes}
            args = json.dumps({"args": call.args, "kwargs": call.kwargs}).encode()
        with self._lock:
            try:
                self.start()
                return self._exchange(request, code_bytes, stdin_bytes, args, limits)
            except (OSError, _protocol.ProtocolError, SandboxError) as error:
                log.error("sandbox slot %d lost its server: %s", self.slot, error)
                self._stop()
                return RunResult(status=Status.INFRA_ERROR, error=f"sandbox failure: {error}")

    def _exchange(
        self, request: dict[str, Any], code: bytes, stdin: bytes, args: bytes, limits: Limits
    ) -> RunResult:
        assert self._channel is not None
        self._channel.settimeout(limits.wall_s + self.config.margin_s)
        _protocol.send(self._channel, request, code, stdin, args)
        header, (stdout, stderr) = _protocol.recv(self._channel)
        header["status"] = Status(header["status"])
        return RunResult(stdout=stdout, stderr=stderr, **header)

    def close(self) -> None:
        """Stop the fork server and release the slot's uid."""
        with self._lock:
            self._stop()
            if self._uid_lock is not None:
                os.close(self._uid_lock)
                self._uid_lock = None
                self.uid = None

    def release(self) -> None:
        """Let go of a sandbox this process holds only by inheritance (a fork): our copy of its
        channel is closed, its server is left to the process that owns it."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        self._process = None
        if self._uid_lock is not None:
            os.close(self._uid_lock)  # the lock stays held through the owner's descriptor
            self._uid_lock = None

    def _stop(self) -> None:
        self.layers = {}
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self._process is not None:
            # A closed channel ends the server's loop; it exits and reaps its own children.
            try:
                self._process.wait(timeout=2)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None


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
    """What the fork server needs on sys.path beyond the stdlib: this project and site-packages."""
    return [PROJECT_ROOT] + [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]


def _python_dirs() -> list[str]:
    """Directories a run must see for the interpreter and the preloaded packages to work."""
    return [sys.base_prefix, sys.prefix] + [
        p for p in sys.path if p.endswith(("site-packages", "dist-packages"))
    ]
