"""Sessions: a sandboxed Python interpreter kept alive on one node between runs, for agents that run
code mid-rollout (`with farm.session(ttl_s=60) as s: s.run("x = 41"); s.run("x + 1").value`).

Routing is through Redis, as for batches: each node's session host (`workers.session_host`) advertises
itself and consumes a request list of its own; a session's record names the host incarnation that
holds it, so a run goes to that host's list and is answered on a reply list of its own, in order.
A run for a session whose host is gone (its advertisement expired: the node died) answers
`infra_error` with `infra_reason` `session_lost`, never a fresh interpreter: the caller opens a new
session. A session that ended (closed, idle past its `ttl_s`, killed for a cell that ignored its
timeout's interrupt) or never existed raises `SessionNotFound`.

`SessionSpec` (and its limits) is what a session is opened with; the sync `Session` and the asyncio
`AsyncSession` share everything but their waits (`_Protocol`).
"""

from __future__ import annotations

import asyncio
import dataclasses
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
MAX_RUN_TIMEOUT_S = 600.0


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
    ttl_s: float = Field(default=60.0, gt=0, le=86400, description="ended after this long idle")
    limits: SessionLimits = SessionLimits()

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
    infra_reason: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionResult:
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in data.items() if k in fields}
        values["truncated"] = tuple(values.get("truncated") or ())
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["truncated"] = list(self.truncated)
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
    its idle time and its runs' default timeout."""
    return {"host": host, "ttl_s": spec.ttl_s, "timeout_s": spec.limits.timeout_s}


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


def _run_steps(
    session_id: str, host: str, request: dict[str, Any], wait_s: float
) -> Generator[Command, list[Any], SessionResult]:
    """One run, in the order the session's requests arrive: its result."""
    reply, message = _request("run", session_id, **request)
    advert = keys.SESSION_HOST_PREFIX + host
    queue = keys.SESSION_QUEUE_PREFIX + host
    record, alive, *_ = yield [
        ("get", keys.session_key(session_id)),
        ("exists", advert),
        *_push(queue, message),
    ]
    _record(session_id, record)
    if not alive:
        return lost_result("the node that held the session is gone")
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        (item,) = yield [("blpop", [reply], WAIT_SLICE_S)]
        if item is not None:
            answer = json.loads(item[1])
            if "result" in answer:
                return SessionResult.from_dict(answer["result"])
            if answer.get("ended"):
                raise SessionNotFound(f"session {session_id} has ended ({answer['ended']})")
            if answer.get("unknown"):
                return lost_result("the session's node no longer holds it")
            raise SessionUnavailable(f"the node failed the run: {answer.get('failed')}")
        (alive,) = yield [("exists", advert)]
        if not alive:
            return lost_result("the node that held the session died during the run")
    return lost_result("the session's node did not answer in time")


def _close_steps(session_id: str, host: str) -> Generator[Command, list[Any], None]:
    """End the session, and wait (a little) for its host to say so; nothing when it has ended."""
    reply, message = _request("close", session_id)
    queue = keys.SESSION_QUEUE_PREFIX + host
    record, *_ = yield [("get", keys.session_key(session_id)), *_push(queue, message)]
    if record is not None and "ended" not in json.loads(record):
        yield [("blpop", [reply], 5 * WAIT_SLICE_S)]


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

    def run(self, code: str, stdin: str | None = None, timeout_s: float | None = None) -> SessionResult:
        """Run `code` in the session; its result (SessionNotFound when the session has ended)."""
        request, wait_s = self._run_request(code, stdin, timeout_s)
        return self._ran(_drive(self.client, _run_steps(self.id, self.host, request, wait_s)))

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

    async def run(self, code: str, stdin: str | None = None, timeout_s: float | None = None) -> SessionResult:
        """Run `code` in the session; its result (SessionNotFound when the session has ended)."""
        request, wait_s = self._run_request(code, stdin, timeout_s)
        return self._ran(await _drive_async(self.client, _run_steps(self.id, self.host, request, wait_s)))

    async def close(self) -> None:
        """End the session (nothing happens when it has ended already)."""
        await _drive_async(self.client, _close_steps(self.id, self.host))

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
