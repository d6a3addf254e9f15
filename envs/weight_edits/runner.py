"""Episodes of an original game played in compiled code, every action the reference's.

One compiled loop plays the episodes in order, as the reference does: it seeds both streams
(`mt19937`), resets the game, and on every step draws the action's uniform, reads the observation's
active inputs from the game state, takes the certified action (`certified`), draws the sticky-action
test and steps the game (one module per game: MinAtar's rules). Its whole state lives in arrays
made here, so it can return to Python and be resumed where it stopped. It returns

- FALLBACK when the certified bounds cannot decide an action: Python computes that observation's
  distribution as the reference does (`Policy.cdf`) and resumes the step with the action;
- ESCAPE when a game reaches a state its compiled rules do not model (a list past its capacity,
  a car of speed 0): Python replays that episode with MinAtar's own objects (`FastRunner`);
- DEADLINE every CHECK_EVERY steps, so a grade stops at its deadline; DONE at the end.
"""

from __future__ import annotations

import bisect
import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from evalfarm.envs.weight_edits import (
    asterix,
    breakout,
    certified,
    freeway,
    games,
    memo,
    mt19937,
    seaquest,
    space_invaders,
)
from evalfarm.envs.weight_edits.certified import Network
from evalfarm.envs.weight_edits.deadline import Deadline
from evalfarm.envs.weight_edits.edits import TENSOR_SHAPES
from evalfarm.envs.weight_edits.episodes import Episode, FastRunner
from evalfarm.envs.weight_edits.jit import cycles, jit, jit_inline
from evalfarm.envs.weight_edits.policy import OBSERVATION_SIZE, Policy
from evalfarm.envs.weight_edits.profiling import ESCAPES, FALLBACKS, POLICY_CYCLES, STEPS, Profile

GAME_IDS = {game: index for index, game in enumerate(games.GAMES)}
_ASTERIX, _BREAKOUT, _FREEWAY, _SEAQUEST, _SPACE_INVADERS = (GAME_IDS[game] for game in games.GAMES)
STATE_SIZE = max(module.SIZE for module in (asterix, breakout, freeway, seaquest, space_invaders))
MAX_ACTIVE = 1024
CHECK_EVERY = 4096
DONE, DEADLINE, FALLBACK, ESCAPE = range(4)
# cursor: where the loop is (it resumes there)
_EPISODE, _LENGTH, _LAST, _STAMP, _PENDING, _FRESH = range(6)
# every game state starts with these two flags
_TERMINAL, _ESCAPE = 0, 1


@jit_inline
def _reset(game: int, st: np.ndarray, rng: np.ndarray) -> None:
    if game == _ASTERIX:
        asterix.reset(st, rng)
    elif game == _BREAKOUT:
        breakout.reset(st, rng)
    elif game == _FREEWAY:
        freeway.reset(st, rng)
    elif game == _SEAQUEST:
        seaquest.reset(st, rng)
    else:
        space_invaders.reset(st, rng)


@jit_inline
def _act(game: int, st: np.ndarray, rng: np.ndarray, action: int) -> int:
    if game == _ASTERIX:
        return asterix.act(st, rng, action)
    if game == _BREAKOUT:
        return breakout.act(st, rng, action)
    if game == _FREEWAY:
        return freeway.act(st, rng, action)
    if game == _SEAQUEST:
        return seaquest.act(st, rng, action)
    return space_invaders.act(st, rng, action)


@jit_inline
def _features(game: int, st: np.ndarray, active: np.ndarray) -> int:
    if game == _ASTERIX:
        return asterix.features(st, active)
    if game == _BREAKOUT:
        return breakout.features(st, active)
    if game == _FREEWAY:
        return freeway.features(st, active)
    if game == _SEAQUEST:
        return seaquest.features(st, active)
    return space_invaders.features(st, active)


@jit_inline
def _live_rows(
    active: np.ndarray, count: int, live: np.ndarray, seen: np.ndarray, stamp: int, rows: np.ndarray
) -> int:
    """The distinct active inputs whose W1 row is live, into rows; how many."""
    found = 0
    for t in range(count):
        i = active[t]
        if seen[i] != stamp:
            seen[i] = stamp
            if live[i]:
                rows[found] = i
                found += 1
    return found


@jit_inline
def _constant_action(cdf: np.ndarray, u: float) -> int:
    """bisect_right(cdf, u): the exact cdf of a policy that ignores its inputs."""
    below = 0
    for j in range(cdf.size):
        if cdf[j] <= u:
            below += 1
    return below


@jit_inline
def _policy_action(
    rows: np.ndarray,
    count: int,
    u: float,
    net: tuple[np.ndarray, ...],
    work: np.ndarray,
    memory: tuple[np.ndarray, ...],
) -> int:
    """The certified action (or UNCERTAIN), the first pass remembered."""
    slot, known = memo.find(rows, count, memory)
    if known:
        memo.load(slot, memory, work)
    else:
        certified.first_pass(rows, count, net, work)
        if slot != memo.MISS:
            memo.store(slot, rows, count, memory, work)
    action = certified.decide(work, u)
    return action if action != certified.UNCERTAIN else certified.second_pass(rows, count, u, net, work)


@dataclasses.dataclass
class Loop:
    """Everything the compiled loop reads and writes, made once per grade."""

    episodes: range
    st: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(STATE_SIZE, dtype=np.int64))
    env_rng: np.ndarray = dataclasses.field(default_factory=mt19937.new_state)
    action_rng: np.ndarray = dataclasses.field(default_factory=mt19937.new_state)
    active: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(MAX_ACTIVE, dtype=np.int64))
    rows: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(OBSERVATION_SIZE, dtype=np.int64))
    seen: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(OBSERVATION_SIZE, dtype=np.int64))
    work: np.ndarray = dataclasses.field(default_factory=certified.new_work)
    memory: tuple[np.ndarray, ...] = dataclasses.field(default_factory=memo.new_memo)
    cursor: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(6, dtype=np.int64))
    request: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(MAX_ACTIVE + 1, dtype=np.int64))
    exchange: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(2))
    counters: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(4, dtype=np.int64))
    results: np.ndarray = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.results = np.zeros((len(self.episodes), 2))
        self.cursor[_EPISODE] = self.episodes.start
        self.cursor[_FRESH] = 1

    def arrays(self) -> tuple[Any, ...]:
        """The arrays in the order `_advance` takes them."""
        return (
            self.st, self.env_rng, self.action_rng, self.active, self.rows, self.seen, self.work,
            self.memory, self.cursor, self.request, self.exchange, self.results, self.counters,
        )  # fmt: skip


@jit_inline
def _start(game: int, st: np.ndarray, env_rng: np.ndarray, action_rng: np.ndarray, episode: int) -> None:
    """A fresh episode, as the reference's `Environment` and `RandomState`s start it."""
    mt19937.seed(env_rng, games.ENV_SEED_BASE + episode)
    mt19937.seed(action_rng, games.ACTION_SEED_BASE + episode)
    _reset(game, st, env_rng)


@jit
def _advance(
    game: int,
    first: int,
    stop: int,
    live: np.ndarray,
    net: tuple[np.ndarray, ...],
    constant: np.ndarray,
    st: np.ndarray,
    env_rng: np.ndarray,
    action_rng: np.ndarray,
    active: np.ndarray,
    rows: np.ndarray,
    seen: np.ndarray,
    work: np.ndarray,
    memory: tuple[np.ndarray, ...],
    cursor: np.ndarray,
    request: np.ndarray,
    exchange: np.ndarray,
    results: np.ndarray,
    counters: np.ndarray,
    profile: bool,
) -> int:
    """Play on from `cursor` until an event (see the module docstring); returns the event."""
    while cursor[_EPISODE] < stop:
        episode = cursor[_EPISODE]
        if cursor[_FRESH]:
            _start(game, st, env_rng, action_rng, episode)
            cursor[_FRESH], cursor[_LENGTH], cursor[_LAST] = 0, 0, 0
        while cursor[_LENGTH] < games.MAX_STEPS and not st[_ESCAPE]:
            if cursor[_PENDING]:  # resumed with the reference's action for the uniform drawn before
                action = int(exchange[1])
                cursor[_PENDING] = 0
            else:
                counters[STEPS] += 1
                u = mt19937.next_double(action_rng)
                if constant.size:
                    action = _constant_action(constant, u)
                else:
                    started = cycles() if profile else 0
                    cursor[_STAMP] += 1
                    count = _features(game, st, active)
                    found = _live_rows(active, count, live, seen, cursor[_STAMP], rows)
                    action = _policy_action(rows, found, u, net, work, memory)
                    if profile:
                        counters[POLICY_CYCLES] += cycles() - started
                    if action == certified.UNCERTAIN:
                        counters[FALLBACKS] += 1
                        request[0] = count
                        for t in range(count):
                            request[1 + t] = active[t]
                        exchange[0] = u
                        cursor[_PENDING] = 1
                        return FALLBACK
            if mt19937.next_double(env_rng) < games.STICKY_ACTION_PROB:
                action = cursor[_LAST]
            cursor[_LAST] = action
            results[episode - first, 0] += _act(game, st, env_rng, action)
            cursor[_LENGTH] += 1
            if st[_TERMINAL]:
                break
            if counters[STEPS] % CHECK_EVERY == 0:
                return DEADLINE
        results[episode - first, 1] = cursor[_LENGTH]
        cursor[_EPISODE] += 1
        cursor[_FRESH] = 1
        if st[_ESCAPE]:
            counters[ESCAPES] += 1
            request[0] = episode
            return ESCAPE
    return DONE


def _exact_action(policy: Policy, request: np.ndarray, u: float) -> int:
    """The reference's action for the observation in `request`, computed as the reference does."""
    count = int(request[0])
    return bisect.bisect_right(policy.cdf(request[1 : count + 1].tolist()), u)


def handle(event: int, game: str, policy: Policy, loop: Loop, deadline: Deadline) -> None:
    """What Python does for an event of the compiled loop, before it resumes."""
    if event == DEADLINE:
        deadline.check()
    elif event == FALLBACK:
        loop.exchange[1] = _exact_action(policy, loop.request, float(loop.exchange[0]))
    elif event == ESCAPE:
        episode = int(loop.request[0])
        loop.results[episode - loop.episodes.start] = FastRunner(game, policy).run(episode, deadline)


_ADVANCE: Callable[..., int] = _advance


def run_episodes(
    game: str, policy: Policy, episodes: range, deadline: Deadline, profile: Profile | None = None
) -> list[Episode]:
    """Scores and lengths of `episodes` of an original game, identical to the reference's."""
    started = time.perf_counter()
    net = Network.from_weights(policy.weights)
    constant = np.asarray(policy.constant if policy.constant is not None else [], dtype=np.float64)
    loop = Loop(episodes)
    arguments = (GAME_IDS[game], episodes.start, episodes.stop, net.live, net.arrays(), constant)
    spent = {DEADLINE: 0.0, FALLBACK: 0.0, ESCAPE: 0.0}
    deadline.check()
    while (event := _ADVANCE(*arguments, *loop.arrays(), profile is not None)) != DONE:
        handled = time.perf_counter()
        handle(event, game, policy, loop, deadline)
        spent[event] += time.perf_counter() - handled
    if profile is not None:
        profile.add(loop.counters, time.perf_counter() - started, spent[FALLBACK], spent[ESCAPE])
    return [(float(score), int(length)) for score, length in loop.results.tolist()]


def compile_loop() -> None:
    """Compile the loop now (or load it from the disk cache: ~0.5 s; compiling it takes ~20 s)."""
    zero = {name: np.zeros(shape, dtype=np.float32) for name, shape in TENSOR_SHAPES.items()}
    run_episodes(games.GAMES[0], Policy(zero), range(1), Deadline())
