"""One batch's bookkeeping: unique jobs, which input positions each answers, and what is done.

Delivery is at least once (a chunk can run twice, or be rescored job by job after a lost worker), so
every answer is keyed by job id and only the first one counts. Identical jobs sharing an id are sent
once and their result copied to every position; different jobs sharing an id are kept apart.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Sequence
from typing import Any

from broker.result import Result, from_worker, infra_result


@dataclasses.dataclass
class BatchStats:
    """What one batch cost: messages sent, duplicates dropped, chunks split after a lost worker."""

    jobs: int = 0
    unique_jobs: int = 0
    messages: int = 0
    duplicates: int = 0
    split_chunks: int = 0
    infra_errors: int = 0
    elapsed_s: float = 0.0


class Batch:
    """The jobs of one `Farm.stream` call and their answers so far."""

    def __init__(self, jobs: Sequence[Any]) -> None:
        self.jobs = jobs
        self.unique: list[Any] = []
        self.positions: list[list[int]] = []
        self.done: list[bool] = []
        self.stats = BatchStats(jobs=len(jobs))
        self._started = time.monotonic()
        self._ready: list[tuple[int, Result]] = []
        self._group(jobs)

    def _group(self, jobs: Sequence[Any]) -> None:
        by_id: dict[str, list[int]] = {}
        for position, job in enumerate(jobs):
            job_id = job.get("id") if isinstance(job, dict) else None
            if not isinstance(job_id, str) or not job_id:
                self._add(job, position)
                continue
            same = [u for u in by_id.get(job_id, ()) if self.unique[u] == job]
            if same:
                self.positions[same[0]].append(position)
            else:
                by_id.setdefault(job_id, []).append(self._add(job, position))
        self.stats.unique_jobs = len(self.unique)

    def _add(self, job: Any, position: int) -> int:
        self.unique.append(job)
        self.positions.append([position])
        self.done.append(False)
        return len(self.unique) - 1

    def answer(self, indices: Sequence[int], results: Sequence[Any]) -> None:
        """Take a chunk's results (one per index, in order); a malformed or missing one is infra."""
        for n, index in enumerate(indices):
            raw = results[n] if n < len(results) else None
            job = self.unique[index]
            if not isinstance(raw, dict):
                self._settle(index, infra_result(job, "worker returned no result for this job"))
            elif isinstance(job, dict) and raw.get("id") != job.get("id"):
                self._settle(index, infra_result(job, f"worker answered for id {raw.get('id')!r}"))
            else:
                self._settle(index, from_worker(raw))

    def fail(self, indices: Sequence[int], error: str) -> None:
        """Answer `indices` as infra_error (those not yet answered)."""
        for index in indices:
            self._settle(index, infra_result(self.unique[index], error))

    def _settle(self, index: int, result: Result) -> None:
        if self.done[index]:
            self.stats.duplicates += 1
            return
        self.done[index] = True
        self.stats.infra_errors += result.is_infra * len(self.positions[index])
        latency = round(time.monotonic() - self._started, 6)
        for n, position in enumerate(self.positions[index]):
            copy = result if n == 0 else Result(result)
            copy["latency_s"] = latency
            self._ready.append((position, copy))

    def drain(self) -> Iterator[tuple[int, Result]]:
        """The answers settled since the last drain, as (input position, result)."""
        ready, self._ready = self._ready, []
        self.stats.elapsed_s = round(time.monotonic() - self._started, 6)
        yield from ready
