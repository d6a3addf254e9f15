"""Reading a batch's reply list: block until results are pushed, then take everything there.

Workers push each finished task's outcome onto the reply list its producer named
(`broker.backend`); the producer blocks on that list with BLPOP, so it wakes when a result exists,
then takes whatever else has arrived with one LPOP. Redis trouble is not an answer: the read
returns None (not the empty list of a wait that timed out) and the caller waits again, until its
deadline, looking sooner for tasks a failover may have lost (`BatchRun.broker_trouble`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import Any

from evalfarm.broker.keys import REPLY_PREFIX

log = logging.getLogger(__name__)

_TAKE = 256  # replies taken per LPOP after a wake-up
_MIN_BLOCK_S = 0.001  # BLPOP with timeout 0 would block forever: shorter waits do not block
_BROKEN_PAUSE_S = 0.5  # after a failed read, so an unreachable Redis is not hammered


def new_reply_key() -> str:
    """A fresh reply list for one batch."""
    return f"{REPLY_PREFIX}{uuid.uuid4().hex}"


def decode(payloads: list[Any]) -> list[dict[str, Any]]:
    """The replies as dicts (an undecodable one is logged and skipped: its task times out)."""
    replies = []
    for payload in payloads:
        try:
            reply = json.loads(payload)
        except (TypeError, ValueError) as error:
            log.error("dropped an undecodable reply: %s", error)
            continue
        if isinstance(reply, dict):
            replies.append(reply)
    return replies


def receive(client: Any, key: str, timeout_s: float, expected: int = _TAKE) -> list[dict[str, Any]] | None:
    """Replies on `key`, waiting up to `timeout_s` for the first; [] on timeout, None on Redis trouble.

    `expected`: replies still awaited; once the first is in, the rest are taken only if there are
    more to come (a single job's round trip costs one command, not two).
    """
    try:
        if timeout_s < _MIN_BLOCK_S:
            return decode(client.lpop(key, _TAKE) or [])
        first = client.blpop([key], timeout=timeout_s)
        if first is None:
            return []
        rest = client.lpop(key, _TAKE) if expected > 1 else None
        return decode([first[1], *(rest or [])])
    except Exception as error:  # Redis restarting or paused: the caller waits again
        log.warning("reply list unreadable, retrying: %s", error)
        time.sleep(min(_BROKEN_PAUSE_S, timeout_s))
        return None


async def areceive(
    client: Any, key: str, timeout_s: float, expected: int = _TAKE
) -> list[dict[str, Any]] | None:
    """`receive` for an asyncio Redis client."""
    try:
        if timeout_s < _MIN_BLOCK_S:
            return decode(await client.lpop(key, _TAKE) or [])
        first = await client.blpop([key], timeout=timeout_s)
        if first is None:
            return []
        rest = await client.lpop(key, _TAKE) if expected > 1 else None
        return decode([first[1], *(rest or [])])
    except Exception as error:  # Redis restarting or paused: the caller waits again
        log.warning("reply list unreadable, retrying: %s", error)
        await asyncio.sleep(min(_BROKEN_PAUSE_S, timeout_s))
        return None
