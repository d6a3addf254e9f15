"""The reference grader's episode loop, kept for sources without a fast path (`synth`).

It builds a fresh environment per episode and evaluates the network on every step, exactly as the
reference does; it is slow and only used where nothing faster is known to be identical.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

import numpy as np

from evalfarm.envs.weight_edits import games
from evalfarm.envs.weight_edits.deadline import Deadline
from evalfarm.envs.weight_edits.edits import Tensors
from evalfarm.envs.weight_edits.episodes import Episode
from evalfarm.envs.weight_edits.policy import logits, probabilities

SYNTH_MODULE = "minatar_synth"


def synth_available() -> bool:
    """True when the `minatar_synth` package can be imported."""
    return importlib.util.find_spec(SYNTH_MODULE) is not None


def synth_environment_class(game: str) -> type:
    """The one `*Environment` class defined by `minatar_synth.games.<game>`."""
    module = importlib.import_module(f"{SYNTH_MODULE}.games.{game}")
    candidates = [
        value
        for name, value in vars(module).items()
        if name.endswith("Environment") and isinstance(value, type) and value.__module__ == module.__name__
    ]
    if len(candidates) != 1:
        raise ValueError(f"expected one environment class for {game}, found {len(candidates)}")
    return candidates[0]


def score_cap(game: str, source: str) -> float:
    """The score that normalises to 1.0."""
    if source == "original":
        return games.ORIGINAL_SCORE_CAPS[game]
    return float(synth_environment_class(game).score_cap)  # type: ignore[attr-defined]


def _make_environment(game: str, source: str) -> Any:
    if source == "original":
        from minatar import Environment

        return Environment(game, sticky_action_prob=games.STICKY_ACTION_PROB, difficulty_ramping=False)
    return synth_environment_class(game)(sticky_action_prob=games.STICKY_ACTION_PROB)


def _observation(game: str, source: str, state: np.ndarray) -> np.ndarray:
    if source == "synth":
        if state.shape != (10, 10, 6):
            raise ValueError(f"invalid synthetic state shape {state.shape}")
        return state.astype(np.float32).reshape(600)
    return games.observation(game, state)


def run_episode(game: str, source: str, weights: Tensors, episode: int, deadline: Deadline) -> Episode:
    """Score and length of one episode, played the reference's way."""
    environment = _make_environment(game, source)
    environment.seed(games.ENV_SEED_BASE + episode)
    action_random = np.random.RandomState(games.ACTION_SEED_BASE + episode)
    environment.reset()
    score = 0.0
    for step in range(games.MAX_STEPS):
        if step % 256 == 0:
            deadline.check()
        state = _observation(game, source, environment.state())
        action = int(action_random.choice(6, p=probabilities(logits(weights, state))))
        reward, terminal = environment.act(action)
        score += float(reward)
        if terminal:
            break
    return score, step + 1
