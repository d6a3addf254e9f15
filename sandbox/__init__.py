"""Run untrusted Python under hard limits: a fork server per slot, namespaces, seccomp, Landlock.

Knows only the operating system: nothing here imports the farm's queue or metrics code.
"""

from sandbox.client import CallSpec, Sandbox, SandboxConfig, SandboxError
from sandbox.limits import MAX_LIMITS, Limits
from sandbox.result import RunResult
from sandbox.status import PRECEDENCE, Status, worst

__all__ = [
    "MAX_LIMITS",
    "PRECEDENCE",
    "CallSpec",
    "Limits",
    "RunResult",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "Status",
    "worst",
]
