"""One batch's bookkeeping: unique jobs, which input positions each answers, and what is done.

Delivery is at least once (a chunk can run twice, or be rescored job by job after a lost worker), so
every answer is keyed by job id and only the first one counts. Jobs identical in everything but their
id (a GRPO group's duplicate completions) are scored once: the result is copied to each of them, with
its own id and `duplicate_of` naming the job that ran. Different jobs sharing an id are kept apart.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterator, Sequence
from typing import Any

from evalfarm.broker.sharding import split_parts
from evalfarm.result import Result


@dataclasses.dataclass
class BatchStats:
    """What one batch cost: messages sent, duplicates dropped, chunks split after a lost worker, jobs
    sent again after an infra_error, tasks published again after the farm lost them."""

    jobs: int = 0
    unique_jobs: int = 0
    deduplicated: int = 0  # jobs answered with the result of an identical job of the batch
    messages: int = 0
    duplicates: int = 0  # answers dropped: a job's, or a whole task's, after the first
    split_chunks: int = 0
    split_jobs: int = 0
    retried_jobs: int = 0
    lost_tasks: int = 0
    infra_errors: int = 0
    elapsed_s: float = 0.0


class Batch:
    """The jobs of one `Farm.stream` call and their answers so far."""

    def __init__(self, jobs: Sequence[Any], deduplicate: bool = True) -> None:
        """`deduplicate=False` scores jobs that differ only in their id separately."""
        self.jobs = jobs
        self.deduplicate = deduplicate
        self.unique: list[Any] = []
        self.positions: list[list[int]] = []
        self.done: list[bool] = []
        self.stats = BatchStats(jobs=len(jobs))
        self._started = time.monotonic()
        self._ready: list[tuple[int, Result]] = []
        self.parts: dict[int, list[int]] = {}  # a split job -> its parts (extra unique jobs)
        self._parent: dict[int, int] = {}  # a part -> its job
        self._part_results: dict[int, Result] = {}
        self._merges: list[int] = []
        self._group(jobs)

    def _group(self, jobs: Sequence[Any]) -> None:
        by_id: dict[str, list[int]] = {}
        by_content: dict[str, int] = {}
        encoded: dict[int, str] = {}  # id(value) -> its JSON: a group's jobs share their problem object
        for position, job in enumerate(jobs):
            job_id = job.get("id") if isinstance(job, dict) else None
            if not isinstance(job_id, str) or not job_id:
                self._add(job, position)
                continue
            key = _content_key(job, encoded) if self.deduplicate else None
            if key is not None:
                if key in by_content:
                    self.positions[by_content[key]].append(position)
                else:
                    by_content[key] = self._add(job, position)
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

    def split(self, episodes_per_part: int) -> None:
        """Split the long jobs (weight-edit episodes) into parts; their results merge later."""
        for index in range(len(self.unique)):
            parts = split_parts(self.unique[index], episodes_per_part)
            if parts:
                self.parts[index] = [self._add_part(part, index) for part in parts]
                self.stats.split_jobs += 1

    def _add_part(self, part: Any, parent: int) -> int:
        self.unique.append(part)
        self.positions.append([])
        self.done.append(False)
        self._parent[len(self.unique) - 1] = parent
        return len(self.unique) - 1

    def sendable(self) -> list[int]:
        """The unique jobs that travel as they are: all but those split into parts."""
        return [i for i in range(len(self.unique)) if i not in self.parts]

    def take_merges(self) -> list[tuple[int, list[Result]]]:
        """Split jobs whose parts are all in and fine: (job index, part results) to merge."""
        merges, self._merges = self._merges, []
        return [(index, [self._part_results[p] for p in self.parts[index]]) for index in merges]

    def answer(self, indices: Sequence[int], results: Sequence[Any]) -> None:
        """Take a chunk's results (one per index, in order); a malformed or missing one is infra."""
        for n, index in enumerate(indices):
            raw = results[n] if n < len(results) else None
            job = self.unique[index]
            if not isinstance(raw, dict):
                self._settle(index, Result.infra(job, "worker returned no result for this job"))
            elif isinstance(job, dict) and raw.get("id") != job.get("id"):
                self._settle(index, Result.infra(job, f"worker answered for id {raw.get('id')!r}"))
            else:
                self._settle(index, Result.received(raw))

    def fail(self, indices: Sequence[int], error: str) -> None:
        """Answer `indices` as infra_error (those not yet answered)."""
        for index in indices:
            self._settle(index, Result.infra(self.unique[index], error))

    def _settle(self, index: int, result: Result) -> None:
        if self.done[index]:
            self.stats.duplicates += 1
            return
        self.done[index] = True
        if index in self._parent:
            self._settle_part(index, result)
            return
        self.stats.infra_errors += result.is_infra * len(self.positions[index])
        latency = round(time.monotonic() - self._started, 6)
        for n, position in enumerate(self.positions[index]):
            if n == 0:
                result["latency_s"] = latency
                self._ready.append((position, result))
            else:  # another job identical to the one that ran: its own id, and `duplicate_of`
                self._ready.append((position, result.duplicate(self.jobs[position], latency)))
                self.stats.deduplicated += 1

    def _settle_part(self, index: int, result: Result) -> None:
        """Keep a part's result; once all parts are in, merge them (or fail the job, if one failed)."""
        self._part_results[index] = result
        parent = self._parent[index]
        parts = self.parts[parent]
        if not all(self.done[p] for p in parts):
            return
        failed = [self._part_results[p] for p in parts if self._part_results[p].is_infra]
        if failed:
            self._settle(
                parent, Result.infra(self.unique[parent], f"a part failed: {failed[0].get('error')}")
            )
        else:
            self._merges.append(parent)

    def drain(self) -> Iterator[tuple[int, Result]]:
        """The answers settled since the last drain, as (input position, result)."""
        ready, self._ready = self._ready, []
        self.stats.elapsed_s = round(time.monotonic() - self._started, 6)
        yield from ready


def _content_key(job: dict[str, Any], encoded: dict[int, str]) -> str | None:
    """What decides a job's result, as text: every field but its id (None when not JSON)."""
    try:
        parts = []
        for name in sorted(job):
            if name == "id":
                continue
            value = job[name]
            text = encoded.get(id(value))
            if text is None:
                text = encoded[id(value)] = json.dumps(value, sort_keys=True, separators=(",", ":"))
            parts.append(f"{json.dumps(name)}:{text}")
        return "{" + ",".join(parts) + "}"
    except (TypeError, ValueError):
        return None
