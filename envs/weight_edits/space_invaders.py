"""Space Invaders, MinAtar 1.0.15's rules (`space_invaders.Env`, ramping off) compiled, on bitmasks.

MinAtar keeps three 10x10 maps (aliens, friendly and enemy bullets) and moves them with `np.roll`;
here each map is ten 10-bit row masks (bit = column). Friendly bullets move up a row per step and
enemy bullets down; the aliens move sideways (wrapping, as `np.roll` does) every `min(aliens left,
12)` steps, or down a row (wrapping from row 9 to row 0) and turn when one is at the edge they move
to; every 10 steps the lowest alien of the column nearest the cannon (MinAtar's stable search order)
fires; an alien or enemy bullet on the cannon ends the episode; a cleared wave is replaced by a new
one. The game draws nothing of its own: its stream only serves the sticky-action test.
"""

from __future__ import annotations

import numpy as np

from evalfarm.envs.weight_edits.jit import jit

TERMINAL, ESCAPE, POS, ALIEN_DIR, ALIEN_MOVE_TIMER, ALIEN_SHOT_TIMER, SHOT_TIMER = range(7)
ALIENS, FRIENDLY, ENEMY = 7, 17, 27  # ten row masks each
SIZE = 37
_WAVE_ROW = 0b0011111100  # columns 2-7, in rows 0-3
_ROW = (1 << 10) - 1
_SHOT_COOL_DOWN = 5
_ENEMY_MOVE_INTERVAL = 12
_ENEMY_SHOT_INTERVAL = 10
_FIRE, _LEFT, _RIGHT = 5, 1, 3


@jit
def _bits(mask: int) -> int:
    count = 0
    while mask:
        mask &= mask - 1
        count += 1
    return count


@jit
def reset(st: np.ndarray, rng: np.ndarray) -> None:
    """`reset()`: the cannon at column 5, the first wave moving left; it draws nothing."""
    st[:] = 0
    st[POS] = 5
    for row in range(4):
        st[ALIENS + row] = _WAVE_ROW
    st[ALIEN_DIR] = -1
    st[ALIEN_MOVE_TIMER] = _ENEMY_MOVE_INTERVAL
    st[ALIEN_SHOT_TIMER] = _ENEMY_SHOT_INTERVAL


@jit
def _count_aliens(st: np.ndarray) -> int:
    count = 0
    for row in range(10):
        count += _bits(st[ALIENS + row])
    return count


@jit
def _move_aliens(st: np.ndarray, cannon: int) -> None:
    """Sideways, or down a row and turn when an alien is at the edge the wave moves to."""
    st[ALIEN_MOVE_TIMER] = min(_count_aliens(st), _ENEMY_MOVE_INTERVAL)
    edges = 0
    for row in range(10):
        edges |= st[ALIENS + row]
    if (edges & 1 and st[ALIEN_DIR] < 0) or (edges >> 9 & 1 and st[ALIEN_DIR] > 0):
        st[ALIEN_DIR] = -st[ALIEN_DIR]
        if st[ALIENS + 9]:
            st[TERMINAL] = 1
        bottom = st[ALIENS + 9]
        for row in range(9, 0, -1):
            st[ALIENS + row] = st[ALIENS + row - 1]
        st[ALIENS] = bottom  # np.roll wraps row 9 to row 0
    elif st[ALIEN_DIR] > 0:
        for row in range(10):
            mask = st[ALIENS + row]
            st[ALIENS + row] = ((mask << 1) & _ROW) | (mask >> 9)
    else:
        for row in range(10):
            mask = st[ALIENS + row]
            st[ALIENS + row] = (mask >> 1) | ((mask & 1) << 9)
    if st[ALIENS + 9] & cannon:
        st[TERMINAL] = 1


@jit
def _shoot(st: np.ndarray) -> None:
    """The lowest alien of the nearest non-empty column fires (`_nearest_alien`: a stable sort by
    distance, so the left column first on a tie)."""
    pos = st[POS]
    for step in range(19):  # columns pos, pos - 1, pos + 1, pos - 2, pos + 2, ...
        distance = (step + 1) // 2
        col = pos - distance if step % 2 else pos + distance
        if 0 <= col <= 9:
            for row in range(9, -1, -1):
                if st[ALIENS + row] >> col & 1:
                    st[ENEMY + row] |= 1 << col
                    return
    st[ESCAPE] = 1  # no alien at all: MinAtar raises TypeError here (not reachable)


@jit
def act(st: np.ndarray, rng: np.ndarray, action: int) -> int:
    """`act(action)`: the reward; st[TERMINAL] is set when the episode ends."""
    if action == _FIRE and st[SHOT_TIMER] == 0:
        st[FRIENDLY + 9] |= 1 << st[POS]
        st[SHOT_TIMER] = _SHOT_COOL_DOWN
    elif action == _LEFT:
        st[POS] = max(0, st[POS] - 1)
    elif action == _RIGHT:
        st[POS] = min(9, st[POS] + 1)
    cannon = 1 << st[POS]
    for row in range(9):  # friendly bullets up a row, the row leaving the top is dropped
        st[FRIENDLY + row] = st[FRIENDLY + row + 1]
    st[FRIENDLY + 9] = 0
    for row in range(9, 0, -1):  # enemy bullets down a row, the row leaving the bottom is dropped
        st[ENEMY + row] = st[ENEMY + row - 1]
    st[ENEMY] = 0
    if st[ENEMY + 9] & cannon or st[ALIENS + 9] & cannon:
        st[TERMINAL] = 1
    if st[ALIEN_MOVE_TIMER] == 0:
        _move_aliens(st, cannon)
    if st[ALIEN_SHOT_TIMER] == 0:
        st[ALIEN_SHOT_TIMER] = _ENEMY_SHOT_INTERVAL
        _shoot(st)
    reward = 0
    for row in range(10):
        kills = st[ALIENS + row] & st[FRIENDLY + row]
        reward += _bits(kills)
        st[ALIENS + row] ^= kills
        st[FRIENDLY + row] ^= kills
    if st[SHOT_TIMER] > 0:
        st[SHOT_TIMER] -= 1
    st[ALIEN_MOVE_TIMER] -= 1
    st[ALIEN_SHOT_TIMER] -= 1
    if _count_aliens(st) == 0:
        for row in range(4):
            st[ALIENS + row] = _WAVE_ROW
    return reward


@jit
def features(st: np.ndarray, active: np.ndarray) -> int:
    """Active observation inputs: cannon (channel 0), aliens (1, 2 and 4), enemy bullets (1),
    friendly bullets (3)."""
    active[0] = (90 + st[POS]) * 6
    count = 1
    for row in range(10):
        aliens, enemy, friendly = st[ALIENS + row], st[ENEMY + row], st[FRIENDLY + row]
        for col in range(10):
            cell = (row * 10 + col) * 6
            if aliens >> col & 1:
                active[count], active[count + 1], active[count + 2] = cell + 1, cell + 2, cell + 4
                count += 3
            if enemy >> col & 1:
                active[count] = cell + 1
                count += 1
            if friendly >> col & 1:
                active[count] = cell + 3
                count += 1
    return count
