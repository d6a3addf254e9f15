"""Interactive problems (`problem.interactor`): the program talks to an interactor, each the other's
stdin and stdout, as a judge runs them.

Both are sandboxed processes of one run (`Sandbox.run_interactive`); only the interactor has the
test's input and answer (`interactor input tout answer`, testlib's protocol, the files as read-only
attachments), so the program cannot read what it must find out. One wall clock bounds both: a
mutual wait ends as the program's timeout. The interactor's stderr is its own log, never the
program's output: it is kept to its newest 64 KiB and never ends the run.

The verdict, in order:
1. the interactor said wrong answer (exit 1, or 2, a presentation error) before the program ended:
   wrong answer, whatever the program did after;
2. the program's own failure (a crash, its time, memory or output limit) decides, unless its
   interactor had failed first (ended with no verdict) and the replays of 4. show it faulty
   without the program: then `judge_error` (a program whose peer is gone often fails for that);
3. the program ended cleanly: the interactor's exit is the verdict (0 ok, 1/2 wrong answer, 7
   points as testlib writes them); an interactor that does not compile is `judge_error`;
4. anything else the interactor does (FAIL, 3; a crash; its own time or memory; an exit code of no
   meaning; points it cannot state) is a failure, and whose is settled by replaying the interactor
   without the program (`envs.codecontests.replay`, once per test in a worker):
   - with the problem's own correct solution (`problem.solutions`, the first in a language this
     worker runs): if it accepts it, the failure was the program's (`wrong_answer`); if it fails
     on its own while the solution is still talking or has ended cleanly, `judge_error`; if the
     solution fails first, or is rejected, that proves nothing, and
   - with no program at all: a peer that never writes and keeps its side open, for as long as the
     interactor took to fail and then half that again plus a second (at most its own wall clock).
     An interactor that fails there fails on its own: `judge_error`. One that waits (or judges the
     silence) needed the program's bytes, or the end of them, to fail: `wrong_answer`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalfarm.envs.codecontests.checkers import judge_program
from evalfarm.envs.codecontests.judging import (
    CHECKER_WALL_S,
    TestVerdict,
    checker_limits,
    points_of,
    settle,
    testlib_header,
)
from evalfarm.envs.codecontests.replay import ACCEPTED, FAILED, REPLAYS, WAITED, Replay, ReplayCache
from evalfarm.envs.datasets import Solution
from evalfarm.limits import Limits
from evalfarm.sandbox import InteractorSpec, JudgeRun, attachment_path
from evalfarm.sandbox.run_result import RunResult
from evalfarm.status import Status

_FAIL_EXIT = 3
_POINTS_EXIT = 7
_VERDICT_EXITS = (0, 1, 2, _POINTS_EXIT)
# The peer of a replay with no program: it writes nothing and keeps its side open until the
# interactor is gone (it drains what the interactor says, so the interactor never blocks writing).
SILENT_PEER = "import sys\nsys.stdin.buffer.read()\n"
_INCONCLUSIVE = "inconclusive"  # the solution failed by itself, or was rejected: no proof either way


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
    """Runs a program against a problem's interactor, test by test, in one sandbox slot; a failure of
    the interactor is replayed through `replays` (None: never, and it is `judge_error` as it stands)."""

    def __init__(
        self,
        interactor: Interactor,
        sandbox: Any,
        wall_s: float = CHECKER_WALL_S,
        solutions: Sequence[Solution] = (),
        replays: ReplayCache | None = REPLAYS,
    ) -> None:
        self.interactor = interactor
        self.sandbox = sandbox
        self.limits = checker_limits(wall_s)
        self.headers = {"testlib.h": testlib_header()} if interactor.language == "cpp" else None
        self.solutions = solutions
        self.replays = replays

    def run(
        self, code: str, language: str, test_input: str, answer: str, limits: Limits
    ) -> tuple[TestVerdict, RunResult]:
        """The verdict on one test, and the program's run."""
        run = self._talk(code, language, test_input, answer, limits)
        verdict = interactive_verdict(run)
        if self.replays is None or _never_ran(run):
            return verdict, run
        if verdict.status is Status.JUDGE_ERROR:
            return self._replayed(verdict, run, test_input, answer, limits), run
        failure = _failed_first(run)
        if failure is not None:  # the program failed after its interactor had (its pipes gone)
            settled = self._replayed(failure, run, test_input, answer, limits)
            if settled.status is not Status.WRONG_ANSWER:  # the interactor fails without it too
                return settled, run
            verdict = dataclasses.replace(verdict, replay=settled.replay)
        return verdict, run

    def _talk(self, code: str, language: str, test_input: str, answer: str, limits: Limits) -> RunResult:
        """One run of `code` against the interactor, under `limits` (the interactor's wall clock a
        second longer, so the program's is the one that ends a mutual wait)."""
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
        return self.sandbox.run_interactive(code, spec, limits, language)

    def _replayed(
        self, failed: TestVerdict, run: RunResult, test_input: str, answer: str, limits: Limits
    ) -> TestVerdict:
        """The verdict once the interactor that failed with the program is replayed without it: with
        the problem's solution, and where that proves nothing, with no program at all."""
        test = (test_input, answer)
        solution = self._solution()
        if solution is not None:
            replay = self._with_solution(solution, test, limits)
            if isinstance(replay, TestVerdict):
                return replay
            if replay.outcome in (ACCEPTED, FAILED):
                return settle(failed, replay, "interactor")
        failed_after_s = float((run.judge or {}).get("wall_s") or 0.0)
        replay = self._with_silence(test, silence_limits(failed_after_s, self.limits.wall_s))
        return replay if isinstance(replay, TestVerdict) else settle(failed, replay, "interactor")

    def _with_solution(
        self, solution: Solution, test: tuple[str, str], limits: Limits
    ) -> Replay | TestVerdict:
        bounds = repr((limits.wall_s, limits.cpu_s, limits.memory_mb))
        key = self._key(test, "solution", solution.language, solution.code, bounds)
        peer = (solution.code, solution.language)
        return self._replay("solution", key, peer, test, limits, _solution_outcome)

    def _with_silence(self, test: tuple[str, str], limits: Limits) -> Replay | TestVerdict:
        key = self._key(test, "silence")
        return self._replay("silence", key, (SILENT_PEER, "python"), test, limits, _silence_outcome)

    def _key(self, test: tuple[str, str], *replay: str) -> str:
        assert self.replays is not None
        interactor = self.interactor
        return self.replays.key("interactor", interactor.language, interactor.code, *replay, *test)

    def _replay(
        self,
        against: str,
        key: str,
        peer: tuple[str, str],
        test: tuple[str, str],
        limits: Limits,
        read: Callable[[RunResult], str | TestVerdict],
    ) -> Replay | TestVerdict:
        """The outcome of the interactor's replay with `peer` (code, language) kept under `key`, or
        found by running it and reading it (`read`); the farm's fault under it as an infra_error
        verdict (not kept)."""
        assert self.replays is not None
        outcome = self.replays.get(key)
        if outcome is not None:
            return Replay(against, outcome, cached=True)
        found = read(self._talk(*peer, *test, limits))
        if isinstance(found, TestVerdict):
            return found
        self.replays.put(key, found)
        return Replay(against, found)

    def _solution(self) -> Solution | None:
        """The problem's first solution in a language this worker runs."""
        offered: tuple[str, ...] | None = None
        for solution in self.solutions:
            if solution.language == "python":
                return solution
            offered = offered if offered is not None else tuple(self.sandbox.offered_languages())
            if solution.language in offered:
                return solution
        return None


def silence_limits(failed_after_s: float, most_s: float) -> Limits:
    """The limits of a replay with no program: as long as the interactor took to fail with the
    program, half that again and a second, at most its own wall clock."""
    wall_s = min(most_s, 1.5 * failed_after_s + 1.0)
    return Limits(wall_s=wall_s, cpu_s=wall_s, memory_mb=256)


def _solution_outcome(run: RunResult) -> str | TestVerdict:
    """How the interactor did with the problem's solution: accepted; failed on its own while the
    solution was still talking or had ended cleanly; else inconclusive (the solution failed first,
    or was rejected)."""
    if run.status is Status.INFRA_ERROR:
        return TestVerdict(Status.INFRA_ERROR, 0.0, f"the interactor's replay: {run.error}")
    judge = run.judge or {}
    if run.status is not Status.OK and judge.get("first_to_end") != "interactor":
        return _INCONCLUSIVE
    if _failed_on_its_own(judge):
        return FAILED
    return ACCEPTED if interactive_verdict(run).status is Status.OK else _INCONCLUSIVE


def _silence_outcome(run: RunResult) -> str | TestVerdict:
    """How the interactor did with no program: failed on its own, or waited (or judged the silence)."""
    if run.status is Status.INFRA_ERROR:
        return TestVerdict(Status.INFRA_ERROR, 0.0, f"the interactor's replay: {run.error}")
    return FAILED if _never_ran(run) or _failed_on_its_own(run.judge or {}) else WAITED


def _failed_on_its_own(judge: Mapping[str, Any]) -> bool:
    """The interactor ended itself with no verdict: FAIL or an exit of no meaning, points it cannot
    state, or a signal not the supervisor's (an exit code is its own even where the run's end, the
    wall clock, is recorded over it; a signal at the run's end may be the supervisor's kill)."""
    code = judge.get("exit_code")
    if code == _POINTS_EXIT:
        return points_of(str(judge.get("stderr", "")).encode()).status is Status.JUDGE_ERROR
    if code is not None:
        return code not in _VERDICT_EXITS
    return judge.get("signal") is not None and judge.get("ended_by") is None


def _failed_first(run: RunResult) -> TestVerdict | None:
    """How the interactor failed on its own before the program, which then failed too, if it did."""
    judge = run.judge or {}
    if run.status in (Status.OK, Status.INFRA_ERROR) or judge.get("first_to_end") != "interactor":
        return None
    if not _failed_on_its_own(judge):
        return None
    code = judge.get("exit_code")
    why = (
        f"the interactor exited {code}"
        if code is not None
        else f"the interactor died of signal {judge.get('signal')}"
    )
    return TestVerdict(Status.JUDGE_ERROR, 0.0, why, why)


def _never_ran(run: RunResult) -> bool:
    """The interactor did not compile, or its build would not execute: it is shown faulty without
    any program, and no replay is needed (or could run it)."""
    return (run.judge or {}).get("status") in ("compile_error", "build_error")


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
        why = f"the interactor's run: {judge.get('error') or judge.get('ended_by')}"
        return TestVerdict(Status.JUDGE_ERROR, 0.0, why, why)
    if exit_code == 0:
        return TestVerdict(Status.OK, 1.0)
    if exit_code in (1, 2):
        return TestVerdict(Status.WRONG_ANSWER, 0.0, _message(judge))
    if exit_code == _POINTS_EXIT:
        return points_of(str(judge.get("stderr", "")).encode())
    why, said = f"the interactor exited {exit_code}", _message(judge)
    return TestVerdict(Status.JUDGE_ERROR, 0.0, f"{why}: {said}" if said else why, why)


def _message(judge: Mapping[str, Any]) -> str:
    lines = str(judge.get("stderr", "")).strip().splitlines()
    return lines[-1][:300] if lines else ""
