"""OpenRLHF's remote reward model: `POST /get_reward` `{"query", "prompts", "labels"}`.

Each label is a job template (the job's fields but the answer: `{"env": "codecontests", "problem":
{...}}`, as a JSON string or an object); the answer is the query with its prompt removed, put in
the env's answer field (`broker.completions`). The response is `{"rewards", "scores",
"extra_logs"}`, one entry per query: `rewards` and `scores` the farm's rewards, and `extra_logs`
per-sample numbers for the trainer's logs (`passed` of `total` tests where an env counts them,
`masked`, `infra_error`). A job with no reward (an env that gives none) rewards 0.0.

Each sample is answered on its own: one that has no reward never costs the others theirs. A sample
with no reward (`infra_error` after the farm's retries, `judge_error`, or `invalid_job`: a label
that makes no job) is masked: `rewards` 0.0, `scores` NaN, `extra_logs.masked` 1.0. OpenRLHF 0.11
(`openrlhf/utils/agent.py`, `trainer/ppo_utils/samples_generator.py`) posts one sample per
request, makes a tensor of each entry (a null there stops its rollout), and reads `scores` only in
its dynamic filtering, which drops a prompt's group unless the group's mean score lies inside its
range: NaN lies inside none, so the group of a masked sample is dropped there, and the honest
samples of other groups are trained on as usual. A non-2xx answer it posts again (five times, one
second apart) and then leaves the sample without a reward, which stops the run when the rollout's
rewards are stacked.

A request fails as a whole only where no sample of it can have a reward: 400 when the body is
malformed or none of its labels is a job template; 503 when every sample is an infra failure and
the farm has no live worker node or Redis does not answer (a run with no farm should stop, after
OpenRLHF's own retries, rather than train on masks). The answer comes within
`gateway_openrlhf_deadline_s` (150 s, under the client's own 180 s timeout, so the client sees it
rather than posting the request again while it is still being scored).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from evalfarm.broker.completions import TemplateError, completion_of, job_from_template
from evalfarm.gateway.responses import JSONResponse
from evalfarm.gateway.routing import Gateway, RequestError, json_error, read_body, route
from evalfarm.result import Result

log = logging.getLogger(__name__)

# What a masked sample gets in `rewards`: OpenRLHF's tensors take a number, and its `scores` (NaN)
# and `extra_logs.masked` say that it is none.
MASKED_REWARD = 0.0


class RewardRequest(BaseModel):
    """OpenRLHF's request: parallel lists."""

    model_config = ConfigDict(extra="ignore")
    query: list[str]
    prompts: list[str]
    labels: list[Any]


def extra_logs(results: list[Result]) -> dict[str, list[float]]:
    """Per-sample numbers worth logging beside the rewards (the same keys for every sample: OpenRLHF
    merges them across samples)."""
    return {
        "ok": [float(r.get("status") == "ok") for r in results],
        "passed": [float(r.get("passed") or 0) for r in results],
        "total": [float(r.get("total") or 0) for r in results],
        "masked": [float(not r.has_reward) for r in results],
        "infra_error": [float(r.is_infra) for r in results],
    }


def reward_body(results: list[Result]) -> dict[str, Any]:
    """The response: each sample's reward, or its mask."""
    rewards = [_reward(r) for r in results]
    scores = [reward if r.has_reward else math.nan for r, reward in zip(results, rewards, strict=True)]
    return {"rewards": rewards, "scores": scores, "extra_logs": extra_logs(results)}


def _reward(result: Result) -> float:
    if not result.has_reward:
        return MASKED_REWARD
    return float(result.reward) if result.reward is not None else 0.0


def _job(index: int, query: str, prompt: str, label: Any) -> dict[str, Any] | str:
    """The job of one sample, or why its label makes none."""
    try:
        return job_from_template(label, completion_of(query, prompt), f"rm-{index}")
    except TemplateError as error:
        return f"labels[{index}]: {error}"


async def _results(gateway: Gateway, made: list[dict[str, Any] | str]) -> list[Result]:
    """Every sample's result, in order: the farm's, or invalid_job where its label made no job."""
    jobs = [job for job in made if isinstance(job, dict)]
    scored = iter(await gateway.score("/get_reward", jobs, gateway.settings.gateway_openrlhf_deadline_s))
    return [
        next(scored) if isinstance(job, dict) else Result.invalid(f"rm-{index}", None, job)
        for index, job in enumerate(made)
    ]


async def _farm_down(gateway: Gateway) -> bool:
    """True when Redis does not answer or no worker node is live."""
    status = await gateway.farm.status()
    return not (status.get("redis") and status.get("nodes", 0) > 0)


async def get_reward(request: Request, gateway: Gateway) -> Response:
    """Score each query's answer against its label: each sample's reward, or its mask."""
    parsed = await read_body(request, gateway.settings.gateway_max_body_bytes, RewardRequest)
    if not len(parsed.query) == len(parsed.prompts) == len(parsed.labels):
        raise RequestError(400, "query, prompts and labels must have the same length")
    gateway.check_count(len(parsed.query), "queries")
    made = [
        _job(i, query, prompt, label)
        for i, (query, prompt, label) in enumerate(
            zip(parsed.query, parsed.prompts, parsed.labels, strict=True)
        )
    ]
    if made and all(isinstance(job, str) for job in made):
        raise RequestError(400, f"no label is a job template: {made[0]}")
    results = await _results(gateway, made)
    if results and all(r.is_infra for r in results) and await _farm_down(gateway):
        return JSONResponse({"error": f"the farm is down: {results[0].get('error')}"}, 503)
    _log_masked(results)
    return JSONResponse(reward_body(results))


def _log_masked(results: list[Result]) -> None:
    masked = [r for r in results if not r.has_reward]
    if masked:
        log.warning(
            "/get_reward: %d of %d samples have no reward (masked), e.g. %s: %s",
            len(masked), len(results), masked[0].status, masked[0].get("error"),
        )  # fmt: skip


def routes(gateway: Gateway) -> list[Route]:
    """OpenRLHF's route."""
    return [route("/get_reward", get_reward, gateway, json_error, ["POST"])]
