"""The fields of a `codecontests` job, validated, with their size caps."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalfarm.envs.base import InvalidJob
from evalfarm.envs.datasets import Problem
from evalfarm.envs.validation import JobModel, Language

MAX_CODE_CHARS = 256 << 10  # `code`, and the program extracted from a completion
MAX_COMPLETION_CHARS = 1 << 20  # raw model output, prose included

RewardShape = Literal["all_or_nothing", "fraction_passed"]


class CodeContestsJob(JobModel):
    """A `codecontests` job: one of `completion`/`code`, one of `problem`/`problem_id`."""

    completion: str | None = Field(default=None, max_length=MAX_COMPLETION_CHARS)
    code: str | None = Field(default=None, max_length=MAX_CODE_CHARS)
    problem: Problem | None = None
    problem_id: str | None = Field(default=None, min_length=1, max_length=256)
    dataset: str | None = Field(default=None, min_length=1, max_length=64)
    reward_shape: RewardShape = "all_or_nothing"
    language: Language = "python"

    def check_choices(self) -> CodeContestsJob:
        """Self if exactly one of each pair is set; InvalidJob naming the fields otherwise."""
        if (self.completion is None) == (self.code is None):
            raise InvalidJob("completion/code: exactly one is required")
        if (self.problem is None) == (self.problem_id is None):
            raise InvalidJob("problem/problem_id: exactly one is required")
        return self
