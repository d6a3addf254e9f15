"""Where a grade's time goes: counters the compiled loop keeps, and the clock it reads them with."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from evalfarm.envs.weight_edits.jit import cycles, jit

# The compiled loop's counters: steps played, fallbacks to the reference's computation, episodes
# replayed by MinAtar's objects, and (when profiling) the cycles spent reading observations and
# bounding the policy.
STEPS, FALLBACKS, ESCAPES, POLICY_CYCLES = range(4)
_CYCLES_PER_SECOND: list[float] = []


@jit
def _read_cycles() -> int:
    return cycles()


def cycles_per_second() -> float:
    """The cycle counter's rate, measured once over 50 ms."""
    if not _CYCLES_PER_SECOND:
        _read_cycles()  # compiled before the clock starts
        started, first = time.perf_counter(), _read_cycles()
        while time.perf_counter() - started < 0.05:
            pass
        _CYCLES_PER_SECOND.append((_read_cycles() - first) / (time.perf_counter() - started))
    return _CYCLES_PER_SECOND[0]


@dataclasses.dataclass
class Profile:
    """Where grades' time went: give one to `run_episodes` and it adds to it."""

    steps: int = 0
    fallbacks: int = 0
    replays: int = 0
    total_s: float = 0.0
    policy_s: float = 0.0  # observations read and the policy bounded, in compiled code
    fallback_s: float = 0.0  # observations computed as the reference does
    replay_s: float = 0.0  # episodes replayed with MinAtar's objects

    def add(self, counters: np.ndarray, total_s: float, fallback_s: float, replay_s: float) -> None:
        """Add one grade's counters and times."""
        self.steps += int(counters[STEPS])
        self.fallbacks += int(counters[FALLBACKS])
        self.replays += int(counters[ESCAPES])
        self.total_s += total_s
        self.policy_s += int(counters[POLICY_CYCLES]) / cycles_per_second()
        self.fallback_s += fallback_s
        self.replay_s += replay_s

    @property
    def game_s(self) -> float:
        """The rest: game steps, the streams and the loop itself."""
        return self.total_s - self.policy_s - self.fallback_s - self.replay_s
