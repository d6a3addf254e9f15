"""Reward functions over the farm for the trainers people use: TRL's `GRPOTrainer`, verl's managers.

`make_trl_reward(env, ...)` is a TRL reward function (sync or async); `verl_compute_score` and
`verl_compute_score_one` are verl's `custom_reward_function`s. They import nothing of the trainers
and need only the client (`pip install evalfarm`). Names are imported on first use.
"""

from __future__ import annotations

from evalfarm._exports import lazy

_EXPORTS = {
    "DEFAULT_DEADLINE_S": "evalfarm.trainers.rewards",
    "answer_text": "evalfarm.trainers.rewards",
    "make_trl_reward": "evalfarm.trainers.rewards",
    "verl_compute_score": "evalfarm.trainers.rewards",
    "verl_compute_score_one": "evalfarm.trainers.rewards",
}

__all__, __getattr__ = lazy("evalfarm.trainers", _EXPORTS)
