"""Recording: Celery's task and process signals feed the instruments from the jobs' results.

Everything is read from what the task received and returned (`run_s`, `status`, the per-test entries
of a CodeContests result, the message's `sent_at`), so neither the envs nor the sandbox know metrics
exist. Receivers run in pool children (a task's start and end) and in the node's main process (a
message retried or failed after its child died); they never raise into Celery.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from evalfarm.sandbox import Status
from evalfarm.sandbox.slot import RESTART_REASONS
from evalfarm.tasks.process import WorkerProcess
from evalfarm.workers.metrics import instruments as m

log = logging.getLogger(__name__)

STATUSES = frozenset(status.value for status in Status)
UNKNOWN = "unknown"
OTHER = "other"
# Why a message was retried or failed: fixed names for the exceptions Celery reports.
REASONS = {"WorkerLostError": "worker_lost", "TimeLimitExceeded": "time_limit"}


@dataclass(frozen=True)
class Labels:
    """The bounded label values of a node: the envs it registered and the queues it serves."""

    envs: frozenset[str]
    queues: frozenset[str]

    def env(self, value: Any) -> str:
        """`value` if it is a registered env id, else `unknown` (a producer may send any string)."""
        return value if value in self.envs else UNKNOWN

    def queue(self, value: Any) -> str:
        """`value` if the node serves that queue, else `other`."""
        return value if value in self.queues else OTHER


def status_label(value: Any) -> str:
    """`value` if it is one of the contract's statuses, else `unknown`."""
    return value if value in STATUSES else UNKNOWN


def reason_label(error: Any) -> str:
    """A fixed name for why a message failed: worker_lost, time_limit or error."""
    return REASONS.get(type(error).__name__, "error")


def record_chunk(labels: Labels, jobs: Any, results: Iterable[Any]) -> None:
    """Count the results of one message, pairing each with its job to tell parts from whole jobs."""
    jobs = [jobs] if isinstance(jobs, dict) else jobs if isinstance(jobs, list) else []
    for index, result in enumerate(results):
        job = jobs[index] if index < len(jobs) else None
        if isinstance(result, dict):
            record_result(labels, result, part=isinstance(job, dict) and "episode_range" in job)


def record_result(labels: Labels, result: dict[str, Any], part: bool = False) -> None:
    """Count one result: a job (or a part of a split job) and the sandbox runs it shows."""
    env, status = labels.env(result.get("env")), status_label(result.get("status"))
    if part:
        m.JOB_PARTS.labels(env, status).inc()
    else:
        m.JOBS.labels(env, status).inc()
        run_s = result.get("run_s")
        if isinstance(run_s, int | float) and not isinstance(run_s, bool) and run_s >= 0:
            m.JOB_DURATION.labels(env).observe(run_s)
    for run_status in sandbox_runs(result):
        m.SANDBOX_RUNS.labels(status_label(run_status)).inc()


def record_sandbox_restarts(restarts: dict[str, int]) -> None:
    """Count the restarts a pool process's sandbox went through (reasons outside the set: `other`)."""
    for reason, count in restarts.items():
        m.SANDBOX_RESTARTS.labels(reason if reason in RESTART_REASONS else OTHER).inc(count)


def sandbox_runs(result: dict[str, Any]) -> list[Any]:
    """The statuses of the sandbox runs a result shows: one per test entry, else one if it ran."""
    tests = result.get("tests")
    if isinstance(tests, list):
        return [test.get("status") for test in tests if isinstance(test, dict)]
    return [result.get("status")] if "wall_s" in result else []


class Recorder:
    """The node's signal receivers; `connect` them in the main process before the pool forks."""

    def __init__(self, labels: Labels, process: WorkerProcess) -> None:
        self.labels = labels
        self.process = process
        self._started: float | None = None

    def connect(self) -> None:
        """Connect every receiver to Celery's signals (strongly: the receivers are bound methods)."""
        from celery import signals

        signals.worker_process_init.connect(self.process_started, weak=False)
        signals.task_prerun.connect(self.task_started, weak=False)
        signals.task_postrun.connect(self.task_finished, weak=False)
        signals.task_retry.connect(self.task_retried, weak=False)
        signals.task_failure.connect(self.task_failed, weak=False)

    def process_started(self, **_: Any) -> None:
        """A pool child starts: count it and show it idle."""
        m.PROCESS_STARTS.inc()
        self._set_busy(False)

    def task_started(self, task: Any = None, kwargs: Any = None, **_: Any) -> None:
        """A child starts a message: busy; observe how long the message waited."""
        self._started = time.monotonic()
        self._set_busy(True)
        sent_at = kwargs.get("sent_at") if isinstance(kwargs, dict) else None
        if isinstance(sent_at, int | float) and not isinstance(sent_at, bool):
            # Clocks of producer and worker hosts may disagree by a little: never a negative wait.
            m.QUEUE_WAIT.labels(self._queue_of(task)).observe(max(0.0, time.time() - sent_at))

    def task_finished(self, task: Any = None, args: Any = None, retval: Any = None, **_: Any) -> None:
        """A child finished a message: idle; count its results."""
        try:
            queue = self._queue_of(task)
            if self._started is not None:
                m.CHUNK_DURATION.labels(queue).observe(time.monotonic() - self._started)
            if isinstance(retval, list):
                record_chunk(self.labels, args[0] if args else None, retval)
            elif isinstance(retval, dict):  # a merge task's answer: the whole job of a split one
                record_result(self.labels, retval)
            record_sandbox_restarts(self.process.context().take_sandbox_restarts())
        except Exception:  # metrics must never cost a result
            log.exception("could not record a task's metrics")
        finally:
            self._started = None
            self._set_busy(False)

    def task_retried(self, sender: Any = None, request: Any = None, reason: Any = None, **_: Any) -> None:
        """A message is sent again (in the main process after a child died, or by the task)."""
        error = getattr(reason, "exc", reason)
        m.TASK_RETRIES.labels(self._queue_of(sender, request), reason_label(error)).inc()

    def task_failed(self, sender: Any = None, exception: Any = None, **_: Any) -> None:
        """A message failed for good: its jobs will come back to the producer as infra_error."""
        m.TASK_FAILURES.labels(self._queue_of(sender), reason_label(exception)).inc()

    def _queue_of(self, task: Any, request: Any = None) -> str:
        """The queue a message came from (its routing key), as a bounded label."""
        request = request if request is not None else getattr(task, "request", None)
        info = getattr(request, "delivery_info", None) or {}
        return self.labels.queue(info.get("routing_key") if isinstance(info, dict) else None)

    @staticmethod
    def _set_busy(busy: bool) -> None:
        m.WORKER_PROCESSES.labels("busy").set(1 if busy else 0)
        m.WORKER_PROCESSES.labels("idle").set(0 if busy else 1)
