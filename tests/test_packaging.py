"""The built wheel, installed into a fresh venv as a trainer would: one import name, a light client.

`pip install evalfarm` must give `from evalfarm import Farm, AsyncFarm` and the trainers' reward
functions without the worker's dependencies (numpy, MinAtar, numba, prometheus-client) or the
gateway's (Starlette, uvicorn), and a command that needs them must say which extra to install.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("sandbox", "envs", "tasks", "broker", "gateway", "trainers", "workers")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(out),
         str(ROOT)],
        check=True, cwd=out,
    )  # fmt: skip
    [built] = out.glob("evalfarm-*.whl")
    return built


@pytest.fixture(scope="module")
def client_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed, no extras: what a trainer's environment gets."""
    venv = tmp_path_factory.mktemp("client") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([venv / "bin/python", "-m", "pip", "install", "--quiet", str(wheel)], check=True)
    return venv


def test_the_wheel_holds_one_import_name_and_the_sandbox_data(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"evalfarm"}
    for room in ROOMS:
        assert f"evalfarm/{room}/__init__.py" in names
    assert "evalfarm/sandbox/_launcher.c" in names  # each worker builds the launcher from it
    assert any(name.startswith("evalfarm/envs/sandbox_lib/") for name in names)  # modules for programs
    assert "evalfarm/envs/codecontests/testlib/testlib.h" in names  # C++ checkers and interactors
    assert "evalfarm/envs/codecontests/testlib/LICENSE" in names
    assert not any(
        name.startswith(("evalfarm/tests/", "evalfarm/bench/", "evalfarm/deploy/")) for name in names
    )


def test_the_client_installs_without_the_workers_dependencies(client_venv: Path) -> None:
    code = (
        "import importlib.util, json, sys\n"
        "from evalfarm import AsyncFarm, Farm\n"
        "from evalfarm.trainers import make_trl_reward, verl_compute_score\n"
        "farm = Farm('redis://127.0.0.1:9/0', progress=False)\n"
        "reward = make_trl_reward('humaneval', broker_url='redis://127.0.0.1:9/0')\n"
        "absent = [m for m in ('numpy', 'minatar', 'numba', 'prometheus_client', 'starlette', 'uvicorn',"
        " 'flower', 'broker', 'tasks', 'workers', 'envs', 'sandbox') if importlib.util.find_spec(m)]\n"
        "print(json.dumps({'found': absent, 'farm': type(farm).__name__, 'reward': reward.__name__}))\n"
    )
    done = subprocess.run([client_venv / "bin/python", "-c", code], capture_output=True, text=True, cwd="/")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"found": [], "farm": "Farm", "reward": "evalfarm_humaneval"}


BROKER = "redis://127.0.0.1:9/0"  # nothing listens there: these commands never reach a farm


@pytest.mark.parametrize(("command", "extra"), [("worker", "worker"), ("gateway", "gateway")])
def test_a_command_that_needs_an_extra_names_it(client_venv: Path, command: str, extra: str) -> None:
    evalfarm = client_venv / "bin/evalfarm"
    done = subprocess.run([evalfarm, command, "--broker", BROKER], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"pip install 'evalfarm[{extra}]'" in done.stderr and "Traceback" not in done.stderr


def test_the_client_scores_a_file_on_a_running_farm_from_the_command_line(client_venv: Path) -> None:
    """`evalfarm score --broker` is a producer's command: the client install runs it (a farm that is
    not there is every job's infra_error, after the deadline)."""
    jobs = client_venv.parent / "jobs.jsonl"
    jobs.write_text(json.dumps({"id": "a", "env": "program", "code": "print(1)"}) + "\n")
    command = [client_venv / "bin/evalfarm", "score", str(jobs), "--broker", BROKER, "--no-progress"]
    environment = {"EVALFARM_BATCH_DEADLINE_S": "3", "PATH": "/usr/bin:/bin"}  # no farm: no need to wait
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment)
    assert "Traceback" not in done.stderr, done.stderr
    [result] = [json.loads(line) for line in done.stdout.splitlines()]
    assert result["status"] == "infra_error" and result["infra"] is True
