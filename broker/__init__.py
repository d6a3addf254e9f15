"""The farm's Celery app, its configuration and the producer's client.

Importing this package is cheap (no Celery, no envs): names are imported on first use, and `Farm`
imports Celery only when it is built.
"""

from __future__ import annotations

from evalfarm._exports import lazy

_EXPORTS = {
    "AsyncFarm": "evalfarm.broker.async_farm",
    "BatchStats": "evalfarm.broker.batch",
    "ConfigError": "evalfarm.broker.errors",
    "Farm": "evalfarm.broker.farm",
    "FarmError": "evalfarm.broker.errors",
    "Result": "evalfarm.result",
    "Settings": "evalfarm.broker.settings",
    "ClientSettings": "evalfarm.broker.settings",
    "WorkerSettings": "evalfarm.broker.settings",
    "GatewaySettings": "evalfarm.broker.settings",
}

__all__, __getattr__ = lazy("evalfarm.broker", _EXPORTS)
