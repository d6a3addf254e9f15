"""A problem's own limits: from its dataset's units when it is prepared, onto a job's run when it is
judged.

A dataset gives a time limit and a memory limit per problem, each in its own units; a prepared
problem carries them as `limits` (`cpu_s`, `wall_s`, `memory_mb`). The time limit is CPU time, as
the judges the datasets come from count it (Codeforces, Polygon's testlib). The wall clock only ends
a program that waits instead of computing, with a margin for a busy machine: twice the CPU limit, and
at least one second more (WALL_FACTOR, WALL_EXTRA_S). A job's own `limits` override the problem's,
which override the env's defaults (a job's `cpu_s` on such a problem brings its wall clock by the
same rule, unless the job gives one); a problem without limits runs under the defaults.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evalfarm.limits import MAX_LIMITS, Limits

WALL_FACTOR = 2.0  # a test's wall clock: twice its CPU limit ...
WALL_EXTRA_S = 1.0  # ... and at least this much more


def wall_for(cpu_s: float) -> float:
    """The wall clock of a test whose CPU limit is `cpu_s`."""
    return min(round(max(cpu_s * WALL_FACTOR, cpu_s + WALL_EXTRA_S), 3), MAX_LIMITS.wall_s)


def problem_limits(
    time_s: float | None, memory_mb: float | None, time_scale: float = 1.0
) -> dict[str, Any] | None:
    """A prepared problem's `limits` from its dataset's time limit (seconds, multiplied by
    `time_scale`) and memory limit (MB, rounded up); None when the dataset gives neither. A limit
    that is absent, zero or negative is not given."""
    limits: dict[str, Any] = {}
    if time_s is not None and time_s > 0:
        cpu_s = min(round(time_s * time_scale, 3), MAX_LIMITS.cpu_s)
        limits.update(cpu_s=cpu_s, wall_s=wall_for(cpu_s))
    if memory_mb is not None and memory_mb > 0:
        limits["memory_mb"] = min(math.ceil(memory_mb), MAX_LIMITS.memory_mb)
    return limits or None


def applied_limits(defaults: Limits, problem: Any, job_limits: Mapping[str, Any] | None) -> Limits:
    """The limits a job's tests run under: `defaults`, then the problem's own `limits`, then the
    job's (already checked by the scoring). Where the problem gives a CPU limit, a CPU limit given
    without a wall clock (the problem's or the job's) gets `wall_for` it."""
    own = problem.limits.model_dump(exclude_none=True) if problem.limits is not None else {}
    job = dict(job_limits or {})
    if "cpu_s" in own:
        for given in (own, job):
            if "cpu_s" in given and "wall_s" not in given:
                given["wall_s"] = wall_for(given["cpu_s"])
    return defaults.merged(own).merged(job)
