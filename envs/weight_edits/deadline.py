"""A cooperative deadline: grading checks it between steps, so a slow grade stops, never hangs."""

from __future__ import annotations

import time

from evalfarm.envs.base import EnvError


class GradeTimeout(EnvError):
    """The grade ran past its wall-clock or CPU limit."""


class Deadline:
    """Wall-clock and CPU-time budgets, started when the deadline is made."""

    def __init__(self, wall_s: float | None = None, cpu_s: float | None = None) -> None:
        self.wall_s = wall_s
        self.cpu_s = cpu_s
        self._wall_end = time.monotonic() + wall_s if wall_s is not None else None
        # The grade runs in one thread: count that thread's CPU, not the whole worker's.
        self._cpu_end = time.thread_time() + cpu_s if cpu_s is not None else None

    def check(self) -> None:
        """Raise GradeTimeout when either budget is spent."""
        if self._wall_end is not None and time.monotonic() > self._wall_end:
            raise GradeTimeout(f"wall-clock limit of {self.wall_s:g} s reached")
        if self._cpu_end is not None and time.thread_time() > self._cpu_end:
            raise GradeTimeout(f"CPU limit of {self.cpu_s:g} s reached")


NO_DEADLINE = Deadline()
