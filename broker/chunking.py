"""Packing jobs into messages: few enough that overhead stays small, enough that the pool stays busy.

One message costs about `message_overhead_s` of a worker's time whatever it carries, so a chunk must
carry at least `message_overhead_s / max_overhead` seconds of work. At the end of a batch a pool waits
for its slowest chunk, so a batch is also cut into at least `messages_per_process` chunks per pool
process. When a batch is too small for both, balance wins: the batch is short anyway.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from evalfarm.broker.settings import ClientSettings


@dataclasses.dataclass(frozen=True)
class Chunk:
    """Jobs (by their index in the batch's unique jobs) that ride one message to one queue."""

    queue: str
    indices: tuple[int, ...]
    cost_s: float


def plan_chunks(
    jobs: Sequence[Any],
    settings: ClientSettings,
    processes: int,
    cost_of: Callable[[Any], float] | None = None,
) -> list[Chunk]:
    """Cut `jobs` into chunks per queue, in input order; `cost_of(job)` guesses a job's seconds."""
    cost_of = cost_of or (lambda job: settings.job_cost_s(_env_of(job)))
    by_queue: dict[str, list[int]] = {}
    for index, job in enumerate(jobs):
        by_queue.setdefault(settings.queue_for(_env_of(job)), []).append(index)
    chunks: list[Chunk] = []
    for queue, indices in by_queue.items():
        costs = [cost_of(jobs[i]) for i in indices]
        target = chunk_cost_s(sum(costs), settings, processes)
        chunks.extend(_pack(queue, indices, costs, target, settings.max_chunk_jobs))
    return chunks


def chunk_cost_s(total_s: float, settings: ClientSettings, processes: int) -> float:
    """The work one chunk should carry for a batch of `total_s` seconds on `processes` processes
    (0: for efficiency alone, when other batches keep the pool busy)."""
    efficient = settings.message_overhead_s / settings.max_overhead
    if processes <= 0:
        return efficient
    balanced = total_s / (settings.messages_per_process * max(1, processes))
    return min(efficient, balanced)


def _pack(queue: str, indices: list[int], costs: list[float], target_s: float, max_jobs: int) -> list[Chunk]:
    """Greedy packing in input order: a chunk takes the next job unless that would pass `target_s`
    (a chunk always takes at least one job) or `max_jobs`."""
    chunks: list[Chunk] = []
    current: list[int] = []
    carried = 0.0
    for index, cost in zip(indices, costs, strict=True):
        if current and (carried + cost > target_s * (1 + 1e-9) or len(current) >= max_jobs):
            chunks.append(Chunk(queue, tuple(current), carried))
            current, carried = [], 0.0
        current.append(index)
        carried += cost
    if current:
        chunks.append(Chunk(queue, tuple(current), carried))
    return chunks


def _env_of(job: Any) -> Any:
    return job.get("env") if isinstance(job, dict) else None
