"""The compose cluster, for real: build, `up --wait`, score a batch, ask Prometheus, `down`.

Runs where a Docker engine answers and Compose v2 is installed (skipped otherwise). Images come from
the usual variables (`BASE_IMAGE`, `REDIS_IMAGE`, `PROMETHEUS_IMAGE`; a host without a registry builds
stand-ins, see docs/compose.md); Grafana is left out (it adds nothing the test checks). Every port is a free
one on loopback and the project has a name of its own, so a cluster already running is not touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from farm_support import ROOT, client_settings, docker_missing

from evalfarm.broker.farm import Farm
from evalfarm.workers.embedded import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1800)]
SERVICES = ["redis", "worker", "gateway", "flower", "prometheus"]


@pytest.fixture
def cluster() -> Iterator[dict[str, Any]]:
    reason = docker_missing(["compose", "version"], "no docker compose v2 client here")
    if reason:
        pytest.skip(reason)
    ports = {name: free_port() for name in ("REDIS_PORT", "GATEWAY_PORT", "FLOWER_PORT", "PROMETHEUS_PORT")}
    secrets = {
        "EVALFARM_REDIS_PASSWORD": "0c0ffee0compose",
        "EVALFARM_GATEWAY_TOKEN": "compose-test-token",
        "FLOWER_BASIC_AUTH": "operator:compose-test",
    }
    env = {**os.environ, **{k: str(v) for k, v in ports.items()}, "WORKER_REPLICAS": "2", **secrets}
    compose = [
        "docker",
        "compose",
        "-p",
        f"evalfarm-test-{os.getpid()}",
        "-f",
        str(ROOT / "docker-compose.yml"),
    ]
    try:
        up = subprocess.run([*compose, "up", "-d", "--build", "--wait", *SERVICES], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=1500)  # fmt: skip
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        yield {"ports": ports, "env": env}
    finally:
        subprocess.run(
            [*compose, "down", "-v", "--timeout", "60"], cwd=ROOT, env=env, capture_output=True, timeout=600
        )


def prometheus(port: int, query: str) -> list[Any]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    with urllib.request.urlopen(url, timeout=10) as reply:
        return list(json.loads(reply.read())["data"]["result"])


def test_the_compose_cluster_scores_and_is_scraped(cluster: dict[str, Any]) -> None:
    ports = cluster["ports"]
    broker = f"redis://:0c0ffee0compose@127.0.0.1:{ports['REDIS_PORT']}/0"
    jobs = [
        *({"id": f"ok{i}", "env": "program", "code": f"print({i})"} for i in range(6)),
        {"id": "crash", "env": "program", "code": "raise SystemExit(3)"},
        {"id": "numpy", "env": "program", "code": "import numpy\nprint(int(numpy.arange(5).sum()))"},
        {
            "id": "cpp",
            "env": "program",
            "code": '#include <cstdio>\nint main() { std::puts("c++"); }',
            "language": "cpp",
        },
    ]
    with Farm(settings=client_settings(broker), progress=False) as farm:
        results = farm.score(jobs)
    assert [r["status"] for r in results] == ["ok"] * 6 + ["runtime_error", "ok", "ok"], results[-1]
    assert results[-2]["stdout"] == "10\n"
    assert (results[-1]["stdout"], results[-1]["compile"]["status"]) == ("c++\n", "ok")  # g++ is in the image
    request = urllib.request.Request(
        f"http://127.0.0.1:{ports['GATEWAY_PORT']}/v1/health",
        headers={"Authorization": "Bearer compose-test-token"},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        health = json.loads(reply.read())
    assert health["nodes"] == 2  # both replicas live
    deadline = time.monotonic() + 120
    while True:  # Prometheus scrapes every 15 s
        samples = prometheus(ports["PROMETHEUS_PORT"], "sum(evalfarm_jobs_total)")
        if samples and float(samples[0]["value"][1]) >= len(jobs):
            break
        assert time.monotonic() < deadline, samples
        time.sleep(3)
    assert len(prometheus(ports["PROMETHEUS_PORT"], "up{job='evalfarm-workers'} == 1")) == 2
    with pytest.raises(redis.AuthenticationError):  # without the password, no forged reply
        redis.Redis(port=ports["REDIS_PORT"], socket_timeout=5).rpush("evalfarm:reply:forged", "{}")
