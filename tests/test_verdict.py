"""The verdict rules (sandbox.verdict): a status from what the supervisor observed, table by table."""

from __future__ import annotations

import errno
import signal

import pytest

from evalfarm.limits import Limits
from evalfarm.sandbox._client_request import read_report
from evalfarm.sandbox.verdict import Observed, classify, classify_judged, compile_verdict, infra_reason
from evalfarm.status import Status

LIMITS = Limits(wall_s=10.0, cpu_s=5.0, memory_mb=512).to_dict()
STARTED = {"started": True}
SIGKILL, SIGSEGV, SIGXCPU = signal.SIGKILL, signal.SIGSEGV, signal.SIGXCPU


def ran(**facts: object) -> Observed:
    """A process that got as far as its program."""
    return Observed(**{"report": STARTED, **facts})  # type: ignore[arg-type]


def exec_failed(number: int) -> dict[str, object]:
    """The report of a native run whose exec failed, as the launcher writes it."""
    return {"started": True, "exec_error": f"launcher: execveat: errno {number}", "errno": number}


TRACEBACK = b"Traceback (most recent call last):\n  File ...\nValueError: bad\n"
MEMORY_ERROR = b"Traceback (most recent call last):\nMemoryError\n"


@pytest.mark.parametrize(
    ("run", "stderr", "status", "error"),
    [
        (ran(exit_code=0), b"", Status.OK, None),
        (ran(exit_code=3), b"", Status.RUNTIME_ERROR, "exit code 3"),
        (ran(exit_code=1), TRACEBACK, Status.RUNTIME_ERROR, "exit code 1 (ValueError)"),
        (ran(signal=SIGSEGV), b"", Status.RUNTIME_ERROR, "killed by signal SIGSEGV"),
        (ran(signal=SIGSEGV, native=True), b"terminate called after", Status.RUNTIME_ERROR, "aborted"),
        (ran(signal=SIGXCPU, cpu_s=5.0), b"", Status.TIMEOUT, "CPU limit of 5.0 s exceeded"),
        (ran(signal=SIGKILL, cpu_s=6.0), b"", Status.TIMEOUT, "CPU limit of 5.0 s exceeded"),
        # A SIGKILL no limit explains: nothing inside a run can send it (PID 1, limits locked).
        (ran(signal=SIGKILL, cpu_s=0.5), b"", Status.INFRA_ERROR, "killed by SIGKILL from outside"),
        (ran(signal=SIGKILL, oom_killed=True), b"", Status.MEMORY_LIMIT, "killed by the cgroup"),
        (ran(exit_code=1), MEMORY_ERROR, Status.MEMORY_LIMIT, "(MemoryError)"),
        (ran(exit_code=0), MEMORY_ERROR, Status.OK, None),  # a hint only ever picks between failures
        (ran(signal=SIGSEGV, native=True), b"std::bad_alloc", Status.MEMORY_LIMIT, "bad_alloc"),
        (ran(exit_code=0, ended_by="wall"), b"", Status.TIMEOUT, "wall-clock limit"),
        (ran(signal=SIGKILL, ended_by="output"), b"", Status.OUTPUT_LIMIT, "output exceeded"),
        (ran(signal=SIGKILL, ended_by="reply"), b"", Status.OUTPUT_LIMIT, "returned value is over the cap"),
        (Observed(exit_code=1, report={"syntax_error": True}), b"SyntaxError: bad", Status.SYNTAX_ERROR,
         "SyntaxError"),
        (Observed(exit_code=120, report={"setup_error": "mount"}), b"", Status.INFRA_ERROR,
         "setup failed: mount"),
        (Observed(exit_code=120), b"", Status.INFRA_ERROR, "no report"),
        # After "started" an exit code of 120 is the program's own.
        (ran(exit_code=120), b"", Status.RUNTIME_ERROR, "exit code 120"),
        (ran(native=True, exit_code=120, report={"started": True, "exec_error": "execveat"}), b"",
         Status.INFRA_ERROR, "execveat"),
        # The program's own build refused by the kernel (its ELF interpreter, its format): its failure.
        (ran(native=True, own_build=True, exit_code=120, report=exec_failed(errno.ENOENT)), b"",
         Status.RUNTIME_ERROR, "build cannot be executed: ENOENT (its ELF interpreter does not exist)"),
        (ran(native=True, own_build=True, exit_code=120, report=exec_failed(errno.ENOEXEC)), b"",
         Status.RUNTIME_ERROR, "ENOEXEC"),
        (ran(native=True, own_build=True, exit_code=120, report=exec_failed(errno.ELIBBAD)), b"",
         Status.RUNTIME_ERROR, "ELIBBAD"),
        (ran(native=True, own_build=True, exit_code=120, report=exec_failed(errno.EACCES)), b"",
         Status.RUNTIME_ERROR, "EACCES"),
        # The host's lack says nothing of the build; a runtime that cannot start is the farm's.
        (ran(native=True, own_build=True, exit_code=120, report=exec_failed(errno.ENOMEM)), b"",
         Status.INFRA_ERROR, "errno 12"),
        (ran(native=True, own_build=True, exit_code=120, report=exec_failed(errno.EAGAIN)), b"",
         Status.INFRA_ERROR, "errno 11"),
        (ran(native=True, exit_code=120, report=exec_failed(errno.ENOENT)), b"", Status.INFRA_ERROR,
         "errno 2"),
        # What cannot be read after "started" was written by the program's process.
        (ran(exit_code=0, report={"started": True, "unreadable": "an unreadable report"}), b"",
         Status.RUNTIME_ERROR, "unreadable after the program started"),
    ],
)  # fmt: skip
def test_a_run_of_one_program(run: Observed, stderr: bytes, status: Status, error: str | None) -> None:
    got, message = classify(run, LIMITS, stderr)
    assert got is status
    assert (message is None) if error is None else (error in (message or ""))


def judged(**facts: object) -> Observed:
    """A candidate still serving when its judge finished."""
    return Observed(**{"report": STARTED, "ended_by": "done", "signal": SIGKILL, **facts})  # type: ignore[arg-type]


JUDGE_OK = ran(exit_code=0)
CALLED = {**STARTED, "called": True}  # the judge's record of its first call to the candidate
JUDGE_CALLED = ran(exit_code=0, report=CALLED)


@pytest.mark.parametrize(
    ("candidate", "judge", "report", "status", "error"),
    [
        (judged(), JUDGE_OK, {"status": "ok"}, Status.OK, None),
        (judged(), JUDGE_OK, {"status": "wrong_answer", "error": "assert"}, Status.WRONG_ANSWER, "assert"),
        (judged(), JUDGE_OK, {"status": "runtime_error", "error": "ValueError"}, Status.RUNTIME_ERROR,
         "ValueError"),
        # The judge's word counts only while the candidate is still serving.
        (ran(exit_code=0), JUDGE_OK, {"status": "ok"}, Status.RUNTIME_ERROR,
         "exited before the test finished"),
        (ran(exit_code=1), JUDGE_OK, {"status": "ok"}, Status.RUNTIME_ERROR, "exit code 1"),
        (ran(signal=SIGXCPU), JUDGE_OK, {"status": "ok"}, Status.TIMEOUT, "CPU limit"),
        (ran(signal=SIGKILL, oom_killed=True), JUDGE_OK, {"status": "ok"}, Status.MEMORY_LIMIT, "cgroup"),
        (ran(signal=SIGKILL, cpu_s=0.1), JUDGE_OK, {"status": "ok"}, Status.INFRA_ERROR, "from outside"),
        (Observed(ended_by="wall", signal=SIGKILL), Observed(ended_by="wall", signal=SIGKILL), None,
         Status.TIMEOUT, "wall-clock"),
        (Observed(ended_by="output", signal=SIGKILL), Observed(ended_by="output"), None, Status.OUTPUT_LIMIT,
         "output"),
        (Observed(exit_code=1, report={"syntax_error": True}), JUDGE_OK, {"status": "runtime_error"},
         Status.SYNTAX_ERROR, ""),
        # The judge's own failures: the candidate's values can cost it time or memory, nothing else.
        (judged(), ran(signal=SIGXCPU), None, Status.TIMEOUT, "judging the program's values"),
        (judged(), ran(signal=SIGKILL, cpu_s=0.1), None, Status.INFRA_ERROR, "from outside"),
        (judged(), ran(signal=SIGSEGV), None, Status.JUDGE_ERROR, "SIGSEGV"),
        (judged(), ran(exit_code=1), {"status": "judge_error", "error": "the test does not run"},
         Status.JUDGE_ERROR, "does not run"),
        (judged(), ran(exit_code=1), {"status": "memory_limit"}, Status.MEMORY_LIMIT, ""),
        (judged(), JUDGE_OK, None, Status.JUDGE_ERROR, "without a verdict"),
        (judged(), JUDGE_OK, {"status": "infra_error"}, Status.JUDGE_ERROR, "unknown verdict"),
        (judged(), JUDGE_OK, {"status": "nonsense"}, Status.JUDGE_ERROR, "unknown verdict"),
        (judged(), Observed(exit_code=120, report={"setup_error": "x"}), None, Status.INFRA_ERROR,
         "setup failed"),
        # Once the judge called the candidate, its failure may be the candidate's doing: not shown faulty.
        (judged(), ran(signal=SIGSEGV, report=CALLED), None, Status.RUNTIME_ERROR, "SIGSEGV"),
        (judged(), ran(exit_code=1, report=CALLED), {"status": "judge_error", "error": "JudgeError: x"},
         Status.RUNTIME_ERROR, "once the program's values had reached it: JudgeError: x"),
        (judged(), JUDGE_CALLED, None, Status.RUNTIME_ERROR, "without a verdict"),
        (judged(), JUDGE_CALLED, {"status": "nonsense"}, Status.RUNTIME_ERROR, "unknown verdict"),
        (judged(), ran(signal=SIGXCPU, report=CALLED), None, Status.TIMEOUT, "judging the program's values"),
        (judged(), ran(signal=SIGKILL, cpu_s=0.1, report=CALLED), None, Status.INFRA_ERROR, "from outside"),
        (judged(), JUDGE_CALLED, {"status": "wrong_answer"}, Status.WRONG_ANSWER, ""),
    ],
)  # fmt: skip
def test_a_judged_run(
    candidate: Observed, judge: Observed, report: dict | None, status: Status, error: str | None
) -> None:
    got, message = classify_judged(candidate, judge, LIMITS, report)
    assert got is status, message
    assert (message is None) if error is None else (error in (message or ""))


COMPILE = Limits().to_dict()


@pytest.mark.parametrize(
    ("run", "messages", "status", "error"),
    [
        (Observed(exit_code=0, report={"compiler_exit": 0, "binary_bytes": 9}), b"", Status.OK, None),
        (Observed(exit_code=1, report={"compiler_exit": 1}), b"main.cpp:1:1: error: x", Status.SYNTAX_ERROR,
         "main.cpp:1:1: error: x"),
        (Observed(ended_by="wall"), b"", Status.TIMEOUT, "wall-clock"),
        (Observed(ended_by="output"), b"", Status.SYNTAX_ERROR, "messages passed"),
        (Observed(exit_code=1, oom_killed=True, report={"compiler_exit": 1}), b"", Status.MEMORY_LIMIT,
         "memory"),
        (Observed(exit_code=1, report={"compiler_exit": 1}), b"virtual memory exhausted",
         Status.MEMORY_LIMIT, ""),
        (Observed(exit_code=120, report={"setup_error": "no g++"}), b"", Status.INFRA_ERROR, "no g++"),
        (Observed(exit_code=0, report={"compiler_exit": 0, "binary_bytes": 0}), b"", Status.INFRA_ERROR,
         "whole"),
    ],
)  # fmt: skip
def test_a_compile(run: Observed, messages: bytes, status: Status, error: str | None) -> None:
    got, message = compile_verdict(run, COMPILE, messages)
    assert got is status
    assert (message is None) if error is None else (error in (message or ""))


def test_the_retryable_reasons() -> None:
    assert infra_reason(*classify(ran(signal=SIGKILL), LIMITS)) == "run_killed_outside"
    assert infra_reason(*classify(Observed(exit_code=120), LIMITS)) == "run_setup_failed"
    assert infra_reason(Status.RUNTIME_ERROR, "x") is None


STARTED_LINE = b'{"started": true}\n'
LAUNCHER_EXEC_FAILED = b'{"started": true}\n\n{"exec_error": "launcher: execveat: errno 2", "errno": 2}\n'


@pytest.mark.parametrize(
    ("data", "report"),
    [
        (b'{"started": true}\n', {"started": True}),
        # The launcher's failure after "started" begins with a blank line: nothing, not a bad record.
        (LAUNCHER_EXEC_FAILED, {"started": True, "exec_error": "launcher: execveat: errno 2", "errno": 2}),
        (b'\n\n{"setup_error": "mount"}\n\n', {"setup_error": "mount"}),
        # Unreadable before "started": the sandbox's own code wrote it, so the sandbox failed.
        (b"not json\n", {"setup_error": "an unreadable report"}),
        (b"[" * 60_000 + b"\n", {"setup_error": "an unreadable report"}),
        (b'{"a": 1}\n' * 10_000, {"setup_error": "a report of 90000 bytes"}),
        # Unreadable after it: the program's process wrote it, whatever it holds.
        (STARTED_LINE + b"[" * 60_000 + b"\n", {"started": True, "unreadable": "an unreadable report"}),
        (STARTED_LINE + b'{"a": 1}\n' * 10_000,
         {"started": True, "a": 1, "unreadable": "a report of 90018 bytes (the sandbox writes a few lines)"}),
    ],
)  # fmt: skip
def test_reading_a_report(data: bytes, report: dict[str, object]) -> None:
    got = read_report(data)
    assert {key: value for key, value in got.items() if key != "setup_error"} == {
        key: value for key, value in report.items() if key != "setup_error"
    }
    if "setup_error" in report:
        assert str(got["setup_error"]).startswith(str(report["setup_error"]))
