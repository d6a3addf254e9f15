"""The answer's policy: the reference forward pass and softmax, memoised on what can change them.

Exactness: on a cache miss the logits are computed exactly as the reference grader does, on the full
observation vector, with the same numpy calls and shapes (a batched matmul would round differently).
The cache key is the set of active inputs whose W1 row is non-zero: an input whose row is all zero
adds exact zeros to every hidden pre-activation, so two observations with the same key give the same
bits. The cached value is the cumulative distribution `RandomState.choice` would search, so sampling
is one uniform draw on the same stream and a right-sided search.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable

import numpy as np

from evalfarm.envs.weight_edits.edits import Tensors

OBSERVATION_SIZE = 600
# Entries kept before the cache is emptied: bounds memory (at most ~1.5 kB an entry, a set of a few
# dozen ints and six floats, so ~75 MB) while the observations of typical answers fit many times over.
MAX_CACHE_ENTRIES = 50_000


def logits(weights: Tensors, state: np.ndarray) -> np.ndarray:
    """The float32 logits of the reference's 600-32-32-6 tanh network."""
    hidden1 = np.tanh(state @ weights["W1"] + weights["b1"])
    hidden2 = np.tanh(hidden1 @ weights["W2"] + weights["b2"])
    return hidden2 @ weights["W3"] + weights["b3"]


def probabilities(action_logits: np.ndarray) -> np.ndarray:
    """The reference's float64 softmax of float32 logits."""
    shifted = action_logits.astype(np.float64) - np.max(action_logits)
    result = np.exp(shifted)
    result /= result.sum()
    return result


def choice_cdf(action_logits: np.ndarray) -> list[float]:
    """The normalised cumulative distribution `RandomState.choice(6, p=softmax)` searches.

    The same operations as `probabilities` then `choice` (`np.max` and `sum` are these reductions,
    `cumsum` this accumulation), called as ufuncs to skip their Python wrappers.
    """
    result = np.exp(action_logits.astype(np.float64) - _max(action_logits))
    result /= _add(result)
    cdf = _cumulative(result)
    cdf /= cdf[-1]
    return cdf.tolist()


_max = np.maximum.reduce
_add = np.add.reduce
_cumulative = np.add.accumulate


def observation_vector(active: Iterable[int]) -> np.ndarray:
    """The float32 observation with ones at the `active` flat indices (repeats allowed)."""
    state = np.zeros(OBSERVATION_SIZE, dtype=np.float32)
    state[active if isinstance(active, np.ndarray) else np.fromiter(active, dtype=np.intp)] = 1.0
    return state


class Policy:
    """Maps an observation (its active flat indices) to the cdf of its action distribution."""

    def __init__(self, weights: Tensors) -> None:
        self.weights = weights
        rows = np.flatnonzero(np.any(weights["W1"] != 0, axis=1))
        self.relevant_mask = np.zeros(OBSERVATION_SIZE, dtype=bool)
        self.relevant_mask[rows] = True
        self.relevant: frozenset[int] = frozenset(rows.tolist())
        self.constant: list[float] | None = None
        if not self.relevant:
            # No input reaches the network: every observation gives the same distribution.
            self.constant = self.compute(())
        self._cache: dict[Hashable, list[float]] = {}
        self.misses = 0

    def compute(self, active: Iterable[int]) -> list[float]:
        """The cdf for an observation, computed as the reference does (no cache)."""
        return choice_cdf(logits(self.weights, observation_vector(active)))

    def cdf(self, active: list[int]) -> list[float]:
        """The cdf for the observation whose active flat indices are `active`."""
        if self.constant is not None:
            return self.constant
        key = self.relevant.intersection(active)
        found = self._cache.get(key)
        if found is None:
            found = self.lookup_miss(key, active)
        return found

    def cached(self, key: Hashable, make_active: Callable[[], Iterable[int]]) -> list[float]:
        """The cdf under `key`, an exact canonical form of the relevant inputs of an observation whose
        full active indices `make_active()` returns (called only on a miss)."""
        found = self._cache.get(key)
        if found is None:
            found = self.lookup_miss(key, make_active())
        return found

    def lookup_miss(self, key: Hashable, active: Iterable[int]) -> list[float]:
        """Compute and remember the cdf of an observation not seen yet."""
        if len(self._cache) >= MAX_CACHE_ENTRIES:
            self._cache.clear()
        self.misses += 1
        found = self._cache[key] = self.compute(active)
        return found
