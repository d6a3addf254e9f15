"""Every Redis key the farm uses beyond Celery's own, in one place (no Celery, no kombu imported)."""

from __future__ import annotations

from evalfarm.broker.settings import FarmSettings

# kombu's Redis transport, as the farm configures it (broker.app passes these as its transport
# options `sep`, `priority_steps`, `unacked_key` and `unacked_index_key`): priority p > 0 of queue q
# lives in the list "q<SEP>p", p = 0 in "q", and lower numbers are served first; a delivered,
# unacknowledged message is in the UNACKED hash (its tag -> the JSON [envelope, exchange, routing
# key]) and scored by its delivery time in UNACKED_INDEX. That is kombu's layout, not an interface
# it promises: broker.celery_internals lists the reliance, tests/test_celery_seam.py proves it.
SEP = ":"
PRIORITY_STEPS = list(range(10))
UNACKED_KEY = "unacked"
UNACKED_INDEX_KEY = "unacked_index"

NODE_KEY_PREFIX = "evalfarm:node:"  # + holder: a live node incarnation's pool size, with a short TTL
LANGUAGES_KEY_PREFIX = "evalfarm:languages:"  # + holder: the languages it runs, comma-separated, same TTL
METRICS_KEY_PREFIX = "evalfarm:metrics:"  # + holder: where that node serves /metrics, same TTL
HELD_PREFIX = "evalfarm:held:"  # + holder: delivery tags of the messages that node holds
HOLDERS_KEY = "evalfarm:holders"  # every holder that may still have a held set
REPLY_PREFIX = "evalfarm:reply:"  # + batch: the reply list a producer blocks on (workers push only here)

# Sessions (broker.session_client, workers.session_host): each node's session host advertises itself and
# consumes its own request list; a session's record names the host incarnation that holds it.
SESSION_HOSTS_KEY = "evalfarm:session-hosts"  # every host id that may be live
SESSION_HOST_PREFIX = "evalfarm:session-host:"  # + host id: its advertisement (JSON), with a short TTL
SESSION_QUEUE_PREFIX = "evalfarm:session-requests:"  # + host id: the requests that host serves, in order
SESSION_PREFIX = "evalfarm:session:"  # + session id: its host's id, or "ended:<why>" for a while
SESSION_REPLY_PREFIX = "evalfarm:session-reply:"  # + request: where the host answers one request


def held_key(holder: str) -> str:
    """The set of delivery tags `holder` has been delivered and not yet acked."""
    return HELD_PREFIX + holder


def queue_keys(settings: FarmSettings) -> dict[str, list[str]]:
    """The Redis lists of each of the farm's queues, every priority."""
    return {queue: [queue, *(f"{queue}{SEP}{p}" for p in PRIORITY_STEPS if p)] for queue in settings.queues}


WORKSPACE_PREFIX = "evalfarm:workspace:"  # + workspace id: an uploaded archive sessions start from


def workspace_key(workspace_id: str) -> str:
    """Where an uploaded workspace's archive is kept (`broker.session_client.upload_workspace`)."""
    return WORKSPACE_PREFIX + workspace_id


def session_key(session_id: str) -> str:
    """The record of session `session_id`: which host holds it (or why it ended)."""
    return SESSION_PREFIX + session_id
