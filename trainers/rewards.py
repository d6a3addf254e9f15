"""Reward functions for the trainers people use, over the farm: TRL's `GRPOTrainer`, verl's managers.

Thin adapters: they import nothing of the trainers, turn each completion and its dataset row into a
job (the env catalog, `envs/catalog.py`, says where an answer goes), score the whole step as one
batch (identical completions of a group are scored once), and hand back what the trainer expects.

No reward is made of a mistake. A sample whose result has no reward (`infra_error`: the farm failed
after its retries; `judge_error`: the problem's judge failed; `invalid_job`: the row is malformed) is
never 0.0: TRL gets `None` (TRL >= 1.6 masks a row whose reward functions all return None: no
reward, advantage 0, left out of its group's baseline; older TRL counted None as 0), verl gets
`score` 0.0 with `"masked": True` (its managers cannot take None: a custom one drops the row). Each
call logs how many rows it masked, and why the first one was.

Every call has a deadline, `deadline_s` (default 300 s, a training step's worth): a stalled farm
costs a step that long, then its rows come back masked. Where the farm is: `broker_url`, else `farm`,
else the `EVALFARM_BROKER_URL` setting, as everywhere.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalfarm.broker.completions import TemplateError, job_from_template, parse_template
from evalfarm.broker.errors import ConfigError
from evalfarm.broker.settings import ClientSettings
from evalfarm.envs.catalog import ENVS, answer_field, answering_envs
from evalfarm.result import Result

__all__ = [
    "DEFAULT_DEADLINE_S",
    "answer_text",
    "make_trl_reward",
    "verl_compute_score",
    "verl_compute_score_one",
]

log = logging.getLogger("evalfarm.rewards")

# A reward call's deadline, sized for a training step: past it, what the farm has not scored comes
# back masked (infra_error), and the step goes on.
DEFAULT_DEADLINE_S = 300.0

# A HumanEval row's function header, when the model's prompt is a conversation rather than that header.
HUMANEVAL_PROMPT_COLUMN = "humaneval_prompt"


def answer_text(completion: Any) -> str:
    """The text of a completion: itself when plain, the last assistant message's content when it is
    a conversation (TRL's conversational format: `[{"role": "assistant", "content": ...}]`)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        for message in reversed(completion):
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                content = message.get("content")
                if isinstance(content, list):  # content parts
                    return "\n".join(
                        str(part.get("text", "")) for part in content if isinstance(part, Mapping)
                    )
                return "" if content is None else str(content)
    return "" if completion is None else str(completion)


def trl_jobs(env: str, prompts: Sequence[Any], completions: Sequence[Any], columns: Mapping[str, Any],
             job_defaults: Mapping[str, Any]) -> list[dict[str, Any]]:  # fmt: skip
    """One job per completion: the env's answer field from the completion, its fields from the row
    (an empty dict for a row whose `env` column names another env)."""
    field = answer_field(env)
    if field is None:
        raise ConfigError(f"env {env!r} takes no completion (one of {', '.join(answering_envs())})")
    rows = len(completions)
    jobs: list[dict[str, Any]] = []
    for i, completion in enumerate(completions):
        if _other_env(columns, i, rows, env):
            jobs.append({})  # another env's row (multi-task data): no job, and no reward (None)
            continue
        job: dict[str, Any] = {"env": env, **job_defaults}
        for name in ENVS[env].columns:  # the dataset columns that become job fields
            values = columns.get(name)
            if not isinstance(values, Sequence) or isinstance(values, str) or len(values) != rows:
                continue
            if values[i] is not None:  # None: what `datasets` writes for a key a row lacks
                job[name] = values[i]
        if env == "humaneval":
            header = columns.get(HUMANEVAL_PROMPT_COLUMN)
            prompt = prompts[i] if i < len(prompts) else ""
            job["prompt"] = header[i] if header is not None else (prompt if isinstance(prompt, str) else "")
        job[field] = answer_text(completion)
        job["id"] = f"trl-{i}"
        jobs.append(job)
    return jobs


def _other_env(columns: Mapping[str, Any], i: int, rows: int, env: str) -> bool:
    """True when the dataset has an `env` column and row `i` names another env."""
    envs = columns.get("env")
    return isinstance(envs, Sequence) and not isinstance(envs, str) and len(envs) == rows and envs[i] != env


class _Farms:
    """The client a reward function scores with: given, or made from its broker URL (else the
    `EVALFARM_BROKER_URL` setting, read at each call) on first use: a sync `Farm` per URL, and an
    `AsyncFarm` per URL and event loop (TRL awaits async rewards on a loop of its own)."""

    def __init__(self, broker_url: str | None, farm: Any) -> None:
        self.broker_url = broker_url
        self.given = farm
        self._sync: dict[str, Any] = {}
        # Per event loop, forgotten with it (an AsyncFarm's connections belong to its loop).
        self._async: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def _settings(self) -> ClientSettings:
        settings = ClientSettings.from_env().with_broker(self.broker_url)
        if not settings.broker_url:
            raise ConfigError("no farm: pass broker_url or farm, or set EVALFARM_BROKER_URL")
        return settings

    def sync(self) -> Any:
        if self.given is not None:
            return self.given
        settings = self._settings()
        with self._lock:
            if settings.broker_url not in self._sync:
                from evalfarm.broker.farm import Farm

                self._sync[str(settings.broker_url)] = Farm(settings=settings, progress=False)
            return self._sync[str(settings.broker_url)]

    def asynchronous(self) -> Any:
        if self.given is not None:
            return self.given
        settings = self._settings()
        loop = asyncio.get_running_loop()
        with self._lock:
            farms = self._async.setdefault(loop, {})
            if settings.broker_url not in farms:
                from evalfarm.broker.async_farm import AsyncFarm

                farms[str(settings.broker_url)] = AsyncFarm(settings=settings)
            return farms[str(settings.broker_url)]


def make_trl_reward(
    env: str,
    *,
    broker_url: str | None = None,
    farm: Any = None,
    asynchronous: bool = False,
    deadline_s: float = DEFAULT_DEADLINE_S,
    **job_defaults: Any,
) -> Callable[..., Any]:
    """A reward function for TRL's `GRPOTrainer(reward_funcs=[...])` scoring completions on `env`.

    The function takes TRL's arguments (`prompts`, `completions`, and the dataset's columns as lists
    in `**kwargs`) and returns one reward per completion: the farm's reward, or `None` where there is
    none (the farm failed after its retries, the problem's judge failed, or the row made a malformed
    job; TRL >= 1.6 masks a row whose rewards are all None instead of scoring it 0; say so to anyone
    reading your reward curves on older TRL). Completions may be plain text or conversations (the
    last assistant message is the answer). Columns per env: HumanEval `prompt` (TRL's prompt, or a
    `humaneval_prompt` column when prompts are conversations), `test`, `entry_point`; CodeContests
    `problem` or `problem_id` (and `dataset`, `reward_shape`, `language`); weight edits `game`,
    `episodes`, `source`. A column value of None (what `datasets` writes for a key a row lacks) is
    absent. A dataset mixing envs has an `env` column: a row of another env gets None from this
    function (TRL sums the functions that did reward it).

    `deadline_s` bounds each call: what the farm has not scored by then is masked, and the step goes
    on. `job_defaults` are added to every job and must be fields of `env`'s jobs (`reward_shape=...`,
    `limits={...}`); anything else is refused here, not dropped later. With `asynchronous=True` it is
    an `async def`, which TRL awaits concurrently with its other async reward functions (a sync `Farm`
    given as `farm` then runs in a thread). Each call's results are kept on the function as
    `last_results` (status, passed and total tests, feedback), and, where TRL passes `log_extra` and
    `log_metric` (>= 1.0), the statuses are logged as a column and the masked rows as metrics.
    """
    _check_env(env)
    defaults = _job_defaults(env, job_defaults)
    deadline = _deadline(deadline_s)
    farms = _Farms(broker_url, farm)
    given_async = _is_async_client(farm)
    if given_async and not asynchronous:
        raise ConfigError(
            "make_trl_reward: farm is an asyncio client (AsyncFarm): pass asynchronous=True, or give a Farm"
        )

    def finish(
        jobs: list[dict[str, Any]], scored: list[Result], columns: dict[str, Any]
    ) -> list[float | None]:
        answers = iter(scored)
        results = [next(answers) if job else None for job in jobs]
        holder.last_results = results
        _log_masked(env, results, columns)
        return [_reward(r) for r in results]

    if asynchronous:

        async def reward_async(
            prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
        ) -> list[float | None]:
            jobs = trl_jobs(env, prompts, completions, columns, defaults)
            real = [job for job in jobs if job]
            if not real:
                return finish(jobs, [], columns)
            if farm is not None and not given_async:  # a sync Farm: off the event loop
                scored = await asyncio.to_thread(farm.score, real, progress=False, deadline_s=deadline)
                return finish(jobs, scored, columns)
            client = farms.asynchronous()
            try:
                scored = await client.score(real, deadline_s=deadline)
            finally:
                if farm is None:  # ours: the loop may end before the next step (asyncio.run per step)
                    await client.release()
            return finish(jobs, scored, columns)

        holder: Any = reward_async
    else:

        def reward_sync(
            prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
        ) -> list[float | None]:
            jobs = trl_jobs(env, prompts, completions, columns, defaults)
            real = [job for job in jobs if job]
            scored = farms.sync().score(real, progress=False, deadline_s=deadline) if real else []
            return finish(jobs, scored, columns)

        holder = reward_sync
    holder.__name__ = holder.__qualname__ = f"evalfarm_{env}"  # TRL logs each reward under its name
    holder.last_results = []
    return holder


def _check_env(env: str) -> None:
    if answer_field(env) is None:
        raise ConfigError(f"env {env!r} takes no completion (one of {', '.join(answering_envs())})")


def _job_defaults(env: str, job_defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The fields added to every job, each one a field of `env`'s jobs; ConfigError otherwise."""
    allowed = (set(ENVS[env].fields) | {"limits"}) - {ENVS[env].answer, "trajectory"}
    unknown = sorted(set(job_defaults) - allowed)
    if unknown:
        raise ConfigError(
            f"{', '.join(unknown)}: not a field of {env} jobs (they take {', '.join(sorted(allowed))}); "
            "the reward function's own options are broker_url, farm, asynchronous and deadline_s"
        )
    return dict(job_defaults)


def _deadline(deadline_s: Any) -> float:
    if (
        isinstance(deadline_s, bool)
        or not isinstance(deadline_s, int | float)
        or not 0 < deadline_s < math.inf
    ):
        raise ConfigError(f"deadline_s: a number of seconds above 0, not {deadline_s!r}")
    return float(deadline_s)


def _is_async_client(farm: Any) -> bool:
    return farm is not None and inspect.iscoroutinefunction(getattr(farm, "score", None))


def _log_masked(env: str, results: Sequence[Result | None], columns: Mapping[str, Any]) -> None:
    """Say how many rows got no reward and why the first did; log the statuses and counts to TRL."""
    masked = [r for r in results if r is not None and not r.has_reward]
    if masked:
        first = masked[0]
        log.warning(
            "evalfarm %s reward: %d of %d rows have no reward (masked), e.g. %s: %s",
            env, len(masked), len(results), first.status, first.get("error"),
        )  # fmt: skip
    log_extra, log_metric = columns.get("log_extra"), columns.get("log_metric")
    if callable(log_extra):
        log_extra(f"evalfarm_{env}_status", [r.status if r is not None else "" for r in results])
    if callable(log_metric):
        log_metric(f"evalfarm/{env}/masked", float(len(masked)))
        log_metric(f"evalfarm/{env}/infra_masked", float(sum(r.is_infra for r in masked)))


def _reward(result: Result | None) -> float | None:
    """TRL's reward for a result: None where there is none to give (not this function's row; the
    farm, the judge or the row itself failed), else the farm's reward (0.0 for an env that gives none)."""
    if result is None or not result.has_reward:
        return None
    return float(result.reward) if result.reward is not None else 0.0


# -- verl -------------------------------------------------------------------------------------------

_verl_farms = _Farms(None, None)


def _verl_job(data_source: Any, solution: Any, ground_truth: Any, index: int) -> dict[str, Any] | str:
    """The job of one verl sample, or the reason there is none."""
    try:
        template = parse_template(ground_truth)
        default_env = data_source if answer_field(data_source) else None
        return job_from_template(template, answer_text(solution), f"verl-{index}", default_env)
    except TemplateError as error:
        return f"ground truth: {error}"


def _verl_score(result: Result | None, problem: str | None = None) -> dict[str, Any]:
    if result is None:
        return {
            "score": 0.0,
            "status": "invalid_job",
            "masked": True,
            "infra_error": False,
            "error": problem,
            "passed": 0,
            "total": 0,
        }
    return {
        "score": float(result.reward) if result.reward is not None and result.has_reward else 0.0,
        "status": result.status,
        "masked": not result.has_reward,
        "infra_error": result.is_infra,
        "error": result.get("error") or "",
        "passed": int(result.get("passed") or 0),
        "total": int(result.get("total") or 0),
    }


def verl_compute_score(
    data_sources: Sequence[Any],
    solution_strs: Sequence[Any],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """verl's batch reward manager's `compute_score`: one dict per sample, in order.

    Each ground truth is a job template (the job's fields but the answer: a dict, or its JSON); its
    env is the template's `env`, else the data source when it names an env. Each dict has `score`
    (the farm's reward; 0.0 where there is none) and `status`, `masked` (True: no reward exists, the
    farm, the judge or the template failed: drop the row rather than train on its 0.0, which verl's
    own managers cannot do, as they take no None), `infra_error`, `error`, `passed`, `total`.
    `deadline_s` (verl's `reward_kwargs`) bounds the call: what the farm has not scored by then is
    masked.
    """
    deadline = _deadline(deadline_s)
    jobs = [
        _verl_job(d, s, g, i)
        for i, (d, s, g) in enumerate(zip(data_sources, solution_strs, ground_truths, strict=True))
    ]
    real = [job for job in jobs if isinstance(job, dict)]
    scored = _verl_farms.sync().score(real, progress=False, deadline_s=deadline) if real else []
    results = iter(scored)
    scores = [_verl_score(next(results)) if isinstance(job, dict) else _verl_score(None, job) for job in jobs]
    masked = [score for score in scores if score["masked"]]
    if masked:
        log.warning(
            "evalfarm verl reward: %d of %d samples have no reward (masked, score 0.0), e.g. %s: %s",
            len(masked), len(scores), masked[0]["status"], masked[0]["error"],
        )  # fmt: skip
    return scores


def verl_compute_score_one(
    data_source: Any,
    solution_str: Any,
    ground_truth: Any,
    extra_info: Any = None,
    deadline_s: float = DEFAULT_DEADLINE_S,
    **kwargs: Any,
) -> dict[str, Any]:
    """verl's per-sample `compute_score` (the naive reward manager's): the dict of one sample."""
    return verl_compute_score([data_source], [solution_str], [ground_truth], [extra_info], deadline_s)[0]
