"""What every route of the gateway uses: the `Gateway` the routes share, the request errors and
their shape, the body readers, and `route`, which wraps a handler so that nothing but its answer or
a `RequestError`'s shape ever leaves it. The application (`gateway/app.py`) wires the routes; each
route family (`gateway/native.py`, `elm.py`, `sandbox_fusion.py`, `openrlhf.py`, `session_routes.py`)
imports only this module of the gateway's own.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from evalfarm.broker.async_farm import AsyncFarm
from evalfarm.broker.settings import GatewaySettings
from evalfarm.gateway.batcher import Batcher, results_in_order
from evalfarm.gateway.metrics import GatewayMetrics
from evalfarm.gateway.responses import JSONResponse
from evalfarm.result import Result

log = logging.getLogger(__name__)

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
    data = await read_bytes(request, cap)
    try:
        return json.loads(data)
    except (ValueError, RecursionError) as error:
        raise RequestError(400, f"the body is not valid JSON: {error}") from None


async def read_bytes(request: Request, cap: int) -> bytes:
    """The request body: 413 over `cap` bytes, 408 when it arrives too slowly."""
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
            return await body()
    except TimeoutError:
        raise RequestError(408, f"the body did not arrive within {_BODY_READ_S:.0f} s") from None


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
