"""A judge's failure is the program's unless the judge is shown faulty without it: a checker replayed
on the test's expected answer, an interactor with the problem's own solution or with no program at
all. Judges run in the real sandbox, C++ ones under the real g++."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import hack_corpus
import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.codecontests.replay import ReplayCache
from evalfarm.envs.datasets import MAX_SOLUTIONS, Problem
from evalfarm.envs.scoring import score_job
from evalfarm.sandbox import Sandbox

# -- the replay cache and the problem's solutions ----------------------------------------------------


def test_the_replay_cache_keeps_the_most_recent_outcomes() -> None:
    cache = ReplayCache(size=2)
    keys = [cache.key("checker", str(n)) for n in range(3)]
    assert len(set(keys)) == 3 and cache.key("a", "bc") != cache.key("ab", "c")
    for key in keys:
        cache.put(key, "accepted")
    assert [cache.get(key) for key in keys] == [None, "accepted", "accepted"]


def test_solutions_are_kept_for_an_interactive_problem_only() -> None:
    tests = [{"input": "1\n", "output": ""}]
    solutions = [{"language": "python", "code": f"print({n})"} for n in range(MAX_SOLUTIONS + 2)]
    interactive = Problem.model_validate(
        {"id": "i", "hidden_tests": tests, "interactor": {"code": "x"}, "solutions": solutions}
    )
    assert interactive.solutions is not None and len(interactive.solutions) == MAX_SOLUTIONS
    plain = Problem.model_validate({"id": "p", "hidden_tests": tests, "solutions": solutions})
    assert plain.solutions is None and "solutions" not in plain.model_dump(exclude_none=True)
    with pytest.raises(ValueError, match="not a language"):
        Problem.model_validate(
            {"id": "i", "hidden_tests": tests, "interactor": {"code": "x"},
             "solutions": [{"language": "cobol", "code": "x"}]}
        )  # fmt: skip


# -- checkers, in the sandbox -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ctx() -> Iterator[Context]:
    with Sandbox(slot=944) as sandbox:
        yield Context(sandbox=sandbox)


def _corpus_problem(name: str, **changes: Any) -> dict[str, Any]:
    problem = hack_corpus.problem_file(name, "unused")
    assert problem is not None
    return {**problem, **changes}


def _score(ctx: Context, code: str, problem: dict[str, Any], **job: Any) -> dict[str, Any]:
    return score_job({"id": "j", "env": "codecontests", "code": code, "problem": problem, **job}, ctx)


def _fresh(code: str) -> str:
    """The judge's code made unique to one run of the tests (the worker's cache is per process)."""
    return code + f"\n# {secrets.token_hex(8)}\n"


CORRECT = "count = input()\nprint(count)\nprint(*reversed(input().split()))\n"


@pytest.mark.sandbox
def test_a_checker_that_crashes_on_the_output_is_replayed_once_and_the_output_is_wrong(ctx: Context) -> None:
    problem = _corpus_problem("checker_crash_testlib")
    problem["checker"] = {**problem["checker"], "code": _fresh(problem["checker"]["code"])}
    first = _score(ctx, "print('three numbers')\n", problem)
    assert (first["status"], first["reward"]) == ("wrong_answer", 0.0), first
    assert first["judge"] == {
        "replayed": True,
        "reference": "accepted",
        "tests": [{"test": "hidden 1", "with": "answer", "reference": "accepted", "cached": False}],
    }
    assert "exited 3 (FAIL) on this program's output" in first["error"]
    again = _score(ctx, "print()\n", problem)  # another program, the same failure: the outcome is kept
    assert (again["status"], again["judge"]["tests"][0]["cached"]) == ("wrong_answer", True), again
    right = _score(ctx, CORRECT, problem)
    assert (right["status"], right["reward"]) == ("ok", 1.0) and "judge" not in right  # never replayed


BROKEN = {  # checkers that fail whatever they are given, under each protocol
    "testlib": "import sys\nopen(sys.argv[2]).read()\nsys.exit(3)\n",
    "openr1": "import sys\nanswer = open(sys.argv[2]).read()\nraise ValueError(answer[:0] + 'a bug')\n",
    "kattis": "import sys\nsys.stdin.read()\nsys.exit(1)\n",
}


@pytest.mark.sandbox
@pytest.mark.parametrize("protocol", list(BROKEN))
def test_a_checker_that_fails_on_the_expected_answer_too_is_a_judge_error(
    ctx: Context, protocol: str
) -> None:
    checker = {
        "type": "program",
        "language": "python",
        "code": _fresh(BROKEN[protocol]),
        "protocol": protocol,
    }
    problem = _corpus_problem("checker_crash_testlib", checker=checker)
    result = _score(ctx, CORRECT, problem, reward_shape="fraction_passed")
    assert (result["status"], result["reward"]) == ("judge_error", None), result
    assert result["judge"]["reference"] == "failed"
    assert "fails with the test's expected answer too" in result["error"]


@pytest.mark.sandbox
def test_a_cpp_checker_that_does_not_compile_is_a_judge_error_without_a_replay(ctx: Context) -> None:
    checker = {"type": "program", "language": "cpp", "code": '#include "testlib.h"\nint main( {\n'}
    result = _score(ctx, CORRECT, _corpus_problem("checker_crash_testlib", checker=checker))
    assert (result["status"], result["reward"]) == ("judge_error", None), result
    assert "does not compile" in result["error"] and "judge" not in result


@pytest.mark.sandbox
def test_a_checker_that_rejects_the_expected_answer_cleanly_still_makes_its_crash_the_outputs(
    ctx: Context,
) -> None:
    # It crashes on a word, and rejects any first number but 42 (the expected answer's 3 too).
    code = _fresh("import sys\nsys.exit(0 if int(open(sys.argv[2]).read().split()[0]) == 42 else 1)\n")
    checker = {"type": "program", "language": "python", "code": code}
    result = _score(ctx, "print('many')\n", _corpus_problem("checker_crash_testlib", checker=checker))
    assert (result["status"], result["reward"]) == ("wrong_answer", 0.0), result
    assert result["judge"]["reference"] == "rejected"


# -- interactors, in the sandbox ----------------------------------------------------------------------

SEARCH = (hack_corpus.PROBLEM_FILES / "interactor_crash_search.py").read_text()
GUESS = (hack_corpus.PROBLEM_FILES / "interactor_crash_guess.py").read_text()


def _guess(interactor: str, **changes: Any) -> dict[str, Any]:
    problem = _corpus_problem("interactor_crash_guess", **changes)
    problem["interactor"] = {"language": "python", "code": _fresh(interactor)}
    return problem


# A binary search that stops quietly when the interactor is gone; SEARCH raises (EOFError), or dies
# of a broken pipe, which is its own runtime_error unless the interactor had failed on its own.
QUIET_SEARCH = "import sys\n" + SEARCH.replace(
    "    reply = input()\n", "    reply = sys.stdin.readline().strip()\n    if not reply:\n        break\n"
)


@pytest.mark.sandbox
@pytest.mark.parametrize("program", [QUIET_SEARCH, SEARCH], ids=["ends-cleanly", "raises-after"])
def test_an_interactor_that_fails_on_its_own_is_a_judge_error(ctx: Context, program: str) -> None:
    # It fails before it reads a byte of the program's: the replay with no program shows it.
    broken = "import sys\nsecret = int(open(sys.argv[1]).read().split()[1])\n"
    result = _score(ctx, program, _guess(broken))
    assert (result["status"], result["reward"]) == ("judge_error", None), result
    assert result["judge"]["tests"][0]["with"] == "silence"
    assert result["judge"]["reference"] == "failed"


@pytest.mark.sandbox
def test_a_program_that_fails_after_crashing_its_interactor_keeps_its_own_failure(ctx: Context) -> None:
    result = _score(ctx, "print('? many', flush=True)\ninput()\n", _guess(GUESS))
    assert (result["status"], result["reward"]) == ("runtime_error", 0.0), result
    assert result["judge"]["reference"] == "waited"  # the interactor was replayed: it waits alone


# After the program's answer it reads once more, which fails for every program, a correct one too.
ONE_READ_TOO_MANY = GUESS.replace(
    "        sys.exit(0 if guess == secret else 1)\n",
    "        input()\n        sys.exit(0 if guess == secret else 1)\n",
)


@pytest.mark.sandbox
def test_an_interactor_that_fails_with_the_problems_solution_is_a_judge_error(ctx: Context) -> None:
    solutions = [{"language": "python", "code": SEARCH}]
    result = _score(ctx, SEARCH, _guess(ONE_READ_TOO_MANY, solutions=solutions))
    assert (result["status"], result["reward"]) == ("judge_error", None), result
    assert result["judge"]["tests"][0]["with"] == "solution"
    assert "fails with the problem's own solution too" in result["error"]


@pytest.mark.sandbox
def test_without_a_solution_an_interactor_failing_after_the_programs_words_is_the_programs(
    ctx: Context,
) -> None:
    # With no solution to replay it with, only a failure without any program proves the judge
    # faulty: this one waits for a program, so even a correct one gets wrong_answer (never null).
    result = _score(ctx, SEARCH, _guess(ONE_READ_TOO_MANY))
    assert (result["status"], result["reward"]) == ("wrong_answer", 0.0), result
    assert result["judge"]["tests"][0]["reference"] == "waited"


@pytest.mark.sandbox
@pytest.mark.parametrize("solved", [False, True], ids=["silence", "solution"])
def test_a_garbage_query_that_crashes_an_interactor_is_a_wrong_answer(ctx: Context, solved: bool) -> None:
    changes = {"solutions": [{"language": "python", "code": SEARCH}]} if solved else {}
    garbage = "import sys\nprint('? many', flush=True)\nsys.stdin.read()\n"
    result = _score(ctx, garbage, _guess(GUESS, **changes))
    assert (result["status"], result["reward"]) == ("wrong_answer", 0.0), result
    assert result["judge"]["tests"][0]["with"] == ("solution" if solved else "silence")
    assert result["judge"]["reference"] == ("accepted" if solved else "waited")
