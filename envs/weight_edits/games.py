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


def _enemies(active: list[int], enemies: list[list[Any]]) -> None:
    """Fish and enemy subs: their cell in channels 1 and 2, their trail (if in bounds) in 4."""
    for enemy in enemies:
        x, row, right = enemy[0], enemy[1], enemy[2]
        base = row * 60 + x * 6  # the hot loop: cells inlined
        active += (base + 1, base + 2)
        back = x - 1 if right else x + 1
        if 0 <= back <= 9:
            active.append(row * 60 + back * 6 + 4)


# Row 9 gauges, indexed by how many columns they fill: the oxygen gauge from the left; the diver
# gauge by diver count, with Python's slice rules (a negative count, which MinAtar reaches after a
# surfacing with six divers, is an empty slice).
_OXYGEN_GAUGES = [[(90 + col) * 6 + 5 for col in _COLUMNS[0:filled]] for filled in range(11)]
_DIVER_GAUGES = {count: [(90 + col) * 6 + 5 for col in _COLUMNS[9 - count : 9]] for count in range(-3, 7)}


def _diver_gauge(count: int) -> list[int]:
    found = _DIVER_GAUGES.get(count)
    return found if found is not None else [(90 + col) * 6 + 5 for col in _COLUMNS[9 - count : 9]]


def seaquest_features(env: Any) -> list[int]:
    """Sub (0, its back also 4), enemies (1, 2), divers (2), bullets (1, 3), gauges (5)."""
    back = env.sub_x - 1 if env.sub_or else env.sub_x + 1
    if back < 0:  # numpy's negative index, as `state()` would write it
        back += 10
    sub_row = env.sub_y * 60
    active = [sub_row + env.sub_x * 6, sub_row + back * 6, sub_row + back * 6 + 4]
    active += _OXYGEN_GAUGES[min(10, max(0, env.oxygen) * 10 // _OXYGEN_MAX)]
    active += _diver_gauge(env.diver_count)
    for bullet in env.f_bullets:
        active.append(bullet[1] * 60 + bullet[0] * 6 + 3)
    for bullet in env.e_bullets:
        active.append(bullet[1] * 60 + bullet[0] * 6 + 1)
    _enemies(active, env.e_fish)
    _enemies(active, env.e_subs)
    for diver in env.divers:
        x, row, right = diver[0], diver[1], diver[2]
        active.append(row * 60 + x * 6 + 2)
        back = x - 1 if right else x + 1
        if 0 <= back <= 9:
            active.append(row * 60 + back * 6 + 4)
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
