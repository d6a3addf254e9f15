"""The judge host: one long-lived sandboxed process per fork server, from which judges are forked.

A judge is the problem's code (a HumanEval test, say) that calls a candidate serving in a sandboxed
process of its own. Putting up a fresh process's walls for it per job cost as much as the candidate's
own run; the judge host walls itself in once and forks judges, which inherit its walls. It never runs
a judge itself, and never reads a job's bytes (its children read their own payloads).

One judge serves the jobs of one problem: jobs arrive with a key (a hash of the judge's program and
data, the candidate's answer excepted), and a judge takes every consecutive job of its key, a fresh
namespace each time; a job of another key gets a freshly forked judge (forked ahead, after the host's
last reply: it has run nothing and holds nothing when its first job comes). So what one problem's test
does to its process (a patched module, a seeded random, a thread) can reach only jobs of the same
problem, which its own test judges anyway, and no problem's test ever sees another's data. GRPO sends
a problem's completions together: they share one judge. A judge that fails retires.

No candidate can reach the host or its judges (another PID namespace, pipes that carry data only),
and no candidate is forked from them. Each job arrives on the control channel: its payload, the two
pipes to its candidate, a report memfd and an output pipe. The host answers when the job's judge is
done, with the CPU time the judge reports for it, or with how the judge died.
"""

from __future__ import annotations

import builtins
import json
import os
import resource
import socket
import sys
import time
from typing import Any, NoReturn

from evalfarm.sandbox import _payload, _protocol, bridge

CONTROL_FD = 3


def serve() -> NoReturn:
    """Pass each job to the judge of its key until the channel closes. A judge for the next new key
    is forked ahead, once a reply is sent: a job of a new problem finds one waiting."""
    channel = socket.socket(fileno=CONTROL_FD)
    _protocol.send(channel, {"ready": True})
    judge: _Judge | None = None
    spare: _Judge | None = _Judge()
    while True:
        try:
            request, fds = _protocol.recv(channel)
        except (_protocol.ProtocolError, OSError):
            os._exit(0)
        _reap_retired()
        if judge is None or judge.key != request["key"]:
            if judge is not None:
                judge.stop()
            judge, spare = spare or _Judge(), None
            judge.key = request["key"]
        reply = judge.run(request, fds)
        if reply is None:  # it died: how, and its CPU time, are the kernel's to say
            reply = judge.reap()
            judge = None
        elif reply.get("retire"):
            judge.stop()
            judge = None
        _protocol.send(channel, reply)
        if spare is None:
            spare = _Judge()


class _Judge:
    """A forked judge, serving the jobs of one key over a channel of its own."""

    def __init__(self) -> None:
        self.key: str | None = None  # the key of its first job, and so of all its jobs
        ours, theirs = _protocol.channel_pair()
        self.pid = os.fork()
        if self.pid == 0:
            # Nothing of the host's but its own channel: the job in hand (whose descriptors the host
            # holds now) arrives on that channel like every other.
            ours.detach()
            keep = theirs.fileno()
            os.closerange(3, keep)
            os.closerange(keep + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
            _serve_jobs(theirs)
        theirs.close()
        self.channel = ours

    def run(self, request: dict[str, Any], fds: list[int]) -> dict[str, Any] | None:
        """Hand the judge one job; its reply, or None when it died first."""
        try:
            _protocol.send(self.channel, request, fds)
            reply, _ = _protocol.recv(self.channel)
        except (_protocol.ProtocolError, OSError):
            return None
        finally:
            for fd in fds:
                os.close(fd)
        return reply

    def reap(self) -> dict[str, Any]:
        """How a judge that died mid-job ended."""
        self.channel.close()
        _, status, usage = os.wait4(self.pid, 0)
        return {
            "done": True,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        }

    def stop(self) -> None:
        """End the judge (its problem's jobs are over): it exits at the end of its channel, and is
        reaped later (its exit is not worth waiting for before the next job)."""
        self.channel.close()
        _RETIRED.append(self.pid)


_RETIRED: list[int] = []  # judges that were told to exit, not yet reaped


def _reap_retired() -> None:
    for pid in list(_RETIRED):
        if os.waitpid(pid, os.WNOHANG)[0]:
            _RETIRED.remove(pid)


def _serve_jobs(channel: socket.socket) -> NoReturn:
    """A judge's loop: one job at a time, until the host closes the channel."""
    while True:
        try:
            request, fds = _protocol.recv(channel)
        except (_protocol.ProtocolError, OSError):
            os._exit(0)
        job = dict(zip(request["fds"], fds, strict=True))
        received = time.monotonic()
        started = time.process_time()
        with _Output(job["output"]):
            clean = _judge(request, job)
        if request.get("trace"):  # for a profile: when the judge had the job, and was done with it
            _write_stamps(job["report"], received, time.monotonic())
        for fd in fds:
            os.close(fd)
        cpu_s = time.process_time() - started
        reply = {"done": True, "cpu_s": cpu_s, "exit_code": 0 if clean else 1, "signal": None}
        _protocol.send(channel, dict(reply, retire=not clean))


def _write_stamps(report_fd: int, received: float, done: float) -> None:
    """The trace's record, written without the judge's modules (its problem's code may have
    replaced them) and lost, not fatal, when the judge closed its report."""
    record = f'{{"trace": {{"judge_received": {received!r}, "judge_done": {done!r}}}}}\n'
    try:
        os.write(report_fd, record.encode())
    except OSError:
        pass


def _judge(request: dict[str, Any], job: dict[str, int]) -> bool:
    """Run one job's judge program; whether it ended without failing itself."""
    header, (code, data) = _payload.unpack(_payload.read_fd(job["payload"]))
    report_fd = job["report"]

    def report(record: dict[str, Any]) -> None:
        os.write(report_fd, json.dumps(record).encode() + b"\n")

    # From its first call on, the judge's failures may be the candidate's doing: the record says so.
    candidate = bridge.Candidate(
        job["requests"], job["replies"], header["max_reply_bytes"], lambda: report({"called": True})
    )
    namespace = {
        "__name__": "__judge__",
        "__builtins__": builtins,
        "JUDGE_DATA": data,
        "candidate": candidate,
        "report": report,
        "compile_once": compile_once,
    }
    report({"started": True})
    _limit_memory(request["memory_mb"])
    try:
        exec(compile_once(code, "judge.py"), namespace)
    except MemoryError:
        report({"status": "memory_limit", "error": "the judge ran out of memory on the program's values"})
        return False
    except BaseException as error:  # a judge's failure is its report
        report({"status": "judge_error", "error": f"the judge failed: {bridge.describe(error)}"})
        return False
    return True


_COMPILED: dict[tuple[str | bytes, str], Any] = {}  # this judge's code objects (its problem's only)
COMPILED_KEPT = 16


def compile_once(source: str | bytes, filename: str) -> Any:
    """`compile(source, filename, "exec")`, kept for this judge's next jobs.

    A judge serves the jobs of one key: its program and its problem's code (a HumanEval prompt and
    test) are the same bytes each time, so each is compiled at its first job only. A code object is
    immutable, and each job still runs it in a namespace of its own; a compile that fails is not
    kept (it raises again, for the job that asks).
    """
    key = (source, filename)
    compiled = _COMPILED.get(key)
    if compiled is None:
        compiled = compile(source, filename, "exec")
        if len(_COMPILED) >= COMPILED_KEPT:
            _COMPILED.clear()
        _COMPILED[key] = compiled
    return compiled


def _limit_memory(memory_mb: int) -> None:
    """This job's address space: what the process uses now plus the job's memory limit."""
    with open("/proc/self/statm") as statm:
        used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    wanted = used + (memory_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (wanted if hard < 0 else min(wanted, hard), hard))


class _Output:
    """The job's output pipe on descriptors 1 and 2 for the job's duration; the judge's own after."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.saved: list[int] = []

    def __enter__(self) -> None:
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.fd, 1)
        os.dup2(self.fd, 2)

    def __exit__(self, *exc: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # a judge may have closed or replaced them
                pass
        for target, saved in zip((1, 2), self.saved, strict=True):
            os.dup2(saved, target)
            os.close(saved)
