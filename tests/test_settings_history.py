"""Settings never vanish: every variable the farm ever read is read still, or refused at start with a
message naming its replacement.

`EVER_READ` is every `EVALFARM_*` variable a process of the farm has read in the project's history
(its settings' fields, the deploy scripts' own variables); a variable added later joins the list
when it is added. A test of the behaviour behind the ones operators set most follows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evalfarm.broker.errors import ConfigError
from evalfarm.broker.settings import REMOVED_VARIABLES, ClientSettings, Settings

ROOT = Path(__file__).resolve().parent.parent

EVER_READ = """
BACKGROUND_PRIORITY BATCH_DEADLINE_S BROKER_CONNECT_RETRIES BROKER_URL CONCURRENCY CPUS
CPUS_PER_WORKER DATASETS_DIR DEDUPLICATE DEFAULT_JOB_COST_S DEFAULT_QUEUE DOCKER_SOCKET ENV_QUEUES
EPISODES_PER_PART EXTRA_ENVS FARM_PROCESSES FLOWER_AUTH GATEWAY_BATCH_JOBS GATEWAY_DEADLINE_S
GATEWAY_LINGER_S GATEWAY_MAX_BODY_BYTES GATEWAY_MAX_JOBS GATEWAY_OPENRLHF_DEADLINE_S GATEWAY_TOKEN
HEALTH_CHECK_INTERVAL_S HEARTBEAT_INTERVAL_S JOB_COSTS_S JOB_RETRIES LOST_TASK_AUDIT_S MAX_CHUNK_JOBS
MAX_MEMORY_PER_CHILD_MB MAX_OVERHEAD MAX_TASKS_PER_CHILD MESSAGES_PER_PROCESS MESSAGE_OVERHEAD_S
METRICS_DIR METRICS_HOST METRICS_PORT NODE_DEAD_AFTER_S POLL_INTERVAL_S PRIORITY_LANE PUBLISH_RETRIES
REDIS_MASTER REDIS_SENTINEL_PASSWORD REPLY_TTL_S RESULT_BACKEND RESULT_CACHE_TTL_S RESULT_EXPIRES_S
SEATS_DIR SECCOMP_PROFILE SEND_TASK_EVENTS SESSIONS SESSION_CPU_SHARE SESSION_MAX_LIFETIME_S SLOT_BASE
TASK_HARD_TIME_LIMIT_S TASK_SOFT_TIME_LIMIT_S UNACKED_RESTORE_INTERVAL_S VISIBILITY_TIMEOUT_S
WARM_SANDBOX WORKER_LOST_RETRIES WORKER_LOST_WAIT_S WORKER_MEMORY_LIMIT WORKER_REPLICAS
""".split()

# Read outside the settings: by the deploy files (the image's entry point, the compose and stack files)
# and by the embedded farm's Flower (its basic auth).
OTHER_READERS = [
    ROOT / "deploy" / "worker-entrypoint.py",
    ROOT / "docker-compose.yml",
    ROOT / "deploy" / "stack.yml",
    ROOT / "workers" / "embedded.py",
]


def launcher_renamed() -> dict[str, str]:
    import importlib.util

    spec = importlib.util.spec_from_file_location("swarm_launcher", ROOT / "deploy" / "swarm-launcher.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.RENAMED)


def test_every_variable_ever_read_is_read_or_refused() -> None:
    fields = {f"EVALFARM_{name.upper()}" for name in Settings.model_fields}
    deploy = "\n".join(path.read_text() for path in OTHER_READERS)
    renamed = launcher_renamed()
    unaccounted = [
        name
        for name in (f"EVALFARM_{short}" for short in EVER_READ)
        if name not in fields and name not in deploy and name not in REMOVED_VARIABLES and name not in renamed
    ]
    assert unaccounted == []
    # A removed name is not also a live one.
    assert not set(REMOVED_VARIABLES) & (fields | set(renamed.values()))


@pytest.mark.parametrize("name", sorted(REMOVED_VARIABLES))
def test_a_removed_variable_stops_a_process_with_its_replacement(name: str) -> None:
    with pytest.raises(ConfigError, match=f"{name} is no longer read"):
        ClientSettings.from_env({name: "1"})
    done = subprocess.run(
        [sys.executable, "-m", "evalfarm.workers.cli", "worker", "--broker", "redis://127.0.0.1:1/0"],
        env={"PATH": "/usr/bin:/bin", name: "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and f"{name} is no longer read" in done.stderr, done.stderr[-500:]
    assert "Traceback" not in done.stderr


def test_the_swarm_launcher_refuses_its_variables_old_names() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "deploy" / "swarm-launcher.py")],
        env={"PATH": "/usr/bin:/bin", "EVALFARM_DOCKER_SOCKET": "unix:///x.sock"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "EVALFARM_DOCKER_SOCKET is no longer read: set LAUNCHER_DOCKER_SOCKET" in done.stderr


def test_the_deadlines_operators_set_are_read_by_the_processes_that_apply_them() -> None:
    """A producer's batch deadline and the gateway's, from the variables and from the command line."""
    code = (
        "import json; from evalfarm import Farm; from evalfarm.workers.options import settings_from\n"
        "farm = Farm('redis://127.0.0.1:1/0', progress=False)\n"
        "print(json.dumps([farm.settings.batch_deadline_s, settings_from().gateway_deadline_s,"
        " settings_from().gateway_openrlhf_deadline_s]))"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "EVALFARM_BATCH_DEADLINE_S": "77",
        "EVALFARM_GATEWAY_DEADLINE_S": "55",
        "EVALFARM_GATEWAY_OPENRLHF_DEADLINE_S": "44",
    }
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-1000:]
    assert json.loads(done.stdout) == [77.0, 55.0, 44.0]


def test_the_gateways_deadlines_are_options_of_its_command(monkeypatch: pytest.MonkeyPatch) -> None:
    from evalfarm.workers.cli import build_parser
    from evalfarm.workers.commands.gateway import gateway_settings

    monkeypatch.setenv("EVALFARM_GATEWAY_DEADLINE_S", "55")
    argv = ["gateway", "--broker", "redis://127.0.0.1:1/0", "--openrlhf-deadline-s", "120"]
    settings = gateway_settings(build_parser(argv).parse_args(argv))
    assert (settings.gateway_deadline_s, settings.gateway_openrlhf_deadline_s) == (55.0, 120.0)
    argv += ["--deadline-s", "30"]
    assert gateway_settings(build_parser(argv).parse_args(argv)).gateway_deadline_s == 30.0
    defaults = Settings()
    assert (defaults.gateway_deadline_s, defaults.gateway_openrlhf_deadline_s) == (600.0, 150.0)
