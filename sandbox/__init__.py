"""Run untrusted Python under hard limits: a fork server per slot, namespaces, seccomp, Landlock.

Knows only the operating system: nothing here imports the farm's queue or metrics code. Names are
imported from their modules on first use, so the fork server, which runs only its own modules,
never loads the client's.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalfarm.limits import MAX_LIMITS, Limits
    from evalfarm.sandbox._client_request import InteractorSpec, JudgeRun, attachment_path
    from evalfarm.sandbox.run_result import RunResult
    from evalfarm.sandbox.slot import CallSpec, JudgeSpec, Sandbox, SandboxConfig, SandboxError
    from evalfarm.status import PRECEDENCE, Status, worst

_HOMES = {
    "CallSpec": "slot",
    "JudgeSpec": "slot",
    "JudgeRun": "_client_request",
    "InteractorSpec": "_client_request",
    "attachment_path": "_client_request",
    "Sandbox": "slot",
    "SandboxConfig": "slot",
    "SandboxError": "slot",
    "MAX_LIMITS": "evalfarm.limits",
    "Limits": "evalfarm.limits",
    "RunResult": "run_result",
    "PRECEDENCE": "evalfarm.status",
    "Status": "evalfarm.status",
    "worst": "evalfarm.status",
}

__all__ = [
    "MAX_LIMITS",
    "PRECEDENCE",
    "CallSpec",
    "InteractorSpec",
    "JudgeRun",
    "JudgeSpec",
    "Limits",
    "RunResult",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "Status",
    "attachment_path",
    "worst",
]


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'evalfarm.sandbox' has no attribute {name!r}")
    home = _HOMES[name]
    value = getattr(importlib.import_module(home if "." in home else f"evalfarm.sandbox.{home}"), name)
    globals()[name] = value
    return value
