"""Breakout, MinAtar 1.0.15's rules (`breakout.Env`) compiled, on a flat int64 state.

The ball starts in row 3 at column 0 or 9 (`randint(2)`, the game's only draw) and moves
diagonally; it reflects off the walls and the top, breaks the brick it moves into (scoring, and
returning to its row) unless it broke one on the step before (then it passes into the brick's cell),
bounces off the paddle in row 9 (straight back when the paddle was under it, sideways when the paddle
is where it lands) or else ends the episode; when the ball reaches row 9 with every brick gone, the
three brick rows are refilled. Bricks only ever occupy rows 1-3: they are a 30-bit mask.
"""

from __future__ import annotations

import numpy as np

from evalfarm.envs.weight_edits import mt19937
from evalfarm.envs.weight_edits.jit import jit

TERMINAL, ESCAPE, BALL_X, BALL_Y, BALL_DIR, POS, STRIKE, LAST_X, LAST_Y, BRICKS = range(10)
SIZE = 10
_ALL_BRICKS = (1 << 30) - 1
_LEFT, _RIGHT = 1, 3
# per direction (0 up-left, 1 up-right, 2 down-right, 3 down-left): the step, and the reflections
_DX = (-1, 1, 1, -1)
_DY = (-1, -1, 1, 1)
_FLIP_X = (1, 0, 3, 2)
_FLIP_Y = (3, 2, 1, 0)
_SIDEWAYS = (2, 3, 0, 1)


@jit
def _brick_bit(row: int, col: int) -> int:
    """The mask bit of a cell, or 0 outside the brick rows."""
    return 1 << ((row - 1) * 10 + col) if 1 <= row <= 3 else 0


@jit
def reset(st: np.ndarray, rng: np.ndarray) -> None:
    """`reset()`: ball in row 3 at column 0 moving down-right, or column 9 moving down-left."""
    st[:] = 0
    st[BALL_Y] = 3
    if mt19937.randint(rng, 0, 2) == 0:
        st[BALL_X], st[BALL_DIR] = 0, 2
    else:
        st[BALL_X], st[BALL_DIR] = 9, 3
    st[POS] = 4
    st[BRICKS] = _ALL_BRICKS
    st[LAST_X], st[LAST_Y] = st[BALL_X], st[BALL_Y]


@jit
def _bottom(st: np.ndarray, new_x: int) -> int:
    """The ball reaches row 9: refill an empty wall, then the paddle; returns the new row."""
    if st[BRICKS] == 0:
        st[BRICKS] = _ALL_BRICKS
    if st[BALL_X] == st[POS]:
        st[BALL_DIR] = _FLIP_Y[st[BALL_DIR]]
        return st[LAST_Y]
    if new_x == st[POS]:
        st[BALL_DIR] = _SIDEWAYS[st[BALL_DIR]]
        return st[LAST_Y]
    st[TERMINAL] = 1
    return 9


@jit
def act(st: np.ndarray, rng: np.ndarray, action: int) -> int:
    """`act(action)`: the reward; st[TERMINAL] is set when the episode ends."""
    reward = 0
    if action == _LEFT:
        st[POS] = max(0, st[POS] - 1)
    elif action == _RIGHT:
        st[POS] = min(9, st[POS] + 1)
    st[LAST_X], st[LAST_Y] = st[BALL_X], st[BALL_Y]
    new_x = st[BALL_X] + _DX[st[BALL_DIR]]
    new_y = st[BALL_Y] + _DY[st[BALL_DIR]]
    strike_toggle = False
    if new_x < 0 or new_x > 9:
        new_x = min(max(new_x, 0), 9)
        st[BALL_DIR] = _FLIP_X[st[BALL_DIR]]
    bit = _brick_bit(new_y, new_x)
    if new_y < 0:
        new_y = 0
        st[BALL_DIR] = _FLIP_Y[st[BALL_DIR]]
    elif st[BRICKS] & bit:
        strike_toggle = True
        if not st[STRIKE]:
            reward += 1
            st[STRIKE] = 1
            st[BRICKS] &= ~bit
            new_y = st[LAST_Y]
            st[BALL_DIR] = _FLIP_Y[st[BALL_DIR]]
    elif new_y == 9:
        new_y = _bottom(st, new_x)
    if not strike_toggle:
        st[STRIKE] = 0
    st[BALL_X], st[BALL_Y] = new_x, new_y
    return reward


@jit
def features(st: np.ndarray, active: np.ndarray) -> int:
    """Active observation inputs: paddle (channel 0), bricks (2), ball (3), its last cell (4)."""
    active[0] = (90 + st[POS]) * 6
    active[1] = (st[BALL_Y] * 10 + st[BALL_X]) * 6 + 3
    active[2] = (st[LAST_Y] * 10 + st[LAST_X]) * 6 + 4
    count = 3
    bricks = st[BRICKS]
    for cell in range(30):
        if bricks >> cell & 1:
            active[count] = (10 + cell) * 6 + 2
            count += 1
    return count
