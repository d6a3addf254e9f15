"""One long weight-edit grade split into episode ranges, scored in parallel, merged on a worker.

Episodes are independent, so a `weight_edits` job of N episodes can ride the farm as parts with
`episode_range` [start, stop) (the env's documented job field, the same parts as the env's
`split_job` makes), and the env's `merge_results` rebuilds exactly the whole job's result. The split is
plain arithmetic done here; the merge needs the env, so it runs as a task on a worker: the producer
never imports the envs.
"""

from __future__ import annotations

import math
from typing import Any

# Envs whose jobs split by episode range, with the contract's default episode count.
SPLITTABLE = {"weight_edits": 1000}


def split_parts(job: Any, episodes_per_part: int) -> list[dict[str, Any]] | None:
    """The parts of `job` (None when it should go whole: not splittable, short, or malformed)."""
    if not isinstance(job, dict) or job.get("env") not in SPLITTABLE or episodes_per_part <= 0:
        return None
    if "episode_range" in job or not isinstance(job.get("id"), str):
        return None
    episodes = job.get("episodes", SPLITTABLE[job["env"]])
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
