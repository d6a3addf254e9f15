"""The node's /metrics: what its processes wrote, plus the broker's queues read at scrape time."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector

from evalfarm.broker.keys import UNACKED_KEY, queue_keys
from evalfarm.broker.settings import WorkerSettings
from evalfarm.workers.liveness import live_holders
from evalfarm.workers.metrics import instruments as m
from evalfarm.workers.metrics.multiproc import fold_dead, ready_files

log = logging.getLogger(__name__)


class ProcessFilesCollector:
    """The node's processes' metrics files, with dead children folded in first (see `multiproc`)."""

    def __init__(self, directory: Path, owner: int) -> None:
        self._directory = directory
        self._owner = owner
        # Folding rewrites files the merge reads: one scrape at a time, or a value counts twice.
        self._lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        """Fold the files of processes that are gone, then merge every file that holds values."""
        with self._lock:
            dead = fold_dead(self._directory, self._owner)
            if dead:
                log.debug("folded the metrics of %d exited processes", len(dead))
            yield from MultiProcessCollector.merge(ready_files(self._directory), accumulate=True)


class BrokerCollector:
    """Queue depths and unacknowledged messages, read from Redis at each scrape (never cached)."""

    def __init__(self, settings: WorkerSettings) -> None:
        from evalfarm.broker.connections import MasterWatch, redis_client

        self._queues = settings.queues
        self._keys = queue_keys(settings)
        self._master = MasterWatch()  # a failover shows as a change of the server it connects to
        self._client = redis_client(
            settings.broker_url or "", settings, self._master, socket_timeout=2.0, socket_connect_timeout=2.0
        )

    def collect(self) -> Iterator[Metric]:
        """One LLEN per queue and priority, one HLEN and the live nodes, in two round trips."""
        up = GaugeMetricFamily(m.BROKER_UP, "1 if this node could read the broker's queues at scrape time.")
        try:
            depths, unacked = self._read()
            live = sum(live_holders(self._client).values())
        except Exception as error:  # Redis down or restarting: say so, export no stale numbers
            log.warning("could not read queue depths: %s", error)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        depth = GaugeMetricFamily(
            m.QUEUE_DEPTH, "Messages waiting in each queue (a message is a chunk of jobs).", labels=["queue"]
        )
        for queue, count in depths.items():
            depth.add_metric([queue], count)
        yield depth
        yield GaugeMetricFamily(
            m.UNACKED, "Messages delivered to workers and not yet acknowledged, farm-wide.", value=unacked
        )
        yield GaugeMetricFamily(m.NODES_LIVE, "Worker nodes whose heartbeat is live, farm-wide.", value=live)
        yield CounterMetricFamily(
            m.MASTER_CHANGES,
            "Times this node's exporter found Redis's master on another server (a Sentinel failover).",
            value=self._master.generation,
        )

    def _read(self) -> tuple[dict[str, int], int]:
        pipe = self._client.pipeline(transaction=False)
        for keys in self._keys.values():
            for key in keys:
                pipe.llen(key)
        pipe.hlen(UNACKED_KEY)
        replies = pipe.execute()
        depths, offset = {}, 0
        for queue, keys in self._keys.items():
            depths[queue] = sum(int(n) for n in replies[offset : offset + len(keys)])
            offset += len(keys)
        return depths, int(replies[-1])


def build_registry(settings: WorkerSettings, directory: Path) -> CollectorRegistry:
    """A registry of the node's process files and, when a broker is configured, its queues."""
    registry = CollectorRegistry()
    registry.register(ProcessFilesCollector(directory, os.getpid()))
    if settings.broker_url:
        registry.register(BrokerCollector(settings))
    return registry


def start(settings: WorkerSettings, directory: Path) -> tuple[Any, str]:
    """Serve /metrics on `metrics_host:metrics_port` from a daemon thread; the server and its URL."""
    server, _ = start_http_server(
        settings.metrics_port, addr=settings.metrics_host, registry=build_registry(settings, directory)
    )
    host = "127.0.0.1" if settings.metrics_host in ("0.0.0.0", "") else settings.metrics_host
    return server, f"http://{host}:{server.server_port}/metrics"
