"""A node's heartbeat, and its watch over the others: a dead node's messages go back in seconds.

Each node incarnation has a holder id. While it lives, its main process refreshes
`evalfarm:node:<holder>` (its pool size, which producers also read) every `heartbeat_interval_s`,
with a TTL of `node_dead_after_s`; its transport keeps the set of messages it holds (reserved or
running, `broker.transport`). Every live node looks over the holders it knows of: a holder whose
key has expired is dead, and the messages in its held set are put back on their queues with
kombu's own restore (the one its visibility timeout uses: atomic per message, under WATCH, so two
nodes restoring the same message put it back once). Live nodes then take them, so a lost node's
work runs again about `node_dead_after_s` + `heartbeat_interval_s` after its death, whatever the
visibility timeout, which stays the last resort it is in Celery.

A live node's messages are never restored by others: after any beat that failed or was slow
(Redis restarting, paused, unreachable: every node's beats stopped too), a node waits a full
`node_dead_after_s` of good beats before it judges anyone, which gives each live node time to beat
again first.

A node also gives back what it holds but no longer works on: when its connection to Redis drops,
Celery forgets the messages it had reserved but not started (their delivery tags die with the
channel), which kombu would otherwise leave unacked until the visibility timeout. A held message
that is neither reserved nor running in this node at two beats in a row is put back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from evalfarm.broker import celery_internals
from evalfarm.broker.connections import decoded
from evalfarm.broker.keys import (
    HOLDERS_KEY,
    LANGUAGES_KEY_PREFIX,
    METRICS_KEY_PREFIX,
    NODE_KEY_PREFIX,
    held_key,
)
from evalfarm.broker.settings import WorkerSettings

log = logging.getLogger(__name__)


class NodeLiveness:
    """Beats for one node and restores the messages of dead ones; a thread of the node's main process."""

    def __init__(
        self,
        app: Any,
        holder: str,
        concurrency: int,
        settings: WorkerSettings,
        on_restored: Callable[[int], None] | None = None,
        working: Callable[[], set[str]] | None = None,
        metrics_url: str | None = None,
        languages: tuple[str, ...] = (),
    ) -> None:
        """`working()`: the delivery tags of the messages the node has reserved or is running;
        `metrics_url`: where the node serves /metrics, and `languages`: the languages its sandboxes
        run, both advertised with its heartbeat."""
        self._app = app
        self.holder = holder
        self._value = str(concurrency)
        self._interval = settings.heartbeat_interval_s
        self._dead_after = settings.node_dead_after_s
        self._on_restored = on_restored
        self._working = working
        self._metrics_url = metrics_url
        self._languages = ",".join(languages)
        self._suspects: set[str] = set()  # held but not worked on at the last beat
        self._connection: Any = None
        self._trusted_since: float | None = None  # good beats without a break since then
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="evalfarm-liveness", daemon=True)

    def register(self) -> None:
        """Beat once now, before the node consumes, so that anything it holds is known to be its.

        The first beat advertises no processes: producers size batches by the pools of nodes that
        are ready, and tools wait for a non-zero pool to know a node is (`start` beats its size).
        """
        try:
            self._beat("0")
        except Exception as error:  # Redis not up yet: the node cannot consume either; the loop beats
            log.warning("node %s: first heartbeat failed: %s", self.holder, error)
            self._close()

    def start(self) -> None:
        """Start beating and watching, in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Stop, and withdraw this node's key (a node that crashed has its key expire instead)."""
        self._stopped.set()
        if self._thread.ident is not None:  # a node that never became ready never started it
            self._thread.join(timeout=self._interval + 5)
        try:
            client = self._client()
            client.delete(
                NODE_KEY_PREFIX + self.holder,
                METRICS_KEY_PREFIX + self.holder,
                LANGUAGES_KEY_PREFIX + self.holder,
            )
            if not client.exists(held_key(self.holder)):  # a warm shutdown gave everything back
                client.srem(HOLDERS_KEY, self.holder)
        except Exception as error:  # the key expires anyway, and a held set is restored by others
            log.debug("could not withdraw %s: %s", self.holder, error)
        self._close()

    def _loop(self) -> None:
        while not self._stopped.is_set():
            started = time.monotonic()
            try:
                self._beat()
                now = time.monotonic()
                if self._trusted_since is None or now - started > self._interval:
                    self._trusted_since = now  # slow or first: the others may not have beaten yet
                elif now - self._trusted_since >= self._dead_after:
                    self.restore_dead()
                self.give_back_dropped()
            except Exception as error:  # Redis restarting or unreachable: beat again next round
                log.warning("node %s: heartbeat failed: %s", self.holder, error)
                self._suspects.clear()
                self._trusted_since = None
                self._close()
            self._stopped.wait(max(0.0, self._interval - (time.monotonic() - started)))

    def _beat(self, value: str | None = None) -> None:
        client = self._client()
        with client.pipeline() as pipe:
            pipe.set(NODE_KEY_PREFIX + self.holder, value or self._value, px=int(self._dead_after * 1000))
            if self._metrics_url:
                pipe.set(METRICS_KEY_PREFIX + self.holder, self._metrics_url, px=int(self._dead_after * 1000))
            if self._languages:
                pipe.set(LANGUAGES_KEY_PREFIX + self.holder, self._languages, px=int(self._dead_after * 1000))
            pipe.sadd(HOLDERS_KEY, self.holder)
            pipe.execute()

    def restore_dead(self) -> int:
        """Put back the messages of every holder whose heartbeat expired; how many were restored."""
        holders = live_holders(self._client())
        restored = sum(
            self._restore(holder) for holder, live in holders.items() if not live and holder != self.holder
        )
        if restored and self._on_restored is not None:
            self._on_restored(restored)
        return restored

    def give_back_dropped(self) -> int:
        """Put back the messages this node holds but has not reserved or started for two beats."""
        if self._working is None:
            return 0
        client = self._client()
        held = {t.decode() if isinstance(t, bytes) else t for t in client.smembers(held_key(self.holder))}
        orphans = held - self._working()  # read after `held`: a message delivered meanwhile is working
        dropped, self._suspects = orphans & self._suspects, orphans
        for tag in dropped:
            celery_internals.restore_delivered(self._connection, tag, client)
        if dropped:
            log.warning("node %s: put back %d messages it had dropped (a lost connection)", self.holder,
                        len(dropped))  # fmt: skip
            self._suspects -= dropped
        return len(dropped)

    def _restore(self, holder: str) -> int:
        """Put a dead holder's messages back on their queues; forget the holder once it holds none."""
        client = self._client()
        tags = client.smembers(held_key(holder))
        for tag in tags:
            # kombu's restore: a no-op for a tag acked meanwhile
            celery_internals.restore_delivered(self._connection, tag, client)
            client.srem(held_key(holder), tag)
        client.srem(HOLDERS_KEY, holder)
        if tags:
            log.warning("node %s is dead: put back the %d messages it held", holder, len(tags))
        return len(tags)

    def _client(self) -> Any:
        """The Redis client of this thread's broker connection (made on first use)."""
        if self._connection is None:
            self._connection = self._app.connection_for_write()
            self._connection.ensure_connection(max_retries=1)
        return celery_internals.redis_client(self._connection)

    def _close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.release()
            except Exception as error:  # a broken connection may fail to close: it is dropped anyway
                log.debug("closing the liveness connection: %s", error)
            self._connection = None


def live_holders(client: Any) -> dict[str, bool]:
    """Every node incarnation the farm knows of -> whether its heartbeat is live (two round trips)."""
    holders = [decoded(holder) for holder in client.smembers(HOLDERS_KEY)]
    if not holders:
        return {}
    with client.pipeline(transaction=False) as pipe:
        for holder in holders:
            pipe.exists(NODE_KEY_PREFIX + holder)
        alive = pipe.execute()
    return {holder: bool(live) for holder, live in zip(holders, alive, strict=True)}
