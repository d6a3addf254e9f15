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
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kombu.transport import redis, virtual
from kombu.utils.json import dumps

from evalfarm.broker.keys import held_key

log = logging.getLogger(__name__)

# What decoding or delivering a malformed item raises (JSON errors are ValueErrors).
_MALFORMED = (ValueError, KeyError, TypeError, AttributeError, IndexError)

_TABLE_TTL_S = 10.0  # how long a channel trusts an exchange's bindings without reading them again


class QoS(redis.QoS):
    """kombu's ack emulation, also keeping the node's held set."""

    def append(self, message: Any, delivery_tag: str) -> None:
        """Record the message as unacked (kombu's index and hash) and held by this node, in one
        transaction: a delivered message is never unacked without its holder known."""
        delivery = message.delivery_info
        holder = self.channel.evalfarm_holder
        with self.pipe_or_acquire() as pipe:
            if holder:
                pipe.sadd(held_key(holder), delivery_tag)
            pipe.zadd(self.unacked_index_key, {delivery_tag: time.time()})
            pipe.hset(
                self.unacked_key,
                delivery_tag,
                dumps([message._raw, delivery["exchange"], delivery["routing_key"]]),
            )
            pipe.execute()
        virtual.QoS.append(self, message, delivery_tag)

    def restore_unacked(self, client: Any = None) -> Any:
        """Put this channel's unacked messages back on their queues (kombu does it as a channel
        closes), unless the channel's connection is already gone.

        After a lost connection, the worker's consumer collects the connection (closing its transport)
        and then closes it: kombu closes the default channel a second time, with no connection to
        build a Redis client from, and the AttributeError that follows is not a connection error,
        so Celery stopped the whole node ("Unrecoverable error"). Such a channel cannot reach Redis
        anyway; its messages stay in the unacked hash and in the node's held set, and the node's
        liveness gives back the ones it no longer works on (`workers.liveness`).
        """
        if client is None and getattr(self.channel.connection, "client", None) is None:
            if self._delivered:
                log.warning("%d unacked messages left for the node's liveness to give back: the channel's "
                            "connection is gone", len(self._delivered))  # fmt: skip
            self._delivered.clear()
            return []
        return super().restore_unacked(client)

    def _remove_from_indices(self, delivery_tag: str, pipe: Any = None) -> Any:
        pipe = super()._remove_from_indices(delivery_tag, pipe)
        holder = self.channel.evalfarm_holder
        return pipe.srem(held_key(holder), delivery_tag) if holder else pipe


class Channel(redis.Channel):
    """A Redis channel that drops malformed queue items and keeps its node's held set."""

    QoS = QoS
    evalfarm_holder: str | None = None  # set by worker nodes only, through the transport options
    _evalfarm_client: Any = None
    from_transport_options = (*redis.Channel.from_transport_options, "evalfarm_holder")  # type: ignore[assignment]

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        """A Redis client for one command outside the event loop.

        kombu builds a new client object for each (a fifth of a millisecond of CPU, several times
        per message); one per channel, on the channel's pool, serves them all.
        """
        if client:
            yield client
            return
        cached = self._evalfarm_client
        if cached is None or cached.connection_pool is not self.pool:
            cached = self._evalfarm_client = self._create_client()
        yield cached

    def get_table(self, exchange: str) -> Any:
        """An exchange's bindings, read at most every 10 s.

        kombu reads them for every message it publishes (a round trip each); the farm's bindings are
        fixed by its queues, declared once.
        """
        tables = self.__dict__.setdefault("_evalfarm_tables", {})
        now = time.monotonic()
        cached = tables.get(exchange)
        if cached is not None and now - cached[0] < _TABLE_TTL_S:
            return cached[1]
        table = super().get_table(exchange)
        if table:  # none yet: the queue is about to be declared; read again next time
            tables[exchange] = (now, table)
        return table

    def _brpop_read(self, **options: Any) -> bool:
        try:
            return bool(super()._brpop_read(**options))
        except _MALFORMED as error:
            # BRPOP already removed the item and it was never delivered: nothing to ack or restore.
            log.error("dropped a malformed message from the queue: %s: %s", type(error).__name__, error)
            return True

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        while True:
            try:
                return super()._get(queue)
            except _MALFORMED as error:
                log.error("dropped a malformed message from %s: %s: %s", queue, type(error).__name__, error)


class Transport(redis.Transport):
    """The Redis transport with the hardened channel; selected by `broker_transport`."""

    Channel = Channel


class SentinelChannel(Channel, redis.SentinelChannel):
    """The hardened channel, finding the master through Redis Sentinel (`master_name`)."""

    from_transport_options = tuple(  # type: ignore[assignment]
        dict.fromkeys((*Channel.from_transport_options, *redis.SentinelChannel.from_transport_options))
    )


class SentinelTransport(redis.SentinelTransport):
    """The Sentinel transport with the hardened channel: for `sentinel://` broker URLs."""

    Channel = SentinelChannel
