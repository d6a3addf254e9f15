"""A memo of the first pass's cdf intervals, keyed on an observation's live inputs, exactly.

The first pass (`certified.first_pass`) is a function of the list of live active inputs alone, so
its intervals can be remembered and reused when the same list comes again (freeway's cars cycle,
and a chicken that waits sees the same road many times). The key is the whole list, compared entry
by entry: a hash only chooses where to look. Lists longer than KEY_LIMIT are not remembered; when
half the slots are taken the memo is emptied (the repeats that pay are mostly within an episode).
"""

from __future__ import annotations

import numpy as np

from evalfarm.envs.weight_edits import certified
from evalfarm.envs.weight_edits.jit import jit_inline

CAPACITY = 1 << 14
KEY_LIMIT = 96
_PROBES = 8
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
MISS = -1  # `find`: not there, and nowhere to put it
Slot = int | np.int64  # a slot index (an int64 in compiled code)


def new_memo() -> tuple[np.ndarray, ...]:
    """Empty memo arrays: keys, key lengths (0 for an empty slot), hashes, intervals, fill count."""
    return (
        np.zeros((CAPACITY, KEY_LIMIT), dtype=np.int16),
        np.zeros(CAPACITY, dtype=np.int64),
        np.zeros(CAPACITY, dtype=np.uint64),
        np.zeros((CAPACITY, 2, certified.ACTIONS - 1)),
        np.zeros(1, dtype=np.int64),
    )


@jit_inline
def _hash(rows: np.ndarray, count: int) -> np.uint64:
    value = np.uint64(count)
    for t in range(count):
        value = value * _MULTIPLIER + np.uint64(rows[t] + 1)
    return value ^ (value >> np.uint64(29))


@jit_inline
def _same(keys: np.ndarray, slot: Slot, rows: np.ndarray, count: int) -> bool:
    for t in range(count):  # noqa: SIM110 (compiled code: a plain loop, no generator)
        if keys[slot, t] != rows[t]:
            return False
    return True


@jit_inline
def find(rows: np.ndarray, count: int, memo: tuple[np.ndarray, ...]) -> tuple[Slot, bool]:
    """(slot, True) where the key rows[:count] is, else (a free slot for it or MISS, False)."""
    keys, lengths, hashes, _, fill = memo
    if count >= KEY_LIMIT:
        return MISS, False
    if fill[0] >= CAPACITY // 2:
        lengths[:] = 0
        fill[0] = 0
    value = _hash(rows, count)
    slot = np.int64(value & np.uint64(CAPACITY - 1))  # signed: uint64 mixed with int64 would be float
    for _ in range(_PROBES):
        if lengths[slot] == 0:
            return slot, False
        if lengths[slot] == count + 1 and hashes[slot] == value and _same(keys, slot, rows, count):
            return slot, True
        slot = (slot + 1) & (CAPACITY - 1)
    return MISS, False


@jit_inline
def store(slot: Slot, rows: np.ndarray, count: int, memo: tuple[np.ndarray, ...], work: np.ndarray) -> None:
    """Remember the first pass's intervals (in work) under the key rows[:count], at a slot `find` gave."""
    keys, lengths, hashes, intervals, fill = memo
    for t in range(count):
        keys[slot, t] = rows[t]
    lengths[slot] = count + 1
    hashes[slot] = _hash(rows, count)
    for j in range(certified.ACTIONS - 1):
        intervals[slot, 0, j] = work[certified.LOW, j]
        intervals[slot, 1, j] = work[certified.HIGH, j]
    fill[0] += 1


@jit_inline
def load(slot: Slot, memo: tuple[np.ndarray, ...], work: np.ndarray) -> None:
    """Put the intervals remembered at `slot` where `certified.decide` reads them."""
    intervals = memo[3]
    for j in range(certified.ACTIONS - 1):
        work[certified.LOW, j] = intervals[slot, 0, j]
        work[certified.HIGH, j] = intervals[slot, 1, j]
