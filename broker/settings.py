"""The farm's configuration, one typed object per role: what a producer, a worker node or the gateway
needs to know.

Each is a plain value: `ClientSettings(broker_url=...)` reads nothing but its arguments. A process
that takes its configuration from its environment says so: `WorkerSettings.from_env()` reads the
`EVALFARM_*` variables of its fields (`EVALFARM_BROKER_URL`, `EVALFARM_CPUS='[0, 1]'`, ...), with
JSON for lists and maps. The roles share `FarmSettings`, what every process of one farm must agree
on (where Redis is, the queues, the time limits that decide when a message is redelivered);
`Settings` has every role's fields, for a command that plays them all (`evalfarm up`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalfarm.broker.errors import ConfigError
from evalfarm.envs.catalog import ENVS

ENV_PREFIX = "EVALFARM_"

# Variables the farm once read and reads no more -> what replaced them. A process given one refuses
# to start with this message (`from_env`), so a cluster's configuration never changes its meaning
# without a word. (The CHANGELOG's "Removed" entries say when.)
REMOVED_VARIABLES: dict[str, str] = {
    "EVALFARM_POLL_INTERVAL_S": "nothing replaces it: results are pushed to a reply list the producer "
    "waits on, so there is no polling to tune",
}


class FarmSettings(BaseModel):
    """What every process of one farm must agree on: where it lives, its queues, its time limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Where the farm lives. No broker means "start an embedded farm" for `evalfarm score`. Redis
    # Sentinel in kombu's form, `sentinel://HOST:26379;sentinel://HOST2:26379`, with the master's name.
    broker_url: str | None = None
    result_backend: str | None = Field(default=None, description="defaults to broker_url")
    redis_master: str | None = Field(default=None, description="the Sentinels' name for the master")
    # The Sentinels' own password (their `requirepass`), where they have one; the master's goes on
    # the URL.
    redis_sentinel_password: str | None = None

    # Workloads: env id -> queue; envs not listed go to `default_queue` (the catalog's queues).
    default_queue: str = "code"
    env_queues: dict[str, str] = Field(
        default_factory=lambda: {env_id: entry.queue for env_id, entry in ENVS.items() if entry.queue}
    )
    # kombu's Redis transport serves lower priority numbers first; a producer asks for the lane.
    priority_lane: int = Field(default=0, ge=0, le=9)
    background_priority: int = Field(default=6, ge=0, le=9)

    # Reliability. A chunk that outlives its soft limit answers its unfinished jobs as infra_error; the
    # hard limit kills the child; the visibility timeout must exceed it or Redis redelivers a running task.
    task_soft_time_limit_s: float = Field(default=900.0, gt=0)
    task_hard_time_limit_s: float = Field(default=960.0, gt=0)
    visibility_timeout_s: float = Field(default=1200.0, gt=0)
    unacked_restore_interval_s: float = Field(default=5.0, gt=0)
    # A node beats every heartbeat_interval_s; one silent for node_dead_after_s is dead, and live
    # nodes put back the messages it held (about node_dead_after_s + heartbeat_interval_s after).
    heartbeat_interval_s: float = Field(default=1.0, gt=0)
    node_dead_after_s: float = Field(default=6.0, gt=0)
    result_expires_s: float = Field(default=86400.0, gt=0)
    reply_ttl_s: int = Field(default=600, ge=1, description="a reply list outlives its last push by this")
    health_check_interval_s: int = Field(default=10, ge=0)
    broker_connect_retries: int | None = Field(default=None, ge=0, description="None: retry forever")
    publish_retries: int = Field(default=40, ge=0, description="about 0.5 s apart: rides out a Redis restart")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **values: Any) -> Self:
        """These settings from `EVALFARM_*` variables (of `environ`, default the process's own),
        `values` taking precedence; a malformed variable is a ValidationError naming it."""
        from pydantic_settings import EnvSettingsSource  # its import costs ~0.1 s: only when reading

        check_removed(os.environ if environ is None else environ)
        source = EnvSettingsSource(cls, env_prefix=ENV_PREFIX, case_sensitive=False)  # type: ignore[arg-type]
        if environ is not None:
            source.env_vars = {key.lower(): value for key, value in environ.items()}
        return cls.model_validate({**source(), **values})

    @model_validator(mode="before")
    @classmethod
    def _master_name_from_urls(cls, values: Any) -> Any:
        """Take a Sentinel URL's `?master_name=` off it into `redis_master`, so every client (kombu,
        Celery, redis-py) gets the name the same way; a name that differs from the setting's is refused."""
        from evalfarm.broker.connections import ConnectionConfigError, without_master_name

        if not isinstance(values, dict):
            return values
        values = dict(values)
        for field in ("broker_url", "result_backend"):
            url, name = without_master_name(values.get(field))
            if name is None:
                continue
            given = values.get("redis_master")
            if given and given != name:
                raise ConnectionConfigError(
                    f"{field} names the master {name!r} but redis_master (EVALFARM_REDIS_MASTER) is {given!r}"
                )
            values[field], values["redis_master"] = url, name
        return values

    @field_validator("broker_url", "result_backend")
    @classmethod
    def _check_url(cls, url: str | None) -> str | None:
        """Refuse a URL no client can connect with (a bad port, a database that is not a number, an
        unknown scheme, a TLS option that cannot work), with the reason, rather than retrying it
        until a deadline; a `rediss://` URL checks the server's certificate unless it says not to."""
        from evalfarm.broker.connections import check, with_tls_defaults

        check(url)
        return with_tls_defaults(url)

    @model_validator(mode="after")
    def _check_master_name(self) -> Self:
        """A Sentinel URL without the master's name reaches nothing: refuse it at once."""
        from evalfarm.broker.connections import check_master

        check_master(self.broker_url, self.redis_master)
        check_master(self.result_backend, self.redis_master)
        return self

    @model_validator(mode="after")
    def _check_time_limits(self) -> Self:
        """Refuse limits that would run a task twice or kill it before it can answer."""
        if self.task_hard_time_limit_s <= self.task_soft_time_limit_s:
            raise ValueError("task_hard_time_limit_s must exceed task_soft_time_limit_s")
        if self.visibility_timeout_s <= self.task_hard_time_limit_s:
            raise ValueError("visibility_timeout_s must exceed task_hard_time_limit_s")
        if self.node_dead_after_s < 3 * self.heartbeat_interval_s:
            raise ValueError("node_dead_after_s must be at least 3 heartbeat intervals")
        return self

    @property
    def backend_url(self) -> str | None:
        """The result backend: the broker's Redis unless set apart."""
        return self.result_backend or self.broker_url

    @property
    def queues(self) -> list[str]:
        """Every workload queue, default first."""
        return list(dict.fromkeys([self.default_queue, *self.env_queues.values()]))

    def queue_for(self, env_id: Any) -> str:
        """The queue that serves `env_id`."""
        return (
            self.env_queues.get(env_id, self.default_queue) if isinstance(env_id, str) else self.default_queue
        )

    def with_broker(self, broker_url: str | None) -> Self:
        """These settings pointed at `broker_url` (unchanged when it is None or empty)."""
        if not broker_url:
            return self
        return type(self).model_validate({**self.model_dump(), "broker_url": broker_url})


class ClientSettings(FarmSettings):
    """A producer's: how batches are cut into messages, how long they may take, what is retried."""

    # Chunking (broker/chunking.py): one message costs about `message_overhead_s` of a worker.
    message_overhead_s: float = Field(default=0.003, gt=0, description="measured cost of one message")
    max_overhead: float = Field(default=0.02, gt=0, lt=1, description="target share of overhead")
    messages_per_process: int = Field(default=4, ge=1)
    max_chunk_jobs: int = Field(default=256, ge=1)
    # First guesses of one job's cost per env (the catalog's), refined from the results' `run_s`.
    job_costs_s: dict[str, float] = Field(
        default_factory=lambda: {env_id: entry.cost_s for env_id, entry in ENVS.items()}
    )
    default_job_cost_s: float = Field(default=0.05, gt=0)
    farm_processes: int | None = Field(default=None, ge=1, description="pool processes of the farm")
    batch_deadline_s: float = Field(default=3600.0, gt=0)
    episodes_per_part: int = Field(default=250, ge=0, description="split weight edits; 0: never")
    job_retries: int = Field(default=2, ge=0, description="re-sends of a job answered infra_error")
    # Jobs of a batch identical in everything but their id are scored once (`duplicate_of`).
    deduplicate: bool = True
    lost_task_audit_s: float = Field(default=30.0, gt=0, description="look for tasks pending this long")

    @model_validator(mode="after")
    def _check_batch_deadline(self) -> Self:
        """A result must outlive the longest batch that may still read it."""
        if self.result_expires_s <= self.batch_deadline_s:
            raise ValueError("result_expires_s must exceed batch_deadline_s (the longest batch)")
        return self

    def job_cost_s(self, env_id: Any) -> float:
        """The first guess of one job's cost for `env_id`."""
        return self.job_costs_s.get(env_id, self.default_job_cost_s) if isinstance(env_id, str) else 0.0


class WorkerSettings(FarmSettings):
    """A worker node's: its pool, its cores and sandbox slots, its metrics."""

    concurrency: int | None = Field(default=None, ge=1, description="pool processes; default: one per CPU")
    cpus: list[int] | None = None
    slot_base: int = Field(default=0, ge=0, description="first sandbox slot of this node")
    max_tasks_per_child: int = Field(default=1000, ge=1)
    max_memory_per_child_mb: int = Field(default=2048, ge=64)
    extra_envs: dict[str, str] = Field(default_factory=dict, description="env id -> module:Class")
    datasets_dir: str | None = None
    warm_sandbox: bool = Field(default=True, description="start each child's sandbox before its first job")
    metrics_port: int = Field(default=9808, ge=0, le=65535, description="/metrics port; 0: no metrics")
    metrics_host: str = Field(default="127.0.0.1", description="address /metrics binds; 0.0.0.0 in clusters")
    metrics_dir: str | None = Field(default=None, description="multiprocess files; default: a fresh tmp dir")
    # Celery's task events (received, started, succeeded: one set per message, a chunk of jobs), which
    # Flower shows; about 1% of a farm's time on trivial jobs (bench/bench_farm.py).
    send_task_events: bool = True
    worker_lost_retries: int = Field(default=2, ge=0, description="redeliveries after a child dies")
    worker_lost_wait_s: float = Field(default=2.0, gt=0, description="wait for a dead child's result")
    # Workers keep results in Redis for this long, keyed by the job's content and its env's version,
    # and answer a job seen before from there (0: off). For loops that re-score the same programs.
    result_cache_ttl_s: int = Field(default=0, ge=0)
    # Sessions (workers.session_host): live interpreters the node keeps for agents, beside its pool. Their
    # number, and the share of the node's cores they may use together, are what batch scoring keeps.
    sessions: int = Field(default=32, ge=0, le=4096, description="sessions held at once; 0: none")
    session_cpu_share: float = Field(default=0.5, gt=0, le=1, description="of the node's cores, for all")
    session_max_lifetime_s: float = Field(default=24 * 3600.0, gt=0, description="no session lives longer")
    # What the session host holds of its sessions' output at once, all of them together: each
    # session's cap per stream comes from it (workers.session_host.output_budget).
    session_output_mb: int = Field(default=256, ge=1, description="output held for all sessions at once")
    # Workspaces (workers.workspaces): an uploaded archive unpacked once per node, at most this large.
    session_workspace_mb: int = Field(default=1024, ge=1, description="a workspace's files, unpacked")


class GatewaySettings(ClientSettings):
    """The HTTP gateway's (`evalfarm gateway`): a producer with a front door."""

    gateway_token: str | None = Field(default=None, description="bearer token; required off loopback")
    gateway_max_body_bytes: int = Field(default=32 << 20, ge=1024)
    gateway_max_workspace_bytes: int = Field(default=256 << 20, ge=1024, description="an uploaded workspace")
    gateway_max_jobs: int = Field(default=4096, ge=1, description="jobs (or codes, queries) per request")
    gateway_deadline_s: float = Field(default=600.0, gt=0, description="a native request's default deadline")
    # Under OpenRLHF's remote reward client's own 180 s timeout, so that it sees the 503 (and retries)
    # rather than giving up on a request the farm is still scoring.
    gateway_openrlhf_deadline_s: float = Field(default=150.0, gt=0, description="/get_reward's deadline")
    gateway_linger_s: float = Field(default=0.05, ge=0, description="longest micro-batch wait, under load")
    gateway_batch_jobs: int = Field(default=1024, ge=1, description="most jobs per micro-batch")


def check_removed(environ: Mapping[str, str]) -> None:
    """Refuse a variable the farm no longer reads (`REMOVED_VARIABLES`), naming its replacement."""
    for name in sorted(environ):
        if name.upper() in REMOVED_VARIABLES:
            raise ConfigError(
                f"{name.upper()} is no longer read ({REMOVED_VARIABLES[name.upper()]}): unset it"
            )


class Settings(WorkerSettings, GatewaySettings):
    """Every role's settings at once: for `evalfarm up`, which starts nodes, a gateway and producers."""
