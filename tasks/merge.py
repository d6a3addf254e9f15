"""The merge task: rebuild a split job's result from its parts with the env's own merge."""

from __future__ import annotations

import importlib
import logging
import time
from typing import Any

from celery import Celery, Task

from evalfarm.broker.app import MERGE_PARTS
from evalfarm.envs.catalog import entry
from evalfarm.result import Result
from evalfarm.status import Status

log = logging.getLogger(__name__)


def register_merge(app: Celery) -> Task:
    """Register the merge task on `app`."""

    @app.task(name=MERGE_PARTS, bind=True, typing=False, max_retries=0)
    def merge_parts(self: Task, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Merge the results of one job's parts into the job's result."""
        job = args[0] if args else kwargs.get("job")
        results = args[1] if len(args) > 1 else kwargs.get("results")
        return merge(job, results)

    return merge_parts


def merge(job: Any, results: Any) -> dict[str, Any]:
    """The merged result, or infra_error when the parts cannot be merged (never raises)."""
    started = time.perf_counter()
    env = job.get("env") if isinstance(job, dict) else None
    job_id = job.get("id") if isinstance(job, dict) else None
    try:
        known = entry(env)
        if known is None or known.merge is None or not isinstance(results, list) or not results:
            raise ValueError(f"no parts to merge for env {env!r}")
        module, function = known.merge.split(":")
        merged = Result(getattr(importlib.import_module(module), function)(job, results))
    except Exception as error:  # a merge failure is the farm's: the job stays retryable
        log.exception("could not merge the parts of job %r", job_id)
        merged = Result.of(job_id, env, Status.INFRA_ERROR, None, f"merge failed: {error}")
    parts = len(results) if isinstance(results, list) else 0
    return merged.merged(job_id, parts, time.perf_counter() - started)
