"""SWE-ReX's remote runtime protocol over farm sessions: `swerex.runtime.remote.RemoteRuntime`, as SWE-agent
and agent trainers use it, drives a farm sandbox unchanged.

- `POST /v1/sandboxes` (body optional: `{"ttl_s", "limits", "workspace"}`) opens a sandbox, a farm
  session of kind `bash` with no shell yet, and answers 201 `{"url", "sandbox_id", "expires_at"}`: the
  base URL a rollout gives `RemoteRuntime(host=url, port=None, auth_token=TOKEN)`, whose `X-API-Key`
  header carries the gateway's token. 429 with `Retry-After` when no node has room.
- Under that URL, SWE-ReX's server's routes with its request and response shapes: `GET /is_alive`,
  `POST /create_session`, `/run_in_session`, `/close_session`, `/execute`, `/read_file`,
  `/write_file`, `/upload` (its multipart form: `file`, `target_path`, `unzip`), `/close`.
- A failure SWE-ReX's client re-raises comes back as its server sends it: HTTP 511 with
  `{"swerexception": {"message", "class_path", "traceback", "extra_info"}}` (CommandTimeoutError,
  NonZeroExitCodeError, BashIncorrectSyntaxError, SessionDoesNotExistError, SessionExistsError, a
  builtin error such as FileNotFoundError). A sandbox whose node died is HTTP 503 (the farm's fault,
  which the client raises as an HTTP error, never as the command's); an unknown or ended one 404,
  with FastAPI's `{"detail"}`.
- `X-Request-ID` (the client's idempotency key) is honoured as SWE-ReX's server does: a request
  sent again with the id of the sandbox's last one gets that one's answer, not a second run.

What differs from a SWE-ReX server: a shell has no terminal (a command's output is its stdout and
stderr merged, in order; `is_interactive_command`, for programs that wait on a prompt, is refused
with SwerexException); a command past its timeout is interrupted at once (its CommandTimeoutError
leaves the shell ready: a BashInterruptAction after it finds nothing running); paths are the
sandbox's own (under its /tmp and /workspace).
"""

from __future__ import annotations

import collections
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from evalfarm.broker.session_client import (
    FILE_MAX_BYTES,
    MAX_RUN_TIMEOUT_S,
    AsyncSession,
    SessionLimits,
    SessionResult,
    SessionSpec,
)
from evalfarm.gateway.responses import JSONResponse
from evalfarm.gateway.routing import Gateway, RequestError, read_bytes, route
from evalfarm.gateway.session_routes import FileError, retry_after

PREFIX = "/v1/sandboxes/{session_id}"
EXCEPTIONS = "swerex.exceptions."
REPLIES_KEPT = 4096  # sandboxes whose last answer is kept for a retried request


class SwerexError(Exception):
    """A failure SWE-ReX's client re-raises: its class's path, its message, its extra information."""

    def __init__(self, class_path: str, message: str, extra_info: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.class_path = class_path
        self.message = message
        self.extra_info = extra_info or {}


class SandboxRequest(BaseModel):
    """The body of POST /v1/sandboxes (all optional)."""

    model_config = ConfigDict(extra="forbid")
    ttl_s: float = Field(default=600.0, gt=0, le=86400)
    limits: SessionLimits = SessionLimits()
    workspace: str | None = None


class _Shaped(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CreateSession(_Shaped):
    session: str = "default"
    startup_source: list[str] = []
    session_type: Literal["bash"] = "bash"
    startup_timeout: float = 1.0


class Action(_Shaped):
    command: str = ""
    session: str = "default"
    timeout: float | None = None
    is_interactive_command: bool = False
    is_interactive_quit: bool = False
    check: Literal["silent", "raise", "ignore"] = "raise"
    error_msg: str = ""
    expect: list[str] = []
    action_type: Literal["bash", "bash_interrupt"] = "bash"


class CloseSession(_Shaped):
    session: str = "default"
    session_type: Literal["bash"] = "bash"


class Command(_Shaped):
    command: str | list[str]
    timeout: float | None = None
    shell: bool = False
    check: bool = False
    error_msg: str = ""
    env: dict[str, str] | None = None
    cwd: str | None = None
    merge_output_streams: bool = False


class ReadFile(_Shaped):
    path: str
    encoding: str | None = None
    errors: str | None = None


class WriteFile(_Shaped):
    content: str
    path: str


class Sandboxes:
    """The SWE-ReX routes' state: each sandbox's last answer, for a retried request."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.replies: collections.OrderedDict[str, tuple[str, int, bytes]] = collections.OrderedDict()

    async def open(self, request: Request, gateway: Gateway) -> Response:
        body = await self._body(request, SandboxRequest)
        spec = SessionSpec.model_validate(
            {
                "kind": "bash",
                "shell": False,
                "ttl_s": body.ttl_s,
                "limits": body.limits.model_dump(),
                "workspace": body.workspace,
            }
        )
        session = await gateway.sessions.open(spec)
        url = f"{str(request.base_url).rstrip('/')}/v1/sandboxes/{session.id}"
        answer = {"url": url, "sandbox_id": session.id, "expires_at": session.expires_at}
        return JSONResponse(answer, status_code=201)

    def handler(self, method: Any) -> Any:
        """`method` as a route's handler: the sandbox found, a retried request answered again, a
        SwerexError in SWE-ReX's shape."""

        async def handle(request: Request, gateway: Gateway) -> Response:
            sandbox_id = request.path_params["session_id"]
            request_id = request.headers.get("x-request-id")
            kept = self.replies.get(sandbox_id)
            if request_id and kept is not None and kept[0] == request_id:
                return Response(kept[2], status_code=kept[1], media_type="application/json")
            session = await gateway.sessions.find(sandbox_id)
            try:
                answer = await method(request, session)
            except SwerexError as error:
                answer = transferred(error)
            except FileError as error:
                answer = transferred(SwerexError(f"builtins.{error.ename}", error.message))
            if request_id:
                self._keep(sandbox_id, request_id, answer)
            return answer

        return handle

    def _keep(self, sandbox_id: str, request_id: str, answer: Response) -> None:
        self.replies[sandbox_id] = (request_id, answer.status_code, bytes(answer.body))
        self.replies.move_to_end(sandbox_id)
        while len(self.replies) > REPLIES_KEPT:
            self.replies.popitem(last=False)

    # -- the routes ---------------------------------------------------------------------------

    async def is_alive(self, request: Request, session: AsyncSession) -> Response:
        return JSONResponse({"is_alive": True, "message": ""})

    async def create_session(self, request: Request, session: AsyncSession) -> Response:
        body = await self._body(request, CreateSession)
        self._shell_report(
            await self.gateway.sessions.ask(session, session.shell("open", body.session), "shell")
        )
        for path in body.startup_source:
            await self._run(session, f"source {path}", body.session, body.startup_timeout or None)
        return JSONResponse({"output": "", "session_type": "bash"})

    async def close_session(self, request: Request, session: AsyncSession) -> Response:
        body = await self._body(request, CloseSession)
        self._shell_report(
            await self.gateway.sessions.ask(session, session.shell("close", body.session), "shell")
        )
        return JSONResponse({"session_type": "bash"})

    async def run_in_session(self, request: Request, session: AsyncSession) -> Response:
        action = await self._body(request, Action)
        if action.action_type == "bash_interrupt":  # a command past its timeout was interrupted then
            return JSONResponse(_observation("", 0))
        if action.is_interactive_command or action.is_interactive_quit:
            raise SwerexError(
                EXCEPTIONS + "SwerexException",
                "interactive commands need a terminal, which a farm shell has not",
            )
        result = await self._run(session, action.command, action.session, action.timeout)
        code = None if action.check == "ignore" else result.exit_code
        if action.check == "raise" and code != 0:
            message = (
                f"Command {action.command!r} failed with exit code {code}. "
                f"Here is the output:\n{result.stdout!r}"
            )
            raise SwerexError(
                EXCEPTIONS + "NonZeroExitCodeError",
                f"{action.error_msg}: {message}" if action.error_msg else message,
            )
        return JSONResponse(_observation(result.stdout, code))

    async def execute(self, request: Request, session: AsyncSession) -> Response:
        body = await self._body(request, Command)
        command: str | list[str] = body.command
        if body.shell:
            command = body.command if isinstance(body.command, str) else " ".join(body.command)
        elif isinstance(command, str):
            command = [command]  # as subprocess.run takes a string without a shell: a program's name
        timeout_s = _timeout(body.timeout)
        call = session.execute(command, timeout_s, body.env, body.cwd, body.merge_output_streams)
        result = self._checked(await self._asked(session, call))
        if result.status == "timeout":
            raise SwerexError(
                EXCEPTIONS + "CommandTimeoutError",
                f"Timeout ({body.timeout}s) exceeded while running command",
            )
        if body.check and result.exit_code != 0:
            message = (
                f"Command {body.command!r} failed with exit code {result.exit_code}. "
                f"Stdout:\n{result.stdout!r}\nStderr:\n{result.stderr!r}"
            )
            raise SwerexError(
                EXCEPTIONS + "NonZeroExitCodeError",
                f"{body.error_msg}: {message}" if body.error_msg else message,
            )
        return JSONResponse({"stdout": result.stdout, "stderr": result.stderr, "exit_code": result.exit_code})

    async def read_file(self, request: Request, session: AsyncSession) -> Response:
        body = await self._body(request, ReadFile)
        content = await self.gateway.sessions.ask(session, session.read_file(body.path), "read")
        try:
            text = content.decode(body.encoding or "utf-8", body.errors or "strict")
        except (UnicodeDecodeError, LookupError) as error:
            raise SwerexError(f"builtins.{type(error).__name__}", str(error)) from None
        return JSONResponse({"content": text})

    async def write_file(self, request: Request, session: AsyncSession) -> Response:
        body = await self._body(request, WriteFile)
        await self.gateway.sessions.ask(
            session, session.write_file(body.path, body.content.encode()), "write"
        )
        return JSONResponse({})

    async def upload(self, request: Request, session: AsyncSession) -> Response:
        """SWE-ReX's multipart upload: a file, or a directory zipped (`unzip`), put at `target_path`."""
        if int(request.headers.get("content-length") or 0) > FILE_MAX_BYTES + (1 << 20):
            raise RequestError(413, f"an upload carries at most {FILE_MAX_BYTES} bytes")
        async with request.form(max_files=1, max_fields=8) as form:
            upload, target = form.get("file"), form.get("target_path")
            if upload is None or isinstance(upload, str) or not isinstance(target, str):
                raise RequestError(422, "the form needs a file and a target_path")
            data = await upload.read(FILE_MAX_BYTES + 1)
            unzip = str(form.get("unzip", "false")).lower() in ("1", "true", "yes", "on")
        if len(data) > FILE_MAX_BYTES:
            raise RequestError(413, f"an upload carries at most {FILE_MAX_BYTES} bytes")
        call = session.upload(target, data) if unzip else session.write_file(target, data)
        await self.gateway.sessions.ask(session, call, "upload" if unzip else "write")
        return JSONResponse({})

    async def close(self, request: Request, session: AsyncSession) -> Response:
        await self.gateway.sessions.close(session)
        return JSONResponse({})

    # -- what the routes share ----------------------------------------------------------------

    async def _body(self, request: Request, model: type[Any]) -> Any:
        data = await read_bytes(request, self.gateway.settings.gateway_max_body_bytes)
        try:
            return model.model_validate_json(data or b"{}")
        except ValueError as error:
            status = 400 if model is SandboxRequest else 422
            raise RequestError(status, f"the body is not a {model.__name__}: {error}") from None

    async def _run(
        self, session: AsyncSession, command: str, shell: str, timeout: float | None
    ) -> SessionResult:
        """A command in a shell of the sandbox, its output merged as a terminal's, `bash -n` first
        as SWE-ReX's server checks it: its result, or the SwerexError SWE-ReX raises."""
        call = session.run(command, None, _timeout(timeout), shell=shell, merge=True, check_syntax=True)
        result = self._checked(await self._asked(session, call))
        if result.status == "timeout":
            raise SwerexError(
                EXCEPTIONS + "CommandTimeoutError",
                f"timeout after {timeout} seconds while running command {command!r}",
            )
        exception = result.exception or {}
        if exception.get("ename") in _SHELL_ERRORS:
            raise SwerexError(
                EXCEPTIONS + exception["ename"], str(exception.get("evalue")), exception.get("extra")
            )
        return result

    async def _asked(self, session: AsyncSession, call: Any) -> SessionResult:
        return await self.gateway.sessions.ask(session, call)

    def _checked(self, result: SessionResult) -> SessionResult:
        """503 for a sandbox whose node died (the farm's fault, never a command's)."""
        if result.infra_reason is not None:
            self.gateway.metrics.sessions_lost.inc()
            raise RequestError(503, result.error or "the sandbox was lost")
        if not result.session_alive and result.status != "timeout":
            raise RequestError(404, f"the sandbox has ended: {result.error}")
        return result

    def _shell_report(self, report: dict[str, Any]) -> None:
        error = report.get("error")
        if isinstance(error, dict):
            raise SwerexError(EXCEPTIONS + str(error.get("ename")), str(error.get("evalue")))
        if "ended" in report:
            raise RequestError(404, f"the sandbox has ended: {report['ended']}")


_SHELL_ERRORS = frozenset({"BashIncorrectSyntaxError", "SessionDoesNotExistError", "SessionExistsError"})


def _timeout(timeout: float | None) -> float:
    """A SWE-ReX timeout (None: none) as a run's, within the farm's cap."""
    if timeout is None or timeout <= 0:
        return MAX_RUN_TIMEOUT_S
    return min(float(timeout), MAX_RUN_TIMEOUT_S)


def _observation(output: str, exit_code: int | None) -> dict[str, Any]:
    return {"output": output, "exit_code": exit_code, "failure_reason": "", "expect_string": "",
            "session_type": "bash"}  # fmt: skip


def transferred(error: SwerexError) -> Response:
    """SWE-ReX's server's answer for an exception: 511 and the exception as its client rebuilds it."""
    body = {
        "message": error.message,
        "class_path": error.class_path,
        "traceback": "",
        "extra_info": error.extra_info,
    }
    return JSONResponse({"swerexception": body}, status_code=511)


def swerex_error(error: RequestError) -> Response:
    """FastAPI's error shape (`detail`), with `Retry-After` where the error has one."""
    answer = retry_after(error)
    shaped = JSONResponse({"detail": error.message}, status_code=error.status)
    if "Retry-After" in answer.headers:
        shaped.headers["Retry-After"] = answer.headers["Retry-After"]
    return shaped


def routes(gateway: Gateway) -> list[Route]:
    """The SWE-ReX routes."""
    sandboxes = Sandboxes(gateway)
    own = [
        ("/", "GET", None),
        ("/is_alive", "GET", sandboxes.is_alive),
        ("/create_session", "POST", sandboxes.create_session),
        ("/run_in_session", "POST", sandboxes.run_in_session),
        ("/close_session", "POST", sandboxes.close_session),
        ("/execute", "POST", sandboxes.execute),
        ("/read_file", "POST", sandboxes.read_file),
        ("/write_file", "POST", sandboxes.write_file),
        ("/upload", "POST", sandboxes.upload),
        ("/close", "POST", sandboxes.close),
    ]
    found = [route("/v1/sandboxes", sandboxes.open, gateway, swerex_error, ["POST"])]
    for path, method, handler in own:
        if handler is None:
            found.append(route(PREFIX + path, _hello, gateway, swerex_error, [method]))
        else:
            found.append(route(PREFIX + path, sandboxes.handler(handler), gateway, swerex_error, [method]))
    return found


async def _hello(request: Request, gateway: Gateway) -> Response:
    await gateway.sessions.find(request.path_params["session_id"])
    return JSONResponse({"message": "hello world"})
