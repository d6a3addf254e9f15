"""Scorers by env id: the catalog's envs, and those a worker node adds at run time."""

from __future__ import annotations

import importlib

from evalfarm.envs.base import Env, InvalidJob
from evalfarm.envs.catalog import ENVS

# id -> "module:Class". Modules are imported on first use so a worker that only grades weight edits
# never imports the code envs, and the reverse.
_ENTRY_POINTS: dict[str, str] = {env_id: entry.scorer for env_id, entry in ENVS.items()}
_INSTANCES: dict[str, Env] = {}


def register(env_id: str, target: str) -> None:
    """Register `target` ("module:Class") under `env_id` (a node's `extra_envs`)."""
    _ENTRY_POINTS[env_id] = target
    _INSTANCES.pop(env_id, None)


def env_ids() -> list[str]:
    """Every registered env id."""
    return sorted(_ENTRY_POINTS)


def get_env(env_id: object) -> Env:
    """The env registered under `env_id`; InvalidJob naming the field when there is none."""
    if not isinstance(env_id, str):
        raise InvalidJob("env: must be a string")
    if env_id not in _INSTANCES:
        if env_id not in _ENTRY_POINTS:
            raise InvalidJob(f"env: unknown env {env_id!r} (known: {', '.join(env_ids())})")
        module_name, class_name = _ENTRY_POINTS[env_id].split(":")
        _INSTANCES[env_id] = getattr(importlib.import_module(module_name), class_name)()
    return _INSTANCES[env_id]
