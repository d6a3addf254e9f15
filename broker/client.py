"""The producer's client: send a batch of jobs to the farm, get every result back exactly once.

Cheap to import in a training process: Celery is imported when a `Farm` is built, and nothing of the
envs (numpy, MinAtar) ever is. Delivery is at least once, so results are de-duplicated by job id; a
job the farm cannot score (a worker that keeps dying, the batch deadline) comes back as `infra_error`
with `infra: true` instead of going missing.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from broker.batch import Batch, BatchStats
from broker.chunking import Chunk, plan_chunks
from broker.result import Result, from_worker, infra_result
from broker.settings import Settings

log = logging.getLogger(__name__)

# Keys a worker node refreshes while it lives: its pool size, so producers can size chunks.
NODE_KEY_PREFIX = "evalfarm:node:"
# Failures of a whole chunk caused by one of its jobs (its process died, or the hard time limit
# killed it): the jobs are worth scoring one by one.
_CHUNK_KILLERS = ("WorkerLostError", "TimeLimitExceeded")
_SUCCESS, _FAILURE = "SUCCESS", "FAILURE"
_SIZE_TTL_S = 30.0


class Farm:
    """A connection to a running farm.

    `score(jobs)` returns one `Result` per job in input order; `stream(jobs)` yields
    `(index, Result)` pairs as they complete. Thread-compatible, not thread-safe: one batch at a time.
    """

    def __init__(
        self,
        broker_url: str | None = None,
        *,
        settings: Settings | None = None,
        processes: int | None = None,
        progress: bool = True,
    ) -> None:
        settings = settings or Settings()
        if broker_url:
            settings = settings.model_copy(update={"broker_url": broker_url})
        from broker.app import make_app  # Celery only now: importing this module stays cheap

        self.settings = settings
        self.progress = progress
        self.last_stats = BatchStats()
        self._app = make_app(settings, name="evalfarm-producer")
        self._backend = self._app.backend
        self._processes = processes or settings.farm_processes
        self._advertised, self._advertised_at = 1, -math.inf
        self._costs = dict(settings.job_costs_s)

    def __enter__(self) -> Farm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the broker and backend connections."""
        self._app.close()

    def score(
        self,
        jobs: Sequence[Any],
        *,
        priority: bool = False,
        deadline_s: float | None = None,
        progress: bool | None = None,
    ) -> list[Result]:
        """Score `jobs`; one Result each, in input order. Never raises for a job or a lost worker."""
        results: list[Result | None] = [None] * len(jobs)
        for index, result in self.stream(jobs, priority=priority, deadline_s=deadline_s, progress=progress):
            results[index] = result
        return [r if r is not None else infra_result(jobs[i], "no result") for i, r in enumerate(results)]

    def iter_ordered(self, jobs: Sequence[Any], **options: Any) -> Iterator[Result]:
        """Results in input order, each yielded as soon as it and all before it are in."""
        waiting: dict[int, Result] = {}
        next_index = 0
        for index, result in self.stream(jobs, **options):
            waiting[index] = result
            while next_index in waiting:
                yield waiting.pop(next_index)
                next_index += 1

    def stream(
        self,
        jobs: Sequence[Any],
        *,
        priority: bool = False,
        deadline_s: float | None = None,
        progress: bool | None = None,
    ) -> Iterator[tuple[int, Result]]:
        """Yield `(index, result)` for every job as results complete; each index exactly once.

        `priority` sends the batch on the priority lane (ahead of background work); past
        `deadline_s` (default `batch_deadline_s`) unfinished jobs come back as infra_error.
        """
        batch = Batch(jobs)
        batch.split(self.settings.episodes_per_part)
        run = _Run(self, batch, priority, time.monotonic() + (deadline_s or self.settings.batch_deadline_s))
        bar = _progress_bar(len(jobs), self.progress if progress is None else progress)
        try:
            sendable = batch.sendable()
            planned = plan_chunks(
                [batch.unique[i] for i in sendable], self.settings, self.processes(), self._cost_of
            )
            run.send(Chunk(c.queue, tuple(sendable[i] for i in c.indices), c.cost_s) for c in planned)
            for index, result in run.collect():
                bar.update(1)
                yield index, result
        finally:
            bar.close()
            run.abandon()
            self.last_stats = batch.stats

    def processes(self) -> int:
        """Pool processes serving the farm: given, else as live worker nodes advertise (re-read every
        30 s, as nodes come and go)."""
        if self._processes is not None:
            return self._processes
        now = time.monotonic()
        if now - self._advertised_at > _SIZE_TTL_S:
            self._advertised = self._advertised_processes() or 1
            self._advertised_at = now
        return self._advertised

    def _advertised_processes(self) -> int:
        try:
            client = self._backend.client
            keys = list(client.scan_iter(match=NODE_KEY_PREFIX + "*", count=1000))
            return sum(int(v) for v in client.mget(keys) if v is not None) if keys else 0
        except Exception as error:  # sizing is a hint: a broker hiccup must not fail the batch
            log.warning("could not read the farm's size: %s", error)
            return 0

    def _cost_of(self, job: Any) -> float:
        env = job.get("env") if isinstance(job, dict) else None
        return self._costs.get(env, self.settings.default_job_cost_s) if isinstance(env, str) else 0.0

    def _learn_costs(self, results: Iterable[dict[str, Any]]) -> None:
        """Move each env's cost guess toward the run time seen, so the next batch chunks better."""
        for result in results:
            env, run_s = result.get("env"), result.get("run_s")
            if isinstance(env, str) and isinstance(run_s, int | float) and run_s > 0:
                old = self._costs.get(env, self.settings.default_job_cost_s)
                self._costs[env] = 0.9 * old + 0.1 * float(run_s)


class _Run:
    """One batch in flight: the chunks sent, their task ids, and the loop that gathers results."""

    def __init__(self, farm: Farm, batch: Batch, priority: bool, deadline: float) -> None:
        self.farm = farm
        self.batch = batch
        self.settings = farm.settings
        self.priority = self.settings.priority_lane if priority else self.settings.background_priority
        self.deadline = deadline
        self.pending: dict[str, Chunk] = {}
        self.merging: set[str] = set()  # pending task ids that merge a split job's parts

    def send(self, chunks: Iterable[Chunk]) -> None:
        """Publish each chunk as one task; a chunk that cannot be published is answered infra_error.

        Once one publish has failed (its retries spent: the broker is down), the rest of the chunks
        are answered at once rather than each waiting out its own retries.
        """
        from broker.app import SCORE_CHUNK

        failure: str | None = None
        with self.farm._app.producer_or_acquire() as producer:
            for chunk in chunks:
                if failure is not None:
                    self.batch.fail(chunk.indices, failure)
                    continue
                jobs = [self.batch.unique[i] for i in chunk.indices]
                failure = self._publish(producer, SCORE_CHUNK, [jobs], chunk)

    def send_merges(self) -> None:
        """Ask a worker to merge each split job whose parts are all in."""
        from broker.app import MERGE_PARTS

        merges = self.batch.take_merges()
        if not merges:
            return
        with self.farm._app.producer_or_acquire() as producer:
            for index, parts in merges:
                job = self.batch.unique[index]
                chunk = Chunk(self.settings.queue_for(job.get("env")), (index,), 0.0)
                self._publish(producer, MERGE_PARTS, [job, [dict(p) for p in parts]], chunk, merge=True)

    def _publish(
        self, producer: Any, task: str, args: list[Any], chunk: Chunk, merge: bool = False
    ) -> str | None:
        """Send one task for `chunk`; None, or the error when publishing failed (then answered).

        The message is built and sent with Celery's own protocol functions rather than `send_task`,
        which would also subscribe to each task's result channel: the client polls the backend.
        """
        task_id = f"evalfarm-{uuid.uuid4().hex}"
        amqp = self.farm._app.amqp
        try:
            message = amqp.create_task_message(task_id, task, args, {"sent_at": time.time()})
            amqp.send_task_message(producer, task, message, queue=chunk.queue, priority=self.priority)
        except Exception as error:
            log.error("could not publish a task for %d jobs: %s", len(chunk.indices), error)
            failure = f"publish failed: {type(error).__name__}: {error}"
            self.batch.fail(chunk.indices, failure)
            return failure
        self.pending[task_id] = chunk
        if merge:
            self.merging.add(task_id)
        self.batch.stats.messages += 1
        return None

    def collect(self) -> Iterator[tuple[int, Result]]:
        """Poll the result backend until every job is answered or the deadline passes."""
        yield from self.batch.drain()
        idle = self.settings.poll_interval_s
        while self.pending and time.monotonic() < self.deadline:
            ready = self._poll()
            if ready:
                idle = self.settings.poll_interval_s
                for task_id, meta in ready:
                    self._settle(task_id, meta)
                self.send_merges()
                yield from self.batch.drain()
            else:
                time.sleep(min(idle, max(0.0, self.deadline - time.monotonic())))
                idle = min(idle * 1.5, 0.25)
        if self.pending:
            self._expire()
            yield from self.batch.drain()

    def abandon(self) -> None:
        """Revoke what is still queued (a consumer that stopped early, or the deadline)."""
        if not self.pending:
            return
        try:
            self.farm._app.control.revoke(list(self.pending))
        except Exception as error:  # best effort: revoked or not, the results expire
            log.warning("could not revoke %d tasks: %s", len(self.pending), error)
        self.pending.clear()

    def _poll(self) -> list[tuple[str, dict[str, Any]]]:
        """The finished tasks among those pending (empty while the backend is unreachable)."""
        backend = self.farm._backend
        task_ids = list(self.pending)
        try:
            values = backend.client.mget([backend.get_key_for_task(t) for t in task_ids])
        except Exception as error:  # Redis restarting: keep waiting until the deadline
            log.warning("result backend unreachable, retrying: %s", error)
            time.sleep(0.5)
            return []
        ready = []
        for task_id, value in zip(task_ids, values, strict=True):
            if value is not None:
                meta = backend.decode_result(value)
                if meta.get("status") in (_SUCCESS, _FAILURE):
                    ready.append((task_id, meta))
        if ready:
            self._forget([t for t, _ in ready])
        return ready

    def _forget(self, task_ids: list[str]) -> None:
        backend = self.farm._backend
        try:
            backend.client.delete(*[backend.get_key_for_task(t) for t in task_ids])
        except Exception as error:  # harmless: the keys expire on their own
            log.debug("could not delete read results: %s", error)

    def _settle(self, task_id: str, meta: dict[str, Any]) -> None:
        """Take a finished task's results, or decide what to do about its failure."""
        chunk = self.pending.pop(task_id)
        if task_id in self.merging:
            self.merging.discard(task_id)
            merged = meta.get("result")
            if meta["status"] == _SUCCESS and isinstance(merged, dict):
                self.batch.answer(chunk.indices, [merged])
            else:
                self.batch.fail(chunk.indices, _failure_text(meta))
            return
        if meta["status"] == _SUCCESS and isinstance(meta.get("result"), list):
            self.farm._learn_costs(r for r in meta["result"] if isinstance(r, dict))
            self.batch.answer(chunk.indices, meta["result"])
            return
        error = _failure_text(meta)
        if _killed_by_a_job(meta) and len(chunk.indices) > 1:
            # Some job in the chunk keeps killing its worker: score the jobs one by one so only the
            # culprit ends up infra_error and the others still get their verdicts.
            log.warning("chunk of %d jobs failed (%s); rescoring them one by one", len(chunk.indices), error)
            self.batch.stats.split_chunks += 1
            self.send(Chunk(chunk.queue, (i,), 0.0) for i in chunk.indices)
            return
        self.batch.fail(chunk.indices, error)

    def _expire(self) -> None:
        """The deadline passed: answer every unfinished job as infra_error."""
        log.warning("batch deadline passed with %d tasks unfinished", len(self.pending))
        for chunk in self.pending.values():
            self.batch.fail(chunk.indices, "batch deadline exceeded")
        self.abandon()


def _exception_of(meta: dict[str, Any]) -> tuple[str, str] | None:
    """(type name, message) of a failed task's exception, as the backend decoded it."""
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


def _failure_text(meta: dict[str, Any]) -> str:
    exception = _exception_of(meta)
    if exception is not None:
        return f"worker failed: {exception[0]}: {exception[1]}"
    return f"worker answered {meta.get('status')} without results"


def _progress_bar(total: int, enabled: bool) -> Any:
    """A tqdm bar on stderr (imported only when shown)."""
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="job", dynamic_ncols=True, smoothing=0.1)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


__all__ = ["Farm", "Result", "from_worker"]
