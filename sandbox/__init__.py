"""Run untrusted Python under hard limits: a fork server per slot, namespaces, seccomp, Landlock.

Knows only the operating system: nothing here imports the farm's queue or metrics code. Names are
imported from their modules on first use, so the fork server, which runs only its own modules,
never loads the client's.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalfarm.sandbox._client_request import InteractorSpec, JudgeRun, attachment_path
    from evalfarm.sandbox.limits import MAX_LIMITS, Limits
    from evalfarm.sandbox.run_result import RunResult
    from evalfarm.sandbox.slot import CallSpec, JudgeSpec, Sandbox, SandboxConfig, SandboxError
    from evalfarm.sandbox.status import PRECEDENCE, Status, worst

_HOMES = {
    "CallSpec": "slot",
    "JudgeSpec": "slot",
    "JudgeRun": "_client_request",
    "InteractorSpec": "_client_request",
    "attachment_path": "_client_request",
    "Sandbox": "slot",
    "SandboxConfig": "slot",
    "SandboxError": "slot",
    "MAX_LIMITS": "limits",
    "Limits": "limits",
    "RunResult": "run_result",
    "PRECEDENCE": "status",
    "Status": "status",
    "worst": "status",
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
    value = getattr(importlib.import_module(f"evalfarm.sandbox.{_HOMES[name]}"), name)
    globals()[name] = value
    return value
