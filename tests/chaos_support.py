"""Fault injection against a real farm: one batch, one fault mid-batch, every result checked.

A private Redis (AOF on) and `evalfarm worker` nodes with the farm's default settings (timeouts,
visibility timeout, heartbeats: nothing lowered), a batch of sandboxed programs whose correct
results are known (half of them name numpy, so both of each slot's fork servers are busy), and one
fault injected once a third of the results are in: a kill -9 of a pool process, a fork server, a
running program, a node, Redis restarted or paused, the producer itself. Each scenario reports
jobs lost, duplicated, wrong (a status or output other than the fault-free one) and infra_error.

Used by `tests/test_chaos.py` (the suite, part of `make test`) and `bench/chaos.py` (the table).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from farm_support import wait_until
from netns_support import Network, network
from sentinel_support import MASTER, SentinelRedis

from evalfarm.broker.connections import redis_client
from evalfarm.broker.farm import Farm
from evalfarm.broker.keys import NODE_KEY_PREFIX, held_key
from evalfarm.broker.settings import Settings
from evalfarm.workers.embedded import NodeProcess, RedisServer

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SLOW_S = 2.0  # the program a fault may hit on every try sleeps this long; the others 0.05 s


def base_job(i: int) -> dict[str, Any]:
    return {"id": f"b{i}", "env": "program", "code": f"import time\ntime.sleep(0.05)\nprint({i})"}


def numpy_job(i: int) -> dict[str, Any]:
    code = f"import time\nimport numpy as np\ntime.sleep(0.05)\nprint(int(np.arange({i}).sum()))"
    return {"id": f"n{i}", "env": "program", "code": code}


def expected_stdout(job: dict[str, Any]) -> str:
    """What the job prints when nothing goes wrong."""
    if job["id"] == "slow":
        return "slow\n"
    i = int(job["id"][1:])
    return f"{sum(range(i)) if job['id'].startswith('n') else i}\n"


def batch(n: int) -> list[dict[str, Any]]:
    """`n` programs with known output, base and numpy ones interleaved."""
    return [numpy_job(i) if i % 2 else base_job(i) for i in range(n)]


def slow_job() -> dict[str, Any]:
    return {"id": "slow", "env": "program", "code": f"import time\ntime.sleep({SLOW_S})\nprint('slow')"}


@dataclasses.dataclass
class Row:
    """What one scenario did to one batch."""

    fault: str
    jobs: int
    lost: int = 0
    dup: int = 0
    wrong: int = 0
    infra: int = 0
    seconds: float = 0.0
    note: str = ""
    reruns: int = 0  # answers the producer received twice (a message that ran again) and dropped
    infra_ids: list[str] = dataclasses.field(default_factory=list)

    def cells(self) -> list[str]:
        return [self.fault, str(self.jobs), str(self.lost), str(self.dup), str(self.wrong), str(self.infra),
                f"{self.seconds:.1f}", str(self.reruns), self.note]  # fmt: skip


def judge(row: Row, jobs: list[dict[str, Any]], seen: dict[int, list[Any]], farm: Farm | None = None) -> Row:
    """Fill `row` from what the stream yielded for each job index (and the batch's stats)."""
    if farm is not None:
        row.reruns = farm.last_stats.duplicates
    for index, job in enumerate(jobs):
        results = seen.get(index, [])
        if not results:
            row.lost += 1
            continue
        row.dup += len(results) - 1
        result = results[0]
        if result["status"] == "infra_error":
            row.infra += 1
            row.infra_ids.append(job["id"])
        elif (result["status"], result.get("stdout")) != ("ok", expected_stdout(job)):
            row.wrong += 1
    return row


# -- the farm -------------------------------------------------------------------------------------


def node_env(**overrides: str) -> dict[str, str]:
    """A node's environment: this one without EVALFARM_*, metrics off (no port to fight over)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVALFARM_")}
    env.update({"EVALFARM_METRICS_PORT": "0", **overrides})
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS), str(ROOT), env.get("PYTHONPATH", "")])
    return env


class Cluster:
    """A private Redis (or a master, a replica and three Sentinels) and the nodes started on it; all
    stopped by `close`."""

    def __init__(
        self,
        directory: str,
        sentinel: bool = False,
        network: Network | None = None,
        master_in_url: bool = False,
    ) -> None:
        """`network`: nodes may run in namespaces of it (`start_node(space=...)`); Redis listens there
        too. `master_in_url`: the Sentinels' URL names the master (`?master_name=`, as Celery's users
        write it) and no process is given EVALFARM_REDIS_MASTER."""
        self.directory = Path(directory)
        self.master_in_url = master_in_url
        self.network = network
        self.sentinel = SentinelRedis(self.directory).start() if sentinel else None
        also = [network.host] if network else []
        self.redis = RedisServer(directory=directory, also_bind=also).start() if not sentinel else None
        self.master = MASTER if sentinel and not master_in_url else None
        self.nodes: list[NodeProcess] = []
        self._names = 0

    @property
    def url(self) -> str:
        if self.sentinel is None:
            return self.redis.url  # type: ignore[union-attr]
        return self.sentinel.url + (f"?master_name={MASTER}" if self.master_in_url else "")

    def client(self) -> Any:
        return redis_client(self.url, Settings(broker_url=self.url, redis_master=self.master))

    def start_node(
        self, concurrency: int = 2, cpus: str | None = None, slot_base: int = 0, space: str | None = None
    ) -> NodeProcess:
        """Start a node (in the network namespace `space`, if given: its output then goes to the file
        `node.log`, shown on stderr at `close`) and wait until it advertises its pool."""
        self._names += 1
        name = f"chaos{self._names}@localhost"
        args = ["--concurrency", str(concurrency), "--name", name, "--slot-base", str(slot_base)]
        args += ["--cpus", cpus] if cpus else []
        env = node_env(**({"EVALFARM_REDIS_MASTER": self.master} if self.master else {}))
        url = self.url
        if space is not None:
            assert self.network is not None and self.redis is not None
            url = f"redis://{self.network.host}:{self.redis.port}/0"
        node = NodeProcess(url, args, env, log=self.directory / f"{name}.log" if space else None)
        if space is not None:
            node.command = self.network.enter(space) + node.command  # type: ignore[union-attr]
        node.start()
        self.nodes.append(node)
        client = self.client()
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                keys = client.keys(NODE_KEY_PREFIX + name + "#*")
                if keys and any(v not in (None, b"0") for v in client.mget(keys)):
                    node.holder = keys[0].decode()[len(NODE_KEY_PREFIX) :]  # type: ignore[attr-defined]
                    return node
                time.sleep(0.05)
        finally:
            client.close()
        raise RuntimeError(f"node {name} did not start")

    def farm(self, **settings: Any) -> Farm:
        """A producer with the default settings (none read from this process's environment)."""
        return Farm(
            settings=Settings(broker_url=self.url, redis_master=self.master, **settings), progress=False
        )

    def close(self) -> None:
        for node in self.nodes:
            node.stop(grace_s=5)
            if node.log is not None and node.log.exists():
                sys.stderr.write(node.log.read_text(errors="replace"))
        for server in (self.redis, self.sentinel):
            if server is not None:
                server.close()


@contextlib.contextmanager
def cluster(
    sentinel: bool = False, network: Network | None = None, master_in_url: bool = False
) -> Iterator[Cluster]:
    with tempfile.TemporaryDirectory(prefix="evalfarm-chaos-") as directory:
        running = Cluster(directory, sentinel, network, master_in_url)
        try:
            yield running
        finally:
            running.close()


# -- finding the farm's processes -----------------------------------------------------------------

# What reading /proc/PID/... raises when the process has just gone: ENOENT, or ESRCH mid-read.
GONE = (FileNotFoundError, ProcessLookupError)


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except GONE:
        return []


def pool_processes(node: NodeProcess) -> list[int]:
    assert node.proc is not None
    return children(node.proc.pid)


def fork_servers(node: NodeProcess, numpy: bool) -> list[int]:
    """The node's fork servers of one kind (base, or the one with numpy preloaded)."""
    found = []
    for pool_pid in pool_processes(node):
        for pid in children(pool_pid):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except GONE:
                continue
            if (
                b"evalfarm.sandbox._server" in command
                and ("numpy" in _server_config(command)["preload"]) == numpy
            ):
                found.append(pid)
    return found


def _server_config(command: bytes) -> dict[str, Any]:
    """A fork server's config: the JSON argument of its command line."""
    return json.loads(command.rstrip(b"\0").split(b"\0")[-1])


def running_programs(node: NodeProcess, older_than_s: float = 0.0) -> list[int]:
    """Runs in progress on the node's servers (a run is a child of its server)."""
    servers = [server for numpy in (False, True) for server in fork_servers(node, numpy)]
    runs = [run for server in servers for run in children(server)]
    if older_than_s <= 0:
        return runs
    ticks, boot = os.sysconf("SC_CLK_TCK"), time.clock_gettime(time.CLOCK_BOOTTIME)
    old = []
    for pid in runs:
        try:
            started = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]) / ticks
        except (*GONE, IndexError, ValueError):
            continue
        if boot - started >= older_than_s:
            old.append(pid)
    return old


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (*GONE, IndexError, ValueError):
        return 0


def descends_from(pid: int, root: int) -> bool:
    """True when `pid` is `root` or a process below it."""
    while pid > 1:
        if pid == root:
            return True
        pid = _parent(pid)
    return False


def sandboxed_runs(older_than_s: float, root: int | None = None) -> list[int]:
    """Sandboxed runs (children of a fork server) older than `older_than_s`: every one on this
    machine, or those below process `root` (a worker node)."""
    ticks, now = os.sysconf("SC_CLK_TCK"), time.clock_gettime(time.CLOCK_BOOTTIME)
    runs = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            parent, started = int(stat[1]), int(stat[19]) / ticks
            if (
                now - started < older_than_s
                or b"evalfarm.sandbox._server" not in (entry / "cmdline").read_bytes()
            ):
                continue
            if b"evalfarm.sandbox._server" in Path(f"/proc/{parent}/cmdline").read_bytes():
                runs.append(int(entry.name))
        except (*GONE, IndexError, ValueError):
            continue
    return [pid for pid in runs if root is None or descends_from(pid, root)]


@contextlib.contextmanager
def killing_runs_older_than(seconds: float, root: int | None = None) -> Iterator[list[int]]:
    """SIGKILL every sandboxed run (below process `root`, if given) that lives longer than
    `seconds`, as the host's OOM killer would, while the block runs; yields the pids killed."""
    stop, killed = threading.Event(), []

    def loop() -> None:
        while not stop.is_set():
            for pid in sandboxed_runs(seconds, root):
                kill(pid)
                killed.append(pid)
            time.sleep(0.05)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield killed
    finally:
        stop.set()
        thread.join()


def kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


# -- the scenarios --------------------------------------------------------------------------------


def stream_with_fault(
    farm: Farm, jobs: list[dict[str, Any]], fault: Callable[[], str | None]
) -> tuple[dict[int, list[Any]], float, str]:
    """Stream `jobs`; call `fault()` once a third of the results are in: results by index, the
    batch's seconds, and the fault's note."""
    seen: dict[int, list[Any]] = {}
    note = ""
    started = time.monotonic()
    for index, result in farm.stream(jobs, deadline_s=600):
        seen.setdefault(index, []).append(result)
        if len(seen) == len(jobs) // 3 and not note:
            note = fault() or "-"
    return seen, time.monotonic() - started, note


def run_scenario(name: str, n_jobs: int) -> Row:
    """Run one named scenario on a fresh cluster; its row."""
    return SCENARIOS[name](n_jobs)


def _one_node(
    name: str, n_jobs: int, fault: Callable[[Cluster, NodeProcess], str | None], two_nodes: bool = False
) -> Row:
    """A batch on one node of two processes (or two nodes of one, each pinned to its core)."""
    jobs = batch(n_jobs)
    with cluster() as farm_cluster:
        if two_nodes:
            cores = sorted(os.sched_getaffinity(0))
            node = farm_cluster.start_node(concurrency=1, cpus=str(cores[0]), slot_base=0)
            farm_cluster.start_node(concurrency=1, cpus=str(cores[-1]), slot_base=1)
        else:
            node = farm_cluster.start_node()
        with farm_cluster.farm() as farm:
            farm.score(batch(4))  # both servers of each slot up before the clock starts
            seen, seconds, note = stream_with_fault(farm, jobs, lambda: fault(farm_cluster, node))
            return judge(Row(name, len(jobs), seconds=seconds, note=note), jobs, seen, farm)


def no_fault(n_jobs: int) -> Row:
    return _one_node("none", n_jobs, lambda c, node: None)


def kill_pool_process(n_jobs: int) -> Row:
    return _one_node("a pool process", n_jobs, lambda c, node: kill(pool_processes(node)[0]) or "")


def _kill_fork_server(name: str, numpy: bool) -> Callable[[int], Row]:
    """A fork server of a slot killed, mid-run when one is caught running a program."""

    def scenario(n_jobs: int) -> Row:
        def fault(c: Cluster, node: NodeProcess) -> str:
            busy = wait_until(lambda: [s for s in fork_servers(node, numpy=numpy) if children(s)], 5)
            kill((busy or fork_servers(node, numpy=numpy))[0])
            return "mid-run" if busy else "idle"

        return _one_node(name, n_jobs, fault)

    return scenario


kill_base_server = _kill_fork_server("the base fork server", numpy=False)
kill_numpy_server = _kill_fork_server("the numpy fork server", numpy=True)


def kill_running_program(n_jobs: int) -> Row:
    def fault(c: Cluster, node: NodeProcess) -> str:
        runs = wait_until(lambda: running_programs(node), 5)
        if not runs:
            return "no run caught"
        kill(runs[0])
        return ""

    return _one_node("a running program", n_jobs, fault)


def kill_one_job_every_try(n_jobs: int) -> Row:
    """A fault injected into the same job on every try: only that job may come back infra_error."""
    jobs = batch(n_jobs)
    jobs.insert(len(jobs) // 2, slow_job())
    stop = threading.Event()
    kills = [0]
    with cluster() as farm_cluster:
        node = farm_cluster.start_node()

        def killer() -> None:  # every run older than half the slow job's sleep is the slow job
            while not stop.is_set():
                for pid in running_programs(node, older_than_s=SLOW_S / 2):
                    kill(pid)
                    kills[0] += 1
                time.sleep(0.02)

        thread = threading.Thread(target=killer, daemon=True)
        with farm_cluster.farm() as farm:
            farm.score(batch(4))
            thread.start()
            try:
                seen, seconds, _ = stream_with_fault(farm, jobs, lambda: None)
            finally:
                stop.set()
                thread.join()
            row = judge(Row("one job's run, every try", len(jobs), seconds=seconds), jobs, seen, farm)
    row.note = f"{kills[0]} kills of its runs"
    return row


def kill_node_main_then_replace(n_jobs: int) -> Row:
    def fault(c: Cluster, node: NodeProcess) -> str:
        assert node.proc is not None
        killed_at = time.monotonic()
        kill(node.proc.pid)
        node.proc.wait()
        c.start_node()
        return f"restored {restored_after(c, node, killed_at)}"

    return _one_node("the node's main process (new node)", n_jobs, fault)


def kill_node_with_a_second_running(n_jobs: int) -> Row:
    jobs = batch(n_jobs)
    with cluster() as farm_cluster:
        victim = farm_cluster.start_node(concurrency=1, cpus=str(min(os.sched_getaffinity(0))), slot_base=0)
        farm_cluster.start_node(concurrency=1, cpus=str(max(os.sched_getaffinity(0))), slot_base=1)

        def fault() -> str:
            assert victim.proc is not None
            killed_at = time.monotonic()
            os.killpg(victim.proc.pid, signal.SIGKILL)  # the whole node, nothing to replace it
            victim.proc.wait()
            return f"restored {restored_after(farm_cluster, victim, killed_at)}"

        with farm_cluster.farm() as farm:
            farm.score(batch(4))
            seen, seconds, note = stream_with_fault(farm, jobs, fault)
            return judge(
                Row("a whole node (another runs)", len(jobs), seconds=seconds, note=note), jobs, seen, farm
            )


def restored_after(c: Cluster, node: NodeProcess, killed_at: float) -> str:
    """Seconds from the kill until the dead node's held messages were put back (in the background)."""
    holder = getattr(node, "holder", "")
    result: list[str] = []

    def watch() -> None:
        client = c.client()
        try:
            wait_until(lambda: not client.exists(held_key(holder)), 120)
            result.append(f"{time.monotonic() - killed_at:.1f} s after the kill")
        finally:
            client.close()

    thread = threading.Thread(target=watch)
    thread.start()
    thread.join(60)
    return result[0] if result else "not within 60 s"


def restart_redis(n_jobs: int) -> Row:
    def fault(c: Cluster, node: NodeProcess) -> str:
        c.redis.stop()  # SIGTERM: Redis writes its AOF out
        time.sleep(1.0)
        c.redis.start()
        return "down 1 s"

    return _one_node("Redis restarted (AOF)", n_jobs, fault)


def pause_redis(n_jobs: int) -> Row:
    def fault(c: Cluster, node: NodeProcess) -> str:
        assert c.redis.proc is not None
        pid = c.redis.proc.pid
        os.kill(pid, signal.SIGSTOP)
        threading.Timer(30.0, lambda: os.kill(pid, signal.SIGCONT)).start()
        return "SIGSTOP 30 s, two nodes"

    return _one_node("Redis paused", n_jobs, fault, two_nodes=True)


def waiting_job(i: int) -> dict[str, Any]:
    """A program that runs a full second before it prints (as base_job(i) prints)."""
    return {"id": f"b{i}", "env": "program", "code": f"import time\ntime.sleep(1.0)\nprint({i})"}


def _failover(name: str, n_jobs: int, when: str, master_in_url: bool = False) -> Row:
    """A batch on a Sentinel-watched Redis whose master is killed -9: `mid` once a third of the
    results are in (answers arriving, workers mid-chunk); `publishing` while the producer is still
    publishing the batch's messages (one job each); `blocked` while every process runs a job of a
    full second and the producer, all published, waits on its reply list with nothing arriving (a
    tenth as many jobs, one per message). Notes Sentinel's own failover time (the kill to a new
    master named) and the kill to the batch's end. `master_in_url`: the master's name only on the URL."""
    at_start = when in ("publishing", "blocked")
    jobs = [waiting_job(i) for i in range(n_jobs // 10)] if when == "blocked" else batch(n_jobs)
    with cluster(sentinel=True, master_in_url=master_in_url) as farm_cluster:
        farm_cluster.start_node()
        assert farm_cluster.sentinel is not None
        sentinels = farm_cluster.sentinel
        with farm_cluster.farm(max_chunk_jobs=1 if at_start else 256) as farm:
            farm.score(batch(4))  # both servers of each slot up before the clock starts
            killed: dict[str, float] = {}

            def fault() -> str:
                old = sentinels.kill_master()
                killed["at"] = time.monotonic()
                wait_until(lambda: sentinels.master_port() not in (None, old), 60, poll_s=0.05)
                killed["failover_s"] = time.monotonic() - killed["at"]
                return ""

            if at_start:  # the first answers of `blocked` come a second after publishing
                threading.Timer(0.02 if when == "publishing" else 0.5, fault).start()
                seen, seconds, _ = stream_with_fault(farm, jobs, lambda: None)
            else:
                seen, seconds, _ = stream_with_fault(farm, jobs, fault)
            after_s = time.monotonic() - killed["at"]
            note = (
                f"Sentinel failover {killed.get('failover_s', 0):.1f} s; kill to batch done {after_s:.1f} s"
            )
            return judge(Row(name, len(jobs), seconds=seconds, note=note), jobs, seen, farm)


def failover_mid_batch(n_jobs: int) -> Row:
    return _failover("the Redis master (Sentinel)", n_jobs, "mid")


def failover_master_named_in_url(n_jobs: int) -> Row:
    """The mid-batch failover, the master's name given only as the URL's `?master_name=`: once, such a
    URL worked until the first failover and then killed every node."""
    return _failover("the Redis master, its name on the URL", n_jobs, "mid", master_in_url=True)


def failover_while_publishing(n_jobs: int) -> Row:
    return _failover("the Redis master, while publishing", n_jobs, "publishing")


def failover_while_blocked(n_jobs: int) -> Row:
    return _failover("the Redis master, producer blocked on its replies", n_jobs, "blocked")


def _partition(name: str, n_jobs: int, cut_s: float | None) -> Row:
    """Two nodes of one process each, one of them in a network namespace whose link is cut once a
    third of the results are in: for `cut_s` seconds, or (None) until the other node has put back
    the messages it held. The batch goes on meanwhile (four times the usual length, so that it is
    still running when the cut node comes back with its late answers, which the producer drops).

    Notes when the cut node's messages were put back, and when it beat again after the heal. Raises
    if the cut node, back on the network, put back any message of a live node, or never worked again."""
    jobs = batch(4 * n_jobs)
    with network() as net, cluster(network=net) as farm_cluster:
        cores = sorted(os.sched_getaffinity(0))
        space = net.add_space()
        victim = farm_cluster.start_node(concurrency=1, cpus=str(cores[0]), slot_base=0, space=space)
        live = farm_cluster.start_node(concurrency=1, cpus=str(cores[-1]), slot_base=2)
        holder = victim.holder  # type: ignore[attr-defined]
        events: dict[str, float] = {}

        def cut_and_heal() -> None:
            client = farm_cluster.client()
            try:
                wait_until(lambda: client.scard(held_key(holder)), 10)
                events["held"] = client.scard(held_key(holder))
                net.cut(space)
                events["cut"] = time.monotonic()
                if wait_until(lambda: not client.exists(held_key(holder)), cut_s or 120, poll_s=0.05):
                    events["restored"] = time.monotonic()
                if cut_s is not None:
                    time.sleep(max(0.0, events["cut"] + cut_s - time.monotonic()))
                net.heal(space)
                events["healed"] = time.monotonic()
                wait_until(lambda: client.exists(NODE_KEY_PREFIX + holder), 120)
                events["rejoined"] = time.monotonic()
            finally:
                client.close()

        thread = threading.Thread(target=cut_and_heal)
        with farm_cluster.farm() as farm:
            farm.score(batch(4))  # both servers of each slot up before the clock starts
            seen, seconds, _ = stream_with_fault(farm, jobs, thread.start)
            thread.join()
            row = judge(Row(name, len(jobs), seconds=seconds), jobs, seen, farm)
            assert "restored" in events, (
                f"the cut node's messages were not put back while it was away: {events}"
            )
            assert "rejoined" in events, f"the cut node did not beat again after the heal: {events}"
            row.note = (
                f"{events['held']:.0f} messages held at the cut, put back "
                f"{events['restored'] - events['cut']:.1f} s after it; "
                f"cut {events['healed'] - events['cut']:.1f} s; "
                f"beat again {events['rejoined'] - events['healed']:.1f} s after the heal"
            )
            # Back on the network, the node works again: with the other one stopped, it scores alone.
            live.stop(grace_s=10)
            alone = batch(20)
            assert [(r["status"], r["stdout"]) for r in farm.score(alone, deadline_s=120)] == [
                ("ok", expected_stdout(job)) for job in alone
            ], "the cut node did not score a batch alone after it came back"
        log = victim.log.read_text(errors="replace") if victim.log else ""
        assert "is dead: put back" not in log, "the cut node put back messages of live nodes"
    return row


def partition_until_restored(n_jobs: int) -> Row:
    return _partition("a node cut off (healed once its work is back)", n_jobs, cut_s=None)


def partition_long(n_jobs: int) -> Row:
    return _partition(
        "a node cut off for 3x its heartbeat TTL",
        n_jobs,
        cut_s=3 * Settings.model_fields["node_dead_after_s"].default,
    )


PRODUCER = """
import json, sys
sys.path[:0] = {paths!r}
from chaos_support import batch
from evalfarm.broker.farm import Farm
from evalfarm.broker.settings import Settings
settings = Settings(broker_url={url!r})
with Farm(settings=settings, progress=False) as farm:
    for n, _ in enumerate(farm.stream(batch({n}))):
        if n == {n} // 3:
            print("a third in", flush=True)
"""


def kill_producer_and_resend(n_jobs: int) -> Row:
    jobs = batch(n_jobs)
    with cluster() as farm_cluster:
        farm_cluster.start_node()
        script = PRODUCER.format(paths=[str(TESTS), str(ROOT)], url=farm_cluster.url, n=n_jobs)
        with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) as first:
            assert first.stdout is not None
            first.stdout.readline()
            kill(first.pid)
        with farm_cluster.farm() as farm:
            seen, seconds, _ = stream_with_fault(farm, jobs, lambda: None)
            return judge(Row("the producer (batch sent again)", len(jobs), seconds=seconds), jobs, seen, farm)


SCENARIOS: dict[str, Callable[[int], Row]] = {
    "none": no_fault,
    "pool_process": kill_pool_process,
    "base_server": kill_base_server,
    "numpy_server": kill_numpy_server,
    "running_program": kill_running_program,
    "node_main": kill_node_main_then_replace,
    "whole_node": kill_node_with_a_second_running,
    "redis_restart": restart_redis,
    "redis_pause": pause_redis,
    "producer": kill_producer_and_resend,
    "same_job_every_try": kill_one_job_every_try,
    "sentinel_failover": failover_mid_batch,
    "sentinel_publishing": failover_while_publishing,
    "sentinel_master_in_url": failover_master_named_in_url,
    "sentinel_blocked": failover_while_blocked,
    "partition": partition_until_restored,
    "partition_long": partition_long,
}


def table(rows: list[Row]) -> str:
    """The rows as an aligned text table."""
    header = [
        "fault (kill -9 unless said)",
        "jobs",
        "lost",
        "dup",
        "wrong",
        "infra",
        "seconds",
        "reruns",
        "note",
    ]
    cells = [header, *(row.cells() for row in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells)


if __name__ == "__main__":  # one scenario, as JSON: python tests/chaos_support.py NAME N
    print(json.dumps(dataclasses.asdict(run_scenario(sys.argv[1], int(sys.argv[2])))))
