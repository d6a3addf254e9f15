"""One batch in flight, without any I/O: what to publish, what each reply settles, what to try again.

`steps(run)` is the batch's loop, written once: a generator that yields each thing it needs done
(`Publish` these tasks, `Receive` replies for at most so long, `Locate` these tasks in Redis) or has
for the caller (`Deliver` a result), and is sent back what a request found. The sync client
(`Farm`) performs the requests with blocking calls, the asyncio one (`AsyncFarm`) awaits them;
neither has a rule of its own. The rules for faults live here, once:

- a chunk that could not be published (Redis down) is published again with backoff until the
  deadline;
- a chunk whose process died (past the worker's own retries) or hit the time limit is rescored job
  by job, so only the job that kills its worker ends as `infra_error`;
- a job that came back `infra_error` (the farm failed under it: a sandbox lost twice, a failed
  merge, a malformed answer) is sent again, up to `job_retries` times with backoff, while the
  deadline allows; only what still fails is answered `infra_error`;
- a task the farm lost (nowhere in Redis at two audits in a row, `broker.audit`) is published again.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import logging
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

from evalfarm.broker.batch import Batch
from evalfarm.broker.chunking import Chunk, plan_chunks
from evalfarm.broker.connections import MasterWatch
from evalfarm.broker.settings import ClientSettings
from evalfarm.result import INFRA_STATUS, Result

log = logging.getLogger(__name__)

# The farm's two tasks, sent by name: score a chunk of jobs; merge a split job's parts with its env.
SCORE_CHUNK = "evalfarm.score_chunk"
MERGE_PARTS = "evalfarm.merge_parts"
# Failures of a whole chunk caused by one of its jobs (its process died, or the hard time limit
# killed it): the jobs are worth scoring one by one.
_CHUNK_KILLERS = ("WorkerLostError", "TimeLimitExceeded")
_SUCCESS = "SUCCESS"
_BACKOFF_START_S, _BACKOFF_MAX_S = 0.2, 5.0
_WAIT_CAP_S = 2.0  # the longest single wait: a deadline or a due retry is never slept through
_QUICK_AUDIT_S = 3.0  # after Redis trouble: how soon, and how often, pending tasks are looked for


@dataclasses.dataclass(frozen=True)
class Outgoing:
    """One task to publish: its name, its arguments, and the chunk of jobs it answers."""

    task: str
    args: list[Any]
    chunk: Chunk

    @property
    def merge(self) -> bool:
        """True for the task that merges a split job's parts."""
        return self.task == MERGE_PARTS


@dataclasses.dataclass(frozen=True)
class Deliver:
    """A result for the caller: job `index` of the batch is answered."""

    index: int
    result: Result


@dataclasses.dataclass(frozen=True)
class Publish:
    """Publish these tasks (reporting each to the run with `published` or `publish_failed`)."""

    outgoing: list[Outgoing]


@dataclasses.dataclass(frozen=True)
class Receive:
    """Wait at most `wait_s` for replies on the batch's list; send back the list of replies read,
    or None when Redis failed under the read."""

    wait_s: float
    most: int


@dataclasses.dataclass(frozen=True)
class Locate:
    """Look for these tasks in Redis; send back the ids found, or None if Redis could not tell."""

    task_ids: list[str]


Step = Deliver | Publish | Receive | Locate


def steps(run: BatchRun, watch: MasterWatch | None = None) -> Generator[Step, Any, None]:
    """The batch's loop: until every job is answered, deliver what is settled, publish what is due,
    wait for replies, and look for tasks pending too long; past the deadline, expire the rest.
    `watch`: the client's, whose change of generation is a failover (see `BatchRun.broker_trouble`)."""
    generation = watch.generation if watch is not None else 0
    while True:
        for index, result in run.drain():
            yield Deliver(index, result)
        if run.finished:
            return
        if run.deadline_passed():
            run.expire()
            continue
        due = run.due()
        if due:
            yield Publish(due)
        received = yield Receive(run.wait_s(), len(run.pending))
        if watch is not None and watch.generation != generation:  # a failover, which retries hid
            generation = watch.generation
            run.broker_trouble()
        elif received is None:  # Redis trouble: it restarted, or failed over to a replica
            run.broker_trouble()
        for reply in received or ():
            run.on_reply(reply)
        looked_for = run.audit_due()
        if looked_for:
            run.audited(looked_for, (yield Locate(looked_for)))


def next_step(loop: Generator[Step, Any, None], answer: Any) -> Step | None:
    """The batch loop's next step, given the answer to its last one; None once the batch is done."""
    try:
        return loop.send(answer)
    except StopIteration:
        return None


class BatchRun:
    """A batch's tasks in flight and the decisions about their replies."""

    def __init__(
        self,
        batch: Batch,
        settings: ClientSettings,
        deadline: float,
        cost_of: Callable[[Any], float],
        learn: Callable[[list[dict[str, Any]]], None],
    ) -> None:
        self.batch = batch
        self.settings = settings
        self.deadline = deadline
        self._cost_of = cost_of
        self._learn = learn
        self.pending: dict[str, Outgoing] = {}  # published, waiting for the reply
        self._due: list[tuple[float, int, Outgoing]] = []  # a heap: to publish at that time
        self._order = itertools.count()
        self._retries: dict[int, int] = {}  # unique job index -> times sent again after infra_error
        self._publish_backoff = 0.0
        self._last_publish_error: str | None = None
        self._expired: list[str] = []  # task ids given up at the deadline, to revoke
        self._published_at: dict[str, float] = {}
        self._missing_once: set[str] = set()  # not found by the last audit
        self._next_audit = time.monotonic() + settings.lost_task_audit_s
        self._quick_audits = 0  # audits still to make soon, and of every pending task (after trouble)

    # -- what to publish ----------------------------------------------------------------------

    def plan(self, processes: int) -> None:
        """Plan the batch's chunks, all due now."""
        sendable = self.batch.sendable()
        planned = plan_chunks(
            [self.batch.unique[i] for i in sendable], self.settings, processes, self._cost_of
        )
        for chunk in planned:
            self._schedule_chunk(Chunk(chunk.queue, tuple(sendable[i] for i in chunk.indices), chunk.cost_s))

    def due(self, now: float | None = None) -> list[Outgoing]:
        """The tasks to publish now."""
        now = time.monotonic() if now is None else now
        ready = []
        while self._due and self._due[0][0] <= now:
            ready.append(heapq.heappop(self._due)[2])
        return ready

    def published(self, task_id: str, outgoing: Outgoing) -> None:
        """`outgoing` is on its queue as task `task_id`."""
        self.pending[task_id] = outgoing
        self._published_at[task_id] = time.monotonic()
        self.batch.stats.messages += 1
        self._publish_backoff = 0.0

    def publish_failed(self, outgoing: Outgoing, error: str) -> None:
        """Publishing failed (the broker is unreachable): try again later, until the deadline."""
        self._last_publish_error = error
        self._publish_backoff = min(_BACKOFF_MAX_S, max(_BACKOFF_START_S, self._publish_backoff * 2))
        self._schedule(outgoing, time.monotonic() + self._publish_backoff)

    # -- replies ------------------------------------------------------------------------------

    def on_reply(self, meta: Any) -> None:
        """Settle the task a reply is for (a reply to a task no longer pending is a late duplicate)."""
        task_id = meta.get("task_id") if isinstance(meta, dict) else None
        outgoing = self.pending.pop(task_id, None) if isinstance(task_id, str) else None
        if outgoing is None:
            self.batch.stats.duplicates += isinstance(task_id, str)  # dropped: the task was answered
            return
        self._published_at.pop(str(task_id), None)
        if meta.get("status") == _SUCCESS:
            self._take(outgoing, meta.get("result"))
        else:
            self._failed(outgoing, meta)
        for index, parts in self.batch.take_merges():
            job = self.batch.unique[index]
            chunk = Chunk(self.settings.queue_for(job.get("env")), (index,), 0.0)
            self._schedule(Outgoing(MERGE_PARTS, [job, [dict(p) for p in parts]], chunk))

    def _take(self, outgoing: Outgoing, answer: Any) -> None:
        """A task's answer: one result per job of a chunk, or the merged result of a split job."""
        results = [answer] if outgoing.merge else answer
        if not isinstance(results, list):
            self._failed(outgoing, {"status": "SUCCESS", "result": None})
            return
        self._learn([r for r in results if isinstance(r, dict)])
        again = []
        for n, index in enumerate(outgoing.chunk.indices):
            raw = results[n] if n < len(results) else None
            if self._retryable(index, raw):
                again.append(index)
            else:
                self.batch.answer([index], [raw])
        self._again(outgoing, again, "an infra_error answer")

    def _failed(self, outgoing: Outgoing, meta: dict[str, Any]) -> None:
        """A task failed as a whole: rescore its jobs one by one, try it again, or fail its jobs."""
        indices = outgoing.chunk.indices
        error = failure_text(meta)
        if _killed_by_a_job(meta):
            if len(indices) > 1:
                # Some job of the chunk keeps killing its worker: score the jobs one by one so only
                # the culprit ends up infra_error and the others still get their verdicts.
                log.warning("chunk of %d jobs failed (%s); rescoring them one by one", len(indices), error)
                self.batch.stats.split_chunks += 1
                for index in indices:
                    self._schedule_chunk(Chunk(outgoing.chunk.queue, (index,), 0.0))
            else:  # the worker already tried it `worker_lost_retries` more times
                self.batch.fail(indices, error)
            return
        again = [i for i in indices if self._retryable(i, None)]
        self.batch.fail([i for i in indices if i not in again], error)
        self._again(outgoing, again, error)

    def _retryable(self, index: int, raw: Any) -> bool:
        """True when job `index` failed for the farm's reasons and may be sent again."""
        if self.batch.done[index]:
            return False
        if isinstance(raw, dict) and raw.get("status") != INFRA_STATUS:
            return False
        tries = self._retries.get(index, 0)
        if tries >= self.settings.job_retries or time.monotonic() + self._backoff(tries) >= self.deadline:
            return False
        self._retries[index] = tries + 1
        return True

    def _again(self, outgoing: Outgoing, indices: list[int], why: str) -> None:
        """Send `indices` of `outgoing` again after a backoff (a merge as it was)."""
        if not indices:
            return
        self.batch.stats.retried_jobs += len(indices)
        log.warning("sending %d jobs again after %s", len(indices), why)
        at = time.monotonic() + self._backoff(self._retries[indices[0]] - 1)
        if outgoing.merge:
            self._schedule(outgoing, at)
            return
        for index in indices:
            self._schedule_chunk(Chunk(outgoing.chunk.queue, (index,), 0.0), at)

    # -- tasks the farm lost -------------------------------------------------------------------

    def audit_due(self, now: float | None = None) -> list[str]:
        """When an audit is due: the tasks pending for longer than `lost_task_audit_s`, to look for."""
        now = time.monotonic() if now is None else now
        if now < self._next_audit:
            return []
        if self._quick_audits:
            self._next_audit = now + _QUICK_AUDIT_S
            return list(self._published_at)
        self._next_audit = now + self.settings.lost_task_audit_s
        oldest = now - self.settings.lost_task_audit_s
        return [task_id for task_id, at in self._published_at.items() if at <= oldest]

    def broker_trouble(self, now: float | None = None) -> None:
        """Redis failed under a read: it may have restarted without its last second, or failed over
        to a replica that had not yet received the last writes (replication is asynchronous). Tasks
        or replies written then may be gone: look for every pending task soon, twice (the rule of
        two audits in a row), instead of after `lost_task_audit_s`."""
        now = time.monotonic() if now is None else now
        self._quick_audits = 2
        self._next_audit = min(self._next_audit, now + _QUICK_AUDIT_S)

    def audited(self, looked_for: list[str], found: set[str] | None) -> None:
        """`found`: those of `looked_for` the farm holds (None: it could not tell). A task missing at
        two audits in a row is lost: published again."""
        if found is None:
            return
        if self._quick_audits:  # one of the audits after trouble is done (one that could tell)
            self._quick_audits -= 1
            if not self._quick_audits:
                self._next_audit = time.monotonic() + self.settings.lost_task_audit_s
        missing = {task_id for task_id in looked_for if task_id not in found and task_id in self.pending}
        lost, self._missing_once = missing & self._missing_once, missing - self._missing_once
        for task_id in lost:
            log.warning("task %s is nowhere in the farm (lost); publishing it again", task_id)
            self.batch.stats.lost_tasks += 1
            del self._published_at[task_id]
            self._schedule(self.pending.pop(task_id))

    # -- waiting and the end ------------------------------------------------------------------

    def deadline_passed(self) -> bool:
        """True once the batch's deadline is behind us."""
        return time.monotonic() >= self.deadline

    @property
    def finished(self) -> bool:
        """True once nothing is in flight or waiting to be published."""
        return not self.pending and not self._due

    def wait_s(self, now: float | None = None) -> float:
        """How long the driver may wait for a reply before calling `due` (or `expire`) again."""
        now = time.monotonic() if now is None else now
        until = min(self.deadline, self._due[0][0]) if self._due else self.deadline
        return max(0.0, min(_WAIT_CAP_S, until - now))

    def expire(self) -> None:
        """The deadline passed: answer everything unfinished as infra_error."""
        waiting = [entry[2] for entry in self._due]
        if self.pending or waiting:
            log.warning("batch deadline passed with %d tasks unfinished", len(self.pending) + len(waiting))
        error = "batch deadline exceeded"
        if waiting and self._last_publish_error and not self.pending:
            error = f"{error}; the farm could not be reached: {self._last_publish_error}"
        for outgoing in [*self.pending.values(), *waiting]:
            self.batch.fail(outgoing.chunk.indices, error)
        self._expired.extend(self.pending)
        self.pending.clear()
        self._published_at.clear()
        self._due.clear()

    def drain(self) -> Iterator[tuple[int, Result]]:
        """Results settled since the last call, as (input position, result)."""
        return self.batch.drain()

    def abandoned(self) -> list[str]:
        """The task ids still in flight or expired, forgotten here (the caller revokes them)."""
        task_ids = [*self._expired, *self.pending]
        self._expired.clear()
        self.pending.clear()
        self._published_at.clear()
        self._due.clear()
        return task_ids

    # -- helpers ------------------------------------------------------------------------------

    def _schedule_chunk(self, chunk: Chunk, at: float | None = None) -> None:
        """Put the scoring of `chunk` on the due list (now, or at `at`): it is sent when due."""
        jobs = [self.batch.unique[i] for i in chunk.indices]
        self._schedule(Outgoing(SCORE_CHUNK, [jobs], chunk), at)

    def _schedule(self, outgoing: Outgoing, at: float | None = None) -> None:
        heapq.heappush(self._due, (time.monotonic() if at is None else at, next(self._order), outgoing))

    @staticmethod
    def _backoff(tries: int) -> float:
        return min(_BACKOFF_MAX_S, _BACKOFF_START_S * 2**tries)


def _exception_of(meta: dict[str, Any]) -> tuple[str, str] | None:
    """(type name, message) of a failed task's exception, as the worker serialised it (Celery's
    exc_type and exc_message: a reliance `broker.celery_internals` lists, proven by its tests)."""
    result = meta.get("result")
    if isinstance(result, BaseException):
        return type(result).__name__, str(result)
    if isinstance(result, dict) and "exc_type" in result:
        message = result.get("exc_message")
        text = " ".join(map(str, message)) if isinstance(message, list | tuple) else str(message)
        return str(result["exc_type"]), text
    return None


def _killed_by_a_job(meta: dict[str, Any]) -> bool:
    exception = _exception_of(meta)
    return exception is not None and exception[0] in _CHUNK_KILLERS


def failure_text(meta: dict[str, Any]) -> str:
    """One line saying why a task failed."""
    exception = _exception_of(meta)
    if exception is not None:
        return f"worker failed: {exception[0]}: {exception[1]}"
    return f"worker answered {meta.get('status')} without results"
