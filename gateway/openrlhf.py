"""OpenRLHF's remote reward model: `POST /get_reward` `{"query", "prompts", "labels"}`.

Each label is a job template (the job's fields but the answer: `{"env": "codecontests", "problem":
{...}}`, as a JSON string or an object); the answer is the query with its prompt removed, put in
the env's answer field (`broker.completions`). The response is `{"rewards", "scores",
"extra_logs"}`, one entry per query: `rewards` and `scores` the farm's rewards, and `extra_logs`
per-sample numbers for the trainer's logs (`passed` of `total` tests where an env counts them).
A job with no reward (an env that gives none) rewards 0.0.

An infra failure that outlived the farm's retries answers HTTP 503, never a reward, within
`gateway_openrlhf_deadline_s` (150 s, under the client's own 180 s timeout, so the client sees the
503 rather than posting the request again while it is still being scored). OpenRLHF's client retries
the request (five times), then raises: OpenRLHF 0.11 cannot mask a sample, so a farm fault that
outlasts its retries stops the run (the README says what to configure). A malformed request or label
answers 400; a label the farm's judge cannot judge (`judge_error`) answers 422: no reward exists.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from evalfarm.broker.completions import TemplateError, completion_of, job_from_template
from evalfarm.broker.result import Result
from evalfarm.gateway.app import Gateway, RequestError, json_error, read_body, route
from evalfarm.gateway.responses import JSONResponse


class RewardRequest(BaseModel):
    """OpenRLHF's request: parallel lists."""

    model_config = ConfigDict(extra="ignore")
    query: list[str]
    prompts: list[str]
    labels: list[Any]


def extra_logs(results: list[Result]) -> dict[str, list[float]]:
    """Per-sample numbers worth logging beside the rewards."""
    logs = {
        "ok": [float(r.get("status") == "ok") for r in results],
        "passed": [float(r.get("passed") or 0) for r in results],
        "total": [float(r.get("total") or 0) for r in results],
    }
    return logs


async def get_reward(request: Request, gateway: Gateway) -> Response:
    """Score each query's answer against its label; the rewards, or 503 if the farm failed."""
    parsed = await read_body(request, gateway.settings.gateway_max_body_bytes, RewardRequest)
    if not len(parsed.query) == len(parsed.prompts) == len(parsed.labels):
        raise RequestError(400, "query, prompts and labels must have the same length")
    gateway.check_count(len(parsed.query), "queries")
    try:
        jobs = [
            job_from_template(label, completion_of(query, prompt), f"rm-{i}")
            for i, (query, prompt, label) in enumerate(
                zip(parsed.query, parsed.prompts, parsed.labels, strict=True)
            )
        ]
    except TemplateError as error:
        raise RequestError(400, f"labels: {error}") from None
    results = await gateway.score("/get_reward", jobs, gateway.settings.gateway_openrlhf_deadline_s)
    infra = [r for r in results if r.is_infra]
    if infra:
        return JSONResponse(
            {"error": f"the farm failed on {len(infra)} samples: {infra[0].get('error')}"}, 503
        )
    invalid = [r for r in results if r.get("status") == "invalid_job"]
    if invalid:
        raise RequestError(400, f"labels: {invalid[0].get('error')}")
    unjudged = [r for r in results if not r.has_reward]
    if unjudged:
        raise RequestError(422, f"no reward exists for {len(unjudged)} samples: {unjudged[0].get('error')}")
    rewards = [float(r.reward) if r.reward is not None else 0.0 for r in results]
    return JSONResponse({"rewards": rewards, "scores": rewards, "extra_logs": extra_logs(results)})


def routes(gateway: Gateway) -> list[Route]:
    """OpenRLHF's route."""
    return [route("/get_reward", get_reward, gateway, json_error, ["POST"])]
