"""The weight_edits fast paths against MinAtar itself and against each other, under random play."""

from __future__ import annotations

import numpy as np
import pytest

from evalfarm.envs.weight_edits import apply_edits, games, grading, policy, runner
from evalfarm.envs.weight_edits.deadline import Deadline
from evalfarm.envs.weight_edits.episodes import FastRunner
from evalfarm.envs.weight_edits.policy import Policy

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


@pytest.mark.parametrize("name", list(ANSWERS))
@pytest.mark.parametrize("game", games.GAMES)
def test_compiled_runner_equals_the_per_episode_runner(game: str, name: str) -> None:
    weights, _ = apply_edits(ANSWERS[name])
    episodes = range(5, 12)
    compiled = runner.run_episodes(game, Policy(weights), episodes, Deadline())
    per_episode = FastRunner(game, Policy(weights))
    assert compiled == [per_episode.run(episode, Deadline()) for episode in episodes]


@pytest.mark.parametrize("game", games.GAMES)
def test_a_tiny_policy_cache_changes_nothing(game: str, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = grading.grade_answer(game, "original", ANSWERS["dense"], 3)
    monkeypatch.setattr(policy, "MAX_CACHE_ENTRIES", 4)
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
