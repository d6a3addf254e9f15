"""The farm's Celery app, its configuration and the producer's client.

Importing this package is cheap (no Celery, no envs): names are imported on first use, and `Farm`
imports Celery only when it is built.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "AsyncFarm": "broker.aio",
    "BatchStats": "broker.batch",
    "ConfigError": "broker.errors",
    "Farm": "broker.client",
    "FarmError": "broker.errors",
    "Result": "broker.result",
    "Settings": "broker.settings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'broker' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
