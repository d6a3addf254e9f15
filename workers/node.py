"""One worker node: a Celery prefork pool whose children are each pinned to a core and own a sandbox slot.

Child `i` of the pool (billiard keeps the index when it replaces a dead or recycled child) runs on
`cpus[i % len(cpus)]` and sandbox slot `slot_base + i`, so slots are unique on the machine as long as
nodes sharing it get disjoint `slot_base` ranges. SIGTERM is Celery's warm shutdown: running chunks
finish, reserved ones go back to the queue (late acks).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import uuid
from typing import Any

from evalfarm.broker import celery_internals
from evalfarm.broker.app import make_app
from evalfarm.broker.settings import WorkerSettings
from evalfarm.workers.liveness import NodeLiveness

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class NodePlan:
    """Which queues a node consumes, how many children it runs and where each child goes."""

    queues: tuple[str, ...]
    concurrency: int
    cpus: tuple[int, ...]
    slot_base: int
    name: str

    def cpu_of(self, index: int) -> int:
        """The core child `index` is pinned to."""
        return self.cpus[index % len(self.cpus)]

    def slot_of(self, index: int) -> int:
        """The sandbox slot child `index` owns."""
        return self.slot_base + index


def plan_node(settings: WorkerSettings, queues: list[str] | None = None, name: str | None = None) -> NodePlan:
    """The node's plan from settings: all queues, one child per allowed CPU unless told otherwise."""
    allowed = sorted(os.sched_getaffinity(0))
    cpus = tuple(settings.cpus or allowed)
    unknown = set(cpus) - set(allowed)
    if unknown:
        raise ValueError(f"cpus {sorted(unknown)} are not available to this process (allowed: {allowed})")
    return NodePlan(
        queues=tuple(queues or settings.queues),
        concurrency=settings.concurrency or len(cpus),
        cpus=cpus,
        slot_base=settings.slot_base,
        name=name or f"evalfarm-{os.getpid()}@{socket.gethostname()}",
    )


def run_node(settings: WorkerSettings, plan: NodePlan, loglevel: str = "INFO", quiet: bool = False) -> int:
    """Run the node in the foreground until a shutdown signal; returns Celery's exit code.
    `quiet`: no Celery banner (a node an embedded farm starts for a command's user)."""
    from celery import signals

    from evalfarm import tasks
    from evalfarm.workers import metrics

    if loglevel != "DEBUG":  # one line per task received and per result is too much for a farm
        for name in ("celery.app.trace", "celery.worker.strategy"):
            logging.getLogger(name).setLevel(logging.WARNING)
    app = make_app(settings)
    app.conf.update(node_config(settings))
    # This incarnation's id: the transport records the messages it holds under it (a node restarted
    # under the same name, as a container keeps its hostname, is another holder).
    holder = f"{plan.name}#{uuid.uuid4().hex[:12]}"
    app.conf.broker_transport_options = {**app.conf.broker_transport_options, "evalfarm_holder": holder}
    process = tasks.WorkerProcess(settings)  # built before the pool forks: every child inherits it
    tasks.register(app, process)
    metrics_url = metrics.serve(process)
    liveness = NodeLiveness(
        app,
        holder,
        plan.concurrency,
        settings,
        _restored_counter(metrics_url),
        working=celery_internals.working_delivery_tags,
        metrics_url=metrics_url,
        languages=_offered_languages(),
    )
    liveness.register()
    sessions = SessionHostProcess(settings, plan.name, plan.slot_of(plan.concurrency))
    _connect_signals(app, plan, process, liveness, sessions)
    log.info(
        "worker %s: queues %s, %d processes on cpus %s, sandbox slots %d-%d",
        plan.name, ",".join(plan.queues), plan.concurrency, list(plan.cpus),
        plan.slot_of(0), plan.slot_of(plan.concurrency - 1),
    )  # fmt: skip
    _explain_root()
    _warn_of_unchecked_tls(settings)
    argv = [
        *(["--quiet"] if quiet else []),
        "worker",
        f"--hostname={plan.name}",
        f"--queues={','.join(plan.queues)}",
        "--pool=prefork",
        f"--concurrency={plan.concurrency}",
        f"--max-tasks-per-child={settings.max_tasks_per_child}",
        f"--max-memory-per-child={settings.max_memory_per_child_mb * 1024}",
        f"--loglevel={loglevel}",
        "--without-gossip",
        "--without-mingle",
        "--optimization=fair",
    ]
    # Celery's `worker_main` drops the worker's exit code; a node that could not reach Redis after
    # its retries must not exit 0, or a supervisor takes it for a clean stop: read it off the worker.
    workers: list[Any] = []
    signals.worker_init.connect(lambda sender, **_: workers.append(sender), weak=False)
    try:
        app.worker_main(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    return celery_internals.exit_code(workers[0]) if workers else 0


def _warn_of_unchecked_tls(settings: WorkerSettings) -> None:
    """A TLS URL with `ssl_cert_reqs=none` encrypts but trusts any server: say so."""
    for url in {settings.broker_url, settings.backend_url}:
        if url and url.startswith(("rediss://", "sentinel://")) and "ssl_cert_reqs=none" in url:
            log.warning(
                "TLS to Redis without checking its certificate (ssl_cert_reqs=none): whoever sits "
                "between this node and Redis can pose as Redis; give ssl_ca_certs instead"
            )


def _explain_root() -> None:
    """Say what running as root means here, instead of Celery's warning against it: the node needs
    root for the sandbox's cgroups, and no program runs as root (each slot's runs have a uid of
    their own, without capabilities). Messages are JSON only, never pickle, so Celery allows it."""
    if os.geteuid() != 0:
        return
    celery_internals.quiet_root_warning()
    log.info("running as root, for the sandbox's cgroups: programs run as each slot's own uid")


def node_config(settings: WorkerSettings) -> dict[str, Any]:
    """The Celery settings only a worker node reads (the farm's own are `broker.app`'s)."""
    return {
        "worker_pool": "evalfarm.workers.pool:TaskPool",  # prefork, reaping dead children sooner
        # How long the pool waits for a dead child's last result before declaring the chunk lost
        # (Celery's 10 s default would make each retry of a crashing job cost 10 s).
        "worker_lost_wait": settings.worker_lost_wait_s,
        "worker_send_task_events": settings.send_task_events,
        # Task events published in a few messages a second, not one per event (workers/events.py).
        "worker_consumer": "evalfarm.workers.events:Consumer",
    }


def _restored_counter(metrics_url: str | None) -> Any:
    """Counts messages this node restored from dead ones, where metrics are served."""
    if metrics_url is None:
        return None
    from evalfarm.workers.metrics import instruments

    return instruments.MESSAGES_RESTORED.inc


def _connect_signals(
    app: Any, plan: NodePlan, process: Any, liveness: NodeLiveness, sessions: SessionHostProcess
) -> None:
    """Hook the child's start (pin, open the slot), its end, and the node's heartbeat."""
    from celery import signals

    def child_started(**_: Any) -> None:
        index = celery_internals.pool_child_index()
        cpu = plan.cpu_of(index)
        os.sched_setaffinity(0, {cpu})
        process.open(plan.slot_of(index))
        log.info("pool child %d (pid %d) pinned to cpu %d, sandbox slot %d", index, os.getpid(), cpu,
                 plan.slot_of(index))  # fmt: skip

    def child_stopping(**_: Any) -> None:
        process.close()

    signals.worker_process_init.connect(child_started, weak=False)
    signals.worker_process_shutdown.connect(child_stopping, weak=False)

    def node_ready(**_: Any) -> None:
        liveness.start()
        sessions.start()

    def node_stopping(**_: Any) -> None:
        sessions.stop()
        liveness.stop()

    signals.worker_ready.connect(node_ready, weak=False)
    signals.worker_shutdown.connect(node_stopping, weak=False)


class SessionHostProcess:
    """The node's session host (`workers.session_host`), a child process started once the node is ready
    and started again should it die (its sessions are lost with it: their clients are told so)."""

    def __init__(self, settings: WorkerSettings, node: str, slot: int) -> None:
        self.settings = settings
        self.node = node
        self.slot = slot
        self.process: Any = None
        self.stopping = threading.Event()

    def start(self) -> None:
        if self.settings.sessions == 0:
            return
        threading.Thread(target=self._keep, name="evalfarm-session-host", daemon=True).start()

    def _keep(self) -> None:
        from evalfarm.workers.session_host import start_host

        while not self.stopping.is_set():
            self.process = start_host(self.settings, self.node, self.slot)
            code = self.process.wait()
            if not self.stopping.is_set():
                log.warning("the session host exited (code %s); starting another", code)
                self.stopping.wait(1.0)

    def stop(self) -> None:
        self.stopping.set()
        process = self.process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except Exception:  # it would not stop: it dies with the node anyway
                process.kill()


def _offered_languages() -> tuple[str, ...]:
    """The languages this node's sandboxes run (sandbox.languages.offered): the runtimes that need a
    cgroup only as root, where each slot has one."""
    from evalfarm.sandbox import languages

    return languages.offered(cgroups=os.geteuid() == 0)
