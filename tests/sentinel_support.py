"""Redis under Sentinel for the tests: a master, a replica and three Sentinels, each a real
`redis-server` process on a free loopback port (the Sentinels are the same binary in Sentinel mode).

Sentinel's own failover time is set here: a master silent for `DOWN_AFTER_MS` is down once two
Sentinels agree, and a replica is promoted at once (`FAILOVER_TIMEOUT_MS` bounds a stuck failover).

With `tls` (a CA and a server certificate, `tls_support.make_ca`), every process speaks only TLS:
servers and Sentinels have no plain port, the replica syncs and the Sentinels watch over TLS
(`tls-replication yes`). That needs Debian's Redis (`tls_support.REDIS_WITH_TLS`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import redis
from tls_support import REDIS_WITH_TLS, serving_tls

from evalfarm.workers.embedded import free_port, redis_server_binary

MASTER = "evalfarm"
DOWN_AFTER_MS = 2000
FAILOVER_TIMEOUT_MS = 10000


class SentinelRedis:
    """A master, a replica and three Sentinels watching them; all stopped by `close`."""

    def __init__(
        self,
        directory: Path,
        password: str | None = None,
        sentinel_password: str | None = None,
        tls: dict[str, Path] | None = None,
    ) -> None:
        """`password`: the master's and the replica's (`requirepass`), which the Sentinels and the
        farm's URL must give; `sentinel_password`: the Sentinels' own (`requirepass` in Sentinel
        mode; they give it to each other too), which the farm gives in EVALFARM_REDIS_SENTINEL_PASSWORD;
        `tls`: the CA and server files every process serves TLS with (no plain port anywhere)."""
        self.directory = directory
        self.password = password
        self.sentinel_password = sentinel_password
        self.tls = tls
        # Debian's binary is the server only under the name redis-server (see tls_support).
        self.binary = "redis-server" if tls else redis_server_binary()
        self.executable = REDIS_WITH_TLS if tls else None
        self.ports = {"master": free_port(), "replica": free_port()}
        self.sentinel_ports = [free_port() for _ in range(3)]
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    @property
    def url(self) -> str:
        """The farm's broker URL: every Sentinel, in kombu's form (the master's password on each)."""
        auth = f":{self.password}@" if self.password else ""
        url = ";".join(f"sentinel://{auth}127.0.0.1:{port}" for port in self.sentinel_ports)
        if self.tls:  # TLS options go on the first address and apply to every connection
            first, rest = url.split(";", 1)
            url = f"{first}?ssl_ca_certs={self.tls['ca']};{rest}"
        return url

    def client(self, port: int, password: str | None, **options: Any) -> redis.Redis:
        """A plain redis-py client of one of these processes (over TLS when they speak it)."""
        if self.tls:
            options = {"ssl": True, "ssl_ca_certs": str(self.tls["ca"]), **options}
        return redis.Redis(port=port, password=password, **options)

    def _ports(self, port: int) -> list[str]:
        """Where a process listens: TLS only with `tls` (replicas and Sentinels use it too)."""
        if not self.tls:
            return ["--port", str(port)]
        return [*serving_tls(self.tls, port), "--tls-replication", "yes"]

    def start(self) -> SentinelRedis:
        self._server("master", self.ports["master"])
        self._server("replica", self.ports["replica"], "--replicaof", "127.0.0.1", str(self.ports["master"]))
        for index, port in enumerate(self.sentinel_ports):
            self._sentinel(index, port)
        self.wait_for_master(self.ports["master"], 30)
        return self

    def _server(self, name: str, port: int, *extra: str) -> None:
        if self.password:
            extra = (*extra, "--requirepass", self.password, "--masterauth", self.password)
        folder = self.directory / name
        folder.mkdir(exist_ok=True)
        command = [
            self.binary, *self._ports(port), "--bind", "127.0.0.1", "--dir", str(folder),
            "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--protected-mode", "no",
            *extra,
        ]  # fmt: skip
        self.processes[name] = subprocess.Popen(
            command, executable=self.executable, stdout=subprocess.DEVNULL, start_new_session=True
        )
        self._wait_answering(port, password=self.password)

    def _sentinel(self, index: int, port: int) -> None:
        config = self.directory / f"sentinel{index}.conf"
        config.write_text(
            f"bind 127.0.0.1\nprotected-mode no\ndir {self.directory}\n"
            f"sentinel monitor {MASTER} 127.0.0.1 {self.ports['master']} 2\n"
            f"sentinel down-after-milliseconds {MASTER} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {MASTER} {FAILOVER_TIMEOUT_MS}\n"
            f"sentinel parallel-syncs {MASTER} 1\n"
            + (f"sentinel auth-pass {MASTER} {self.password}\n" if self.password else "")
            + (
                f"requirepass {self.sentinel_password}\nsentinel sentinel-pass {self.sentinel_password}\n"
                if self.sentinel_password
                else ""
            )
        )
        self.processes[f"sentinel{index}"] = subprocess.Popen(
            [self.binary, str(config), "--sentinel", *self._ports(port)],
            executable=self.executable,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._wait_answering(port, password=self.sentinel_password)

    def master_port(self) -> int | None:
        """The master's port as the first Sentinel that answers says."""
        for port in self.sentinel_ports:
            try:
                client = self.client(port, self.sentinel_password, socket_timeout=1)
                address = client.execute_command("SENTINEL", "get-master-addr-by-name", MASTER)
                client.close()
                if address:
                    return int(address[1])
            except redis.RedisError:
                continue
        return None

    def wait_for_master(self, port: int, timeout_s: float) -> None:
        """Until the Sentinels name `port` the master and a replica is in sync with it."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.master_port() == port:
                info = self.client(port, self.password, socket_timeout=1).info("replication")
                if info.get("connected_slaves", 0) >= 1 or info.get("role") == "master":
                    return
            time.sleep(0.1)
        raise AssertionError(f"the Sentinels did not name {port} the master within {timeout_s} s")

    def kill_master(self) -> int:
        """SIGKILL the current master; its port."""
        port = self.master_port()
        name = next(n for n, p in self.ports.items() if p == port)
        os.kill(self.processes[name].pid, signal.SIGKILL)
        self.processes[name].wait()
        return int(port or 0)

    def close(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()

    def _wait_answering(self, port: int, password: str | None, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                self.client(port, password, socket_timeout=0.5).ping()
                return
            except redis.RedisError:
                time.sleep(0.05)
        raise AssertionError(f"nothing answered on port {port}")
