"""The farm under failure: dead children, dead nodes, a restarted Redis, bad messages, killer jobs.

Real Redis (a private one per test, on a free port) and real Celery worker nodes as subprocesses.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import farm_support
import pytest
import redis
from farm_support import assert_each_once, client_settings, kill_node, pool_children, sleepy_jobs, wait_for

from evalfarm.broker.app import SCORE_CHUNK, make_app
from evalfarm.broker.farm import Farm

# Fixtures of the farm's test support: a private Redis, worker nodes on it, a producer client.
redis_server = farm_support.redis_server
workers = farm_support.workers
farm = farm_support.farm

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(180)]


def test_results_stream_once_each_and_in_order(redis_server, workers, farm) -> None:
    workers.start()
    with Farm(settings=client_settings(redis_server.url, farm_processes=None), progress=False) as sizing:
        assert sizing.processes() == 2  # as the node advertises its pool
    jobs = sleepy_jobs(40, 0.01)
    seen = [index for index, _ in farm.stream(jobs)]
    assert sorted(seen) == list(range(len(jobs)))
    assert_each_once(jobs, farm.score(jobs))
    assert farm.last_stats.messages >= 8  # at least 4 per pool process


def _stream_with_a_fault(farm: Farm, fault: Any) -> None:
    """Stream 60 jobs, call `fault()` once 10 results are in; every job must come back exactly once."""
    jobs = sleepy_jobs(60, 0.05)
    results: dict[int, Any] = {}
    for index, result in farm.stream(jobs):
        assert index not in results
        results[index] = result
        if len(results) == 10:
            fault()
    assert_each_once(jobs, [results[i] for i in range(len(jobs))])


def test_sigkill_pool_child_mid_batch(workers, farm) -> None:
    node = workers.start()
    _stream_with_a_fault(farm, lambda: os.kill(pool_children(node)[0], signal.SIGKILL))
    assert node.alive


def test_sigkill_whole_node_mid_batch(workers, farm) -> None:
    first = workers.start(name="first@localhost")

    def replace_the_node() -> None:
        kill_node(first)  # its reserved chunks sit unacked until the visibility timeout
        workers.start(name="second@localhost")

    _stream_with_a_fault(farm, replace_the_node)


def test_sigterm_finishes_or_requeues_in_flight_work(workers, farm) -> None:
    first = workers.start(name="first@localhost")
    jobs = sleepy_jobs(40, 0.1)
    results: dict[int, Any] = {}
    for index, result in farm.stream(jobs):
        results[index] = result
        if len(results) == 6:
            first.stop(grace_s=20.0)  # warm shutdown: running chunks finish, reserved ones go back
            workers.start(name="second@localhost")
    assert_each_once(jobs, [results[i] for i in range(len(jobs))])


def test_redis_restart_mid_batch(redis_server, workers, farm) -> None:
    workers.start()

    def restart_redis() -> None:
        redis_server.stop()  # SIGTERM: Redis writes its AOF out before exiting
        time.sleep(1.0)
        redis_server.start()

    _stream_with_a_fault(farm, restart_redis)


def test_job_that_always_kills_its_worker_ends_as_infra_error(workers, farm) -> None:
    node = workers.start()
    jobs = sleepy_jobs(20, 0.01)
    jobs.insert(7, {"id": "killer", "env": "crash"})
    results = farm.score(jobs)
    killer = results[7]
    assert killer["id"] == "killer"
    assert killer["status"] == "infra_error" and killer["infra"] is True and killer["reward"] is None
    assert "WorkerLostError" in killer["error"]
    others = results[:7] + results[8:]
    assert_each_once(jobs[:7] + jobs[8:], others)
    assert node.alive


def test_a_channel_closed_after_its_connection_leaves_its_messages_to_liveness(redis_server) -> None:
    """What a node's consumer does after a lost connection: collect the connection, then close it,
    which closes its default channel again with no connection behind it. That must not raise out of
    the event loop (it stopped the node), and the unacked message must stay restorable."""
    from kombu import Connection, Exchange, Queue

    connection = Connection(redis_server.url, transport="evalfarm.broker.transport:Transport",
                            transport_options={"evalfarm_holder": "node-a"})  # fmt: skip
    channel = connection.default_channel
    queue = Queue("code", Exchange("code", type="direct"), routing_key="code")
    connection.Producer(channel).publish(
        {"jobs": []}, exchange=queue.exchange, routing_key="code", declare=[queue]
    )
    assert channel.basic_get("code", no_ack=False) is not None  # delivered, unacked, held by node-a
    connection.transport.client = None  # what collect() leaves behind: the transport's client gone
    channel.close()  # kombu's second close of the default channel: no AttributeError
    client = redis.Redis.from_url(redis_server.url)
    [tag] = client.smembers("evalfarm:held:node-a")
    assert client.hexists("unacked", tag)  # still restorable, by the node's liveness


def test_malformed_messages_are_answered_or_logged_and_the_worker_keeps_consuming(
    redis_server, workers, farm
) -> None:
    node = workers.start()
    client = redis.Redis.from_url(redis_server.url)
    client.lpush("code", b"\x00 not json at all {")  # not even a kombu envelope
    client.lpush("code", b'{"body": "!!", "headers": {}, "properties": {}}')  # no task, bad body
    app = make_app(client_settings(redis_server.url))
    bad_args = app.send_task(SCORE_CHUNK, args=["not a list of jobs"], queue="code")
    mixed = app.send_task(
        SCORE_CHUNK,
        args=[[5, {"env": "sleepy"}, {"id": "bad-env", "env": "nope"}, {"id": "fine", "env": "sleepy"}]],
        queue="code",
    )
    unknown = app.send_task("evalfarm.no_such_task", args=[[{"id": "x"}]], queue="code")
    assert bad_args.get(timeout=30) == []
    answers = mixed.get(timeout=30)
    assert [(a["id"], a["status"]) for a in answers] == [
        (None, "invalid_job"),
        (None, "invalid_job"),
        ("bad-env", "invalid_job"),
        ("fine", "ok"),
    ]
    jobs = sleepy_jobs(20, 0.01)
    assert_each_once(jobs, farm.score(jobs))
    assert unknown.state == "FAILURE"  # rejected by the worker, which logged it
    assert node.alive
    app.close()
    client.close()


def test_priority_lane_goes_ahead_of_background_work(redis_server, workers) -> None:
    settings = client_settings(redis_server.url, farm_processes=1)
    finished: dict[str, float] = {}

    def run(name: str, jobs: list[dict[str, Any]], priority: bool) -> None:
        with Farm(settings=settings, progress=False) as client:
            assert_each_once(jobs, client.score(jobs, priority=priority))
        finished[name] = time.monotonic()

    background = threading.Thread(target=run, args=("background", sleepy_jobs(40, 0.05, "bg"), False))
    background.start()
    queued = redis.Redis.from_url(redis_server.url)
    wait_for(lambda: sum(queued.llen(k) for k in queued.keys("code*")) >= 4, 10, "background queued")
    urgent = threading.Thread(target=run, args=("urgent", sleepy_jobs(4, 0.05, "hi"), True))
    urgent.start()
    wait_for(lambda: queued.llen("code") >= 1, 10, "urgent queued")
    workers.start(concurrency=1)
    urgent.join(60)
    background.join(60)
    queued.close()
    assert finished["urgent"] < finished["background"]


def test_deadline_answers_unfinished_jobs_as_infra_error(redis_server, farm) -> None:
    # No worker at all: nothing can be scored, and the batch still ends on time with every job.
    jobs = sleepy_jobs(5)
    started = time.monotonic()
    results = farm.score(jobs, deadline_s=1.0)
    assert time.monotonic() - started < 5
    assert [r["id"] for r in results] == [j["id"] for j in jobs]
    assert all(r["status"] == "infra_error" and r.is_infra for r in results)
