"""Every private part of Celery, kombu and billiard the farm relies on, behind one seam.

The farm's delivery guarantees (nothing lost, a dead node's messages back in seconds, a crashed
pool process's chunk retried, replies pushed to a list) need more than Celery's and kombu's public
settings: a few of their methods are overridden and a few of their internals read. Each is here,
and only here, with a comment saying what the farm relies on. The rest of the farm reaches them
through the hooks and functions below (`broker.transport`, `broker.backend`, `workers.pool`,
`workers.events`, `workers.node`, `workers.liveness`), and subclasses them only to fill those
hooks. `tests/test_celery_seam.py` proves each reliance against the installed releases, whose
range pyproject's pins name: a release that changes one fails the test named for it.

What kombu and Celery write to Redis is also read by modules that must stay cheap to import (the
client loads no Celery until it connects), so those name it where they read it, and the same
tests prove it: the queue lists of each priority and the unacked records (`broker.keys`; the farm
passes kombu those names as transport options), the task id inside an unacked record
(`broker.audit`), a failed task's exception as Celery serialises it (`broker.run`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from billiard.process import current_process
from celery.backends import redis as redis_backends
from celery.concurrency import asynpool, prefork
from celery.exceptions import SecurityWarning
from celery.worker import state as worker_state
from celery.worker.consumer import Consumer as CeleryConsumer
from kombu.transport import redis, virtual
from kombu.utils.json import dumps

# -- kombu's Redis transport ----------------------------------------------------------------------

# What kombu raises decoding or delivering a queue item that is not a kombu envelope: JSON errors
# are ValueErrors; a missing or mistyped field is a KeyError, TypeError, AttributeError or IndexError.
MALFORMED = (ValueError, KeyError, TypeError, AttributeError, IndexError)


class RedisQoS(redis.QoS):
    """kombu's ack emulation on Redis, with hooks where a delivered message is recorded as unacked,
    where it leaves those records, and where a channel closes with no connection behind it."""

    def record_delivered(self, pipe: Any, delivery_tag: str) -> None:
        """Add to the transaction that records `delivery_tag` as unacked (nothing by default)."""

    def record_removed(self, pipe: Any, delivery_tag: str) -> None:
        """Add to the commands that drop `delivery_tag` from the unacked records (nothing by default)."""

    def unacked_left(self, delivery_tags: list[str]) -> None:
        """This channel's unacked messages stay in Redis: its connection is gone (nothing by default)."""

    def append(self, message: Any, delivery_tag: str) -> None:
        # kombu's own append, repeated so that the farm's record joins its transaction. Relies on:
        # kombu calls it for each message it delivers unacked; the message is unacked while
        # `unacked_index` scores its tag with the delivery time (the visibility timeout's sweep
        # reads it) and `unacked` maps the tag to the JSON [envelope, exchange, routing key] that
        # restore_by_tag puts back; `message._raw` is that envelope; virtual.QoS.append keeps the
        # tag in the channel's `_delivered`, which ack, reject and restore_unacked act on.
        delivery = message.delivery_info
        with self.pipe_or_acquire() as pipe:
            self.record_delivered(pipe, delivery_tag)
            pipe.zadd(self.unacked_index_key, {delivery_tag: time.time()})
            pipe.hset(
                self.unacked_key,
                delivery_tag,
                dumps([message._raw, delivery["exchange"], delivery["routing_key"]]),
            )
            pipe.execute()
        virtual.QoS.append(self, message, delivery_tag)

    def ack(self, delivery_tag: str) -> None:
        # Relies on: kombu acks on the channel that delivered the message, removing its unacked
        # records through a Redis client built on the channel's connection. After a lost connection
        # the worker's consumer goes on with a new one, and a task that ends then is acked on its
        # old channel, whose `channel.connection.client` is gone: kombu's own body raises
        # AttributeError building a client, which Celery takes for an unrecoverable error (the node
        # stops). Such a message stays unacked in Redis instead, as a closing channel's do.
        if self._connection_gone():
            self._left_unacked(delivery_tag)
            return
        super().ack(delivery_tag)

    def reject(self, delivery_tag: str, requeue: bool = False) -> None:
        # Relies on: as `ack` (kombu's reject restores or removes the records on the same client).
        if self._connection_gone():
            self._left_unacked(delivery_tag)
            return
        super().reject(delivery_tag, requeue)

    def _connection_gone(self) -> bool:
        return getattr(self.channel.connection, "client", None) is None

    def _left_unacked(self, delivery_tag: str) -> None:
        """Forget the tag on this channel (kombu's virtual ack: no Redis) and say it stays unacked."""
        self.unacked_left([delivery_tag])
        virtual.QoS.ack(self, delivery_tag)

    def restore_unacked(self, client: Any = None) -> Any:
        # Relies on: kombu calls this as a channel closes; after a lost connection the worker's
        # consumer collects the connection and then closes it, and kombu closes the default channel
        # again with `channel.connection.client` gone, where its own body raises AttributeError
        # building a Redis client (Celery takes that for an unrecoverable error and stops the
        # node); `_delivered` holds the channel's unacked tags.
        if client is None and self._connection_gone():
            self.unacked_left(list(self._delivered))
            self._delivered.clear()
            return []
        return super().restore_unacked(client)

    def _remove_from_indices(self, delivery_tag: str, pipe: Any = None) -> Any:
        # Relies on: every way out of the unacked records (ack, reject, restore_by_tag, and so the
        # visibility timeout's sweep) calls this with the tag (and, inside restore_by_tag's
        # transaction, its pipeline) and executes the pipeline it returns.
        pipe = super()._remove_from_indices(delivery_tag, pipe)
        self.record_removed(pipe, delivery_tag)
        return pipe


class RedisChannel(redis.Channel):
    """kombu's Redis channel: one Redis client for its commands outside the event loop, exchanges'
    bindings read at most every `bindings_ttl_s`, a malformed queue item handed to
    `malformed_item`, and the farm's one transport option, `evalfarm_holder`."""

    QoS = RedisQoS
    bindings_ttl_s = 0.0  # as kombu: read at every lookup
    evalfarm_holder: str | None = None  # the node incarnation holding what this channel delivers
    # Relies on: kombu's Channel copies each name listed here from the connection's
    # transport_options onto the channel as it is made.
    from_transport_options = (*redis.Channel.from_transport_options, "evalfarm_holder")  # type: ignore[assignment]
    _evalfarm_client: Any = None

    def malformed_item(self, queue: str | None, error: Exception) -> None:
        """A queue item that is not a kombu envelope was taken off `queue` (None: from BRPOP's
        queues); raised again by default, as kombu does."""
        raise error

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        # Relies on: kombu takes the client of every command outside the event loop (publish,
        # basic_get, ack, restore) from here, as a context manager, and builds one per call with
        # `_create_client()` on the channel's `pool` (a fifth of a millisecond of CPU, several times
        # per message), which a reconnection replaces. One client per pool serves them all.
        if client:
            yield client
            return
        cached = self._evalfarm_client
        if cached is None or cached.connection_pool is not self.pool:
            cached = self._evalfarm_client = self._create_client()
        yield cached

    def get_table(self, exchange: str) -> Any:
        # Relies on: kombu reads an exchange's bindings only through get_table, a list of
        # (routing key, pattern, queue), empty while none is declared.
        if self.bindings_ttl_s <= 0:
            return super().get_table(exchange)
        tables = self.__dict__.setdefault("_evalfarm_tables", {})
        now = time.monotonic()
        cached = tables.get(exchange)
        if cached is not None and now - cached[0] < self.bindings_ttl_s:
            return cached[1]
        table = super().get_table(exchange)
        if table:  # none yet: the queue is about to be declared; read again next time
            tables[exchange] = (now, table)
        return table

    def _brpop_read(self, **options: Any) -> bool:
        # Relies on: kombu's poller calls this, with keyword options only, once BRPOP's reply is
        # due; it decodes the item BRPOP already took off its queue and delivers it, so what a
        # malformed item raises comes out here before any unacked record exists (nothing to ack
        # or restore); True means an item was handled, Empty that none came.
        try:
            return bool(super()._brpop_read(**options))
        except MALFORMED as error:
            self.malformed_item(None, error)
            return True

    def _get(self, queue: str, timeout: float | None = None) -> Any:
        # Relies on: basic_get calls this with a queue's name only; it RPOPs the queue's lists in
        # priority order and decodes the item (a JSON error comes out here, the item already
        # gone), or raises Empty.
        while True:
            try:
                return super()._get(queue)
            except MALFORMED as error:
                self.malformed_item(queue, error)


class RedisSentinelChannel(RedisChannel, redis.SentinelChannel):
    """The channel above, finding Redis's master through Sentinel (`master_name`)."""

    from_transport_options = tuple(  # type: ignore[assignment]
        dict.fromkeys((*RedisChannel.from_transport_options, *redis.SentinelChannel.from_transport_options))
    )


class RedisTransport(redis.Transport):
    """kombu's Redis transport on the channel `Channel` names (a transport is selected by name)."""

    Channel = RedisChannel


class RedisSentinelTransport(redis.SentinelTransport):
    """kombu's Sentinel transport on the channel `Channel` names."""

    Channel = RedisSentinelChannel


def redis_client(connection: Any) -> Any:
    """The Redis client of a kombu connection's default channel (on the farm's transport)."""
    # Relies on: a Redis channel's `client` is a redis-py client on the broker's database, made
    # once per channel.
    return connection.default_channel.client


def restore_delivered(connection: Any, delivery_tag: str, client: Any) -> None:
    """Put a delivered, unacked message back on its queue, as the visibility timeout's sweep does."""
    # Relies on: restore_by_tag reads the tag's unacked record and, in one transaction under WATCH
    # on the unacked hash, drops the tag from the unacked records (through _remove_from_indices, so
    # from the held set of the connection's holder too) and pushes the envelope back on its queue's
    # list for its priority, marked redelivered: two restorers of one tag put it back once, and a
    # tag with no record (acked meanwhile) is only dropped from the indices.
    connection.default_channel.qos.restore_by_tag(delivery_tag, client=client)


# -- Celery's Redis result backend -----------------------------------------------------------------


class RedisBackend(redis_backends.RedisBackend):
    """Celery's Redis result backend, where a subclass may take over storing a task's state."""

    def take_over(self, task_id: str, result: Any, state: str, request: Any) -> bool:
        """Store this state the subclass's way (True), or leave it to Celery (False, the default)."""
        return False

    def _store_result(
        self,
        task_id: str,
        result: Any,
        state: str,
        traceback: Any = None,
        request: Any = None,
        **kwargs: Any,
    ) -> Any:
        # Relies on: every state a task reaches (mark_as_done, mark_as_failure, mark_as_retry,
        # mark_as_revoked) goes through Celery's store_result, which encodes the result (an
        # exception as a dict of exc_type, exc_message, exc_module) and calls this inside its
        # retry loop (result_backend_always_retry) with task_id, result, state and traceback by
        # position and the task's request, carrying the reply_to its producer set, by keyword.
        if self.take_over(task_id, result, state, request):
            return result
        return super()._store_result(task_id, result, state, traceback, request, **kwargs)


class RedisSentinelBackend(RedisBackend, redis_backends.SentinelBackend):
    """The backend above, on a master found through Redis Sentinel."""


# -- Celery's worker: its prefork pool, its consumer, its state --------------------------------------


class AsynPool(asynpool.AsynPool):
    """Celery's event-loop prefork pool, its maintenance period and its start check set by subclasses."""

    maintain_every_s = 5.0  # Celery's

    @property
    def timers(self) -> dict[Any, float]:
        # Relies on: as the pool joins the worker's event loop, Celery calls each of `timers`'
        # handlers every so many seconds (hub.call_repeatedly); maintain_pool reaps dead children,
        # fails what they ran (WorkerLostError) and starts their replacements.
        return {self.maintain_pool: self.maintain_every_s}

    def did_start_ok(self) -> bool:
        # Relies on: Celery's event loop calls this once as it begins (through prefork's TaskPool)
        # and stops the node ("Could not start worker processes") when it is false; `_pool` holds
        # the pool's billiard processes, whose exitcode is None while they run, negative when a
        # signal killed them, zero or more when they exited.
        return self.children_started([child.exitcode for child in self._pool])

    @staticmethod
    def children_started(exit_codes: list[int | None]) -> bool:
        """Whether the pool started, from its children's exit codes: by default none has exited."""
        return all(code is None for code in exit_codes)


class TaskPool(prefork.TaskPool):
    """Celery's prefork task pool on the AsynPool class `Pool` names (this module's by default)."""

    # Relies on: prefork's TaskPool makes its pool from the class named `Pool`, with the worker's
    # settings (processes, initializer, proc_alive_timeout).
    Pool = AsynPool


class Consumer(CeleryConsumer):
    """Celery's worker consumer, publishing its buffered task events `events_flush_s` after the
    first of them (0: on the event loop's next turn, as Celery does)."""

    events_flush_s = 0.0
    _evalfarm_flush_pending = False

    def on_send_event_buffered(self) -> None:
        # Relies on: with an event loop, Celery's event dispatcher buffers task events and calls
        # this after each one it buffers (it flushes by itself at 24); `_flush_events` publishes
        # the buffer; `hub.call_later` runs a callback on the event loop after a delay.
        if self.events_flush_s <= 0:
            super().on_send_event_buffered()
        elif self.hub is not None and not self._evalfarm_flush_pending:
            self._evalfarm_flush_pending = True
            self.hub.call_later(self.events_flush_s, self._evalfarm_flush)

    def _evalfarm_flush(self) -> None:
        self._evalfarm_flush_pending = False
        self._flush_events()


def working_delivery_tags() -> set[str]:
    """Delivery tags of the messages this worker has reserved or is running."""
    # Relies on: celery.worker.state.requests maps each task the worker has reserved and not
    # finished to its Request (task_reserved adds it, task_ready removes it), whose `message` is
    # the kombu message, with the delivery tag the transport recorded.
    tags = set()
    for request in list(worker_state.requests.values()):
        tag = getattr(getattr(request, "message", None), "delivery_tag", None)
        if isinstance(tag, str):
            tags.add(tag)
    return tags


def exit_code(worker: Any) -> int:
    """The exit code a Celery worker (the sender of worker_init) stopped with; 0 if none was set."""
    # Relies on: WorkController.stop(exitcode=...) keeps it as `exitcode` (a worker that gave up
    # reaching the broker stops with 1), which Celery's own `celery worker` command exits with and
    # `app.worker_main` drops.
    return int(getattr(worker, "exitcode", 0) or 0)


def pool_child_index() -> int:
    """This pool process's index in its pool: a replacement of a dead or recycled child has its index."""
    # Relies on: billiard's Pool gives each child an `index` below its size, and a replacement the
    # lowest index no live child has.
    return int(getattr(current_process(), "index", 0) or 0)


def quiet_root_warning() -> None:
    """Silence Celery's warning against running a worker as root (a node says why it is root instead)."""
    # Relies on: Celery's worker warns of root, when it accepts no pickle, with a SecurityWarning
    # whose text says "superuser privileges".
    warnings.filterwarnings("ignore", ".*superuser privileges", SecurityWarning)
