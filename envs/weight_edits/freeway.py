"""Freeway, MinAtar 1.0.15's rules (`freeway.Env`) compiled, on a flat int64 state.

The chicken starts in row 9 and may move every 3 steps; reaching row 0 scores, sends it back to
row 9 and re-randomises the car speeds (`randint(1, 6, 8)`, then `sign(rand(8) - 0.5)`); a car in
the chicken's column and row sends it back to row 9; the episode ends after 2,501 steps.
A direction draw of exactly 0.5 gives MinAtar a car of speed 0 (and `state()` an unbound trail
variable): the state is then flagged ESCAPE for the per-episode MinAtar runner to replay.
"""

from __future__ import annotations

import numpy as np

from evalfarm.envs.weight_edits import mt19937
from evalfarm.envs.weight_edits.jit import jit

TERMINAL, ESCAPE, POS, MOVE_TIMER, TERMINATE_TIMER, CARS = range(6)
_CAR_COUNT = 8
_X, _ROW, _TIMER, _SPEED = range(4)
SIZE = CARS + 4 * _CAR_COUNT
_PLAYER_SPEED = 3
_TIME_LIMIT = 2500
_UP, _DOWN = 2, 4


@jit
def _randomize_cars(st: np.ndarray, rng: np.ndarray) -> None:
    """`_randomize_cars`: eight speeds in 1..5, then eight signs, one per car."""
    for car in range(_CAR_COUNT):
        st[CARS + 4 * car + _SPEED] = mt19937.randint(rng, 1, 6)
    for car in range(_CAR_COUNT):
        uniform = mt19937.next_double(rng)
        base = CARS + 4 * car
        if uniform == 0.5:
            st[ESCAPE] = 1
        elif uniform < 0.5:
            st[base + _SPEED] = -st[base + _SPEED]
        st[base + _TIMER] = abs(st[base + _SPEED])


@jit
def reset(st: np.ndarray, rng: np.ndarray) -> None:
    """`reset()`: cars at column 0 of rows 1-8, chicken at row 9."""
    st[:] = 0
    for car in range(_CAR_COUNT):
        st[CARS + 4 * car + _ROW] = car + 1
    _randomize_cars(st, rng)
    st[POS] = 9
    st[MOVE_TIMER] = _PLAYER_SPEED
    st[TERMINATE_TIMER] = _TIME_LIMIT


@jit
def act(st: np.ndarray, rng: np.ndarray, action: int) -> int:
    """`act(action)`: the reward; st[TERMINAL] is set when the episode ends."""
    reward = 0
    if action == _UP and st[MOVE_TIMER] == 0:
        st[MOVE_TIMER] = _PLAYER_SPEED
        st[POS] = max(0, st[POS] - 1)
    elif action == _DOWN and st[MOVE_TIMER] == 0:
        st[MOVE_TIMER] = _PLAYER_SPEED
        st[POS] = min(9, st[POS] + 1)
    if st[POS] == 0:
        reward += 1
        _randomize_cars(st, rng)
        st[POS] = 9
    for car in range(_CAR_COUNT):
        base = CARS + 4 * car
        if st[base + _X] == 4 and st[base + _ROW] == st[POS]:
            st[POS] = 9
        if st[base + _TIMER] == 0:
            st[base + _TIMER] = abs(st[base + _SPEED])
            st[base + _X] += 1 if st[base + _SPEED] > 0 else -1
            if st[base + _X] < 0:
                st[base + _X] = 9
            elif st[base + _X] > 9:
                st[base + _X] = 0
            if st[base + _X] == 4 and st[base + _ROW] == st[POS]:
                st[POS] = 9
        else:
            st[base + _TIMER] -= 1
    if st[MOVE_TIMER] > 0:
        st[MOVE_TIMER] -= 1
    st[TERMINATE_TIMER] -= 1
    if st[TERMINATE_TIMER] < 0:
        st[TERMINAL] = 1
    return reward


@jit
def features(st: np.ndarray, active: np.ndarray) -> int:
    """Active observation inputs: chicken (channel 0), cars (1), their trails (all speeds: 4)."""
    active[0] = (st[POS] * 10 + 4) * 6
    count = 1
    for car in range(_CAR_COUNT):
        base = CARS + 4 * car
        x, row = st[base + _X], st[base + _ROW]
        active[count] = (row * 10 + x) * 6 + 1
        back = x - 1 if st[base + _SPEED] > 0 else x + 1
        if back < 0:
            back = 9
        elif back > 9:
            back = 0
        active[count + 1] = (row * 10 + back) * 6 + 4
        count += 2
    return count
