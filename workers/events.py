"""Celery's worker consumer, publishing its buffered task events a few times a second.

Celery buffers a node's task events (`task-received`, `task-succeeded`, ...) and by default
publishes the buffer on the event loop's next turn. Messages arrive one at a time, so that is one
Redis PUBLISH per event, each encoded and sent by the node's main process: about 8% of the time of
a batch of trivial jobs on 2 cores. Here the buffer goes out EVENTS_FLUSH_S after its first event
(or at Celery's own limit of 24 events), one message for all of them: Flower sees a task that much
later, and the events cost what Flower needs, not one round trip each. The consumer's internals are
overridden in `broker.celery_internals`.
"""

from __future__ import annotations

from evalfarm.broker import celery_internals

EVENTS_FLUSH_S = 0.25


class Consumer(celery_internals.Consumer):
    """`celery.worker.consumer.Consumer`, its task events flushed on a short timer."""

    events_flush_s = EVENTS_FLUSH_S
