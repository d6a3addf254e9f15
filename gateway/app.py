"""The gateway's application: one `AsyncFarm`, the micro-batcher, the route families, the guards.

`create_app(settings)` builds the ASGI app (Starlette): the native routes, ELM's, SandboxFusion's
OpenRLHF's and SWE-ReX's (one module each, `gateway/*.py`), GET /metrics, and around them: a bearer
token when one is set (also accepted as `?token=` or a `/t/<token>/` path prefix, for clients that
cannot send headers, and as `X-API-Key`, as SWE-ReX's client sends it), a body-size cap, a deadline
on every request, and no traceback ever sent.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import time
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from evalfarm.broker.async_farm import AsyncFarm
from evalfarm.broker.settings import GatewaySettings
from evalfarm.gateway.responses import JSONResponse
from evalfarm.gateway.routing import Gateway

log = logging.getLogger(__name__)

OPEN_PATHS = frozenset({"/v1/health", "/metrics"})  # answered without the token


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
                await _unauthorized(path)(scope, receive, sending)
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
        if b"x-api-key" in headers:  # SWE-ReX's client sends its auth token so
            candidates.append(headers[b"x-api-key"].decode("latin-1"))
        for pair in scope.get("query_string", b"").decode("latin-1").split("&"):
            if pair.startswith("token="):
                candidates.append(pair[6:])
        return any(hmac.compare_digest(c.encode(), self.token.encode()) for c in candidates)


def _unauthorized(path: str) -> JSONResponse:
    """401, or under a sandbox's URL what SWE-ReX's server answers a request without its key (403)."""
    if path.startswith("/v1/sandboxes/"):
        return JSONResponse({"detail": "Not authenticated"}, 403)
    return JSONResponse({"error": "unauthorized: a valid bearer token is required"}, 401)


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
    from evalfarm.gateway import elm, native, openrlhf, sandbox_fusion, session_routes, swerex

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
        *swerex.routes(gateway),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    paths = frozenset(r.path for r in routes)
    app.add_middleware(Guard, gateway=gateway, paths=paths)
    app.state.gateway = gateway
    return app
