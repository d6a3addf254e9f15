"""The `codecontests` env: a program judged on stdin/stdout tests, as in seed 003's CodeContestsEnv.

Public tests only produce `feedback` for the model's next turn; hidden tests decide the reward.
Every test is a fresh sandboxed process, all in this worker's one sandbox slot, back to back. The
program sees nothing but its stdin: expected outputs stay in the worker, never in the sandbox.

Status of a job: the status of its hidden tests by `sandbox.status.PRECEDENCE` (infra_error, then
syntax_error, memory_limit, output_limit, timeout, runtime_error, wrong_answer, ok). With
`all_or_nothing` the run stops at the first failing hidden test, so this is that test's status; with
`fraction_passed` every hidden test runs. A syntax error, or an infra_error in any run, stops the job.
Hidden tests' inputs and outputs never appear in a result.

With `language: "cpp"` the program is C++ (the first ```cpp block of a completion): it compiles once,
in the sandbox, on the job's first test, and every test runs that binary. A compile that fails
(`syntax_error`, or `timeout`/`memory_limit` of the compile) stops the job; `compile` in the result
says how long it took and whether the slot already held the binary.

A problem's own `limits` (its dataset's time and memory, `problem_limits.py`) override the env's
defaults and a job's `limits` override both; the result's `limits` are those applied. A problem with
`files` reads its test from a file and writes its answer to one (`files.py`).

How a test is judged is the problem's (`checker`, `envs/codecontests/checkers.py`: a comparison in
the worker, or a checker program in the sandbox, `judging.py`; `fn_name`: the tests call a function,
`calls.py`; `interactor`: an interactor program talks to the solution, `interactive.py`). The result
names the rule applied (`checker`). A checker or interactor that fails while judging a program is
replayed without it (`replay.py`); its failure is the program's `wrong_answer` unless it fails there
too, and the result's `judge` says so (`{"replayed": true, "reference": ..., "tests": [...]}`). A
judge's fault on any hidden test makes the job `judge_error`, with no reward, whatever the shape.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from evalfarm.envs.base import Context, Env, InvalidJob
from evalfarm.envs.catalog import ENVS
from evalfarm.envs.codecontests.calls import CallTests
from evalfarm.envs.codecontests.checkers import (
    Checker,
    CheckerError,
    Comparison,
    NeedsChecker,
    ProgramChecker,
    parse_checker,
)
from evalfarm.envs.codecontests.compare import normalize_output
from evalfarm.envs.codecontests.extract import LANGUAGE_NAMES, extract_code
from evalfarm.envs.codecontests.feedback import PublicOutcome, format_feedback, parse_error_feedback
from evalfarm.envs.codecontests.files import file_limits, run_with_files
from evalfarm.envs.codecontests.interactive import InteractiveJudge, InteractorError, parse_interactor
from evalfarm.envs.codecontests.job import MAX_CODE_CHARS, CodeContestsJob
from evalfarm.envs.codecontests.judging import ProgramJudge, TestVerdict
from evalfarm.envs.codecontests.problem_limits import applied_limits
from evalfarm.envs.codecontests.replay import Replay, summary
from evalfarm.envs.datasets import DatasetStore, IOPair, Problem
from evalfarm.envs.trajectory import answer_field
from evalfarm.envs.validation import require_language, validate_job
from evalfarm.limits import Limits
from evalfarm.sandbox import languages
from evalfarm.sandbox.run_result import RunResult
from evalfarm.status import Status, worst

# Runs after which the remaining tests cannot change the verdict (or the verdict cannot be trusted).
_STOPPERS = frozenset({Status.SYNTAX_ERROR, Status.INFRA_ERROR, Status.JUDGE_ERROR})
ERROR_CLIP = 300


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One test's verdict, the run behind it, and what the model may see of it."""

    status: Status
    wall_s: float
    cpu_s: float
    stdout: str
    stderr: str
    error: str | None
    compile_failed: bool = False  # the program did not compile: no test can run
    score: float = 0.0  # the test's share of a point: 1 when passed, a checker's partial score
    replay: Replay | None = None  # the judge failed on this test and was replayed without the program

    @property
    def stops(self) -> bool:
        """After this run the remaining tests cannot change the verdict, or it cannot be trusted."""
        return self.status in _STOPPERS or self.compile_failed


class CodeContestsEnv(Env):
    """Competitive-programming answers against stdin/stdout tests."""

    id = "codecontests"
    fields = ENVS[id].fields  # the catalog (envs/catalog.py) says what an env is
    version = ENVS[id].version
    default_limits = Limits(wall_s=4.0, cpu_s=2.0, memory_mb=512, output_bytes=4 << 20)

    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """Run the public tests for feedback, then the hidden tests for the reward."""
        job = job if "code" in job else answer_field(job, "completion")
        _refuse_unknown_problem_fields(job.get("problem"))
        request = validate_job(CodeContestsJob, job).check_choices()
        problem = self._problem(request, ctx)
        limits = applied_limits(self.default_limits, problem, job.get("limits"))
        if problem.files is not None:
            limits = file_limits(limits)
        try:
            checker = parse_checker(problem.checker, problem.float_tolerance, problem.description)
            interactor = parse_interactor(problem.interactor) if problem.interactor is not None else None
        except (CheckerError, InteractorError) as error:
            raise InvalidJob(f"problem.{error}") from None
        language = request.language
        require_language(ctx.sandbox, language)
        code = request.code if request.code is not None else extract_code(request.completion or "", language)
        if code is None:
            return _parse_error(problem, language) | {"limits": limits.to_dict()}
        if len(code) > MAX_CODE_CHARS:
            raise InvalidJob(f"completion: the program is longer than {MAX_CODE_CHARS} characters")
        judge = _Judge(ctx.sandbox, code, limits, problem, request.reward_shape, language, checker)
        if interactor is not None:
            solutions = problem.solutions or ()
            judge.interactive = InteractiveJudge(interactor, ctx.sandbox, problem.checker_wall_s, solutions)
            judge.checker_name = interactor.name
        public = judge.run_all(problem.public_tests, public=True)
        outcomes = [_outcome(test, run) for test, run in zip(problem.public_tests, public, strict=False)]
        feedback = format_feedback(outcomes, total=len(problem.public_tests))
        stopped = next((run for run in public if run.stops), None)
        hidden = [] if stopped else judge.run_all(problem.hidden_tests, public=False)
        if judge.compile is not None and not (stopped or hidden):  # no public test ran the compile
            stopped = judge.compile_only()
        result = _result(problem, request.reward_shape, stopped, hidden, feedback)
        result["checker"] = judge.checker_name
        replays = [("public", n, run.replay) for n, run in enumerate(public, 1) if run.replay]
        replays += [("hidden", n, run.replay) for n, run in enumerate(hidden, 1) if run.replay]
        if replays:
            result["judge"] = summary(replays)
        result["limits"] = limits.to_dict()
        if judge.compile is not None:
            result["compile"] = judge.compile
        return result

    @staticmethod
    def _problem(request: CodeContestsJob, ctx: Context) -> Problem:
        """The inline problem, or the one `problem_id` names in this worker's datasets."""
        if request.problem is not None:
            return request.problem
        if not isinstance(ctx.datasets, DatasetStore):
            raise InvalidJob("problem_id: no dataset is loaded on this worker; send the problem inline")
        return ctx.datasets.lookup(request.problem_id or "", request.dataset)


class _Judge:
    """Runs one program on tests, in one sandbox slot, judged by the problem's checker."""

    def __init__(
        self,
        sandbox: Any,
        code: str,
        limits: Limits,
        problem: Problem,
        shape: str,
        language: str,
        checker: Checker,
    ) -> None:
        self.sandbox, self.code, self.limits, self.language = sandbox, code, limits, language
        self.checker = checker
        self.stop_at_failure = shape == "all_or_nothing"  # the reward is 0 already: save the CPU
        # A compiled program's compile, as its first run reported it (None for Python, Node.js, PyPy).
        self.compile: dict[str, Any] | None = {} if languages.compiled(language) else None
        self.program_judge = (
            ProgramJudge(checker, sandbox, problem.checker_wall_s)
            if isinstance(checker, ProgramChecker)
            else None
        )
        self.calls = CallTests(problem.fn_name, checker) if problem.fn_name else None
        self.files = problem.files
        self.interactive: InteractiveJudge | None = None
        self.checker_name = self.calls.name if self.calls else checker.name

    def run(self, test: IOPair, keep_output: bool) -> Verdict:
        """Run the program on `test.input`; wrong_answer when it exits cleanly with the wrong output.

        The output is kept only when asked (public tests): hidden runs must not hold megabytes each.
        """
        if self.calls is not None:
            status, why, call = self.calls.run(self.sandbox, self.code, test, self.limits)
            out = call.stdout.decode("utf-8", "replace") if keep_output else ""
            err = call.stderr.decode("utf-8", "replace") if keep_output else ""
            return Verdict(status, call.wall_s, call.cpu_s, out, err, why, False, float(status is Status.OK))
        assert isinstance(test.input, str) and isinstance(test.output, str)  # the problem's validation
        if self.interactive is not None:
            judged, r = self.interactive.run(self.code, self.language, test.input, test.output, self.limits)
            compile_failed = self._note_compile(r.compile)
            stderr = r.stderr.decode("utf-8", "replace") if keep_output or compile_failed else ""
            return _verdict(judged, r, "", stderr, compile_failed)
        r, answer = self._run_program(test.input)
        compile_failed = self._note_compile(r.compile)
        judged = TestVerdict(r.status, float(r.status is Status.OK), r.error)
        if r.status is Status.OK:
            judged = self._judge_output(test.input, answer, test.output)
        # A failed compile's messages are the model's to read, from a hidden test too.
        keep = keep_output or compile_failed
        stdout = answer.decode("utf-8", "replace") if keep else ""
        stderr = r.stderr.decode("utf-8", "replace") if keep else ""
        return _verdict(judged, r, stdout, stderr, compile_failed)

    def _run_program(self, given: str) -> tuple[RunResult, bytes]:
        """The program's run on a test's input, and its answer: its stdout, or the file it wrote."""
        if self.files is not None:
            return run_with_files(self.sandbox, self.code, given, self.files, self.limits, self.language)
        data = given.encode("utf-8")
        r = self.sandbox.run(self.code, stdin=data, limits=self.limits, language=self.language)
        return r, r.stdout

    def _judge_output(self, given: str, output: bytes, expected: str) -> TestVerdict:
        """The checker's verdict on a clean run's output."""
        if isinstance(self.checker, Comparison):
            passed = self.checker.accepts(output, expected)
            return TestVerdict(Status.OK if passed else Status.WRONG_ANSWER, float(passed))
        if isinstance(self.checker, NeedsChecker):
            return TestVerdict(Status.JUDGE_ERROR, 0.0, self.checker.reason)
        assert self.program_judge is not None
        return self.program_judge.judge(given, output, expected)

    def _note_compile(self, compiled: dict[str, Any] | None) -> bool:
        """Record the first run's compile; True when the program did not compile."""
        if self.compile == {} and compiled is not None:
            self.compile = {
                "status": compiled["status"],
                "wall_s": round(compiled["wall_s"], 6),
                "cached": compiled["cached"],
            }
        return compiled is not None and compiled["status"] != Status.OK.value

    def compile_only(self) -> Verdict | None:
        """For a problem with no tests to run: compile the program all the same (a program that
        does not compile is not ok); the failed compile's verdict, or None."""
        run = self.run(IOPair(input="", output=""), keep_output=True)
        return run if run.compile_failed else None

    def run_all(self, tests: list[IOPair], public: bool) -> list[Verdict]:
        """`tests` in order, stopping after a stopper (and, hidden under all_or_nothing, a failure)."""
        runs = []
        for test in tests:
            run = self.run(test, keep_output=public)
            runs.append(run)
            if run.stops or (self.stop_at_failure and not public and run.status is not Status.OK):
                break
        return runs


def _verdict(judged: TestVerdict, run: RunResult, stdout: str, stderr: str, compile_failed: bool) -> Verdict:
    """A test's verdict: the judge's word on it, and the program's run behind it."""
    return Verdict(
        judged.status, run.wall_s, run.cpu_s, stdout, stderr, judged.error, compile_failed, judged.score,
        judged.replay,
    )  # fmt: skip


def _outcome(test: IOPair, run: Verdict) -> PublicOutcome:
    """What the feedback shows of a public test."""
    return PublicOutcome(
        passed=run.status is Status.OK,
        status=run.status,
        wall_s=run.wall_s,
        input=test.input if isinstance(test.input, str) else json.dumps(test.input),
        expected=normalize_output(test.output) if isinstance(test.output, str) else json.dumps(test.output),
        got=normalize_output(run.stdout),
        stderr=run.stderr,
    )


def _result(
    problem: Problem, shape: str, stopped: Verdict | None, hidden: list[Verdict], feedback: str
) -> dict[str, Any]:
    """The result fields: status by precedence, reward by shape, per-test entries, feedback."""
    total = len(problem.hidden_tests)
    passed = sum(run.status is Status.OK for run in hidden)
    status = stopped.status if stopped else worst([run.status for run in hidden])
    if status in (Status.INFRA_ERROR, Status.JUDGE_ERROR):
        reward = None  # the farm's fault, or the judge's: never a reward of 0
    elif shape == "fraction_passed":
        reward = sum(run.score for run in hidden) / total  # a checker's partial scores count
    else:
        reward = 1.0 if passed == total else 0.0
    fields = {
        "tests": [_test_entry(r) for r in hidden],
        "passed": passed,
        "total": total,
        "feedback": feedback,
    }
    return {
        "status": status.value,
        "reward": reward,
        "error": _error(status, stopped, hidden, total),
        **fields,
    }


def _test_entry(run: Verdict) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "status": run.status.value,
        "wall_s": round(run.wall_s, 6),
        "cpu_s": round(run.cpu_s, 6),
    }
    if 0.0 < run.score < 1.0:
        entry["score"] = round(run.score, 6)  # a checker's partial score
    return entry


def _refuse_unknown_problem_fields(problem: Any) -> None:
    """An inline problem's fields are all known: a declaration the farm would ignore (a misspelt
    `checker`) is refused, naming it, rather than judged without."""
    if isinstance(problem, Mapping):
        unknown = sorted(set(problem) - set(Problem.model_fields))
        if unknown:
            raise InvalidJob(
                f"problem.{unknown[0]}: unknown field (known: {', '.join(Problem.model_fields)})"
            )


def _error(status: Status, stopped: Verdict | None, hidden: list[Verdict], total: int) -> str | None:
    """A one-line reason for a failed job (no hidden test data in it)."""
    if status is Status.OK:
        return None
    if stopped is not None:
        return f"public test run: {status.value}" + _detail(stopped)
    number, run = next((n, r) for n, r in enumerate(hidden, start=1) if r.status is status)
    return f"hidden test {number}/{total}: {status.value}" + _detail(run)


def _detail(run: Verdict) -> str:
    """The sandbox's own explanation of a run, clipped, when it gave one."""
    return f": {run.error[:ERROR_CLIP]}" if run.error else ""


def _parse_error(problem: Problem, language: str) -> dict[str, Any]:
    """The result of an answer with no code block of its language: reward 0, nothing run."""
    total = len(problem.hidden_tests)
    return {
        "status": Status.PARSE_ERROR.value,
        "reward": 0.0,
        "error": f"completion: no fenced {LANGUAGE_NAMES[language]} code block",
        "tests": [],
        "passed": 0,
        "total": total,
        "feedback": parse_error_feedback(language),
    }
