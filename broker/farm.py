"""The producer's client: send a batch of jobs to the farm, get every result back exactly once.

Cheap to import in a training process: Celery is imported when a `Farm` is built, and nothing of the
envs (numpy, MinAtar) ever is. Delivery is at least once, so results are de-duplicated by job id; a
job the farm cannot score (a worker that keeps dying, the batch deadline) comes back as `infra_error`
with `infra: true` instead of going missing. Results are pushed: each batch blocks on its own reply
list in Redis and wakes as soon as a chunk's results are there.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from evalfarm.broker import audit, replies
from evalfarm.broker.batch import BatchStats
from evalfarm.broker.connections import MasterWatch, close, decoded, redis_client
from evalfarm.broker.keys import LANGUAGES_KEY_PREFIX, NODE_KEY_PREFIX, SESSION_HOST_PREFIX, SESSION_HOSTS_KEY
from evalfarm.broker.producer import Producer, redis_options
from evalfarm.broker.run import Deliver, Publish, Receive, next_step, steps
from evalfarm.broker.session_client import Session, SessionSpec, upload_workspace
from evalfarm.broker.settings import ClientSettings
from evalfarm.result import Result

__all__ = ["NODE_KEY_PREFIX", "Farm", "Result"]


class Farm:
    """A connection to a running farm.

    `score(jobs)` returns one `Result` per job in input order; `stream(jobs)` yields
    `(index, Result)` pairs as they complete. Thread-safe: batches from several threads are in
    flight at once, each with its own deadline and results (`last_stats` is the last one to end).
    """

    def __init__(
        self,
        broker_url: str | None = None,
        *,
        settings: ClientSettings | None = None,
        processes: int | None = None,
        progress: bool = True,
    ) -> None:
        settings = (settings or ClientSettings.from_env()).with_broker(broker_url)
        self.settings = settings
        self.progress = progress
        self.last_stats = BatchStats()
        self._producer = Producer(settings, processes)
        # A failover may lose the last writes: a batch looks for its tasks soon after one.
        self._master_watch = MasterWatch()
        self._redis = redis_client(
            str(settings.backend_url), settings, self._master_watch, **redis_options(settings)
        )
        self._in_flight = 0
        self._lock = threading.Lock()
        self._audit_keys = audit.audit_keys(settings)

    def __enter__(self) -> Farm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the broker and Redis connections."""
        self._producer.close()
        close(self._redis)

    def score(
        self,
        jobs: Sequence[Any],
        *,
        priority: bool = False,
        deadline_s: float | None = None,
        progress: bool | None = None,
    ) -> list[Result]:
        """Score `jobs`; one Result each, in input order. Never raises for a job or a lost worker."""
        results: list[Result | None] = [None] * len(jobs)
        for index, result in self.stream(jobs, priority=priority, deadline_s=deadline_s, progress=progress):
            results[index] = result
        return [r if r is not None else Result.infra(jobs[i], "no result") for i, r in enumerate(results)]

    def iter_ordered(self, jobs: Sequence[Any], **options: Any) -> Iterator[Result]:
        """Results in input order, each yielded as soon as it and all before it are in."""
        waiting: dict[int, Result] = {}
        next_index = 0
        for index, result in self.stream(jobs, **options):
            waiting[index] = result
            while next_index in waiting:
                yield waiting.pop(next_index)
                next_index += 1

    def stream(
        self,
        jobs: Sequence[Any],
        *,
        priority: bool = False,
        deadline_s: float | None = None,
        progress: bool | None = None,
        spread: bool = True,
    ) -> Iterator[tuple[int, Result]]:
        """Yield `(index, result)` for every job as results complete; each index exactly once.

        `priority` sends the batch on the priority lane (ahead of background work); past
        `deadline_s` (default `batch_deadline_s`) unfinished jobs come back as infra_error.
        `spread=False` packs the jobs into messages for efficiency alone, not also cut so that every
        pool process gets a share: for a batch sent while others keep the farm busy. The progress
        bar is on by default only for a batch that is the client's only one in flight.
        """
        run = self._producer.new_run(jobs, deadline_s)
        reply_key = replies.new_reply_key()
        with self._lock:
            shown = self.progress and self._in_flight == 0 if progress is None else progress
            self._in_flight += 1
        bar = progress_bar(len(jobs), shown)
        try:
            run.plan(self.processes() if spread else 0)
            lane = self._producer.lane(priority)
            loop = steps(run, self._master_watch)
            answer: Any = None  # what the last step asked for: replies, or the tasks found
            while (step := next_step(loop, answer)) is not None:
                answer = None
                if isinstance(step, Deliver):
                    bar.update(1)
                    yield step.index, step.result
                elif isinstance(step, Publish):
                    self._producer.publish(run, step.outgoing, lane, reply_key)
                elif isinstance(step, Receive):
                    answer = replies.receive(self._redis, reply_key, step.wait_s, step.most)
                else:
                    answer = audit.locate(self._redis, self._audit_keys, step.task_ids)
        finally:
            bar.close()
            abandoned = run.abandoned()
            self._producer.revoke(abandoned)
            if abandoned:  # a finished batch read its list empty, and Redis drops empty lists
                forget(self._redis, reply_key)
            self.last_stats = run.batch.stats
            with self._lock:
                self._in_flight -= 1

    def session(
        self,
        ttl_s: float = 60.0,
        limits: dict[str, Any] | None = None,
        language: str = "python",
        kind: str = "python",
        workspace: str | None = None,
    ) -> Session:
        """Open a session: a sandboxed interpreter kept alive on one node between runs (`with
        farm.session(ttl_s=60) as s: s.run("x = 41"); s.run("x + 1").value == "42"`). `limits`:
        `broker.session_client.SessionLimits`' fields. `kind` "bash": bash shells, a run a shell
        command; `workspace`: an id from `upload_workspace`, its files at /workspace. Raises
        SessionsFull when no node has room."""
        spec = SessionSpec.of(ttl_s, limits, language, kind, workspace)
        return Session.open(self._redis, spec)

    def upload_workspace(self, archive: bytes) -> str:
        """Keep a tar or zip archive as a workspace sessions may start from (`session(workspace=...)`):
        its id, the same for the same bytes. ArchiveRefused (a ValueError) for one no node would unpack."""
        return upload_workspace(self._redis, archive)

    def attach(self, session_id: str) -> Session:
        """A session opened elsewhere (by another process, or through the gateway), by its id."""
        return Session.attach(self._redis, session_id)

    def processes(self) -> int:
        """Pool processes serving the farm: given, else as live worker nodes advertise."""
        return self._producer.processes(self._redis)

    def known_processes(self) -> int | None:
        """The farm's pool size if known without asking Redis (given, or read less than 30 s ago)."""
        return self._producer.known_processes()

    def status(self) -> dict[str, Any]:
        """Whether Redis answers, and the live worker nodes and pool processes it knows of."""
        try:
            self._redis.ping()
            keys = list(self._redis.scan_iter(match=NODE_KEY_PREFIX + "*", count=1000))
            values = self._redis.mget(keys) if keys else []
            languages = self._redis.mget([language_key(key) for key in keys]) if keys else []
            hosts = list(self._redis.smembers(SESSION_HOSTS_KEY))
            adverts = self._redis.mget([SESSION_HOST_PREFIX + decoded(h) for h in hosts]) if hosts else []
        except Exception as error:  # unreachable: that is the answer
            return unreachable(error)
        return farm_status(values, languages, adverts)


def language_key(node_key: Any) -> str:
    """The key where the node of `node_key` advertises its languages."""
    return LANGUAGES_KEY_PREFIX + decoded(node_key).removeprefix(NODE_KEY_PREFIX)


def farm_status(
    node_values: list[Any], language_values: list[Any] | None = None, session_adverts: list[Any] | None = None
) -> dict[str, Any]:
    """The status of a farm whose Redis answered, from its live nodes' advertised pool sizes and
    languages (`languages`: those some live node runs), and its session hosts' room (`sessions`:
    how many live hosts, the sessions they may hold and hold now)."""
    sizes = [int(v) for v in node_values if v is not None]
    offered: set[str] = set()
    for value in language_values or ():
        if value:
            offered.update((value.decode() if isinstance(value, bytes) else value).split(","))
    status = {"redis": True, "nodes": sum(1 for n in sizes if n), "processes": sum(sizes)}
    return {**status, "languages": sorted(offered), "sessions": session_room(session_adverts or [])}


def session_room(adverts: list[Any]) -> dict[str, int]:
    """The live session hosts' room, from their advertisements (None: expired)."""
    room = {"hosts": 0, "capacity": 0, "open": 0}
    for advert in adverts:
        try:
            info = json.loads(advert)
            capacity, open_now = int(info["capacity"]), int(info["open"])
        except (TypeError, ValueError, KeyError):
            continue
        room["hosts"] += 1
        room["capacity"] += capacity
        room["open"] += open_now
    return room


def unreachable(error: Exception) -> dict[str, Any]:
    """The status of a farm whose Redis did not answer."""
    return {
        "redis": False,
        "error": f"{type(error).__name__}: {error}",
        "nodes": 0,
        "processes": 0,
        "languages": [],
        "sessions": {"hosts": 0, "capacity": 0, "open": 0},
    }


def forget(client: Any, reply_key: str) -> None:
    """Delete a finished batch's reply list (late duplicates of retried tasks); it expires anyway."""
    try:
        client.delete(reply_key)
    except Exception:  # harmless: the list expires on its own
        pass


def progress_bar(total: int, enabled: bool) -> Any:
    """A tqdm bar on stderr (imported only when shown)."""
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    return tqdm(total=total, unit="job", dynamic_ncols=True, smoothing=0.1)


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass
