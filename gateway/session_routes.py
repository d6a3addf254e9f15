"""Sessions over HTTP: a sandboxed interpreter kept alive between requests (`broker.session_client`).

- `POST /v1/sessions` `{"language": "python", "ttl_s": 60, "limits": {...}}` -> 201
  `{"session_id", "expires_at"}` (unix seconds: when idleness would end it). 429 with `Retry-After`
  when no node has room for another session; 503 when no node holds sessions at all.
- `POST /v1/sessions/{id}/run` `{"code", "stdin"?, "timeout_s"?}` -> 200 and the run's result:
  `status` (the contract's), `stdout`, `stderr`, `value` (the repr of the last expression's value, as
  a notebook shows it, or null), `error`, `exception` (ename, evalue, traceback), `session_alive`,
  `run_s`, `truncated` (the streams cut), `output_bytes` (each stream's cap: the session's
  `output_bytes`, or less where its node's output budget allows less), `notice` (what cut them),
  `expires_at`. A run past its timeout is interrupted: `status` "timeout", and
  `session_alive` says whether the session lived through it. A session whose node died answers
  `infra_error` with `infra_reason` "session_lost". 404 for a session unknown, closed or ended.
- `DELETE /v1/sessions/{id}` -> 204 (404 when there is no such session).

The gateway keeps nothing a restart would lose: a session lives on its node, and its record in Redis
says which; one not used for its `ttl_s` ends there on its own.
"""

from __future__ import annotations

import collections
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from evalfarm.broker.session_client import (
    MAX_RUN_TIMEOUT_S,
    AsyncSession,
    SessionNotFound,
    SessionResult,
    SessionsFull,
    SessionSpec,
    SessionUnavailable,
)
from evalfarm.gateway.responses import JSONResponse
from evalfarm.gateway.routing import Gateway, RequestError, json_error, read_body, route
from evalfarm.status import Status

STATUSES = frozenset(status.value for status in Status)
KNOWN_SESSIONS = 65536  # sessions whose host the gateway remembers (others: one more Redis read)


class RunRequest(BaseModel):
    """The body of POST /v1/sessions/{id}/run."""

    model_config = ConfigDict(extra="forbid")
    code: str
    stdin: str | None = None
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_RUN_TIMEOUT_S)


class Sessions:
    """The gateway's handle on sessions: opens them, finds them by id, counts the lost."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.known: collections.OrderedDict[str, AsyncSession] = collections.OrderedDict()

    @property
    def client(self) -> Any:
        return self.gateway.farm.redis

    async def open(self, spec: SessionSpec) -> AsyncSession:
        """A new session (RequestError 429 or 503 when none can be had)."""
        try:
            session = await AsyncSession.open(self.client, spec)
        except SessionsFull as error:
            raise RequestError(429, str(error), retry_after_s=error.retry_after_s) from None
        except SessionUnavailable as error:
            raise RequestError(503, str(error)) from None
        except ValueError as error:
            raise RequestError(400, str(error)) from None
        self._remember(session)
        return session

    async def find(self, session_id: str) -> AsyncSession:
        """The session `session_id` (RequestError 404 when it has ended or never was)."""
        session = self.known.get(session_id)
        if session is not None:
            return session
        try:
            session = await AsyncSession.attach(self.client, session_id)
        except SessionNotFound as error:
            raise RequestError(404, str(error)) from None
        self._remember(session)
        return session

    async def run(
        self, session: AsyncSession, code: str, stdin: str | None, timeout_s: float | None
    ) -> SessionResult:
        """Run code in the session; 404 when it has ended, 503 when its node failed the run."""
        try:
            result = await session.run(code, stdin, timeout_s)
        except SessionNotFound as error:
            self.known.pop(session.id, None)
            raise RequestError(404, str(error)) from None
        except SessionUnavailable as error:
            raise RequestError(503, str(error)) from None
        label = result.status if result.status in STATUSES else "other"
        self.gateway.metrics.session_runs.labels(label).inc()
        if result.infra_reason == "session_lost":
            self.gateway.metrics.sessions_lost.inc()
        if not result.session_alive:
            self.known.pop(session.id, None)
        return result

    async def close(self, session: AsyncSession) -> None:
        self.known.pop(session.id, None)
        await session.close()

    def _remember(self, session: AsyncSession) -> None:
        self.known[session.id] = session
        self.known.move_to_end(session.id)
        while len(self.known) > KNOWN_SESSIONS:
            self.known.popitem(last=False)


async def open_session(request: Request, gateway: Gateway) -> Response:
    spec = await read_body(request, gateway.settings.gateway_max_body_bytes, SessionSpec)
    session = await gateway.sessions.open(spec)
    return JSONResponse({"session_id": session.id, "expires_at": session.expires_at}, status_code=201)


async def run(request: Request, gateway: Gateway) -> Response:
    body = await read_body(request, gateway.settings.gateway_max_body_bytes, RunRequest)
    session = await gateway.sessions.find(request.path_params["session_id"])
    result = await gateway.sessions.run(session, body.code, body.stdin, body.timeout_s)
    return JSONResponse({**result.to_dict(), "expires_at": session.expires_at})


async def close(request: Request, gateway: Gateway) -> Response:
    session = await gateway.sessions.find(request.path_params["session_id"])
    await gateway.sessions.close(session)
    return Response(status_code=204)


def retry_after(error: RequestError) -> Response:
    """The native error shape, with `Retry-After` (whole seconds) where the error has one."""
    answer = json_error(error)
    if error.retry_after_s is not None:
        answer.headers["Retry-After"] = str(max(1, math.ceil(error.retry_after_s)))
    return answer


def routes(gateway: Gateway) -> list[Route]:
    """The session routes."""
    return [
        route("/v1/sessions", open_session, gateway, retry_after, ["POST"]),
        route("/v1/sessions/{session_id}/run", run, gateway, retry_after, ["POST"]),
        route("/v1/sessions/{session_id}", close, gateway, retry_after, ["DELETE"]),
    ]
