"""The farm's metrics: one definition each, recorded in pool children and summed across them.

Importing this module creates the metrics, so in a worker node it must be imported only after
`PROMETHEUS_MULTIPROC_DIR` is set (`workers.metrics.serve` does that); imported elsewhere (tests,
tools) the same objects are plain in-process metrics. None is registered in the default registry:
a node exports what its processes wrote to the multiprocess directory, not the objects themselves.

Labels come only from bounded sets: env ids the node has registered, the closed set of statuses,
the node's queues, and fixed reasons. Anything else is recorded as `unknown` / `other`.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

# Jobs take from milliseconds (a trivial program) to minutes (a weight-edit answer at 1000 episodes).
DURATION_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)
# A message waits from milliseconds (an idle farm) to the length of a batch (a backlog).
WAIT_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

JOBS = Counter(
    "evalfarm_jobs_total",
    "Jobs this node answered, by env and status (parts of a split job are not jobs).",
    ["env", "status"],
    registry=None,
)
JOB_DURATION = Histogram(
    "evalfarm_job_duration_seconds",
    "Time spent scoring one job (its run_s), by env.",
    ["env"],
    buckets=DURATION_BUCKETS_S,
    registry=None,
)
JOB_PARTS = Counter(
    "evalfarm_job_parts_total",
    "Parts of split jobs (weight-edit episode ranges) this node scored, by env and status.",
    ["env", "status"],
    registry=None,
)
QUEUE_WAIT = Histogram(
    "evalfarm_queue_wait_seconds",
    "Time from a producer publishing a message to a worker starting it, by queue.",
    ["queue"],
    buckets=WAIT_BUCKETS_S,
    registry=None,
)
CHUNK_DURATION = Histogram(
    "evalfarm_chunk_duration_seconds",
    "Time a pool process spent on one message (a chunk of jobs), by queue.",
    ["queue"],
    buckets=DURATION_BUCKETS_S,
    registry=None,
)
SANDBOX_RUNS = Counter(
    "evalfarm_sandbox_runs_total",
    "Sandboxed program runs the results show, by the run's status (codecontests: hidden tests).",
    ["status"],
    registry=None,
)
SANDBOX_RESTARTS = Counter(
    "evalfarm_sandbox_restarts_total",
    "Runs started again because the sandbox failed under them (a fork server died, a kill from "
    "outside), by reason; each such run is retried, and only a run lost on every try is infra_error.",
    ["reason"],
    registry=None,
)
TASK_RETRIES = Counter(
    "evalfarm_task_retries_total",
    "Messages sent again after a failure, by queue and reason (worker_lost: a pool process died).",
    ["queue", "reason"],
    registry=None,
)
TASK_FAILURES = Counter(
    "evalfarm_task_failures_total",
    "Messages that failed outright (their jobs come back infra_error), by queue and reason.",
    ["queue", "reason"],
    registry=None,
)
MESSAGES_RESTORED = Counter(
    "evalfarm_messages_restored_total",
    "Messages a dead node held (reserved or running) that this node put back on their queues.",
    registry=None,
)
PROCESS_STARTS = Counter(
    "evalfarm_worker_process_starts_total",
    "Pool processes started: the first ones, then each replacement of a recycled or dead one.",
    registry=None,
)
# `livesum`: the files of a process that died are dropped, so a killed busy process stops counting.
WORKER_PROCESSES = Gauge(
    "evalfarm_worker_processes",
    "Pool processes of this node, by state (busy: scoring a message; idle: waiting for one).",
    ["state"],
    multiprocess_mode="livesum",
    registry=None,
)

# Sessions (workers.session_host): recorded by the node's session host, served with the node's metrics.
# Labelled by the sessions' language (a closed set): a metric without labels would make a file for
# its value in every process that imports this module, the pool's children included.
SESSIONS_OPEN = Gauge(
    "evalfarm_sessions_open",
    "Sessions this node holds now.",
    ["language"],
    multiprocess_mode="livesum",
    registry=None,
)
SESSIONS_OPENED = Counter(
    "evalfarm_sessions_opened_total", "Sessions this node opened.", ["language"], registry=None
)
SESSIONS_EXPIRED = Counter(
    "evalfarm_sessions_expired_total",
    "Sessions ended for idleness or age (ttl_s, lifetime_s).",
    ["language"],
    registry=None,
)
SESSIONS_CLOSED = Counter(
    "evalfarm_sessions_closed_total", "Sessions their client closed.", ["language"], registry=None
)
SESSIONS_ENDED = Counter(
    "evalfarm_sessions_ended_total",
    "Sessions ended by what a run did (killed past its timeout, out of memory, its interpreter exited).",
    ["language"],
    registry=None,
)
SESSION_RUN_DURATION = Histogram(
    "evalfarm_session_run_seconds",
    "Time from a session's run reaching its node to its answer.",
    ["language"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30, 120, 600),
    registry=None,
)

# Read at scrape time by the node's metrics server (`workers.metrics.server`), not from files.
QUEUE_DEPTH = "evalfarm_queue_depth"
UNACKED = "evalfarm_unacked_messages"
BROKER_UP = "evalfarm_broker_up"
NODES_LIVE = "evalfarm_nodes_live"
MASTER_CHANGES = "evalfarm_redis_master_changes"  # a counter: exported with `_total`
COLLECTED_NAMES = (QUEUE_DEPTH, UNACKED, BROKER_UP, NODES_LIVE, MASTER_CHANGES + "_total")

INSTRUMENTS: tuple[MetricWrapperBase, ...] = (
    JOBS,
    JOB_DURATION,
    JOB_PARTS,
    QUEUE_WAIT,
    CHUNK_DURATION,
    SANDBOX_RUNS,
    SANDBOX_RESTARTS,
    TASK_RETRIES,
    TASK_FAILURES,
    MESSAGES_RESTORED,
    PROCESS_STARTS,
    WORKER_PROCESSES,
    SESSIONS_OPEN,
    SESSIONS_OPENED,
    SESSIONS_EXPIRED,
    SESSIONS_CLOSED,
    SESSIONS_ENDED,
    SESSION_RUN_DURATION,
)


def exported_names() -> set[str]:
    """Every sample name a node's /metrics can contain (`_total`, `_bucket`, ... included)."""
    names = set(COLLECTED_NAMES)
    for instrument in INSTRUMENTS:
        for family in instrument.describe():
            names.update(family.name + suffix for suffix in _SUFFIXES[family.type])
    return names


_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
