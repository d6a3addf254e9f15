"""The gateway's own routes: POST /v1/score, GET /v1/health, GET /metrics.

`POST /v1/score` takes `{"jobs": [...], "priority": false, "deadline_s": 600}` and answers
`{"results": [...]}`, one per job in order (every contract status, infra_error included: the body
says what happened to each job). With `Accept: application/x-ndjson` it streams one result per line
as they complete, each with its `index` in the request.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from evalfarm.gateway.batcher import results_as_completed
from evalfarm.gateway.responses import JSONResponse
from evalfarm.gateway.routing import Gateway, json_error, read_body, route

NDJSON = "application/x-ndjson"


class ScoreRequest(BaseModel):
    """The body of POST /v1/score."""

    model_config = ConfigDict(extra="forbid")
    jobs: list[Any]
    priority: bool = False
    deadline_s: float | None = Field(default=None, gt=0)


async def score(request: Request, gateway: Gateway) -> Response:
    """Score the jobs of the body; the results in order, or streamed as NDJSON."""
    parsed = await read_body(request, gateway.settings.gateway_max_body_bytes, ScoreRequest)
    deadline_s = min(
        parsed.deadline_s or gateway.settings.gateway_deadline_s, gateway.settings.gateway_deadline_s
    )
    if NDJSON in request.headers.get("accept", ""):
        gateway.check_count(len(parsed.jobs), "jobs")
        gateway.metrics.jobs.labels("/v1/score").inc(len(parsed.jobs))
        futures = gateway.batcher.submit(parsed.jobs, deadline_s, parsed.priority)
        return StreamingResponse(_lines(parsed.jobs, futures, deadline_s), media_type=NDJSON)
    results = await gateway.score("/v1/score", parsed.jobs, deadline_s, parsed.priority)
    return JSONResponse({"results": results})


async def _lines(jobs: list[Any], futures: list[Any], deadline_s: float) -> AsyncIterator[bytes]:
    async for index, result in results_as_completed(jobs, futures, deadline_s):
        yield (json.dumps({"index": index, **result}) + "\n").encode()


async def health(request: Request, gateway: Gateway) -> Response:
    """200 when Redis answers and a worker node is live; 503 otherwise; what was found either way."""
    status = await gateway.farm.status()
    healthy = status["redis"] and status["nodes"] > 0
    return JSONResponse(
        {"status": "ok" if healthy else "unavailable", **status}, status_code=200 if healthy else 503
    )


async def metrics(request: Request, gateway: Gateway) -> Response:
    """The gateway's own metrics, in Prometheus' text format."""
    return Response(generate_latest(gateway.metrics.registry), media_type=CONTENT_TYPE_LATEST)


def routes(gateway: Gateway) -> list[Route]:
    """The native routes."""
    return [
        route("/v1/score", score, gateway, json_error, ["POST"]),
        route("/v1/health", health, gateway, json_error, ["GET"]),
        route("/metrics", metrics, gateway, json_error, ["GET"]),
    ]
