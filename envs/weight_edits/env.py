"""The `weight_edits` env: a weight-edit answer graded in MinAtar, identical to the reference grader.

Job fields: `game`, `answer` (or `trajectory`, whose last assistant message is the answer),
`episodes` (default 1000), `source` (default `original`), and optionally `episode_range`
([start, stop), set by `split_job`). Caps: `episodes` at most MAX_EPISODES (10,000) and `answer`
at most MAX_ANSWER_CHARS (1,000,000) characters; beyond them the job is invalid.

Grading runs in the worker process, not the sandbox: the edits are parsed as data and never
executed, and a cooperative deadline built from the job's `wall_s` and `cpu_s` stops a grade that
runs too long with status `timeout`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, ClassVar

from evalfarm.envs.base import Context, Env, InvalidJob
from evalfarm.envs.catalog import ENVS
from evalfarm.envs.trajectory import answer_field
from evalfarm.envs.weight_edits import games, grading, reference
from evalfarm.envs.weight_edits.deadline import Deadline, GradeTimeout
from evalfarm.envs.weight_edits.episodes import preload_games
from evalfarm.envs.weight_edits.runner import compile_loop
from evalfarm.sandbox import Limits, Status

MAX_EPISODES = 10_000
# A full W1 written out as literals is ~200 kB; five times that is still a reasonable answer.
MAX_ANSWER_CHARS = 1_000_000
DEFAULT_EPISODES = 1000
SOURCES = ("original", "synth")


def _episodes(job: Mapping[str, Any]) -> int:
    episodes = job.get("episodes", DEFAULT_EPISODES)
    if isinstance(episodes, bool) or not isinstance(episodes, int):
        raise InvalidJob("episodes: must be an integer")
    if not 1 <= episodes <= MAX_EPISODES:
        raise InvalidJob(f"episodes: must be between 1 and {MAX_EPISODES}")
    return episodes


def _episode_range(job: Mapping[str, Any], episodes: int) -> range | None:
    bounds = job.get("episode_range")
    if bounds is None:
        return None
    if (
        not isinstance(bounds, list | tuple)
        or len(bounds) != 2
        or any(isinstance(b, bool) or not isinstance(b, int) for b in bounds)
        or not 0 <= bounds[0] < bounds[1] <= episodes
    ):
        raise InvalidJob(f"episode_range: must be [start, stop] with 0 <= start < stop <= {episodes}")
    return range(bounds[0], bounds[1])


def _game_and_source(job: Mapping[str, Any]) -> tuple[str, str]:
    game = job.get("game")
    if game not in games.GAMES:
        raise InvalidJob(f"game: unknown game {game!r} (known: {', '.join(games.GAMES)})")
    source = job.get("source", "original")
    if source not in SOURCES:
        raise InvalidJob(f"source: must be one of {', '.join(SOURCES)}")
    if source == "synth" and not reference.synth_available():
        raise InvalidJob("source: 'synth' needs the minatar_synth package, which is not installed here")
    return game, source


def _answer(job: Mapping[str, Any]) -> str:
    answer = answer_field(job, "answer").get("answer")
    if not isinstance(answer, str):
        raise InvalidJob("answer: required, a string (or give `trajectory`)")
    if len(answer) > MAX_ANSWER_CHARS:
        raise InvalidJob(f"answer: longer than {MAX_ANSWER_CHARS} characters")
    return answer


@dataclasses.dataclass(frozen=True)
class WeightEditsJob:
    """A validated `weight_edits` job; `episodes` is the whole job's count, `selected` what to play."""

    game: str
    source: str
    answer: str
    episodes: int
    episode_range: range | None

    @property
    def selected(self) -> range:
        """The episodes this job plays: its range, else all of them."""
        return self.episode_range or range(self.episodes)


def parse_job(job: Mapping[str, Any]) -> WeightEditsJob:
    """The job's fields, validated; InvalidJob naming the first bad field."""
    game, source = _game_and_source(job)
    answer = _answer(job)
    episodes = _episodes(job)
    return WeightEditsJob(game, source, answer, episodes, _episode_range(job, episodes))


class WeightEditsEnv(Env):
    """Grades weight-edit answers in MinAtar as seed 004's `grade_answer` does."""

    id: ClassVar[str] = "weight_edits"
    fields = ENVS[id].fields  # the catalog (envs/catalog.py) says what an env is
    version = ENVS[id].version
    # 1000 freeway episodes (the slowest game, 2.5 M steps) take about a second on the compiled
    # path, whatever the answer's density; answers the bounds rarely certify (huge weights with tied
    # logits) fall back to the reference's computation on many steps and take longer.
    default_limits: ClassVar[Limits] = Limits(wall_s=180.0, cpu_s=120.0)

    def __init__(self) -> None:
        # Paid once when the env is built (before a worker pool forks, where the pool preloads envs),
        # not by the first job under its CPU limit.
        preload_games()
        compile_loop()

    def score(self, job: Mapping[str, Any], limits: Limits, ctx: Context) -> dict[str, Any]:
        """Grade the job's answer; `reward` is the reference's normalized score."""
        deadline = Deadline(limits.wall_s, limits.cpu_s)
        spec = parse_job(job)
        metadata = grading.base_metadata(spec.game, spec.source, spec.episodes)
        parsed = grading.parse(spec.answer)
        if isinstance(parsed, str):
            return _result(Status.PARSE_ERROR, 0.0, {**metadata, "error": parsed}, parsed)
        try:
            played = grading.play(spec.game, spec.source, parsed.weights, spec.selected, deadline)
            scores = [score for score, _ in played]
            lengths = [length for _, length in played]
            reward, metadata = grading.summarize(
                spec.game, spec.source, spec.episodes, parsed, scores, lengths
            )
        except GradeTimeout as error:
            timed_out = {**metadata, "parse_success": 1.0, "error": str(error)}
            return _result(Status.TIMEOUT, 0.0, timed_out, str(error))
        except grading.PARSE_ERRORS as error:  # the game failed: the reference grades it 0 with this text
            return _result(Status.RUNTIME_ERROR, 0.0, {**metadata, "error": str(error)}, str(error))
        result = _result(Status.OK, reward, metadata, None)
        if spec.episode_range is not None:
            # A part of a split job: the merge needs every episode's values, not only the means.
            bounds = [spec.episode_range.start, spec.episode_range.stop]
            result.update({"episode_range": bounds, "episode_scores": scores, "episode_lengths": lengths})
        return result


def _result(status: Status, reward: float, metadata: dict[str, Any], error: str | None) -> dict[str, Any]:
    return {"status": status.value, "reward": reward, "metadata": metadata, "error": error}
