"""What the producer gets back for each job: the contract's result object, with helpers for masking."""

from __future__ import annotations

from typing import Any

from evalfarm.sandbox.status import Status

INFRA_STATUS = Status.INFRA_ERROR.value
INFRA_CODE = Status.INFRA_ERROR.code
# Statuses that carry no reward: the farm failed, the problem's judge failed, or the job is malformed.
REWARDLESS = frozenset(status.value for status in Status if not status.has_reward)


class Result(dict[str, Any]):
    """One job's result: the contract's JSON object (a dict), plus `infra` and typed accessors.

    `infra` is true when the farm failed rather than the program (lost worker, deadline, broker
    trouble): a trainer masks such a sample instead of reading its missing reward as 0.
    """

    @property
    def id(self) -> Any:
        """The caller's job id, echoed back."""
        return self.get("id")

    @property
    def status(self) -> str:
        """The contract status string."""
        return str(self.get("status"))

    @property
    def reward(self) -> float | None:
        """The reward, or None where none exists (infra errors, invalid jobs, plain programs)."""
        return self.get("reward")

    @property
    def is_infra(self) -> bool:
        """True when the farm, not the program, failed: mask this sample, retry the job if needed."""
        return self.get("status") == INFRA_STATUS

    @property
    def has_reward(self) -> bool:
        """False where no reward exists for the sample (infra_error, judge_error, invalid_job): a
        trainer masks it; reading it as 0 would train on the farm's, the judge's or its own mistake."""
        return self.get("status") not in REWARDLESS

    @property
    def ok(self) -> bool:
        """True when the job ran and passed."""
        return self.get("status") == "ok"


def from_worker(raw: dict[str, Any]) -> Result:
    """A Result from a worker's result dict, with the infra mark set."""
    result = Result(raw)
    result["infra"] = result.is_infra
    return result


def invalid_result(job_id: Any, env: Any, error: str) -> Result:
    """The result of a job that could not be made (a template that is not one): no reward."""
    return Result(
        id=job_id,
        env=env,
        status=Status.INVALID_JOB.value,
        code=Status.INVALID_JOB.code,
        reward=None,
        error=error,
        queued_s=None,
        run_s=None,
        infra=False,
    )


def infra_result(job: Any, error: str) -> Result:
    """The result of a job the farm failed to score (never a reward of 0: reward is None)."""
    job_id = job.get("id") if isinstance(job, dict) else None
    env = job.get("env") if isinstance(job, dict) else None
    return Result(
        id=job_id,
        env=env,
        status=INFRA_STATUS,
        code=INFRA_CODE,
        reward=None,
        error=error,
        queued_s=None,
        run_s=None,
        infra=True,
    )
