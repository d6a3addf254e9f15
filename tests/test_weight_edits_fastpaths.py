"""The weight_edits fast paths against MinAtar itself, step by step, under random play."""

from __future__ import annotations

import numpy as np
import pytest

from envs.weight_edits import apply_edits, freeway, games, grading, policy, space_invaders
from envs.weight_edits.deadline import Deadline
from envs.weight_edits.episodes import FastRunner
from envs.weight_edits.policy import Policy

pytestmark = pytest.mark.minatar

ANSWERS = {
    "constant": "```edits\nb3[2] = 1.0\n```",
    "sparse": "```edits\nW1[0:600:6, 0] = 1.5\nW2[0, 0] = 2.0\nW3[0, 2] = 3.0\nb3[4] = 0.5\n```",
    "dense": "```edits\nW1[1:600:3, 1] = -0.2\nW1[0:600:2, 0] = 0.3\nW3[0, 2] = 4.0\nW3[1, 4] = 2.0\n```",
}


def random_play(game: str, episodes: int, steps: int) -> list[tuple[object, np.ndarray, int]]:
    """(MinAtar environment, its reference observation, random action) along random episodes."""
    from minatar import Environment

    actions = np.random.RandomState(0)
    for episode in range(episodes):
        environment = Environment(game, sticky_action_prob=0.1, difficulty_ramping=False)
        environment.seed(100 + episode)
        environment.reset()
        for _ in range(steps):
            action = int(actions.randint(6))
            yield environment, games.observation(game, environment.state()), action
            _, terminal = environment.act(action)
            if terminal:
                break


@pytest.mark.parametrize("game", games.GAMES)
def test_features_are_the_reference_observation(game: str) -> None:
    for environment, observation, _ in random_play(game, episodes=8, steps=400):
        active = sorted(set(games.FEATURES[game](environment.env)))
        assert active == np.flatnonzero(observation).tolist()


def test_space_invaders_bitmask_game_is_minatars() -> None:
    from minatar.environments.space_invaders import Env

    actions = np.random.RandomState(1)
    kills = 0
    for _ in range(6):
        reference, bitmask = Env(ramping=False), space_invaders.Game()
        for _ in range(3000):
            observation = games.observation("space_invaders", reference.state())
            assert sorted(set(bitmask.active())) == np.flatnonzero(observation).tolist()
            # Mostly fire, so waves are cleared and the aliens refill.
            action = int(actions.choice(6, p=[0.1, 0.15, 0.05, 0.15, 0.05, 0.5]))
            expected, got = reference.act(action), bitmask.act(action)
            assert (int(got[0]), got[1]) == (int(expected[0]), expected[1])
            kills += int(got[0])
            if got[1]:
                break
    assert kills > 24  # at least one wave cleared somewhere


@pytest.mark.parametrize("name", list(ANSWERS))
def test_freeway_lockstep_equals_the_per_episode_runner(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(freeway, "BLOCK", 3)  # several blocks, one shared cache
    weights, _ = apply_edits(ANSWERS[name])
    episodes = range(5, 12)
    lockstep = freeway.run_freeway(Policy(weights), episodes, Deadline())
    runner = FastRunner("freeway", Policy(weights))
    assert lockstep == [runner.run(episode, Deadline()) for episode in episodes]


def test_freeway_falls_back_when_its_streams_run_out(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = grading.grade_answer("freeway", "original", ANSWERS["sparse"], 3)
    monkeypatch.setattr(freeway, "_WORDS", 2 * freeway.STEPS - 10)
    assert grading.grade_answer("freeway", "original", ANSWERS["sparse"], 3) == expected


@pytest.mark.parametrize("game", games.GAMES)
def test_a_tiny_policy_cache_changes_nothing(game: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = grading.grade_answer(game, "original", ANSWERS["dense"], 3)
    monkeypatch.setattr(policy, "MAX_CACHE_ENTRIES", 4)
    monkeypatch.setattr(freeway, "MAX_CACHE_ENTRIES", 4)
    assert grading.grade_answer(game, "original", ANSWERS["dense"], 3) == expected


@pytest.mark.parametrize("diver_count", [-2, -1, 0, 1, 5, 6])
@pytest.mark.parametrize("oxygen", [-3, 0, 19, 20, 150, 200])
def test_seaquest_gauges_follow_numpy_slices(diver_count: int, oxygen: int) -> None:
    # A sub surfacing with six divers leaves MinAtar's diver count at -1: the gauge slice is empty.
    from minatar.environments.seaquest import Env

    env = Env(ramping=False)
    env.diver_count, env.oxygen = diver_count, oxygen
    for sub_x, sub_or in [(0, False), (9, True), (4, True)]:
        env.sub_x, env.sub_or = sub_x, sub_or
        observation = games.observation("seaquest", env.state())
        assert sorted(set(games.seaquest_features(env))) == np.flatnonzero(observation).tolist()
