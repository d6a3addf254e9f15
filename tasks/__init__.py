"""Glue between envs and Celery: the farm's tasks and each worker process's scoring state.

Names are imported on first use, so code that only needs a worker's state (the inline pool) does
not import Celery.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "WorkerProcess": "evalfarm.tasks.process",
    "jobs_of": "evalfarm.tasks.chunk",
    "register": "evalfarm.tasks.chunk",
    "score_jobs": "evalfarm.tasks.chunk",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'evalfarm.tasks' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
