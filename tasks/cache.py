"""An optional result cache in Redis: a job seen before, under the same env version, is answered
from there instead of being scored again (`result_cache_ttl_s`, off by default).

The key is a hash of the job's content (every field but its id), its env's id and version, so a
change of scoring (a new env version) never serves an old verdict. Only verdicts are kept: an
infra_error is the farm's failure, never an answer to reuse. A cached answer carries the new job's
id and `"cached": true`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from evalfarm.envs import InvalidJob, get_env
from evalfarm.result import Result

log = logging.getLogger(__name__)

PREFIX = "evalfarm:cache:"
_NOT_CACHED = frozenset({"infra_error", "invalid_job"})


def cache_key(job: Any) -> str | None:
    """The job's cache key, or None for a job that cannot be cached (no env, not JSON)."""
    if not isinstance(job, dict):
        return None
    try:
        env = get_env(job.get("env"))
        content = json.dumps(
            {k: v for k, v in job.items() if k != "id"}, sort_keys=True, separators=(",", ":")
        )
    except (InvalidJob, TypeError, ValueError):
        return None
    digest = hashlib.sha256(f"{env.id}\0{env.version}\0{content}".encode()).hexdigest()
    return f"{PREFIX}{env.id}:{env.version}:{digest}"


class ResultCache:
    """Lookups and stores of one chunk's jobs, one round trip each."""

    def __init__(self, client: Any, ttl_s: int) -> None:
        self.client = client
        self.ttl_s = ttl_s

    def lookup(self, jobs: list[Any]) -> list[Result | None]:
        """A cached result per job (with its own id), or None; all None when Redis cannot answer."""
        keys = [cache_key(job) for job in jobs]
        wanted = [k for k in keys if k is not None]
        try:
            found = dict(zip(wanted, self.client.mget(wanted), strict=True)) if wanted else {}
        except Exception as error:  # a cache is an optimisation: score the jobs instead
            log.warning("result cache unreadable: %s", error)
            return [None] * len(jobs)
        hits: list[Result | None] = []
        for job, key in zip(jobs, keys, strict=True):
            cached = found.get(key) if key is not None else None
            hits.append(Result(json.loads(cached), id=job["id"], cached=True) if cached else None)
        return hits

    def store(self, jobs: list[Any], results: list[dict[str, Any]]) -> None:
        """Keep the verdicts of `jobs` for `ttl_s`."""
        try:
            with self.client.pipeline(transaction=False) as pipe:
                for job, result in zip(jobs, results, strict=True):
                    key = cache_key(job)
                    if key is not None and result.get("status") not in _NOT_CACHED:
                        pipe.set(key, json.dumps(result), ex=self.ttl_s)
                pipe.execute()
        except Exception as error:  # not kept: the next identical job is scored again
            log.warning("result cache not written: %s", error)
