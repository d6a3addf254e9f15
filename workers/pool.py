"""Celery's prefork pool, noticing dead children within a second.

The pool learns that a child died from the child's sentinel pipe, but children forked together at
start-up can hold each other's pipes open, and then only the pool's periodic maintenance (every 5 s)
finds the corpse. Each lost chunk would wait that long before its bounded retry; here it waits 1 s.
"""

from __future__ import annotations

from typing import Any

from celery.concurrency import asynpool, prefork

MAINTAIN_EVERY_S = 1.0


class AsynPool(asynpool.AsynPool):
    """The event-loop prefork pool with a shorter maintenance period."""

    @property
    def timers(self) -> dict[Any, float]:
        """Timers the event loop runs: pool maintenance (reaping and replacing children)."""
        return {self.maintain_pool: MAINTAIN_EVERY_S}


class TaskPool(prefork.TaskPool):
    """Celery's prefork task pool on `AsynPool`; selected by the worker_pool setting."""

    Pool = AsynPool
