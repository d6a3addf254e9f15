"""The hostile-program corpus, as root and as an unprivileged user; then the sandbox must still work
and no process of any run may be left."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import corpus
import pytest
import unprivileged

from evalfarm.sandbox import Sandbox

pytestmark = pytest.mark.sandbox
CASES = corpus.load_cases()
# `make check` runs one hostile program per layer of the sandbox: the user and PID namespaces, the
# network namespace, the read-only root, Landlock, the pids and memory cgroups, the CPU limit, the
# environment's allow-list, seccomp, and a compiled program under the same walls.
LAYER_CASES = {
    "become_root", "list_other_processes", "connect_internet", "read_host_secrets",
    "write_outside_workdir", "fork_bomb", "memory_bomb", "cpu_spin_ignoring_signals",
    "read_worker_environment", "kernel_attack_surface", "cpp_raw_syscalls",
}  # fmt: skip
PYTHON_CASES = [case for case in CASES if case.language == "python"]


def test_corpus_is_large_enough() -> None:
    assert {case.name for case in CASES} >= LAYER_CASES
    assert len(PYTHON_CASES) >= 30
    assert len(CASES) - len(PYTHON_CASES) >= 20  # C++


@pytest.fixture(scope="module")
def hostile_sandbox():
    os.environ[corpus.SECRET_VARIABLE] = "worker-secret-4b1d"
    with Sandbox(slot=901) as sandbox:
        yield sandbox
        after = sandbox.run("print(sum(range(10)))")
        assert after.status.value == "ok" and after.stdout == b"45\n"
        uid = corpus.run_uid(sandbox)
    assert corpus.leftover_processes(uid) == []


@pytest.mark.parametrize(
    "case", [pytest.param(case, marks=[pytest.mark.check] * (case.name in LAYER_CASES)) for case in CASES],
    ids=[case.name for case in CASES],
)  # fmt: skip
def test_hostile_program_is_contained(hostile_sandbox: Sandbox, case: corpus.Case) -> None:
    result, problems = corpus.run_case(hostile_sandbox, case)
    assert problems == [], f"{case.name}: {result.status.value} {result.error} {result.stdout[-300:]!r}"


@pytest.mark.parametrize("case", PYTHON_CASES, ids=[case.name for case in PYTHON_CASES])
def test_hostile_program_is_contained_on_the_extended_server(
    hostile_sandbox: Sandbox, case: corpus.Case
) -> None:
    # A program naming numpy runs on the slot's second server, which has numpy preloaded.
    numpy_case = dataclasses.replace(case, code="import numpy\n" + case.code)
    result, problems = corpus.run_case(hostile_sandbox, numpy_case)
    assert problems == [], f"{case.name}: {result.status.value} {result.error} {result.stdout[-300:]!r}"
    assert len(hostile_sandbox.server_processes) == 2


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="creating the unprivileged user needs root")
def test_corpus_as_unprivileged_user() -> None:
    script = str(Path(corpus.__file__))
    completed = subprocess.run(
        unprivileged.command([sys.executable, script]),
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": os.environ["PATH"], "EVALFARM_TEST_SLOT": "902"},
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = [json.loads(line) for line in completed.stdout.splitlines()]
    layers = lines[0]["layers"]
    assert layers["user"].startswith("on (user namespace")
    verdicts = {line["case"]: line["problems"] for line in lines if "case" in line}
    assert set(verdicts) == {case.name for case in CASES}
    assert {name: problems for name, problems in verdicts.items() if problems} == {}
    assert lines[-2] == {"after": "ok", "stdout": "42\n"}
    assert lines[-1] == {"leftover": []}
