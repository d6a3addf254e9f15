"""The gateway's own Prometheus metrics, in a registry of its own (served at GET /metrics).

Labels come from bounded sets only: the route templates the gateway serves and HTTP status codes.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# From a fraction of a millisecond (a health check) to minutes (a batch of weight edits).
LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)


class GatewayMetrics:
    """Requests by route and code, their latency, those in flight, and the micro-batches' sizes."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "evalfarm_gateway_requests_total", "HTTP requests answered, by route and status code.",
            ["route", "code"], registry=self.registry,
        )  # fmt: skip
        self.latency = Histogram(
            "evalfarm_gateway_request_duration_seconds", "Time to answer a request, by route.",
            ["route"], buckets=LATENCY_BUCKETS_S, registry=self.registry,
        )  # fmt: skip
        self.in_flight = Gauge(
            "evalfarm_gateway_requests_in_flight", "Requests being answered now, by route.",
            ["route"], registry=self.registry,
        )  # fmt: skip
        self.jobs = Counter(
            "evalfarm_gateway_jobs_total",
            "Jobs sent to the farm, by route.",
            ["route"],
            registry=self.registry,
        )
        self.batch_jobs = Histogram(
            "evalfarm_gateway_batch_jobs", "Jobs per micro-batch: those of requests arriving together.",
            buckets=BATCH_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.session_runs = Counter(
            "evalfarm_gateway_session_runs_total", "Runs in sessions answered, by the run's status.",
            ["status"], registry=self.registry,
        )  # fmt: skip
        self.sessions_lost = Counter(
            "evalfarm_gateway_sessions_lost_total",
            "Runs answered session_lost: the node holding their session was gone.",
            registry=self.registry,
        )
        self.session_files = Counter(
            "evalfarm_gateway_session_files_total",
            "File requests of sessions (read, write, upload) and workspaces uploaded, by outcome.",
            ["op", "outcome"], registry=self.registry,
        )  # fmt: skip
