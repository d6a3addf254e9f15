"""Checker programs: a problem's own judge, run in the sandbox on each test the program passed cleanly.

A checker is often model-written, so it runs under the same walls as any program, in a run of its
own: it never shares a process with the candidate, and the candidate never sees the test's answer.
The test's input, the program's output and the expected answer reach it as read-only attachments
(`/proc/self/fd/10`, `11`, `12`); a C++ checker is compiled once per slot (the sandbox's binary
cache) with testlib.h beside it. Its verdict is its exit code, read by the fork server; what it
prints is read only for a partial score.

Protocols:
- `testlib`: `checker input output answer`; exit 0 ok, 1 wrong answer, 2 presentation error (wrong
  answer), 3 FAIL, 7 points (a fraction in [0, 1], as testlib's quitp writes it: `points X ...`,
  the last line of its stderr; or a stream that is one number and nothing else). A Python checker's
  uncaught exception exits 3.
- `openr1` (open-r1's generated checkers): `checker.py input correct_output solution_output`, blank
  lines and `\r` removed from both outputs first, as its scorer does; a pass is exit 0 with `1` or
  `100` printed.
- `kattis` (problemtools' output validators): `validator input judge_answer feedback_dir/`, the
  program's output on stdin; 42 accepts, 43 rejects.

Anything else the checker does (FAIL, another exit code, a signal, its timeout or memory limit,
points it cannot state) is a failure, and a failure on a program's output is not yet anyone's fault:
the checker is replayed with the test's expected answer as the output (`envs.codecontests.replay`,
once per test and checker in a worker). If it judges that cleanly, the program's output made it
fail: `wrong_answer` (testlib itself reads malformed output as a presentation error, never FAIL).
Only a checker that fails on the expected answer too, or does not compile, is `judge_error`. A fault
of the farm under it stays `infra_error` (retried).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path
from typing import Any

from evalfarm.envs.codecontests.checkers import ProgramChecker
from evalfarm.envs.codecontests.replay import (
    ACCEPTED,
    AGAINST,
    CLEAN,
    FAILED,
    REJECTED,
    REPLAYS,
    Replay,
    ReplayCache,
)
from evalfarm.limits import Limits
from evalfarm.sandbox import JudgeRun, attachment_path
from evalfarm.sandbox.run_result import RunResult
from evalfarm.status import Status

TESTLIB = Path(__file__).resolve().parent / "testlib" / "testlib.h"
CHECKER_WALL_S = 10.0
CHECKER_MEMORY_MB = 1024
_FAIL_EXIT = 3  # testlib's FAIL: a Python checker's crash
_NUMBER = rb"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
# testlib's quitp: "points " and the number begin its message, the last line it writes.
_POINTS_LINE = re.compile(rb"points[ \t]+(" + _NUMBER + rb")(?:[ \t]|$)")
_ONE_NUMBER = re.compile(_NUMBER)


@dataclasses.dataclass(frozen=True)
class TestVerdict:
    """What the checker said of one test: its status, the test's score in [0, 1], why (`error`;
    `reason`, a judge's failure without its words), and the replay that settled a judge's failure."""

    status: Status
    score: float
    error: str | None = None
    reason: str | None = None
    replay: Replay | None = None


@functools.cache
def testlib_header() -> bytes:
    """testlib.h, shipped with the env (its MIT license beside it)."""
    return TESTLIB.read_bytes()


def checker_limits(wall_s: float) -> Limits:
    """A checker run's limits: its own wall clock, room to read three large files."""
    return Limits(
        wall_s=wall_s,
        cpu_s=wall_s,
        memory_mb=CHECKER_MEMORY_MB,
        output_bytes=64 << 10,
        workdir_mb=64,
        processes=4,
        compile_wall_s=60.0,
        compile_memory_mb=2048,
    )


class ProgramJudge:
    """Runs one problem's checker program on tests, in one sandbox slot; a failure is replayed on
    the test's answer through `replays` (None: never, and a failure is `judge_error` as it stands)."""

    def __init__(
        self,
        checker: ProgramChecker,
        sandbox: Any,
        wall_s: float = CHECKER_WALL_S,
        replays: ReplayCache | None = REPLAYS,
    ) -> None:
        self.checker = checker
        self.sandbox = sandbox
        self.limits = checker_limits(wall_s)
        self.headers = {"testlib.h": testlib_header()} if checker.language == "cpp" else None
        self.replays = replays

    def judge(self, test_input: str, output: bytes, answer: str) -> TestVerdict:
        """The checker's verdict on `output` for a test of input `test_input` and answer `answer`."""
        verdict, compiled = self._check(test_input, output, answer)
        if verdict.status is not Status.JUDGE_ERROR or not compiled or self.replays is None:
            return verdict
        return self._replayed(verdict, test_input, answer)

    def _replayed(self, failed: TestVerdict, test_input: str, answer: str) -> TestVerdict:
        """The verdict once the checker that failed is run on the expected answer (or its outcome
        there is known): whose fault the failure was."""
        assert self.replays is not None
        checker = self.checker
        key = self.replays.key(
            "checker", checker.language, checker.protocol, checker.code, repr(self.limits.wall_s),
            test_input, answer,
        )  # fmt: skip
        outcome = self.replays.get(key)
        cached = outcome is not None
        if outcome is None:
            reference, _ = self._check(test_input, answer.encode("utf-8"), answer)
            if reference.status is Status.INFRA_ERROR:  # the farm failed under the replay
                return reference
            outcome = outcome_of(reference)
            self.replays.put(key, outcome)
        return settle(failed, Replay("answer", outcome, cached), "checker")

    def _check(self, test_input: str, output: bytes, answer: str) -> tuple[TestVerdict, bool]:
        """One run of the checker: its verdict, and whether it compiled."""
        protocol = self.checker.protocol
        given = test_input.encode("utf-8")
        expected = answer.encode("utf-8")
        stdin = b""
        files: tuple[bytes, ...]
        if protocol == "openr1":
            files = (given, _drop_blank_lines(expected.replace(b"\r", b"")), _drop_blank_lines(output))
            argv = tuple(attachment_path(i) for i in range(3))
        elif protocol == "kattis":
            files, stdin = (given, expected), output
            argv = (attachment_path(0), attachment_path(1), "/tmp/")
        else:
            files = (given, output, expected)
            argv = tuple(attachment_path(i) for i in range(3))
        crash_exit = _FAIL_EXIT if protocol != "kattis" else None
        run = self.sandbox.run(
            self.checker.code,
            stdin=stdin,
            limits=self.limits,
            language=self.checker.language,
            judge=JudgeRun(argv=argv, attachments=files, crash_exit=crash_exit),
            headers=self.headers,
        )
        return verdict_of(protocol, run), compiled(run)


def compiled(run: RunResult) -> bool:
    """False when the judge's run is its failed compile (nothing to replay: it cannot run at all)."""
    return run.compile is None or run.compile.get("status") == Status.OK.value


def settle(failed: TestVerdict, replay: Replay, role: str) -> TestVerdict:
    """The test's verdict once the judge (`role`: checker, interactor) that failed on the program
    (`failed`) was replayed without it: `judge_error` if it fails there too, else `wrong_answer`.

    The wrong answer's message says why the judge failed, never what it printed (a checker's words
    may quote the hidden answer)."""
    against = AGAINST[replay.against]
    if replay.outcome == FAILED:
        why = f"{failed.error}; the {role} fails with {against} too"
        return TestVerdict(Status.JUDGE_ERROR, 0.0, why, failed.reason, replay)
    where = "on this program's output" if role == "checker" else "with this program"
    why = f"{failed.reason or failed.error} {where}; " + CLEAN[replay.outcome].format(against=against)
    return TestVerdict(Status.WRONG_ANSWER, 0.0, why, failed.reason, replay)


def outcome_of(verdict: TestVerdict) -> str:
    """How a judge did on a replay, from its verdict there."""
    if verdict.status is Status.OK:
        return ACCEPTED
    return FAILED if verdict.status is Status.JUDGE_ERROR else REJECTED


def verdict_of(protocol: str, run: RunResult) -> TestVerdict:
    """The test's verdict from the checker's run (its exit code, or why it has none)."""
    if run.status is Status.INFRA_ERROR:
        return TestVerdict(Status.INFRA_ERROR, 0.0, f"checker: {run.error}")
    if not compiled(run):
        return _judge_error(f"the checker does not compile ({(run.compile or {}).get('status')})", run)
    if run.status in (Status.TIMEOUT, Status.MEMORY_LIMIT, Status.OUTPUT_LIMIT, Status.SYNTAX_ERROR):
        return _judge_error(f"the checker's run: {run.status.value}", run)
    if run.signal is not None or run.exit_code is None:
        return _judge_error(f"the checker died of signal {run.signal}", run)
    code = run.exit_code
    if protocol == "kattis":
        if code in (42, 43):
            return TestVerdict(Status.OK if code == 42 else Status.WRONG_ANSWER, float(code == 42))
        return _judge_error(f"the validator exited {code} (42 accepts, 43 rejects)", run)
    if protocol == "openr1":
        if code == 0:
            passed = re.sub(rb"\s+", b"", run.stdout) in (b"1", b"100")
            return TestVerdict(Status.OK if passed else Status.WRONG_ANSWER, float(passed))
        if code in (1, 2):
            return TestVerdict(Status.WRONG_ANSWER, 0.0)
        return _judge_error(f"the checker exited {code}", run)
    if code == 0:
        return TestVerdict(Status.OK, 1.0)
    if code in (1, 2):
        return TestVerdict(Status.WRONG_ANSWER, 0.0)
    if code == 7:
        return points_of(run.stderr, run.stdout)
    return _judge_error(
        f"the checker exited {code} ({'FAIL' if code == _FAIL_EXIT else 'not a verdict'})", run
    )


def points_of(*printed: bytes) -> TestVerdict:
    """testlib's partial score (exit 7), in [0, 1], from the first of the judge's streams (stderr
    first) that states one: its last line begins `points X` (testlib's quitp), or the stream is one
    number and nothing else. A number anywhere else (a diagnostic's "token 1") is not a score."""
    for stream in printed:
        score = _stated_points(stream)
        if score is None:
            continue
        if 0.0 <= score <= 1.0:
            return TestVerdict(Status.OK if score == 1.0 else Status.WRONG_ANSWER, score)
        why = f"the judge's points {score:g} are not a fraction in [0, 1]"
        return TestVerdict(Status.JUDGE_ERROR, 0.0, why, why)
    why = "the judge exited 7 (points) without stating them (`points X`, or one number)"
    return TestVerdict(Status.JUDGE_ERROR, 0.0, why, why)


def _stated_points(stream: bytes) -> float | None:
    text = stream.strip()
    if _ONE_NUMBER.fullmatch(text):
        return float(text)
    last = text.rsplit(b"\n", 1)[-1].strip()
    found = _POINTS_LINE.match(last)
    return float(found.group(1)) if found else None


def _judge_error(why: str, run: RunResult) -> TestVerdict:
    detail = run.stderr.decode("utf-8", "replace").strip().splitlines()
    return TestVerdict(Status.JUDGE_ERROR, 0.0, f"{why}: {detail[-1][:200]}" if detail else why, why)


def _drop_blank_lines(text: bytes) -> bytes:
    """The output without its empty lines (open-r1's scorer runs `sed '/^$/d'` on both outputs)."""
    lines = text.split(b"\n")
    kept = [line for line in lines if line]
    return b"\n".join(kept) + (b"\n" if kept else b"")
