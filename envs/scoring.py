"""Score any job: validation of the common fields, dispatch to its env, and the farm's stamps."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from evalfarm.envs.base import Context, InvalidJob
from evalfarm.envs.catalog import COMMON_FIELDS, known_fields
from evalfarm.envs.registry import get_env
from evalfarm.result import Result
from evalfarm.sandbox import Status

log = logging.getLogger(__name__)


def score_job(job: Any, ctx: Context) -> Result:
    """Score one job and return its result; never raises for anything a job can contain."""
    started = time.perf_counter()
    job_id = job.get("id") if isinstance(job, dict) else None
    env_id = job.get("env") if isinstance(job, dict) else None
    try:
        if not isinstance(job, dict):
            raise InvalidJob("job: must be a JSON object")
        if not isinstance(job_id, str) or not job_id:
            raise InvalidJob("id: required, a non-empty string")
        env = get_env(env_id)
        job = {key: value for key, value in job.items() if value is not None}  # None: not given
        try:
            limits = env.default_limits.merged(job.get("limits"))
        except ValueError as error:
            raise InvalidJob(str(error)) from None
        result = Result.of_env(job_id, env_id, env.score(job, limits, ctx))
        warnings = _unknown_fields(job, env.fields | known_fields(env_id))
        # An env may name the limits it applied itself (a problem's own): scored() keeps those.
        result.scored(env.version, limits.to_dict(), time.perf_counter() - started, warnings)
    except InvalidJob as error:
        result = Result.of(job_id, env_id, Status.INVALID_JOB, None, str(error))
    except Exception as error:  # the farm's own fault: report it, never lose the job
        log.exception("env %r failed on job %r", env_id, job_id)
        result = Result.of(job_id, env_id, Status.INFRA_ERROR, None, f"{type(error).__name__}: {error}")
    result["run_s"] = round(time.perf_counter() - started, 6)
    return _writable(result)


def _unknown_fields(job: dict[str, Any], fields: frozenset[str]) -> list[str]:
    """What the result says of the job's fields its env does not take (nothing when undeclared)."""
    if not fields:
        return []
    unknown = sorted(set(job) - fields - COMMON_FIELDS)  # `fields`: the env's, and its datasets' known
    return [f"unknown field {name!r} ignored" for name in unknown[:20]]


def _writable(result: Result) -> Result:
    """`result` if it can be written as JSON; else the program's failure saying why.

    A result carries data a program chose (a `call`'s value, a walker): nested past the encoder's
    depth, say. Every layer after this one writes results as JSON, and must never fail to.
    """
    try:
        json.dumps(result)
    except (ValueError, TypeError, RecursionError, OverflowError) as error:
        reward = None if result.get("reward") is None else 0.0
        failed = Result.of(
            result["id"], result["env"], Status.RUNTIME_ERROR, reward,
            f"the result cannot be written as JSON: {type(error).__name__}: {error}"[:500],
        )  # fmt: skip
        failed.update({key: result[key] for key in ("env_version", "limits", "run_s") if key in result})
        return failed
    return result
