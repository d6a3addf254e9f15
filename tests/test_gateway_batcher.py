"""The gateway's micro-batcher against a farm of its own making (no Redis): when a request's jobs are
sent, and which requests share a batch. Behaviour only: no test here times anything."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from evalfarm.gateway.batcher import Batcher, results_in_order
from evalfarm.result import Result
from evalfarm.status import Status

A_MINUTE_S = 60.0  # a linger no test waits out: a batch sent before it is sent without waiting


class HeldFarm:
    """An `AsyncFarm` stand-in: records each batch it is sent and answers a job when told to."""

    def __init__(self) -> None:
        self.batches: list[list[Any]] = []
        self._answers: dict[str, asyncio.Event] = {}

    def known_processes(self) -> int:
        return 1

    def answer(self, job_id: str) -> None:
        self._answers.setdefault(job_id, asyncio.Event()).set()

    async def stream(self, jobs: Sequence[Any], **options: Any) -> AsyncIterator[tuple[int, Result]]:
        self.batches.append([job["id"] for job in jobs])
        waits = {asyncio.ensure_future(self._answered(i, job)) for i, job in enumerate(jobs)}
        for done in asyncio.as_completed(waits):
            yield await done

    async def _answered(self, index: int, job: dict[str, Any]) -> tuple[int, Result]:
        await self._answers.setdefault(job["id"], asyncio.Event()).wait()
        return index, Result.of(job["id"], "program", Status.OK, None, queued_s=0.0, run_s=0.0)


async def turns(n: int = 20) -> None:
    """Let the event loop run `n` times round (what is due now happens; no timer fires)."""
    for _ in range(n):
        await asyncio.sleep(0)


def job(job_id: str) -> dict[str, Any]:
    return {"id": job_id, "env": "program", "code": f"print({job_id!r})"}


def test_a_lone_request_is_sent_on_the_loops_next_turn_not_after_the_linger() -> None:
    async def scenario() -> None:
        farm = HeldFarm()
        batcher = Batcher(farm, linger_s=A_MINUTE_S, low_water=1)  # type: ignore[arg-type]
        futures = batcher.submit([job("a")], deadline_s=A_MINUTE_S)
        await turns()
        assert farm.batches == [["a"]]  # sent: nothing else was waiting, the farm was idle
        farm.answer("a")
        [result] = await results_in_order([job("a")], futures, A_MINUTE_S)
        assert result["id"] == "a" and result["status"] == "ok"
        await batcher.close()

    asyncio.run(scenario())


def test_requests_arriving_while_the_farm_is_busy_share_one_batch_sent_as_it_runs_dry() -> None:
    async def scenario() -> None:
        farm = HeldFarm()
        batcher = Batcher(farm, linger_s=A_MINUTE_S, low_water=1)  # type: ignore[arg-type]
        first = batcher.submit([job("a")], deadline_s=A_MINUTE_S)
        await turns()
        later = [batcher.submit([job(name)], deadline_s=A_MINUTE_S) for name in ("b", "c", "d")]
        await turns()
        assert farm.batches == [["a"]]  # the others wait: the farm has the gateway's work
        farm.answer("a")
        await turns()
        assert farm.batches == [["a"], ["b", "c", "d"]]  # one batch for what queued meanwhile
        for name in ("b", "c", "d"):
            farm.answer(name)
        answers = [await results_in_order([job("x")], f, A_MINUTE_S) for f in [first, *later]]
        assert [r["id"] for [r] in answers] == ["a", "b", "c", "d"]
        await batcher.close()

    asyncio.run(scenario())


def test_requests_of_one_turn_of_the_loop_ride_one_batch() -> None:
    async def scenario() -> None:
        farm = HeldFarm()
        batcher = Batcher(farm, linger_s=A_MINUTE_S, low_water=8)  # type: ignore[arg-type]
        for name in ("a", "b", "c"):
            batcher.submit([job(name)], deadline_s=A_MINUTE_S)
        await turns()
        assert farm.batches == [["a", "b", "c"]]
        for name in ("a", "b", "c"):
            farm.answer(name)
        await batcher.close()

    asyncio.run(scenario())
