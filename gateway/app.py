"""The gateway's application: one `AsyncFarm`, the micro-batcher, the route families, the guards.

`create_app(settings)` builds the ASGI app (Starlette): the native routes, ELM's, SandboxFusion's
and OpenRLHF's (one module each, `gateway/*.py`), GET /metrics, and around them: a bearer
token when one is set (also accepted as `?token=` or a `/t/<token>/` path prefix, for clients that
cannot send headers), a body-size cap, a deadline on every request, and no traceback ever sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalfarm.broker.async_farm import AsyncFarm
from evalfarm.broker.result import Result
from evalfarm.broker.settings import GatewaySettings
from evalfarm.gateway.batcher import Batcher, results_in_order
from evalfarm.gateway.metrics import GatewayMetrics
from evalfarm.gateway.responses import JSONResponse

log = logging.getLogger(__name__)

OPEN_PATHS = frozenset({"/v1/health", "/metrics"})  # answered without the token
_BODY_READ_S = 60.0  # a client sending its body slower than this gets 408


class RequestError(Exception):
    """A request the gateway refuses: the HTTP status and a message for the client."""

    def __init__(self, status: int, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after_s = retry_after_s  # when to ask again, for a 429 or 503


class Gateway:
    """What the routes share: settings, the farm, the batcher, the metrics."""

    def __init__(self, settings: GatewaySettings, farm: AsyncFarm | None = None) -> None:
        self.settings = settings
        self.metrics = GatewayMetrics()
        self.farm = farm or AsyncFarm(settings=settings)
        self.batcher = Batcher(
            self.farm, settings.gateway_linger_s, settings.gateway_batch_jobs, self.metrics.batch_jobs.observe
        )
        from evalfarm.gateway.session_routes import Sessions  # its routes need this module's helpers

        self.sessions = Sessions(self)

    async def score(
        self, route: str, jobs: list[Any], deadline_s: float, priority: bool = False
    ) -> list[Result]:
        """Every job's result, in order, sent with the jobs of concurrent requests."""
        self.check_count(len(jobs), "jobs")
        self.metrics.jobs.labels(route).inc(len(jobs))
        futures = self.batcher.submit(jobs, deadline_s, priority)
        return await results_in_order(jobs, futures, deadline_s)

    def check_count(self, count: int, what: str) -> None:
        """413 past the per-request cap."""
        if count > self.settings.gateway_max_jobs:
            raise RequestError(
                413, f"{count} {what} in one request; the cap is {self.settings.gateway_max_jobs}"
            )

    async def close(self) -> None:
        await self.batcher.close()
        await self.farm.close()


Body = TypeVar("Body", bound=BaseModel)


async def read_body(request: Request, cap: int, model: type[Body]) -> Body:
    """The request body as `model`: `read_json`'s answers, and 400 naming the first invalid field."""
    data = await read_json(request, cap)
    try:
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        raise RequestError(400, f"{'.'.join(map(str, first['loc'])) or 'body'}: {first['msg']}") from None


async def read_json(request: Request, cap: int) -> Any:
    """The request body as JSON: 413 over `cap` bytes, 400 when it is not JSON, 408 when too slow."""
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > cap:
        raise RequestError(413, f"the body has {length} bytes; the cap is {cap}")

    async def body() -> bytes:
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > cap:
                raise RequestError(413, f"the body has more than {cap} bytes, the cap")
            chunks.append(chunk)
        return b"".join(chunks)

    try:
        async with asyncio.timeout(_BODY_READ_S):
            data = await body()
    except TimeoutError:
        raise RequestError(408, f"the body did not arrive within {_BODY_READ_S:.0f} s") from None
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as error:
        raise RequestError(400, f"the body is not valid JSON: {error}") from None


Handler = Callable[[Request, Gateway], Awaitable[Response]]
ErrorShape = Callable[[RequestError], Response]


def route(path: str, handler: Handler, gateway: Gateway, shape: ErrorShape, methods: list[str]) -> Route:
    """A Starlette route calling `handler(request, gateway)`; a RequestError becomes `shape(error)`,
    anything else a 500 in the same shape, logged, never a traceback."""

    async def endpoint(request: Request) -> Response:
        try:
            return await handler(request, gateway)
        except RequestError as error:
            return shape(error)
        except Exception:
            log.exception("gateway route %s failed", path)
            return shape(RequestError(500, "the gateway failed to answer (logged)"))

    return Route(path, endpoint, methods=methods)


def json_error(error: RequestError) -> Response:
    """The native routes' error shape."""
    return JSONResponse({"error": error.message}, status_code=error.status)


class Guard:
    """ASGI middleware: the token check, the `/t/<token>/` prefix, the metrics of every request."""

    def __init__(self, app: ASGIApp, gateway: Gateway, paths: frozenset[str]) -> None:
        self.app = app
        self.gateway = gateway
        self.paths = paths
        self.token = gateway.settings.gateway_token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, given = _strip_token_prefix(scope["path"])
        label = path if path in self.paths else _template(path, self.paths)
        metrics = self.gateway.metrics
        started, status = time.monotonic(), [500]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        metrics.in_flight.labels(label).inc()
        try:
            if self.token and path not in OPEN_PATHS and not self._authorized(scope, given):
                await JSONResponse({"error": "unauthorized: a valid bearer token is required"}, 401)(
                    scope, receive, sending
                )
                return
            await self.app({**scope, "path": path}, receive, sending)
        finally:
            metrics.in_flight.labels(label).dec()
            metrics.requests.labels(label, str(status[0])).inc()
            metrics.latency.labels(label).observe(time.monotonic() - started)

    def _authorized(self, scope: Scope, given: str | None) -> bool:
        assert self.token is not None
        candidates = [given] if given else []
        headers = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        if authorization.lower().startswith("bearer "):
            candidates.append(authorization[7:].strip())
        for pair in scope.get("query_string", b"").decode("latin-1").split("&"):
            if pair.startswith("token="):
                candidates.append(pair[6:])
        return any(hmac.compare_digest(c.encode(), self.token.encode()) for c in candidates)


def _template(path: str, paths: frozenset[str]) -> str:
    """The route template a path with parameters matches (`/v1/sessions/{session_id}/run`), for a
    metric's label; "other" for anything else."""
    parts = path.split("/")
    for template in paths:
        pattern = template.split("/")
        if len(pattern) == len(parts) and all(
            p == q or (p.startswith("{") and q) for p, q in zip(pattern, parts, strict=True)
        ):
            return template
    return "other"


def _strip_token_prefix(path: str) -> tuple[str, str | None]:
    """`/t/<token>/rest` -> (`/rest`, token); any other path as it is."""
    if path.startswith("/t/"):
        token, _, rest = path[3:].partition("/")
        return "/" + rest, token
    return path, None


def create_app(settings: GatewaySettings, farm: AsyncFarm | None = None) -> Starlette:
    """The gateway's ASGI application (the farm client is made when the app starts)."""
    from evalfarm.gateway import elm, native, openrlhf, sandbox_fusion, session_routes

    gateway = Gateway(settings, farm)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await gateway.close()

    routes = [
        *native.routes(gateway),
        *session_routes.routes(gateway),
        *elm.routes(gateway),
        *sandbox_fusion.routes(gateway),
        *openrlhf.routes(gateway),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    paths = frozenset(r.path for r in routes)
    app.add_middleware(Guard, gateway=gateway, paths=paths)
    app.state.gateway = gateway
    return app
