"""Results pushed, not polled: the producer blocks on its batch's reply list and wakes on a push.

Real Redis (a private one per test) and, where results must be scored, real worker nodes.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import farm_support
import pytest
import redis
from farm_support import ROOT, TESTS, assert_each_once, client_settings, sleepy_jobs, wait_for

from evalfarm.broker.async_farm import AsyncFarm
from evalfarm.broker.keys import REPLY_PREFIX

redis_server = farm_support.redis_server
workers = farm_support.workers
farm = farm_support.farm

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


def blocked_clients(client: redis.Redis) -> list[dict[str, Any]]:
    """Clients Redis reports as blocked in BLPOP."""
    return [c for c in client.client_list() if c.get("cmd") == "blpop" and "b" in c.get("flags", "")]


def calls(client: redis.Redis, command: str) -> int:
    return int(client.info("commandstats").get(f"cmdstat_{command}", {}).get("calls", 0))


def take_published_task(client: redis.Redis, queue: str = "code") -> tuple[str, str, list[Any]]:
    """Pop one task message off a queue (every priority): its id, reply list and jobs."""
    for key in [queue, *(f"{queue}:{p}" for p in range(1, 10))]:
        raw = client.rpop(key)
        if raw is not None:
            envelope = json.loads(raw)
            body = json.loads(__import__("base64").b64decode(envelope["body"]))
            return envelope["headers"]["id"], envelope["properties"]["reply_to"], body[0][0]
    raise AssertionError("no task on the queue")


def test_the_producer_blocks_on_its_reply_list_and_wakes_on_the_push(redis_server, farm) -> None:
    # No worker: this test plays the worker's part by hand, on the real Redis the client uses.
    client = redis.Redis.from_url(redis_server.url)
    jobs = [{"id": "a", "env": "program", "code": "print(1)"}]
    received: list[Any] = []
    thread = threading.Thread(target=lambda: received.extend(farm.score(jobs, deadline_s=60)))
    thread.start()
    wait_for(lambda: bool(client.llen("code:6") or client.llen("code")), 10, "the task published")
    task_id, reply_to, sent = take_published_task(client)
    assert reply_to.startswith(REPLY_PREFIX) and sent == jobs
    wait_for(lambda: bool(blocked_clients(client)), 10, "the producer blocked in BLPOP")
    # While it waits, the producer sends nothing at all: no polling.
    before = {command: calls(client, command) for command in ("get", "mget", "lpop", "blpop")}
    time.sleep(1.0)
    after = {command: calls(client, command) for command in ("get", "mget", "lpop", "blpop")}
    assert after["get"] == before["get"] and after["mget"] == before["mget"]
    assert after["blpop"] - before["blpop"] <= 1 and after["lpop"] - before["lpop"] <= 1
    answer = {"id": "a", "env": "program", "status": "ok", "code": 0, "reward": None, "stdout": "1\n"}
    pushed = time.monotonic()
    client.rpush(reply_to, json.dumps({"task_id": task_id, "status": "SUCCESS", "result": [answer]}))
    thread.join(10)
    assert [(r["id"], r["status"], r["stdout"]) for r in received] == [("a", "ok", "1\n")]
    assert time.monotonic() - pushed < 1.5  # woken by the push, not by its next wait's end
    assert client.keys(REPLY_PREFIX + "*") == []  # the read reply was removed
    client.close()


@pytest.mark.check  # the quick tier's farm round trip: Redis, a worker node, the client
def test_one_job_round_trip_through_real_workers(workers, farm) -> None:
    workers.start()
    results = [farm.score([{"id": f"p{i}", "env": "program", "code": f"print({i})"}])[0] for i in range(20)]
    assert [(r["status"], r["stdout"]) for r in results] == [("ok", f"{i}\n") for i in range(20)]


def test_concurrent_batches_from_threads_each_get_their_own_results(workers, farm) -> None:
    workers.start()
    outcome: dict[int, list[Any]] = {}

    def batch(n: int) -> None:
        jobs = sleepy_jobs(15, 0.01, prefix=f"t{n}-")
        for job in jobs:
            job["value"] = f"{n}:{job['id']}"
        outcome[n] = [jobs, farm.score(jobs, deadline_s=120)]

    threads = [threading.Thread(target=batch, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(outcome) == list(range(8))
    for n, (jobs, results) in outcome.items():
        assert_each_once(jobs, results)
        assert [r["value"] for r in results] == [f"{n}:{j['id']}" for j in jobs]


def test_concurrent_batches_from_asyncio_tasks_each_get_their_own_results(redis_server, workers) -> None:
    workers.start()

    async def main() -> list[tuple[list[Any], list[Any]]]:
        async with AsyncFarm(settings=client_settings(redis_server.url)) as client:

            async def batch(n: int) -> tuple[list[Any], list[Any]]:
                jobs = [{**job, "value": n} for job in sleepy_jobs(10, 0.01, prefix=f"a{n}-")]
                return jobs, await client.score(jobs)

            outcome = await asyncio.gather(*(batch(n) for n in range(16)))
            streamed = [index async for index, _ in client.stream(sleepy_jobs(12, 0.0, prefix="s"))]
            assert sorted(streamed) == list(range(12))
            ordered = [r["id"] async for r in client.iter_ordered(sleepy_jobs(6, 0.0, prefix="o"))]
            assert ordered == [f"o{i}" for i in range(6)]
            return outcome

    outcome = asyncio.run(main())
    for n, (jobs, results) in enumerate(outcome):
        assert_each_once(jobs, results)
        assert {r["value"] for r in results} == {n}


def test_an_infra_error_answer_is_scored_again_within_the_batch(workers, farm, tmp_path: Path) -> None:
    workers.start()
    log = str(tmp_path / "tries.log")
    # Distinct jobs (`n`), so that none rides as a duplicate of another.
    once = [{"id": f"once{i}", "env": "flaky", "fail_times": 1, "tries_log": log, "n": i} for i in range(5)]
    always = {"id": "always", "env": "flaky", "fail_times": 100, "tries_log": log}
    results = farm.score([*once, always])
    assert [(r["status"], r.get("tries")) for r in results[:5]] == [("ok", 2)] * 5
    assert results[5]["status"] == "infra_error" and results[5]["infra"] is True
    tries = Path(log).read_text().split()
    assert tries.count("always") == 1 + farm.settings.job_retries  # bounded, then infra_error
    assert farm.last_stats.retried_jobs == 5 + farm.settings.job_retries


def test_publishing_while_redis_is_down_waits_for_it(redis_server, workers, farm) -> None:
    workers.start()
    redis_server.stop()
    jobs = sleepy_jobs(20, 0.01)
    received: list[Any] = []
    thread = threading.Thread(target=lambda: received.extend(farm.score(jobs, deadline_s=120)))
    thread.start()
    time.sleep(3.0)  # the producer keeps trying to publish meanwhile
    assert thread.is_alive() and received == []
    redis_server.start()
    thread.join(60)
    assert_each_once(jobs, received)


PRODUCER = """
import sys
sys.path[:0] = {paths!r}
from farm_support import client_settings, sleepy_jobs
from evalfarm.broker.farm import Farm
with Farm(settings=client_settings({url!r}), progress=False) as farm:
    for n, _ in enumerate(farm.stream(sleepy_jobs(200, 0.02))):
        if n == 5:
            print("streaming", flush=True)
"""


def test_a_producer_killed_mid_batch_leaves_nothing_in_redis_after_the_reply_ttl(
    redis_server, workers
) -> None:
    # What is under test is the bound on what a dead producer leaves behind: the reply list's TTL,
    # shortened here so the test need not wait out the default ten minutes.
    workers.start(EVALFARM_REPLY_TTL_S="3")
    script = PRODUCER.format(paths=[str(TESTS), str(ROOT)], url=redis_server.url)
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) as producer:
        assert producer.stdout is not None and producer.stdout.readline() == "streaming\n"
        os.kill(producer.pid, signal.SIGKILL)
    client = redis.Redis.from_url(redis_server.url)
    queues = ["code", *(f"code:{p}" for p in range(1, 10))]
    wait_for(lambda: sum(client.llen(q) for q in queues) == 0 and not client.hlen("unacked"), 60, "drained")
    wait_for(lambda: client.keys(REPLY_PREFIX + "*") == [], 10, "the reply list expired")
    assert client.keys("celery-task-meta-*") == []
    client.close()


def test_the_audit_finds_only_tasks_the_farm_does_not_hold(redis_server) -> None:
    from evalfarm.broker.audit import audit_keys, locate
    from evalfarm.broker.keys import UNACKED_KEY

    client = redis.Redis.from_url(redis_server.url)
    keys = audit_keys(client_settings(redis_server.url))
    held = json.dumps([{"headers": {"id": "evalfarm-aa11"}, "body": "Zm9v"}, "code", "code"])
    client.hset(UNACKED_KEY, "tag-1", held)
    assert locate(client, keys, ["evalfarm-aa11", "evalfarm-bb22"]) == {"evalfarm-aa11"}
    client.lpush("code:6", "a queued message")  # a task may be queued: the audit cannot tell
    assert locate(client, keys, ["evalfarm-bb22"]) is None
    client.close()


@pytest.mark.slow
def test_a_task_lost_between_queue_and_node_is_published_again(redis_server, workers, farm) -> None:
    # A task vanishes as when a node dies between kombu's BRPOP and its unacked record: it is taken
    # off the queue by hand, with no worker running yet. Default audit timings (two audits).
    client = redis.Redis.from_url(redis_server.url)
    jobs = sleepy_jobs(3, 0.0)
    received: list[Any] = []
    thread = threading.Thread(target=lambda: received.extend(farm.score(jobs, deadline_s=300)))
    thread.start()
    wait_for(lambda: bool(client.llen("code:6")), 10, "the task published")
    take_published_task(client)
    workers.start()
    thread.join(3 * farm.settings.lost_task_audit_s + 30)
    assert_each_once(jobs, received)
    assert farm.last_stats.lost_tasks == 1
    client.close()
