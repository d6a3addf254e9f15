"""What the sync and the asyncio client share: the Celery app, publishing, sizing, cost guesses.

A `Producer` is safe to share between threads and between batches in flight: publishing takes a
producer from Celery's pool per call, and each batch has its own `BatchRun` and reply list.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from evalfarm.broker.batch import Batch
from evalfarm.broker.connections import SOCKET_OPTIONS
from evalfarm.broker.keys import NODE_KEY_PREFIX
from evalfarm.broker.run import BatchRun, Outgoing
from evalfarm.broker.settings import ClientSettings

log = logging.getLogger(__name__)

_SIZE_TTL_S = 30.0
# Celery's own retries of one publish stay short: a batch publishes again, with backoff, until its
# deadline (`BatchRun.publish_failed`), so one unreachable broker does not hold every chunk up.
_ARGSREPR = "(jobs)"
_PUBLISH_RETRY = {"max_retries": 2, "interval_start": 0.1, "interval_step": 0.2, "interval_max": 0.3}


class Producer:
    """A producer's connection to the farm: publishes batches' tasks and sizes their chunks."""

    def __init__(self, settings: ClientSettings, processes: int | None = None) -> None:
        from evalfarm.broker.app import make_app  # Celery only now: importing the client stays cheap

        self.settings = settings
        self.app = make_app(settings, name="evalfarm-producer")
        self._processes = processes or settings.farm_processes
        self._advertised, self._advertised_at = 1, -math.inf
        self._costs = dict(settings.job_costs_s)
        self._lock = threading.Lock()
        self._declared: set[str] = set()  # queues this producer has declared (their bindings exist)

    def close(self) -> None:
        """Release the broker connections."""
        self.app.close()

    def new_run(self, jobs: Sequence[Any], deadline_s: float | None) -> BatchRun:
        """A batch of `jobs` ready to plan: grouped, long jobs split, its deadline set."""
        batch = Batch(jobs, deduplicate=self.settings.deduplicate)
        batch.split(self.settings.episodes_per_part)
        deadline = time.monotonic() + (deadline_s or self.settings.batch_deadline_s)
        return BatchRun(batch, self.settings, deadline, self.cost_of, self.learn_costs)

    def lane(self, priority: bool) -> int:
        """The message priority of a batch: the priority lane, or background work."""
        return self.settings.priority_lane if priority else self.settings.background_priority

    def publish(self, run: BatchRun, outgoing: list[Outgoing], priority: int, reply_key: str) -> None:
        """Publish `outgoing` for `run`, each task naming `reply_key` for its outcome.

        The message is built and sent with Celery's own protocol functions rather than `send_task`,
        which would also subscribe to each task's result: outcomes come on the reply list. Once one
        publish has failed, the rest of this round wait for the run's next try too.
        """
        if not outgoing:
            return
        amqp = self.app.amqp
        sent = 0
        try:
            with self.app.producer_or_acquire() as producer:
                for item in outgoing:
                    task_id = f"evalfarm-{uuid.uuid4().hex}"
                    message = amqp.create_task_message(
                        task_id, item.task, item.args, {"sent_at": time.time()}, reply_to=reply_key,
                        argsrepr=_ARGSREPR, kwargsrepr="",  # Celery's repr of the jobs: only for logs
                    )  # fmt: skip
                    # Declaring a queue (its exchange binding, which routing reads) once is enough:
                    # kombu would copy and check the entities again for every message.
                    declare: list[Any] | None = [] if item.chunk.queue in self._declared else None
                    amqp.send_task_message(
                        producer, item.task, message, queue=item.chunk.queue, priority=priority,
                        retry=True, retry_policy=_PUBLISH_RETRY, declare=declare,
                    )  # fmt: skip
                    self._declared.add(item.chunk.queue)
                    run.published(task_id, item)
                    sent += 1
        except Exception as error:
            text = f"publish failed: {type(error).__name__}: {error}"
            log.warning("could not publish %d tasks, trying again: %s", len(outgoing) - sent, text)
            for item in outgoing[sent:]:
                run.publish_failed(item, text)

    def revoke(self, task_ids: list[str]) -> None:
        """Revoke tasks still queued (a consumer that stopped early, or the deadline)."""
        if not task_ids:
            return
        try:
            self.app.control.revoke(task_ids)
        except Exception as error:  # best effort: revoked or not, their replies expire
            log.warning("could not revoke %d tasks: %s", len(task_ids), error)

    def processes(self, redis_client: Any) -> int:
        """Pool processes serving the farm: given, else as live nodes advertise (re-read every 30 s)."""
        known = self.known_processes()
        if known is not None:
            return known
        self._advertised = advertised_processes(redis_client) or 1
        self._advertised_at = time.monotonic()
        return self._advertised

    def known_processes(self) -> int | None:
        """The pool size if it is given or was read less than 30 s ago (no I/O), else None."""
        if self._processes is not None:
            return self._processes
        if time.monotonic() - self._advertised_at <= _SIZE_TTL_S:
            return self._advertised
        return None

    def cost_of(self, job: Any) -> float:
        """The guess of one job's seconds, from its env."""
        env = job.get("env") if isinstance(job, dict) else None
        return self._costs.get(env, self.settings.default_job_cost_s) if isinstance(env, str) else 0.0

    def learn_costs(self, results: Iterable[dict[str, Any]]) -> None:
        """Move each env's cost guess toward the run time seen, so the next batch chunks better."""
        with self._lock:
            for result in results:
                env, run_s = result.get("env"), result.get("run_s")
                if isinstance(env, str) and isinstance(run_s, int | float) and run_s > 0:
                    old = self._costs.get(env, self.settings.default_job_cost_s)
                    self._costs[env] = 0.9 * old + 0.1 * float(run_s)


def advertised_processes(client: Any) -> int:
    """The pool processes live nodes advertise in total (0 when none, or Redis is unreachable)."""
    try:
        keys = list(client.scan_iter(match=NODE_KEY_PREFIX + "*", count=1000))
        return sum(int(v) for v in client.mget(keys) if v is not None) if keys else 0
    except Exception as error:  # sizing is a hint: a broker hiccup must not fail the batch
        log.warning("could not read the farm's size: %s", error)
        return 0


def redis_options(settings: ClientSettings) -> dict[str, Any]:
    """Connection options of a producer's own Redis client (reply lists, sizing)."""
    return {**SOCKET_OPTIONS, "health_check_interval": settings.health_check_interval_s}
