"""The reference's sampled action, certified from a float64 evaluation of the network, or UNCERTAIN.

The reference grader samples `RandomState.choice(6, p=softmax(logits))`: one uniform `u` and
`searchsorted(cdf, u, side="right")`, which, the cdf being non-decreasing (a cumulative sum of
non-negative numbers, divided by its last entry), is the number of entries `cdf[j] <= u`; `cdf[5]`
is exactly 1 > u. Its logits are float32, from numpy/BLAS calls whose rounding is not reproduced
here. Instead, for the same observation, this module computes intervals that provably contain the
reference's float32 intermediates, from the logit intervals an interval for each `cdf[j]` the
reference computes, and the action when `u` lies outside all five. Otherwise the caller computes
that observation as the reference does.

Units that reach nothing are left out: a hidden unit of layer 1 whose W2 row is zero, or of layer
2 whose W3 row is zero, adds exact zeros downstream in the reference (0 times a finite value), as
does an input whose W1 row is zero on the units kept; dropping them changes no bit there, and
the bounds below still count the reference's full 32-term sums.

Notation: `u32 = 2**-24` (float32 unit roundoff), `g(n) = n u32 / (1 - n u32)`; `A` is the set
of active (value 1) inputs whose W1 row is not all zero, `k = |A|`.

Assumptions about the reference's arithmetic (IEEE-754, round to nearest):

- (B) an entry of a float32 matrix product (numpy matmul, BLAS sgemv) is a sum of the products in
  some order and association, each operation float32 or wider, with or without FMA. The classical
  bound (Higham, *Accuracy and Stability of Numerical Algorithms*, sec. 3.1) then gives, for an
  n-term dot product, `|computed - exact| <= g(n) sum|x_i w_i|`, plus `n 2**-125` for underflow,
  gradual or flushed. In layer 1 each product is exactly `w_i` or a zero, and adding a zero is
  exact, so at most `k - 1` roundings touch any term: `g(k - 1)` replaces `g(600)`.
- (T) numpy's float32 `tanh` has `|tanh32(z) - tanh(z)| <= DELTA |tanh(z)| + ETA` and
  `|tanh32(z)| <= 1` for every float32 z. Measured, not documented: over all 2**32 float32 inputs
  the largest relative error is 1.09e-7 (2**-23.1) and none exceeds the bound with ETA = 0;
  DELTA = 2**-21 leaves a factor of four. The tests check it on every binade.
- (E) `exp` (numpy's in the reference, the C library's here) has relative error below 2**-45.

(B) holds for sums that stay finite. They do when, for every unit j of every layer (all 32, the
dropped ones too), `sum_i |W[i, j]| + |b[j]| <= 2**127` (OVERFLOW_GUARD): each input is 0 or 1 and
each tanh at most 1 in magnitude, so every partial sum and product the reference forms is at most
`(1 + g(601)) 2**127`, below float32's largest finite value. A network past that bound (only
reachable with weights beyond the parser's 1e6 cap) may overflow to inf or NaN in the reference:
`Network.from_weights` then sets every logit center to NaN, so nothing is certified and every
step is computed as the reference does.

Layer 1, unit j. Let S = sum_{i in A} W1[i, j], a = sum_{i in A} |W1[i, j]|, b = b1[j]. The reference
computes s = fl(x @ W1), then z = fl(s + b): by (B), `|s - S| <= g(k-1) a + k 2**-126`, and
`|z - (s + b)| <= u32 |s + b| + 2**-126`. Here `c = b + sum W1[i, j]` in float64, off by at most
`2**-40 (a + |b|)` (a float64 sum of at most 601 terms, in any order), so |z - c| <= r with

    r = [(g(k-1)(1 + u32) + 2**-39) a + 2**-39 |b| + u32 |c|] (1 + 2**-30) + (k + 2) 2**-125,

the factor (1 + 2**-30) absorbing the float64 rounding of r itself (as in every radius below).
The first pass bounds a by the sum of the k largest |W1[i, j]| (tabulated per k, rounded up); the
precise pass below sums the |W1[i, j]| of A.

tanh of z, z in [c - r, c + r]. `table_tanh` interpolates tanh linearly on a grid of step
h = 2**-12 over [0, 10] and is +-1 beyond, within EPS_T of tanh: inside, `h**2/8 max|tanh''|
+ 2**-50` (max|tanh''| = 4/(3 sqrt 3); table entries within 2**-50 of tanh, which the tests check
against `decimal`); beyond, 1 - tanh(10) < 4.2e-9. Let t = T(c). Since |(log sech**2)'| =
2|tanh| <= 2, sech**2 on [c - r, c + r] is at most sech**2(c) e**(2r) <= (1 - (|t| - EPS_T)+**2)
(1 + 3r) for r <= 1/8 (and at most 1 always), so |tanh(z) - t| <= EPS_T + r D with that bound D.
By (T), and y - DELTA|y| increasing in y, the reference's h = tanh32(z) is within

    p = (EPS_T + r D)(1 + DELTA) + DELTA |t| + ETA + 2**-50     of t,

and the first pass only needs max p <= (EPS_T + max r)(1 + DELTA) + DELTA + ETA + 2**-50. A
*precise* pass, run only when the first cannot decide the action, also intersects this with the
monotone enclosure [T(c - r) - EPS_T, T(c + r) + EPS_T] widened likewise (tighter when r is large
and tanh saturates).

Layers 2 and 3, unit j: z = fl(fl(h @ W) + b) with h_i within p_i of m_i. The exact dot product
lies within `sum p_i |W_ij|` of `sum m_i W_ij`, and by (B) the reference's within
`g(32) P + 32 2**-125` of the exact one, P = sum (|m_i| + p_i) |W_ij| bounding sum |h_i W_ij|. With
the rounding of `+ b` and our float64 center c = b + sum m_i W_ij (off by at most 2**-40 (P + |b|)):

    r = [(1 + u32) sum p_i |W_ij| + (g(32)(1 + u32) + 2**-39) P + 2**-39 |b| + u32 |c|] (1 + 2**-30)
        + 34 2**-125.

The first pass bounds the two sums by column sums of |W| (P <= (1 + max p_i) sum_i |W_ij|, and
sum p_i |W_ij| <= max p_i sum_i |W_ij|): no matrix product beyond the center's. The precise pass
computes both sums.

The cdf. For logits L, cdf_j(L) = E_j / (E_j + F_j), E_j = sum_{i<=j} exp(L_i), F_j = sum_{i>j}
exp(L_i): it increases with L_i for i <= j, decreases for i > j, and its gradient has 1-norm
2 E_j F_j / (E_j + F_j)**2 <= 1/2. The reference computes it in float64 from the float32 logits
(shift by the max, exp, normalise, cumsum, divide by the last entry); by (E) each exp is off by a
relative 2**-45 plus at most 746 ulps of its argument (smaller ones underflow, negligible next to
the max's exp(0) = 1), so its cdf is within 2**-41 of cdf_j(L). With every logit within r_i of c_i:

- tier 1: cdf_j(L) is within R/2 of cdf_j(c), R = max r_i;
- tier 2 (precise pass only): cdf_j(L) lies in [E_j(c - r) / (E_j(c - r) + F_j(c + r)),
  E_j(c + r) / (E_j(c + r) + F_j(c - r))].

Our float64 evaluation of these moves the arguments by at most 2**-52 max(|c_i| + r_i) each (half
of that moves the cdf, by the gradient bound) and the results by a few ulps; SLACK = 2**-40 +
2**-51 max(|c_i| + r_i) covers this and the reference's 2**-41. A comparison with a NaN (0/0 when
every term underflows) counts as uncertain.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from evalfarm.envs.weight_edits.edits import Tensors
from evalfarm.envs.weight_edits.jit import jit, jit_inline, jit_sums

U32 = 2.0**-24
DELTA = 2.0**-21
ETA = 2.0**-125
TABLE_SCALE = 4096.0  # grid step h = 2**-12
TABLE_END = 10.0
_TABLE_LAST = int(TABLE_END * TABLE_SCALE)
_MAX_TANH_SECOND = 4.0 / (3.0 * math.sqrt(3.0))
EPS_T = max((1.0 / TABLE_SCALE) ** 2 / 8.0 * _MAX_TANH_SECOND + 2.0**-50, 1.0 - math.tanh(TABLE_END)) * (
    1.0 + 2.0**-20
)
INPUTS, HIDDEN, ACTIONS = 600, 32, 6
UNCERTAIN = -1
OVERFLOW_GUARD = 2.0**127
_UP = 1.0 + 2.0**-40  # rounds a float64 sum of at most 600 non-negative terms up
# Rows of the working memory (WORK_ROWS x HIDDEN float64s). The kernels index it by row rather
# than slice it: the per-step loop then makes no array views.
_CENTER1, _RADIUS1, _MID1, _HALF1, _CENTER2, _RADIUS2, _MID2, _HALF2, _CENTER3, _RADIUS3 = range(10)
_ABS1, _SPREAD, _SIZE, _ABS, LOW, HIGH, _TERMS = range(10, 17)
WORK_ROWS = 17


def tanh_table() -> np.ndarray:
    """tanh at the grid points i / TABLE_SCALE up to TABLE_END, then 1.0 (so the end interpolates to 1)."""
    table = np.tanh(np.arange(_TABLE_LAST + 2, dtype=np.float64) / TABLE_SCALE)
    table[_TABLE_LAST:] = 1.0
    return table


def _largest_sums(a1: np.ndarray) -> np.ndarray:
    """Row k: per column, the sum of its k largest entries, rounded up (k = 0 .. 600)."""
    ordered = -np.sort(-a1, axis=0)
    sums = np.zeros((a1.shape[0] + 1, a1.shape[1]))
    sums[1:] = np.cumsum(ordered, axis=0) * _UP
    return sums


def may_overflow(weights: dict[str, np.ndarray]) -> bool:
    """Whether a float32 sum of the reference's forward pass may leave the finite range (see above)."""
    for matrix, bias in (("W1", "b1"), ("W2", "b2"), ("W3", "b3")):
        bound = np.abs(weights[matrix]).sum(axis=0) * _UP + np.abs(weights[bias])
        if not np.all(bound <= OVERFLOW_GUARD):  # NaN included
            return True
    return False


@dataclasses.dataclass(frozen=True)
class Network:
    """An answer's weights in float64 (exact: every float32 is a float64), live units only."""

    live: np.ndarray  # inputs whose W1 row is not zero on the kept units
    w1: np.ndarray  # (600, n1): W1 on the kept units
    a1: np.ndarray  # |w1|
    top1: np.ndarray  # (601, n1): sums of the k largest entries of each column of a1
    b1: np.ndarray  # (n1,)
    w2: np.ndarray  # (n2, n1): W2 transposed, kept units only
    a2: np.ndarray  # |w2|
    s2: np.ndarray  # (n2,): row sums of a2, rounded up
    b2: np.ndarray
    w3: np.ndarray  # (6, n2): W3 transposed
    a3: np.ndarray
    s3: np.ndarray
    b3: np.ndarray
    table: np.ndarray

    @classmethod
    def from_weights(cls, weights: Tensors) -> Network:
        """The kernels' arrays for an answer's float32 tensors."""
        w = {name: np.asarray(value, dtype=np.float64) for name, value in weights.items()}
        second = np.flatnonzero(np.any(w["W3"] != 0, axis=1))  # layer-2 units that reach a logit
        first = np.flatnonzero(np.any(w["W2"][:, second] != 0, axis=1))  # layer-1 units reaching those
        w1 = np.ascontiguousarray(w["W1"][:, first])
        w2 = np.ascontiguousarray(w["W2"][np.ix_(first, second)].T)
        w3 = np.ascontiguousarray(w["W3"][second].T)
        return cls(
            live=np.any(w1 != 0, axis=1),
            w1=w1,
            a1=np.abs(w1),
            top1=_largest_sums(np.abs(w1)),
            b1=np.ascontiguousarray(w["b1"][first]),
            w2=w2,
            a2=np.abs(w2),
            s2=np.abs(w2).sum(axis=1) * _UP,
            b2=np.ascontiguousarray(w["b2"][second]),
            w3=w3,
            a3=np.abs(w3),
            s3=np.abs(w3).sum(axis=1) * _UP,
            b3=np.full(6, np.nan) if may_overflow(w) else np.ascontiguousarray(w["b3"]),
            table=tanh_table(),
        )

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The weight arrays, as the kernels take them (`net`)."""
        return (
            self.w1, self.a1, self.top1, self.b1, self.w2, self.a2, self.s2, self.b2,
            self.w3, self.a3, self.s3, self.b3, self.table,
        )  # fmt: skip


def new_work() -> np.ndarray:
    """Working memory for `action`."""
    return np.zeros((WORK_ROWS, HIDDEN))


@jit_inline
def _gamma(n: int) -> float:
    return n * U32 / (1.0 - n * U32)


@jit_inline
def table_tanh(table: np.ndarray, x: float) -> float:
    """tanh(x) within EPS_T: linear interpolation on the grid, +-1 from TABLE_END on."""
    position = abs(x) * TABLE_SCALE
    if not position < _TABLE_LAST:  # NaN included: an index is never made from it
        position = float(_TABLE_LAST)
    index = int(position)
    value = table[index] + (position - index) * (table[index + 1] - table[index])
    return math.copysign(value, x)


@jit_sums
def _row_sums(rows: np.ndarray, count: int, matrix: np.ndarray, work: np.ndarray, target: int) -> None:
    """work[target] = the sum of the rows matrix[rows[:count]], in any order."""
    width = matrix.shape[1]
    for j in range(width):
        work[target, j] = 0.0
    for t in range(count):
        row = rows[t]
        for j in range(width):
            work[target, j] += matrix[row, j]


@jit_inline
def _layer1(
    rows: np.ndarray,
    count: int,
    w1: np.ndarray,
    a1: np.ndarray,
    top1: np.ndarray,
    b1: np.ndarray,
    work: np.ndarray,
    precise: bool,
) -> None:
    """Center and radius (rows _CENTER1, _RADIUS1) of the reference's first pre-activation."""
    units = b1.size
    _row_sums(rows, count, w1, work, _CENTER1)
    if precise:
        _row_sums(rows, count, a1, work, _ABS1)
        for j in range(units):
            work[_ABS1, j] *= _UP
    else:
        for j in range(units):
            work[_ABS1, j] = top1[count, j]
    factor = _gamma(max(count - 1, 0)) * (1.0 + U32) + 2.0**-39
    extra = (count + 2) * ETA
    for j in range(units):
        center = work[_CENTER1, j] + b1[j]
        work[_CENTER1, j] = center
        work[_RADIUS1, j] = (factor * work[_ABS1, j] + 2.0**-39 * abs(b1[j]) + U32 * abs(center)) * (
            1.0 + 2.0**-30
        ) + extra


@jit
def _lookup(units: int, work: np.ndarray, source: int, target: int, table: np.ndarray) -> None:
    """work[target, j] = T(work[source, j])."""
    for j in range(units):
        work[target, j] = table_tanh(table, work[source, j])


@jit_inline
def _refine(units: int, work: np.ndarray, source: int, table: np.ndarray) -> None:
    """Intersect each box with the monotone enclosure of tanh over [c - r, c + r] (precise pass)."""
    for j in range(units):
        c, r = work[source, j], work[source + 1, j]
        t, p = work[source + 2, j], work[source + 3, j]
        outside = 2.0**-50 * (abs(c) + r)
        low = table_tanh(table, (c - r) - outside) - EPS_T
        high = table_tanh(table, (c + r) + outside) + EPS_T
        low = max(low - DELTA * abs(low) - ETA - 2.0**-50, t - p, -1.0)
        high = min(high + DELTA * abs(high) + ETA + 2.0**-50, t + p, 1.0)
        work[source + 2, j] = 0.5 * (low + high)
        work[source + 3, j] = 0.5 * (high - low) + 2.0**-51


@jit_inline
def _tanh_box(units: int, work: np.ndarray, source: int, table: np.ndarray, precise: bool) -> float:
    """Boxes holding numpy's float32 tanh of each unit whose pre-activation is within row source + 1
    of row source: midpoints in row source + 2, radii in row source + 3 (precise pass only);
    returns the largest radius."""
    _lookup(units, work, source, source + 2, table)
    if not precise:  # every radius is at most the one of slope 1 and |t| = 1 at the widest unit
        widest_r = 0.0
        for j in range(units):
            widest_r = max(widest_r, work[source + 1, j])
        return (EPS_T + widest_r) * (1.0 + DELTA) + DELTA + ETA + 2.0**-50
    for j in range(units):
        r, t = work[source + 1, j], work[source + 2, j]
        near = max(abs(t) - EPS_T, 0.0)
        slope = min((1.0 - near * near) * (1.0 + 3.0 * r), 1.0) if r <= 0.125 else 1.0
        work[source + 3, j] = (EPS_T + r * slope) * (1.0 + DELTA) + DELTA * abs(t) + ETA + 2.0**-50
    _refine(units, work, source, table)
    widest = 0.0
    for j in range(units):
        widest = max(widest, work[source + 3, j])
    return widest


@jit_sums
def _products(work: np.ndarray, source: int, matrix: np.ndarray, target: int) -> None:
    """work[target, j] = sum_i work[source, i] matrix[j, i], in any order."""
    for j in range(matrix.shape[0]):
        total = 0.0
        for i in range(matrix.shape[1]):
            total += work[source, i] * matrix[j, i]
        work[target, j] = total


@jit_inline
def _dense(
    work: np.ndarray,
    source: int,
    widest: float,
    w: np.ndarray,
    a: np.ndarray,
    s: np.ndarray,
    b: np.ndarray,
    target: int,
    precise: bool,
) -> None:
    """Center (row target) and radius (row target + 1) of the reference's fl(fl(h @ W) + b), for h_i
    within work[source + 1, i] of work[source, i]."""
    _products(work, source, w, target)
    outputs = b.size
    if precise:  # sum p_i |W_ij| and sum (|m_i| + p_i) |W_ij|
        _products(work, source + 1, a, _SPREAD)
        for i in range(w.shape[1]):
            work[_ABS, i] = abs(work[source, i]) + work[source + 1, i]
        _products(work, _ABS, a, _SIZE)
        for j in range(outputs):
            work[_SPREAD, j] *= _UP
            work[_SIZE, j] *= _UP
    else:
        for j in range(outputs):
            work[_SPREAD, j] = widest * s[j]
            work[_SIZE, j] = (1.0 + widest) * s[j]
    factor = _gamma(HIDDEN) * (1.0 + U32) + 2.0**-39
    for j in range(outputs):
        c = work[target, j] + b[j]
        work[target, j] = c
        work[target + 1, j] = (
            (1.0 + U32) * work[_SPREAD, j] + factor * work[_SIZE, j] + 2.0**-39 * abs(b[j]) + U32 * abs(c)
        ) * (1.0 + 2.0**-30) + (HIDDEN + 2) * ETA


@jit_inline
def logit_bounds(
    rows: np.ndarray, count: int, net: tuple[np.ndarray, ...], work: np.ndarray, precise: bool
) -> None:
    """Centers (work[_CENTER3, :6]) and radii (work[_RADIUS3, :6]) holding the reference's logits."""
    w1, a1, top1, b1, w2, a2, s2, b2, w3, a3, s3, b3, table = net
    _layer1(rows, count, w1, a1, top1, b1, work, precise)
    widest = _tanh_box(b1.size, work, _CENTER1, table, precise)
    _dense(work, _MID1, widest, w2, a2, s2, b2, _CENTER2, precise)
    widest = _tanh_box(b2.size, work, _CENTER2, table, precise)
    _dense(work, _MID2, widest, w3, a3, s3, b3, _CENTER3, precise)


@jit_inline
def decide(work: np.ndarray, u: float) -> int:
    """How many cdf entries are surely <= u (the action), from the intervals in rows LOW and HIGH;
    UNCERTAIN when u may be on either side of one (NaN included)."""
    below = 0
    for j in range(ACTIONS - 1):
        if work[HIGH, j] <= u:
            below += 1
        elif not work[LOW, j] > u:
            return UNCERTAIN
    return below


@jit
def _tier1(work: np.ndarray) -> None:
    """Intervals (rows LOW, HIGH) for the cdf entries: the cdf at the logit centers, within R/2."""
    spread, scale, peak = 0.0, 0.0, -np.inf
    for i in range(ACTIONS):
        c, r = work[_CENTER3, i], work[_RADIUS3, i]
        spread = max(spread, r)
        scale = max(scale, abs(c) + r)
        peak = max(peak, c)
    total = 0.0
    for i in range(ACTIONS):
        work[_TERMS, i] = math.exp(work[_CENTER3, i] - peak)
        total += work[_TERMS, i]
    running, width = 0.0, 0.5 * spread + 2.0**-40 + 2.0**-51 * scale
    for j in range(ACTIONS - 1):
        running += work[_TERMS, j]
        work[LOW, j] = running / total - width
        work[HIGH, j] = running / total + width


@jit
def _tier2(work: np.ndarray) -> None:
    """Monotone intervals (rows LOW, HIGH) for the cdf entries, tight when the logits are far apart
    relative to their radii."""
    scale, top = 0.0, -np.inf
    for i in range(ACTIONS):
        c, r = work[_CENTER3, i], work[_RADIUS3, i]
        scale = max(scale, abs(c) + r)
        top = max(top, c + r)
    slack = 2.0**-40 + 2.0**-51 * scale
    for i in range(ACTIONS):
        work[_TERMS, i] = math.exp((work[_CENTER3, i] - work[_RADIUS3, i]) - top)
        work[_TERMS, ACTIONS + i] = math.exp((work[_CENTER3, i] + work[_RADIUS3, i]) - top)
    for j in range(ACTIONS - 1):
        below_low, below_high, above_low, above_high = 0.0, 0.0, 0.0, 0.0
        for i in range(ACTIONS):
            if i <= j:
                below_low += work[_TERMS, i]
                below_high += work[_TERMS, ACTIONS + i]
            else:
                above_low += work[_TERMS, i]
                above_high += work[_TERMS, ACTIONS + i]
        work[LOW, j] = below_low / (below_low + above_high) - slack
        work[HIGH, j] = below_high / (below_high + above_low) + slack


@jit
def first_pass(rows: np.ndarray, count: int, net: tuple[np.ndarray, ...], work: np.ndarray) -> None:
    """The cheap pass: cdf intervals (rows LOW, HIGH) for the observation whose live inputs are
    rows[:count]; a function of those inputs only (so they may be remembered)."""
    logit_bounds(rows, count, net, work, False)
    _tier1(work)


@jit
def second_pass(rows: np.ndarray, count: int, u: float, net: tuple[np.ndarray, ...], work: np.ndarray) -> int:
    """The precise pass, for when the first cannot decide: the action, or UNCERTAIN."""
    logit_bounds(rows, count, net, work, True)
    _tier1(work)
    decided = decide(work, u)
    if decided == UNCERTAIN:
        _tier2(work)
        decided = decide(work, u)
    return decided


@jit_inline
def action(rows: np.ndarray, count: int, u: float, net: tuple[np.ndarray, ...], work: np.ndarray) -> int:
    """The reference's action for the observation whose live inputs are rows[:count], or UNCERTAIN."""
    first_pass(rows, count, net, work)
    decided = decide(work, u)
    return decided if decided != UNCERTAIN else second_pass(rows, count, u, net, work)
