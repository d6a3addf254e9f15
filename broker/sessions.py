"""Sessions: a sandboxed Python interpreter kept alive on one node between runs, for agents that run
code mid-rollout (`with farm.session(ttl_s=60) as s: s.run("x = 41"); s.run("x + 1").value`).

Routing is through Redis, as for batches: each node's session host (`workers.sessions`) advertises
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

import dataclasses
import json
import secrets
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalfarm.broker import keys

INTERRUPT_GRACE_S = 1.0  # sandbox.sessions' own: an interrupted cell's time to give up
ANSWER_MARGIN_S = 10.0  # beyond a run's timeout and grace before a live host is presumed stuck
WAIT_SLICE_S = 1.0  # how often a waiting client looks whether the session's host still lives
OPEN_TIMEOUT_S = 25.0  # a session's start (the host's first one starts its sandbox slot)
REQUEST_TTL_S = 60


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
        from evalfarm.sandbox.limits import Limits

        caps = self.limits
        return Limits(
            wall_s=caps.timeout_s, cpu_s=caps.timeout_s, memory_mb=caps.memory_mb,
            output_bytes=caps.output_bytes, file_size_mb=caps.file_size_mb, workdir_mb=caps.workdir_mb,
            open_files=caps.open_files, processes=caps.processes,
        )  # fmt: skip

    def run_timeout(self, given: Any) -> float:
        """A run's timeout: the one it asks for (within 600 s), else the session's default."""
        if isinstance(given, int | float) and not isinstance(given, bool) and 0 < given <= 600:
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


class _Protocol:
    """The messages of sessions on Redis, and what their answers mean (no I/O here)."""

    @staticmethod
    def pick_host(names: list[Any], adverts: list[Any]) -> list[tuple[str, str]]:
        """Live hosts with room, most room first: (host id, its request list)."""
        ranked = []
        for name, advert in zip(names, adverts, strict=True):
            if advert is None:
                continue
            try:
                info = json.loads(advert)
                room = int(info["capacity"]) - int(info["open"])
                if room > 0:
                    ranked.append((room, secrets.randbelow(1 << 30), _text(name), str(info["queue"])))
            except (ValueError, KeyError, TypeError):
                continue
        return [(host, queue) for _, _, host, queue in sorted(ranked, reverse=True)]

    @staticmethod
    def request(op: str, session_id: str, **fields: Any) -> tuple[str, str]:
        """A request's reply list and its message."""
        reply = keys.SESSION_REPLY_PREFIX + secrets.token_hex(12)
        return reply, json.dumps({"op": op, "session": session_id, "reply": reply, **fields})

    @staticmethod
    def routing(session_id: str, record: Any, host_alive: bool) -> None:
        """Raise unless the session's record says its host holds it."""
        text = _text(record) if record is not None else None
        if text is None:
            raise SessionNotFound(f"no session {session_id} (never opened, closed, or expired)")
        if text.startswith("ended:"):
            raise SessionNotFound(f"session {session_id} has ended ({text[6:]})")

    @staticmethod
    def run_answer(session_id: str, answer: dict[str, Any]) -> SessionResult:
        if answer.get("unknown"):
            return lost_result("the session's node no longer holds it")
        return SessionResult.from_dict(answer["result"])

    @staticmethod
    def wait_s(spec_timeout_s: float, timeout_s: float | None) -> float:
        return (timeout_s or spec_timeout_s) + INTERRUPT_GRACE_S + ANSWER_MARGIN_S


class Session:
    """A live session on the farm (sync): `run` code in it, `close` it (or use `with`)."""

    def __init__(self, client: Any, session_id: str, host: str, spec: SessionSpec) -> None:
        self.client = client
        self.id = session_id
        self.host = host
        self.spec = spec
        self.expires_at = time.time() + spec.ttl_s

    @classmethod
    def open(cls, client: Any, spec: SessionSpec | None = None) -> Session:
        """Open a session on the live node with the most room; SessionsFull when none has any."""
        spec = spec or SessionSpec()
        names = list(client.smembers(keys.SESSION_HOSTS_KEY))
        adverts = client.mget([keys.SESSION_HOST_PREFIX + _text(n) for n in names]) if names else []
        for host, queue in _Protocol.pick_host(names, adverts):
            answer = _ask(client, queue, "open", secrets.token_urlsafe(16), spec)
            if answer is not None and answer[1].get("opened"):
                return cls(client, answer[0], host, spec)
            _raise_refusal(answer)
        raise _no_room(adverts)

    def run(self, code: str, stdin: str | None = None, timeout_s: float | None = None) -> SessionResult:
        """Run `code` in the session; its result (SessionNotFound when the session has ended)."""
        reply, message = _Protocol.request("run", self.id, code=code, stdin=stdin, timeout_s=timeout_s)
        queue, advert = keys.SESSION_QUEUE_PREFIX + self.host, keys.SESSION_HOST_PREFIX + self.host
        with self.client.pipeline() as pipe:
            pipe.get(keys.session_key(self.id)).exists(advert).rpush(queue, message).expire(
                queue, REQUEST_TTL_S
            )
            record, alive, _, _ = pipe.execute()
        _Protocol.routing(self.id, record, bool(alive))
        if not alive:
            return lost_result("the node that held the session is gone")
        deadline = time.monotonic() + _Protocol.wait_s(self.spec.limits.timeout_s, timeout_s)
        while time.monotonic() < deadline:
            item = self.client.blpop([reply], timeout=WAIT_SLICE_S)
            if item is not None:
                self.expires_at = time.time() + self.spec.ttl_s
                return _Protocol.run_answer(self.id, json.loads(item[1]))
            if not self.client.exists(advert):
                return lost_result("the node that held the session died during the run")
        return lost_result("the session's node did not answer in time")

    def close(self) -> None:
        """End the session (nothing happens when it has ended already)."""
        _close(self.client, self.id, self.host)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncSession:
    """A live session on the farm (asyncio): `await s.run(code)`; `async with`."""

    def __init__(self, client: Any, session_id: str, host: str, spec: SessionSpec) -> None:
        self.client = client
        self.id = session_id
        self.host = host
        self.spec = spec
        self.expires_at = time.time() + spec.ttl_s

    @classmethod
    async def open(cls, client: Any, spec: SessionSpec | None = None) -> AsyncSession:
        """Open a session on the live node with the most room; SessionsFull when none has any."""
        spec = spec or SessionSpec()
        names = list(await client.smembers(keys.SESSION_HOSTS_KEY))
        adverts = await client.mget([keys.SESSION_HOST_PREFIX + _text(n) for n in names]) if names else []
        for host, queue in _Protocol.pick_host(names, adverts):
            answer = await _ask_async(client, queue, "open", secrets.token_urlsafe(16), spec)
            if answer is not None and answer[1].get("opened"):
                return cls(client, answer[0], host, spec)
            _raise_refusal(answer)
        raise _no_room(adverts)

    async def run(self, code: str, stdin: str | None = None, timeout_s: float | None = None) -> SessionResult:
        """Run `code` in the session; its result (SessionNotFound when the session has ended)."""
        reply, message = _Protocol.request("run", self.id, code=code, stdin=stdin, timeout_s=timeout_s)
        queue, advert = keys.SESSION_QUEUE_PREFIX + self.host, keys.SESSION_HOST_PREFIX + self.host
        async with self.client.pipeline() as pipe:
            pipe.get(keys.session_key(self.id)).exists(advert).rpush(queue, message).expire(
                queue, REQUEST_TTL_S
            )
            record, alive, _, _ = await pipe.execute()
        _Protocol.routing(self.id, record, bool(alive))
        if not alive:
            return lost_result("the node that held the session is gone")
        deadline = time.monotonic() + _Protocol.wait_s(self.spec.limits.timeout_s, timeout_s)
        while time.monotonic() < deadline:
            item = await self.client.blpop([reply], timeout=WAIT_SLICE_S)
            if item is not None:
                self.expires_at = time.time() + self.spec.ttl_s
                return _Protocol.run_answer(self.id, json.loads(item[1]))
            if not await self.client.exists(advert):
                return lost_result("the node that held the session died during the run")
        return lost_result("the session's node did not answer in time")

    async def close(self) -> None:
        """End the session (nothing happens when it has ended already)."""
        reply, message = _Protocol.request("close", self.id)
        async with self.client.pipeline() as pipe:
            pipe.get(keys.session_key(self.id)).rpush(keys.SESSION_QUEUE_PREFIX + self.host, message)
            pipe.expire(keys.SESSION_QUEUE_PREFIX + self.host, REQUEST_TTL_S)
            record, _, _ = await pipe.execute()
        if record is not None and not _text(record).startswith("ended:"):
            await self.client.blpop([reply], timeout=WAIT_SLICE_S * 5)

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _no_room(adverts: list[Any]) -> SessionError:
    """Why no session opened: every live node is full (SessionsFull), or none holds sessions."""
    if any(advert is not None for advert in adverts):
        return SessionsFull("every node holds as many sessions as it may", retry_after_s=2.0)
    return SessionUnavailable("no live node holds sessions (is a worker running with sessions > 0?)")


def _ask(
    client: Any, queue: str, op: str, session_id: str, spec: SessionSpec
) -> tuple[str, dict[str, Any]] | None:
    reply, message = _Protocol.request(op, session_id, spec=spec.model_dump(mode="json"))
    with client.pipeline() as pipe:
        pipe.rpush(queue, message).expire(queue, REQUEST_TTL_S).execute()
    item = client.blpop([reply], timeout=OPEN_TIMEOUT_S)
    return (session_id, json.loads(item[1])) if item is not None else None


async def _ask_async(
    client: Any, queue: str, op: str, session_id: str, spec: SessionSpec
) -> tuple[str, dict[str, Any]] | None:
    reply, message = _Protocol.request(op, session_id, spec=spec.model_dump(mode="json"))
    async with client.pipeline() as pipe:
        await pipe.rpush(queue, message).expire(queue, REQUEST_TTL_S).execute()
    item = await client.blpop([reply], timeout=OPEN_TIMEOUT_S)
    return (session_id, json.loads(item[1])) if item is not None else None


def _raise_refusal(answer: tuple[str, dict[str, Any]] | None) -> None:
    """A host's refusal that trying the next host cannot mend."""
    if answer is None:
        return  # no answer in time: the next host may
    if "invalid" in answer[1]:
        raise ValueError(answer[1]["invalid"])
    if "failed" in answer[1]:
        raise SessionUnavailable(f"the node could not start a session: {answer[1]['failed']}")


def _close(client: Any, session_id: str, host: str) -> None:
    reply, message = _Protocol.request("close", session_id)
    with client.pipeline() as pipe:
        pipe.get(keys.session_key(session_id)).rpush(keys.SESSION_QUEUE_PREFIX + host, message)
        pipe.expire(keys.SESSION_QUEUE_PREFIX + host, REQUEST_TTL_S)
        record, _, _ = pipe.execute()
    if record is not None and not _text(record).startswith("ended:"):
        client.blpop([reply], timeout=WAIT_SLICE_S * 5)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
