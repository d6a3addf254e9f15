"""A node's session host: the process that keeps the node's sessions (live sandboxed interpreters)
and runs their cells.

A node starts one (`start_host`) beside its pool. The host has a sandbox slot of its own, beyond the
pool's, from which it forks each session's interpreter (`sandbox.session_interpreter.Interpreter`). Producers
reach it through Redis (`broker.session_client`): the host consumes its own request list, and a session's
record says which host holds it. Each host incarnation has a fresh id, so a session can never be
answered by an interpreter that does not hold its state: a restarted host knows none of the old ids.

A session is a Python interpreter or (`kind` "bash") bash shells, and may start from a workspace
(`workers.workspaces`: an uploaded archive unpacked once on the node and shared by its sessions).
Every session has a thread here that runs its requests in the order they arrived (runs, programs,
file and shell requests). Idle sessions
(no cell for `ttl_s`) and old ones (`lifetime_s`) are ended and their slot freed; a host that stops
ends all of its sessions. Sessions take at most `session_cpu_share` of the node's cores together
(a CPU quota on their parent cgroup) and `sessions` is their number: batch scoring keeps the rest.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import dataclasses
import json
import logging
import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from evalfarm.broker import keys
from evalfarm.broker.session_client import SessionSpec, record_of
from evalfarm.broker.settings import WorkerSettings

log = logging.getLogger(__name__)

REPLY_TTL_S = 60
KINDS = ("python", "bash")  # what a session may be: its metrics' `language` label
# Installed packages a session's Python may import beyond numpy: matplotlib and what it imports, so
# that a notebook's figures draw (each is seen only where installed).
SESSION_PACKAGES = (
    "matplotlib", "mpl_toolkits", "PIL", "pillow", "contourpy", "cycler", "fontTools", "fonttools",
    "kiwisolver", "packaging", "pyparsing", "dateutil", "python_dateutil", "six",
)  # fmt: skip
ENDED_KEPT = 10_000  # ended sessions whose reason the host still gives, should a run race the record
ENDED_RECORD_S = 600  # how long an ended session's record says why, before it is simply unknown


class SessionHost:
    """Holds a node's sessions and serves their requests until stopped."""

    def __init__(self, settings: WorkerSettings, node: str, slot: int, cpus: set[int] | None = None) -> None:
        from evalfarm.broker.connections import redis_client
        from evalfarm.envs.runtime import sandbox_config
        from evalfarm.sandbox import Sandbox

        self.settings = settings
        self.host_id = f"{node}#{secrets.token_hex(6)}"
        self.queue = keys.SESSION_QUEUE_PREFIX + self.host_id
        self.redis = redis_client(
            str(settings.broker_url), settings, socket_timeout=30, socket_keepalive=True
        )
        self.sandbox = Sandbox(slot, sandbox_config(packages=SESSION_PACKAGES), cpus)
        self.cgroup_parent = f"evalfarm-sessions-{os.getpid()}"
        self.sessions: dict[str, _Session] = {}
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        # Sessions are started by one long-lived thread: a fork server dies with the thread that
        # started it (its parent-death signal is the thread's), and every session with the server.
        self.starting: queue.Queue[tuple[_Session, str] | None] = queue.Queue()
        self.ended: collections.OrderedDict[str, str] = collections.OrderedDict()  # id -> why, lately
        self.cpu = "off (sessions share the node's cores)"
        self.metrics = {kind: _metrics(kind) for kind in KINDS}
        self.capacity, self.output_cap = output_budget(settings.session_output_mb << 20, settings.sessions)
        self.workspaces = _workspaces(self.redis, settings)

    # -- life -------------------------------------------------------------------------------

    def serve(self) -> None:
        """Start the slot, advertise the host, and serve requests until `stop`."""
        from evalfarm.sandbox import _cgroups

        _raise_open_files()
        if os.geteuid() == 0:
            self.cpu = _cgroups.share_cpu(self.cgroup_parent, self.settings.session_cpu_share * self._cores())
        self.starting.put(None)  # the start thread starts the slot's server first
        self._advertise()
        for loop, name in ((self._beat_loop, "beat"), (self._start_loop, "start")):
            threading.Thread(target=loop, name=f"evalfarm-session-{name}", daemon=True).start()
        log.info(
            "session host %s: up to %d sessions, cpu %s, output %d bytes per stream (%d MB in all)",
            self.host_id, self.capacity, self.cpu, self.output_cap, self.settings.session_output_mb,
        )  # fmt: skip
        if self.capacity < self.settings.sessions:
            log.warning(
                "session host %s: %d MB of output hold %d sessions, not the %d asked for",
                self.host_id, self.settings.session_output_mb, self.capacity, self.settings.sessions,
            )  # fmt: skip
        while not self.stopped.is_set():
            try:
                item = self.redis.blpop([self.queue], timeout=1)
            except Exception as error:  # Redis restarting: the sessions live on; try again
                log.warning("session host %s: %s", self.host_id, error)
                self.stopped.wait(1.0)
                continue
            if item is not None:
                self._dispatch(item[1])
        self._shutdown()

    def stop(self) -> None:
        self.stopped.set()

    def _shutdown(self) -> None:
        with self.lock:
            sessions = list(self.sessions.values())
        for session in sessions:
            session.end("the node stopped")
        try:
            self.redis.delete(keys.SESSION_HOST_PREFIX + self.host_id, self.queue)
            self.redis.srem(keys.SESSION_HOSTS_KEY, self.host_id)
        except Exception as error:  # its advertisement expires anyway
            log.debug("could not withdraw %s: %s", self.host_id, error)
        self.sandbox.close()
        self.workspaces.close()

    def _cores(self) -> int:
        return len(self.sandbox.cpus or os.sched_getaffinity(0))

    # -- advertisement and expiry -----------------------------------------------------------

    def _beat_loop(self) -> None:
        interval = self.settings.heartbeat_interval_s
        while not self.stopped.wait(interval):
            self._expire()
            try:
                self._advertise()
            except Exception as error:  # Redis restarting: beat again next round
                log.warning("session host %s: heartbeat failed: %s", self.host_id, error)

    def _start_loop(self) -> None:
        """Start each new session's interpreter, then its thread (see `starting`)."""
        while True:
            item = self.starting.get()
            if item is None:
                try:
                    self.sandbox.start_extended()
                except Exception:  # each session's start tries again, and answers why it failed
                    log.exception("session host %s: the sandbox slot did not start", self.host_id)
                continue
            session, reply = item
            try:
                started = session.start(reply)
            except Exception as error:  # this thread must outlive any one session's start
                log.exception("session host %s: a session failed to start", self.host_id)
                self.forget(session, "closed")
                self.answer(reply, {"failed": f"{type(error).__name__}: {error}"})
                continue
            if started:
                session.thread.start()

    def _advertise(self) -> None:
        with self.lock:
            open_now = len(self.sessions)
            records = list(self.sessions.values())
        by_kind = {kind: sum(1 for session in records if session.spec.kind == kind) for kind in KINDS}
        advert = {"queue": self.queue, "capacity": self.capacity, "open": open_now, "kinds": by_kind}
        ttl_ms = int(self.settings.node_dead_after_s * 1000)
        with self.redis.pipeline() as pipe:
            pipe.set(keys.SESSION_HOST_PREFIX + self.host_id, json.dumps(advert), px=ttl_ms)
            pipe.sadd(keys.SESSION_HOSTS_KEY, self.host_id)
            for session in records:  # a live session's record outlives its idle time
                pipe.set(keys.session_key(session.id), session.record(), px=session.record_ttl_ms())
            pipe.execute()
        for kind, count in by_kind.items():
            self.metrics[kind]["open"].set(count)

    def _expire(self) -> None:
        """End sessions idle past their ttl, older than their lifetime, or whose interpreter died."""
        now = time.monotonic()
        with self.lock:
            sessions = list(self.sessions.values())
        for session in sessions:
            reason = session.expired(now)
            if reason is not None:
                session.requests.put({"op": "expire", "reason": reason})

    # -- requests ---------------------------------------------------------------------------

    def _dispatch(self, raw: bytes | str) -> None:
        try:
            request = json.loads(raw)
            op, session_id, reply = request["op"], str(request["session"]), str(request["reply"])
        except (ValueError, KeyError, TypeError):
            log.warning("session host %s: dropped a malformed request", self.host_id)
            return
        if op == "open":
            self._open(session_id, reply, request)
            return
        with self.lock:  # queued under the lock: a session that ends after it answers what it holds
            session = self.sessions.get(session_id)
            why = self.ended.get(session_id)
            if session is not None:
                session.requests.put(request)
        if session is None:
            self.answer(reply, {"ended": why} if why else {"unknown": True})

    def _open(self, session_id: str, reply: str, request: dict[str, Any]) -> None:
        try:
            spec = SessionSpec.model_validate(request.get("spec") or {})
        except ValueError as error:
            self.answer(reply, {"invalid": str(error)})
            return
        with self.lock:
            if len(self.sessions) >= self.capacity or session_id in self.sessions:
                full = True
            else:
                full = False
                session = self.sessions[session_id] = _Session(self, session_id, spec)
        if full:
            self.answer(reply, {"full": True})
            return
        self.starting.put((session, reply))

    def answer(self, reply: str, message: dict[str, Any]) -> None:
        """Push `message` on a client's reply list."""
        try:
            with self.redis.pipeline() as pipe:
                pipe.rpush(reply, json.dumps(message))
                pipe.expire(reply, REPLY_TTL_S)
                pipe.execute()
        except Exception as error:  # the client sees no answer and says so; the session lives on
            log.warning("session host %s: could not answer: %s", self.host_id, error)

    def forget(self, session: _Session, reason: str) -> None:
        """A session has ended: free its place, and leave a record of why for its next request."""
        with self.lock:
            self.sessions.pop(session.id, None)
            self.ended[session.id] = reason
            while len(self.ended) > ENDED_KEPT:
                self.ended.popitem(last=False)
        try:
            if reason == "closed":
                self.redis.delete(keys.session_key(session.id))
            else:
                self.redis.set(keys.session_key(session.id), json.dumps({"ended": reason}), ex=ENDED_RECORD_S)
            self._advertise()  # its place is free now, not at the next beat
        except Exception as error:  # the record expires on its own
            log.debug("could not record the end of session %s: %s", session.id, error)


class _Session:
    """One session: its interpreter, its settings, and the thread that runs its requests in order."""

    def __init__(self, host: SessionHost, session_id: str, spec: SessionSpec) -> None:
        self.host = host
        self.id = session_id
        self.spec = spec
        self.opened = self.used = time.monotonic()
        self.interpreter: Any = None
        self.metrics = host.metrics[spec.kind]
        self.workspace: str | None = None  # the workspace it holds, until it ends
        self.requests: queue.Queue[dict[str, Any]] = queue.Queue()
        self.thread = threading.Thread(target=self._serve, name="evalfarm-session", daemon=True)

    def record(self) -> str:
        """The session's record in Redis (`broker.session_client.record_of`)."""
        return json.dumps(record_of(self.host.host_id, self.spec))

    def record_ttl_ms(self) -> int:
        """How long the session's record must last: its idle time left, and a beat's margin."""
        idle_left = self.spec.ttl_s - (time.monotonic() - self.used)
        return int((max(idle_left, 0) + 2 * self.host.settings.node_dead_after_s) * 1000)

    def expired(self, now: float) -> str | None:
        if now - self.used > self.spec.ttl_s:
            return "expired"
        if now - self.opened > min(self.spec.lifetime_s, self.host.settings.session_max_lifetime_s):
            return "lifetime"
        return None

    def _serve(self) -> None:
        """Run the session's requests in order until it ends; a fault of the host's own ends the
        session (its client hears `failed`, then finds the session ended), never the host."""
        while True:
            request = self.requests.get()
            try:
                if not self._handle(request):
                    break
            except Exception as error:
                log.exception("session host %s: a session failed", self.host.host_id)
                if "reply" in request:
                    self.host.answer(str(request["reply"]), {"failed": f"{type(error).__name__}: {error}"})
                self.end("the node failed")
                break
            if self.interpreter is not None and not self.interpreter.alive:
                self.end(self.interpreter.ended or "its interpreter exited")
                break
        self._refuse_the_rest()

    def _refuse_the_rest(self) -> None:
        """Answer the requests that came in behind the one that ended the session: it has ended."""
        why = self.host.ended.get(self.id, "closed")
        while True:
            try:
                request = self.requests.get_nowait()
            except queue.Empty:
                return
            if "reply" in request:
                self.host.answer(str(request["reply"]), {"ended": why})

    def _handle(self, request: dict[str, Any]) -> bool:
        """Serve one request; whether the session lives on."""
        op = request["op"]
        if op in ("run", "exec"):
            self._run(request)
        elif op in ("file", "shell"):
            self._other(request)
        elif op == "close":
            self.end("closed")
            self.host.answer(str(request["reply"]), {"closed": True})
            return False
        elif op == "expire" and self.expired(time.monotonic()) is not None:  # a run may have come since
            self.end(str(request["reason"]))
            return False
        return True

    def start(self, reply: str) -> bool:
        """Start the session's interpreter and answer its opener; whether it started."""
        from evalfarm.sandbox import SandboxError
        from evalfarm.sandbox.session_interpreter import Interpreter

        host = self.host
        name = f"{host.cgroup_parent}/s-{self.id[:16]}" if os.geteuid() == 0 else None
        limits, note = self.spec.sandbox_limits(), None
        if limits.output_bytes > host.output_cap:
            limits = dataclasses.replace(limits, output_bytes=host.output_cap)
            note = (
                f"this node holds {host.settings.session_output_mb} MB of output for its {host.capacity}"
                f" sessions: {host.output_cap} bytes per stream each, less than the session's output_bytes"
            )
        try:
            workspace = self._workspace()
        except (LookupError, ValueError) as error:  # unknown, or an archive the node cannot take
            host.forget(self, "closed")
            host.answer(reply, {"invalid": str(error)})
            return False
        try:
            self.interpreter = Interpreter.start(host.sandbox, limits, name, note, self.spec.kind, workspace)
            if self.spec.kind == "bash" and self.spec.shell:
                opened = self.interpreter.open_shell("default", vital=True)
                if "opened" not in opened:
                    raise SandboxError(f"the session's shell did not start: {opened}")
        except SandboxError as error:
            log.warning("session host %s: a session did not start: %s", host.host_id, error)
            self._drop()
            host.forget(self, "closed")
            host.answer(reply, {"failed": str(error)})
            return False
        self.used = time.monotonic()
        host.redis.set(keys.session_key(self.id), self.record(), px=self.record_ttl_ms())
        self.metrics["opened"].inc()
        host.answer(reply, {"opened": True, "host": host.host_id})
        return True

    def _workspace(self) -> str | None:
        """The unpacked tree of the session's workspace, if it has one (held until it ends)."""
        if self.spec.workspace is None:
            return None
        host = self.host
        path = host.workspaces.acquire(self.spec.workspace, host.sandbox.uid)
        self.workspace = self.spec.workspace
        return path

    def _drop(self) -> None:
        """Let go of what the session held: its interpreter, its workspace."""
        if self.interpreter is not None:
            self.interpreter.close("closed")
            self.interpreter = None
        if self.workspace is not None:
            self.host.workspaces.release(self.workspace)
            self.workspace = None

    def _run(self, request: dict[str, Any]) -> None:
        started = time.monotonic()
        self.used = started
        timeout_s = self.spec.run_timeout(request.get("timeout_s"))
        if self.spec.kind != "bash" and request["op"] == "exec":
            self.host.answer(
                str(request["reply"]), {"invalid": "a Python session runs no programs: use kind bash"}
            )
            return
        if request["op"] == "exec":
            result = self.interpreter.execute(_spec(request.get("spec")), timeout_s)
        else:
            result = self.interpreter.run(
                str(request.get("code", "")).encode(),
                str(request.get("stdin") or "").encode(),
                timeout_s,
                shell=request.get("shell") or None,
                merge=bool(request.get("merge")),
                check_syntax=bool(request.get("check_syntax")),
            )
        self.used = time.monotonic()
        self.metrics["run"].observe(self.used - started)
        self.host.answer(str(request["reply"]), {"result": result.to_dict()})

    def _other(self, request: dict[str, Any]) -> None:
        """A file request (read, write, upload), or a shell opened or closed: the session's report."""
        self.used = time.monotonic()
        reply = str(request["reply"])
        if request["op"] == "shell":
            if self.spec.kind != "bash":
                self.host.answer(reply, {"invalid": "a Python session has no shells: use kind bash"})
                return
            header = {"kind": "shell", "op": request.get("shell_op"), "name": str(request.get("name", ""))}
            report, _ = self.interpreter.request(header)
            self.host.answer(reply, {"report": report})
            return
        try:
            header, content = _file_request(request, self.spec.limits)
        except ValueError as error:
            self.host.answer(reply, {"invalid": str(error)})
            return
        report, data = self.interpreter.request(header, content, want=header["op"] == "read")
        answer: dict[str, Any] = {"report": report}
        if data:
            answer["content"] = base64.b64encode(data).decode()
        self.host.answer(reply, answer)

    def end(self, reason: str) -> None:
        """End the interpreter and free the session's place."""
        if self.interpreter is not None:
            self.interpreter.close(reason)
            self.interpreter = None
        self._drop()
        self.host.forget(self, reason)
        counter = {"expired": "expired", "lifetime": "expired", "closed": "closed"}.get(reason, "ended")
        self.metrics[counter].inc()


def _spec(given: Any) -> dict[str, Any]:
    """A program's spec for `exec` (`command`, `env`, `cwd`, `merge`), as plain values."""
    spec = given if isinstance(given, dict) else {}
    command = spec.get("command")
    if not isinstance(command, str):
        command = [str(arg) for arg in command] if isinstance(command, list) else []
    env = spec.get("env")
    return {
        "command": command,
        "env": {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else None,
        "cwd": str(spec["cwd"]) if spec.get("cwd") else None,
        "merge": bool(spec.get("merge")),
    }


def _file_request(request: dict[str, Any], limits: Any) -> tuple[dict[str, Any], bytes]:
    """A file request's header for the session, and the content it carries; ValueError when malformed."""
    from evalfarm.broker.session_client import FILE_MAX_BYTES

    op = request.get("file_op")
    if op not in ("read", "write", "upload"):
        raise ValueError(f"unknown file operation {op!r}")
    header = {"kind": "file", "op": op, "path": str(request.get("path", ""))}
    if op == "read":
        header["max_bytes"] = min(int(request.get("max_bytes") or FILE_MAX_BYTES), FILE_MAX_BYTES)
        return header, b""
    content = base64.b64decode(str(request.get("content") or ""), validate=True)
    if op == "upload":  # what its disk could hold, at most
        header.update(max_bytes=limits.workdir_mb << 20, max_members=100_000)
    return header, content


def _workspaces(redis: Any, settings: WorkerSettings) -> Any:
    from evalfarm import archive
    from evalfarm.workers.workspaces import Workspaces

    return Workspaces(redis, archive.Caps(max_bytes=settings.session_workspace_mb << 20, max_members=200_000))


def output_budget(budget_bytes: int, sessions: int) -> tuple[int, int]:
    """How many sessions a host holds, and each one's output cap per stream, so that all of them at
    once hold no more than `budget_bytes` of output (each running cell's streams and report):
    `sessions`, or fewer when the budget cannot give each the least cap."""
    from evalfarm.sandbox.session_interpreter import MAX_REPORT_BYTES, MIN_OUTPUT_BYTES, held_bytes

    capacity = min(sessions, budget_bytes // held_bytes(MIN_OUTPUT_BYTES))
    if capacity == 0:
        return 0, 0
    return capacity, (budget_bytes // capacity - MAX_REPORT_BYTES) // 2


def _raise_open_files() -> None:
    """Each session holds about a dozen descriptors here (its channel, its pidfd, its cgroups'
    files): the soft limit goes up to the hard one."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _metrics(kind: str) -> dict[str, Any]:
    from evalfarm.workers.metrics import instruments

    metrics = {
        "open": instruments.SESSIONS_OPEN,
        "opened": instruments.SESSIONS_OPENED,
        "expired": instruments.SESSIONS_EXPIRED,
        "closed": instruments.SESSIONS_CLOSED,
        "ended": instruments.SESSIONS_ENDED,
        "run": instruments.SESSION_RUN_DURATION,
    }
    return {name: metric.labels(kind) for name, metric in metrics.items()}


# -- the host as a child process of a node ------------------------------------------------------


def start_host(settings: WorkerSettings, node: str, slot: int) -> subprocess.Popen[bytes] | None:
    """Start the node's session host as a child process (it dies with the node); None when the
    node holds no sessions (`sessions` 0)."""
    if settings.sessions == 0:
        return None
    from evalfarm.workers.embedded import parent_death_signal

    own = settings.model_dump(mode="json", include=set(WorkerSettings.model_fields))  # a Settings has more
    config = json.dumps({"settings": own, "node": node, "slot": slot})
    # On its stdin, not its command line: the settings hold Redis's password, and any local user can
    # read a process's command line.
    host = subprocess.Popen(
        [sys.executable, "-m", "evalfarm.workers.session_host"],
        stdin=subprocess.PIPE,
        preexec_fn=parent_death_signal(signal.SIGKILL),
    )
    assert host.stdin is not None
    with contextlib.suppress(BrokenPipeError), host.stdin:  # one that died at once is started again
        host.stdin.write(config.encode())
    return host


def main() -> None:
    """`python -m evalfarm.workers.session_host < CONFIG`: a node's session host, until SIGTERM."""
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s: %(levelname)s/sessions] %(message)s")
    config = json.loads(sys.stdin.read())
    settings = WorkerSettings.model_validate(config["settings"])
    host = SessionHost(settings, config["node"], config["slot"])
    signal.signal(signal.SIGTERM, lambda *_: host.stop())
    signal.signal(signal.SIGINT, lambda *_: host.stop())
    host.serve()


if __name__ == "__main__":
    main()
