"""The one supervision loop: a run's processes watched from outside, their output drained, their end observed.

A run is a group of processes (a program; or a candidate and the judge that calls it), each the PID 1
of its own PID namespace. The loop drains each output pipe into a memfd with `splice` (the kernel
moves the pages: no byte of a run's output enters this process's memory), enforces each pipe's cap,
the run's wall clock, and ends the group when its main process ends. What it records per process
(wait status, resource use, whether and why the supervisor ended it) is all the verdict rests on.
"""

from __future__ import annotations

import dataclasses
import os
import select
import signal
import time
from typing import Any

_SPLICE_CHUNK = 1 << 20


@dataclasses.dataclass
class Capture:
    """A pipe drained into a memfd. Past `cap` bytes the run ends for `reason`, or with `drop` the
    rest is discarded."""

    name: str
    read_fd: int
    memfd: int
    cap: int
    reason: str = "output"
    drop: bool = False
    size: int = 0
    truncated: bool = False
    closed: bool = False

    def drain(self, sink: int) -> str | None:
        """Move what the pipe holds; the reason to end the run when the cap is passed, else None."""
        room = self.cap - self.size
        target = sink if room <= 0 else self.memfd
        try:
            moved = os.splice(
                self.read_fd, target, _SPLICE_CHUNK if room <= 0 else min(room + 1, _SPLICE_CHUNK)
            )
        except BlockingIOError:
            return None
        if moved == 0:
            self.closed = True
            return None
        if room <= 0:
            self.truncated = True
            return None if self.drop else self.reason
        self.size += moved
        if self.size > self.cap:
            os.ftruncate(self.memfd, self.cap)
            self.size = self.cap
            self.truncated = True
            return None if self.drop else self.reason
        return None


@dataclasses.dataclass
class Member:
    """One process of a run, as the supervisor sees it."""

    role: str
    pid: int
    started: float
    native: bool = False
    ended_by: str | None = None
    wait_status: int | None = None
    rusage: Any = None
    wall_s: float = 0.0

    @property
    def running(self) -> bool:
        return self.wait_status is None

    def kill(self, reason: str) -> None:
        """SIGKILL the process (PID 1 of its namespace: everything it started dies with it).

        Marked as ended by the supervisor only if it had not already ended on its own.
        """
        if not self.running or self.ended_by is not None:
            return
        if os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return  # already gone, by itself: not ours to claim
        self.ended_by = reason
        os.kill(self.pid, signal.SIGKILL)

    def facts(self) -> dict[str, Any]:
        """What was observed, for the verdict (`sandbox.verdict.Observed`)."""
        status = self.wait_status or 0
        rusage = self.rusage
        return {
            "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "cpu_s": rusage.ru_utime + rusage.ru_stime if rusage else 0.0,
            "wall_s": self.wall_s,
            # A native run's max RSS is this server's: its launcher starts in a vfork of this process.
            "max_rss_mb": None if self.native or rusage is None else rusage.ru_maxrss / 1024,
            "ended_by": self.ended_by,
            "native": self.native,
        }


def supervise(
    members: list[Member], captures: list[Capture], deadline: float, main: str, sink: int
) -> str | None:
    """Watch the run until every member is reaped and every capture closed; the limit of the run
    that stopped it (`wall`, or a capture's reason), if one did.

    A limit ends everyone; when the `main` member ends, the others are ended (`done`): a judge's
    candidate serves until the judge is through with it.
    """
    poller = select.poll()
    by_fd: dict[int, Capture | Member] = {}
    for capture in captures:
        poller.register(capture.read_fd, select.POLLIN)
        by_fd[capture.read_fd] = capture
    pidfds = []
    for member in members:
        pidfd = os.pidfd_open(member.pid)
        pidfds.append(pidfd)
        poller.register(pidfd, select.POLLIN)
        by_fd[pidfd] = member
    loop = _Loop(poller, by_fd, members, deadline, main, sink)
    try:
        while loop.open_fds:
            loop.step()
    finally:
        for pidfd in pidfds:
            os.close(pidfd)
    return loop.stopped_for


class _Loop:
    """The state of one supervision: what is still open, and the limit that stopped the run."""

    def __init__(
        self,
        poller: select.poll,
        by_fd: dict[int, Capture | Member],
        members: list[Member],
        deadline: float,
        main: str,
        sink: int,
    ) -> None:
        self.poller = poller
        self.by_fd = by_fd
        self.open_fds = set(by_fd)
        self.members = members
        self.deadline = deadline
        self.main = main
        self.sink = sink
        self.stopped_for: str | None = None
        self.ending = False

    def step(self) -> None:
        """Wait for the next events (at most until the deadline) and handle them."""
        timeout_ms = 1000 if self.ending else max(0, int((self.deadline - time.monotonic()) * 1000) + 1)
        events = self.poller.poll(timeout_ms)
        if not events and not self.ending and time.monotonic() >= self.deadline:
            self.stop("wall")
        for fd, _ in events:
            watched = self.by_fd[fd]
            if isinstance(watched, Capture):
                self._drained(fd, watched)
            else:
                _reap(watched)
                self._close(fd)
                if watched.role == self.main:
                    self._end_all("done")

    def stop(self, reason: str) -> None:
        """A limit of the run was hit: everyone ends, and the run's verdict is that limit."""
        if self.stopped_for is None:
            self.stopped_for = reason
        self._end_all(reason)

    def _drained(self, fd: int, capture: Capture) -> None:
        reason = capture.drain(self.sink)
        if reason:
            self.stop(reason)
        if capture.closed:
            self._close(fd)

    def _close(self, fd: int) -> None:
        self.poller.unregister(fd)
        self.open_fds.discard(fd)

    def _end_all(self, reason: str) -> None:
        self.ending = True
        for member in self.members:
            member.kill(reason)


def _reap(member: Member) -> None:
    _, member.wait_status, member.rusage = os.wait4(member.pid, 0)
    member.wall_s = time.monotonic() - member.started
