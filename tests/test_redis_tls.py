"""A farm whose Redis speaks only TLS and wants a password (`rediss://`, a CA made by the test).

A real Redis 7 with no plain port (`tls_support`), a real node, producers (sync, asyncio, a
session), the gateway, the node's metrics exporter and Flower, all given one URL:
`rediss://:PASSWORD@127.0.0.1:PORT/0?ssl_cert_reqs=required&ssl_ca_certs=ca.pem`. Refused: a
client that trusts another CA, one that speaks plain Redis, one with the wrong password, and
TLS options that cannot work (said in one line, exit code 2).
"""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import requests
from farm_support import ROOT, assert_producers_score, flower_sees, wait_for, whole_farm, worker_env
from tls_support import TlsRedis

from evalfarm.broker.farm import Farm
from evalfarm.broker.settings import Settings
from evalfarm.workers.embedded import free_port

pytestmark = [
    pytest.mark.integration,
    pytest.mark.timeout(300),
    pytest.mark.skipif(bool(TlsRedis.available()), reason=str(TlsRedis.available())),
]

PASSWORD = "9f2c-tls-test-password"


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsRedis]:
    server = TlsRedis(tmp_path_factory.mktemp("tls"), PASSWORD).start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def tls_farm(tls_redis: TlsRedis) -> Iterator[dict[str, Any]]:
    with whole_farm(tls_redis.url(), "tls@localhost", concurrency=2) as farm:
        yield farm


def jobs(n: int) -> list[dict[str, Any]]:
    return [{"id": f"t{i}", "env": "program", "code": f"print({i} + 100)"} for i in range(n)]


def test_producers_score_over_tls(tls_farm: dict[str, Any]) -> None:
    assert_producers_score(tls_farm["settings"])


def test_the_gateway_the_exporter_and_flower_speak_tls(tls_farm: dict[str, Any]) -> None:
    health = requests.get(f"{tls_farm['gateway']}/v1/health", timeout=30).json()
    assert (health["status"], health["nodes"]) == ("ok", 1)
    answer = requests.post(f"{tls_farm['gateway']}/v1/score", json={"jobs": jobs(2)}, timeout=60).json()
    assert [r["stdout"] for r in answer["results"]] == ["100\n", "101\n"]
    metrics = urllib.request.urlopen(tls_farm["metrics"], timeout=30).read().decode()
    assert "evalfarm_broker_up 1.0" in metrics and "evalfarm_nodes_live 1.0" in metrics

    wait_for(lambda: flower_sees(tls_farm["flower"], "tls@localhost"), 90, "Flower to see the node")


def test_a_program_on_the_node_cannot_learn_the_password(tls_farm: dict[str, Any]) -> None:
    """The node's environment holds the URL with the password; its programs see neither."""
    probe = (
        "import os, glob\n"
        "print(dict(os.environ))\n"
        "for path in glob.glob('/proc/*/environ') + glob.glob('/proc/*/cmdline'):\n"
        "    try:\n"
        "        print(open(path, 'rb').read())\n"
        "    except OSError as error:\n"
        "        print(path, error)\n"
    )
    with Farm(settings=tls_farm["settings"], progress=False) as farm:
        [result] = farm.score([{"id": "peek", "env": "program", "code": probe}])
    assert result["status"] == "ok" and "PATH" in result["stdout"], result
    assert PASSWORD not in result["stdout"] + result["stderr"]


def test_the_session_host_gets_the_password_on_no_command_line(tls_farm: dict[str, Any]) -> None:
    """Any local user can read a process's command line: the node hands its session host the
    settings (the broker URL with the password in it) on a pipe instead."""
    node = tls_farm["node"]
    hosts = [
        command
        for task in Path(f"/proc/{node.proc.pid}/task").iterdir()  # a thread of the node starts it
        for pid in (task / "children").read_text().split()
        if b"evalfarm.workers.session_host" in (command := Path(f"/proc/{pid}/cmdline").read_bytes())
    ]
    assert len(hosts) == 1 and PASSWORD.encode() not in hosts[0], hosts


def test_nobody_without_the_ca_or_the_password_gets_in(tls_redis: TlsRedis) -> None:
    with pytest.raises(redis.ConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        redis.Redis.from_url(tls_redis.url(ca="other-ca"), socket_timeout=5).ping()
    with pytest.raises(redis.ConnectionError):  # plain Redis on the TLS port: the server drops it
        redis.Redis(port=tls_redis.port, password=PASSWORD, socket_timeout=5).ping()
    with pytest.raises(redis.AuthenticationError):  # TLS, the right CA, no password: no forged reply
        redis.Redis.from_url(tls_redis.url(password=""), socket_timeout=5).rpush(
            "evalfarm:reply:forged", "{}"
        )


def evalfarm(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "evalfarm.workers.cli", *args]
    return subprocess.run(
        command, cwd=ROOT, env=worker_env(**env), capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize(
    ("which", "said"),
    [("other-ca", "CERTIFICATE_VERIFY_FAILED"), ("password", "invalid username-password pair")],
)
def test_a_node_refused_by_redis_says_why_and_exits_non_zero(
    tls_redis: TlsRedis, which: str, said: str
) -> None:
    url = tls_redis.url(ca="other-ca") if which == "other-ca" else tls_redis.url(password="wrong")
    done = evalfarm("worker", "--broker", url, EVALFARM_BROKER_CONNECT_RETRIES="1")
    assert done.returncode != 0 and said in done.stderr, done.stderr[-2000:]


@pytest.mark.parametrize(
    ("query", "said"),
    [
        (
            "ssl_ca_certs=/nonexistent/ca.pem",
            "ssl_ca_certs='/nonexistent/ca.pem' in the broker URL: no such file",
        ),
        (
            "ssl_cert_reqs=maybe",
            "ssl_cert_reqs='maybe' in the broker URL: expected required, optional or none",
        ),
    ],
)
def test_tls_options_that_cannot_work_are_refused_at_start(query: str, said: str) -> None:
    done = evalfarm("worker", "--broker", f"rediss://:x@127.0.0.1:{free_port()}/0?{query}")
    assert done.returncode == 2, done.stderr[-2000:]
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_rediss_url_checks_the_certificate_unless_it_says_not_to(tmp_path: Path) -> None:
    assert (
        Settings(broker_url="rediss://:p@h:6380/0").broker_url
        == "rediss://:p@h:6380/0?ssl_cert_reqs=required"
    )
    ca = tmp_path / "ca.pem"
    ca.write_text("")
    given = f"rediss://:p@h:6380/0?ssl_ca_certs={ca}&ssl_cert_reqs=CERT_NONE"
    assert (
        Settings(broker_url=given).broker_url == f"rediss://:p@h:6380/0?ssl_ca_certs={ca}&ssl_cert_reqs=none"
    )
    with pytest.raises(ValueError, match="query parameter 'x' is not one the farm applies"):
        Settings(broker_url="redis://h:6379/0?x=1")
