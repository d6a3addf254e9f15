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
- `GET /v1/sessions/{id}/files?path=P` -> 200 and the file's bytes; `PUT` the same with the bytes as
  the body -> 200 `{"bytes"}`, or with `&archive=true` a tar or zip unpacked into the directory P ->
  200 `{"members", "bytes"}`. A refusal is 400 with `error` and `ename` (a path outside the
  session's files or through a link, a cap, an archive that could leave its directory, a full disk),
  404 for a missing file, 413 past the 16 MiB a transfer may carry.
- `POST /v1/workspaces` with a tar or zip archive as the body -> 201 `{"workspace_id", "members",
  "bytes"}`; a session opened with `{"workspace": id}` finds its files at /workspace, shared
  read-only by every session of the group, each writing its own copy. 400 for an archive refused.

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
    FILE_MAX_BYTES,
    MAX_RUN_TIMEOUT_S,
    AsyncSession,
    FileRefused,
    SessionError,
    SessionLost,
    SessionNotFound,
    SessionResult,
    SessionsFull,
    SessionSpec,
    SessionUnavailable,
    checked_workspace,
    upload_workspace_async,
)
from evalfarm.gateway.responses import JSONResponse
from evalfarm.gateway.routing import Gateway, RequestError, json_error, read_body, read_bytes, route
from evalfarm.status import Status

STATUSES = frozenset(status.value for status in Status)
FILE_OPS = frozenset({"read", "write", "upload"})
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

    async def ask(self, session: AsyncSession, call: Any, op: str = "run") -> Any:
        """`await call` (a request of `session`'s: a run or a program, `op` "run", else a file's
        `op`), its session errors as the HTTP statuses they are: 404 ended, 503 lost or failed, 400
        malformed, 404 or 400 refused; counted in the gateway's metrics."""
        try:
            answer = await call
        except SessionNotFound as error:
            self.known.pop(session.id, None)
            raise RequestError(404, str(error)) from None
        except SessionLost as error:
            self.known.pop(session.id, None)
            self.gateway.metrics.sessions_lost.inc()
            raise RequestError(503, str(error)) from None
        except FileRefused as error:
            self.gateway.metrics.session_files.labels(op, "refused").inc()
            status = 404 if error.ename == "FileNotFoundError" else 400
            raise FileError(status, str(error), error.ename) from None
        except SessionError as error:
            raise RequestError(503, str(error)) from None
        except ValueError as error:
            raise RequestError(400, str(error)) from None
        if isinstance(answer, SessionResult):
            label = answer.status if answer.status in STATUSES else "other"
            self.gateway.metrics.session_runs.labels(label).inc()
        elif op in FILE_OPS:
            self.gateway.metrics.session_files.labels(op, "ok").inc()
        return answer

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


class FileError(RequestError):
    """A file request the session refused, with the error's Python name."""

    def __init__(self, status: int, message: str, ename: str) -> None:
        super().__init__(status, message)
        self.ename = ename


async def read_file(request: Request, gateway: Gateway) -> Response:
    session = await gateway.sessions.find(request.path_params["session_id"])
    content = await gateway.sessions.ask(session, session.read_file(_path(request)), "read")
    return Response(content, media_type="application/octet-stream")


async def write_file(request: Request, gateway: Gateway) -> Response:
    path = _path(request)
    content = await read_bytes(request, FILE_MAX_BYTES)
    session = await gateway.sessions.find(request.path_params["session_id"])
    if request.query_params.get("archive", "").lower() in ("1", "true", "tar", "zip"):
        report = await gateway.sessions.ask(session, session.upload(path, content), "upload")
        return JSONResponse({"members": report.get("members"), "bytes": report.get("bytes")})
    await gateway.sessions.ask(session, session.write_file(path, content), "write")
    return JSONResponse({"bytes": len(content)})


async def upload_workspace(request: Request, gateway: Gateway) -> Response:
    """Keep the body (a tar or zip) as a workspace, once it is checked to unpack whole."""
    import asyncio

    data = await read_bytes(request, gateway.settings.gateway_max_workspace_bytes)
    try:
        held = await asyncio.to_thread(checked_workspace, data)
    except ValueError as error:
        gateway.metrics.session_files.labels("workspace", "refused").inc()
        raise RequestError(400, f"the workspace was refused: {error}") from None
    gateway.metrics.session_files.labels("workspace", "ok").inc()
    identity = await upload_workspace_async(gateway.farm.redis, data)
    return JSONResponse(
        {"workspace_id": identity, "members": held.members, "bytes": held.bytes}, status_code=201
    )


def _path(request: Request) -> str:
    path = request.query_params.get("path")
    if not path:
        raise RequestError(400, "the query must name the file: ?path=...")
    return path


def retry_after(error: RequestError) -> Response:
    """The native error shape, with `Retry-After` (whole seconds) where the error has one."""
    answer = json_error(error)
    if isinstance(error, FileError):
        answer = JSONResponse({"error": error.message, "ename": error.ename}, status_code=error.status)
    if error.retry_after_s is not None:
        answer.headers["Retry-After"] = str(max(1, math.ceil(error.retry_after_s)))
    return answer


def routes(gateway: Gateway) -> list[Route]:
    """The session routes."""
    return [
        route("/v1/sessions", open_session, gateway, retry_after, ["POST"]),
        route("/v1/sessions/{session_id}/run", run, gateway, retry_after, ["POST"]),
        route("/v1/sessions/{session_id}", close, gateway, retry_after, ["DELETE"]),
        route("/v1/sessions/{session_id}/files", read_file, gateway, retry_after, ["GET"]),
        route("/v1/sessions/{session_id}/files", write_file, gateway, retry_after, ["PUT"]),
        route("/v1/workspaces", upload_workspace, gateway, retry_after, ["POST"]),
    ]
