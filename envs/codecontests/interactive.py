"""Interactive problems (`problem.interactor`): the program talks to an interactor, each the other's
stdin and stdout, as a judge runs them.

Both are sandboxed processes of one run (`Sandbox.run_interactive`); only the interactor has the
test's input and answer (`interactor input tout answer`, testlib's protocol, the files as read-only
attachments), so the program cannot read what it must find out. One wall clock bounds both: a
mutual wait ends as the program's timeout.

The verdict, in order:
1. the interactor said wrong answer (exit 1, or 2, a presentation error) before the program ended:
   wrong answer, whatever the program did after;
2. the program's own failure (a crash, its time, memory or output limit) decides;
3. the program ended cleanly: the interactor's exit is the verdict (0 ok, 1/2 wrong answer, 7
   points; an interactor whose program stopped reading finds the end of its output, a presentation
   error, testlib's and a Python interactor's alike); anything else it does (FAIL, 3; a crash; its
   own time or memory; an exit code of no meaning; not compiling) is `judge_error`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from evalfarm.envs.codecontests.checkers import judge_program
from evalfarm.envs.codecontests.judging import (
    CHECKER_WALL_S,
    TestVerdict,
    checker_limits,
    points_of,
    testlib_header,
)
from evalfarm.sandbox import InteractorSpec, JudgeRun, attachment_path
from evalfarm.sandbox.limits import Limits
from evalfarm.sandbox.result import RunResult
from evalfarm.sandbox.status import Status

_FAIL_EXIT = 3
_POINTS_EXIT = 7


class InteractorError(ValueError):
    """An interactor declaration that cannot be used."""


@dataclasses.dataclass(frozen=True)
class Interactor:
    """A problem's interactor program."""

    language: str
    code: str
    protocol: str = "testlib"

    @property
    def name(self) -> str:
        """What results say was applied (`checker`)."""
        return f"interactor:{self.protocol}"


def parse_interactor(spec: Mapping[str, Any]) -> Interactor:
    """The interactor a problem declares; InteractorError naming what is wrong."""
    return Interactor(*judge_program(spec, "interactor", "cpp", ("testlib",), InteractorError))


class InteractiveJudge:
    """Runs a program against a problem's interactor, test by test, in one sandbox slot."""

    def __init__(self, interactor: Interactor, sandbox: Any, wall_s: float = CHECKER_WALL_S) -> None:
        self.interactor = interactor
        self.sandbox = sandbox
        self.limits = checker_limits(wall_s)
        self.headers = {"testlib.h": testlib_header()} if interactor.language == "cpp" else None

    def run(
        self, code: str, language: str, test_input: str, answer: str, limits: Limits
    ) -> tuple[TestVerdict, RunResult]:
        """The verdict on one test, and the program's run."""
        spec = InteractorSpec(
            code=self.interactor.code.encode(),
            language=self.interactor.language,
            judge=JudgeRun(
                argv=(attachment_path(0), "/tmp/tout", attachment_path(1)),
                attachments=(test_input.encode("utf-8"), answer.encode("utf-8")),
                crash_exit=_FAIL_EXIT,
            ),
            limits=dataclasses.replace(self.limits, wall_s=limits.wall_s + 1.0),
            headers=self.headers,
        )
        run = self.sandbox.run_interactive(code, spec, limits, language)
        return interactive_verdict(run), run


def interactive_verdict(run: RunResult) -> TestVerdict:
    """The test's verdict from the program's run and how its interactor ended (module docstring)."""
    if run.status is Status.INFRA_ERROR:
        return TestVerdict(Status.INFRA_ERROR, 0.0, run.error)
    judge = run.judge or {}
    if judge.get("status") in ("compile_error", "build_error"):  # the interactor never ran
        return TestVerdict(
            Status.JUDGE_ERROR, 0.0, str(judge.get("error", "the interactor does not compile"))[:300]
        )
    exit_code, own_end = judge.get("exit_code"), judge.get("ended_by") is None and judge.get("signal") is None
    said_wrong = own_end and exit_code in (1, 2)
    if said_wrong and judge.get("first_to_end") == "interactor":
        return TestVerdict(Status.WRONG_ANSWER, 0.0, _message(judge))
    if run.status is not Status.OK:
        return TestVerdict(run.status, 0.0, run.error)
    if not own_end:
        return TestVerdict(
            Status.JUDGE_ERROR, 0.0, f"the interactor's run: {judge.get('error') or judge.get('ended_by')}"
        )
    if exit_code == 0:
        return TestVerdict(Status.OK, 1.0)
    if exit_code in (1, 2):
        return TestVerdict(Status.WRONG_ANSWER, 0.0, _message(judge))
    if exit_code == _POINTS_EXIT:
        return points_of(str(judge.get("stderr", "")).encode())
    return TestVerdict(Status.JUDGE_ERROR, 0.0, f"the interactor exited {exit_code}: {_message(judge)}")


def _message(judge: Mapping[str, Any]) -> str:
    lines = str(judge.get("stderr", "")).strip().splitlines()
    return lines[-1][:300] if lines else ""
