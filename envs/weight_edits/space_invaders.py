"""Space Invaders on bitmasks: MinAtar 1.0.15's rules without numpy, for the per-step hot loop.

MinAtar keeps three 10x10 float maps and moves them with `np.roll`; here each map is a 100-bit int
(bit `row * 10 + col`), so a roll is two shifts and a count is `int.bit_count`. The game has no
randomness of its own: the environment stream only draws the sticky-action test, one double per
step, so both streams are drawn in bulk. Tests compare this game with MinAtar's step by step.

The observation's relevant inputs are five masked ints (one per output channel that the game
writes), an exact and canonical key for the policy cache.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from envs.weight_edits import games
from envs.weight_edits.deadline import Deadline
from envs.weight_edits.episodes import Episode
from envs.weight_edits.policy import Policy

_ROW9 = ((1 << 10) - 1) << 90
_COL0 = sum(1 << (row * 10) for row in range(10))
_COL9 = _COL0 << 9
_ALL = (1 << 100) - 1
_START_ALIENS = sum(1 << (row * 10 + col) for row in range(4) for col in range(2, 8))
_COLUMNS = [_COL0 << col for col in range(10)]


def _search_order(pos: int) -> list[int]:
    """Columns in the order MinAtar's `_nearest_alien` searches them from `pos` (a stable sort)."""
    return sorted(range(10), key=lambda col: abs(col - pos))


_SEARCH = [_search_order(pos) for pos in range(10)]
_SHOT_COOL_DOWN = 5
_ENEMY_MOVE_INTERVAL = 12
_ENEMY_SHOT_INTERVAL = 10
_FIRST_CHUNK = 64
_CHUNK = 1024
_FIRE, _LEFT, _RIGHT = 5, 1, 3


def _bits(mask: int) -> list[int]:
    """Indices of the set bits of `mask`, ascending."""
    found = []
    while mask:
        low = mask & -mask
        found.append(low.bit_length() - 1)
        mask ^= low
    return found


class Game:
    """The state of one episode; `act` is `space_invaders.Env.act` (ramping off)."""

    def __init__(self) -> None:
        self.pos = 5
        self.friendly = 0
        self.enemy = 0
        self.aliens = _START_ALIENS
        self.alien_dir = -1
        self.alien_move_timer = _ENEMY_MOVE_INTERVAL
        self.alien_shot_timer = _ENEMY_SHOT_INTERVAL
        self.shot_timer = 0

    def act(self, action: int) -> tuple[int, bool]:
        """One step; returns (reward, terminal)."""
        if action == _FIRE and self.shot_timer == 0:
            self.friendly |= 1 << (90 + self.pos)
            self.shot_timer = _SHOT_COOL_DOWN
        elif action == _LEFT:
            self.pos = max(0, self.pos - 1)
        elif action == _RIGHT:
            self.pos = min(9, self.pos + 1)
        cannon = 1 << (90 + self.pos)
        self.friendly >>= 10  # rows move up; the row that wraps to the bottom is cleared
        self.enemy = (self.enemy << 10) & _ALL  # rows move down; the row that wraps to the top is cleared
        terminal = bool(self.enemy & cannon) or bool(self.aliens & cannon)
        if self.alien_move_timer == 0:
            terminal |= self._move_aliens(cannon)
        if self.alien_shot_timer == 0:
            self.alien_shot_timer = _ENEMY_SHOT_INTERVAL
            self._shoot()
        kills = self.aliens & self.friendly
        self.aliens ^= kills
        self.friendly ^= kills
        self.shot_timer -= self.shot_timer > 0
        self.alien_move_timer -= 1
        self.alien_shot_timer -= 1
        if not self.aliens:
            self.aliens = _START_ALIENS
        return kills.bit_count(), terminal

    def _move_aliens(self, cannon: int) -> bool:
        aliens = self.aliens
        terminal = False
        self.alien_move_timer = min(aliens.bit_count(), _ENEMY_MOVE_INTERVAL)
        if (aliens & _COL0 and self.alien_dir < 0) or (aliens & _COL9 and self.alien_dir > 0):
            self.alien_dir = -self.alien_dir
            terminal = bool(aliens & _ROW9)
            aliens = ((aliens & ~_ROW9) << 10) | ((aliens & _ROW9) >> 90)
        elif self.alien_dir > 0:
            aliens = ((aliens & ~_COL9) << 1) | ((aliens & _COL9) >> 9)
        else:
            aliens = ((aliens & ~_COL0) >> 1) | ((aliens & _COL0) << 9)
        self.aliens = aliens
        return terminal or bool(aliens & cannon)

    def _shoot(self) -> None:
        # The lowest alien of the nearest non-empty column fires (the map is never empty here).
        for col in _SEARCH[self.pos]:
            column = self.aliens & _COLUMNS[col]
            if column:
                self.enemy |= 1 << (column.bit_length() - 1)
                return
        raise TypeError("'NoneType' object is not subscriptable")  # what MinAtar would raise

    def active(self) -> list[int]:
        """Active flat observation indices: cannon 0, aliens 1, 2 and 4, enemy bullets 1, friendly 3."""
        active = [(90 + self.pos) * 6]
        for cell in _bits(self.aliens):
            active += (cell * 6 + 1, cell * 6 + 2, cell * 6 + 4)
        active.extend(cell * 6 + 1 for cell in _bits(self.enemy))
        active.extend(cell * 6 + 3 for cell in _bits(self.friendly))
        return active


def _channel_masks(policy: Policy) -> list[int]:
    """Per output channel 0-4, the cells whose input reaches a non-zero W1 row."""
    relevant = policy.relevant_mask.reshape(100, 6)
    return [sum(1 << cell for cell in range(100) if relevant[cell, channel]) for channel in range(5)]


class SpaceInvadersRunner:
    """Plays episodes of space_invaders under one policy."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.masks = _channel_masks(policy)
        self.env_random = np.random.RandomState(games.ENV_SEED_BASE)
        self.action_random = np.random.RandomState(games.ACTION_SEED_BASE)

    def _cdf(self, game: Game) -> list[float]:
        if self.policy.constant is not None:
            return self.policy.constant
        cannon, aliens_or_bullets, aliens, friendly, trails = self.masks
        key = (
            (1 << (90 + game.pos)) & cannon,
            (game.aliens | game.enemy) & aliens_or_bullets,
            game.aliens & aliens,
            game.friendly & friendly,
            game.aliens & trails,
        )
        return self.policy.cached(key, game.active)

    def run(self, episode: int, deadline: Deadline) -> Episode:
        """Score and length of episode `episode`."""
        self.env_random.seed(games.ENV_SEED_BASE + episode)
        self.action_random.seed(games.ACTION_SEED_BASE + episode)
        game = Game()
        last_action = 0
        score = 0.0
        # The game draws nothing of its own: both streams are drawn in bulk, a small block first.
        size, base = _FIRST_CHUNK, 0
        sticky = self.env_random.random_sample(size).tolist()
        uniforms = self.action_random.random_sample(size).tolist()
        for step in range(games.MAX_STEPS):
            index = step - base
            if index == size:
                deadline.check()
                size, base, index = _CHUNK, step, 0
                sticky = self.env_random.random_sample(size).tolist()
                uniforms = self.action_random.random_sample(size).tolist()
            action = bisect_right(self._cdf(game), uniforms[index])
            if sticky[index] < games.STICKY_ACTION_PROB:
                action = last_action
            last_action = action
            reward, terminal = game.act(action)
            score += float(reward)
            if terminal:
                break
        return score, step + 1
