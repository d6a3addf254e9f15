"""The judge host: one long-lived sandboxed process per fork server that runs judges, one job at a time.

A judge is trusted code (a HumanEval test, say) that calls a candidate serving in a sandboxed process
of its own. Forking a fresh process per judge cost as much as the candidate's own run; the judge host
is forked once, walls up like any run, and takes each job over its control channel: the job's payload,
the two pipes to its candidate, a report memfd and an output pipe. No candidate can reach it (another
PID namespace, pipes that carry data only), and no candidate is ever forked from it, so the tests it
has held are no one's to read.

Between jobs it puts back what a test may have changed of the process (the recursion limit, the
working directory, the environment) and retires (exits, to be started again on the next job) after a
job that failed, left a thread behind, or grew it past its memory budget, and after RETIRE_AFTER jobs.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import os
import resource
import socket
import sys
import time
from typing import Any, NoReturn

from sandbox import _payload, _protocol, bridge

CONTROL_FD = 3
RETIRE_AFTER = 1000  # jobs
RETIRE_RSS_BYTES = 512 << 20
_COMPILED_CACHE = 16  # distinct judge programs kept compiled


def serve() -> NoReturn:
    """Take jobs from the server until it closes the channel (or this process retires)."""
    channel = socket.socket(fileno=CONTROL_FD)
    _protocol.send(channel, {"ready": True})
    baseline = _Baseline()
    compiled: dict[bytes, Any] = {}
    for served in range(1, RETIRE_AFTER + 1):
        try:
            request, fds = _protocol.recv(channel)
        except (_protocol.ProtocolError, OSError):
            os._exit(0)
        job = dict(zip(request["fds"], fds, strict=True))
        started = time.process_time()
        try:
            clean = _judge(request, job, compiled)
        finally:
            for fd in fds:
                os.close(fd)
        retire = not (clean and baseline.restore()) or served == RETIRE_AFTER
        _protocol.send(channel, {"done": True, "cpu_s": time.process_time() - started, "retire": retire})
        if retire:
            os._exit(0)
    os._exit(0)


def _judge(request: dict[str, Any], job: dict[str, int], compiled: dict[bytes, Any]) -> bool:
    """Run one job's judge with its output on the job's pipe; whether it ended cleanly."""
    header, (code, data) = _payload.unpack(_payload.read_fd(job["payload"]))
    report_fd = job["report"]

    def report(record: dict[str, Any]) -> None:
        os.write(report_fd, json.dumps(record).encode() + b"\n")

    namespace = {
        "__name__": "__judge__",
        "__builtins__": builtins,
        "JUDGE_DATA": data,
        "candidate": bridge.Candidate(job["requests"], job["replies"], header["max_reply_bytes"]),
        "report": report,
    }
    report({"started": True})
    _limit_memory(request["memory_mb"])
    with _Output(job["output"]):
        try:
            exec(_compiled(code, compiled), namespace)
        except MemoryError:
            report({"status": "memory_limit", "error": "the judge ran out of memory on the program's values"})
            return False
        except BaseException as error:
            report({"status": "judge_error", "error": f"the judge failed: {type(error).__name__}: {error}"})
            return False
    return True


def _compiled(code: bytes, cache: dict[bytes, Any]) -> Any:
    """A judge program compiled once (they are the envs' own few programs)."""
    key = hashlib.sha256(code).digest()
    if key not in cache:
        if len(cache) >= _COMPILED_CACHE:
            cache.clear()
        cache[key] = compile(code, "judge.py", "exec")
    return cache[key]


def _limit_memory(memory_mb: int) -> None:
    """This job's address space: what the host uses now plus the job's memory limit."""
    with open("/proc/self/statm") as statm:
        used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    wanted = used + (memory_mb << 20)
    resource.setrlimit(resource.RLIMIT_AS, (wanted if hard < 0 else min(wanted, hard), hard))


class _Output:
    """The job's output pipe on descriptors 1 and 2 for the job's duration; the host's own after."""

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
            except Exception:
                pass
        for target, saved in zip((1, 2), self.saved, strict=True):
            os.dup2(saved, target)
            os.close(saved)


class _Baseline:
    """What a job may have changed of this process, to be put back (or the host retired)."""

    def __init__(self) -> None:
        self.recursion = sys.getrecursionlimit()
        self.cwd = os.getcwd()
        self.environ = dict(os.environ)
        self.streams = (sys.stdin, sys.stdout, sys.stderr)

    def restore(self) -> bool:
        """Put back what can be; False when the host must retire instead."""
        sys.setrecursionlimit(self.recursion)
        os.chdir(self.cwd)
        if dict(os.environ) != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        sys.stdin, sys.stdout, sys.stderr = self.streams
        threading = sys.modules.get("threading")  # imported only if a judge started a thread
        alone = threading is None or threading.active_count() == 1
        return alone and _rss() < RETIRE_RSS_BYTES


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
