"""The `program` env: run one Python program with its stdin and report what it did."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from envs.base import Context, Env
from envs.validation import JobModel, validate_job
from sandbox import Limits

MAX_CODE_CHARS = 1 << 20
MAX_STDIN_CHARS = 16 << 20


class ProgramJob(JobModel):
    """A `program` job: the code and, optionally, its standard input."""

    code: str = Field(max_length=MAX_CODE_CHARS)
    stdin: str = Field(default="", max_length=MAX_STDIN_CHARS)


class ProgramEnv(Env):
    """Runs the program once; no reward, the run itself is the result."""

    id = "program"
    version = "1"
    default_limits = Limits()

    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """Run the program in this slot's sandbox."""
        request = validate_job(ProgramJob, job)
        run = ctx.sandbox.run(request.code, request.stdin, limits)
        return {"status": run.status.value, "reward": None, "error": run.error, **run.to_fields()}
