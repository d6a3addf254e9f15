"""One long grade split into episode ranges, scored in parallel, merged on a worker.

Episodes are independent, so a job of N episodes of an env whose catalog entry says so
(`split_episodes`: `weight_edits`) can ride the farm as parts with `episode_range` [start, stop)
(the env's documented job field, the same parts as the env's `split_job` makes), and the env's merge
(the entry's `merge`) rebuilds exactly the whole job's result. The split is plain arithmetic done
here; the merge needs the env, so it runs as a task on a worker: the producer never imports the envs.
"""

from __future__ import annotations

import math
from typing import Any

from evalfarm.envs.catalog import entry


def split_parts(job: Any, episodes_per_part: int) -> list[dict[str, Any]] | None:
    """The parts of `job` (None when it should go whole: not splittable, short, or malformed)."""
    env = entry(job.get("env")) if isinstance(job, dict) else None
    if env is None or env.split_episodes is None or episodes_per_part <= 0:
        return None
    if "episode_range" in job or not isinstance(job.get("id"), str):
        return None
    episodes = job.get("episodes", env.split_episodes)
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        return None  # the worker answers it whole, as invalid_job
    count = math.ceil(episodes / episodes_per_part)
    if count < 2:
        return None
    size, extra = divmod(episodes, count)
    parts, start = [], 0
    for index in range(count):
        stop = start + size + (index < extra)
        parts.append({**job, "id": f"{job['id']}#{start}-{stop}", "episode_range": [start, stop]})
        start = stop
    return parts
