"""Function-call tests (`problem.fn_name`), as LeetCode-style and LiveCodeBench's functional tests are.

Each test calls the program's function (or, when the program defines `class Solution`, that method of
a fresh instance) with the test's arguments, in a run of its own; what it returns crosses out of the
sandbox as data (`sandbox.values`) and is compared here, in the worker: the expected value never
enters the program's process. The program gets LiveCodeBench's import preamble.

The function is looked up among the names the program binds itself, never the preamble's: the
preamble star-imports `math`, `operator`, `statistics`, ... so `add`, `gcd`, `floor` or `mean` would
otherwise answer for a program that defines nothing. The preamble's binding of `fn_name` is taken
away before the program runs, so `fn_name` exists after it only if the program bound it: a `def`,
an assignment, or an import of its own (`from math import gcd` is the program's answer, as
LiveCodeBench's runner, which looks the name up on the program's module, takes it). A `Solution`
class's methods get the preamble's binding back before they are called (a method may use it).

A test's `input` is a JSON array of positional arguments, or a string of one JSON value per line
(LiveCodeBench's form: `"[1,2]\\n3"` is two arguments, a list and a number); `output` is the expected
return value. The comparison is LiveCodeBench's, after a JSON round trip of what came back (tuples
become lists, a dict's keys strings): numbers by value (1 equals 1.0), a bool is not a number, strings
exactly. A declared checker's float rule (`float:E`, ...) applies to numbers the expected value writes
as reals, and `case_insensitive` to strings. A missing function, a raise, or a return that cannot
cross as data fails that test (`runtime_error`), never the job.
"""

from __future__ import annotations

import json
import math
from typing import Any

from evalfarm.envs.codecontests.checkers import FLOAT_RULES, Checker, Comparison
from evalfarm.envs.datasets import IOPair
from evalfarm.limits import Limits
from evalfarm.sandbox.bridge import parse_reply
from evalfarm.sandbox.run_result import RunResult
from evalfarm.sandbox.values import Unencodable
from evalfarm.status import Status

# LiveCodeBench's preamble for functional tests (lcb_runner/evaluation/testing_util.py).
_MODULES = "string re datetime collections heapq bisect copy math random statistics itertools functools"
_MODULES += " operator io sys"
PREAMBLE = (
    "".join(f"from {name} import *\n" for name in (*_MODULES.split(), "json", "builtins", "typing"))
    + "".join(f"import {name}\n" for name in (*_MODULES.split(), "json"))
    + "sys.setrecursionlimit(50000)\n"
)
ENTRY = "__evalfarm_call__"
PREAMBLES = "__evalfarm_preamble_binding__"  # what the preamble bound to fn_name, kept aside
MAX_VALUE_BYTES = 8 << 20


def hide_from_preamble(fn_name: str) -> str:
    """The line between the preamble and the program: the preamble's binding of `fn_name` set aside."""
    return f"{PREAMBLES} = globals().pop({fn_name!r}, None)\n"


def entry_point(fn_name: str) -> str:
    """The function the run calls: `fn_name` of a fresh `Solution` when the program defines that
    class, else the `fn_name` the program itself bound; NameError when it bound none."""
    missing = f"the program does not define {fn_name} (a name of the import preamble does not count)"
    return (
        f"\n\ndef {ENTRY}(*arguments):\n"
        f"    solution = globals().get('Solution')\n"
        f"    if isinstance(solution, type):\n"
        f"        if {PREAMBLES} is not None:\n"
        f"            globals().setdefault({fn_name!r}, {PREAMBLES})\n"
        f"        return getattr(solution(), {fn_name!r})(*arguments)\n"
        f"    if {fn_name!r} not in globals():\n"
        f"        raise NameError({missing!r})\n"
        f"    return globals()[{fn_name!r}](*arguments)\n"
    )


def arguments_of(test_input: str | list[Any]) -> list[Any]:
    """A test's positional arguments; ValueError when its text is not one JSON value per line."""
    if isinstance(test_input, list):
        return test_input
    lines = [line for line in test_input.split("\n") if line.strip()]
    return [json.loads(line) for line in lines]


class CallTests:
    """A problem's function-call tests, judged by its checker's rules for values."""

    def __init__(self, fn_name: str, checker: Checker) -> None:
        self.fn_name = fn_name
        self.rules = checker if isinstance(checker, Comparison) else Comparison("tokens")
        tolerance = self.rules.tolerance
        self.name = (
            "fn"
            + (f",{tolerance[0]}:{tolerance[1]:g}" if tolerance else "")
            + (",case_insensitive" if self.rules.case_insensitive else "")
        )
        self._prefix = PREAMBLE + hide_from_preamble(fn_name)
        self._suffix = entry_point(fn_name)

    def run(
        self, sandbox: Any, code: str, test: IOPair, limits: Limits
    ) -> tuple[Status, str | None, RunResult]:
        """One test: its status, why it failed, and the run."""
        from evalfarm.sandbox import CallSpec

        try:
            arguments = arguments_of(test.input)
        except ValueError as bad:  # the problem's test, not the program: no verdict
            why = f"the test's arguments are not JSON: {bad}"
            return Status.JUDGE_ERROR, why, RunResult(Status.JUDGE_ERROR)
        spec = CallSpec(ENTRY, arguments, {}, MAX_VALUE_BYTES)
        try:
            r = sandbox.run(self._prefix + code + self._suffix, limits=limits, call=spec)
        except Unencodable as bad:  # the problem's test, not the program: no verdict
            why = f"the test's arguments cannot cross as data: {bad}"
            return Status.JUDGE_ERROR, why, RunResult(Status.JUDGE_ERROR)
        status, error = r.status, r.error
        if status is Status.OK:
            reply = parse_reply(r.reply, json_compatible=True)
            if not reply.returned:
                status, error = Status.RUNTIME_ERROR, reply.error
            elif not self.same(reply.value, test.output):
                status, error = Status.WRONG_ANSWER, None
        return status, error, r

    def same(self, got: Any, expected: Any) -> bool:
        """LiveCodeBench's equality after a JSON round trip of `got`, with the checker's rules."""
        try:
            got = json.loads(json.dumps(got))
        except (TypeError, ValueError):
            return False
        return self._equal(got, expected)

    def _equal(self, got: Any, expected: Any) -> bool:
        if isinstance(expected, bool) or isinstance(got, bool):
            return type(got) is type(expected) and got == expected
        if isinstance(expected, int | float):
            return isinstance(got, int | float) and self._numbers(got, expected)
        if isinstance(expected, str):
            return isinstance(got, str) and (
                got.casefold() == expected.casefold() if self.rules.case_insensitive else got == expected
            )
        if isinstance(expected, list):
            return (
                isinstance(got, list)
                and len(got) == len(expected)
                and all(self._equal(g, e) for g, e in zip(got, expected, strict=True))
            )
        if isinstance(expected, dict):
            return (
                isinstance(got, dict)
                and got.keys() == expected.keys()
                and all(self._equal(got[key], expected[key]) for key in expected)
            )
        return got == expected  # None

    def _numbers(self, got: float, expected: float) -> bool:
        tolerance = self.rules.tolerance
        if tolerance is not None and isinstance(expected, float):
            return math.isfinite(got) and FLOAT_RULES[tolerance[0]](float(expected), float(got), tolerance[1])
        return got == expected
