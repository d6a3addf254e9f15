"""Micro-batching: the jobs of concurrent requests go to the farm together, as one batch.

A request's jobs wait in a lane (priority or background) with a future each. When the farm has
nothing of the gateway's to do, the lane is flushed on the event loop's next turn, so a lone request
pays nothing. Under load the lane fills while the farm works, and is flushed when the farm is about
to run dry (fewer than `low_water` of the gateway's jobs unanswered), when `max_jobs` are waiting,
or after `linger_s` at the latest: many small requests then ride few batches, and each batch rides
few messages, so they cost about what one batch of all their jobs would (a batch sent while others
are in flight is packed for efficiency alone: the others keep the pool busy). Each flush is one
`AsyncFarm.stream` call, whose results resolve the futures as they arrive; identical jobs (same id
and content) from different requests are scored once, also when one arrives while the other is still
being scored: a client that posts a request again after its own timeout (OpenRLHF's, verl's) waits on
the first one's jobs instead of having them scored twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from evalfarm.broker.async_farm import AsyncFarm
from evalfarm.result import Result

log = logging.getLogger(__name__)


@dataclasses.dataclass
class _Waiting:
    job: Any
    future: asyncio.Future[Result]
    deadline: float


class Batcher:
    """Collects jobs from concurrent requests and scores them in shared batches."""

    def __init__(
        self,
        farm: AsyncFarm,
        linger_s: float = 0.05,
        max_jobs: int = 1024,
        on_batch: Callable[[int], None] | None = None,
        low_water: int | None = None,
    ) -> None:
        """`low_water`: unanswered jobs below which the farm is about to run dry (default: two per
        pool process of the farm, as it advertises)."""
        self.farm = farm
        self.linger_s = linger_s
        self.max_jobs = max_jobs
        self._low_water = low_water
        self._on_batch = on_batch
        self._lanes: dict[bool, list[_Waiting]] = {False: [], True: []}
        self._scheduled: dict[bool, asyncio.Handle | None] = {False: None, True: None}
        self._outstanding = 0  # jobs sent to the farm, not yet answered
        self._tasks: set[asyncio.Task[None]] = set()
        self._in_flight: dict[str, asyncio.Future[Result]] = {}  # a job's content -> its future

    def submit(
        self, jobs: list[Any], deadline_s: float, priority: bool = False
    ) -> list[asyncio.Future[Result]]:
        """Queue `jobs`; one future per job, resolved with its result (infra_error past the deadline).
        A job identical to one queued or being scored shares its future."""
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + deadline_s
        futures: list[asyncio.Future[Result]] = []
        waiting = []
        for job in jobs:
            key = _content(job)
            known = self._in_flight.get(key) if key is not None else None
            if known is not None:
                futures.append(known)
                continue
            future: asyncio.Future[Result] = loop.create_future()
            if key is not None:
                self._in_flight[key] = future
                future.add_done_callback(functools.partial(self._landed, key))
            waiting.append(_Waiting(job, future, deadline))
            futures.append(future)
        if not waiting:
            return futures
        lane = self._lanes[priority]
        lane.extend(waiting)
        if len(lane) >= self.max_jobs:
            self._flush(priority)
        elif self._scheduled[priority] is None:
            if self._outstanding < self.low_water():
                self._scheduled[priority] = loop.call_soon(self._flush, priority)
            else:
                self._scheduled[priority] = loop.call_later(self.linger_s, self._flush, priority)
        return futures

    def _landed(self, key: str, _: asyncio.Future[Result]) -> None:
        """A job's future resolved: an identical job from now on is scored anew."""
        self._in_flight.pop(key, None)

    def low_water(self) -> int:
        """Unanswered jobs below which waiting jobs are sent at once."""
        if self._low_water is not None:
            return self._low_water
        return 2 * (self.farm.known_processes() or 2)

    def _answered(self) -> None:
        """One more of the gateway's jobs answered: if the farm is running dry, send what waits."""
        self._outstanding -= 1
        if self._outstanding < self.low_water():
            for priority, lane in self._lanes.items():
                if lane:
                    self._flush(priority)

    def _flush(self, priority: bool) -> None:
        handle, self._scheduled[priority] = self._scheduled[priority], None
        if handle is not None:
            handle.cancel()
        lane = self._lanes[priority]
        while lane:
            taken, lane[:] = lane[: self.max_jobs], lane[self.max_jobs :]
            spread = self._outstanding < self.low_water()
            task = asyncio.get_running_loop().create_task(self._score(taken, priority, spread))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _score(self, waiting: list[_Waiting], priority: bool, spread: bool) -> None:
        self._outstanding += len(waiting)
        if self._on_batch is not None:
            self._on_batch(len(waiting))
        answered = [False] * len(waiting)
        failure = "no result"
        try:
            deadline_s = max(max(w.deadline for w in waiting) - time.monotonic(), 0.1)
            jobs = [w.job for w in waiting]
            batch = self.farm.stream(jobs, priority=priority, deadline_s=deadline_s, spread=spread)
            async for index, result in batch:
                if not waiting[index].future.done():
                    waiting[index].future.set_result(result)
                answered[index] = True
                self._answered()
        except Exception as error:  # the farm's fault: every job still waiting is answered infra_error
            log.exception("a gateway batch of %d jobs failed", len(waiting))
            failure = f"gateway batch failed: {type(error).__name__}: {error}"
        finally:
            for index, w in enumerate(waiting):
                if not answered[index]:
                    if not w.future.done():
                        w.future.set_result(Result.infra(w.job, failure))
                    self._answered()

    async def close(self) -> None:
        """Wait for the batches in flight (each ends by its deadline)."""
        for priority in (False, True):
            self._flush(priority)
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _content(job: Any) -> str | None:
    """A job's identity for sharing: its canonical JSON (None when it has none)."""
    try:
        return json.dumps(job, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return None


async def results_in_order(
    jobs: list[Any], futures: list[asyncio.Future[Result]], deadline_s: float
) -> list[Result]:
    """Every job's result, in order; past the deadline, the missing ones are infra_error."""
    if not futures:
        return []
    done, _ = await asyncio.wait(futures, timeout=max(deadline_s, 0.0))
    return [
        f.result() if f in done else Result.infra(j, "request deadline exceeded")
        for j, f in zip(jobs, futures, strict=True)
    ]


async def results_as_completed(
    jobs: list[Any], futures: list[asyncio.Future[Result]], deadline_s: float
) -> AsyncIterator[tuple[int, Result]]:
    """(index, result) as each completes; past the deadline, the rest as infra_error."""
    index_of = {future: index for index, future in enumerate(futures)}
    pending = set(futures)
    deadline = time.monotonic() + deadline_s
    while pending:
        done, pending = await asyncio.wait(pending, timeout=max(0.0, deadline - time.monotonic()),
                                           return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        if not done:
            break
        for future in done:
            yield index_of[future], future.result()
    for future in pending:
        index = index_of[future]
        yield index, Result.infra(jobs[index], "request deadline exceeded")
