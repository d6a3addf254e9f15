"""Freeway played for many episodes in lockstep with numpy, replaying each episode's streams exactly.

Every freeway episode lasts exactly 2501 steps (MinAtar's `time_limit` of 2500), so a block of
episodes can advance together: one numpy operation per rule for the whole block. Each episode keeps
its own two random streams, drawn in bulk from `RandomState(1729 + e)` and `RandomState(7919 + e)`:

- the action stream draws one uniform per step (`choice`), so its 2501 uniforms are drawn up front;
- the environment stream draws the sticky test (one double, two 32-bit words) on every step, and at
  reset and after each crossing `randint(1, 6, 8)` (masked rejection on 32-bit words) and `rand(8)`.
  It is drawn up front as raw 32-bit words and consumed with a pointer per episode, with the same
  bit manipulations numpy uses to make doubles and bounded integers.

The game rules are MinAtar 1.0.15's `freeway.Env.act`, rewritten over arrays (tests compare both step
by step). The policy is evaluated as the reference does on a cache miss, keyed on the observation's
inputs that reach non-zero W1 rows (a base-11 code per episode: which column each of the 17 objects
occupies, 0 where its input is irrelevant).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from envs.base import EnvError
from envs.weight_edits import games
from envs.weight_edits.deadline import Deadline
from envs.weight_edits.episodes import Episode
from envs.weight_edits.policy import MAX_CACHE_ENTRIES, Policy

STEPS = 2501
BLOCK = 256  # episodes advanced together: bounds memory (~12 MB of streams per block)
_CARS = 8
_PLAYER_SPEED = 3
# 32-bit words per episode: 2 per step for the sticky test plus at most ~94 re-randomisations of
# ~29 words each (crossing needs 27 steps); the slack makes running out practically impossible,
# and running out raises StreamExhausted so the caller can fall back to the per-episode runner.
_WORDS = 2 * STEPS + 6400
_CHECK_EVERY = 128
_UP, _DOWN = 2, 4
_POWERS = 11 ** np.arange(1 + 2 * _CARS, dtype=np.int64)
_CAR_ROWS = np.arange(1, _CARS + 1)


class StreamExhausted(EnvError):
    """An episode needed more pre-drawn random words than were drawn."""


def _double(high: Any, low: Any) -> Any:
    """numpy's 53-bit double from two 32-bit words (exact in float64)."""
    return ((high >> 5) * 67108864.0 + (low >> 6)) / 9007199254740992.0


class _Stream:
    """One episode's environment words with a read pointer, for the rare scalar draws."""

    def __init__(self, words: np.ndarray, pointer: np.ndarray, row: int) -> None:
        self.words, self.pointer, self.row = words, pointer, row
        self.position = int(pointer[row])

    def word(self) -> int:
        if self.position >= self.words.shape[1]:
            raise StreamExhausted
        value = int(self.words[self.row, self.position])
        self.position += 1
        return value

    def randomize(self) -> list[int]:
        """`randint(1, 6, 8) * sign(rand(8) - 0.5)`: the signed car speeds."""
        speeds = []
        for _ in range(_CARS):
            value = self.word() & 7
            while value > 4:  # masked rejection for a range of 5
                value = self.word() & 7
            speeds.append(value + 1)
        signed = []
        for speed in speeds:
            uniform = _double(self.word(), self.word())
            signed.append(speed * ((uniform > 0.5) - (uniform < 0.5)))
        self.pointer[self.row] = self.position
        return signed


class _Block:
    """The state of a block of episodes; arrays indexed by (episode in block[, car])."""

    def __init__(self, episodes: range) -> None:
        count = len(episodes)
        self.rows = np.arange(count)
        self.uniforms = np.empty((count, STEPS))
        self.words = np.empty((count, _WORDS), dtype=np.uint32)
        generator = np.random.RandomState(games.ACTION_SEED_BASE)
        for row, episode in enumerate(episodes):
            generator.seed(games.ACTION_SEED_BASE + episode)
            self.uniforms[row] = generator.random_sample(STEPS)
            generator.seed(games.ENV_SEED_BASE + episode)
            self.words[row] = generator.randint(0, 2**32, size=_WORDS, dtype=np.uint32)
        self.pointer = np.zeros(count, dtype=np.int64)
        self.speed = np.array([_Stream(self.words, self.pointer, row).randomize() for row in range(count)])
        self.speed = self.speed.reshape(count, _CARS).astype(np.int64)
        self.x = np.zeros((count, _CARS), dtype=np.int64)
        self.timer = np.abs(self.speed)
        self.pos = np.full(count, 9, dtype=np.int64)
        self.move_timer = np.full(count, _PLAYER_SPEED, dtype=np.int64)
        self.last_action = np.zeros(count, dtype=np.int64)
        self.score = np.zeros(count, dtype=np.int64)

    def trails(self) -> np.ndarray:
        """Column of each car's trail (behind it, wrapping)."""
        back = np.where(self.speed > 0, self.x - 1, self.x + 1)
        return np.where(back < 0, 9, np.where(back > 9, 0, back))

    def features(self, trails: np.ndarray) -> np.ndarray:
        """Active flat observation indices of every episode: chicken, then cars, then trails."""
        active = np.empty((len(self.pos), 1 + 2 * _CARS), dtype=np.intp)
        active[:, 0] = (self.pos * 10 + 4) * 6
        active[:, 1 : 1 + _CARS] = (_CAR_ROWS * 10 + self.x) * 6 + 1
        active[:, 1 + _CARS :] = (_CAR_ROWS * 10 + trails) * 6 + 4
        return active

    def sticky_uniforms(self) -> np.ndarray:
        """Each episode's sticky-action double for this step."""
        if self.pointer.max() + 2 > _WORDS:
            raise StreamExhausted
        high = self.words[self.rows, self.pointer].astype(np.int64)
        low = self.words[self.rows, self.pointer + 1].astype(np.int64)
        self.pointer += 2
        return _double(high, low)

    def act(self, action: np.ndarray) -> None:
        """One `freeway.Env.act` for every episode (sticky action already applied)."""
        can_move = self.move_timer == 0
        up = can_move & (action == _UP)
        down = can_move & (action == _DOWN)
        self.move_timer[up | down] = _PLAYER_SPEED
        self.pos = np.where(
            up, np.maximum(self.pos - 1, 0), np.where(down, np.minimum(self.pos + 1, 9), self.pos)
        )
        for row in np.flatnonzero(self.pos == 0).tolist():
            self.score[row] += 1
            self.speed[row] = _Stream(self.words, self.pointer, row).randomize()
            self.timer[row] = np.abs(self.speed[row])
            self.pos[row] = 9
        self._move_cars()
        self.move_timer -= self.move_timer > 0

    def _move_cars(self) -> None:
        # Only the car in the chicken's row can hit it, before or after it moves; a hit sends the
        # chicken to row 9 where no car drives, so the order of the reference's loop does not matter.
        in_lane = (self.pos >= 1) & (self.pos <= _CARS)
        lane = np.clip(self.pos - 1, 0, _CARS - 1)
        hit = in_lane & (self.x[self.rows, lane] == 4)
        moving = self.timer == 0
        self.x = np.where(moving, self.x + np.where(self.speed > 0, 1, -1), self.x)
        self.x[self.x < 0] = 9
        self.x[self.x > 9] = 0
        self.timer = np.where(moving, np.abs(self.speed), self.timer - 1)
        hit |= in_lane & moving[self.rows, lane] & (self.x[self.rows, lane] == 4)
        self.pos[hit] = 9


class _CodedPolicy:
    """The policy's cdfs for a block, memoised on each episode's base-11 code of relevant inputs."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        mask = policy.relevant_mask.reshape(10, 10, 6)
        self.chicken = mask[:, 4, 0]
        self.cars = mask[1 : _CARS + 1, :, 1]
        self.trails = mask[1 : _CARS + 1, :, 4]
        self.car_index = np.arange(_CARS)
        self.codes: dict[int, int] = {}
        self.table = np.empty((MAX_CACHE_ENTRIES + BLOCK, 6))

    def cdfs(self, block: _Block) -> np.ndarray:
        """One cdf row per episode of the block."""
        if self.policy.constant is not None:
            return np.asarray(self.policy.constant)[None, :]
        trails = block.trails()
        codes = self._codes(block, trails)
        unique, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        if len(self.codes) + len(unique) > MAX_CACHE_ENTRIES:
            self.codes.clear()
        rows = np.empty(len(unique), dtype=np.int64)
        active = None
        for position, code in enumerate(unique.tolist()):
            row = self.codes.get(code)
            if row is None:
                if active is None:
                    active = block.features(trails)
                row = self.codes[code] = len(self.codes)
                self.table[row] = self.policy.compute(active[first[position]])
            rows[position] = row
        return self.table[rows[inverse]]

    def _codes(self, block: _Block, trails: np.ndarray) -> np.ndarray:
        x, pos = block.x, block.pos
        values = np.empty((len(pos), 1 + 2 * _CARS), dtype=np.int64)
        values[:, 0] = np.where(self.chicken[pos], pos + 1, 0)
        values[:, 1 : 1 + _CARS] = np.where(self.cars[self.car_index, x], x + 1, 0)
        values[:, 1 + _CARS :] = np.where(self.trails[self.car_index, trails], trails + 1, 0)
        return values @ _POWERS


def _run_block(coded: _CodedPolicy, episodes: range, deadline: Deadline) -> list[Episode]:
    block = _Block(episodes)
    for step in range(STEPS):
        if step % _CHECK_EVERY == 0:
            deadline.check()
        cdfs = coded.cdfs(block)
        action = (cdfs <= block.uniforms[:, step, None]).sum(axis=1)
        action = np.where(block.sticky_uniforms() < games.STICKY_ACTION_PROB, block.last_action, action)
        block.last_action = action
        block.act(action)
    return [(float(score), STEPS) for score in block.score.tolist()]


def run_freeway(policy: Policy, episodes: range, deadline: Deadline) -> list[Episode]:
    """Scores and lengths of freeway `episodes`, BLOCK episodes at a time, sharing one policy cache."""
    coded = _CodedPolicy(policy)
    results: list[Episode] = []
    for start in range(episodes.start, episodes.stop, BLOCK):
        results += _run_block(coded, range(start, min(start + BLOCK, episodes.stop)), deadline)
    return results
