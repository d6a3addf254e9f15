"""Celery's prefork pool, noticing dead children within a second, and not stopping for one killed.

The pool learns that a child died from the child's sentinel pipe, but children forked together at
start-up can hold each other's pipes open, and then only the pool's periodic maintenance (every 5 s)
finds the corpse. Each lost chunk would wait that long before its bounded retry; here it waits 1 s.

Celery also checks once, as its event loop begins, that no child has died, and stops the whole node
("Could not start worker processes") if one has. A child killed by a signal in those first
milliseconds (the OOM killer, an operator's kill) is a fault the maintenance mends like any later
one, so only a child that exited on its own (its start-up failed) stops the node here.

The pool's internals are overridden in `broker.celery_internals`, whose settings this fills.
"""

from __future__ import annotations

from evalfarm.broker import celery_internals

MAINTAIN_EVERY_S = 1.0


class AsynPool(celery_internals.AsynPool):
    """The event-loop prefork pool with a shorter maintenance period."""

    maintain_every_s = MAINTAIN_EVERY_S

    @staticmethod
    def children_started(exit_codes: list[int | None]) -> bool:
        """False only if a child exited on its own at start-up; one killed by a signal is replaced."""
        return not any(code is not None and code >= 0 for code in exit_codes)


class TaskPool(celery_internals.TaskPool):
    """Celery's prefork task pool on `AsynPool`; selected by the worker_pool setting."""

    Pool = AsynPool
