"""Score jobs with no queue at all: a local pool of processes, each owning one sandbox slot."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Iterable, Iterator
from typing import Any

_context: Any = None  # this pool process's envs.Context


def _init_worker(cpus: list[int] | None) -> None:
    global _context
    from envs import Context

    index = multiprocessing.current_process()._identity[0] - 1
    if cpus:
        os.sched_setaffinity(0, {cpus[index % len(cpus)]})
    _context = Context(slot=index)


def score_line(line: str) -> dict[str, Any]:
    """Parse one JSONL line and score it; a line that is not JSON becomes an invalid_job result."""
    from envs import make_result, score_job
    from sandbox import Status

    try:
        job = json.loads(line)
    except ValueError as error:
        return make_result(None, None, Status.INVALID_JOB, None, f"line is not valid JSON: {error}")
    return score_job(job, _context)


class InlinePool:
    """`workers` processes scoring jobs in input order; use as a context manager."""

    def __init__(self, workers: int = 2, cpus: list[int] | None = None) -> None:
        self.workers = workers
        ctx = multiprocessing.get_context("fork")  # started before any thread: fork is safe here
        self._pool = ctx.Pool(workers, initializer=_init_worker, initargs=(cpus,))

    def __enter__(self) -> InlinePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def score_lines(self, lines: Iterable[str], chunksize: int = 8) -> Iterator[dict[str, Any]]:
        """Results of JSONL `lines`, in order, as they complete."""
        return self._pool.imap(score_line, lines, chunksize)

    def score(self, jobs: Iterable[Any], chunksize: int = 8) -> Iterator[dict[str, Any]]:
        """Results of job objects, in order."""
        return self.score_lines((json.dumps(job) for job in jobs), chunksize)

    def close(self) -> None:
        """Stop the pool; each slot's fork server dies with its process (parent-death signal)."""
        self._pool.terminate()
        self._pool.join()


def chunksize_for(count: int, workers: int) -> int:
    """Jobs per message: large enough to amortise IPC, small enough to balance the tail."""
    return max(1, min(64, count // (workers * 8)))
