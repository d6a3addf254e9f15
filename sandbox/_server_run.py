"""One run of a sandbox slot: its descriptors, its processes and their supervision, and the
slot's judge host.

The fork server (`sandbox._server`) sets the slot up once and hands each request to a `Run`, which
opens the run's descriptors (the job's memfds in, captured output out), starts its processes through
the server (`Server.fork`, `Server.spawn_native`: one start path, a new PID namespace each), has
`sandbox._server_supervise` watch them to their end, and answers with what was observed. Nothing here
judges: the verdict is the client's (`sandbox.verdict`).
"""

from __future__ import annotations

import os
import select
import signal
import socket
import time
from typing import TYPE_CHECKING, Any

from evalfarm.limits import Limits
from evalfarm.sandbox import _binaries, _child, _payload, _protocol
from evalfarm.sandbox._protocol import RequestHeader
from evalfarm.sandbox._server_supervise import Capture, Host, Member, supervise

if TYPE_CHECKING:
    from evalfarm.sandbox._server import Server

MAX_BINARY_BYTES = 64 << 20  # a compiled program larger than this is not kept
MAX_ATTACHMENTS = 8  # a judge program's files
JUDGE_OUTPUT_BYTES = 64 << 10  # what a judge prints is kept up to this (its first, or newest, bytes)


class JudgeHost:
    """The slot's judge host (`sandbox._judge_host`): started for the first judged run, and again
    whenever it died or was killed for a run's limit."""

    # Its own walls, as any run's; no CPU rlimit (it lives for many jobs: each job's CPU time is
    # reported and judged against that job's limit) and an address space it sets per job below.
    LIMITS = Limits(memory_mb=8192, workdir_mb=8, file_size_mb=8, open_files=256, processes=8).to_dict()

    def __init__(self, server: Server) -> None:
        self.server = server
        self.pid: int | None = None
        self.pidfd = -1
        self.channel: socket.socket | None = None

    def ready(self) -> None:
        """Make sure a host is running and waiting for a job; start one if not."""
        if self.pid is not None and not self._gone():
            return
        self._forget()
        ours, theirs = _protocol.channel_pair()
        quiet = _payload.memfd(b"", "evalfarm-quiet")  # its own output outside a job: nowhere
        plan = self.server.plan(dict(self.LIMITS, cpu_s=None), "judge_host", cgroup=False)
        try:
            member = self.server.fork("judge", plan, {0: quiet, 1: quiet, 2: quiet, 3: theirs.fileno()})
        finally:
            theirs.close()
            os.close(quiet)
        self.pid, self.channel = member.pid, ours
        self.pidfd = os.pidfd_open(member.pid)
        ours.settimeout(30)
        hello, _ = _protocol.recv(ours)  # walls up, or why not
        ours.settimeout(None)
        if not hello.get("ready"):
            self._forget()
            raise RuntimeError(f"the judge host did not start: {hello.get('setup_error', hello)}")

    def submit(self, job: dict[str, int], memory_mb: int, key: str) -> Host:
        """Hand the host one job's descriptors (`key`: its problem's, which picks its judge); the Host
        the run's supervision watches."""
        assert self.channel is not None and self.pid is not None
        names = list(job)
        request = {
            "fds": names,
            "memory_mb": memory_mb,
            "key": key,
            "trace": bool(self.server.config.get("trace")),
        }
        _protocol.send(self.channel, request, [job[n] for n in names])
        return Host("judge", self.pid, self.pidfd, self.channel, time.monotonic())

    def after(self, host: Host) -> None:
        """Once a job is over: let the host go when it died or was killed for the run's limits."""
        if host.wait_status is not None:
            self.pid = None  # reaped by the supervision
        if host.reply is None:
            self._forget()

    def _gone(self) -> bool:
        assert self.pid is not None
        readable, _, _ = select.select([self.pidfd], [], [], 0)
        return bool(readable)

    def _forget(self) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            self.pid = None
        if self.pidfd >= 0:
            os.close(self.pidfd)
            self.pidfd = -1
        if self.channel is not None:
            self.channel.close()
            self.channel = None


class Run:
    """One run's descriptors, processes and supervision; what it observed, as a reply."""

    def __init__(self, server: Server, limits: dict[str, Any]) -> None:
        self.server = server
        self.limits = limits
        self.owned: list[int] = []  # descriptors to close once the run is over
        self.captures: list[Capture] = []
        self.outputs: dict[str, int] = {}  # name -> memfd handed to the client

    # -- kinds of run -----------------------------------------------------------------------

    def program(
        self, mode: str, fds: dict[str, int], reply_bytes: int, fetch: bool
    ) -> tuple[dict[str, Any], list[int]]:
        """A Python program (`mode`: program, or call with its value on REPLIES_FD)."""
        child = self._standard_fds(fds)
        if mode == "call":
            child[_child.REPLIES_FD] = self._capture("reply", reply_bytes, reason="reply")
        if fetch:
            child[_child.FILES_FD] = self._output_memfd("files")
        member = self._start(
            lambda: self.server.fork("candidate", self.server.plan(self.limits, mode), child)
        )
        return self._finish([member], "candidate")

    def native(
        self,
        executable: int,
        argv: list[str],
        fds: dict[str, int],
        language: dict[str, Any] | None = None,
        build_fd: int | None = None,
        files: list[dict[str, Any]] | None = None,
    ) -> tuple[dict[str, Any], list[int]]:
        """A compiled program's binary (or a runtime running its build, staged in /tmp), on the
        job's stdin; with `files`, its files in its /tmp (`_files`)."""
        child = self._standard_fds(fds)
        links = self._files(files or [], fds, child)
        order = (child[0], child[1], child[2], child[_child.RESULT_FD])
        attached = tuple(fd for target, fd in sorted(child.items()) if target >= _child.ATTACHED_FD)
        stage_fd = build_fd if language and language.get("stage") else None
        member = self._start(
            lambda: self.server.spawn_native(
                self.limits, executable, argv, order, attached, language=language, stage_fd=stage_fd,
                links=links,
            ),
            native=True,
        )  # fmt: skip
        return _within_fetch_cap(*self._finish([member], "candidate"))

    def _files(
        self, files: list[dict[str, Any]], fds: dict[str, int], child: dict[int, int]
    ) -> tuple[str, ...]:
        """A native program's files (`files`: each a `name` in its /tmp, the `blob` of its content
        if it has one, whether it comes back, `fetch`), as a Python run's `files` and `fetch`: each
        a writable memfd at the attachments' descriptors, which the launcher names in the run's
        /tmp, its content copied in the kernel from the job's sealed memfd; the ones to fetch are
        outputs (`file:<name>`), read by the client after the run, when no process of it is left."""
        for index, spec in enumerate(files):
            fd = _payload.empty_memfd("evalfarm-file")
            if spec.get("blob"):
                _copy_fd(fds[spec["blob"]], fd)
            if spec.get("fetch"):
                self.outputs[f"file:{spec['name']}"] = fd
            else:
                self.owned.append(fd)
            child[_child.ATTACHED_FD + index] = fd
        return tuple(spec["name"] for spec in files)

    def compile(
        self, fds: dict[str, int], memory: str | None = None
    ) -> tuple[tuple[dict[str, Any], list[int]] | None, int, dict[str, Any]]:
        """The compiler on the payload's source: (the failure's reply, or None), the binary's sealed
        memfd and the compile's facts."""
        child = self._standard_fds(fds)
        binary = _binaries.new_memfd()
        child[_child.FILES_FD] = binary
        plan = self.server.plan(self.limits, "compile", memory=memory)
        member = self._start(lambda: self.server.fork("compile", plan, child))
        header, outputs = self._finish([member], "compile")
        facts = header["members"]["compile"]
        size = os.fstat(binary).st_size
        facts["binary_bytes"] = size
        if facts["exit_code"] == 0 and facts["ended_by"] is None and 0 < size <= MAX_BINARY_BYTES:
            for fd in outputs:
                os.close(fd)
            try:
                return None, _binaries.keep(binary, size), facts
            finally:
                os.close(binary)
        os.close(binary)
        header["compile_failed"] = True
        return (header, outputs), -1, facts

    def judged(self, fds: dict[str, int], judge: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
        """A candidate serving calls, and the slot's judge host calling it over two pipes for this
        job; the judge's end of the job is the run's."""
        requests_r, requests_w = self._pipe()
        replies_r, replies_w = self._pipe()
        candidate_fds = self._standard_fds(fds)
        candidate_fds.update({_child.REQUESTS_FD: requests_r, _child.REPLIES_FD: replies_w})
        job = {
            "payload": fds["judge_payload"],
            "requests": requests_w,
            "replies": replies_r,
            "report": self._output_memfd("judge_report"),
            "output": self._capture("judge_output", JUDGE_OUTPUT_BYTES, drop=True),
        }
        hosts = self.server.judge_host
        hosts.ready()
        plan = self.server.plan(self.limits, "serve")
        candidate = self._start(lambda: self.server.fork("candidate", plan, candidate_fds), keep_open=True)
        try:
            host = hosts.submit(job, self.limits["memory_mb"], str(judge["key"]))
        finally:
            self._close_owned()
        try:
            return self._finish([candidate], "judge", host)
        finally:
            hosts.after(host)

    def interactive(
        self, fds: dict[str, int], request: RequestHeader, binaries: dict[str, int]
    ) -> tuple[dict[str, Any], list[int]]:
        """A program and its interactor, each the other's stdin and stdout: the program's output is
        the interactor's input and the reverse. Only the interactor has the test (its attachments);
        only the program is in the slot's cgroups (its memory is the program's); one wall clock
        bounds both, so a mutual wait ends as the program's timeout. The run lasts until both end."""
        to_interactor_r, to_interactor_w = self._pipe()
        to_program_r, to_program_w = self._pipe()
        program = {
            0: to_program_r,
            1: to_interactor_w,
            2: self._capture("stderr", self.limits["output_bytes"]),
            _child.RESULT_FD: self._output_memfd("report"),
        }
        interactor = {
            0: to_interactor_r,
            1: to_program_w,
            # The interactor's log is the judge's, not the program's output: it never ends the run,
            # and its newest bytes (testlib's verdict is its last line) are kept.
            2: self._capture("interactor_stderr", JUDGE_OUTPUT_BYTES, roll=True),
            _child.RESULT_FD: self._output_memfd("interactor_report"),
        }
        interactor.update({target: fd for target, fd in self._attachments(fds).items()})
        members = [
            self._member("candidate", request["candidate"], request["limits"], program, fds["payload"],
                         binaries.get("candidate"), cgroup=True),
            self._member("interactor", request["interactor"], request["interactor"]["limits"], interactor,
                         fds["interactor_payload"], binaries.get("interactor"), cgroup=False),
        ]  # fmt: skip
        self._close_owned()
        header, outputs = self._finish(members, None)
        header["first_to_end"] = min(members, key=lambda m: m.started + m.wall_s).role
        return header, outputs

    def _member(
        self,
        role: str,
        spec: dict[str, Any],
        limits: dict[str, Any],
        child: dict[int, int],
        payload: int,
        binary_fd: int | None,
        cgroup: bool,
    ) -> Member:
        """Start one process of an interactive run: a Python program forked, or a binary spawned."""
        if binary_fd is None:
            child[_child.PAYLOAD_FD] = payload
            plan = self.server.plan(limits, "program", cgroup=cgroup)
            return self._start(lambda: self.server.fork(role, plan, child), keep_open=True, in_cgroup=cgroup)
        order = (child[0], child[1], child[2], child[_child.RESULT_FD])
        attached = tuple(fd for target, fd in sorted(child.items()) if target >= _child.ATTACHED_FD)
        native = spec["native"]
        # A runtime's build (a Java archive, a script) is staged for the runtime, which is what runs.
        executable = self.server.runtime(native["runtime"]) if native.get("runtime") else binary_fd
        stage_fd = binary_fd if native.get("stage") else None
        return self._start(
            lambda: self.server.spawn_native(
                limits,
                executable,
                native["argv"],
                order,
                attached,
                role=role,
                cgroup=cgroup,
                language=native,
                stage_fd=stage_fd,
            ),
            keep_open=True,
            in_cgroup=cgroup,
            native=True,
        )

    # -- descriptors ------------------------------------------------------------------------

    def _standard_fds(self, fds: dict[str, int]) -> dict[int, int]:
        """stdin (the job's memfd, or an empty one), stdout and stderr captured, the report and
        the payload."""
        child = {
            0: fds["stdin"] if "stdin" in fds else self._empty_stdin(),
            1: self._capture("stdout", self.limits["output_bytes"]),
            2: self._capture("stderr", self.limits["output_bytes"]),
            _child.RESULT_FD: self._output_memfd("report"),
        }
        if "payload" in fds:
            child[_child.PAYLOAD_FD] = fds["payload"]
        child.update(self._attachments(fds))
        return child

    @staticmethod
    def _attachments(fds: dict[str, int]) -> dict[int, int]:
        """A judge program's files, at descriptors 10, 11, ..."""
        found = {}
        for index in range(MAX_ATTACHMENTS):
            if f"attach{index}" not in fds:
                break
            found[_child.ATTACHED_FD + index] = fds[f"attach{index}"]
        return found

    def _empty_stdin(self) -> int:
        fd = _payload.empty_memfd("evalfarm-stdin")
        self.owned.append(fd)
        return fd

    def _pipe(self) -> tuple[int, int]:
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        self.owned += [read_end, write_end]
        return read_end, write_end

    def _output_memfd(self, name: str) -> int:
        fd = _payload.empty_memfd(f"evalfarm-{name}")
        self.outputs[name] = fd
        return fd

    def _capture(
        self, name: str, cap: int, reason: str = "output", drop: bool = False, roll: bool = False
    ) -> int:
        """A pipe whose read end this server drains into a memfd; the write end, for the child."""
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        self.owned.append(write_end)
        memfd = self._output_memfd(name) if not drop else _payload.empty_memfd(f"evalfarm-{name}")
        self.captures.append(Capture(name, read_end, memfd, cap, reason=reason, drop=drop, roll=roll))
        return write_end

    # -- processes --------------------------------------------------------------------------

    def _start(
        self, start: Any, keep_open: bool = False, in_cgroup: bool = True, native: bool = False
    ) -> Member:
        """Start the run's member, then close this server's copies of the ends that are its (so a
        capture sees end-of-file when it is gone), unless others still need them. The slot's
        cgroups are set for the member that goes in them (and measure a native member's peak)."""
        cgroups = self.server.cgroups
        if cgroups and in_cgroup:
            limits = self.limits
            cgroups.prepare(limits["memory_mb"], limits["workdir_mb"], limits["processes"], peak=native)
        try:
            return start()
        finally:
            if not keep_open:
                self._close_owned()

    def _close_owned(self) -> None:
        for fd in self.owned:
            os.close(fd)
        self.owned = []

    def _finish(
        self, members: list[Member], main: str | None, host: Host | None = None
    ) -> tuple[dict[str, Any], list[int]]:
        """Supervise the members to their end; the reply's header and the output memfds."""
        started = min(member.started for member in members)
        deadline = started + self.limits["wall_s"]
        try:
            stopped_for = supervise(members, self.captures, deadline, main, self.server.sink, host)
        finally:
            for capture in self.captures:
                os.close(capture.read_fd)
                if capture.drop:
                    os.close(capture.memfd)
        cgroups = self.server.cgroups
        oom_killed = bool(cgroups and cgroups.oom_killed())
        cgroup_cpu_s = cgroups.cpu_s() if cgroups else None
        facts = {}
        for member in members:
            observed = member.facts()
            facts[member.role] = dict(observed, ended_by=stopped_for or observed["ended_by"])
            if member.role in ("candidate", "compile"):  # the one process of the run in the slot's cgroups
                facts[member.role]["oom_killed"] = oom_killed
                if cgroup_cpu_s is not None:  # its children's CPU too, reaped or not
                    facts[member.role]["cpu_s"] = max(facts[member.role]["cpu_s"], cgroup_cpu_s)
                if member.native and cgroups:  # its rusage is the server's (a vfork): the cgroup's peak
                    facts[member.role]["max_rss_mb"] = cgroups.peak_mb()
        if host is not None:
            facts[host.role] = dict(host.facts(), ended_by=stopped_for or host.ended_by)
        truncated = {capture.name: capture.truncated for capture in self.captures}
        names = list(self.outputs)
        header = {"members": facts, "truncated": truncated, "fds": names}
        if self.server.config.get("trace"):  # when each process started and ended, for a profile
            header["trace"] = {
                **{f"{m.role}_forked": m.started for m in members},
                **{f"{m.role}_ended": m.started + m.wall_s for m in members},
                "supervised": time.monotonic(),
            }
        return header, [self.outputs[n] for n in names]


def _copy_fd(source: int, target: int) -> None:
    """The whole content of memfd `source` into `target`, in the kernel (no byte in this heap)."""
    size, offset = os.fstat(source).st_size, 0
    while offset < size:
        sent = os.sendfile(target, source, offset, size - offset)
        if sent == 0:
            break
        offset += sent


def _within_fetch_cap(header: dict[str, Any], outputs: list[int]) -> tuple[dict[str, Any], list[int]]:
    """The reply with the fetched files (`file:<name>`) that fit the fetch cap, in order, as a Python
    run's `_fetch_files` keeps them; a file past the cap is dropped, unread."""
    budget = _child.FETCH_MAX_BYTES
    names, kept = [], []
    for name, fd in zip(header["fds"], outputs, strict=True):
        if name.startswith("file:"):
            size = os.fstat(fd).st_size
            if size > budget:
                os.close(fd)
                continue
            budget -= size
        names.append(name)
        kept.append(fd)
    header["fds"] = names
    return header, kept
