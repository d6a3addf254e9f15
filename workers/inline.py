"""Score jobs with no queue at all: a local pool of processes, each owning one sandbox slot."""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import subprocess
from collections.abc import Iterable, Iterator
from typing import Any

# This pool process's scoring state: multiprocessing calls `score_line` with the line alone, so its
# initializer leaves the state here, in the pool process (the parent never sets it).
_process: Any = None


def _init_worker(process: Any, cpus: list[int], sandboxes: list[Any], next_index: Any) -> None:
    global _process
    gc.enable()  # forked while the pool's parent held collection off; what it froze stays frozen here

    with next_index.get_lock():  # this pool's count: a process's global identity is not
        index = next_index.value
        next_index.value += 1
    os.sched_setaffinity(0, {cpus[index % len(cpus)]})
    for other, sandbox in enumerate(sandboxes):
        if other != index:
            sandbox.release()
    # A replacement for a dead pool process (index past the first ones) starts a sandbox of its own,
    # on the core it was pinned to.
    own = sandboxes[index] if index < len(sandboxes) else None
    process.open(slot=index, sandbox=own)
    _process = process


def settings_from_environment() -> Any:
    """The `EVALFARM_*` settings, or None (meaning their defaults) when no such variable is set.

    A local pool needs only a few of them, and reading them imports pydantic-settings (about 0.1 s,
    which shows next to scoring a small file); so it is read only when there is something to read.
    """
    if not any(name.startswith("EVALFARM_") for name in os.environ):
        return None
    from evalfarm.broker.settings import WorkerSettings

    return WorkerSettings.from_env()


def score_line(line: str) -> dict[str, Any]:
    """Parse one JSONL line and score it; a line that is not JSON becomes an invalid_job result."""
    from evalfarm.envs import score_job
    from evalfarm.workers.jobs_file import BadLine, parse

    job = parse(line)
    return job.result() if isinstance(job, BadLine) else score_job(job, _process.context())


def env_ids_of(lines: Iterable[str]) -> set[str]:
    """The env ids named by JSONL job lines (lines that are not jobs are skipped)."""
    from evalfarm.workers.jobs_file import parse

    ids = set()
    for line in lines:
        job = parse(line)
        if isinstance(job, dict) and isinstance(job.get("env"), str):
            ids.add(job["env"])
    return ids


class InlinePool:
    """`workers` processes scoring jobs in input order; use as a context manager.

    Process i and its slot's servers and runs are pinned to core `cpus[i % len(cpus)]` (default: the
    cores this process may use), as a farm node pins its children: a slot's processes hand each run
    back and forth, and do so faster on one core. `env_ids`: envs imported before the pool forks, so
    every process shares them instead of each importing them again.
    """

    def __init__(self, workers: int = 2, cpus: list[int] | None = None, env_ids: Iterable[str] = ()) -> None:
        from evalfarm.envs.runtime import sandbox_config
        from evalfarm.sandbox import Sandbox

        cpus = cpus or sorted(os.sched_getaffinity(0))
        # The slots' servers set up while this process imports and forks.
        config = sandbox_config()
        sandboxes = [Sandbox(slot=i, config=config, cpus={cpus[i % len(cpus)]}) for i in range(workers)]
        for sandbox in sandboxes:
            sandbox.launch()
        self._servers = [server for sandbox in sandboxes for server in sandbox.server_processes]

        # gc's recipe for forking a pool: no collection while importing (so the long-lived objects
        # are not interleaved with freed holes), all of them frozen across the fork (so the pool
        # processes' collections never touch, and copy, the pages they share with this one).
        collecting = gc.isenabled()
        gc.disable()
        try:
            from evalfarm.envs import InvalidJob, get_env
            from evalfarm.envs.datasets import DatasetStore  # noqa: F401  (imported once, not by each process)
            from evalfarm.tasks.process import WorkerProcess

            process = WorkerProcess(settings_from_environment())  # extra envs registered before fork
            for env_id in env_ids:
                try:
                    get_env(env_id)
                except InvalidJob:
                    pass  # an unknown env: each of its jobs gets its own invalid_job result
            self.workers = workers
            ctx = multiprocessing.get_context("fork")  # started before any thread: fork is safe here
            next_index = ctx.Value("i", 0)
            gc.freeze()
            self._pool = ctx.Pool(
                workers, initializer=_init_worker, initargs=(process, cpus, sandboxes, next_index)
            )
        finally:
            gc.unfreeze()
            if collecting:
                gc.enable()
        for sandbox in sandboxes:
            sandbox.release()  # each now belongs to its pool process

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
        """Stop the pool; the slots' servers see their channels close, exit, and are reaped here."""
        self._pool.terminate()
        self._pool.join()
        for server in self._servers:
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def chunksize_for(count: int, workers: int) -> int:
    """Jobs per message: large enough to amortise IPC, small enough to balance the tail."""
    return max(1, min(64, count // (workers * 8)))
