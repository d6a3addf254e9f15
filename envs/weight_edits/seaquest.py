"""Seaquest, MinAtar 1.0.15's rules (`seaquest.Env`, ramping off) compiled, on a flat int64 state.

MinAtar keeps five Python lists of small lists (friendly bullets, enemy bullets, fish, enemy subs,
divers), walks most of them with `reversed()` while removing from them, and removes with
`list.remove`, which takes out the *first equal* element, not necessarily the one being visited.
Both are reproduced as they behave: each list is a block of fixed-width rows with a length, a
reversed walk re-checks its index against the current length before every visit (CPython's
`listreviter`), and a removal deletes the first row equal to the visited one. No element is ever
shared between lists, so equal values behave exactly like the same object, except for an enemy sub
after its own removal: MinAtar keeps using that object (it may still shoot), so the visited sub is
also held apart and followed wherever it ends up (deleted, or moved down a row when an equal one
before it was removed instead).

A list past its capacity (far beyond what the game reaches: spawns are spaced out and everything
leaves the board within 60 steps) flags ESCAPE for the per-episode MinAtar runner to replay.
"""

from __future__ import annotations

import numpy as np

from evalfarm.envs.weight_edits import mt19937
from evalfarm.envs.weight_edits.jit import jit

(TERMINAL, ESCAPE, OXYGEN, DIVER_COUNT, SUB_X, SUB_Y, SUB_RIGHT, ENEMY_TIMER, DIVER_TIMER, SHOT_TIMER,
 SURFACE) = range(11)  # fmt: skip
# The lists: where their length is kept, where their rows start, row width and capacity.
_LENGTHS = 11
BULLETS, ENEMY_BULLETS, FISH, SUBS, DIVERS = range(5)
_WIDTHS = (3, 3, 4, 5, 4)  # [x, y, right], [x, y, right], [x, y, right, move timer] (+ shot timer), ...
_CAPACITIES = (16, 32, 16, 16, 16)
_STARTS = (16, 64, 160, 224, 304)  # 16 scalars first; each list then width x capacity
_SCRATCH, _HELD = 368, 376  # two rows of working memory
SIZE = 384
_X, _Y, _DIR, _MOVE, _SHOT = range(5)
_MAX_OXYGEN = 200
_ENEMY_SPAWN_SPEED = 20
_DIVER_SPAWN_SPEED = 30
_MOVE_SPEED = 5  # enemies; divers move on their own interval of the same value
_DIVER_MOVE = 5
_SHOT_COOL_DOWN = 5
_ENEMY_SHOT_INTERVAL = 10
_FIRE, _LEFT, _UP, _RIGHT, _DOWN = 5, 1, 2, 3, 4


@jit
def _row(kind: int, index: int) -> int:
    return _STARTS[kind] + index * _WIDTHS[kind]


@jit
def _append(st: np.ndarray, kind: int) -> int:
    """Room for one more row at the end of a list (its start), or -1 with ESCAPE flagged."""
    length = st[_LENGTHS + kind]
    if length == _CAPACITIES[kind]:
        st[ESCAPE] = 1
        return -1
    st[_LENGTHS + kind] = length + 1
    return _row(kind, length)


@jit
def _remove_equal(st: np.ndarray, kind: int, values: np.ndarray) -> int:
    """`list.remove(values)`: delete the first row equal to `values`; returns its index (-1 if none)."""
    width, length = _WIDTHS[kind], st[_LENGTHS + kind]
    for index in range(length):
        base = _row(kind, index)
        same = True
        for field in range(width):
            if st[base + field] != values[field]:
                same = False
                break
        if same:
            for later in range(base, _row(kind, length - 1)):
                st[later] = st[later + width]
            st[_LENGTHS + kind] = length - 1
            return index
    return -1


@jit
def _remove_row(st: np.ndarray, kind: int, index: int, scratch: np.ndarray) -> int:
    """`list.remove(item)` for the item at `index`; returns the index of the row deleted."""
    base = _row(kind, index)
    for field in range(_WIDTHS[kind]):
        scratch[field] = st[base + field]
    return _remove_equal(st, kind, scratch)


@jit
def _at(st: np.ndarray, kind: int, index: int, x: int, y: int) -> bool:
    base = _row(kind, index)
    return st[base + _X] == x and st[base + _Y] == y


@jit
def _on_sub(st: np.ndarray, kind: int, index: int) -> bool:
    return _at(st, kind, index, st[SUB_X], st[SUB_Y])


@jit
def _shot_by_bullet(st: np.ndarray, kind: int, index: int, scratch: np.ndarray) -> bool:
    """An enemy that has just moved onto a friendly bullet: both removed (the first such bullet)."""
    base = _row(kind, index)
    x, y = st[base + _X], st[base + _Y]
    for bullet in range(st[_LENGTHS + BULLETS]):
        if _at(st, BULLETS, bullet, x, y):
            _remove_row(st, kind, index, scratch)
            _remove_row(st, BULLETS, bullet, scratch)
            return True
    return False


@jit
def reset(st: np.ndarray, rng: np.ndarray) -> None:
    """`reset()`: the sub at (5, 0) facing left, full oxygen, empty lists; it draws nothing."""
    st[:] = 0
    st[OXYGEN] = _MAX_OXYGEN
    st[SUB_X] = 5
    st[ENEMY_TIMER] = _ENEMY_SPAWN_SPEED
    st[DIVER_TIMER] = _DIVER_SPAWN_SPEED
    st[SURFACE] = 1


@jit
def _place(st: np.ndarray, base: int, right: bool, y: int, timer: int) -> None:
    """A new enemy or diver at the edge it starts from, moving away from it."""
    st[base + _X] = 0 if right else 9
    st[base + _Y] = y
    st[base + _DIR] = right
    st[base + _MOVE] = timer


@jit
def _spawn_enemy(st: np.ndarray, rng: np.ndarray) -> None:
    """`_spawn_enemy`: nothing spawns in a row where an enemy moves the other way."""
    right = mt19937.next_double(rng) < 1 / 2
    is_sub = mt19937.next_double(rng) < 1 / 3
    y = mt19937.randint(rng, 1, 9)
    for kind in (SUBS, FISH):
        for index in range(st[_LENGTHS + kind]):
            base = _row(kind, index)
            if st[base + _Y] == y and st[base + _DIR] != right:
                return
    kind = SUBS if is_sub else FISH
    base = _append(st, kind)
    if base >= 0:
        _place(st, base, right, y, _MOVE_SPEED)
        if is_sub:
            st[base + _SHOT] = _ENEMY_SHOT_INTERVAL


@jit
def _spawn_diver(st: np.ndarray, rng: np.ndarray) -> None:
    right = mt19937.next_double(rng) < 1 / 2
    y = mt19937.randint(rng, 1, 9)
    base = _append(st, DIVERS)
    if base >= 0:
        _place(st, base, right, y, _DIVER_MOVE)


@jit
def _player(st: np.ndarray, action: int) -> None:
    if action == _FIRE and st[SHOT_TIMER] == 0:
        base = _append(st, BULLETS)
        if base >= 0:
            st[base + _X], st[base + _Y], st[base + _DIR] = st[SUB_X], st[SUB_Y], st[SUB_RIGHT]
        st[SHOT_TIMER] = _SHOT_COOL_DOWN
    elif action == _LEFT:
        st[SUB_X] = max(0, st[SUB_X] - 1)
        st[SUB_RIGHT] = 0
    elif action == _RIGHT:
        st[SUB_X] = min(9, st[SUB_X] + 1)
        st[SUB_RIGHT] = 1
    elif action == _UP:
        st[SUB_Y] = max(0, st[SUB_Y] - 1)
    elif action == _DOWN:
        st[SUB_Y] = min(8, st[SUB_Y] + 1)


@jit
def _step(st: np.ndarray, kind: int, index: int) -> bool:
    """Move an element one column its way; True when it left the board."""
    base = _row(kind, index)
    st[base + _X] += 1 if st[base + _DIR] else -1
    return st[base + _X] < 0 or st[base + _X] > 9


@jit
def _friendly_bullets(st: np.ndarray, scratch: np.ndarray) -> int:
    reward = 0
    index = st[_LENGTHS + BULLETS] - 1
    while 0 <= index < st[_LENGTHS + BULLETS]:
        bullet, index = index, index - 1
        if _step(st, BULLETS, bullet):
            _remove_row(st, BULLETS, bullet, scratch)
            continue
        base = _row(BULLETS, bullet)
        x, y = st[base + _X], st[base + _Y]
        for kind in (FISH, SUBS):
            hit = -1
            for enemy in range(st[_LENGTHS + kind]):
                if _at(st, kind, enemy, x, y):
                    hit = enemy
                    break
            if hit >= 0:
                _remove_row(st, kind, hit, scratch)
                _remove_row(st, BULLETS, bullet, scratch)
                reward += 1
                break
    return reward


@jit
def _divers(st: np.ndarray, scratch: np.ndarray) -> None:
    index = st[_LENGTHS + DIVERS] - 1
    while 0 <= index < st[_LENGTHS + DIVERS]:
        diver, index = index, index - 1
        base = _row(DIVERS, diver)
        if _on_sub(st, DIVERS, diver) and st[DIVER_COUNT] < 6:
            _remove_row(st, DIVERS, diver, scratch)
            st[DIVER_COUNT] += 1
        elif st[base + _MOVE] == 0:
            st[base + _MOVE] = _DIVER_MOVE
            if _step(st, DIVERS, diver):
                _remove_row(st, DIVERS, diver, scratch)
            elif _on_sub(st, DIVERS, diver) and st[DIVER_COUNT] < 6:
                _remove_row(st, DIVERS, diver, scratch)
                st[DIVER_COUNT] += 1
        else:
            st[base + _MOVE] -= 1


@jit
def _enemy_sub(st: np.ndarray, sub: int, scratch: np.ndarray, held: np.ndarray) -> int:
    """One visit of the enemy-sub walk; `held` is the visited sub, followed after its removal."""
    reward = 0
    base = _row(SUBS, sub)
    for field in range(5):
        held[field] = st[base + field]
    where = sub  # the row holding the visited sub, or -1 once it is out of the list
    if held[_X] == st[SUB_X] and held[_Y] == st[SUB_Y]:
        st[TERMINAL] = 1
    if held[_MOVE] == 0:
        held[_MOVE] = _MOVE_SPEED
        held[_X] += 1 if held[_DIR] else -1
        _put(st, where, held)
        removed = -2
        if held[_X] < 0 or held[_X] > 9:
            removed = _remove_equal(st, SUBS, held)
        elif held[_X] == st[SUB_X] and held[_Y] == st[SUB_Y]:
            st[TERMINAL] = 1
        else:
            for bullet in range(st[_LENGTHS + BULLETS]):
                if _at(st, BULLETS, bullet, held[_X], held[_Y]):
                    removed = _remove_equal(st, SUBS, held)
                    _remove_row(st, BULLETS, bullet, scratch)
                    reward += 1
                    break
        if removed >= 0:
            where = -1 if removed == where else where - 1
    else:
        held[_MOVE] -= 1
    if held[_SHOT] == 0:
        held[_SHOT] = _ENEMY_SHOT_INTERVAL
        shot = _append(st, ENEMY_BULLETS)
        if shot >= 0:
            st[shot + _X], st[shot + _Y], st[shot + _DIR] = held[_X], held[_Y], held[_DIR]
    else:
        held[_SHOT] -= 1
    _put(st, where, held)
    return reward


@jit
def _put(st: np.ndarray, where: int, held: np.ndarray) -> None:
    """Write the visited sub back to its row, if it is still in the list."""
    if where >= 0:
        base = _row(SUBS, where)
        for field in range(5):
            st[base + field] = held[field]


@jit
def _enemy_subs(st: np.ndarray, scratch: np.ndarray, held: np.ndarray) -> int:
    reward = 0
    index = st[_LENGTHS + SUBS] - 1
    while 0 <= index < st[_LENGTHS + SUBS]:
        sub, index = index, index - 1
        reward += _enemy_sub(st, sub, scratch, held)
    return reward


@jit
def _enemy_bullets(st: np.ndarray, scratch: np.ndarray) -> None:
    index = st[_LENGTHS + ENEMY_BULLETS] - 1
    while 0 <= index < st[_LENGTHS + ENEMY_BULLETS]:
        bullet, index = index, index - 1
        if _on_sub(st, ENEMY_BULLETS, bullet):
            st[TERMINAL] = 1
        if _step(st, ENEMY_BULLETS, bullet):
            _remove_row(st, ENEMY_BULLETS, bullet, scratch)
        elif _on_sub(st, ENEMY_BULLETS, bullet):
            st[TERMINAL] = 1


@jit
def _fish(st: np.ndarray, scratch: np.ndarray) -> int:
    reward = 0
    index = st[_LENGTHS + FISH] - 1
    while 0 <= index < st[_LENGTHS + FISH]:
        fish, index = index, index - 1
        base = _row(FISH, fish)
        if _on_sub(st, FISH, fish):
            st[TERMINAL] = 1
        if st[base + _MOVE] == 0:
            st[base + _MOVE] = _MOVE_SPEED
            if _step(st, FISH, fish):
                _remove_row(st, FISH, fish, scratch)
            elif _on_sub(st, FISH, fish):
                st[TERMINAL] = 1
            elif _shot_by_bullet(st, FISH, fish, scratch):
                reward += 1
        else:
            st[base + _MOVE] -= 1
    return reward


@jit
def _surface(st: np.ndarray) -> int:
    """`_surface()`: six divers score the oxygen left; the count then drops by one (to -1 from 6)."""
    st[SURFACE] = 1
    reward = 0
    if st[DIVER_COUNT] == 6:
        st[DIVER_COUNT] = 0
        reward = st[OXYGEN] * 10 // _MAX_OXYGEN
    st[OXYGEN] = _MAX_OXYGEN
    st[DIVER_COUNT] -= 1
    return reward


@jit
def act(st: np.ndarray, rng: np.ndarray, action: int) -> int:
    """`act(action)`: the reward; st[TERMINAL] is set when the episode ends."""
    scratch = st[_SCRATCH:_HELD]
    held = st[_HELD:SIZE]
    if st[ENEMY_TIMER] == 0:
        _spawn_enemy(st, rng)
        st[ENEMY_TIMER] = _ENEMY_SPAWN_SPEED
    if st[DIVER_TIMER] == 0:
        _spawn_diver(st, rng)
        st[DIVER_TIMER] = _DIVER_SPAWN_SPEED
    _player(st, action)
    reward = _friendly_bullets(st, scratch)
    _divers(st, scratch)
    reward += _enemy_subs(st, scratch, held)
    _enemy_bullets(st, scratch)
    reward += _fish(st, scratch)
    for timer in (ENEMY_TIMER, DIVER_TIMER, SHOT_TIMER):
        if st[timer] > 0:
            st[timer] -= 1
    if st[OXYGEN] <= 0:
        st[TERMINAL] = 1
    if st[SUB_Y] > 0:
        st[OXYGEN] -= 1
        st[SURFACE] = 0
    elif not st[SURFACE]:
        if st[DIVER_COUNT] == 0:
            st[TERMINAL] = 1
        else:
            reward += _surface(st)
    return reward


@jit
def _element(st: np.ndarray, kind: int, index: int, channels: int, active: np.ndarray, count: int) -> int:
    """An enemy or diver: its cell in the channels given (a bitmask), its trail (if on the board) in 4."""
    base = _row(kind, index)
    x, y = st[base + _X], st[base + _Y]
    for channel in (1, 2):
        if channels >> channel & 1:
            active[count] = (y * 10 + x) * 6 + channel
            count += 1
    back = x - 1 if st[base + _DIR] else x + 1
    if 0 <= back <= 9:
        active[count] = (y * 10 + back) * 6 + 4
        count += 1
    return count


@jit
def features(st: np.ndarray, active: np.ndarray) -> int:
    """Active observation inputs: sub (channel 0, its back also 4), enemies (1, 2), divers (2),
    bullets (friendly 3, enemy 1), oxygen and diver gauges in row 9 (5)."""
    x, y = st[SUB_X], st[SUB_Y]
    back = x - 1 if st[SUB_RIGHT] else x + 1
    if back > 9:  # MinAtar's state() would raise IndexError: not reachable, never modelled
        st[ESCAPE] = 1
    if back < 0:  # numpy's negative index, as state() writes it
        back += 10
    active[0] = (y * 10 + x) * 6
    active[1] = (y * 10 + back) * 6
    active[2] = (y * 10 + back) * 6 + 4
    count = 3
    for col in range(min(10, max(0, st[OXYGEN]) * 10 // _MAX_OXYGEN)):
        active[count] = (90 + col) * 6 + 5
        count += 1
    for col in range(max(0, 9 - st[DIVER_COUNT]), 9):  # state[9, 9 - count : 9] (empty when count < 0)
        active[count] = (90 + col) * 6 + 5
        count += 1
    for kind, channel in ((BULLETS, 3), (ENEMY_BULLETS, 1)):
        for index in range(st[_LENGTHS + kind]):
            base = _row(kind, index)
            active[count] = (st[base + _Y] * 10 + st[base + _X]) * 6 + channel
            count += 1
    for kind, channels in ((FISH, 6), (SUBS, 6), (DIVERS, 4)):
        for index in range(st[_LENGTHS + kind]):
            count = _element(st, kind, index, channels, active, count)
    return count
