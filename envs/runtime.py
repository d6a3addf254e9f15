"""What sandboxed programs find beyond the stdlib: modules of the foreign APIs they are written for.

Every slot's fork servers import these before walling themselves in (so runs find them loaded, and
need no view of the project's files): evalfarm's own implementations, under `envs/sandbox_lib/`,
of APIs that programs from other systems import (see its README).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalfarm.sandbox import SandboxConfig

SANDBOX_LIB = str(Path(__file__).resolve().parent / "sandbox_lib")
# OpenELM's Sodarace programs begin `from openelm.environments.sodaracer.walker import walker_creator`.
PROGRAM_MODULES = ("openelm.environments.sodaracer.walker",)


def sandbox_config(**values: Any) -> SandboxConfig:
    """The sandbox configuration every scoring process uses (`values` override fields)."""
    preload = (*SandboxConfig().preload, *PROGRAM_MODULES)
    return SandboxConfig(preload=preload, import_paths=(SANDBOX_LIB,), **values)
