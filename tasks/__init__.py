"""Glue between envs and Celery: the chunk task and each worker child's scoring context.

Names are imported on first use, so code that only needs a worker's context (the inline pool)
does not import Celery.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "close_process": "tasks.process",
    "configure": "tasks.process",
    "open_process": "tasks.process",
    "process_context": "tasks.process",
    "jobs_of": "tasks.chunk",
    "register": "tasks.chunk",
    "score_jobs": "tasks.chunk",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'tasks' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
