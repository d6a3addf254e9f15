"""A farm whose Redis is watched by Sentinel, and nodes that cannot start.

Real `redis-server` processes on loopback (a master, a replica, three Sentinels: the same binary in
Sentinel mode) and a real node, producers, session host, gateway, metrics exporter and Flower, all
given the Sentinels' addresses in kombu's form and the master's name. Failovers mid-batch are chaos scenarios
(`chaos_support`: `sentinel_failover`, `sentinel_publishing`).
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from farm_support import ROOT, assert_producers_score, flower_sees, wait_for, whole_farm, worker_env
from sentinel_support import MASTER, SentinelRedis
from tls_support import TlsRedis, make_ca

from evalfarm.broker.farm import Farm
from evalfarm.broker.settings import Settings
from evalfarm.workers.embedded import NodeProcess, free_port

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def sentinel_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    sentinels = SentinelRedis(tmp_path_factory.mktemp("sentinel")).start()
    try:
        with whole_farm(
            sentinels.url, "sentinel@localhost", concurrency=2, EVALFARM_REDIS_MASTER=MASTER
        ) as farm:
            yield farm
    finally:
        sentinels.close()


def wait_for_pool(farm: Farm) -> None:
    """Until a node has come up on the master the Sentinels name."""
    wait_for(lambda: farm.status()["processes"] > 0, 60, "a node on the Sentinels' master")


def jobs(n: int) -> list[dict[str, Any]]:
    return [{"id": f"j{i}", "env": "program", "code": f"print({i} * 2)"} for i in range(n)]


def test_producers_score_through_the_sentinels(sentinel_farm: dict[str, Any]) -> None:
    assert_producers_score(sentinel_farm["settings"])
    with Farm(settings=sentinel_farm["settings"], progress=False) as farm:
        assert farm.status()["sessions"]["hosts"] == 1


def test_the_gateway_and_the_exporter_find_the_master(sentinel_farm: dict[str, Any]) -> None:
    health = requests.get(f"{sentinel_farm['gateway']}/v1/health", timeout=30).json()
    assert (health["status"], health["nodes"]) == ("ok", 1)
    answer = requests.post(f"{sentinel_farm['gateway']}/v1/score", json={"jobs": jobs(3)}, timeout=60).json()
    assert [r["stdout"] for r in answer["results"]] == ["0\n", "2\n", "4\n"]
    metrics = urllib.request.urlopen(sentinel_farm["metrics"], timeout=30).read().decode()
    assert "evalfarm_broker_up 1.0" in metrics


def test_flower_finds_the_master_and_sees_the_node(sentinel_farm: dict[str, Any]) -> None:
    wait_for(lambda: flower_sees(sentinel_farm["flower"], "sentinel@localhost"), 90, "Flower to see the node")


# -- nodes that cannot start --------------------------------------------------------------------


def evalfarm(*args: str, timeout_s: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "evalfarm.workers.cli", *args]
    return subprocess.run(
        command, cwd=ROOT, env=worker_env(**env), capture_output=True, text=True, timeout=timeout_s
    )


@pytest.mark.parametrize(
    ("url", "env", "said"),
    [
        ("sentinel://127.0.0.1:26379;sentinel://127.0.0.1:26380", {}, "EVALFARM_REDIS_MASTER"),
        ("redis://127.0.0.1:6379/0?master_name=m", {}, "query parameter 'master_name'"),
        ("redis://127.0.0.1:port/0", {}, "Port could not be cast to integer"),
        ("redis://127.0.0.1:6379/zero", {}, "is not a number"),
        ("http://127.0.0.1:6379", {}, "expected redis://, rediss://, or sentinel://"),
        (
            "sentinel://127.0.0.1:x;sentinel://127.0.0.1:1",
            {"EVALFARM_REDIS_MASTER": "m"},
            "not a Sentinel address",
        ),
    ],
)
def test_a_node_with_a_bad_url_says_why_and_exits_non_zero(url: str, env: dict[str, str], said: str) -> None:
    done = evalfarm("worker", "--broker", url, **env)
    assert done.returncode == 2
    assert said in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_a_node_that_cannot_reach_redis_after_its_retries_exits_non_zero() -> None:
    done = evalfarm(
        "worker", "--broker", f"redis://127.0.0.1:{free_port()}/0", EVALFARM_BROKER_CONNECT_RETRIES="1"
    )
    assert done.returncode != 0, done.stderr[-2000:]
    assert "Connection refused" in done.stderr


def test_a_gateway_whose_port_is_taken_exits_non_zero(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = evalfarm("gateway", "--broker", "redis://127.0.0.1:1/0", "--port", str(port))
    assert done.returncode != 0 and "address already in use" in done.stderr


def test_a_failover_shows_in_the_nodes_metrics(tmp_path: Path) -> None:
    """The exporter follows the master to its new server and counts the change; the live nodes
    are counted too (the alerts EvalfarmRedisMasterChanged and EvalfarmNodesLost read them)."""
    sentinels = SentinelRedis(tmp_path).start()
    port = free_port()
    env = worker_env(EVALFARM_REDIS_MASTER=MASTER, EVALFARM_METRICS_PORT=str(port))
    node = NodeProcess(sentinels.url, ["--concurrency", "1", "--name", "watched@localhost"], env).start()
    url = f"http://127.0.0.1:{port}/metrics"

    def scraped() -> str:
        try:
            return urllib.request.urlopen(url, timeout=5).read().decode()
        except OSError:
            return ""

    try:
        deadline = time.monotonic() + 60
        while "evalfarm_nodes_live 1.0" not in scraped():
            assert time.monotonic() < deadline, scraped()
            time.sleep(0.2)
        assert "evalfarm_redis_master_changes_total 0.0" in scraped()
        old = sentinels.kill_master()
        deadline = time.monotonic() + 60
        while "evalfarm_redis_master_changes_total 1.0" not in scraped():
            assert time.monotonic() < deadline, scraped()
            time.sleep(0.5)
        assert sentinels.master_port() not in (None, old)
        assert "evalfarm_broker_up 1.0" in scraped()
    finally:
        node.stop(grace_s=10)
        sentinels.close()


def test_a_farm_on_sentinels_whose_master_needs_a_password(tmp_path: Path) -> None:
    """The master's password on the Sentinel URL reaches every client: workers, replies, producers.
    Without it nobody can write to the farm's Redis (a forged reply is refused)."""
    import redis

    sentinels = SentinelRedis(tmp_path, password="s3cret-pw").start()
    env = worker_env(EVALFARM_REDIS_MASTER=MASTER)
    node = NodeProcess(sentinels.url, ["--concurrency", "1", "--name", "locked@localhost"], env).start()
    try:
        settings = Settings(broker_url=sentinels.url, redis_master=MASTER, batch_deadline_s=120.0)
        with Farm(settings=settings, progress=False) as farm:
            wait_for_pool(farm)
            assert [r["stdout"] for r in farm.score(jobs(4))] == ["0\n", "2\n", "4\n", "6\n"]
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=sentinels.master_port(), socket_timeout=2).rpush("evalfarm:reply:forged", "{}")
    finally:
        node.stop(grace_s=10)
        sentinels.close()


def test_sentinels_with_a_password_of_their_own(tmp_path: Path) -> None:
    """Sentinels that require a password: the farm gives it in EVALFARM_REDIS_SENTINEL_PASSWORD to
    every client (node, producer, gateway, exporter, Flower) and follows a failover; without it a client
    cannot even learn where the master is."""
    import redis

    sentinels = SentinelRedis(tmp_path, password="master-pw", sentinel_password="sentinel-pw").start()
    guarded = {"EVALFARM_REDIS_MASTER": MASTER, "EVALFARM_REDIS_SENTINEL_PASSWORD": "sentinel-pw"}
    try:
        with whole_farm(sentinels.url, "guarded@localhost", **guarded) as whole:
            with Farm(settings=whole["settings"], progress=False) as farm:
                assert [r["stdout"] for r in farm.score(jobs(3))] == ["0\n", "2\n", "4\n"]
                old = sentinels.kill_master()  # the Sentinels agree on a new master among themselves
                wait_for(lambda: sentinels.master_port() not in (None, old), 60, "a failover")
                assert [r["stdout"] for r in farm.score(jobs(3))] == ["0\n", "2\n", "4\n"]
            metrics = urllib.request.urlopen(whole["metrics"], timeout=30).read().decode()
            assert "evalfarm_broker_up 1.0" in metrics
            wait_for(lambda: flower_sees(whole["flower"], "guarded@localhost"), 90, "Flower to see the node")

        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=sentinels.sentinel_ports[0], socket_timeout=2).execute_command(
                "SENTINEL", "get-master-addr-by-name", MASTER
            )
        unguarded = Settings(broker_url=sentinels.url, redis_master=MASTER, batch_deadline_s=5.0)
        with Farm(settings=unguarded, progress=False) as farm:
            assert farm.status()["redis"] is False  # the Sentinels would not name the master
    finally:
        sentinels.close()


@pytest.mark.skipif(bool(TlsRedis.available()), reason=str(TlsRedis.available()))
def test_a_farm_on_sentinels_that_speak_only_tls(tmp_path: Path) -> None:
    """Servers and Sentinels with no plain port: the TLS options on the first Sentinel address reach
    every connection (to the Sentinels and to the master they name) of the node, the producers (sync,
    asyncio, a session), the gateway, the exporter and Flower, through a failover; a client that
    does not trust the CA learns nothing from a Sentinel."""
    import redis

    files = make_ca(tmp_path)
    sentinels = SentinelRedis(tmp_path, password="tls-master-pw", tls=files).start()
    assert "?ssl_ca_certs=" in sentinels.url.split(";")[0]
    try:
        with whole_farm(sentinels.url, "sealed@localhost", EVALFARM_REDIS_MASTER=MASTER) as farm:
            assert_producers_score(farm["settings"])
            old = sentinels.kill_master()
            wait_for(lambda: sentinels.master_port() not in (None, old), 60, "a failover")
            assert_producers_score(farm["settings"])
            answer = requests.post(f"{farm['gateway']}/v1/score", json={"jobs": jobs(2)}, timeout=120).json()
            assert [r["stdout"] for r in answer["results"]] == ["0\n", "2\n"]
            metrics = urllib.request.urlopen(farm["metrics"], timeout=30).read().decode()
            assert "evalfarm_broker_up 1.0" in metrics
            wait_for(lambda: flower_sees(farm["flower"], "sealed@localhost"), 90, "Flower to see the node")

        sentinel = sentinels.sentinel_ports[0]
        stranger = redis.Redis(port=sentinel, ssl=True, ssl_ca_certs=str(files["other-ca"]), socket_timeout=2)
        with pytest.raises(redis.ConnectionError):  # the Sentinel's certificate is not one it trusts
            stranger.execute_command("SENTINEL", "get-master-addr-by-name", MASTER)
        with pytest.raises(redis.ConnectionError):  # and no plain port answers
            redis.Redis(port=sentinel, socket_timeout=2).execute_command("SENTINEL", "masters")
    finally:
        sentinels.close()


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("sentinel://127.0.0.1:1?ssl_ca_certs=/nonexistent.pem", "no such file"),
        ("sentinel://127.0.0.1:1?ssl_cert_reqs=maybe", "expected required, optional or none"),
        ("sentinel://127.0.0.1:1;sentinel://127.0.0.1:2?ssl_cert_reqs=required", "first Sentinel address"),
        # Known to kombu, not to the other clients: it would reach only some connections.
        ("sentinel://127.0.0.1:1?ssl_check_hostname=false;sentinel://127.0.0.1:2", "unknown TLS option"),
    ],
)
def test_tls_options_on_a_sentinel_url_that_cannot_work_are_refused(url: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        Settings(broker_url=url, redis_master=MASTER)


def test_a_sentinel_urls_master_name_is_taken_off_it_into_the_setting() -> None:
    """Celery's and kombu's users write the master's name on the URL; every client gets it from the
    setting, and no client sees the parameter (kombu would pass it to its connection)."""
    given = "sentinel://:pw@h1:26379/0;sentinel://h2:26379?master_name=evalfarm"
    settings = Settings(broker_url=given)
    assert (settings.broker_url, settings.redis_master) == (
        "sentinel://:pw@h1:26379/0;sentinel://h2:26379",
        MASTER,
    )
    assert Settings(broker_url=given, redis_master=MASTER).redis_master == MASTER
    assert settings.with_broker(given).broker_url == settings.broker_url
    with_tls = Settings(broker_url="sentinel://h1?ssl_cert_reqs=none&master_name=m;sentinel://h2")
    assert (with_tls.broker_url, with_tls.redis_master) == (
        "sentinel://h1?ssl_cert_reqs=none;sentinel://h2",
        "m",
    )


@pytest.mark.parametrize(
    ("url", "master", "said"),
    [
        ("sentinel://h1?master_name=a;sentinel://h2?master_name=b", None, "names two masters"),
        ("sentinel://h1;sentinel://h2?master_name=a", "b", "names the master 'a' but redis_master"),
        ("sentinel://h1;sentinel://h2?master_name=", None, "master_name is empty"),
        ("sentinel://h1;sentinel://h2?master_name=m&socket_timeout=3", None, "'socket_timeout' is not one"),
        ("redis://h:6379/0?master_name=m", None, "'master_name' is not one the farm applies"),
        ("rediss://h:6379/0?health_check_interval=3", None, "'health_check_interval' is not one"),
    ],
)
def test_a_url_parameter_the_farm_does_not_apply_everywhere_is_refused(
    url: str, master: str | None, said: str
) -> None:
    with pytest.raises(ValueError, match=said):
        Settings(broker_url=url, redis_master=master)


def test_tls_on_a_sentinel_url_checks_certificates_unless_it_says_not_to(tmp_path: Path) -> None:
    """What the TLS options of a Sentinel URL become: the master's connection options, and kombu's
    and Celery's settings for the Sentinels and the result backend (each checked end to end above)."""
    from evalfarm.broker.app import celery_config
    from evalfarm.broker.connections import SOCKET_OPTIONS, sentinel_parts

    unchecked = Settings(broker_url="sentinel://h1?ssl_cert_reqs=none;sentinel://h2", redis_master=MASTER)
    assert sentinel_parts(unchecked.broker_url or "")[1] == {"ssl": True, "ssl_cert_reqs": "none"}
    ca = tmp_path / "ca.pem"
    ca.write_text("a CA")
    checked = Settings(broker_url=f"sentinel://:pw@h1/2?ssl_ca_certs={ca};sentinel://h2", redis_master=MASTER)
    first = (checked.broker_url or "").split(";")[0]
    assert first.endswith(f"ssl_ca_certs={ca}&ssl_cert_reqs=required")  # added: certificates are checked
    tls = {"ssl_ca_certs": str(ca), "ssl_cert_reqs": "required"}
    assert sentinel_parts(checked.broker_url or "")[1] == {"password": "pw", "db": 2, "ssl": True, **tls}
    config = celery_config(checked)
    assert config["redis_backend_use_ssl"] == tls
    # The Sentinels' connections keep the timeouts every connection has (redis-py copies them only
    # when it is given no sentinel_kwargs at all), and speak TLS.
    assert config["broker_transport_options"]["sentinel_kwargs"] == {**SOCKET_OPTIONS, "ssl": True, **tls}
    assert config["result_backend_transport_options"]["sentinel_kwargs"] == {
        **SOCKET_OPTIONS,
        "ssl": True,
        **tls,
    }
    plain = celery_config(Settings(broker_url="sentinel://h1;sentinel://h2", redis_master=MASTER))
    assert "redis_backend_use_ssl" not in plain
    assert plain["broker_transport_options"]["sentinel_kwargs"] == SOCKET_OPTIONS
