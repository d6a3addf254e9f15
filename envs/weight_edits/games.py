"""The five MinAtar games as the reference grader sees them: channel groups, score caps, features.

The reference builds each observation by merging MinAtar's state channels into six output channels
(`ORIGINAL_CHANNEL_GROUPS`) and flattening the (10, 10, 6) array. The feature functions here read a
game's internals and return the same active flat indices, `(row * 10 + col) * 6 + output_channel`,
without building the boolean state (tests check them against `state()` step by step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

ORIGINAL_CHANNEL_GROUPS: dict[str, tuple[tuple[int, ...], ...]] = {
    "asterix": ((0,), (1,), (3,), (), (2,), ()),
    "breakout": ((0,), (), (3,), (1,), (2,), ()),
    "freeway": ((0,), (1,), (), (), (2, 3, 4, 5, 6), ()),
    "seaquest": ((0, 1), (5, 6, 4), (5, 6, 9), (2,), (3, 1), (7, 8)),
    "space_invaders": ((0,), (1, 5), (1,), (4,), (2, 3), ()),
}
ORIGINAL_SCORE_CAPS: dict[str, float] = {
    "asterix": 1_000.0,
    "breakout": 1_000.0,
    "freeway": 100.0,
    "seaquest": 1_000.0,
    "space_invaders": 1_000.0,
}
GAMES: tuple[str, ...] = tuple(ORIGINAL_SCORE_CAPS)
STICKY_ACTION_PROB = 0.1
MAX_STEPS = 10_000
ENV_SEED_BASE = 1729
ACTION_SEED_BASE = 7919
_OXYGEN_MAX = 200
_COLUMNS = range(10)

Features = Callable[[Any], list[int]]


def _cell(row: int, col: int) -> int:
    return (row * 10 + col) * 6


def observation(game: str, state: np.ndarray) -> np.ndarray:
    """The reference's float32 observation of a MinAtar `state()` (used by tests and fallbacks)."""
    channels = np.zeros((10, 10, 6), dtype=np.float32)
    for output_channel, source_channels in enumerate(ORIGINAL_CHANNEL_GROUPS[game]):
        if source_channels:
            channels[:, :, output_channel] = np.any(state[:, :, source_channels], axis=2)
    return channels.reshape(600)


def asterix_features(env: Any) -> list[int]:
    """Player (0), enemies (1), gold (2) and trails (4)."""
    active = [(env.player_y * 10 + env.player_x) * 6]
    for entity in env.entities:
        if entity is not None:
            x, row, right, gold = entity
            base = row * 60  # the hot loop: cells inlined
            active.append(base + x * 6 + (2 if gold else 1))
            back = x - 1 if right else x + 1
            if 0 <= back <= 9:
                active.append(base + back * 6 + 4)
    return active


_BRICKS: dict[bytes, list[int]] = {}
_MAX_BRICK_MAPS = 4096


def breakout_features(env: Any) -> list[int]:
    """Paddle (0), bricks (2), ball (3) and the ball's trail (4)."""
    active = [
        (90 + env.pos) * 6,
        (env.ball_y * 10 + env.ball_x) * 6 + 3,
        (env.last_y * 10 + env.last_x) * 6 + 4,
    ]
    # The bricks change only when one is hit: their indices are remembered per map (bounded).
    bricks_key = env.brick_map.tobytes()
    bricks = _BRICKS.get(bricks_key)
    if bricks is None:
        if len(_BRICKS) >= _MAX_BRICK_MAPS:
            _BRICKS.clear()
        bricks = _BRICKS[bricks_key] = [int(cell) * 6 + 2 for cell in np.flatnonzero(env.brick_map)]
    return active + bricks


def freeway_features(env: Any) -> list[int]:
    """Chicken (0), cars (1) and their speed trails, all merged into channel 4."""
    active = [_cell(env.pos, 4)]
    for x, row, _timer, speed in env.cars:
        active.append(_cell(row, x) + 1)
        back = x - 1 if speed > 0 else x + 1
        active.append(_cell(row, 9 if back < 0 else 0 if back > 9 else back) + 4)
    return active


def _moving(active: list[int], things: list[list[Any]], channels: tuple[int, ...], trail: bool) -> None:
    """Fish, enemy subs and divers: their cell in `channels`, their trail (if in bounds) in 4."""
    for thing in things:
        x, row, right = thing[0], thing[1], thing[2]
        base = _cell(row, x)
        active.extend(base + channel for channel in channels)
        back = x - 1 if right else x + 1
        if trail and 0 <= back <= 9:
            active.append(_cell(row, back) + 4)


def seaquest_features(env: Any) -> list[int]:
    """Sub (0, its back also 4), enemies (1, 2), divers (2), bullets (1, 3), gauges (5)."""
    back = env.sub_x - 1 if env.sub_or else env.sub_x + 1
    if back < 0:  # numpy's negative index, as `state()` would write it
        back += 10
    active = [_cell(env.sub_y, env.sub_x), _cell(env.sub_y, back), _cell(env.sub_y, back) + 4]
    # The gauges are slices of row 9, with Python's slice rules (a negative diver count is empty).
    active.extend(_cell(9, col) + 5 for col in _COLUMNS[0 : max(0, env.oxygen) * 10 // _OXYGEN_MAX])
    active.extend(_cell(9, col) + 5 for col in _COLUMNS[9 - env.diver_count : 9])
    active.extend(_cell(bullet[1], bullet[0]) + 3 for bullet in env.f_bullets)
    active.extend(_cell(bullet[1], bullet[0]) + 1 for bullet in env.e_bullets)
    _moving(active, env.e_fish, (1, 2), True)
    _moving(active, env.e_subs, (1, 2), True)
    _moving(active, env.divers, (2,), True)
    return active


def space_invaders_features(env: Any) -> list[int]:
    """Cannon (0), aliens (1, 2 and 4), enemy bullets (1), friendly bullets (3)."""
    active = [_cell(9, env.pos)]
    for cell in np.flatnonzero(env.alien_map).tolist():
        base = cell * 6
        active += (base + 1, base + 2, base + 4)
    active.extend(cell * 6 + 1 for cell in np.flatnonzero(env.e_bullet_map).tolist())
    active.extend(cell * 6 + 3 for cell in np.flatnonzero(env.f_bullet_map).tolist())
    return active


FEATURES: dict[str, Features] = {
    "asterix": asterix_features,
    "breakout": breakout_features,
    "freeway": freeway_features,
    "seaquest": seaquest_features,
    "space_invaders": space_invaders_features,
}
