"""The result backend of the farm: a task's outcome is pushed to its producer's reply list.

A producer names a reply list (`reply_to`, a key under `REPLY_PREFIX`) on every task it publishes
and blocks on that list, so it wakes the moment a chunk's results exist instead of polling for
them. This is Celery's Redis backend with one change: for such a task, the final state (SUCCESS, or
FAILURE: the chunk's process died past its retries, its time limit) is RPUSHed onto the list, which
expires `reply_ttl_s` after the last push, so a producer that died leaves nothing behind for
longer than that. Nothing is stored under the task's own key. Intermediate states (RETRY, STARTED)
and revocations are not pushed: the producer waits for the outcome, and a revoked task's producer
has stopped listening.

Tasks without a reply list (sent with plain `send_task`) are stored as Celery always stores them.
Where Celery hands a state to its backend is overridden in `broker.celery_internals`, whose
`take_over` hook this fills.
"""

from __future__ import annotations

from typing import Any

from celery import states

from evalfarm.broker import celery_internals
from evalfarm.broker.keys import REPLY_PREFIX

_PUSHED_STATES = frozenset({states.SUCCESS, states.FAILURE})


def reply_list_of(request: Any) -> str | None:
    """The reply list a task's producer named, if it is one of ours (nothing else is written to)."""
    reply_to = getattr(request, "reply_to", None)
    return reply_to if isinstance(reply_to, str) and reply_to.startswith(REPLY_PREFIX) else None


class ReplyBackend(celery_internals.RedisBackend):
    """Celery's Redis result backend, pushing outcomes to the producer's reply list when it has one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reply_ttl_s = int(self.app.conf.get("evalfarm_reply_ttl_s", 600))

    def take_over(self, task_id: str, result: Any, state: str, request: Any) -> bool:
        """Push the outcome of a task with a reply list (and nothing else of it); leave any other
        task to Celery."""
        reply_list = reply_list_of(request)
        if reply_list is None:
            return False
        if state in _PUSHED_STATES:
            # What the producer reads, no more: Celery's meta (children, dates, the traceback) is
            # for its own result objects, which our producers do not use.
            meta = {"task_id": task_id, "status": state, "result": result}
            self.ensure(self._push, (reply_list, self.encode(meta)))
        return True

    def _push(self, reply_list: str, payload: Any) -> None:
        with self.client.pipeline(transaction=False) as pipe:
            pipe.rpush(reply_list, payload)
            pipe.expire(reply_list, self.reply_ttl_s)
            pipe.execute()


class SentinelReplyBackend(ReplyBackend, celery_internals.RedisSentinelBackend):
    """The reply backend on a master found through Redis Sentinel (`sentinel://` URLs): each new
    connection goes to the current master, so pushes follow a failover."""
