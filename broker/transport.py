"""kombu's Redis transport, hardened against messages that are not kombu envelopes at all.

Anyone who can write to Redis can push bytes onto a queue. kombu decodes what BRPOP returns without a
guard, so one such item raises out of the worker's event loop and Celery stops the whole node
("Unrecoverable error"). This transport logs and drops the item instead; a well-formed envelope with
a bad body still reaches Celery, which rejects it, or the task, which answers it.
"""

from __future__ import annotations

import logging
from typing import Any

from kombu.transport import redis

log = logging.getLogger(__name__)

# What decoding or delivering a malformed item raises (JSON errors are ValueErrors).
_MALFORMED = (ValueError, KeyError, TypeError, AttributeError, IndexError)


class Channel(redis.Channel):
    """A Redis channel that drops malformed queue items instead of dying on them."""

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
