"""The closed set of result statuses, with their wire codes and precedence."""

from __future__ import annotations

import enum


class Status(enum.Enum):
    """What happened to a job; the value is the status string of the contract."""

    OK = "ok"
    WRONG_ANSWER = "wrong_answer"
    TIMEOUT = "timeout"
    SYNTAX_ERROR = "syntax_error"
    RUNTIME_ERROR = "runtime_error"
    INFRA_ERROR = "infra_error"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    PARSE_ERROR = "parse_error"
    INVALID_JOB = "invalid_job"
    JUDGE_ERROR = "judge_error"

    @property
    def code(self) -> int:
        """The numeric code of the contract (0-11; 4 is unused)."""
        return _CODES[self]

    @property
    def is_infra(self) -> bool:
        """True when the farm failed, not the program: the job is retryable and has no reward."""
        return self is Status.INFRA_ERROR

    @property
    def has_reward(self) -> bool:
        """False where no reward exists: the farm failed, the judge failed, or the job is malformed."""
        return self not in _REWARDLESS


_CODES = {
    Status.OK: 0,
    Status.WRONG_ANSWER: 1,
    Status.TIMEOUT: 2,
    Status.SYNTAX_ERROR: 3,
    Status.RUNTIME_ERROR: 5,
    Status.INFRA_ERROR: 6,
    Status.MEMORY_LIMIT: 7,
    Status.OUTPUT_LIMIT: 8,
    Status.PARSE_ERROR: 9,
    Status.INVALID_JOB: 10,
    Status.JUDGE_ERROR: 11,
}
_REWARDLESS = frozenset({Status.INFRA_ERROR, Status.JUDGE_ERROR, Status.INVALID_JOB})

# When several runs of one job fail differently (a job with many tests), the job takes the status
# that comes first here among those seen: the farm's own failure first (the verdict cannot be
# trusted), then the judge's (no verdict exists), then the failures that stop a program before it
# can answer, then a wrong answer.
PRECEDENCE: tuple[Status, ...] = (
    Status.INFRA_ERROR,
    Status.JUDGE_ERROR,
    Status.INVALID_JOB,
    Status.PARSE_ERROR,
    Status.SYNTAX_ERROR,
    Status.MEMORY_LIMIT,
    Status.OUTPUT_LIMIT,
    Status.TIMEOUT,
    Status.RUNTIME_ERROR,
    Status.WRONG_ANSWER,
    Status.OK,
)


def worst(statuses: list[Status]) -> Status:
    """The status of a job made of several runs: the first of `statuses` by PRECEDENCE (OK if empty)."""
    if not statuses:
        return Status.OK
    return min(statuses, key=PRECEDENCE.index)
