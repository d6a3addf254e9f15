"""Asterix, MinAtar 1.0.15's rules (`asterix.Env`, ramping off) compiled, on a flat int64 state.

The player moves in rows 1-8; every 10 steps an entity (gold with probability 1/3, else an enemy)
spawns at the left or right edge of a free row (`rand() < 1/2`, `rand() < 1/3`, then
`randint(len(free rows))`, which draws nothing for one free row, and nothing at all spawns when no
row is free); entities move one column every 5 steps and leave at the edges; touching gold scores
and removes it, touching an enemy ends the episode. With ramping off the spawn and move intervals
never change (MinAtar's speed-ups only happen with ramping on).
"""

from __future__ import annotations

import numpy as np

from evalfarm.envs.weight_edits import mt19937
from evalfarm.envs.weight_edits.jit import jit

TERMINAL, ESCAPE, PLAYER_X, PLAYER_Y, SPAWN_TIMER, MOVE_TIMER, ENTITIES = range(7)
SLOTS = 8
# per slot: present, x, right (moving right), gold; the row is slot + 1
_PRESENT, _X, _RIGHT, _GOLD = range(4)
SIZE = ENTITIES + 4 * SLOTS
_SPAWN_SPEED = 10
_MOVE_SPEED = 5
_LEFT, _UP, _RIGHTWARD, _DOWN = 1, 2, 3, 4


@jit
def reset(st: np.ndarray, rng: np.ndarray) -> None:
    """`reset()`: the player at (5, 5), no entities; it draws nothing."""
    st[:] = 0
    st[PLAYER_X], st[PLAYER_Y] = 5, 5
    st[SPAWN_TIMER] = _SPAWN_SPEED
    st[MOVE_TIMER] = _MOVE_SPEED


@jit
def _spawn(st: np.ndarray, rng: np.ndarray) -> None:
    """`_spawn_entity`: side and kind first, then a free slot chosen uniformly."""
    right = mt19937.next_double(rng) < 1 / 2
    gold = mt19937.next_double(rng) < 1 / 3
    free = 0
    for slot in range(SLOTS):
        free += st[ENTITIES + 4 * slot + _PRESENT] == 0
    if free == 0:
        return
    chosen = mt19937.randint(rng, 0, free)
    for slot in range(SLOTS):
        base = ENTITIES + 4 * slot
        if st[base + _PRESENT] == 0:
            if chosen == 0:
                st[base + _PRESENT] = 1
                st[base + _X] = 0 if right else 9
                st[base + _RIGHT] = right
                st[base + _GOLD] = gold
                return
            chosen -= 1


@jit
def _touch(st: np.ndarray, slot: int) -> int:
    """An entity on the player: gold is collected (reward 1), an enemy ends the episode."""
    base = ENTITIES + 4 * slot
    if st[base + _X] != st[PLAYER_X] or slot + 1 != st[PLAYER_Y]:
        return 0
    if st[base + _GOLD]:
        st[base + _PRESENT] = 0
        return 1
    st[TERMINAL] = 1
    return 0


@jit
def act(st: np.ndarray, rng: np.ndarray, action: int) -> int:
    """`act(action)`: the reward; st[TERMINAL] is set when the episode ends."""
    reward = 0
    if st[SPAWN_TIMER] == 0:
        _spawn(st, rng)
        st[SPAWN_TIMER] = _SPAWN_SPEED
    if action == _LEFT:
        st[PLAYER_X] = max(0, st[PLAYER_X] - 1)
    elif action == _RIGHTWARD:
        st[PLAYER_X] = min(9, st[PLAYER_X] + 1)
    elif action == _UP:
        st[PLAYER_Y] = max(1, st[PLAYER_Y] - 1)
    elif action == _DOWN:
        st[PLAYER_Y] = min(8, st[PLAYER_Y] + 1)
    for slot in range(SLOTS):
        if st[ENTITIES + 4 * slot + _PRESENT]:
            reward += _touch(st, slot)
    if st[MOVE_TIMER] == 0:
        st[MOVE_TIMER] = _MOVE_SPEED
        for slot in range(SLOTS):
            base = ENTITIES + 4 * slot
            if st[base + _PRESENT]:
                st[base + _X] += 1 if st[base + _RIGHT] else -1
                if st[base + _X] < 0 or st[base + _X] > 9:
                    st[base + _PRESENT] = 0  # gone; off the board it cannot touch the player
                else:
                    reward += _touch(st, slot)
    st[SPAWN_TIMER] -= 1
    st[MOVE_TIMER] -= 1
    return reward


@jit
def features(st: np.ndarray, active: np.ndarray) -> int:
    """Active observation inputs: player (channel 0), enemies (1), gold (2), trails (4)."""
    active[0] = (st[PLAYER_Y] * 10 + st[PLAYER_X]) * 6
    count = 1
    for slot in range(SLOTS):
        base = ENTITIES + 4 * slot
        if st[base + _PRESENT]:
            x, row = st[base + _X], slot + 1
            active[count] = (row * 10 + x) * 6 + (2 if st[base + _GOLD] else 1)
            count += 1
            back = x - 1 if st[base + _RIGHT] else x + 1
            if 0 <= back <= 9:
                active[count] = (row * 10 + back) * 6 + 4
                count += 1
    return count
