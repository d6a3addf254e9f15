"""A job's result: the contract's JSON object, one type built in one place.

Every room makes results through the constructors here (`Result.of`, `Result.infra`,
`Result.received`) and adds the fields its layer owns through the named methods (the worker's
`scored` and `timed`, the merge's `merged`, the producer's `duplicate`): so what a result holds,
and who wrote each field, is read in this module. A `Result` is a dict (it is the JSON object a
caller reads, and crosses Redis as JSON), with typed accessors for the contract's fields.

The contract's fields (CONTRACT.md): `id`, `env`, `status`, `code`, `reward` (null where no reward
exists), `error`, `queued_s`, `run_s`; `infra` on the producer's side; `duplicate_of` on a copy of a
batch's identical job; each env's own fields beside them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalfarm.status import Status

INFRA_STATUS = Status.INFRA_ERROR.value
INFRA_CODE = Status.INFRA_ERROR.code
# Statuses that carry no reward: the farm failed, the problem's judge failed, or the job is malformed.
REWARDLESS = frozenset(status.value for status in Status if not status.has_reward)
# The fields every result has, in the order a result object lists them.
CONTRACT_FIELDS = ("id", "env", "status", "code", "reward", "error")


class Result(dict[str, Any]):
    """One job's result: the contract's JSON object (a dict), plus `infra` and typed accessors.

    `infra` is true when the farm failed rather than the program (lost worker, deadline, broker
    trouble): a trainer masks such a sample instead of reading its missing reward as 0.
    """

    # -- constructors ----------------------------------------------------------------------------

    @classmethod
    def of(
        cls,
        job_id: Any,
        env: Any,
        status: Status,
        reward: float | None,
        error: str | None = None,
        **fields: Any,
    ) -> Result:
        """A result of `status` (its code with it), then the env's own `fields`."""
        result = cls(id=job_id, env=env, status=status.value, code=status.code, reward=reward, error=error)
        result.update(fields)
        return result

    @classmethod
    def of_env(cls, job_id: Any, env: Any, scored: Mapping[str, Any]) -> Result:
        """A result from what an env's scorer returned: its `status` (a value of the contract's),
        `reward` and `error`, and its own fields after them."""
        own = {key: value for key, value in scored.items() if key not in CONTRACT_FIELDS}
        return cls.of(job_id, env, Status(scored["status"]), scored.get("reward"), scored.get("error"), **own)

    @classmethod
    def infra(cls, job: Any, error: str) -> Result:
        """The result of a job the farm failed to score: no reward (never a 0), no timing, `infra`."""
        job_id = job.get("id") if isinstance(job, Mapping) else None
        env = job.get("env") if isinstance(job, Mapping) else None
        return cls.of(job_id, env, Status.INFRA_ERROR, None, error, queued_s=None, run_s=None, infra=True)

    @classmethod
    def invalid(cls, job_id: Any, env: Any, error: str) -> Result:
        """The result of a job that could not be made or read: no reward, the reason in `error`."""
        return cls.of(job_id, env, Status.INVALID_JOB, None, error, queued_s=None, run_s=None, infra=False)

    @classmethod
    def received(cls, raw: Mapping[str, Any]) -> Result:
        """A result as the producer receives it from a worker, with its `infra` mark."""
        result = cls(raw)
        result["infra"] = result.is_infra
        return result

    # -- what each layer adds ----------------------------------------------------------------------

    def scored(
        self, version: str, limits: Mapping[str, Any], run_s: float, warnings: list[str] | None = None
    ) -> Result:
        """The worker's scoring: the status's code, the env's version and the limits it ran under
        (unless the env named the limits it applied itself), the time spent, what was ignored."""
        self["code"] = Status(self["status"]).code
        self["env_version"] = version
        self.setdefault("limits", dict(limits))
        if warnings:
            self["warnings"] = warnings
        self["run_s"] = round(run_s, 6)
        return self

    def timed(self, queued_s: float | None, attempt: int) -> Result:
        """The worker's delivery: how long the job waited for it, which delivery of its message."""
        self["queued_s"] = queued_s
        self["attempt"] = attempt
        return self

    def merged(self, job_id: Any, parts: int, merge_s: float) -> Result:
        """A split job's result rebuilt from its `parts`."""
        self["id"] = job_id
        self["parts"] = parts
        self["merge_s"] = round(merge_s, 6)
        return self

    def duplicate(self, job: Any, latency_s: float | None = None) -> Result:
        """This result as the answer to `job`, a batch's identical job scored once: a copy with the
        job's id and `duplicate_of` naming the one that was scored."""
        copy = Result(self)
        if latency_s is not None:
            copy["latency_s"] = latency_s
        copy["id"] = job.get("id") if isinstance(job, Mapping) else copy.get("id")
        copy["duplicate_of"] = self.get("id")
        return copy

    # -- accessors -------------------------------------------------------------------------------

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
    def error(self) -> str | None:
        """Why the status is not `ok`, for a person to read."""
        return self.get("error")

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
