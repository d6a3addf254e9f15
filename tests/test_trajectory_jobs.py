"""Code-env jobs may carry an agent `trajectory` instead of `completion`, as weight-edit jobs do."""

from __future__ import annotations

import pytest

from evalfarm.envs import Context, score_job

pytestmark = pytest.mark.sandbox

PROBLEM = {"id": "add", "public_tests": [], "hidden_tests": [{"input": "2 3\n", "output": "5\n"}]}
SOLUTION = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"


def trajectory(*contents: object) -> dict:
    messages = [{"role": "user", "content": "solve it"}]
    messages += [{"role": "assistant", "content": content} for content in contents]
    return {"steps": [{"messages": messages}]}


@pytest.mark.parametrize(
    ("contents", "status"),
    [
        ((SOLUTION,), "ok"),
        (([{"type": "text", "text": "Here:"}, {"type": "text", "text": SOLUTION}],), "ok"),
        (("```python\nprint(0)\n```", SOLUTION), "ok"),  # the last assistant turn counts
        ((SOLUTION, "```python\nprint(0)\n```"), "wrong_answer"),
        ((), "parse_error"),  # no assistant message: an empty answer
    ],
)
def test_codecontests_answer_from_trajectory(ctx: Context, contents: tuple, status: str) -> None:
    job = {"id": "t", "env": "codecontests", "problem": PROBLEM, "trajectory": trajectory(*contents)}
    assert score_job(job, ctx)["status"] == status


def test_humaneval_completion_from_trajectory(ctx: Context) -> None:
    job = {
        "id": "h",
        "env": "humaneval",
        "prompt": "def add(a, b):\n",
        "test": "def check(f):\n    assert f(2, 3) == 5\n",
        "entry_point": "add",
        "trajectory": trajectory("    return a + b\n"),
    }
    result = score_job(job, ctx)
    assert (result["status"], result["reward"]) == ("ok", 1.0)


def test_malformed_trajectory_is_an_invalid_job_naming_it(ctx: Context) -> None:
    job = {"id": "m", "env": "codecontests", "problem": PROBLEM, "trajectory": {"steps": ["not a step"]}}
    result = score_job(job, ctx)
    assert result["status"] == "invalid_job" and result["error"].startswith("trajectory:")
