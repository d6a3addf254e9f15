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
import socket
import time
from typing import Any

from evalfarm.sandbox import _protocol

_SPLICE_CHUNK = 1 << 20


@dataclasses.dataclass
class Capture:
    """A pipe drained into a memfd. Past `cap` bytes the run ends for `reason`; with `drop` the
    rest is discarded instead; with `roll` the memfd keeps the newest bytes (at least half the cap)
    and the run goes on: a judge's log, whose last line is its verdict, is never a limit of the run."""

    name: str
    read_fd: int
    memfd: int
    cap: int
    reason: str = "output"
    drop: bool = False
    roll: bool = False
    size: int = 0
    truncated: bool = False
    closed: bool = False

    def drain(self, sink: int) -> str | None:
        """Move what the pipe holds; the reason to end the run when the cap is passed, else None."""
        if self.roll:
            self._drain_rolling()
            return None
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

    def _drain_rolling(self) -> None:
        """Move what the pipe holds, making room first by dropping the memfd's older half."""
        if self.size >= self.cap:
            self._keep_newest_half()
        try:
            moved = os.splice(self.read_fd, self.memfd, min(self.cap - self.size, _SPLICE_CHUNK))
        except BlockingIOError:
            return None
        self.size += moved
        self.closed = moved == 0
        return None

    def _keep_newest_half(self) -> None:
        """Move the memfd's newest half to its start, in the kernel (no byte enters this process),
        and write on after it."""
        half = self.cap // 2
        source, copied = self.cap - half, 0
        while copied < half:  # the two ranges never overlap: source >= half
            moved = os.copy_file_range(self.memfd, self.memfd, half - copied, source + copied, copied)
            if moved == 0:
                break
            copied += moved
        os.ftruncate(self.memfd, copied)
        os.lseek(self.memfd, copied, os.SEEK_SET)
        self.size = copied
        self.truncated = True


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
        """What was observed, for the verdict (`sandbox.verdict.Observed`).

        Ended by the supervisor only if it died of the supervisor's SIGKILL: a process can be on its
        way out (its descriptors closed, not yet a zombie) when the kill is sent, and then its own
        exit status says it ended itself.
        """
        status = self.wait_status or 0
        rusage = self.rusage
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        return {
            "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "cpu_s": rusage.ru_utime + rusage.ru_stime if rusage else 0.0,
            "wall_s": self.wall_s,
            # A native run's max RSS is this server's: its launcher starts in a vfork of this process
            # (sandbox._server_run reads the slot's cgroup peak instead).
            "max_rss_mb": None if self.native or rusage is None else rusage.ru_maxrss / 1024,
            "ended_by": self.ended_by if killed else None,
            "native": self.native,
        }


@dataclasses.dataclass
class Host:
    """A long-lived process of the slot running one job of this run (the judge host, through a
    child it forks): the job's end is a message on its channel, or the host's death."""

    role: str
    pid: int
    pidfd: int
    channel: socket.socket
    started: float
    reply: dict[str, Any] | None = None  # its message, once it finished the job
    ended_by: str | None = None
    wait_status: int | None = None
    rusage: Any = None
    wall_s: float = 0.0

    @property
    def running(self) -> bool:
        return self.wait_status is None and self.reply is None

    def kill(self, reason: str) -> None:
        """SIGKILL the host if it is still at the job (a limit of the run was hit)."""
        if self.running and self.ended_by is None:
            self.ended_by = reason
            os.kill(self.pid, signal.SIGKILL)

    def finished(self) -> None:
        """Its channel is readable: the job's end message, or the channel closed as it died."""
        try:
            self.reply, _ = _protocol.recv(self.channel)
        except (_protocol.ProtocolError, OSError):
            self.reply = None
        self.wall_s = time.monotonic() - self.started

    def died(self) -> None:
        _, self.wait_status, self.rusage = os.wait4(self.pid, 0)
        self.wall_s = self.wall_s or time.monotonic() - self.started

    def facts(self) -> dict[str, Any]:
        """What was observed of the job: its judge's exit as the host waited for it, or the host's death."""
        status = self.wait_status
        if self.reply is not None:  # the job's judge ended: as the host's wait for it said
            cpu_s = float(self.reply.get("cpu_s") or 0.0)
            exit_code, signum = self.reply.get("exit_code"), self.reply.get("signal")
            return {
                "exit_code": exit_code,
                "signal": signum,
                "cpu_s": cpu_s,
                "wall_s": self.wall_s,
                "ended_by": None,
            }
        return {  # the host died (killed for the run's limit, or on its own) before the job ended
            "exit_code": os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None,
            "cpu_s": 0.0,
            "wall_s": self.wall_s,
            "ended_by": self.ended_by,
        }


def supervise(
    members: list[Member],
    captures: list[Capture],
    deadline: float,
    main: str | None,
    sink: int,
    host: Host | None = None,
) -> str | None:
    """Watch the run until every member is reaped and every capture closed; the limit of the run
    that stopped it (`wall`, or a capture's reason), if one did.

    A limit ends everyone; when the `main` member (or the `host`) ends, the others are ended
    (`done`): a judge's candidate serves until the judge is through with it. With no `main` (a
    program and its interactor) the run lasts until every member ended, or the deadline.
    """
    poller = select.poll()
    by_fd: dict[int, Capture | Member | Host] = {}
    for capture in captures:
        poller.register(capture.read_fd, select.POLLIN)
        by_fd[capture.read_fd] = capture
    pidfds = []
    for member in members:
        pidfd = os.pidfd_open(member.pid)
        pidfds.append(pidfd)
        poller.register(pidfd, select.POLLIN)
        by_fd[pidfd] = member
    if host is not None:
        for fd in (host.channel.fileno(), host.pidfd):
            poller.register(fd, select.POLLIN)
            by_fd[fd] = host
    loop = _Loop(poller, by_fd, members, deadline, main, sink, host)
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
        by_fd: dict[int, Capture | Member | Host],
        members: list[Member],
        deadline: float,
        main: str | None,
        sink: int,
        host: Host | None = None,
    ) -> None:
        self.poller = poller
        self.by_fd = by_fd
        self.open_fds = set(by_fd)
        self.members = members
        self.host = host
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
            watched = self.by_fd.get(fd)
            if isinstance(watched, Capture):
                self._drained(fd, watched)
            elif isinstance(watched, Host):
                self._host_event(fd, watched)
            elif watched is not None:
                _reap(watched)
                self._close(fd)
                if watched.role == self.main:
                    self._end_all("done")

    def _host_event(self, fd: int, host: Host) -> None:
        """The host finished the job (a message on its channel) or died (its pidfd): either way
        the job is over for this run, and the host is no longer watched by it."""
        if fd == host.pidfd:
            host.died()
        elif host.reply is None:
            host.finished()
        if host.reply is None and host.wait_status is None:  # its channel closed as it died
            self._close(fd)
            return
        for watched in (host.channel.fileno(), host.pidfd):
            if watched in self.open_fds:
                self._close(watched)
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
        if self.host is not None:
            self.host.kill(reason)


def _reap(member: Member) -> None:
    _, member.wait_status, member.rusage = os.wait4(member.pid, 0)
    member.wall_s = time.monotonic() - member.started
