"""Reward functions for the trainers people use, over the farm: TRL's `GRPOTrainer`, verl's managers.

Thin adapters: they import nothing of the trainers, turn each completion and its dataset row into a
job (`broker.completions` knows where an answer goes), score the whole step as one batch (identical
completions of a group are scored once), and hand back what the trainer expects. A fault of the
farm that outlived the farm's own retries is never a reward: TRL gets `None` (TRL >= 1.6 masks a row
whose reward functions all return None: no reward, advantage 0, left out of its group's baseline;
older TRL counted None as 0), verl gets `score` 0.0 with `"infra_error": True`, so a custom manager
can drop the row. Where the farm is: `broker_url`, else `farm`, else the `EVALFARM_BROKER_URL`
setting, as everywhere.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from broker.completions import ANSWER_FIELDS, TemplateError, job_from_template, parse_template
from broker.errors import ConfigError
from broker.result import Result
from broker.settings import Settings

__all__ = ["answer_text", "make_trl_reward", "verl_compute_score", "verl_compute_score_one"]

# Dataset columns that become job fields, per env (others are left to `job_defaults`).
COLUMNS = {
    "humaneval": ("prompt", "test", "entry_point"),
    "codecontests": ("problem", "problem_id", "dataset", "reward_shape", "language"),
    "weight_edits": ("game", "episodes", "source"),
    "program": ("stdin", "limits", "language"),
    "call": ("func_name", "args", "kwargs"),
    "elm": ("kind", "func_name"),
}
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
    if env not in ANSWER_FIELDS:
        raise ConfigError(f"env {env!r} takes no completion (one of {', '.join(sorted(ANSWER_FIELDS))})")
    rows = len(completions)
    jobs: list[dict[str, Any]] = []
    for i, completion in enumerate(completions):
        if _other_env(columns, i, rows, env):
            jobs.append({})  # another env's row (multi-task data): no job, and no reward (None)
            continue
        job: dict[str, Any] = {"env": env, **job_defaults}
        for name in COLUMNS.get(env, ()):
            values = columns.get(name)
            if isinstance(values, Sequence) and not isinstance(values, str) and len(values) == rows:
                job[name] = values[i]
        if env == "humaneval":
            header = columns.get(HUMANEVAL_PROMPT_COLUMN)
            prompt = prompts[i] if i < len(prompts) else ""
            job["prompt"] = header[i] if header is not None else (prompt if isinstance(prompt, str) else "")
        job[ANSWER_FIELDS[env]] = answer_text(completion)
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

    def _settings(self) -> Settings:
        settings = Settings()
        if self.broker_url:
            settings = settings.model_copy(update={"broker_url": self.broker_url})
        if not settings.broker_url:
            raise ConfigError("no farm: pass broker_url or farm, or set EVALFARM_BROKER_URL")
        return settings

    def sync(self) -> Any:
        if self.given is not None:
            return self.given
        settings = self._settings()
        with self._lock:
            if settings.broker_url not in self._sync:
                from broker.client import Farm

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
                from broker.aio import AsyncFarm

                farms[str(settings.broker_url)] = AsyncFarm(settings=settings)
            return farms[str(settings.broker_url)]


def make_trl_reward(
    env: str,
    *,
    broker_url: str | None = None,
    farm: Any = None,
    asynchronous: bool = False,
    **job_defaults: Any,
) -> Callable[..., Any]:
    """A reward function for TRL's `GRPOTrainer(reward_funcs=[...])` scoring completions on `env`.

    The function takes TRL's arguments (`prompts`, `completions`, and the dataset's columns as lists
    in `**kwargs`) and returns one reward per completion: the farm's reward, or `None` where the farm
    failed after its retries (TRL >= 1.6 masks a row whose rewards are all None instead of scoring
    it 0; say so to anyone reading your reward curves on older TRL). Completions may be plain text
    or conversations (the last assistant message is the answer). Columns per env: HumanEval `prompt`
    (TRL's prompt, or a `humaneval_prompt` column when prompts are conversations), `test`,
    `entry_point`; CodeContests `problem` or `problem_id` (and `dataset`, `reward_shape`); weight edits
    `game`, `episodes`, `source`. A dataset mixing envs has an `env` column: a row of another env
    gets None from this function (TRL sums the functions that did reward it). `job_defaults` are
    added to every job (`reward_shape=...`, `limits={...}`). With `asynchronous=True` it is an
    `async def`, which TRL awaits concurrently with its other async reward functions. Each call's
    results are kept on the function as
    `last_results` (status, passed and total tests, feedback), and, where TRL passes `log_extra` and
    `log_metric` (>= 1.0), the statuses are logged as a column and the masked rows as a metric.
    """
    farms = _Farms(broker_url, farm)

    def finish(
        jobs: list[dict[str, Any]], scored: list[Result], columns: dict[str, Any]
    ) -> list[float | None]:
        answers = iter(scored)
        results = [next(answers) if job else None for job in jobs]
        holder.last_results = results
        log_extra, log_metric = columns.get("log_extra"), columns.get("log_metric")
        if callable(log_extra):
            log_extra(f"evalfarm_{env}_status", [r.status if r is not None else "" for r in results])
        if callable(log_metric):
            log_metric(
                f"evalfarm/{env}/infra_masked", float(sum(r is not None and r.is_infra for r in results))
            )
        return [_reward(r) for r in results]

    if asynchronous:

        async def reward_async(
            prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
        ) -> list[float | None]:
            jobs = trl_jobs(env, prompts, completions, columns, job_defaults)
            real = [job for job in jobs if job]
            client = farms.asynchronous()
            try:
                scored = await client.score(real) if real else []
            finally:
                if farm is None:  # ours: the loop may end before the next step (asyncio.run per step)
                    await client.release()
            return finish(jobs, scored, columns)

        holder: Any = reward_async
    else:

        def reward_sync(
            prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
        ) -> list[float | None]:
            jobs = trl_jobs(env, prompts, completions, columns, job_defaults)
            real = [job for job in jobs if job]
            return finish(jobs, farms.sync().score(real, progress=False) if real else [], columns)

        holder = reward_sync
    holder.__name__ = holder.__qualname__ = f"evalfarm_{env}"  # TRL logs each reward under its name
    holder.last_results = []
    return holder


def _reward(result: Result | None) -> float | None:
    """TRL's reward for a result: None where there is none to give (not this function's row, or the
    farm failed after its retries), else the farm's reward (0.0 for an env that gives none)."""
    if result is None or result.is_infra:
        return None
    return float(result.reward) if result.reward is not None else 0.0


# -- verl -------------------------------------------------------------------------------------------

_verl_farms = _Farms(None, None)


def _verl_job(data_source: Any, solution: Any, ground_truth: Any, index: int) -> dict[str, Any] | str:
    """The job of one verl sample, or the reason there is none."""
    try:
        template = parse_template(ground_truth)
        default_env = data_source if isinstance(data_source, str) and data_source in ANSWER_FIELDS else None
        return job_from_template(template, answer_text(solution), f"verl-{index}", default_env)
    except TemplateError as error:
        return f"ground truth: {error}"


def _verl_score(result: Result | None, problem: str | None = None) -> dict[str, Any]:
    if result is None:
        return {
            "score": 0.0,
            "status": "invalid_job",
            "infra_error": False,
            "error": problem,
            "passed": 0,
            "total": 0,
        }
    return {
        "score": float(result.reward) if result.reward is not None else 0.0,
        "status": result.status,
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
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """verl's batch reward manager's `compute_score`: one dict per sample, in order.

    Each ground truth is a job template (the job's fields but the answer: a dict, or its JSON); its
    env is the template's `env`, else the data source when it names an env. Each dict has `score`
    (the farm's reward; 0.0 where there is none) and `status`, `infra_error` (True: the farm failed
    after its retries; drop the row rather than train on its 0.0), `error`, `passed`, `total`.
    """
    jobs = [
        _verl_job(d, s, g, i)
        for i, (d, s, g) in enumerate(zip(data_sources, solution_strs, ground_truths, strict=True))
    ]
    real = [job for job in jobs if isinstance(job, dict)]
    results = iter(_verl_farms.sync().score(real, progress=False) if real else [])
    return [_verl_score(next(results)) if isinstance(job, dict) else _verl_score(None, job) for job in jobs]


def verl_compute_score_one(
    data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None, **kwargs: Any
) -> dict[str, Any]:
    """verl's per-sample `compute_score` (the naive reward manager's): the dict of one sample."""
    return verl_compute_score([data_source], [solution_str], [ground_truth], [extra_info])[0]
