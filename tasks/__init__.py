"""Glue between envs and Celery: the farm's tasks and each worker process's scoring state.

Names are imported on first use, so code that only needs a worker's state (the inline pool) does
not import Celery.
"""

from __future__ import annotations

from evalfarm._exports import lazy

_EXPORTS = {
    "WorkerProcess": "evalfarm.tasks.process",
    "jobs_of": "evalfarm.tasks.chunk",
    "register": "evalfarm.tasks.chunk",
    "score_jobs": "evalfarm.tasks.chunk",
}

__all__, __getattr__ = lazy("evalfarm.tasks", _EXPORTS)
