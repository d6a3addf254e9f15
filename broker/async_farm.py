"""The asyncio client: `await farm.score(jobs)`, `async for index, result in farm.stream(jobs)`.

The same guarantees as `Farm` (one result per job, exactly once, in order for `score`; infra errors
marked, never a reward of 0; retries of what the farm failed), driven by the same loop
(`broker.run.steps`), its requests awaited where `Farm` blocks on them. Any
number of batches may be in flight at once from one event loop, each with its own reply list and
deadline. Replies are awaited on an asyncio Redis client, so a waiting batch costs the loop nothing;
publishing goes through Celery's own (blocking) protocol code in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from evalfarm.broker import audit, replies
from evalfarm.broker.batch import BatchStats
from evalfarm.broker.connections import MasterWatch, aclose, async_redis_client, close, decoded, redis_client
from evalfarm.broker.farm import farm_status, language_key, progress_bar, unreachable
from evalfarm.broker.producer import Producer, redis_options
from evalfarm.broker.run import Deliver, Publish, Receive, next_step, steps
from evalfarm.broker.session_client import (
    AsyncSession,
    SessionSpec,
    checked_workspace,
    upload_workspace_async,
)
from evalfarm.broker.settings import ClientSettings
from evalfarm.result import Result


class AsyncFarm:
    """An asyncio connection to a running farm; use `async with AsyncFarm(url) as farm:`."""

    def __init__(
        self,
        broker_url: str | None = None,
        *,
        settings: ClientSettings | None = None,
        processes: int | None = None,
        progress: bool = False,
    ) -> None:
        settings = (settings or ClientSettings.from_env()).with_broker(broker_url)
        self.settings = settings
        self.progress = progress
        self.last_stats = BatchStats()
        self._producer = Producer(settings, processes)
        # A failover may lose the last writes: a batch looks for its tasks soon after one.
        self._master_watch = MasterWatch()
        self._redis = async_redis_client(
            str(settings.backend_url), settings, self._master_watch, **redis_options(settings)
        )
        self._sync_redis: Any = None  # for sizing, read in a thread
        self._in_flight = 0
        self._audit_keys = audit.audit_keys(settings)

    @property
    def redis(self) -> Any:
        """The farm's asyncio Redis client (sessions speak through it)."""
        return self._redis

    async def __aenter__(self) -> AsyncFarm:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Release the broker and Redis connections."""
        await aclose(self._redis)
        self._producer.close()
        if self._sync_redis is not None:
            close(self._sync_redis)

    async def score(
        self,
        jobs: Sequence[Any],
        *,
        priority: bool = False,
        deadline_s: float | None = None,
        progress: bool | None = None,
    ) -> list[Result]:
        """Score `jobs`; one Result each, in input order. Never raises for a job or a lost worker."""
        results: list[Result | None] = [None] * len(jobs)
        async for index, result in self.stream(
            jobs, priority=priority, deadline_s=deadline_s, progress=progress
        ):
            results[index] = result
        return [r if r is not None else Result.infra(jobs[i], "no result") for i, r in enumerate(results)]

    async def iter_ordered(self, jobs: Sequence[Any], **options: Any) -> AsyncIterator[Result]:
        """Results in input order, each yielded as soon as it and all before it are in."""
        waiting: dict[int, Result] = {}
        next_index = 0
        async for index, result in self.stream(jobs, **options):
            waiting[index] = result
            while next_index in waiting:
                yield waiting.pop(next_index)
                next_index += 1

    async def stream(
        self,
        jobs: Sequence[Any],
        *,
        priority: bool = False,
        deadline_s: float | None = None,
        progress: bool | None = None,
        spread: bool = True,
    ) -> AsyncIterator[tuple[int, Result]]:
        """Yield `(index, result)` for every job as results complete; each index exactly once.

        The options of `Farm.stream`; the progress bar is off by default (it is for a terminal, not
        for a server): `progress=True` shows it.
        """
        run = self._producer.new_run(jobs, deadline_s)
        reply_key = replies.new_reply_key()
        self._in_flight += 1  # one event loop: no lock needed
        shown = self.progress and self._in_flight == 1 if progress is None else progress
        bar = progress_bar(len(jobs), shown)
        try:
            known = self._producer.known_processes()
            if not spread:
                run.plan(0)
            else:
                run.plan(known if known is not None else await asyncio.to_thread(self.processes))
            lane = self._producer.lane(priority)
            loop = steps(run, self._master_watch)
            answer: Any = None  # what the last step asked for: replies, or the tasks found
            while (step := next_step(loop, answer)) is not None:
                answer = None
                if isinstance(step, Deliver):
                    bar.update(1)
                    yield step.index, step.result
                elif isinstance(step, Publish):
                    await asyncio.to_thread(self._producer.publish, run, step.outgoing, lane, reply_key)
                elif isinstance(step, Receive):
                    answer = await replies.areceive(self._redis, reply_key, step.wait_s, step.most)
                else:
                    answer = await audit.alocate(self._redis, self._audit_keys, step.task_ids)
        finally:
            bar.close()
            self._in_flight -= 1
            self.last_stats = run.batch.stats
            abandoned = run.abandoned()
            if abandoned:  # a finished batch read its list empty: no task to make for nothing
                await asyncio.shield(self._cleanup(abandoned, reply_key))

    async def release(self) -> None:
        """Close the Redis connections this client holds now (it opens new ones when next used): for
        a caller whose event loop may end before the client is used again."""
        await self._redis.connection_pool.disconnect()

    def session(
        self,
        ttl_s: float = 60.0,
        limits: dict[str, Any] | None = None,
        language: str = "python",
        kind: str = "python",
        workspace: str | None = None,
    ) -> OpeningSession:
        """A session to open: `async with farm.session(ttl_s=60) as s: await s.run("x = 41")`, or
        `s = await farm.session()` to keep it (then `await s.close()`). See `Farm.session`."""
        spec = SessionSpec.of(ttl_s, limits, language, kind, workspace)
        return OpeningSession(self._redis, spec)

    async def upload_workspace(self, archive: bytes) -> str:
        """Keep a tar or zip archive as a workspace; its id. See `Farm.upload_workspace`."""
        checked_workspace(archive)
        return await upload_workspace_async(self._redis, archive)

    async def status(self) -> dict[str, Any]:
        """Whether Redis answers, and the live worker nodes and pool processes it knows of."""
        from evalfarm.broker.keys import NODE_KEY_PREFIX, SESSION_HOST_PREFIX, SESSION_HOSTS_KEY

        try:
            await self._redis.ping()
            keys = [key async for key in self._redis.scan_iter(match=NODE_KEY_PREFIX + "*", count=1000)]
            values = await self._redis.mget(keys) if keys else []
            languages = await self._redis.mget([language_key(key) for key in keys]) if keys else []
            hosts = list(await self._redis.smembers(SESSION_HOSTS_KEY))
            adverts = (
                await self._redis.mget([SESSION_HOST_PREFIX + decoded(h) for h in hosts]) if hosts else []
            )
        except Exception as error:  # unreachable: that is the answer
            return unreachable(error)
        return farm_status(values, languages, adverts)

    def known_processes(self) -> int | None:
        """The farm's pool size if known without asking Redis (given, or read less than 30 s ago)."""
        return self._producer.known_processes()

    def processes(self) -> int:
        """Pool processes serving the farm (blocking: read in a thread from async code)."""
        if self._sync_redis is None:
            settings = self.settings
            self._sync_redis = redis_client(str(settings.backend_url), settings, **redis_options(settings))
        return self._producer.processes(self._sync_redis)

    async def _cleanup(self, abandoned: list[str], reply_key: str) -> None:
        """Revoke the tasks a batch gave up on and delete its reply list (Redis drops an empty one)."""
        await asyncio.to_thread(self._producer.revoke, abandoned)
        try:
            await self._redis.delete(reply_key)
        except Exception:  # harmless: the list expires on its own
            pass


class OpeningSession:
    """`AsyncFarm.session()`'s answer: opened by `async with` (and closed after) or by `await`."""

    def __init__(self, client: Any, spec: SessionSpec) -> None:
        self._client = client
        self._spec = spec
        self._session: AsyncSession | None = None

    def __await__(self) -> Any:
        return AsyncSession.open(self._client, self._spec).__await__()

    async def __aenter__(self) -> AsyncSession:
        self._session = await AsyncSession.open(self._client, self._spec)
        return self._session

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
