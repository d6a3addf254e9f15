"""Problems judged as a real judge does, in the real sandbox: checker programs in their three
protocols, their faults (`judge_error`, never a verdict), partial scores, and function-call tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from evalfarm.envs.base import Context
from evalfarm.envs.scoring import score_job
from evalfarm.sandbox import Sandbox

pytestmark = pytest.mark.sandbox

# Any order of the input's numbers is a correct answer: no reference output can judge it.
SHUFFLE = {
    "id": "shuffle",
    "description": "Print the given numbers in any order. If there are several answers, print any of them.",
    "hidden_tests": [{"input": "3\n1 2 3\n", "output": "1 2 3\n"}, {"input": "2\n5 4\n", "output": "5 4\n"}],
}
REVERSED = "n = int(input())\nprint(*reversed(input().split()))\n"
SORTED_WRONG = "n = int(input())\nprint(*([1] * n))\n"

PY_TESTLIB = """
import sys
given, output, answer = (open(path).read().split() for path in sys.argv[1:4])
sys.exit(0 if sorted(output) == sorted(given[1:]) else 1)
"""
CPP_TESTLIB = r"""
#include "testlib.h"
#include <algorithm>
int main(int argc, char* argv[]) {
    registerTestlibCmd(argc, argv);
    int n = inf.readInt();
    std::vector<int> given(n), got(n);
    for (int i = 0; i < n; i++) given[i] = inf.readInt();
    for (int i = 0; i < n; i++) got[i] = ouf.readInt();
    std::sort(given.begin(), given.end());
    std::sort(got.begin(), got.end());
    if (given != got) quitf(_wa, "not a permutation of the input");
    quitf(_ok, "a permutation");
}
"""
OPENR1 = """
import sys
given, correct, solution = (open(path).read().split() for path in sys.argv[1:4])
print(1 if sorted(solution) == sorted(given[1:]) else 0)
"""
KATTIS = """
import sys
given = open(sys.argv[1]).read().split()
got = sys.stdin.read().split()
sys.exit(42 if sorted(got) == sorted(given[1:]) else 43)
"""


@pytest.fixture(scope="module")
def ctx() -> Iterator[Context]:
    with Sandbox(slot=930) as sandbox:
        yield Context(sandbox=sandbox)


def judged(
    ctx: Context,
    code: str,
    checker: Any = None,
    language: str = "python",
    shape: str = "all_or_nothing",
    **problem: Any,
) -> dict[str, Any]:
    spec = {**SHUFFLE, **problem}
    if checker is not None:
        spec["checker"] = checker
    job = {"id": "j", "env": "codecontests", "code": code, "language": language, "problem": spec}
    return score_job({**job, "reward_shape": shape}, ctx)


@pytest.mark.parametrize(
    ("checker", "name"),
    [
        (
            {"type": "program", "language": "python", "code": PY_TESTLIB, "protocol": "testlib"},
            "program:testlib",
        ),
        (
            {"type": "program", "language": "cpp", "code": CPP_TESTLIB, "protocol": "testlib"},
            "program:testlib",
        ),
        ({"type": "program", "language": "python", "code": OPENR1, "protocol": "openr1"}, "program:openr1"),
        ({"type": "program", "language": "python", "code": KATTIS, "protocol": "kattis"}, "program:kattis"),
    ],
    ids=["testlib-python", "testlib-cpp", "openr1", "kattis"],
)
def test_a_checker_program_accepts_any_valid_answer_and_refuses_a_wrong_one(
    ctx: Context, checker: dict[str, Any], name: str
) -> None:
    right = judged(ctx, REVERSED, checker)
    assert (right["status"], right["reward"], right["checker"]) == ("ok", 1.0, name), right
    wrong = judged(ctx, SORTED_WRONG, checker)
    assert (wrong["status"], wrong["reward"]) == ("wrong_answer", 0.0), wrong


def test_without_a_checker_the_statement_that_accepts_any_answer_is_a_judge_error(ctx: Context) -> None:
    result = judged(ctx, REVERSED, "auto")
    assert (result["status"], result["reward"], result["checker"]) == (
        "judge_error",
        None,
        "auto:needs_checker",
    )
    assert judged(ctx, REVERSED)["status"] == "wrong_answer"  # exact: a reference answer, as asked


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("import sys\nsys.exit(3)\n", "FAIL"),
        ("raise RuntimeError('the checker has a bug')\n", "FAIL"),
        ("import sys\nsys.exit(5)\n", "not a verdict"),
        ("import time\ntime.sleep(60)\n", "timeout"),
        ("import ctypes\nctypes.string_at(0)\n", "signal"),  # a real fault: PID 1 ignores kill()
        ("print(0.5)\nimport sys\nsys.exit(7)\n", None),
    ],
    ids=["fail", "crash", "odd-exit", "timeout", "signal", "points-in-stdout"],
)
def test_a_checker_that_fails_is_a_judge_error_never_a_verdict(
    ctx: Context, code: str, why: str | None
) -> None:
    checker = {"type": "program", "language": "python", "code": code, "protocol": "testlib"}
    result = judged(ctx, REVERSED, checker, checker_wall_s=2.0, shape="fraction_passed")
    if why is None:  # exit 7: testlib's points, half of each test
        assert (result["status"], result["reward"]) == ("wrong_answer", 0.5), result
        assert [test.get("score") for test in result["tests"]] == [0.5, 0.5]
        return
    assert (result["status"], result["reward"]) == ("judge_error", None), result
    assert why in result["error"]


def test_a_checker_that_does_not_compile_is_a_judge_error(ctx: Context) -> None:
    checker = {"type": "program", "language": "cpp", "code": "int main( {", "protocol": "testlib"}
    result = judged(ctx, REVERSED, checker)
    assert (result["status"], result["reward"]) == ("judge_error", None)
    assert "does not compile" in result["error"]


def test_a_wrong_program_is_wrong_before_the_checker_is_asked(ctx: Context) -> None:
    checker = {"type": "program", "language": "python", "code": "import sys\nsys.exit(3)\n"}
    result = judged(ctx, "raise SystemExit(1)\n", checker)
    assert result["status"] == "runtime_error"  # the program's own failure decides first


def test_a_problem_field_the_farm_does_not_know_is_refused_by_name(ctx: Context) -> None:
    result = judged(ctx, REVERSED, checkr="tokens")
    assert result["status"] == "invalid_job" and result["error"].startswith("problem.checkr: unknown field")
    result = judged(ctx, REVERSED, "float:1e-6", float_tolerance=1e-6)
    assert result["status"] == "invalid_job" and "give one" in result["error"]


ADD_PROBLEM = {
    "id": "add",
    "fn_name": "add_up",  # not `add`: the preamble's `from operator import *` defines one
    "hidden_tests": [
        {"input": [1, 2], "output": 3},
        {"input": "[1, 2]\n[3]", "output": [1, 2, 3]},
        {"input": [0.1, 0.2], "output": 0.3},
    ],
}


def call_job(ctx: Context, code: str, **problem: Any) -> dict[str, Any]:
    job = {"id": "c", "env": "codecontests", "code": code, "problem": {**ADD_PROBLEM, **problem},
           "reward_shape": "fraction_passed"}  # fmt: skip
    return score_job(job, ctx)


def test_function_call_tests_pass_arguments_and_compare_return_values(ctx: Context) -> None:
    code = "def add_up(a, b):\n    return a + b\n"
    result = call_job(ctx, code, checker="float:1e-9")
    assert (result["status"], result["reward"], result["checker"]) == ("ok", 1.0, "fn,float:1e-09"), result
    exact = call_job(ctx, code)  # 0.1 + 0.2 is not 0.3 without a tolerance
    assert [t["status"] for t in exact["tests"]] == ["ok", "ok", "wrong_answer"]


def test_a_solution_class_is_instantiated_per_test(ctx: Context) -> None:
    code = (
        "class Solution:\n    calls = 0\n"
        "    def add_up(self, a, b):\n"
        "        self.calls += 1\n"
        "        return a + b if self.calls == 1 else None\n"
    )
    result = call_job(ctx, code, checker="float:1e-9")
    assert result["reward"] == 1.0, result


@pytest.mark.parametrize(
    ("code", "statuses"),
    [
        ("def other(a, b):\n    return a + b\n", ["runtime_error"] * 3),
        ("def add_up(a, b):\n    raise ValueError('no')\n", ["runtime_error"] * 3),
        ("def add_up(a, b):\n    return object()\n", ["runtime_error"] * 3),
        ("def add_up(a, b):\n    return True if a == 1 else a + b\n", ["wrong_answer", "ok", "wrong_answer"]),
        ("def add_up(a, b):\n    return (a + b) if a != 1 else 3.0\n", ["ok", "ok", "wrong_answer"]),
    ],
    ids=["missing", "raises", "uncrossable", "bool-is-not-a-number", "int-equals-float"],
)
def test_a_failing_call_fails_its_test_never_the_job(ctx: Context, code: str, statuses: list[str]) -> None:
    result = call_job(ctx, code)
    assert [test["status"] for test in result["tests"]] == statuses, result
    assert result["status"] != "invalid_job"


GCD_TESTS = [{"input": [12, 18], "output": 6}, {"input": [7, 5], "output": 1}]
PREAMBLE_NAMES = {  # a name the preamble star-imports, and a test its own function passes
    "gcd": GCD_TESTS,
    "add": [{"input": [1, 2], "output": 3}],
    "floor": [{"input": [2.5], "output": 2}],
    "sqrt": [{"input": [16], "output": 4.0}],
    "mean": [{"input": [[1, 2, 3]], "output": 2}],
    "sum": [{"input": [[1, 2]], "output": 3}],
}


@pytest.mark.parametrize("name", sorted(PREAMBLE_NAMES))
def test_a_name_of_the_preamble_never_answers_for_the_program(ctx: Context, name: str) -> None:
    # Before, the name was looked up among globals that held the preamble's imports: a program that
    # defined nothing passed.
    result = call_job(ctx, "x = 1\n", fn_name=name, hidden_tests=PREAMBLE_NAMES[name], checker="tokens")
    assert (result["status"], result["reward"]) == ("runtime_error", 0.0), result
    assert f"does not define {name} (a name of the import preamble does not count)" in result["error"]


@pytest.mark.parametrize(
    "code",
    [
        "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n",
        "from math import gcd\n",  # the program's own import is its answer, as LiveCodeBench takes it
        "import math\ngcd = math.gcd\n",
        "from math import *\n",
        "class Solution:\n    def gcd(self, a, b):\n        return gcd(a, b)\n",  # a method may use it
        "if __name__ == '__main__':\n    def gcd(a, b):\n        return math.gcd(a, b)\n",
    ],
    ids=["def", "own-import", "assignment", "own-star-import", "solution-method", "under-main"],
)
def test_a_name_the_program_binds_itself_answers(ctx: Context, code: str) -> None:
    result = call_job(ctx, code, fn_name="gcd", hidden_tests=GCD_TESTS, checker="tokens")
    assert (result["status"], result["reward"]) == ("ok", 1.0), result


def test_arguments_that_cannot_cross_as_data_are_the_tests_fault(ctx: Context) -> None:
    deep: Any = 0
    for _ in range(101):
        deep = [deep]
    tests = [{"input": [1, 2], "output": 3}, {"input": [deep, 1], "output": 3}]
    result = call_job(ctx, "def add_up(a, b):\n    return 3\n", hidden_tests=tests)
    assert [test["status"] for test in result["tests"]] == ["ok", "judge_error"], result
    assert "cannot cross as data" in result["error"]


def test_tuples_come_back_as_lists(ctx: Context) -> None:
    result = call_job(
        ctx,
        "def add_up(a, b):\n    return (a, b)\n",
        hidden_tests=[{"input": "[1, 2]\n[3]", "output": [[1, 2], [3]]}],
    )
    assert result["tests"][0]["status"] == "ok", result


def test_the_expected_value_never_enters_the_programs_process(ctx: Context) -> None:
    # The program answers right only if it finds the expected value: in its memory, files or stdin.
    spy = (
        "import gc, os, sys\n"
        "def add_up(a, b):\n"
        "    found = [o for o in gc.get_objects() if isinstance(o, str) and o.startswith('secret-')]\n"
        "    found += [name for name in os.listdir('/tmp') if 'secret' in name]\n"
        "    text = sys.stdin.read()\n"
        "    return found[0] if found else (text or 'nothing found')\n"
    )
    result = call_job(ctx, spy, hidden_tests=[{"input": [1, 2], "output": "secret-8472"}])
    assert result["tests"][0]["status"] == "wrong_answer", result


# Guess the number: the interactor holds the secret (the test's input); the program asks "? x" and
# hears "<", ">" or "=", then answers "! x".
GUESS_CPP = r"""
#include "testlib.h"
#include <string>
int main(int argc, char* argv[]) {
    registerInteraction(argc, argv);
    int secret = inf.readInt();
    for (int asked = 0; asked < 40; asked++) {
        std::string kind = ouf.readToken();
        int x = ouf.readInt();
        if (kind == "!") {
            if (x == secret) quitf(_ok, "found in %d questions", asked);
            quitf(_wa, "answered %d, the number was %d", x, secret);
        }
        std::cout << (x < secret ? "<" : x > secret ? ">" : "=") << std::endl;
    }
    quitf(_wa, "too many questions");
}
"""
GUESS_PY = """
import sys
secret = int(open(sys.argv[1]).read())
for asked in range(40):
    words = sys.stdin.readline().split()
    if len(words) != 2 or not words[1].isdigit():
        sys.exit(2)  # testlib's presentation error: the program said nothing, or nonsense
    kind, x = words[0], int(words[1])
    if kind == "!":
        sys.exit(0 if x == secret else 1)
    print("<" if x < secret else ">" if x > secret else "=", flush=True)
sys.exit(1)
"""
SEARCH = """
low, high = 1, 1000
while True:
    middle = (low + high) // 2
    print("?", middle, flush=True)
    reply = input()
    if reply == "=":
        print("!", middle, flush=True)
        break
    low, high = (middle + 1, high) if reply == "<" else (low, middle - 1)
"""
GUESS = {
    "id": "guess",
    "hidden_tests": [
        {"input": "1\n", "output": ""},
        {"input": "777\n", "output": ""},
        {"input": "1000\n", "output": ""},
    ],
}


def interactive_job(
    ctx: Context, code: str, interactor: dict[str, Any], language: str = "python", **extra: Any
) -> dict[str, Any]:
    problem = {**GUESS, "interactor": interactor, **extra}
    job = {"id": "i", "env": "codecontests", "code": code, "language": language, "problem": problem}
    return score_job(job, ctx)


INTERACTORS = [{"language": "cpp", "code": GUESS_CPP}, {"language": "python", "code": GUESS_PY}]


@pytest.mark.parametrize("interactor", INTERACTORS, ids=["cpp", "python"])
def test_an_interactive_program_that_finds_the_number_passes(
    ctx: Context, interactor: dict[str, Any]
) -> None:
    result = interactive_job(ctx, SEARCH, interactor)
    assert (result["status"], result["reward"], result["checker"]) == ("ok", 1.0, "interactor:testlib"), (
        result
    )


@pytest.mark.parametrize("interactor", INTERACTORS, ids=["cpp", "python"])
@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("print('! 500', flush=True)\n", "wrong_answer"),  # guesses without asking
        ("input()\n", "timeout"),  # waits for the interactor, which waits for it: the wall clock ends it
        ("print('? 3', flush=True)\n", "wrong_answer"),  # asks, then never reads the reply
        ("import os, sys\nprint('!', open('/proc/self/fd/10').read(), flush=True)\n", "runtime_error"),
        ("raise SystemExit(7)\n", "runtime_error"),
    ],
    ids=["guess", "deadlock", "never-reads", "looks-for-the-secret", "crash"],
)
def test_an_interactive_program_gets_its_own_verdict(
    ctx: Context, interactor: dict[str, Any], code: str, status: str
) -> None:
    result = interactive_job(ctx, code, interactor)
    assert result["status"] == status, result
    assert result["reward"] == 0.0


def test_an_interactor_that_fails_without_the_program_is_a_judge_error(ctx: Context) -> None:
    # FAIL before reading a word of the program's: shown faulty with no program at all.
    failing = {"language": "python", "code": "import sys\nsys.exit(3)\n"}
    result = interactive_job(ctx, "import sys\nsys.stdin.read()\n", failing)
    assert (result["status"], result["reward"]) == ("judge_error", None), result
    assert result["judge"]["reference"] == "failed"
    # FAIL after reading the program's line: shown faulty with the problem's own solution.
    failing = {"language": "python", "code": "import sys\nsys.stdin.readline()\nsys.exit(3)\n"}
    solutions = [{"language": "python", "code": SEARCH}]
    result = interactive_job(ctx, "print('! 1', flush=True)\n", failing, solutions=solutions)
    assert (result["status"], result["reward"]) == ("judge_error", None), result
    # Without a solution, its FAIL after the program's words is the program's: nothing shows
    # the interactor faulty, and no program may turn its own failure into no reward.
    result = interactive_job(ctx, "print('! 1', flush=True)\n", failing)
    assert (result["status"], result["reward"]) == ("wrong_answer", 0.0), result
    broken = {"language": "cpp", "code": "int main( {"}
    result = interactive_job(ctx, SEARCH, broken)
    assert (result["status"], result["reward"]) == ("judge_error", None), result
    assert "does not compile" in result["error"]


def test_a_cpp_program_talks_to_a_cpp_interactor(ctx: Context) -> None:
    search = r"""
#include <cstdio>
int main() {
    int low = 1, high = 1000;
    char reply[4];
    while (true) {
        int middle = (low + high) / 2;
        printf("? %d\n", middle); fflush(stdout);
        if (scanf("%3s", reply) != 1) return 1;
        if (reply[0] == '=') { printf("! %d\n", middle); fflush(stdout); return 0; }
        if (reply[0] == '<') low = middle + 1; else high = middle - 1;
    }
}
"""
    result = interactive_job(ctx, search, INTERACTORS[0], language="cpp")
    assert (result["status"], result["reward"]) == ("ok", 1.0), result
