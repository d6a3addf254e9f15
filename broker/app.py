"""The Celery app of the farm, configured from `FarmSettings` alone."""

from __future__ import annotations

from typing import Any

from celery import Celery
from kombu import Exchange, Queue

from evalfarm.broker.connections import SOCKET_OPTIONS, is_sentinel, sentinel_kwargs, sentinel_tls
from evalfarm.broker.errors import ConfigError
from evalfarm.broker.keys import PRIORITY_STEPS, SEP, UNACKED_INDEX_KEY, UNACKED_KEY

# The farm's tasks (defined with the producer's run, which sends them by name and so never imports
# the tasks' modules, and with them the envs): score a chunk of jobs; merge a split job's parts.
from evalfarm.broker.run import MERGE_PARTS, SCORE_CHUNK
from evalfarm.broker.settings import FarmSettings

__all__ = ["MERGE_PARTS", "SCORE_CHUNK", "celery_config", "make_app", "transport_options"]


def celery_config(settings: FarmSettings) -> dict[str, Any]:
    """The Celery settings of the farm; each reliability choice is explained where it is made."""
    if not settings.broker_url:
        raise ConfigError("no broker URL: set EVALFARM_BROKER_URL or pass --broker")
    sentinel = is_sentinel(settings.broker_url)
    backend = "SentinelReplyBackend" if is_sentinel(settings.backend_url) else "ReplyBackend"
    backend_tls = sentinel_tls(settings.backend_url or "") if is_sentinel(settings.backend_url) else {}
    return {
        "broker_url": settings.broker_url,
        # kombu's Redis transport, but a queue item that is not an envelope is dropped, not fatal.
        "broker_transport": f"evalfarm.broker.transport:{'SentinelTransport' if sentinel else 'Transport'}",
        # Celery's Redis backend, pushing each task's outcome to its producer's reply list.
        "result_backend": f"evalfarm.broker.backend:{backend}+{settings.backend_url}",
        "evalfarm_reply_ttl_s": settings.reply_ttl_s,
        # JSON only: a message is data from a producer we do not control, never pickle.
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "result_accept_content": ["json"],
        # Ack after the chunk is scored, so a dead child's chunk goes back to the queue; reserve one
        # message per child so a slow chunk does not hold others hostage.
        "task_acks_late": True,
        "worker_prefetch_multiplier": 1,
        # A child killed mid-chunk: retry the chunk a bounded number of times (reject_on_worker_lost
        # alone loops forever on a job that always kills its child), then fail it as WorkerLostError,
        # which the producer turns into infra_error.
        "task_reject_on_worker_lost": True,
        "task_retry_on_worker_lost": True,
        "task_acks_on_failure_or_timeout": True,
        "task_soft_time_limit": settings.task_soft_time_limit_s,
        "task_time_limit": settings.task_hard_time_limit_s,
        "task_track_started": False,
        # One direct exchange per queue: a queue declared without one would share the default
        # queue's exchange and routing key, and its messages would land on the default queue.
        "task_queues": [
            Queue(name, Exchange(name, type="direct"), routing_key=name) for name in settings.queues
        ],
        "task_default_queue": settings.default_queue,
        "task_default_priority": settings.background_priority,
        "task_create_missing_queues": False,
        # Results outlive the longest batch; a producer deletes each as soon as it has read it.
        "result_expires": settings.result_expires_s,
        "result_extended": False,
        "result_backend_always_retry": True,
        "result_backend_max_retries": 50,
        "redis_backend_health_check_interval": settings.health_check_interval_s,
        **{f"redis_{name}": value for name, value in SOCKET_OPTIONS.items()},
        "redis_retry_on_timeout": True,
        "broker_transport_options": transport_options(settings),
        # Celery's Sentinel backend reads no TLS option from its URL: they come as a setting.
        **({"redis_backend_use_ssl": backend_tls} if backend_tls else {}),
        "result_backend_transport_options": {
            "retry_policy": {"max_retries": 50, "interval_max": 1.0},
            **(sentinel_options(settings, settings.backend_url) if is_sentinel(settings.backend_url) else {}),
        },
        # A producer publishing while Redis restarts waits for it instead of failing the batch.
        "task_publish_retry": True,
        "task_publish_retry_policy": {
            "max_retries": settings.publish_retries,
            "interval_start": 0,
            "interval_step": 0.2,
            "interval_max": 0.5,
        },
        "broker_connection_retry": True,
        "broker_connection_retry_on_startup": True,
        "broker_connection_max_retries": settings.broker_connect_retries,
        "broker_heartbeat": 0,
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        "worker_hijack_root_logger": False,
        # A child opens its sandbox slot before it reports ready; on a loaded machine that can take
        # longer than Celery's 4 s, and a child killed for it would be replaced in a loop.
        "worker_proc_alive_timeout": 60.0,
        "worker_enable_remote_control": True,
        "task_send_sent_event": False,
    }


def transport_options(settings: FarmSettings) -> dict[str, Any]:
    """kombu's Redis transport options: redelivery timing, priorities and health checks (and the
    master's name, for Sentinel)."""
    return {
        **(sentinel_options(settings, settings.broker_url) if is_sentinel(settings.broker_url) else {}),
        # A running task is redelivered once the visibility timeout passes: keep it above the hard
        # time limit (FarmSettings checks), and sweep for the messages of dead workers often.
        "visibility_timeout": settings.visibility_timeout_s,
        "unacked_restore_interval": settings.unacked_restore_interval_s,
        "unacked_restore_throttle": 1,
        # The keys the farm reads besides kombu (audits, metrics, liveness) are named, not
        # kombu's defaults copied (broker.keys).
        "priority_steps": PRIORITY_STEPS,
        "sep": SEP,
        "unacked_key": UNACKED_KEY,
        "unacked_index_key": UNACKED_INDEX_KEY,
        "queue_order_strategy": "priority",
        "health_check_interval": settings.health_check_interval_s,
        **SOCKET_OPTIONS,
        "retry_on_timeout": True,
    }


def sentinel_options(settings: FarmSettings, url: str | None) -> dict[str, Any]:
    """kombu's and Celery's Sentinel options: the master's name, and how to speak to the Sentinels
    of `url` (as the farm's own clients do)."""
    return {
        "master_name": settings.redis_master,
        "sentinel_kwargs": sentinel_kwargs(url or "", settings, SOCKET_OPTIONS),
    }


def make_app(settings: FarmSettings, name: str = "evalfarm") -> Celery:
    """A Celery app configured for the farm (no tasks registered: workers add them)."""
    app = Celery(name, set_as_current=False)
    app.conf.update(celery_config(settings))
    return app
