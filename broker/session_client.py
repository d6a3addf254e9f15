"""Sessions: a sandboxed Python interpreter kept alive on one node between runs, for agents that run
code mid-rollout (`with farm.session(ttl_s=60) as s: s.run("x = 41"); s.run("x + 1").value`).

Routing is through Redis, as for batches: each node's session host (`workers.session_host`) advertises
itself and consumes a request list of its own; a session's record names the host incarnation that
holds it, so a run goes to that host's list and is answered on a reply list of its own, in order.
A run for a session whose host is gone (its advertisement expired: the node died) answers
`infra_error` with `infra_reason` `session_lost`, never a fresh interpreter: the caller opens a new
session. A session that ended (closed, idle past its `ttl_s`, killed for a cell that ignored its
timeout's interrupt) or never existed raises `SessionNotFound`.

A session is a Python interpreter (`kind` "python") or bash shells (`kind` "bash": a run is a shell
command, with its exit code; `execute` runs a program outside the shells). Either reads, writes and
unpacks its own files (`read_file`, `write_file`, `upload`), and may start from a workspace: an
archive uploaded once (`upload_workspace`, its id the hash of its bytes) that every session opened
with it finds at /workspace, shared read-only, each session writing its own copy.

`SessionSpec` (and its limits) is what a session is opened with; the sync `Session` and the asyncio
`AsyncSession` share everything but their waits (`_Protocol`).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
import secrets
import time
from collections.abc import Generator
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from evalfarm.broker import keys
from evalfarm.broker.connections import decoded

INTERRUPT_GRACE_S = 1.0  # sandbox.session_interpreter' own: an interrupted cell's time to give up
ANSWER_MARGIN_S = 10.0  # beyond a run's timeout and grace before a live host is presumed stuck
WAIT_SLICE_S = 1.0  # how often a waiting client looks whether the session's host still lives
OPEN_TIMEOUT_S = 25.0  # a session's start (the host's first one starts its sandbox slot)
REQUEST_TTL_S = 60
HOSTS_WAIT_S = 5.0  # how long an open waits for a first live session host
FILE_WAIT_S = 90.0  # a file or shell request's answer (the host gives up on a stuck session at 60 s)
MAX_RUN_TIMEOUT_S = 600.0
FILE_MAX_BYTES = 16 << 20  # a file read or written through a session's client, at most
WORKSPACE_TTL_S = 24 * 3600.0  # an uploaded workspace is kept this long after its last upload
WORKSPACE_ID = r"^[0-9a-f]{32}$"


class SessionLimits(BaseModel):
    """A session's caps: memory, /tmp and processes across its whole life; output and time per run."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    memory_mb: int = Field(default=1024, gt=0, le=8192)
    workdir_mb: int = Field(default=256, gt=0, le=1024, description="its /tmp, kept between runs")
    processes: int = Field(default=64, gt=0, le=256)
    open_files: int = Field(default=256, gt=0, le=1024)
    file_size_mb: int = Field(default=64, gt=0, le=1024)
    output_bytes: int = Field(default=1 << 20, gt=0, le=64 << 20, description="per stream, per run")
    timeout_s: float = Field(default=30.0, gt=0, le=600, description="a run's default timeout")
    lifetime_s: float = Field(default=6 * 3600.0, gt=0, le=7 * 86400, description="ended after this")


class SessionSpec(BaseModel):
    """What a session is opened with (`POST /v1/sessions`' body)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    language: Literal["python"] = "python"
    kind: Literal["python", "bash"] = Field(default="python", description="an interpreter, or bash shells")
    ttl_s: float = Field(default=60.0, gt=0, le=86400, description="ended after this long idle")
    limits: SessionLimits = SessionLimits()
    workspace: str | None = Field(
        default=None, pattern=WORKSPACE_ID, description="an uploaded workspace's id"
    )
    shell: bool = Field(default=True, description="bash: open the shell `default` with the session")

    @classmethod
    def of(
        cls, ttl_s: float, limits: dict[str, Any] | None, language: str, kind: str, workspace: str | None
    ) -> SessionSpec:
        """The spec of `Farm.session`'s and `AsyncFarm.session`'s arguments, validated."""
        fields = {"language": language, "ttl_s": ttl_s, "limits": limits or {}, "kind": kind}
        return cls.model_validate({**fields, "workspace": workspace})

    @property
    def lifetime_s(self) -> float:
        return self.limits.lifetime_s

    def sandbox_limits(self) -> Any:
        """The sandbox's Limits of the session's interpreter (`wall_s`: a run's default timeout)."""
        from evalfarm.limits import Limits

        caps = self.limits
        return Limits(
            wall_s=caps.timeout_s, cpu_s=caps.timeout_s, memory_mb=caps.memory_mb,
            output_bytes=caps.output_bytes, file_size_mb=caps.file_size_mb, workdir_mb=caps.workdir_mb,
            open_files=caps.open_files, processes=caps.processes,
        )  # fmt: skip

    def run_timeout(self, given: Any) -> float:
        """A run's timeout: the one it asks for (within MAX_RUN_TIMEOUT_S), else the session's default."""
        if isinstance(given, int | float) and not isinstance(given, bool) and 0 < given <= MAX_RUN_TIMEOUT_S:
            return float(given)
        return self.limits.timeout_s


class SessionError(Exception):
    """A session request the farm could not serve."""


class SessionNotFound(SessionError):
    """The session does not exist: never opened, closed, expired, or ended (the message says why)."""


class SessionsFull(SessionError):
    """No node can take another session now; try again after `retry_after_s`."""

    def __init__(self, message: str, retry_after_s: float = 2.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class SessionUnavailable(SessionError):
    """No node holds sessions, or none answered in time (the farm's fault: retry later)."""


class SessionLost(SessionError):
    """The node that held the session is gone, and the session's state with it: open a new one."""


class FileRefused(SessionError):
    """A file request the session refused: `ename` names the error as Python's do
    (FileNotFoundError, PermissionError for a path outside the session's files or through a link,
    ValueError past a cap or for a refused archive, OSError for a full disk)."""

    def __init__(self, ename: str, message: str) -> None:
        super().__init__(message)
        self.ename = ename


def workspace_id(data: bytes) -> str:
    """A workspace's id: the hash of its archive's bytes (the same archive, the same id)."""
    return hashlib.sha256(data).hexdigest()[:32]


def checked_workspace(data: bytes, caps: Any = None) -> Any:
    """What an archive holds (`evalfarm.archive.Unpacked`) if it may be a workspace: a tar or zip
    that `evalfarm.archive` would unpack whole within `caps`; ArchiveRefused (a ValueError) else."""
    from evalfarm import archive

    return archive.check(data, caps or archive.Caps())


def _upload_workspace_steps(data: bytes) -> Generator[Command, list[Any], str]:
    """Keep an archive (checked by the caller) as a workspace; its id."""
    identity = workspace_id(data)
    yield [("set", keys.workspace_key(identity), data, int(WORKSPACE_TTL_S))]
    return identity


def upload_workspace(client: Any, data: bytes) -> str:
    """Keep `data` (a tar or zip archive, checked) as a workspace sessions may start from; its id."""
    checked_workspace(data)
    return _drive(client, _upload_workspace_steps(data))


async def upload_workspace_async(client: Any, data: bytes) -> str:
    """`upload_workspace` on an asyncio Redis client (the archive checked by the caller)."""
    return await _drive_async(client, _upload_workspace_steps(data))


@dataclasses.dataclass(frozen=True)
class SessionResult:
    """One run's result: `status` as in the contract, the run's output, and `value`, the repr of its
    last expression's value (as a notebook shows it) or None."""

    status: str
    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    error: str | None = None
    session_alive: bool = True
    run_s: float = 0.0
    truncated: tuple[str, ...] = ()
    exception: dict[str, Any] | None = None  # what the run raised: ename, evalue, traceback lines
    output_bytes: int | None = None  # the cap each stream was held to
    notice: str | None = None  # what cut the output (the session's limit, or its node's budget)
    exit_code: int | None = None  # a shell command's, or a program's (a `bash` session's)
    display: tuple[dict[str, str], ...] = ()  # a Python run's MIME bundles (its figures), as Jupyter's
    infra_reason: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionResult:
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        values["truncated"] = tuple(values.get("truncated") or ())
        values["display"] = tuple(values.get("display") or ())
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["truncated"] = list(self.truncated)
        data["display"] = list(self.display)
        if self.infra_reason is None:
            del data["infra_reason"]
        else:
            data["infra"] = True
        return data


def lost_result(why: str) -> SessionResult:
    """The answer of a run whose session's node is gone: the farm's fault, never the program's."""
    return SessionResult(
        status="infra_error",
        error=f"{why}: the session's state is lost; open a new session",
        session_alive=False,
        infra_reason="session_lost",
    )


# Redis commands sent in one round trip: (method, *arguments); ("sleep", seconds) alone waits.
Command = list[tuple[Any, ...]]


def record_of(host: str, spec: SessionSpec) -> dict[str, Any]:
    """A live session's record (`keys.session_key`), as its host writes it: the host that holds it,
    its idle time, its runs' default timeout and its kind."""
    return {"host": host, "ttl_s": spec.ttl_s, "timeout_s": spec.limits.timeout_s, "kind": spec.kind}


def _record(session_id: str, raw: Any) -> dict[str, Any]:
    """A session's record (its host, its ttl and run timeout); SessionNotFound when there is none
    or it says the session ended."""
    if raw is None:
        raise SessionNotFound(f"no session {session_id} (never opened, closed, or expired)")
    try:
        record = json.loads(raw)
        if "ended" in record:
            raise SessionNotFound(f"session {session_id} has ended ({record['ended']})")
        return {
            "host": str(record["host"]),
            "ttl_s": float(record["ttl_s"]),
            "timeout_s": float(record["timeout_s"]),
            "kind": str(record.get("kind", "python")),
        }
    except (ValueError, KeyError, TypeError):
        raise SessionNotFound(f"session {session_id} has no valid record") from None


def _live_hosts(names: list[Any], adverts: list[Any]) -> list[tuple[str, str]]:
    """Live hosts with room, most room first (ties in random order): (host id, its request list)."""
    ranked = []
    for name, advert in zip(names, adverts, strict=True):
        try:
            info = json.loads(advert)
            room = int(info["capacity"]) - int(info["open"])
        except (ValueError, KeyError, TypeError):  # None: that host's advertisement expired
            continue
        if room > 0:
            ranked.append((room, secrets.randbelow(1 << 30), decoded(name), str(info["queue"])))
    return [(host, queue) for _, _, host, queue in sorted(ranked, reverse=True)]


def _request(op: str, session_id: str, **fields: Any) -> tuple[str, str]:
    """A request's reply list and its message."""
    reply = keys.SESSION_REPLY_PREFIX + secrets.token_hex(12)
    return reply, json.dumps({"op": op, "session": session_id, "reply": reply, **fields})


def _push(queue: str, message: str) -> Command:
    return [("rpush", queue, message), ("expire", queue, REQUEST_TTL_S)]


# The steps of each operation, free of I/O: each yields the Redis commands of one round trip and is
# sent their results; `_drive` runs them on a Redis client, `_drive_async` on an asyncio one.


def _open_steps(spec: SessionSpec) -> Generator[Command, list[Any], tuple[str, dict[str, Any]]]:
    """Open a session on the live host with the most room: (its id, its record)."""
    deadline = time.monotonic() + HOSTS_WAIT_S
    while True:
        (names,) = yield [("smembers", keys.SESSION_HOSTS_KEY)]
        names = sorted(names)
        adverts = (
            (yield [("get", keys.SESSION_HOST_PREFIX + decoded(name)) for name in names]) if names else []
        )
        if any(advert is not None for advert in adverts) or time.monotonic() > deadline:
            break
        yield [("sleep", 0.2)]  # no host yet: a node that just started has its host up in a second
    for host, queue in _live_hosts(names, adverts):
        session_id = secrets.token_urlsafe(16)
        reply, message = _request("open", session_id, spec=spec.model_dump(mode="json"))
        yield _push(queue, message)
        (item,) = yield [("blpop", [reply], OPEN_TIMEOUT_S)]
        answer = json.loads(item[1]) if item is not None else {}
        if answer.get("opened"):
            return session_id, record_of(host, spec)
        if "invalid" in answer:
            raise ValueError(answer["invalid"])
        if "failed" in answer:
            raise SessionUnavailable(f"the node could not start a session: {answer['failed']}")
    if any(advert is not None for advert in adverts):
        raise SessionsFull("every node holds as many sessions as it may", retry_after_s=2.0)
    raise SessionUnavailable("no live node holds sessions (is a worker running with sessions > 0?)")


def _ask_steps(
    session_id: str, host: str, op: str, fields: dict[str, Any], wait_s: float
) -> Generator[Command, list[Any], dict[str, Any]]:
    """One request of a session, in the order its requests arrive: the host's answer (a run's
    `result`, a file's `file`, a shell's `shell`), or `lost` when the session's node is gone."""
    reply, message = _request(op, session_id, **fields)
    advert = keys.SESSION_HOST_PREFIX + host
    queue = keys.SESSION_QUEUE_PREFIX + host
    record, alive, *_ = yield [
        ("get", keys.session_key(session_id)),
        ("exists", advert),
        *_push(queue, message),
    ]
    _record(session_id, record)
    if not alive:
        return {"lost": "the node that held the session is gone"}
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        (item,) = yield [("blpop", [reply], WAIT_SLICE_S)]
        if item is not None:
            answer: dict[str, Any] = json.loads(item[1])
            if answer.get("ended"):
                raise SessionNotFound(f"session {session_id} has ended ({answer['ended']})")
            if answer.get("unknown"):
                return {"lost": "the session's node no longer holds it"}
            if "failed" in answer:
                raise SessionUnavailable(f"the node failed the request: {answer.get('failed')}")
            return answer
        (alive,) = yield [("exists", advert)]
        if not alive:
            return {"lost": "the node that held the session died during the run"}
    return {"lost": "the session's node did not answer in time"}


def _run_steps(
    session_id: str, host: str, request: dict[str, Any], wait_s: float, op: str = "run"
) -> Generator[Command, list[Any], SessionResult]:
    """One run (or a bash session's `exec`): its result."""
    answer = yield from _ask_steps(session_id, host, op, request, wait_s)
    if "lost" in answer:
        return lost_result(str(answer["lost"]))
    if "invalid" in answer:
        raise ValueError(answer["invalid"])
    return SessionResult.from_dict(answer["result"])


def _other_steps(
    session_id: str, host: str, op: str, fields: dict[str, Any]
) -> Generator[Command, list[Any], dict[str, Any]]:
    """A file or shell request: the host's report (SessionLost when the node is gone)."""
    answer = yield from _ask_steps(session_id, host, op, fields, FILE_WAIT_S)
    if "lost" in answer:
        raise SessionLost(f"{answer['lost']}: the session's state is lost; open a new session")
    if "invalid" in answer:
        raise ValueError(answer["invalid"])
    report = dict(answer.get("report") or {})
    if "content" in answer:
        report["content"] = answer["content"]
    return report


def _close_steps(session_id: str, host: str) -> Generator[Command, list[Any], None]:
    """End the session, and wait (a little) for its host to say so; nothing when it has ended."""
    reply, message = _request("close", session_id)
    queue = keys.SESSION_QUEUE_PREFIX + host
    record, *_ = yield [("get", keys.session_key(session_id)), *_push(queue, message)]
    if record is not None and "ended" not in json.loads(record):
        yield [("blpop", [reply], 5 * WAIT_SLICE_S)]


def _file_answer(report: dict[str, Any]) -> dict[str, Any]:
    """A file request's report; FileRefused when the session refused it."""
    error = report.get("error")
    if isinstance(error, dict):
        raise FileRefused(str(error.get("ename", "OSError")), str(error.get("evalue", "")))
    return report


def _attach_steps(session_id: str) -> Generator[Command, list[Any], dict[str, Any]]:
    (raw,) = yield [("get", keys.session_key(session_id))]
    return _record(session_id, raw)


Result = TypeVar("Result")


def _drive(client: Any, steps: Generator[Command, list[Any], Result]) -> Result:
    """Run an operation's steps on a (sync) Redis client."""
    answer: list[Any] | None = None
    while True:
        try:
            command = steps.send(answer) if answer is not None else next(steps)
        except StopIteration as done:
            return done.value
        if len(command) == 1:
            method, *arguments = command[0]
            if method == "sleep":
                time.sleep(*arguments)
                answer = [None]
            else:
                answer = [getattr(client, method)(*arguments)]
            continue
        with client.pipeline(transaction=False) as pipe:
            for method, *arguments in command:
                getattr(pipe, method)(*arguments)
            answer = pipe.execute()


async def _drive_async(client: Any, steps: Generator[Command, list[Any], Result]) -> Result:
    """Run an operation's steps on an asyncio Redis client."""
    answer: list[Any] | None = None
    while True:
        try:
            command = steps.send(answer) if answer is not None else next(steps)
        except StopIteration as done:
            return done.value
        if len(command) == 1:
            method, *arguments = command[0]
            call = asyncio.sleep(*arguments) if method == "sleep" else getattr(client, method)(*arguments)
            answer = [await call]
            continue
        async with client.pipeline(transaction=False) as pipe:
            for method, *arguments in command:
                getattr(pipe, method)(*arguments)
            answer = await pipe.execute()


class _SessionBase:
    """What both clients' sessions hold: the session's id, its host and its times."""

    def __init__(self, client: Any, session_id: str, record: dict[str, Any]) -> None:
        self.client = client
        self.id = session_id
        self.host = record["host"]
        self.ttl_s = record["ttl_s"]
        self.timeout_s = record["timeout_s"]
        self.kind = record.get("kind", "python")
        self.expires_at = time.time() + self.ttl_s  # unix time its idleness would end it

    def _run_request(
        self, code: str, stdin: str | None, timeout_s: float | None
    ) -> tuple[dict[str, Any], float]:
        if timeout_s is not None and not 0 < timeout_s <= MAX_RUN_TIMEOUT_S:
            raise ValueError(f"timeout_s must be in (0, {MAX_RUN_TIMEOUT_S:g}]")
        wait_s = (timeout_s or self.timeout_s) + INTERRUPT_GRACE_S + ANSWER_MARGIN_S
        return {"code": code, "stdin": stdin, "timeout_s": timeout_s}, wait_s

    def _ran(self, result: SessionResult) -> SessionResult:
        if result.session_alive:
            self.expires_at = time.time() + self.ttl_s
        return result

    def _command_request(
        self, code: str, stdin: str | None, timeout_s: float | None, shell: str | None, merge: bool,
        check_syntax: bool,
    ) -> tuple[dict[str, Any], float]:  # fmt: skip
        request, wait_s = self._run_request(code, stdin, timeout_s)
        if shell is not None or merge or check_syntax:
            request.update(shell=shell, merge=merge, check_syntax=check_syntax)
        return request, wait_s

    def _exec_request(
        self, command: str | list[str], timeout_s: float | None, env: dict[str, str] | None, cwd: str | None,
        merge: bool,
    ) -> tuple[dict[str, Any], float]:  # fmt: skip
        request, wait_s = self._run_request("", None, timeout_s)
        request.update(spec={"command": command, "env": env, "cwd": cwd, "merge": merge})
        return request, wait_s

    def _read_fields(self, path: str) -> dict[str, Any]:
        return {"file_op": "read", "path": path, "max_bytes": FILE_MAX_BYTES}

    def _write_fields(self, path: str, content: bytes, archive: bool) -> dict[str, Any]:
        if len(content) > FILE_MAX_BYTES:
            raise FileRefused("ValueError", f"{len(content)} bytes; the cap is {FILE_MAX_BYTES}")
        op = "upload" if archive else "write"
        return {"file_op": op, "path": path, "content": base64.b64encode(content).decode()}


class Session(_SessionBase):
    """A live session on the farm (sync): `run` code in it, `close` it (or use `with`)."""

    @classmethod
    def open(cls, client: Any, spec: SessionSpec | None = None) -> Session:
        """Open a session on the live node with the most room; SessionsFull when none has any."""
        return cls(client, *_drive(client, _open_steps(spec or SessionSpec())))

    @classmethod
    def attach(cls, client: Any, session_id: str) -> Session:
        """The session `session_id`, opened elsewhere (SessionNotFound when it has ended)."""
        return cls(client, session_id, _drive(client, _attach_steps(session_id)))

    def run(
        self,
        code: str,
        stdin: str | None = None,
        timeout_s: float | None = None,
        shell: str | None = None,
        merge: bool = False,
        check_syntax: bool = False,
    ) -> SessionResult:
        """Run `code` in the session (a `bash` session's: a command in its shell `shell`, default
        "default"; `merge`: stderr into stdout; `check_syntax`: refused unless `bash -n` parses it);
        its result (SessionNotFound when the session has ended)."""
        request, wait_s = self._command_request(code, stdin, timeout_s, shell, merge, check_syntax)
        return self._ran(_drive(self.client, _run_steps(self.id, self.host, request, wait_s)))

    def execute(
        self,
        command: str | list[str],
        timeout_s: float | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        merge: bool = False,
    ) -> SessionResult:
        """Run a program outside the shells of a `bash` session (a list of arguments, or a string
        for `/bin/sh -c`), as `subprocess.run` would: killed at its timeout."""
        request, wait_s = self._exec_request(command, timeout_s, env, cwd, merge)
        return self._ran(_drive(self.client, _run_steps(self.id, self.host, request, wait_s, op="exec")))

    def read_file(self, path: str) -> bytes:
        """The content of a file of the session's (FileRefused, naming the error, when refused)."""
        report = _file_answer(
            _drive(self.client, _other_steps(self.id, self.host, "file", self._read_fields(path)))
        )
        return base64.b64decode(report.get("content") or "")

    def write_file(self, path: str, content: bytes) -> None:
        """Write a file of the session's (its directories made where missing)."""
        fields = self._write_fields(path, content, archive=False)
        _file_answer(_drive(self.client, _other_steps(self.id, self.host, "file", fields)))

    def upload(self, path: str, archive: bytes) -> dict[str, Any]:
        """Unpack a tar or zip archive into the session's directory `path`; what it held."""
        fields = self._write_fields(path, archive, archive=True)
        return _file_answer(_drive(self.client, _other_steps(self.id, self.host, "file", fields)))

    def shell(self, op: str, name: str) -> dict[str, Any]:
        """Open or close (`op`) the bash shell `name` of a `bash` session; the session's report."""
        return _drive(self.client, _other_steps(self.id, self.host, "shell", {"shell_op": op, "name": name}))

    def close(self) -> None:
        """End the session (nothing happens when it has ended already)."""
        _drive(self.client, _close_steps(self.id, self.host))

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncSession(_SessionBase):
    """A live session on the farm (asyncio): `await s.run(code)`; `async with`."""

    @classmethod
    async def open(cls, client: Any, spec: SessionSpec | None = None) -> AsyncSession:
        """Open a session on the live node with the most room; SessionsFull when none has any."""
        return cls(client, *await _drive_async(client, _open_steps(spec or SessionSpec())))

    @classmethod
    async def attach(cls, client: Any, session_id: str) -> AsyncSession:
        """The session `session_id`, opened elsewhere (SessionNotFound when it has ended)."""
        return cls(client, session_id, await _drive_async(client, _attach_steps(session_id)))

    async def run(
        self,
        code: str,
        stdin: str | None = None,
        timeout_s: float | None = None,
        shell: str | None = None,
        merge: bool = False,
        check_syntax: bool = False,
    ) -> SessionResult:
        """Run `code` in the session; its result (SessionNotFound when the session has ended). See
        `Session.run`."""
        request, wait_s = self._command_request(code, stdin, timeout_s, shell, merge, check_syntax)
        return self._ran(await _drive_async(self.client, _run_steps(self.id, self.host, request, wait_s)))

    async def execute(
        self,
        command: str | list[str],
        timeout_s: float | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        merge: bool = False,
    ) -> SessionResult:
        """Run a program outside the shells of a `bash` session. See `Session.execute`."""
        request, wait_s = self._exec_request(command, timeout_s, env, cwd, merge)
        steps = _run_steps(self.id, self.host, request, wait_s, op="exec")
        return self._ran(await _drive_async(self.client, steps))

    async def read_file(self, path: str) -> bytes:
        """The content of a file of the session's. See `Session.read_file`."""
        steps = _other_steps(self.id, self.host, "file", self._read_fields(path))
        report = _file_answer(await _drive_async(self.client, steps))
        return base64.b64decode(report.get("content") or "")

    async def write_file(self, path: str, content: bytes) -> None:
        """Write a file of the session's. See `Session.write_file`."""
        steps = _other_steps(self.id, self.host, "file", self._write_fields(path, content, archive=False))
        _file_answer(await _drive_async(self.client, steps))

    async def upload(self, path: str, archive: bytes) -> dict[str, Any]:
        """Unpack an archive into the session's directory `path`. See `Session.upload`."""
        steps = _other_steps(self.id, self.host, "file", self._write_fields(path, archive, archive=True))
        return _file_answer(await _drive_async(self.client, steps))

    async def shell(self, op: str, name: str) -> dict[str, Any]:
        """Open or close (`op`) the bash shell `name`. See `Session.shell`."""
        steps = _other_steps(self.id, self.host, "shell", {"shell_op": op, "name": name})
        return await _drive_async(self.client, steps)

    async def close(self) -> None:
        """End the session (nothing happens when it has ended already)."""
        await _drive_async(self.client, _close_steps(self.id, self.host))

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
