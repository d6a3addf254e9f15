"""Grading one answer: parse, play a range of episodes, and summarise as the reference grader does."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from evalfarm.envs.weight_edits import reference
from evalfarm.envs.weight_edits.deadline import Deadline
from evalfarm.envs.weight_edits.edits import PARSE_ERRORS, Tensors, apply_edits, nonzero_weights
from evalfarm.envs.weight_edits.episodes import Episode, FastRunner
from evalfarm.envs.weight_edits.policy import Policy
from evalfarm.envs.weight_edits.runner import GAME_IDS, run_episodes

# Errors the reference grader does not catch (it would crash); an answer is data, so they grade as
# a failed parse with their message instead.
UNCAUGHT_PARSE_ERRORS: tuple[type[BaseException], ...] = (OverflowError, RecursionError, MemoryError)


@dataclasses.dataclass(frozen=True)
class Parsed:
    """An answer's tensors and the counts the metadata reports."""

    weights: Tensors
    edit_count: int
    nonzero_weights: int


def base_metadata(game: str, source: str, episodes: int) -> dict[str, Any]:
    """The metadata keys the reference sets before it grades."""
    return {"game": game, "source": source, "episodes": episodes, "parse_success": 0.0}


def parse(answer: str) -> Parsed | str:
    """The parsed answer, or the reference's error text when it does not parse."""
    try:
        weights, edit_count = apply_edits(answer)
    except PARSE_ERRORS as error:
        return str(error)
    except UNCAUGHT_PARSE_ERRORS as error:  # the parser's own limits (a MemoryError has no text)
        return str(error) or f"{type(error).__name__}: the edits are too deeply nested"
    return Parsed(weights, edit_count, nonzero_weights(weights))


def play(game: str, source: str, weights: Tensors, episodes: range, deadline: Deadline) -> list[Episode]:
    """Scores and lengths of `episodes`, in order, by the fastest runner known to be identical."""
    if not episodes:  # nothing to play: the reference builds no environment either
        return []
    if source != "original":
        return [reference.run_episode(game, source, weights, e, deadline) for e in episodes]
    if game not in GAME_IDS:  # not a MinAtar game: MinAtar's own import raises the reference's error
        unknown = FastRunner(game, Policy(weights))
        return [unknown.run(episode, deadline) for episode in episodes]
    return run_episodes(game, Policy(weights), episodes, deadline)


def summarize(
    game: str, source: str, episodes: int, parsed: Parsed, scores: list[float], lengths: list[int]
) -> tuple[float, dict[str, Any]]:
    """The reference's normalized score and metadata for these per-episode results."""
    raw_score = float(np.mean(scores))
    mean_length = float(np.mean(lengths))
    cap = reference.score_cap(game, source)
    metadata = base_metadata(game, source, episodes)
    metadata.update(
        {
            "parse_success": 1.0,
            "raw_score": raw_score,
            "score_cap": cap,
            "mean_episode_length": mean_length,
            "edit_count": parsed.edit_count,
            "nonzero_weights": parsed.nonzero_weights,
        }
    )
    return min(max(raw_score, 0.0), cap) / cap, metadata


def grade_answer(game: str, source: str, answer: str, episodes: int) -> tuple[float, dict[str, Any]]:
    """The reference grader's `grade_answer`, same values (no limits; for tests and the benchmark)."""
    parsed = parse(answer)
    if isinstance(parsed, str):
        return 0.0, {**base_metadata(game, source, episodes), "error": parsed}
    try:
        results = play(game, source, parsed.weights, range(episodes), Deadline())
        scores = [score for score, _ in results]
        lengths = [length for _, length in results]
        return summarize(game, source, episodes, parsed, scores, lengths)
    except PARSE_ERRORS as error:  # as the reference: a failing game grades 0 with its message
        return 0.0, {**base_metadata(game, source, episodes), "error": str(error)}
