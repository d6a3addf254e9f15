"""The codecontests env's logic (statuses, rewards, feedback, validation) over an in-process fake sandbox."""

from __future__ import annotations

import contextlib
import io
import sys
from typing import Any

import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.codecontests import CodeContestsEnv
from evalfarm.envs.datasets import DatasetStore, Problem
from evalfarm.envs.scoring import score_job
from evalfarm.limits import Limits
from evalfarm.sandbox.run_result import RunResult
from evalfarm.status import Status

ADD = "a, b = map(int, input().split())\nprint(a + b)\n"
PROBLEM = {
    "id": "add",
    "public_tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5\n", "output": "10\n"}],
    "hidden_tests": [{"input": f"{i} {i}\n", "output": f"{2 * i}\n"} for i in range(5)],
}


class FakeSandbox:
    """Execs `code` in this process with `stdin`; records every call. Only for programs the tests wrote.

    A program containing "# STATUS:<name>" is reported with that status without running, so tests can
    produce timeouts and infra errors cheaply.
    """

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def offered_languages(self) -> tuple[str, ...]:
        return ("python",)

    def run(
        self,
        code: str,
        stdin: bytes | str = b"",
        limits: Limits | None = None,
        call: Any = None,
        language: str = "python",
    ) -> RunResult:
        """A RunResult as the real sandbox would give for these simple programs."""
        self.calls.append(
            {"code": code, "stdin": stdin, "limits": limits, "call": call, "language": language}
        )
        if "# STATUS:" in code:
            name = code.split("# STATUS:")[1].split()[0]
            return RunResult(Status[name], error=f"fake {name}")
        try:
            compiled = compile(code, "<program>", "exec")
        except SyntaxError as error:
            return RunResult(Status.SYNTAX_ERROR, stderr=str(error).encode(), error="SyntaxError")
        return self._exec(compiled, stdin)

    @staticmethod
    def _exec(compiled: Any, stdin: bytes | str) -> RunResult:
        """Run `compiled` with redirected standard streams."""
        text = stdin.decode() if isinstance(stdin, bytes) else stdin
        out, err = io.StringIO(), io.StringIO()
        saved = sys.stdin
        sys.stdin = io.StringIO(text)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                exec(compiled, {"__name__": "__main__"})
        except Exception as error:
            err.write(f"Traceback (most recent call last):\n{type(error).__name__}: {error}\n")
            return RunResult(
                Status.RUNTIME_ERROR, out.getvalue().encode(), err.getvalue().encode(), exit_code=1
            )
        finally:
            sys.stdin = saved
        return RunResult(Status.OK, out.getvalue().encode(), err.getvalue().encode(), exit_code=0)


class FakeContext(Context):
    """A Context whose sandbox is the in-process fake."""

    def __init__(self, datasets: Any = None) -> None:
        super().__init__(datasets=datasets)
        self._sandbox = FakeSandbox()


def score(ctx: Context | None = None, **fields: Any) -> dict[str, Any]:
    job = {"id": "j", "env": "codecontests", "problem": PROBLEM} | fields
    return CodeContestsEnv().score(job, CodeContestsEnv.default_limits, ctx or FakeContext())


def test_correct_program_gets_reward_one() -> None:
    result = score(code=ADD)
    assert (result["status"], result["reward"], result["passed"], result["total"]) == ("ok", 1.0, 5, 5)
    assert [t["status"] for t in result["tests"]] == ["ok"] * 5
    assert "(public: 2/2 passed)" in result["feedback"]
    assert result["error"] is None


def test_completion_is_extracted() -> None:
    result = score(completion=f"Sure!\n```cpp\nint main(){{}}\n```\n```python\n{ADD}```\n")
    assert result["reward"] == 1.0


def test_no_python_block_is_parse_error_with_reward_zero() -> None:
    ctx = FakeContext()
    result = score(ctx, completion="I cannot solve this.")
    assert (result["status"], result["reward"], result["tests"]) == ("parse_error", 0.0, [])
    assert ctx.sandbox.calls == []


def test_all_or_nothing_stops_at_the_first_failing_hidden_test() -> None:
    ctx = FakeContext()
    wrong_on_two = "a, b = map(int, input().split())\nprint(a + b + (a == 2))\n"
    result = score(ctx, code=wrong_on_two)
    assert result["status"] == "wrong_answer" and result["reward"] == 0.0
    assert [t["status"] for t in result["tests"]] == ["ok", "ok", "wrong_answer"]
    assert (result["passed"], result["total"]) == (2, 5)
    assert len(ctx.sandbox.calls) == 2 + 3
    assert result["error"] == "hidden test 3/5: wrong_answer"


def test_fraction_passed_runs_every_hidden_test() -> None:
    wrong_on_two = "a, b = map(int, input().split())\nprint(a + b + (a == 2))\n"
    result = score(code=wrong_on_two, reward_shape="fraction_passed")
    assert result["reward"] == pytest.approx(0.8)
    assert len(result["tests"]) == 5


def test_status_by_precedence_not_by_order() -> None:
    # hidden test 1 is a wrong answer, hidden test 3 a runtime error: runtime_error ranks higher.
    code = "a, b = map(int, input().split())\nassert a != 3\nprint(a + b + (a == 1))\n"
    result = score(code=code, reward_shape="fraction_passed")
    assert [t["status"] for t in result["tests"]] == ["ok", "wrong_answer", "ok", "runtime_error", "ok"]
    assert result["status"] == "runtime_error"
    assert result["error"].startswith("hidden test 4/5: runtime_error")


def test_syntax_error_stops_after_the_first_run() -> None:
    ctx = FakeContext()
    result = score(ctx, code="print(")
    assert (result["status"], result["reward"], result["tests"]) == ("syntax_error", 0.0, [])
    assert len(ctx.sandbox.calls) == 1
    assert "[FAIL | syntax_error" in result["feedback"]
    assert "(public: 0/2 passed)" in result["feedback"]


def test_infra_error_has_no_reward() -> None:
    result = score(code="# STATUS:INFRA_ERROR\n")
    assert (result["status"], result["reward"]) == ("infra_error", None)


def test_timeout_status_and_feedback() -> None:
    result = score(code="# STATUS:TIMEOUT\n")
    assert (result["status"], result["reward"]) == ("timeout", 0.0)
    assert "[FAIL | timeout" in result["feedback"]


def test_feedback_shows_public_io_and_stderr_but_no_hidden_data() -> None:
    code = "import sys\nprint('dbg', file=sys.stderr)\nprint(0)\n"
    result = score(code=code, reward_shape="fraction_passed")
    assert "input:\n1 2\n" in result["feedback"] and "stderr:\ndbg" in result["feedback"]
    hidden_marker = "hidden-secret-output"
    problem = PROBLEM | {"hidden_tests": [{"input": "1 1\n", "output": hidden_marker}]}
    result = score(code=code, problem=problem)
    assert hidden_marker not in str(result)


def test_float_tolerance_per_problem() -> None:
    problem = {
        "id": "third",
        "hidden_tests": [{"input": "", "output": "0.333333333\n"}],
        "float_tolerance": 1e-6,
    }
    assert score(code="print(1/3)", problem=problem)["reward"] == 1.0
    assert score(code="print(0.33)", problem=problem)["reward"] == 0.0
    assert score(code="print(1/3)", problem=problem | {"float_tolerance": None})["reward"] == 0.0


def test_problem_id_from_the_store() -> None:
    store = DatasetStore()
    store.add("tiny", [Problem.model_validate(PROBLEM)])
    job = {"id": "j", "env": "codecontests", "code": ADD, "problem_id": "add"}
    result = CodeContestsEnv().score(job, CodeContestsEnv.default_limits, FakeContext(store))
    assert result["reward"] == 1.0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "completion/code: exactly one is required"),
        ({"code": ADD, "completion": "x"}, "completion/code: exactly one is required"),
        ({"code": 5}, "code: Input should be a valid string"),
        ({"code": ADD, "problem": None}, "problem/problem_id: exactly one is required"),
        ({"code": ADD, "problem_id": "add"}, "problem/problem_id: exactly one is required"),
        ({"code": ADD, "reward_shape": "best"}, "reward_shape: Input should be 'all_or_nothing' or"),
        ({"code": "x" * (300 << 10)}, "code: String should have at most 262144 characters"),
        ({"code": ADD, "problem": {"id": "p", "hidden_tests": []}}, "problem.hidden_tests: List should have"),
        (
            {"code": ADD, "problem": {"id": "p", "hidden_tests": [{"input": "1"}]}},
            "problem: hidden_tests.0.output: a stdin test's output is text",
        ),
        (
            {"code": ADD, "problem": {"id": "p", "hidden_tests": "1 2"}},
            "problem.hidden_tests: Input should be",
        ),
        ({"code": ADD, "problem": {"hidden_tests": [{"input": "", "output": ""}]}}, "problem.id: required"),
        (
            {"code": ADD, "problem": {"id": "p", "hidden_tests": [{"input": "1" * (9 << 20), "output": ""}]}},
            "problem.hidden_tests.0.input: String should have at most 8388608 characters",
        ),
        (
            {"code": ADD, "problem": PROBLEM | {"float_tolerance": 2}},
            "problem.float_tolerance: Input should be less",
        ),
    ],
)
def test_bad_jobs_are_invalid_naming_the_field(fields: dict[str, Any], message: str) -> None:
    job = {"id": "j", "env": "codecontests", "problem": PROBLEM} | fields
    job = {key: value for key, value in job.items() if value is not None}
    result = score_job(job, FakeContext())
    assert result["status"] == "invalid_job" and result["reward"] is None
    assert result["error"].startswith(message), result["error"]


@pytest.mark.parametrize(
    ("ctx_store", "fields", "message"),
    [
        (None, {"problem_id": "add"}, "problem_id: no dataset is loaded"),
        ("store", {"problem_id": "nope"}, "problem_id: unknown problem 'nope'"),
        ("store", {"problem_id": "add", "dataset": "other"}, "dataset: unknown dataset 'other'"),
    ],
)
def test_unknown_problem_id_is_invalid(ctx_store: str | None, fields: dict[str, Any], message: str) -> None:
    store = None
    if ctx_store:
        store = DatasetStore()
        store.add("tiny", [Problem.model_validate(PROBLEM)])
    job = {"id": "j", "env": "codecontests", "code": ADD} | fields
    result = score_job(job, FakeContext(store))
    assert result["status"] == "invalid_job"
    assert result["error"].startswith(message), result["error"]


def test_limits_reach_every_run() -> None:
    ctx = FakeContext()
    job = {"id": "j", "env": "codecontests", "code": ADD, "problem": PROBLEM, "limits": {"wall_s": 1.5}}
    result = score_job(job, ctx)
    assert result["limits"]["wall_s"] == 1.5 and result["env_version"] == CodeContestsEnv.version
    assert {call["limits"].wall_s for call in ctx.sandbox.calls} == {1.5}
