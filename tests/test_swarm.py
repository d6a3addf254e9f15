"""The swarm stack, for real: a single-node swarm, `docker stack deploy -c deploy/stack.yml`, a batch
scored through the gateway and by a producer on the stack's network, the Redis master killed, the
batch scored again on the new master, Prometheus's view, and `docker stack rm` stopping the worker.

Runs where a Docker engine answers and can run a swarm (skipped otherwise); a swarm this test
starts it also leaves. Images come from the usual variables (`BASE_IMAGE` to build the worker's,
`REDIS_IMAGE`, `PROMETHEUS_IMAGE`; docs/swarm.md says what a stand-in needs); Sentinel keeps its
default `down-after-milliseconds` of the stack file (5 s). Every name (stack, secrets, node labels,
ports) is the test's own, so a farm already running on the swarm is not touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from farm_support import ROOT, docker_missing, wait_for

from evalfarm.workers.embedded import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2400)]

TOKEN = "swarm-test-token"
PASSWORD = "5eeded0swarm"


def docker(
    *args: str, timeout: float = 600, check: bool = True, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, **kwargs)
    if check:
        assert done.returncode == 0, (
            f"docker {' '.join(args[:3])}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        )
    return done


def containers(stack: str, service: str) -> list[str]:
    """The running containers of one service of the stack."""
    found = docker("ps", "-q", "--filter", f"label=com.docker.swarm.service.name={stack}_{service}")
    return found.stdout.split()


def in_service(stack: str, service: str, *command: str) -> str:
    """A command's output in the service's (first) container."""
    return docker("exec", containers(stack, service)[0], *command, timeout=120).stdout


def gateway(port: int, path: str, body: Any = None, timeout: float = 120) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout) as reply:
        return json.loads(reply.read())


def healthy(port: int) -> bool:
    try:
        return bool(gateway(port, "/v1/health", timeout=10).get("nodes", 0) >= 1)
    except OSError:
        return False


@pytest.fixture
def stack() -> Iterator[dict[str, Any]]:
    reason = docker_missing(["stack", "--help"], "no `docker stack` in this client")
    if reason:
        pytest.skip(reason)
    name = f"evalfarm-test-{os.getpid()}"
    image = f"evalfarm-worker:{name}"
    build_network = os.environ.get("EVALFARM_BUILD_NETWORK", "default")
    docker("build", "--network", build_network, "-f", "deploy/Dockerfile", "--build-arg",
           f"BASE_IMAGE={os.environ.get('BASE_IMAGE', 'python:3.11-slim-bookworm')}", "-t", image, ".",
           cwd=ROOT, timeout=3000)  # fmt: skip
    state = docker("info", "--format", "{{.Swarm.LocalNodeState}}").stdout.strip()
    started_swarm = state == "inactive"
    if started_swarm:
        docker("swarm", "init", "--advertise-addr", "127.0.0.1")
    node = docker("info", "--format", "{{.Swarm.NodeID}}").stdout.strip()
    labels = ["evalfarm.worker=true", "evalfarm.redis-a=true", "evalfarm.redis-b=true"]
    secrets = {"redis_password": PASSWORD, "gateway_token": TOKEN, "flower_password": "flower-pw"}
    ports = {"GATEWAY_PORT": free_port(), "FLOWER_PORT": free_port()}
    env = {
        **os.environ,
        **{key: str(value) for key, value in ports.items()},
        "EVALFARM_IMAGE": image,
        "EVALFARM_SECRETS": name,
        "WORKER_MEMORY_LIMIT": "4g",
        # The engine's socket on this machine, for the launcher (the client's DOCKER_HOST, if set).
        "DOCKER_SOCKET": os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock").removeprefix("unix://"),
    }
    try:
        for label in labels:
            docker("node", "update", "--label-add", label, node)
        for secret, value in secrets.items():
            docker("secret", "create", f"{name}_{secret}", "-", input=value)
        docker("stack", "deploy", "-c", "deploy/stack.yml", name, cwd=ROOT, env=env)
        wait_for(lambda: healthy(ports["GATEWAY_PORT"]), 600, "the gateway to see a live worker node")
        yield {"name": name, "image": image, "ports": ports}
    finally:
        # As docs/swarm.md says to take a farm down: the launchers first, so that each worker's warm
        # shutdown hands its work back while Redis is up; they stop their workers before they exit.
        docker("service", "rm", f"{name}_worker-launcher", check=False)
        stopped = gone(name, "-worker-", 300)
        docker("stack", "rm", name, check=False)
        gone(name, "", 300)
        left = docker("ps", "-aq", "--filter", f"label=com.docker.stack.namespace={name}").stdout.split()
        if left:
            docker("rm", "-f", *left, check=False)
        volumes = docker("volume", "ls", "-q", "--filter", f"name={name}_").stdout.split()
        if volumes:
            docker("volume", "rm", "-f", *volumes, check=False)
        for secret in secrets:
            docker("secret", "rm", f"{name}_{secret}", check=False)
        for label in labels:
            docker("node", "update", "--label-rm", label.split("=")[0], node, check=False)
        if started_swarm:
            docker("swarm", "leave", "--force", check=False)
        docker("image", "rm", image, check=False)
        assert stopped, "the launcher's service was removed, and its worker kept running"
        assert not left, f"containers left behind by `docker stack rm`: {left}"


def gone(stack: str, part: str, timeout_s: float) -> bool:
    """Whether every container of the stack whose name holds `part` is gone within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        names = docker(
            "ps", "-a", "--format", "{{.Names}}", "--filter", f"label=com.docker.stack.namespace={stack}"
        )
        if not [n for n in names.stdout.split() if part in n]:
            return True
        time.sleep(2)
    return False


JOBS = [
    *({"id": f"py{i}", "env": "program", "code": f"print({i} * 3)"} for i in range(6)),
    {"id": "cpp", "env": "program", "language": "cpp",
     "code": '#include <cstdio>\nint main() { std::puts("c++"); }'},
    # The sandbox's empty network namespace: Redis is on the stack's network, but not for programs.
    {"id": "net", "env": "program", "code": (
        "import socket\ntry:\n    socket.create_connection(('redis-a', 6379), timeout=3)\n"
        "    print('reached')\nexcept OSError as error:\n    print('refused', type(error).__name__)"
    )},
]  # fmt: skip


def assert_scores(stack: dict[str, Any]) -> None:
    results = gateway(stack["ports"]["GATEWAY_PORT"], "/v1/score", {"jobs": JOBS}, timeout=300)["results"]
    assert [r["status"] for r in results] == ["ok"] * len(JOBS), results
    assert [r["stdout"] for r in results[:6]] == [f"{i * 3}\n" for i in range(6)]
    assert results[6]["stdout"] == "c++\n"
    assert results[7]["stdout"].startswith("refused"), results[7]


def master(stack: dict[str, Any]) -> str:
    """The master's name as the first Sentinel says."""
    said = in_service(stack["name"], "sentinel-1", "env", f"REDISCLI_AUTH={PASSWORD}", "redis-cli", "-p",
                      "26379", "sentinel", "get-master-addr-by-name", "evalfarm")  # fmt: skip
    return said.split()[0] if said.split() else ""


def replication(stack: dict[str, Any], service: str) -> str:
    """What one Redis server says of its replication (empty while it is not running)."""
    if not containers(stack["name"], service):
        return ""
    done = docker("exec", containers(stack["name"], service)[0], "env", f"REDISCLI_AUTH={PASSWORD}",
                  "redis-cli", "info", "replication", check=False)  # fmt: skip
    return done.stdout


def producer_on_the_network(stack: dict[str, Any]) -> list[str]:
    """A Python producer in a container on the stack's network: its batch's stdout, through Sentinel."""
    script = (
        "import json, os\nfrom evalfarm import Farm\n"
        "with Farm(progress=False) as farm:\n"
        "    print(json.dumps([r['stdout'] for r in farm.score("
        "[{'id': str(i), 'env': 'program', 'code': f'print({i} + 40)'} for i in range(4)])]))\n"
    )
    url = ";".join(f"sentinel://:{PASSWORD}@sentinel-{i}:26379" + ("/0" if i == 1 else "") for i in (1, 2, 3))
    done = docker("run", "--rm", "--network", f"{stack['name']}_farm",
                  "--entrypoint", "/opt/evalfarm/bin/python",
                  "-e", f"EVALFARM_BROKER_URL={url}", "-e", "EVALFARM_REDIS_MASTER=evalfarm",
                  "-e", f"EVALFARM_REDIS_SENTINEL_PASSWORD={PASSWORD}",
                  stack["image"], "-c", script, timeout=300)  # fmt: skip
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def prometheus(stack: dict[str, Any], query: str) -> str:
    return in_service(
        stack["name"], "prometheus", "promtool", "query", "instant", "http://127.0.0.1:9090", query
    )


def test_the_stack_scores_follows_a_failover_and_is_watched(stack: dict[str, Any]) -> None:
    name = stack["name"]
    # The launcher started the worker with the compose file's security options, which a swarm
    # service cannot have; the sandbox's walls need them (the scores below run inside them).
    (worker,) = docker("ps", "-q", "--filter", f"name={name}-worker-").stdout.split()
    host = json.loads(docker("inspect", worker).stdout)[0]["HostConfig"]
    assert host["MaskedPaths"] == [] and host["CapDrop"] == ["ALL"] and host["ReadonlyRootfs"]
    assert any(opt.startswith("seccomp=") for opt in host["SecurityOpt"]), host["SecurityOpt"]
    assert "no-new-privileges:true" in host["SecurityOpt"]
    assert json.loads(docker("inspect", worker).stdout)[0]["Config"]["StopTimeout"] == 1000
    assert_scores(stack)
    assert producer_on_the_network(stack) == ["40\n", "41\n", "42\n", "43\n"]

    # Prometheus finds the worker by its alias, and has its failover counter at 0 before the fault
    # (an alert on the counter's increase needs a sample from before it).
    wait_for(lambda: "=> 1 @" in prometheus(stack, 'up{job="evalfarm-workers"}'), 120, "Prometheus to scrape")
    wait_for(
        lambda: "=> 0 @" in prometheus(stack, "evalfarm_redis_master_changes_total"), 120, "a counter at 0"
    )

    # The machine that runs the master is lost: its Redis dies at once (SIGKILL), and swarm cannot
    # start it again (its data volume is on that machine). (A master killed and started again in
    # place within Sentinel's down-after time is a restart, not a failover: its AOF holds its data.)
    assert master(stack) == "redis-a"
    docker("kill", containers(name, "redis-a")[0])
    docker("service", "scale", "--detach", f"{name}_redis-a=0")
    killed = time.monotonic()
    wait_for(lambda: master(stack) == "redis-b", 180, "the Sentinels to promote redis-b")
    promoted = time.monotonic()
    assert_scores(stack)
    assert producer_on_the_network(stack) == ["40\n", "41\n", "42\n", "43\n"]
    print(f"swarm failover: promoted {promoted - killed:.1f} s after the kill, "
          f"scored again {time.monotonic() - killed:.1f} s after it")  # fmt: skip
    # The machine comes back: redis-a asks the Sentinels and joins the new master as its replica,
    # instead of serving its older data as a second master.
    docker("service", "scale", "--detach", f"{name}_redis-a=1")
    wait_for(lambda: "master_host:redis-b" in replication(stack, "redis-a"), 180, "redis-a to follow redis-b")
    assert master(stack) == "redis-b"
    # The Sentinels take orders only from whoever has the farm's password.
    refused = docker("exec", containers(name, "sentinel-2")[0], "redis-cli", "-p", "26379", "sentinel",
                     "masters", check=False)  # fmt: skip
    assert "NOAUTH" in refused.stdout + refused.stderr

    # A launcher killed outright: swarm starts another, which adopts the running worker.
    (killed,) = containers(name, "worker-launcher")
    docker("kill", killed)
    wait_for(lambda: containers(name, "worker-launcher") not in ([], [killed]), 120, "a new launcher")
    (launcher,) = containers(name, "worker-launcher")
    wait_for(lambda: "adopting the running worker" in docker("logs", launcher).stderr, 60, "the adoption")
    assert docker("ps", "-q", "--filter", f"name={name}-worker-").stdout.split() == [worker]
    assert_scores(stack)

    # Prometheus saw the failover through the node's exporter.
    wait_for(
        lambda: "EvalfarmRedisMasterChanged" in prometheus(stack, 'ALERTS{alertstate="firing"}'),
        180,
        "the master-change alert",
    )
