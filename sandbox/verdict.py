"""The verdict rules: a run's status from what the supervisor observed. Pure functions, no I/O.

The fork server observes each process of a run from outside it (its wait status and resource use,
which limit it hit, whether the supervisor itself ended it, the slot's cgroup OOM count) and hands
those facts over with the run's outputs. The rules below turn them into a status, in a fixed order
of evidence. The only words of a process's own that count are its *report*, written by the
sandbox's code before any program code ran (a setup failure, a syntax error, "started") and closed
to the program; everything a program writes after that (its output, its stderr) is a hint that may
choose between two failures (MemoryError means memory_limit rather than runtime_error) but never
makes a failure a success, nor anything the farm's or the judge's fault. For the same reason, a
report that turns unreadable after "started" is the program's doing, and an exec of the program's
own build that the kernel refused (the build names a missing ELF interpreter) is the program's
failure: the farm's is only what says nothing of the build (a runtime that cannot start, the host's
lack of memory).
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
import signal
from collections.abc import Mapping
from typing import Any

from evalfarm.status import Status

SETUP_FAILED_EXIT = 120  # a sandbox process that could not put up its walls exits with this
KILLED_OUTSIDE = "killed by SIGKILL from outside the sandbox (not by a limit of the run)"
SETUP_FAILED = "sandbox setup failed"
JUDGE_FAILED_AFTER_CALLS = "the judge failed once the program's values had reached it"
COMPILER_MESSAGE_BYTES = 16 << 10  # of the compiler's messages, what a failed compile's result keeps


@dataclasses.dataclass(frozen=True)
class Observed:
    """What the supervisor saw of one process of a run.

    `ended_by`: why the supervisor ended it (`wall`, `output`, `reply`: a limit of the run; `done`:
    the run was over, as when a judge finished with its candidate), None when it ended on its own.
    `report`: the process's own records from before its program started (see the module doc).
    """

    exit_code: int | None = None
    signal: int | None = None
    cpu_s: float = 0.0
    wall_s: float = 0.0
    max_rss_mb: float | None = None
    ended_by: str | None = None
    oom_killed: bool = False
    report: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    native: bool = False
    own_build: bool = False  # a native process that executes the program's own build, not a runtime

    @classmethod
    def from_header(
        cls, facts: Mapping[str, Any], report: Mapping[str, Any], own_build: bool = False
    ) -> Observed:
        """From a fork server's facts of one process and its parsed report; `own_build`: the
        request had it execute the program's build itself (a static binary, no runtime)."""
        names = ("exit_code", "signal", "cpu_s", "wall_s", "max_rss_mb", "ended_by", "oom_killed", "native")
        observed = {name: facts[name] for name in names if name in facts}
        return cls(report=report, own_build=own_build and bool(observed.get("native")), **observed)


Verdict = tuple[Status, str | None]


def classify(run: Observed, limits: Mapping[str, Any], stderr: bytes = b"") -> Verdict:
    """The status of a run of one program, and a one-line reason when it is not ok."""
    return (
        _setup_failure(run)
        or _build_refused(run)
        or _unreadable_report(run)
        or _ended_by_supervisor(run, limits)
        or _syntax_error(run, stderr)
        or _own_end(run, limits, stderr)
        or (Status.OK, None)
    )


def classify_judged(
    candidate: Observed,
    judge: Observed,
    limits: Mapping[str, Any],
    judge_report: Mapping[str, Any] | None,
    stderr: bytes = b"",
) -> Verdict:
    """The status of a candidate judged by a separate judge process (its calls crossing as data).

    The judge's report decides only once every fact about the candidate is clean: the candidate
    was still running, serving calls, when the judge finished (it never ends on its own), and no
    limit of the run was hit. A judge's failure (a crash, a signal, no verdict, its own
    `judge_error`) is `judge_error` only when it is shown faulty without the candidate: it failed
    before its first call to the candidate. Once it called, what it did may depend on the
    candidate's replies, so its failure is the candidate's `runtime_error` (its error starts with
    JUDGE_FAILED_AFTER_CALLS; an env with a reference answer may replay the judge on it). Its time
    and memory spent on the candidate's values are the candidate's `timeout` and `memory_limit`.
    """
    early = (
        _setup_failure(candidate)
        or _setup_failure(judge)
        or _ended_by_supervisor(candidate, limits)
        or _syntax_error(candidate, stderr)
        or _over_cpu(candidate, limits)
    )
    if early:
        return early
    if candidate.ended_by != "done":  # it ended before the judge did
        status, error = _own_end(candidate, limits, stderr) or (Status.OK, None)
        if status is Status.OK:
            return Status.RUNTIME_ERROR, "the program exited before the test finished"
        return status, error
    return _after_calls(_judge_end(judge, limits) or _judge_said(judge_report), judge)


def _after_calls(verdict: Verdict, judge: Observed) -> Verdict:
    """A judge's failure is the candidate's once the judge had called it (its report says so)."""
    status, error = verdict
    if status is Status.JUDGE_ERROR and judge.report.get("called"):
        return Status.RUNTIME_ERROR, f"{JUDGE_FAILED_AFTER_CALLS}: {error}"
    return verdict


def judge_failed_after_calls(error: str | None) -> bool:
    """Whether a judged run's error is a judge's failure charged to the candidate (see above)."""
    return error is not None and error.startswith(JUDGE_FAILED_AFTER_CALLS)


def _setup_failure(run: Observed) -> Verdict | None:
    report = run.report
    if "setup_error" in report or (run.exit_code == SETUP_FAILED_EXIT and not report.get("started")):
        return Status.INFRA_ERROR, f"{SETUP_FAILED}: {report.get('setup_error', 'no report')}"
    if run.native and "exec_error" in report and not _refused_for_the_build(run):
        # written by the launcher, which no program is: a runtime that cannot start, or the host's lack
        return Status.INFRA_ERROR, f"{SETUP_FAILED}: {report['exec_error']}"
    return None


# Why an exec fails that says nothing of the file executed: the host's resources, the launcher's own
# arguments and descriptors. Any other errno of the program's own build is what the kernel found in
# the build (an ELF interpreter that is missing or not a program, a format it does not run).
_HOST_ERRNOS = frozenset(
    {errno.EAGAIN, errno.ENOMEM, errno.EFAULT, errno.EBADF, errno.EINTR, errno.ENFILE, errno.EMFILE,
     errno.E2BIG, errno.ETXTBSY, errno.EPERM}
)  # fmt: skip
_BUILD_ERRNOS = {
    errno.ENOENT: "its ELF interpreter does not exist",
    errno.ENOEXEC: "its format is not one this machine executes",
    errno.ELIBBAD: "its ELF interpreter is not a loader",
    errno.EACCES: "its ELF interpreter is not an executable file",
    errno.ENOTDIR: "its ELF interpreter's path does not exist",
}


def _refused_for_the_build(run: Observed) -> bool:
    number = run.report.get("errno")
    return run.own_build and type(number) is int and number not in _HOST_ERRNOS


def _build_refused(run: Observed) -> Verdict | None:
    """A program's own build that the kernel would not execute: the program's failure, as a binary
    that crashes at its first instruction is (its source chose its ELF interpreter, its sections)."""
    if not (run.native and "exec_error" in run.report and _refused_for_the_build(run)):
        return None
    return Status.RUNTIME_ERROR, f"the program's build cannot be executed: {refusal(run.report)}"


def refusal(report: Mapping[str, Any]) -> str:
    """Why the kernel refused to execute a build, from its launcher's report (`ENOENT (...)`)."""
    number = report.get("errno")
    if type(number) is not int:
        return str(report.get("exec_error"))
    why = _BUILD_ERRNOS.get(number) or os.strerror(number)
    return f"{errno.errorcode.get(number, number)} ({why})"


def _unreadable_report(run: Observed) -> Verdict | None:
    """A report that turned unreadable after its process said it started: only the program had the
    process then (`sandbox._client_request.read_report`), so whatever it is, it is the program's doing."""
    if "unreadable" in run.report:
        return (
            Status.RUNTIME_ERROR,
            f"the run's report is unreadable after the program started ({run.report['unreadable']})",
        )
    return None


def _ended_by_supervisor(run: Observed, limits: Mapping[str, Any]) -> Verdict | None:
    if run.ended_by == "output":
        return Status.OUTPUT_LIMIT, f"output exceeded {limits['output_bytes']} bytes"
    if run.ended_by == "reply":
        return Status.OUTPUT_LIMIT, "the returned value is over the cap"
    if run.ended_by == "wall":
        return Status.TIMEOUT, f"wall-clock limit of {limits['wall_s']} s exceeded"
    return None


def _syntax_error(run: Observed, stderr: bytes) -> Verdict | None:
    if run.report.get("syntax_error"):
        return Status.SYNTAX_ERROR, last_line(stderr) or "the program does not compile"
    return None


def _over_cpu(run: Observed, limits: Mapping[str, Any]) -> Verdict | None:
    """Over its CPU limit, however it ended: the kernel's SIGXCPU at the limit does not end PID 1
    of a namespace (init ignores it), and a run's children count (the slot's cgroup accounts them)."""
    if run.signal == signal.SIGXCPU or run.cpu_s > limits["cpu_s"]:
        return Status.TIMEOUT, f"CPU limit of {limits['cpu_s']} s exceeded"
    return None


def _own_end(run: Observed, limits: Mapping[str, Any], stderr: bytes) -> Verdict | None:
    """The status of a process that ended on its own (None: it exited 0)."""
    signum, exit_code = run.signal, run.exit_code
    over = _over_cpu(run, limits)
    if over or (signum == signal.SIGKILL and run.cpu_s >= limits["cpu_s"]):
        return over or (Status.TIMEOUT, f"CPU limit of {limits['cpu_s']} s exceeded")
    memory = _memory(run, limits, stderr)
    if memory:
        return Status.MEMORY_LIMIT, memory
    if signum is not None:
        return killed_by(signum, aborted=run.native and bool(_ABORTED.search(stderr)))
    if exit_code:
        name = exception_name(stderr)
        return Status.RUNTIME_ERROR, f"exit code {exit_code}" + (f" ({name})" if name else "")
    return None


def _memory(run: Observed, limits: Mapping[str, Any], stderr: bytes) -> str | None:
    """Why the run hit its memory limit, when the evidence says it did."""
    limit = f"memory limit of {limits['memory_mb']} MB exceeded"
    failed = run.signal is not None or bool(run.exit_code)
    if not failed:
        return None
    if run.oom_killed:
        return f"{limit} (killed by the cgroup)"
    if exception_name(stderr) == "MemoryError":
        return f"{limit} (MemoryError)"
    if run.native and b"std::bad_alloc" in stderr[-4096:]:
        return f"{limit} (std::bad_alloc)"
    return None


def _judge_end(judge: Observed, limits: Mapping[str, Any]) -> Verdict | None:
    """A judge that did not end well: whose fault it was."""
    if judge.cpu_s > limits["cpu_s"]:
        return Status.TIMEOUT, f"CPU limit of {limits['cpu_s']} s exceeded (judging the program's values)"
    if judge.signal is None and judge.exit_code == 0:
        return None
    if judge.signal == signal.SIGXCPU or (judge.signal == signal.SIGKILL and judge.cpu_s >= limits["cpu_s"]):
        return Status.TIMEOUT, f"CPU limit of {limits['cpu_s']} s exceeded (judging the program's values)"
    if judge.signal == signal.SIGKILL:
        return Status.INFRA_ERROR, f"the judge was {KILLED_OUTSIDE}"
    if judge.signal is not None:
        return Status.JUDGE_ERROR, f"the judge was killed by {signal.Signals(judge.signal).name}"
    return None  # it exited non-zero after reporting why: its report says


_JUDGE_STATUSES = frozenset(
    {Status.OK, Status.WRONG_ANSWER, Status.RUNTIME_ERROR, Status.MEMORY_LIMIT, Status.JUDGE_ERROR}
)


def _judge_said(report: Mapping[str, Any] | None) -> Verdict:
    """The judge's own verdict, from its report (the last record with a status)."""
    if not report or "status" not in report:
        return Status.JUDGE_ERROR, "the judge ended without a verdict"
    try:
        status = Status(report["status"])
    except ValueError:
        status = None
    if status not in _JUDGE_STATUSES:
        return Status.JUDGE_ERROR, f"the judge gave an unknown verdict {report['status']!r}"
    if status is Status.OK:
        return Status.OK, None
    error = report.get("error")
    return status, str(error)[:2000] if error else status.value


def compile_verdict(run: Observed, limits: Mapping[str, Any], messages: bytes) -> Verdict:
    """The status of a compile (OK when it produced a binary): the job's, when it failed."""
    message = messages[:COMPILER_MESSAGE_BYTES].decode("utf-8", "replace")
    if run.ended_by == "wall":
        return Status.TIMEOUT, f"the compile exceeded its wall-clock limit of {limits['wall_s']} s"
    if run.ended_by == "output":
        flood = f"the compiler's messages passed {limits['output_bytes']} bytes"
        return Status.SYNTAX_ERROR, f"compile error ({flood}): {first_error(message)}"
    setup = _setup_failure(run)
    if setup:
        return setup
    if run.oom_killed or _COMPILER_OUT_OF_MEMORY.search(message):
        return Status.MEMORY_LIMIT, f"the compile exceeded its memory limit of {limits['memory_mb']} MB"
    if "CPU time limit exceeded" in message or run.signal == signal.SIGXCPU:
        return Status.TIMEOUT, f"the compile exceeded its CPU limit of {limits['cpu_s']} s"
    if run.signal is not None or run.exit_code:
        return Status.SYNTAX_ERROR, "compile error: " + (first_error(message) or "the compiler failed")
    if not run.report.get("binary_bytes"):
        return Status.INFRA_ERROR, f"{SETUP_FAILED}: the compiler's binary did not come back whole"
    return Status.OK, None


_COMPILER_OUT_OF_MEMORY = re.compile(
    r"out of memory allocating|virtual memory exhausted|Cannot allocate memory"
)
# What libstdc++ and glibc print before abort(): a native run, PID 1 of its namespace, cannot die of
# the SIGABRT abort() raises (init ignores signals from inside), so abort() ends in the SIGSEGV of
# its last resort, and these lines say what really happened.
_ABORTED = re.compile(rb"terminate called|Assertion .* failed|stack smashing detected")
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*)(?::|$)")


def killed_by(signum: int, aborted: bool = False) -> Verdict:
    """The status of a process that died of `signum`, once the run's limits are ruled out.

    A run is PID 1 of its PID namespace and may not change its own limits, so nothing inside it
    can SIGKILL it: such a kill came from outside (the host's OOM killer, an operator, a container
    runtime) and says nothing of the program. Other signals are the program's own faults.
    """
    if signum == signal.SIGKILL:
        return Status.INFRA_ERROR, KILLED_OUTSIDE
    if aborted and signum == signal.SIGSEGV:
        return Status.RUNTIME_ERROR, "aborted (an uncaught exception or a failed assertion)"
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = str(signum)
    return Status.RUNTIME_ERROR, f"killed by signal {name}"


def infra_reason(status: Status, error: str | None) -> str | None:
    """Why an INFRA_ERROR run failed, as the client's bounded restart reasons name it."""
    if status is not Status.INFRA_ERROR or error is None:
        return None
    return "run_killed_outside" if error.endswith(KILLED_OUTSIDE) else "run_setup_failed"


def last_line(stderr: bytes) -> str:
    """The last non-blank line of `stderr` (a traceback's exception line), at most 500 characters."""
    tail = stderr[-4096:].decode("utf-8", "replace").strip().splitlines()
    return tail[-1].strip()[:500] if tail else ""


def exception_name(stderr: bytes) -> str | None:
    """The exception a Python traceback on `stderr` ends with (a hint: the program wrote it)."""
    match = _EXCEPTION_LINE.match(last_line(stderr))
    return match.group(1).rsplit(".", 1)[-1] if match else None


def first_error(message: str) -> str:
    """The compiler's first error line (`main.cpp:3:5: error: ...`, a syntax check's
    `SyntaxError: ...`), else its first line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    for line in lines:
        if "error" in line or "Error:" in line:
            return line[:500]
    return lines[0][:500] if lines else ""
