"""The farm's task: score a chunk of jobs with `envs.score_job` in this process's context.

The message is data from producers the farm does not control. Whatever its shape, the task answers
every job it can find (a malformed job is `invalid_job`, as `score_job` decides), logs what it
cannot, and returns normally so the worker keeps consuming.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import Celery, Task
from celery.exceptions import SoftTimeLimitExceeded

from evalfarm.broker.app import SCORE_CHUNK
from evalfarm.envs import score_job
from evalfarm.result import Result
from evalfarm.tasks.cache import ResultCache
from evalfarm.tasks.merge import register_merge
from evalfarm.tasks.process import WorkerProcess

log = logging.getLogger(__name__)


def register(app: Celery, process: WorkerProcess) -> Task:
    """Register the chunk task on `app`, scoring in `process`'s context, with the node's retry bound
    for lost workers."""
    settings = process.settings

    @app.task(
        name=SCORE_CHUNK,
        bind=True,
        typing=False,  # check the arguments ourselves: a bad message is answered, not raised
        max_retries=settings.worker_lost_retries,
        default_retry_delay=0,
    )
    def score_chunk(self: Task, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        """Score the jobs of one message; one result per job, in order."""
        jobs = jobs_of(args, kwargs, self.request.id)
        cache = (
            ResultCache(app.backend.client, settings.result_cache_ttl_s)
            if settings.result_cache_ttl_s
            else None
        )
        return score_jobs(jobs, process, kwargs.get("sent_at"), attempt=self.request.retries + 1, cache=cache)

    register_merge(app)
    return score_chunk


def jobs_of(args: tuple[Any, ...], kwargs: dict[str, Any], task_id: str | None) -> list[Any]:
    """The jobs a message carries: a list, or a lone job object; nothing else (logged)."""
    jobs = args[0] if args else kwargs.get("jobs")
    if isinstance(jobs, dict):
        return [jobs]
    if isinstance(jobs, list):
        return jobs
    log.error("task %s: malformed message, no list of jobs (got %s); dropped", task_id, type(jobs).__name__)
    return []


def score_jobs(
    jobs: list[Any],
    process: WorkerProcess,
    sent_at: Any = None,
    attempt: int = 1,
    cache: ResultCache | None = None,
) -> list[dict[str, Any]]:
    """Score `jobs` one after another in `process`'s context (those `cache` holds answered from
    it); past the soft time limit the rest are answered infra_error."""
    ctx = process.context()
    cached = cache.lookup(jobs) if cache is not None else [None] * len(jobs)
    results: list[dict[str, Any]] = []
    try:
        for job, hit in zip(jobs, cached, strict=True):
            started = time.time()
            result = hit if hit is not None else score_job(job, ctx)
            results.append(result.timed(_queued_s(sent_at, started), attempt))
            if result["id"] is None:
                log.warning("answered a job without an id as %s: %s", result["status"], result["error"])
    except SoftTimeLimitExceeded:
        log.error("chunk time limit hit after %d of %d jobs", len(results), len(jobs))
        for job in jobs[len(results) :]:
            results.append(_infra(job, "chunk time limit exceeded"))
    if cache is not None:
        cache.store([j for j, hit in zip(jobs, cached, strict=True) if hit is None],
                    [r for r, hit in zip(results, cached, strict=True) if hit is None])  # fmt: skip
    return results


def _queued_s(sent_at: Any, started: float) -> float | None:
    if isinstance(sent_at, int | float) and not isinstance(sent_at, bool):
        return round(max(0.0, started - sent_at), 6)
    return None


def _infra(job: Any, error: str) -> Result:
    """A job the chunk could not reach: the farm's failure, sent again by the producer."""
    return Result.infra(job, error)
