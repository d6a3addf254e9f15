"""Scorers of untrusted code and weight-edit answers. Knows nothing of queues or metrics.

`envs.catalog` says what each env is (any layer reads it, for free); the scorers are imported on
first use, so reading the catalog never loads the sandbox, numpy or MinAtar.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalfarm.envs.base import Context, Env, EnvError, InvalidJob
    from evalfarm.envs.registry import env_ids, get_env, register
    from evalfarm.envs.scoring import score_job

_HOMES = {
    "Context": "base",
    "Env": "base",
    "EnvError": "base",
    "InvalidJob": "base",
    "env_ids": "registry",
    "get_env": "registry",
    "register": "registry",
    "score_job": "scoring",
}

__all__ = [
    "Context",
    "Env",
    "EnvError",
    "InvalidJob",
    "env_ids",
    "get_env",
    "register",
    "score_job",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'evalfarm.envs' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"evalfarm.envs.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
