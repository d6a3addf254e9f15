"""The ELM walker rule the worker applies (envs.elm.walker_problems) against OpenELM's own
`Walker.validate()`, on walkers hypothesis makes: the same verdict, whatever the walker."""

from __future__ import annotations

import importlib.util
import math
import sys
import time
from typing import Any

import foreign_clients
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalfarm.envs.elm import walker_problems


def openelm_walker_class() -> Any:
    """OpenELM's own `Walker` (its walk_creator module, loaded from the installed package)."""
    path = foreign_clients.openelm_root() / "environments" / "sodaracer" / "walker" / "walk_creator.py"
    spec = importlib.util.spec_from_file_location("openelm_walk_creator", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Walker


WALKER = openelm_walker_class()


def sandbox_walker_class() -> Any:
    """The Walker sandboxed programs import (envs/sandbox_lib), which must validate as OpenELM's does."""
    from evalfarm.envs.runtime import SANDBOX_LIB

    path = f"{SANDBOX_LIB}/openelm/environments/sodaracer/walker/walk_creator.py"
    spec = importlib.util.spec_from_file_location("sandbox_walk_creator", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module.Walker


SANDBOX_WALKER = sandbox_walker_class()
# Coordinates on a coarse grid, so that close and equal joints are common.
coordinate = st.one_of(
    st.integers(-20, 20).map(lambda i: i * 0.001),
    st.floats(-1, 1, allow_nan=False),
    st.sampled_from([0.0, 0.0029, 0.003, 0.0031, 1e308, -1e308, float("inf")]),
)
joint = st.tuples(coordinate, coordinate)


@st.composite
def walkers(draw: Any) -> dict[str, Any]:
    joints = draw(st.lists(joint, max_size=14))
    index = st.integers(-2, len(joints) + 1)
    kind = st.sampled_from(["muscle", "distance"])
    amplitude = st.one_of(st.floats(0, 12, allow_nan=False), st.sampled_from([10.0, 10.000001, 11]))
    muscle = st.tuples(index, index, kind, amplitude).map(
        lambda m: [m[0], m[1], {"type": m[2], "amplitude": m[3], "phase": 0.0}]
    )
    return {"joints": joints, "muscles": draw(st.lists(muscle, max_size=24))}


def openelm_says(walker: dict[str, Any]) -> bool | None:
    """OpenELM's verdict: valid or not; None where its validate() raises."""
    try:
        return bool(WALKER(list(walker["joints"]), list(walker["muscles"])).validate())
    except (OverflowError, TypeError, KeyError, IndexError):
        return None


@pytest.mark.slow  # 3,000 walkers through OpenELM's own code: the whole suite's, not the quick tier's
@settings(max_examples=3000, deadline=None)
@given(walkers())
def test_the_workers_rule_is_openelms(walker: dict[str, Any]) -> None:
    # Valid exactly when OpenELM says valid. (Where its check raises, as a joint at 1e308 makes it,
    # either side may find a failing pair first: invalid or malformed, never valid.)
    problems = walker_problems(walker)
    verdict = openelm_says(walker)
    assert (problems == []) == bool(verdict), (problems, walker)
    if verdict is not None:
        assert SANDBOX_WALKER(list(walker["joints"]), list(walker["muscles"])).validate() == verdict


def test_the_seed_programs_walkers_are_valid_by_both() -> None:
    for name, code in foreign_clients.sodarace_seeds().items():
        data, valid = foreign_clients.openelm_walker(code)
        assert (walker_problems(data) == []) == valid, name


@pytest.mark.parametrize(
    "walker",
    [
        None,
        {},
        {"joints": [(0, 0)]},
        {"joints": [("a", 0)], "muscles": []},
        {"joints": [], "muscles": [[0]]},
        {"joints": [(10**400, 0)], "muscles": []},
    ],
)
def test_data_that_is_no_walker_is_refused_not_a_crash(walker: Any) -> None:
    assert walker_problems(walker) is None


def test_a_walker_of_many_joints_is_checked_in_linear_time() -> None:
    joints = [(i * 0.01, (i % 7) * 0.01) for i in range(40000)]
    started = time.process_time()
    assert walker_problems({"joints": joints, "muscles": []}) == []
    # Under OpenELM's pairwise check this is 800 million distances; linear, it is a fraction of a second.
    assert time.process_time() - started < 5 and not math.isnan(joints[0][0])
