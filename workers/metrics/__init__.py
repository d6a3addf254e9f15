"""Prometheus metrics of a worker node: recorded in every pool process, served by the node.

`serve(process)` is the node's one entry point (`workers.node.run_node` calls it in the main
process, before the pool forks): it empties the multiprocess directory, points prometheus-client at it
(`PROMETHEUS_MULTIPROC_DIR`, which must be set before prometheus-client is first imported in the
process), connects the recorders to Celery's signals and starts the /metrics server. Nothing is
imported from prometheus-client until then, so importing this package is cheap and changes nothing.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from evalfarm.broker.settings import WorkerSettings
from evalfarm.tasks.process import WorkerProcess

__all__ = ["MULTIPROC_ENV", "serve"]

log = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
_served: dict[str, Any] = {}


def serve(process: WorkerProcess) -> str | None:
    """Start recording and serving this node's metrics; the /metrics URL, or None when not served.

    `metrics_port` 0 turns metrics off. A port already taken is logged, not fatal: a node that
    scores without metrics is better than no node.
    """
    settings = process.settings
    if settings.metrics_port == 0:
        log.info("metrics off (metrics_port 0)")
        return None
    if "url" in _served:
        return str(_served["url"])
    if not _use_multiprocess_dir(settings.metrics_dir):
        return None
    from evalfarm.workers.metrics import server
    from evalfarm.workers.metrics.hooks import Recorder

    Recorder(_labels(settings), process).connect()
    try:
        _served["server"], _served["url"] = server.start(settings, _served["dir"])
    except OSError as error:
        log.error("metrics not served: %s:%d: %s", settings.metrics_host, settings.metrics_port, error)
        return None
    log.info("metrics at %s (multiprocess files in %s)", _served["url"], _served["dir"])
    return str(_served["url"])


def _use_multiprocess_dir(configured: str | None) -> bool:
    """Make an empty multiprocess directory this process and its future children write to."""
    if "prometheus_client" in sys.modules and os.environ.get(MULTIPROC_ENV) is None:
        # Metrics made now would live in each process's memory, unseen by the server: serve none.
        log.error("metrics not served: prometheus_client was imported before the node set its directory")
        return False
    from evalfarm.workers.metrics.multiproc import prepare_dir

    _served["dir"] = prepare_dir(configured)
    os.environ[MULTIPROC_ENV] = str(_served["dir"])
    return True


def _labels(settings: WorkerSettings) -> Any:
    """The node's bounded label sets: registered envs (extras included) and its queues."""
    from evalfarm.envs import env_ids
    from evalfarm.workers.metrics.hooks import Labels

    return Labels(envs=frozenset(env_ids()), queues=frozenset(settings.queues))
