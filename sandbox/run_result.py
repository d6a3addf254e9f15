"""What one sandboxed run produced."""

from __future__ import annotations

import dataclasses
from typing import Any

from evalfarm.status import Status


@dataclasses.dataclass(frozen=True)
class RunResult:
    """The outcome of one run: its status, its output and what it cost.

    The status is decided outside the program (`sandbox.verdict`). `reply` is what a `call` run's
    function gave back, still encoded (read it with `sandbox.bridge.parse_reply`: it is the
    program's data, not a verdict). `judge` is a judged run's verdict record. `infra_reason` says
    why an INFRA_ERROR run failed (`run_killed_outside`, `run_setup_failed`), when it is known.
    `exception` names the exception a failed Python program's traceback ends with (a hint).
    """

    status: Status
    stdout: bytes = b""
    stderr: bytes = b""
    exit_code: int | None = None
    signal: int | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    wall_s: float = 0.0
    cpu_s: float = 0.0
    max_rss_mb: float | None = 0.0  # None: not measured (a native run on a slot without cgroups)
    reply: bytes | None = None
    error: str | None = None
    infra_reason: str | None = None
    exception: str | None = None
    files: dict[str, str] | None = None  # fetched files: relative path -> base64 content
    # A compiled program's compile: {"status": the compile's own status ("ok" when it compiled),
    # "wall_s": float, "cached": bool (its binary was already this slot's)}.
    compile: dict[str, Any] | None = None
    judge: dict[str, Any] | None = None
    # When the slot traces its runs (`SandboxConfig.trace`): each step's CLOCK_MONOTONIC time.
    trace: dict[str, float] | None = None

    def to_fields(self) -> dict[str, Any]:
        """The result fields of the `program` env (output decoded as UTF-8 with replacement)."""
        return {
            "stdout": self.stdout.decode("utf-8", "replace"),
            "stderr": self.stderr.decode("utf-8", "replace"),
            "exit_code": self.exit_code,
            "signal": self.signal,
            "stdout_truncated": self.stdout_truncated,
            "stderr_truncated": self.stderr_truncated,
            "wall_s": round(self.wall_s, 6),
            "cpu_s": round(self.cpu_s, 6),
            "max_rss_mb": None if self.max_rss_mb is None else round(self.max_rss_mb, 3),
        }
