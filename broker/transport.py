"""kombu's Redis transport (and its Sentinel variant), hardened against messages that are not
kombu envelopes at all, and recording which worker node holds each message it delivered.

Anyone who can write to Redis can push bytes onto a queue. kombu decodes what BRPOP returns without a
guard, so one such item raises out of the worker's event loop and Celery stops the whole node
("Unrecoverable error"). This transport logs and drops the item instead; a well-formed envelope with
a bad body still reaches Celery, which rejects it, or the task, which answers it.

A node's transport is given a holder id (`evalfarm_holder`, one per node incarnation). Every message
it delivers is added to `evalfarm:held:<holder>` before kombu records it as unacked, and leaves that
set when it is acked, rejected or restored. When a node dies, its set names exactly the messages it
had reserved or was running, and a live node puts them back (`workers.liveness`) within seconds,
instead of after the visibility timeout.

kombu's internals this rests on are overridden in `broker.celery_internals`, whose hooks this fills.
"""

from __future__ import annotations

import logging
from typing import Any

from evalfarm.broker import celery_internals
from evalfarm.broker.keys import held_key

log = logging.getLogger(__name__)

_TABLE_TTL_S = 10.0  # how long a channel trusts an exchange's bindings without reading them again


class QoS(celery_internals.RedisQoS):
    """kombu's ack emulation, also keeping the node's held set."""

    def record_delivered(self, pipe: Any, delivery_tag: str) -> None:
        """Held by this node, in the transaction that records the message as unacked: a delivered
        message is never unacked without its holder known."""
        holder = self.channel.evalfarm_holder
        if holder:
            pipe.sadd(held_key(holder), delivery_tag)

    def record_removed(self, pipe: Any, delivery_tag: str) -> None:
        """No longer held once acked, rejected or restored."""
        holder = self.channel.evalfarm_holder
        if holder:
            pipe.srem(held_key(holder), delivery_tag)

    def unacked_left(self, delivery_tags: list[str]) -> None:
        """A channel closed after its connection was lost cannot reach Redis anyway: its messages
        stay in the unacked hash and in the node's held set, and the node's liveness gives back the
        ones it no longer works on (`workers.liveness`)."""
        if delivery_tags:
            log.warning("%d unacked messages left for the node's liveness to give back: the channel's "
                        "connection is gone", len(delivery_tags))  # fmt: skip


class Channel(celery_internals.RedisChannel):
    """A Redis channel that drops malformed queue items and keeps its node's held set.

    kombu reads an exchange's bindings for every message it routes (a round trip each); the farm's
    bindings are fixed by its queues, declared once, so a channel trusts them for 10 s.
    """

    QoS = QoS
    bindings_ttl_s = _TABLE_TTL_S

    def malformed_item(self, queue: str | None, error: Exception) -> None:
        """Log and drop it: BRPOP (or RPOP) already removed the item and it was never delivered."""
        name = type(error).__name__
        log.error("dropped a malformed message from %s: %s: %s", queue or "the queue", name, error)


class Transport(celery_internals.RedisTransport):
    """The Redis transport with the hardened channel; selected by `broker_transport`."""

    Channel = Channel


class SentinelChannel(Channel, celery_internals.RedisSentinelChannel):
    """The hardened channel, finding the master through Redis Sentinel (`master_name`)."""


class SentinelTransport(celery_internals.RedisSentinelTransport):
    """The Sentinel transport with the hardened channel: for `sentinel://` broker URLs."""

    Channel = SentinelChannel
