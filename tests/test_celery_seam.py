"""Each private part of Celery, kombu and billiard the farm relies on (`broker/celery_internals.py`),
proven against the installed releases: a release that changes one fails the test named for it.

Each override's signature is pinned, and its behaviour shown in a round trip through the real
library (a private Redis, a real prefork pool, a real worker running in this process); what the
farm reads straight from Redis (queue lists, unacked records, a failed task's exception) is read
back as kombu and Celery wrote it. Spies are subclasses that record a call and pass it on.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import inspect
import json
import os
import select
import signal
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import farm_support
import pytest
import redis
from billiard.exceptions import TimeLimitExceeded, WorkerLostError
from celery import Celery, platforms, signals
from celery.app.task import Context
from celery.backends import base as backend_base
from celery.backends import redis as redis_backends
from celery.concurrency import asynpool, prefork
from celery.contrib.testing.worker import start_worker
from celery.exceptions import SecurityWarning
from celery.worker.consumer import Consumer as CeleryConsumer
from celery.worker.worker import WorkController
from farm_support import ROOT, client_settings, wait_for
from kombu import Connection, Exchange, Queue
from kombu.asynchronous import Hub
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual

from evalfarm.broker import celery_internals, replies, transport
from evalfarm.broker.app import make_app, transport_options
from evalfarm.broker.audit import audit_keys, locate
from evalfarm.broker.backend import ReplyBackend
from evalfarm.broker.chunking import Chunk
from evalfarm.broker.keys import UNACKED_INDEX_KEY, UNACKED_KEY, held_key, queue_keys
from evalfarm.broker.producer import Producer
from evalfarm.broker.run import SCORE_CHUNK, Outgoing, _killed_by_a_job, failure_text
from evalfarm.broker.settings import WorkerSettings
from evalfarm.workers.embedded import free_port
from evalfarm.workers.node import node_config
from evalfarm.workers.pool import MAINTAIN_EVERY_S, TaskPool

redis_server = farm_support.redis_server

SEAM = "evalfarm.broker.celery_internals"
FOREIGN = ("celery", "kombu", "billiard", "vine")
HOLDER = "seam-node#1"
CODE = Queue("code", Exchange("code", type="direct"), routing_key="code")
JOBS = [{"id": "a", "env": "program", "code": "print(1)"}]
NOT_ENVELOPES = [b"\x00 not json {", b"[1, 2]", b'{"no": "envelope"}', b'"text"', b"12"]


# -- signatures ------------------------------------------------------------------------------------

# (class, name, its signature): what the farm overrides or calls, as Celery and kombu define it.
SIGNATURES = [
    (kombu_redis.QoS, "append", "(self, message, delivery_tag)"),
    (virtual.QoS, "append", "(self, message, delivery_tag)"),
    (kombu_redis.QoS, "restore_unacked", "(self, client=None)"),
    (kombu_redis.QoS, "ack", "(self, delivery_tag)"),
    (kombu_redis.QoS, "reject", "(self, delivery_tag, requeue=False)"),
    (virtual.QoS, "ack", "(self, delivery_tag)"),
    (kombu_redis.QoS, "_remove_from_indices", "(self, delivery_tag, pipe=None)"),
    (kombu_redis.QoS, "restore_by_tag", "(self, tag, client=None, leftmost=False)"),
    (kombu_redis.QoS, "pipe_or_acquire", "(self, pipe=None, client=None)"),
    (kombu_redis.Channel, "conn_or_acquire", "(self, client=None)"),
    (kombu_redis.Channel, "_create_client", "(self, asynchronous=False)"),
    (kombu_redis.Channel, "get_table", "(self, exchange)"),
    (kombu_redis.Channel, "_brpop_read", "(self, **options)"),
    (kombu_redis.Channel, "_get", "(self, queue)"),
    (redis_backends.RedisBackend, "_store_result",
     "(self, task_id, result, state, traceback=None, request=None, **kwargs)"),
    (backend_base.Backend, "store_result",
     "(self, task_id, result, state, traceback=None, request=None, **kwargs)"),
    (redis_backends.RedisBackend, "ensure", "(self, fun, args, **policy)"),
    (asynpool.AsynPool, "did_start_ok", "(self)"),
    (asynpool.AsynPool, "maintain_pool", "(self)"),
    (prefork.TaskPool, "did_start_ok", "(self)"),
    (CeleryConsumer, "on_send_event_buffered", "(self)"),
    (CeleryConsumer, "_flush_events", "(self)"),
    (Hub, "call_later", "(self, delay, callback, *args)"),
    (Hub, "call_repeatedly", "(self, delay, callback, *args)"),
    (WorkController, "stop", "(self, in_sighandler=False, exitcode=None)"),
]  # fmt: skip

# (the seam's class, the foreign class whose method it overrides, the method)
OVERRIDES = [
    (celery_internals.RedisQoS, kombu_redis.QoS, "append"),
    (celery_internals.RedisQoS, kombu_redis.QoS, "restore_unacked"),
    (celery_internals.RedisQoS, kombu_redis.QoS, "ack"),
    (celery_internals.RedisQoS, kombu_redis.QoS, "reject"),
    (celery_internals.RedisQoS, kombu_redis.QoS, "_remove_from_indices"),
    (celery_internals.RedisChannel, kombu_redis.Channel, "conn_or_acquire"),
    (celery_internals.RedisChannel, kombu_redis.Channel, "get_table"),
    (celery_internals.RedisChannel, kombu_redis.Channel, "_brpop_read"),
    (celery_internals.RedisChannel, kombu_redis.Channel, "_get"),
    (celery_internals.RedisBackend, redis_backends.RedisBackend, "_store_result"),
    (celery_internals.AsynPool, asynpool.AsynPool, "did_start_ok"),
    (celery_internals.Consumer, CeleryConsumer, "on_send_event_buffered"),
]


def named(owner: Any, name: str) -> str:
    return f"{owner.__module__.rpartition('.')[2]}.{owner.__name__}.{name}"


@pytest.mark.parametrize(
    ("owner", "name", "expected"), SIGNATURES, ids=[named(o, n) for o, n, _ in SIGNATURES]
)
def test_the_signatures_the_farm_relies_on(owner: Any, name: str, expected: str) -> None:
    assert str(inspect.signature(getattr(owner, name))) == expected


@pytest.mark.parametrize(("seam", "base", "name"), OVERRIDES, ids=[named(b, n) for _, b, n in OVERRIDES])
def test_each_override_takes_what_its_base_is_given(seam: type, base: type, name: str) -> None:
    """The override's leading parameters are its base's, by name and kind (it may add defaults)."""
    ours = list(inspect.signature(getattr(seam, name)).parameters.values())
    theirs = list(inspect.signature(getattr(base, name)).parameters.values())
    assert [(p.name, p.kind) for p in ours[: len(theirs)]] == [(p.name, p.kind) for p in theirs]
    added = [p for p in ours[len(theirs) :] if p.kind != p.VAR_KEYWORD]
    assert all(p.default is not p.empty for p in added)


def test_the_pools_timers_are_a_property_celery_reads() -> None:
    assert isinstance(inspect.getattr_static(asynpool.AsynPool, "timers"), property)
    assert isinstance(inspect.getattr_static(celery_internals.AsynPool, "timers"), property)


# -- the seam is the one way in ----------------------------------------------------------------------

# What the rest of the farm may import of Celery and kombu: the app, tasks, signals, states, exceptions
# and kombu's entities. The rest (transports, backends, pools, the worker) only through the seam.
PUBLIC = {"celery", "celery.exceptions", "celery.signals", "celery.states", "kombu"}
KNOBS = {"QoS", "Channel", "Pool"}  # the classes kombu's and Celery's classes build on, named by subclasses


def farm_modules() -> Iterator[tuple[str, Path]]:
    """(module name, path) of every module of the farm but the seam."""
    for room in ("sandbox", "envs", "tasks", "broker", "gateway", "trainers", "workers", "evalfarm"):
        folder = ROOT / room
        for path in sorted(folder.rglob("*.py")):
            if "sandbox_lib" in path.parts:
                continue
            parts = path.relative_to(folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            name = ".".join(("evalfarm", *(() if room == "evalfarm" else (room,)), *parts))
            if name != SEAM:
                yield name, path


def foreign_imports(path: Path) -> set[str]:
    """The Celery, kombu, billiard and vine modules `path` imports, anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {name for name in found if name.split(".")[0] in FOREIGN}


def test_only_the_seam_imports_celerys_and_kombus_internals() -> None:
    wrong = {name: sorted(foreign_imports(path) - PUBLIC) for name, path in farm_modules()}
    assert {name: found for name, found in wrong.items() if found} == {}


def seam_subclasses() -> list[type]:
    """The farm's classes built on one of the seam's."""
    import importlib

    found = []
    for name, path in farm_modules():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, ast.Attribute) and getattr(base.value, "id", None) == "celery_internals"
                for base in node.bases
            ):
                found.append(getattr(importlib.import_module(name), node.name))
    return found


def test_the_farms_classes_fill_the_seams_hooks_and_override_nothing_of_celery_or_kombu() -> None:
    classes = seam_subclasses()
    assert {cls.__name__ for cls in classes} >= {
        "QoS", "Channel", "Transport", "SentinelChannel", "SentinelTransport", "ReplyBackend",
        "SentinelReplyBackend", "AsynPool", "TaskPool", "Consumer",
    }  # fmt: skip
    for cls in classes:
        foreign = set().union(*(vars(k) for k in cls.__mro__ if k.__module__.split(".")[0] in FOREIGN))
        seam = set().union(*(vars(k) for k in cls.__mro__ if k.__module__ == SEAM))
        own = {name for name in vars(cls) if not (name.startswith("__") and name.endswith("__"))}
        assert own & foreign <= KNOBS, cls
        assert own & KNOBS <= seam, cls


# -- helpers --------------------------------------------------------------------------------------


@contextlib.contextmanager
def connected(url: str, on: Any = "evalfarm.broker.transport:Transport", holder: str | None = HOLDER,
              **options: Any) -> Iterator[Connection]:  # fmt: skip
    """A kombu connection on transport `on` with the farm's transport options (and a holder)."""
    given = {**transport_options(client_settings(url)), **options}
    if holder:
        given["evalfarm_holder"] = holder
    connection = Connection(url, transport=on, transport_options=given)
    try:
        yield connection
    finally:
        connection.release()


def publish(connection: Connection, body: Any, priority: int = 6) -> None:
    connection.Producer().publish(body, exchange=CODE.exchange, routing_key="code", declare=[CODE],
                                  priority=priority)  # fmt: skip


def publish_farm_tasks(url: str, tasks: list[str], reply_key: str = "") -> list[str]:
    """Publish one task per name as the farm's producer does (priority 6); their ids, in order."""
    producer = Producer(client_settings(url))
    try:
        run = producer.new_run(JOBS, 60)
        outgoing = [Outgoing(task, [JOBS], Chunk("code", (0,), 0.0)) for task in tasks]
        producer.publish(run, outgoing, 6, reply_key or replies.new_reply_key())
        return list(run.pending)
    finally:
        producer.close()


def unacked_records(client: redis.Redis) -> tuple[int, int, int]:
    """How many messages the unacked hash, its index and the node's held set hold."""
    return client.hlen(UNACKED_KEY), client.zcard(UNACKED_INDEX_KEY), client.scard(held_key(HOLDER))


def tags_of(*messages: Any) -> list[str]:
    return [message.delivery_tag for message in messages]


def body_of(raw: bytes) -> Any:
    return json.loads(base64.b64decode(json.loads(raw)["body"]))


class SpyQoS(transport.QoS):
    """The farm's QoS, recording how kombu calls the methods the seam overrides."""

    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def append(self, *args: Any, **kwargs: Any) -> None:
        self.calls.append(("append", args, kwargs))
        super().append(*args, **kwargs)

    def restore_unacked(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(("restore_unacked", args, kwargs))
        return super().restore_unacked(*args, **kwargs)

    def _remove_from_indices(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(("_remove_from_indices", args, kwargs))
        return super()._remove_from_indices(*args, **kwargs)


class SpyChannel(transport.Channel):
    """The farm's channel, recording how kombu calls the methods the seam overrides."""

    QoS = SpyQoS

    def _brpop_read(self, *args: Any, **kwargs: Any) -> bool:
        SpyQoS.calls.append(("_brpop_read", args, kwargs))
        return super()._brpop_read(*args, **kwargs)

    def _get(self, *args: Any, **kwargs: Any) -> Any:
        SpyQoS.calls.append(("_get", args, kwargs))
        return super()._get(*args, **kwargs)


class SpyTransport(transport.Transport):
    Channel = SpyChannel


def calls_of(name: str) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    return [(args, kwargs) for method, args, kwargs in SpyQoS.calls if method == name]


@pytest.fixture(autouse=True)
def no_worker_state_left_behind() -> Iterator[None]:
    """A worker started in this process (as several tests here do) marks the process as a worker's,
    where `AsyncResult.get()` refuses to block; the tests after these run producers in it."""
    yield
    from celery import result

    result._set_task_join_will_block(False)


@pytest.fixture
def spy() -> Iterator[type[SpyTransport]]:
    SpyQoS.calls.clear()
    yield SpyTransport
    SpyQoS.calls.clear()


@pytest.fixture
def client(redis_server: Any) -> Iterator[redis.Redis]:
    connection = redis.Redis.from_url(redis_server.url)
    yield connection
    connection.close()


# -- kombu's Redis layout, as the farm reads it -------------------------------------------------------


@pytest.mark.integration
def test_kombu_puts_each_priority_of_a_queue_on_the_list_the_farm_reads(redis_server, client) -> None:
    lists = queue_keys(client_settings(redis_server.url))["code"]
    served: list[int] = []
    with connected(redis_server.url) as connection:
        for priority in reversed(range(10)):
            publish(connection, {"priority": priority}, priority)
        assert {key.decode() for key in client.keys("code*")} == set(lists)
        assert [body_of(client.lindex(key, 0)) for key in lists] == [{"priority": p} for p in range(10)]
        # A worker's BRPOP serves lower numbers first: the farm's priority lane (0) before
        # background work (6).
        with connection.Consumer(CODE, callbacks=[lambda body, message: (served.append(body["priority"]),
                                                                         message.ack())]):  # fmt: skip
            while len(served) < 10:
                connection.drain_events(timeout=10)
    assert served == list(range(10))


@pytest.mark.integration
def test_the_farms_unacked_record_is_the_one_kombu_writes(redis_server, client, spy) -> None:
    """One message delivered by kombu's own transport, one by the farm's: the same record, in the
    keys the farm names, scored by delivery time; the farm's also held by its node."""
    before = time.time()
    with connected(redis_server.url, spy) as farm, connected(redis_server.url, "redis", None) as stock:
        publish(farm, {"job": 1})
        publish(stock, {"job": 1})
        ours = farm.default_channel.basic_get("code", no_ack=False)
        theirs = stock.default_channel.basic_get("code", no_ack=False)
        assert calls_of("append") == [((ours, ours.delivery_tag), {})]
        records = [json.loads(client.hget(UNACKED_KEY, m.delivery_tag)) for m in (ours, theirs)]
        for record, message in zip(records, (ours, theirs), strict=True):
            assert record[0]["properties"].pop("delivery_tag") == message.delivery_tag
            assert before <= client.zscore(UNACKED_INDEX_KEY, message.delivery_tag) <= time.time()
        assert records[0] == records[1]
        assert records[0][1:] == ["code", "code"] and body_of(json.dumps(records[0][0])) == {"job": 1}
        assert client.smembers(held_key(HOLDER)) == {ours.delivery_tag.encode()}
        ours.ack()
        theirs.ack()
    assert unacked_records(client) == (0, 0, 0)


@pytest.mark.integration
def test_kombu_keeps_unacked_records_where_the_transport_options_name_them(redis_server, client) -> None:
    with connected(
        redis_server.url, unacked_key="seam-unacked", unacked_index_key="seam-index"
    ) as connection:
        publish(connection, {"job": 1})
        message = connection.default_channel.basic_get("code", no_ack=False)
        assert client.hexists("seam-unacked", message.delivery_tag)
        assert client.zscore("seam-index", message.delivery_tag) is not None
        assert not client.exists(UNACKED_KEY, UNACKED_INDEX_KEY)
        message.ack()


@pytest.mark.integration
def test_the_audit_finds_a_delivered_task_by_its_id_in_kombus_unacked_record(redis_server, client) -> None:
    keys = audit_keys(client_settings(redis_server.url))
    [task_id] = publish_farm_tasks(redis_server.url, [SCORE_CHUNK])
    assert locate(client, keys, [task_id]) is None  # queued: the audit cannot tell
    with connected(redis_server.url) as node:
        message = node.default_channel.basic_get("code", no_ack=False)
        assert locate(client, keys, [task_id, "evalfarm-0123abcd"]) == {task_id}
        message.ack()
        assert locate(client, keys, [task_id]) == set()


# -- kombu's QoS: recording, removing, restoring ------------------------------------------------------


@pytest.mark.integration
def test_every_way_out_of_the_unacked_records_goes_through_remove_from_indices(
    redis_server, client, spy
) -> None:
    with connected(redis_server.url, spy) as connection:
        for n in range(4):
            publish(connection, {"job": n})
        channel = connection.default_channel
        acked, rejected, requeued, restored = (channel.basic_get("code", no_ack=False) for _ in range(4))
        SpyQoS.calls.clear()
        acked.ack()
        rejected.reject(requeue=False)
        requeued.reject(requeue=True)
        celery_internals.restore_delivered(connection, restored.delivery_tag,
                                           celery_internals.redis_client(connection))  # fmt: skip
        calls = calls_of("_remove_from_indices")
        assert [args[0] for args, _ in calls] == tags_of(acked, rejected, requeued, restored)
        assert [len(args) for args, _ in calls] == [1, 1, 2, 2]  # inside restore_by_tag's transaction
        assert all(kwargs == {} for _, kwargs in calls)
        assert unacked_records(client) == (0, 0, 0)
        back = [json.loads(raw) for raw in client.lrange("code:6", 0, -1)]
        assert sorted(body_of(json.dumps(m))["job"] for m in back) == sorted(
            [requeued.payload["job"], restored.payload["job"]]
        )
        assert all(m["headers"]["redelivered"] is True for m in back)


@pytest.mark.integration
def test_a_held_message_is_put_back_once_by_kombus_restore(redis_server, client) -> None:
    """What a node's liveness does: another connection of the same holder restores a message the
    node holds; a second restore (another node, or the same one again) puts nothing more back."""
    [task_id] = publish_farm_tasks(redis_server.url, [SCORE_CHUNK])
    with connected(redis_server.url) as node, connected(redis_server.url) as liveness:
        tag = node.default_channel.basic_get("code", no_ack=False).delivery_tag
        watcher = celery_internals.redis_client(liveness)
        assert watcher.smembers(held_key(HOLDER)) == {tag.encode()}
        celery_internals.restore_delivered(liveness, tag, watcher)
        celery_internals.restore_delivered(liveness, tag, watcher)
        [raw] = client.lrange("code:6", 0, -1)
        assert json.loads(raw)["headers"]["id"] == task_id
        assert json.loads(raw)["headers"]["redelivered"] is True
        assert not client.hexists(UNACKED_KEY, tag) and client.zscore(UNACKED_INDEX_KEY, tag) is None
        assert not client.sismember(held_key(HOLDER), tag)


@pytest.mark.integration
def test_a_closing_channel_restores_its_unacked_messages_unless_its_connection_is_gone(
    redis_server, client, spy
) -> None:
    with connected(redis_server.url, spy) as connection:
        publish(connection, {"job": 1})
        connection.default_channel.basic_get("code", no_ack=False)
        connection.default_channel.close()  # kombu restores what the channel had not acked
        assert calls_of("restore_unacked") == [((), {})]
        assert client.llen("code:6") == 1 and client.hlen(UNACKED_KEY) == 0
        assert not client.exists(held_key(HOLDER))
    with connected(redis_server.url, spy) as connection:
        message = connection.default_channel.basic_get("code", no_ack=False)
        connection.transport.client = None  # what the worker's consumer leaves after a lost connection
        connection.default_channel.close()  # kombu's own body would raise AttributeError here
        assert client.hexists(UNACKED_KEY, message.delivery_tag)  # left for the node's liveness
        assert client.smembers(held_key(HOLDER)) == {message.delivery_tag.encode()}


@pytest.mark.integration
@pytest.mark.parametrize("how", ["ack", "reject", "requeue"])
def test_a_message_acked_after_its_connection_is_gone_stays_unacked_and_the_node_goes_on(
    redis_server, client, spy, how
) -> None:
    with connected(redis_server.url, spy) as connection:
        publish(connection, {"job": how})
        message = connection.default_channel.basic_get("code", no_ack=False)
        connection.transport.client = None  # the consumer reconnected; the task ended after
        {"ack": message.ack, "reject": message.reject, "requeue": message.requeue}[how]()  # no raise
        assert client.hexists(UNACKED_KEY, message.delivery_tag)  # left for the node's liveness
        assert client.smembers(held_key(HOLDER)) == {message.delivery_tag.encode()}
        assert client.llen("code:6") == 0  # not delivered twice at once
        qos = connection.default_channel.qos
        assert message.delivery_tag in qos._dirty  # kombu's virtual ack: dropped at its next flush
    with connected(redis_server.url, spy) as connection:  # and with a connection, kombu's own ack
        publish(connection, {"job": "acked"})
        message = connection.default_channel.basic_get("code", no_ack=False)
        message.ack()
        assert not client.hexists(UNACKED_KEY, message.delivery_tag)


# -- kombu's channel: malformed items, clients, bindings, options ------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("item", NOT_ENVELOPES)
def test_kombus_brpop_raises_on_a_malformed_item_and_the_farm_drops_it(
    redis_server, client, spy, item
) -> None:
    client.lpush("code", item)
    with connected(redis_server.url, "redis", None) as stock, stock.Consumer(CODE, callbacks=[]):  # noqa: SIM117
        with pytest.raises(celery_internals.MALFORMED):  # out of the worker's event loop: the node stops
            stock.drain_events(timeout=10)
    client.lpush("code", item)
    got: list[Any] = []
    with connected(redis_server.url, spy) as farm:
        publish(farm, {"job": "after"})
        with farm.Consumer(CODE, callbacks=[lambda body, message: (got.append(body), message.ack())]):
            while not got:
                farm.drain_events(timeout=10)
    assert got == [{"job": "after"}]
    assert calls_of("_brpop_read")[0] == ((), {})


@pytest.mark.integration
def test_kombus_get_raises_on_an_undecodable_item_and_the_farm_drops_it(redis_server, client, spy) -> None:
    client.lpush("code", NOT_ENVELOPES[0])
    with connected(redis_server.url, "redis", None) as stock, pytest.raises(ValueError):
        stock.default_channel.basic_get("code")
    client.lpush("code", NOT_ENVELOPES[0])
    with connected(redis_server.url, spy) as farm:
        publish(farm, {"job": "after"})
        assert farm.default_channel.basic_get("code", no_ack=True).payload == {"job": "after"}
    assert calls_of("_get") == [(("code",), {})]
    assert client.llen("code") == 0


@pytest.mark.integration
def test_one_client_serves_a_channels_commands_until_its_pool_is_replaced(redis_server) -> None:
    with connected(redis_server.url) as connection:
        channel = connection.default_channel
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is second and first.connection_pool is channel.pool
            assert first.ping()
        given = object()
        with channel.conn_or_acquire(given) as passed:
            assert passed is given
        channel._disconnect_pools()  # what kombu does when the connection drops
        with channel.conn_or_acquire() as third:
            assert third is not first and third.connection_pool is channel.pool and third.ping()


@pytest.mark.integration
def test_kombu_routes_through_get_table_and_the_farm_reads_it_sparingly(redis_server, client) -> None:
    with connected(redis_server.url) as connection:
        channel = connection.default_channel
        assert channel.get_table("code") == []  # none declared yet: not remembered
        CODE(channel).declare()
        table = channel.get_table("code")
        assert table == [("code", "", "code")]
        client.delete("_kombu.binding.code")  # kombu's binding set, gone
        assert channel.get_table("code") == table  # trusted for bindings_ttl_s
        connection.Producer().publish({"job": 1}, exchange="code", routing_key="code")  # no declare
        assert client.llen("code") == 1  # routed by the table get_table gave


@pytest.mark.integration
def test_transport_options_reach_the_channel_the_farms_holder_among_them(redis_server) -> None:
    options = transport_options(client_settings(redis_server.url))
    with connected(redis_server.url) as connection:
        channel = connection.default_channel
        assert channel.evalfarm_holder == HOLDER
        for name in ("visibility_timeout", "sep", "priority_steps", "unacked_key", "unacked_index_key",
                     "unacked_restore_interval", "queue_order_strategy"):  # fmt: skip
            assert getattr(channel, name) == options[name], name
    # The Sentinel channel keeps kombu's Sentinel options and finds the master kombu's way.
    assert set(kombu_redis.SentinelChannel.from_transport_options) <= set(
        transport.SentinelChannel.from_transport_options
    )
    assert "evalfarm_holder" in transport.SentinelChannel.from_transport_options
    assert transport.SentinelChannel._get_pool is kombu_redis.SentinelChannel._get_pool
    assert transport.SentinelTransport.Channel is transport.SentinelChannel


# -- the producer's message --------------------------------------------------------------------------


@pytest.mark.integration
def test_the_farms_message_is_celerys_protocol_2_task_message(redis_server, client) -> None:
    reply_key = replies.new_reply_key()
    task_ids = publish_farm_tasks(redis_server.url, [SCORE_CHUNK, SCORE_CHUNK], reply_key)
    app = make_app(client_settings(redis_server.url))
    amqp = app.amqp
    assert amqp.create_task_message == amqp.as_task_v2  # the farm's protocol setting: Celery's 2
    raws = client.lrange("code:6", 0, -1)[::-1]  # both, the second published with nothing declared
    assert len(raws) == 2
    for raw, task_id in zip(raws, task_ids, strict=True):
        envelope = json.loads(raw)
        args, kwargs, embed = body_of(raw)
        expected = amqp.as_task_v2(task_id, SCORE_CHUNK, [JOBS], kwargs, reply_to=reply_key,
                                   argsrepr="(jobs)", kwargsrepr="")  # fmt: skip
        assert envelope["headers"] == expected.headers
        assert expected.properties.items() <= envelope["properties"].items()
        assert [args, kwargs, embed] == json.loads(json.dumps(expected.body))
        assert envelope["properties"]["priority"] == 6 and args == [JOBS]
    app.close()


# -- Celery's backend ------------------------------------------------------------------------------


class SpyBackend(ReplyBackend):
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def _store_result(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        return super()._store_result(*args, **kwargs)


@pytest.mark.integration
def test_celery_hands_each_state_to_store_result_with_the_tasks_request(redis_server, client) -> None:
    app = make_app(client_settings(redis_server.url))
    backend = SpyBackend(app=app, url=redis_server.url)
    SpyBackend.calls.clear()
    key = replies.new_reply_key()

    def request(task_id: str) -> Context:
        return Context(id=task_id, reply_to=key)

    lost = WorkerLostError("Worker exited prematurely: signal 9 (SIGKILL) Job: 0.")
    backend.mark_as_done("evalfarm-1", [{"id": "a"}], request=request("evalfarm-1"))
    backend.mark_as_retry("evalfarm-2", lost, request=request("evalfarm-2"))
    backend.mark_as_revoked("evalfarm-3", "revoked", request=request("evalfarm-3"))
    backend.mark_as_failure("evalfarm-4", lost, request=request("evalfarm-4"))
    backend.mark_as_failure("evalfarm-5", TimeLimitExceeded(30.0), request=request("evalfarm-5"))
    with warnings.catch_warnings():  # Celery's own storage calls redis-py's deprecated SETEX
        warnings.simplefilter("ignore", DeprecationWarning)
        backend.mark_as_done("plain-1", [1])  # no reply list: Celery's own storage
    calls = SpyBackend.calls
    assert [(args[0], args[2]) for args, _ in calls] == [
        ("evalfarm-1", "SUCCESS"), ("evalfarm-2", "RETRY"), ("evalfarm-3", "REVOKED"),
        ("evalfarm-4", "FAILURE"), ("evalfarm-5", "FAILURE"), ("plain-1", "SUCCESS"),
    ]  # fmt: skip
    assert all(len(args) == 4 and set(kwargs) == {"request"} for args, kwargs in calls)
    assert calls[0][1]["request"].reply_to == key
    done, failed, timed_out = replies.decode(client.lrange(key, 0, -1))  # only outcomes are pushed
    assert done == {"task_id": "evalfarm-1", "status": "SUCCESS", "result": [{"id": "a"}]}
    assert failed["result"]["exc_type"] == "WorkerLostError" and _killed_by_a_job(failed)
    assert failure_text(failed) == "worker failed: WorkerLostError: " + str(lost)
    assert timed_out["result"]["exc_type"] == "TimeLimitExceeded" and _killed_by_a_job(timed_out)
    assert 0 < client.ttl(key) <= backend.reply_ttl_s
    assert client.keys("celery-task-meta-evalfarm-*") == []
    assert backend.get_task_meta("plain-1")["result"] == [1]
    app.close()


# -- Celery's worker, running in this process ----------------------------------------------------------


@pytest.fixture
def solo_node(redis_server: Any) -> Iterator[dict[str, Any]]:
    """A worker with the farm's node configuration (its transport with a holder, its backend, its
    consumer, task events on) on a solo pool in this process, with tasks that look at it: the
    worker, its app and what its tasks saw."""
    settings = WorkerSettings(broker_url=redis_server.url, send_task_events=True)
    app = make_app(settings)
    app.conf.update(node_config(settings))
    app.conf.broker_transport_options = {**app.conf.broker_transport_options, "evalfarm_holder": HOLDER}
    node: dict[str, Any] = {"app": app}
    watcher = redis.Redis.from_url(redis_server.url)

    @app.task(name="seam.look", shared=False)
    def look(*args: Any, **kwargs: Any) -> dict[str, Any]:
        consumer = node["worker"].consumer
        return {
            "working": sorted(celery_internals.working_delivery_tags()),
            "held": sorted(tag.decode() for tag in watcher.smembers(held_key(HOLDER))),
            "flush_pending": consumer._evalfarm_flush_pending,
            "buffered": sorted(e["type"] for e in consumer.event_dispatcher._group_buffer["task"]),
            "timers": [getattr(t.entry.fun, "__name__", "") for t in consumer.hub.timer.queue],
        }

    @app.task(name="seam.fail", shared=False)
    def fail(*args: Any, **kwargs: Any) -> None:
        raise WorkerLostError("lost on purpose")

    with start_worker(app, pool="solo", perform_ping_check=False, loglevel="CRITICAL") as worker:
        node["worker"] = worker
        yield node
    watcher.close()
    app.close()


def wait_for_replies(client: redis.Redis, key: str, count: int) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        got += replies.receive(client, key, 5.0) or []
    return got


@pytest.mark.integration
def test_a_worker_hands_the_backend_the_reply_list_its_producer_named(
    redis_server, client, solo_node
) -> None:
    key = replies.new_reply_key()
    looked, failed = publish_farm_tasks(redis_server.url, ["seam.look", "seam.fail"], key)
    answers = {reply["task_id"]: reply for reply in wait_for_replies(client, key, 2)}
    assert answers[looked]["status"] == "SUCCESS"
    assert answers[failed]["status"] == "FAILURE"
    assert answers[failed]["result"]["exc_type"] == "WorkerLostError"
    assert client.keys("celery-task-meta-*") == []


@pytest.mark.integration
def test_celerys_worker_state_holds_the_delivery_tags_the_transport_recorded(
    redis_server, client, solo_node
) -> None:
    key = replies.new_reply_key()
    publish_farm_tasks(redis_server.url, ["seam.look"], key)
    [reply] = wait_for_replies(client, key, 1)
    seen = reply["result"]
    assert len(seen["working"]) == 1 and seen["working"] == seen["held"]
    # Once the task is done (acked after its result is pushed), neither the worker nor the node has it.
    wait_for(lambda: celery_internals.working_delivery_tags() == set(), 30, "the request gone")
    wait_for(lambda: not client.exists(held_key(HOLDER)), 30, "the message acked")


@pytest.mark.integration
def test_celery_calls_the_consumers_hook_per_buffered_event_and_the_farm_flushes_them_later(
    redis_server, client, solo_node
) -> None:
    events = client.pubsub()
    events.psubscribe("*celeryev/task.*")
    key = replies.new_reply_key()
    [task_id] = publish_farm_tasks(redis_server.url, ["seam.look"], key)
    [reply] = wait_for_replies(client, key, 1)
    seen = reply["result"]
    # While the task ran, its first events were buffered and a flush was due on the event loop.
    assert seen["buffered"] == ["task-received", "task-started"]
    assert seen["flush_pending"] is True and "_evalfarm_flush" in seen["timers"]
    messages: list[Any] = []
    deadline = time.monotonic() + 30
    while not messages and time.monotonic() < deadline:
        message = events.get_message(timeout=1.0)
        if message and message["type"] == "pmessage":
            messages.append(message)
    # Then one message carried them all, the task's end too.
    assert messages[0]["channel"].endswith(b"celeryev/task.multi")
    published = json.loads(base64.b64decode(json.loads(messages[0]["data"])["body"]))
    assert [(e["type"], e["uuid"]) for e in published] == [
        ("task-received", task_id), ("task-started", task_id), ("task-succeeded", task_id),
    ]  # fmt: skip
    events.close()


@pytest.mark.integration
def test_a_worker_that_gives_up_on_its_broker_keeps_its_exit_code() -> None:
    """What `evalfarm worker` exits with: Celery's worker_main drops it, the worker keeps it."""
    settings = WorkerSettings(broker_url=f"redis://127.0.0.1:{free_port()}/0", broker_connect_retries=1)
    app = make_app(settings)
    started: list[Any] = []

    def record(sender: Any = None, **_: Any) -> None:
        started.append(sender)

    signals.worker_init.connect(record, weak=False)
    try:
        worker = app.WorkController(hostname="seam@test", pool_cls="solo", concurrency=1, loglevel="CRITICAL")
        worker.start()
    finally:
        signals.worker_init.disconnect(record)
        app.close()
    assert started == [worker]
    assert celery_internals.exit_code(worker) == 1


def test_a_worker_stopped_without_an_exit_code_exits_0() -> None:
    app = Celery("seam", set_as_current=False, broker="memory://")
    worker = app.WorkController(hostname="seam@test", pool_cls="solo", concurrency=1)
    assert celery_internals.exit_code(worker) == 0
    worker.stop(exitcode=3)
    assert celery_internals.exit_code(worker) == 3
    app.close()


# -- Celery's prefork pool ---------------------------------------------------------------------------


class RecordingHub(Hub):
    """kombu's event loop hub, recording the timers a pool asks it for (the loop never runs here)."""

    def __init__(self) -> None:
        super().__init__()
        self.repeated: list[tuple[float, Callable[..., Any]]] = []

    def call_repeatedly(self, delay: float, callback: Callable[..., Any], *args: Any) -> Any:
        self.repeated.append((delay, callback))
        return super().call_repeatedly(delay, callback, *args)


@contextlib.contextmanager
def started_pool(pool_class: type, exit_code_of_child: int | None = None) -> Iterator[tuple[Any, Any, int]]:
    """A real two-process prefork pool of `pool_class` (a TaskPool), registered with a hub: the
    task pool, the hub, and a pipe on which each child writes "<pid> <index>" as it starts. A child
    of index 1 exits with `exit_code_of_child` as it starts, if given."""
    read_end, write_end = os.pipe()

    def child_started(**_: Any) -> None:
        index = celery_internals.pool_child_index()
        os.write(write_end, f"{os.getpid()} {index}\n".encode())
        if exit_code_of_child is not None and index == 1:
            os._exit(exit_code_of_child)

    signals.worker_process_init.connect(child_started, weak=False)
    app = Celery("seam", set_as_current=False)
    pool = pool_class(limit=2, app=app, initargs=(app, "seam@test"), threads=False)
    hub = RecordingHub()
    try:
        pool.start()
        pool.register_with_event_loop(hub)
        yield pool, hub, read_end
    finally:
        signals.worker_process_init.disconnect(child_started)
        pool.terminate()
        hub.close()
        os.close(read_end)
        os.close(write_end)
        app.close()


def started_children(read_end: int, count: int) -> dict[int, int]:
    """pid -> index of the next `count` children to start (read from their reports)."""
    text = b""
    deadline = time.monotonic() + 60
    while text.count(b"\n") < count and time.monotonic() < deadline:
        if select.select([read_end], [], [], 1.0)[0]:
            text += os.read(read_end, 4096)
    return {int(pid): int(index) for pid, index in (line.split() for line in text.decode().splitlines())}


def wait_exited(child: Any) -> int:
    deadline = time.monotonic() + 30
    while child.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.01)
    return child.exitcode


@pytest.mark.integration
def test_the_pool_is_maintained_on_the_farms_period_and_a_replacement_child_keeps_its_index() -> None:
    with started_pool(TaskPool) as (pool, hub, reports):
        children = pool._pool._pool
        assert started_children(reports, 2) == {child.pid: child.index for child in children}
        assert sorted(child.index for child in children) == [0, 1]
        maintenance = [(delay, fun) for delay, fun in hub.repeated if fun == pool._pool.maintain_pool]
        assert maintenance == [(MAINTAIN_EVERY_S, pool._pool.maintain_pool)]
        victim = children[0]
        os.kill(victim.pid, signal.SIGKILL)
        assert wait_exited(victim) == -signal.SIGKILL
        maintenance[0][1]()  # what the event loop runs every MAINTAIN_EVERY_S
        assert victim not in pool._pool._pool
        assert started_children(reports, 1) == {
            child.pid: child.index for child in pool._pool._pool if child.index == victim.index
        }


@pytest.mark.integration
def test_a_child_killed_at_start_up_fails_celerys_start_check_but_not_the_farms() -> None:
    for pool_class, started_ok in ((prefork.TaskPool, False), (TaskPool, True)):
        with started_pool(pool_class) as (pool, _, reports):
            started_children(reports, 2)
            victim = pool._pool._pool[0]
            os.kill(victim.pid, signal.SIGKILL)
            assert wait_exited(victim) == -signal.SIGKILL
            assert pool.did_start_ok() is started_ok, pool_class  # what Celery's event loop asks


@pytest.mark.integration
def test_a_child_that_exits_at_start_up_fails_the_farms_start_check() -> None:
    with started_pool(TaskPool, exit_code_of_child=3) as (pool, _, reports):
        started_children(reports, 2)
        [failed] = [child for child in pool._pool._pool if child.index == 1]
        assert wait_exited(failed) == 3
        assert pool.did_start_ok() is False


# -- Celery's root warning -----------------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="Celery warns of root only to root")
def test_celerys_root_warning_is_the_one_a_node_silences() -> None:
    accept = make_app(client_settings("redis://127.0.0.1:9/0")).conf.accept_content
    with pytest.warns(SecurityWarning, match="superuser privileges"):
        platforms.check_privileges(accept)  # what Celery's worker runs as it starts
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        celery_internals.quiet_root_warning()
        platforms.check_privileges(accept)
