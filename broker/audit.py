"""Finding a task the farm lost, so a batch never waits for it until its deadline.

A task can vanish without any node dying in Redis's eyes: a node killed in the instant between
kombu's BRPOP and its recording of the message as unacked, or a Redis that crashed before writing
its last second to disk. A batch that has waited long for a task asks Redis where it is. When every
queue is empty, a task still in flight must be in kombu's unacked hash (reserved or running on some
node); one found in neither place at two audits in a row is lost, and the batch publishes it again
(`BatchRun.audited`). While queues hold messages the audit cannot tell, and waits: the task may be
queued, and the farm is busy anyway.

The search runs in Redis (one Lua script), over the unacked hash only: a few entries per pool
process of the farm, whatever the backlog. It relies on kombu's record of an unacked message, the
JSON of its whole envelope, holding the task id as written (`evalfarm-<hex>`, in Celery's headers):
a reliance `broker.celery_internals` lists and `tests/test_celery_seam.py` proves.
"""

from __future__ import annotations

import logging
from typing import Any

from evalfarm.broker.keys import UNACKED_KEY, queue_keys
from evalfarm.broker.settings import FarmSettings

log = logging.getLogger(__name__)

LOCATE = """
for i = 2, #KEYS do
  if redis.call('LLEN', KEYS[i]) > 0 then return false end
end
local wanted = {}
for _, id in ipairs(ARGV) do wanted[id] = true end
local found = {}
for _, value in ipairs(redis.call('HVALS', KEYS[1])) do
  for id in string.gmatch(value, 'evalfarm%-%x+') do
    if wanted[id] then
      table.insert(found, id)
      wanted[id] = nil
    end
  end
end
return found
"""


def audit_keys(settings: FarmSettings) -> list[str]:
    """The script's keys: kombu's unacked hash, then every queue list."""
    return [UNACKED_KEY, *(key for keys in queue_keys(settings).values() for key in keys)]


def _found(reply: Any) -> set[str] | None:
    if reply is None:
        return None
    return {item.decode() if isinstance(item, bytes) else str(item) for item in reply}


def locate(client: Any, keys: list[str], task_ids: list[str]) -> set[str] | None:
    """Those of `task_ids` the farm holds; None when it cannot tell (queues busy, Redis trouble)."""
    try:
        return _found(client.eval(LOCATE, len(keys), *keys, *task_ids))
    except Exception as error:  # an audit is a safety net: missing one changes nothing
        log.warning("could not audit %d tasks: %s", len(task_ids), error)
        return None


async def alocate(client: Any, keys: list[str], task_ids: list[str]) -> set[str] | None:
    """`locate` for an asyncio Redis client."""
    try:
        return _found(await client.eval(LOCATE, len(keys), *keys, *task_ids))
    except Exception as error:
        log.warning("could not audit %d tasks: %s", len(task_ids), error)
        return None
