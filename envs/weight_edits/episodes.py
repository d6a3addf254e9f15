"""Episode runners: one episode of a game under a policy, as the reference grader plays it.

The reference builds a fresh `minatar.Environment` per episode, seeds it with 1729 + e, samples
actions with `RandomState(7919 + e).choice(6, p=softmax)`, and lets the environment's RandomState
draw the sticky-action test (first, on every step) and the game's own randomness. The fast runner
keeps one game object and two generators per process and reseeds them (same streams), plays the
game with MinAtar's own code, reads the observation from the game's internals, and samples with the
policy's cached cdf and a right-sided search on the same uniform `choice` would draw.
"""

from __future__ import annotations

import bisect
import importlib
from typing import Any

import numpy as np

from evalfarm.envs.weight_edits import games
from evalfarm.envs.weight_edits.deadline import Deadline
from evalfarm.envs.weight_edits.policy import Policy

Episode = tuple[float, int]
# Uniforms drawn per refill of the action stream (draws in bulk equal draws one by one); the
# deadline is checked at each refill.
_FIRST_UNIFORMS = 64
_UNIFORM_CHUNK = 1024


def preload_games() -> None:
    """Import MinAtar's game modules now (~1.3 s with the plotting libraries MinAtar imports)."""
    for game in games.GAMES:
        importlib.import_module(f"minatar.environments.{game}")


def game_env(game: str) -> Any:
    """A MinAtar game object (the `Env` inside `minatar.Environment`) without difficulty ramping."""
    module = importlib.import_module(f"minatar.environments.{game}")
    return module.Env(ramping=False)


class FastRunner:
    """Plays episodes of one original game; reuse it for many episodes of one answer."""

    def __init__(self, game: str, policy: Policy) -> None:
        self.game = game
        self.policy = policy
        self.env = game_env(game)
        self.features = games.FEATURES[game]
        self.env_random = np.random.RandomState(games.ENV_SEED_BASE)
        self.action_random = np.random.RandomState(games.ACTION_SEED_BASE)

    def _reset(self, episode: int) -> None:
        # Reseeding gives the same state as a new RandomState(seed); the game shares the stream.
        self.env_random.seed(games.ENV_SEED_BASE + episode)
        self.action_random.seed(games.ACTION_SEED_BASE + episode)
        self.env.random = self.env_random
        self.env.reset()

    def run(self, episode: int, deadline: Deadline) -> Episode:
        """Score and length of episode `episode`."""
        self._reset(episode)
        env, policy, features, constant = self.env, self.policy, self.features, self.policy.constant
        sticky = self.env_random.random_sample
        draw = self.action_random.random_sample
        # Most episodes are short: a small first draw, then larger ones (the stream is the same).
        uniforms, base = draw(_FIRST_UNIFORMS).tolist(), 0
        last_action = 0  # a fresh Environment starts with last_action 0
        score = 0.0
        for step in range(games.MAX_STEPS):
            if step - base == len(uniforms):
                deadline.check()
                uniforms, base = draw(_UNIFORM_CHUNK).tolist(), step
            cdf = constant if constant is not None else policy.cdf(features(env))
            action = bisect.bisect_right(cdf, uniforms[step - base])
            if sticky() < games.STICKY_ACTION_PROB:
                action = last_action
            last_action = action
            reward, terminal = env.act(action)
            score += float(reward)
            if terminal:
                break
        return score, step + 1
