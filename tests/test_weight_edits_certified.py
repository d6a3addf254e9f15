"""The certified policy (`envs/weight_edits/certified.py`) against the reference's float32 forward pass.

Whenever `certified.action` decides (does not return UNCERTAIN), its action is the one the reference
samples, `bisect_right(cdf, u)` on the cdf `RandomState.choice` searches: for random-normal and
adversarial weights (huge, cancelling, tied, subnormal, saturated, exact cdf values), observations of
the five MinAtar games and random 0/1 vectors, random uniforms and uniforms on and one float64 ulp
beside every cdf entry; on ordinary weights it decides nearly always. The compiled runner plays the
reference's episodes. The facts the proof relies on hold: numpy's float32 tanh is within DELTA |tanh|
+ ETA on every binade, the tanh table and its interpolation are within their stated errors, and exp's
relative error is below 2**-45.
"""

from __future__ import annotations

import bisect
import dataclasses
import decimal
import math
from collections.abc import Callable, Iterator
from decimal import Decimal

import numba
import numpy as np
import pytest

from evalfarm.envs.weight_edits import certified, games, policy, reference, runner
from evalfarm.envs.weight_edits.certified import Network
from evalfarm.envs.weight_edits.deadline import Deadline
from evalfarm.envs.weight_edits.edits import TENSOR_SHAPES, Tensors
from evalfarm.envs.weight_edits.policy import Policy

pytestmark = pytest.mark.minatar

F32_MAX = float(np.finfo(np.float32).max)
DIGITS = decimal.Context(prec=40)
SAMPLE_STEP = 2.0**-53  # the spacing of RandomState.random_sample's doubles


# Weight sets.


def _normal(rng: np.random.Generator, scale: float) -> Tensors:
    """Every tensor standard normal times `scale`, as float32."""
    with np.errstate(over="ignore"):
        return {
            name: (rng.standard_normal(shape) * scale).astype(np.float32)
            for name, shape in TENSOR_SHAPES.items()
        }


def _signed(rng: np.random.Generator, shape: tuple[int, ...], magnitude: float) -> np.ndarray:
    """Random signs times `magnitude` times a uniform in [1/2, 1], as float32."""
    values = rng.choice([-1.0, 1.0], size=shape) * magnitude * rng.uniform(0.5, 1.0, size=shape)
    return values.astype(np.float32)


def _cancelling(rng: np.random.Generator, amplify: float) -> Tensors:
    """W1 rows in opposite pairs (2i, 2i + 1), no first bias: layer-1 sums cancel to rounding
    residues, which W2 scaled by `amplify` carries to the logits."""
    weights = _normal(rng, 1.0)
    weights["W1"][1::2] = -weights["W1"][0::2]
    weights["b1"][:] = 0.0
    weights["W2"] = (rng.standard_normal((32, 32)) * amplify).astype(np.float32)
    return weights


def _ties_all(rng: np.random.Generator) -> Tensors:
    weights = _normal(rng, 0.3)
    weights["W3"][:] = 0.0
    weights["b3"][:] = np.float32(0.7)
    return weights


def _ties_two_top(rng: np.random.Generator) -> Tensors:
    weights = _normal(rng, 0.3)
    weights["W3"][:, 3] = weights["W3"][:, 0]
    weights["b3"][:] = np.float32(-1.0)
    weights["b3"][[0, 3]] = np.float32(2.0)
    return weights


def _ties_ulp(rng: np.random.Generator, w3_scale: float) -> Tensors:
    """Last biases one float32 ulp apart; W3 zero or tiny."""
    weights = _normal(rng, 0.3)
    weights["W3"] = (rng.standard_normal((32, 6)) * w3_scale).astype(np.float32)
    b3 = [np.float32(1.0)]
    for _ in range(5):
        b3.append(np.nextafter(b3[-1], np.float32(np.inf)))
    weights["b3"] = np.array(b3, dtype=np.float32)[rng.permutation(6)]
    return weights


def _saturated(rng: np.random.Generator) -> Tensors:
    weights = _normal(rng, 50.0)
    weights["W3"] = (rng.standard_normal((32, 6)) * 1.0).astype(np.float32)
    weights["b3"] = (rng.standard_normal(6) * 1.0).astype(np.float32)
    return weights


def _huge_bias(rng: np.random.Generator, tensor: str, value: float) -> Tensors:
    weights = _normal(rng, 0.3)
    weights[tensor][int(rng.integers(weights[tensor].size))] = np.float32(value)
    return weights


def _exact_cdf(rng: np.random.Generator, winners: int, w3_tied: bool) -> Tensors:
    """`winners` equal top logits, the others exp-underflowing: a cdf of multiples of 1/winners."""
    weights = _normal(rng, 0.3)
    weights["W3"][:] = 0.0
    if w3_tied:
        column = (rng.standard_normal(32) * 0.3).astype(np.float32)
        for action in range(winners):
            weights["W3"][:, action] = column
    weights["b3"][:] = np.float32(-1e4)
    weights["b3"][:winners] = np.float32(0.25)
    return weights


def _pruned(rng: np.random.Generator) -> Tensors:
    """Units and inputs that reach nothing: zero W3 rows, zero W2 rows, zero W1 rows."""
    weights = _normal(rng, 0.3)
    weights["W3"][::2] = 0.0
    weights["W2"][::3] = 0.0
    weights["W1"][rng.random(600) < 0.7] = 0.0
    return weights


def _near_max(rng: np.random.Generator, tensor: str) -> Tensors:
    """One tensor within a factor of two of float32's max (all of them for "all")."""
    weights = _normal(rng, 0.3)
    for name, shape in TENSOR_SHAPES.items():
        if tensor in (name, "all"):
            weights[name] = _signed(rng, shape, F32_MAX)
    return weights


@dataclasses.dataclass(frozen=True)
class Kind:
    """A family of weight sets; `min_decided`: the share of random uniforms that must be decided."""

    make: Callable[[np.random.Generator], Tensors]
    min_decided: float = 0.0


KINDS: dict[str, Kind] = {
    "normal-0.01": Kind(lambda rng: _normal(rng, 0.01), 0.95),
    "normal-0.3": Kind(lambda rng: _normal(rng, 0.3), 0.95),
    "normal-3": Kind(lambda rng: _normal(rng, 3.0), 0.95),
    "huge-1e4": Kind(lambda rng: _normal(rng, 1e4)),
    "huge-1e6": Kind(lambda rng: _normal(rng, 1e6)),
    "huge-1e12": Kind(lambda rng: _normal(rng, 1e12)),
    "huge-1e30": Kind(lambda rng: _normal(rng, 1e30)),
    "huge-1e35": Kind(lambda rng: _normal(rng, 1e35)),
    "near-max-W3": Kind(lambda rng: _near_max(rng, "W3")),
    "near-max-b3": Kind(lambda rng: _near_max(rng, "b3")),
    "near-max-all": Kind(lambda rng: _near_max(rng, "all")),
    "cancelling": Kind(lambda rng: _cancelling(rng, 0.3)),
    "cancelling-amplified": Kind(lambda rng: _cancelling(rng, 1e5)),
    "ties-all-equal": Kind(_ties_all),
    "ties-two-top": Kind(_ties_two_top),
    "ties-ulp": Kind(lambda rng: _ties_ulp(rng, 0.0)),
    "ties-ulp-tiny-W3": Kind(lambda rng: _ties_ulp(rng, 1e-6)),
    "tiny-1e-36": Kind(lambda rng: _normal(rng, 1e-36)),
    "tiny-subnormal": Kind(lambda rng: _normal(rng, 1e-41)),
    "tiny-min-subnormal": Kind(lambda rng: _normal(rng, 2e-45)),
    "saturated": Kind(_saturated),
    "huge-bias-b1": Kind(lambda rng: _huge_bias(rng, "b1", 1e6)),
    "huge-bias-b2": Kind(lambda rng: _huge_bias(rng, "b2", -1e6)),
    "huge-bias-b3": Kind(lambda rng: _huge_bias(rng, "b3", 1e6)),
    "huge-bias-b3-1e30": Kind(lambda rng: _huge_bias(rng, "b3", 1e30)),
    "exact-cdf-halves": Kind(lambda rng: _exact_cdf(rng, 2, False)),
    "exact-cdf-quarters": Kind(lambda rng: _exact_cdf(rng, 4, False)),
    "exact-cdf-halves-tied-W3": Kind(lambda rng: _exact_cdf(rng, 2, True)),
    "pruned": Kind(_pruned),
    "zero-W1": Kind(lambda rng: {**_normal(rng, 0.3), "W1": np.zeros((600, 32), dtype=np.float32)}),
}
# Float32 overflow inside the network: partial sums of layer 1 or 2 reach inf, which no bound of
# the proof (it assumes finite float32 arithmetic) covers. The grader never sees these weights
# (edits.MAX_ABS_WEIGHT = 1e6 keeps every sum below 1e9), but the claim is checked all the same.
OVERFLOWING: dict[str, Kind] = {
    "near-max-W1": Kind(lambda rng: _near_max(rng, "W1")),
    "near-max-W2": Kind(lambda rng: _near_max(rng, "W2")),
}


# Observations and uniforms.


def _random_play(game: str, episodes: int, steps: int, seed: int) -> Iterator[np.ndarray]:
    """The reference's observations along random-play episodes of a MinAtar game."""
    from minatar import Environment

    actions = np.random.RandomState(seed)
    for episode in range(episodes):
        environment = Environment(game, sticky_action_prob=0.1, difficulty_ramping=False)
        environment.seed(seed + episode)
        environment.reset()
        for _ in range(steps):
            yield games.observation(game, environment.state())
            _, terminal = environment.act(int(actions.randint(6)))
            if terminal:
                break


def _game_observations(game: str, count: int, seed: int) -> list[np.ndarray]:
    """`count` distinct observations spread over random play of `game`."""
    distinct = {obs.tobytes(): obs for obs in _random_play(game, episodes=6, steps=400, seed=seed)}
    found = list(distinct.values())
    picks = np.random.default_rng(seed).choice(len(found), size=min(count, len(found)), replace=False)
    return [found[i] for i in sorted(picks)]


@pytest.fixture(scope="module")
def observations() -> list[np.ndarray]:
    """Real observations of all five games, random 0/1 vectors of several densities, opposite-row
    pairs, and the empty and full observations."""
    rng = np.random.default_rng(11)
    found = [
        obs for index, game in enumerate(games.GAMES) for obs in _game_observations(game, 30, 100 * index)
    ]
    for density in (0.01, 0.03, 0.1, 0.3, 0.5):
        found += [(rng.random(600) < density).astype(np.float32) for _ in range(10)]
    for density in (0.02, 0.1, 0.5):
        for _ in range(4):
            pairs = np.repeat(rng.random(300) < density, 2)
            found.append(pairs.astype(np.float32))
    found += [np.zeros(600, dtype=np.float32), np.ones(600, dtype=np.float32)]
    return found


def _adversarial_uniforms(cdf: list[float]) -> list[float]:
    """Each cdf entry below 1 and its float64 neighbours, within [0, 1); and both ends."""
    found = {0.0, 1.0 - SAMPLE_STEP}
    for entry in cdf[:-1]:
        for value in (np.nextafter(entry, -np.inf), entry, np.nextafter(entry, np.inf)):
            if 0.0 <= value < 1.0:
                found.add(float(value))
    return sorted(found)


# 1. Decided actions are the reference's.


@dataclasses.dataclass
class Tally:
    """Decided and uncertain counts, and the wrong decisions (with what reproduces them)."""

    decided: int = 0
    uncertain: int = 0
    wrong: list[tuple[np.ndarray, float, int, int | None]] = dataclasses.field(default_factory=list)

    def add(self, obs: np.ndarray, u: float, certified_action: int, expected: int | None) -> None:
        """Count one case; `expected` None: the reference has no action (its choice raises)."""
        if certified_action == certified.UNCERTAIN:
            self.uncertain += 1
            return
        self.decided += 1
        if certified_action != expected:
            self.wrong.append((obs, u, certified_action, expected))

    def share(self) -> float:
        """The share of cases decided."""
        return self.decided / max(self.decided + self.uncertain, 1)


def _reference(weights: Tensors, obs: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """The reference's probabilities and the cdf `RandomState.choice` searches."""
    with np.errstate(all="ignore"):
        action_logits = policy.logits(weights, obs)
        return policy.probabilities(action_logits), policy.choice_cdf(action_logits)


def _compare(weights: Tensors, obs_list: list[np.ndarray], seed: int) -> tuple[Tally, Tally]:
    """Certified against reference actions: (random uniforms, adversarial uniforms)."""
    net = Network.from_weights(weights)
    arrays, work = net.arrays(), certified.new_work()
    rng = np.random.default_rng(seed)
    random_tally, adversarial_tally = Tally(), Tally()
    for index, obs in enumerate(obs_list):
        probabilities, cdf = _reference(weights, obs)
        rows = np.flatnonzero((obs != 0) & net.live).astype(np.int64)
        rng.shuffle(rows)  # the runner passes them in the game's feature order, not sorted
        usable = not np.isnan(probabilities).any()  # else RandomState.choice raises: no action
        draws, sampler = np.random.RandomState(seed + index), np.random.RandomState(seed + index)
        for _ in range(10):
            u = draws.random_sample()
            expected = None
            if usable:
                expected = int(sampler.choice(6, p=probabilities))
                assert expected == bisect.bisect_right(cdf, u)
            decided = certified.action(rows, rows.size, u, arrays, work)
            random_tally.add(obs, u, decided, expected)
        for u in _adversarial_uniforms(cdf):
            expected = bisect.bisect_right(cdf, u) if usable else None
            decided = certified.action(rows, rows.size, u, arrays, work)
            adversarial_tally.add(obs, u, decided, expected)
    return random_tally, adversarial_tally


def _check_kind(kind: Kind, name: str, obs_list: list[np.ndarray]) -> None:
    """No wrong decision for this kind's weights, and at least its `min_decided` share decided."""
    seed = sum(map(ord, name))
    weights = kind.make(np.random.default_rng(seed))
    assert all(np.isfinite(value).all() for value in weights.values())
    random_tally, adversarial_tally = _compare(weights, obs_list, seed)
    print(
        f"{name}: random u {random_tally.decided} decided, {random_tally.uncertain} uncertain; "
        f"adversarial u {adversarial_tally.decided} decided, {adversarial_tally.uncertain} uncertain"
    )
    wrong = random_tally.wrong + adversarial_tally.wrong
    assert not wrong, (
        f"{len(wrong)} wrong decisions, first: active {np.flatnonzero(wrong[0][0]).tolist()}, "
        f"u {wrong[0][1]!r}, certified {wrong[0][2]}, reference {wrong[0][3]}"
    )
    assert random_tally.share() >= kind.min_decided


@pytest.mark.parametrize("name", list(KINDS))
def test_decided_actions_are_the_references(name: str, observations: list[np.ndarray]) -> None:
    """Every decided action is the reference's; ordinary weights are decided >= 95% of the time."""
    _check_kind(KINDS[name], name, observations)


@pytest.mark.parametrize("name", list(OVERFLOWING))
def test_overflowing_hidden_layers(name: str, observations: list[np.ndarray]) -> None:
    """Weights whose hidden-layer sums overflow float32 in the reference: same claim."""
    _check_kind(OVERFLOWING[name], name, observations)


def test_overflowing_first_layer_sum() -> None:
    """Three rows of 2e38 then four of -2e38: the exact sum is -2e38 (tanh -1), the reference's
    float32 sum overflows to inf (tanh 1); a decided action must still be the reference's."""
    weights = {name: np.zeros(shape, dtype=np.float32) for name, shape in TENSOR_SHAPES.items()}
    weights["W1"][0:3, 0], weights["W1"][3:7, 0] = 2e38, -2e38
    weights["W2"][0, 0], weights["W3"][0, 0] = 5.0, 10.0
    obs = np.zeros(600, dtype=np.float32)
    obs[:7] = 1.0
    _, cdf = _reference(weights, obs)
    rows = np.arange(7, dtype=np.int64)
    decided = certified.action(rows, 7, 0.5, Network.from_weights(weights).arrays(), certified.new_work())
    assert decided in (certified.UNCERTAIN, bisect.bisect_right(cdf, 0.5))


def test_first_pass_and_second_pass_make_action(observations: list[np.ndarray]) -> None:
    """`action` is `first_pass` then `decide`, then `second_pass` when that is UNCERTAIN, as the
    runner calls them; the second pass decides some of what the first cannot."""
    weights = _normal(np.random.default_rng(5), 0.3)
    net = Network.from_weights(weights)
    arrays, work = net.arrays(), certified.new_work()
    rng = np.random.default_rng(6)
    rescued = 0
    for obs in observations:
        rows = np.flatnonzero((obs != 0) & net.live).astype(np.int64)
        for u in [*rng.random(5), *_adversarial_uniforms(_reference(weights, obs)[1])]:
            certified.first_pass(rows, rows.size, arrays, work)
            composed = certified.decide(work, u)
            if composed == certified.UNCERTAIN:
                composed = certified.second_pass(rows, rows.size, u, arrays, work)
                rescued += composed != certified.UNCERTAIN
            assert certified.action(rows, rows.size, u, arrays, work) == composed
    assert rescued > 0


# 2. Long runs: the compiled runner plays the reference's episodes.

RUNS: dict[str, tuple[Callable[[np.random.Generator], Tensors], int]] = {
    "normal-0.05": (lambda rng: _normal(rng, 0.05), 1),
    "normal-0.3": (lambda rng: _normal(rng, 0.3), 2),
    "normal-1": (lambda rng: _normal(rng, 1.0), 3),
    "ties-ulp-tiny-W3": (lambda rng: _ties_ulp(rng, 1e-6), 4),
    "cancelling-amplified": (lambda rng: _cancelling(rng, 1e5), 5),
    "cap-1e6": (lambda rng: {name: _signed(rng, shape, 1e6) for name, shape in TENSOR_SHAPES.items()}, 6),
}


def _episodes_match(game: str, name: str, episodes: range) -> None:
    make, seed = RUNS[name]
    weights = make(np.random.default_rng(seed))
    compiled = runner.run_episodes(game, Policy(weights), episodes, Deadline())
    assert compiled == [reference.run_episode(game, "original", weights, e, Deadline()) for e in episodes]


@pytest.mark.parametrize("name", list(RUNS))
@pytest.mark.parametrize("game", games.GAMES)
def test_runner_plays_the_reference_episodes(game: str, name: str) -> None:
    """Scores and lengths of a few episodes equal the reference's (one wrong action would diverge)."""
    _episodes_match(game, name, range(2) if game == "freeway" else range(12))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["normal-0.3", "normal-1", "cap-1e6"])
@pytest.mark.parametrize("game", games.GAMES)
def test_runner_plays_many_reference_episodes(game: str, name: str) -> None:
    """More episodes, further into the seed range."""
    _episodes_match(game, name, range(40, 44) if game == "freeway" else range(40, 100))


# 3. The tanh and exp facts of the proof.


def exact_tanh(x: float) -> Decimal:
    """tanh(x) to 40 significant digits (decimal: series for tiny x, exp otherwise)."""
    z = Decimal(x)
    if abs(x) > 50.0:  # 1 - |tanh x| < 2 e**-100 < 10**-43: +-1 at 40 digits
        return Decimal(1).copy_sign(z)
    with decimal.localcontext(DIGITS):
        if abs(x) < 2.0**-20:  # z - z**3/3 + 2 z**5/15 - 17 z**7/315: the rest is below |z| 2**-160
            z2 = z * z
            return z * (1 - z2 / 3 * (1 - z2 * 2 / 5 * (1 - z2 * 17 / 42)))
        e = (2 * z).exp()
        return (e - 1) / (e + 1)


def _binade(exponent: int, rng: np.random.Generator) -> np.ndarray:
    """Positive float32s with this biased exponent (0: subnormals): mantissas evenly spread and random."""
    mantissas = np.concatenate(
        [
            np.linspace(1 if exponent == 0 else 0, 2**23 - 1, 1024).astype(np.uint32),
            rng.integers(1 if exponent == 0 else 0, 2**23, 1024, dtype=np.uint32),
        ]
    )
    return ((np.uint32(exponent) << np.uint32(23)) | mantissas).view(np.float32)


def test_numpy_float32_tanh_bound_on_every_binade() -> None:
    """(T): |tanh32(z) - tanh(z)| <= DELTA |tanh(z)| + ETA and |tanh32(z)| <= 1, on every binade,
    both signs, with tanh32 called on 32-element float32 arrays as the reference calls it."""
    rng = np.random.default_rng(3)
    magnitudes = np.concatenate([_binade(exponent, rng) for exponent in range(255)])
    exact = np.array([float(exact_tanh(float(z))) for z in magnitudes])
    assert np.all(np.isfinite(magnitudes))
    worst = 0.0
    for sign in (1.0, -1.0):
        z = (sign * magnitudes).astype(np.float32)
        computed = np.concatenate([np.tanh(chunk) for chunk in z.reshape(-1, 32)]).astype(np.float64)
        truth = sign * exact
        error = np.abs(computed - truth)
        # |truth - tanh| <= 2**-53 |tanh| (one rounding): a margin of 2**-40 covers it and the subtraction.
        allowed = certified.DELTA * np.abs(truth) * (1.0 - 2.0**-40) + certified.ETA * (1.0 - 2.0**-40)
        failing = np.flatnonzero(error > allowed)
        assert failing.size == 0, f"tanh32 off at z = {z[failing[:5]].tolist()}"
        assert np.all(np.abs(computed) <= 1.0)
        normal = np.abs(truth) > 2.0**-100
        worst = max(worst, float(np.max(error[normal] / np.abs(truth[normal]))))
    assert worst < certified.DELTA
    print(f"tanh32: largest relative error {worst:.3g} = 2**{math.log2(worst):.2f}")


def test_tanh_table_entries() -> None:
    """Entries within 2**-50 of tanh at the grid points i / TABLE_SCALE below TABLE_END, 1 from there."""
    table = certified.tanh_table()
    last = round(certified.TABLE_END * certified.TABLE_SCALE)
    assert table.size >= last + 2
    assert np.all(table[last:] == 1.0)
    bound = Decimal(2.0**-50)
    for i in range(last):
        assert abs(Decimal(float(table[i])) - exact_tanh(i / certified.TABLE_SCALE)) <= bound, i


def _table_points(rng: np.random.Generator) -> np.ndarray:
    """Grid points, midpoints, random points in [-12, 12], the worst region of the interpolation
    (|x| near 0.66, where |tanh''| peaks), around TABLE_END, and beyond."""
    h = 1.0 / certified.TABLE_SCALE
    grid = np.arange(0, 12 * certified.TABLE_SCALE, 11) * h
    around = np.linspace(certified.TABLE_END - 0.01, certified.TABLE_END + 0.01, 2001)
    peak = np.arange(0.6, 0.72, h) + 0.5 * h
    points = np.concatenate([grid, grid + 0.5 * h, peak, around, rng.uniform(0, 12, 4000)])
    points = np.concatenate([points, [certified.TABLE_END, 30.0, 1e3, 1e300]])
    return np.concatenate([points, -points])


def test_table_tanh_is_within_eps_t() -> None:
    """`table_tanh(table, x)` is within EPS_T of tanh(x), inside the table and beyond TABLE_END."""
    table = certified.tanh_table()
    bound = Decimal(certified.EPS_T)
    worst = Decimal(0)
    for x in _table_points(np.random.default_rng(4)):
        value = certified.table_tanh(table, float(x))
        error = abs(Decimal(value) - exact_tanh(float(x)))
        assert error <= bound, float(x)
        worst = max(worst, error)
    assert certified.table_tanh(table, math.inf) == 1.0
    assert certified.table_tanh(table, -math.inf) == -1.0
    assert abs(certified.table_tanh(table, math.nan)) == 1.0
    print(f"table_tanh: largest error {float(worst):.4g}, EPS_T {certified.EPS_T:.4g}")


@numba.njit(cache=False)
def _compiled_exp(x: np.ndarray) -> np.ndarray:
    """`math.exp` of each entry, in compiled code as the bounds call it."""
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = math.exp(x[i])
    return out


def test_exp_relative_error() -> None:
    """(E): numpy's float64 exp (the reference's) and compiled `math.exp` (the bounds') are within a
    relative 2**-45, wherever the result is a normal float64."""
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.uniform(-708.0, 709.0, 3000), rng.uniform(-40.0, 0.0, 3000), [0.0, -1e-300]])
    exact = [DIGITS.exp(Decimal(float(value))) for value in x]
    bound = Decimal(2.0**-45)
    for computed in (np.exp(x), _compiled_exp(x), np.array([math.exp(value) for value in x])):
        for value, result, truth in zip(x, computed, exact, strict=True):
            assert abs(Decimal(float(result)) - truth) <= bound * truth, float(value)
