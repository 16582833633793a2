"""Compiled per-page kernels of the grid posterior (numba, both cores).

The same algorithm as :mod:`._grid` (mode by safeguarded Newton, tail ends, sinh nodes,
trapezoid normalisation, cumulative Simpson CDF and log-linear inverse CDF), written
for one page at a time and run over pages in parallel (``numba.prange`` over tiles of
:data:`TILE` pages). Each page reads its own crawls from the flat (CSR) arrays of the
history, keeps the intervals of its changed crawls in a small buffer and S0 = Σ(1 − I)τ
as one number, so pages of any length cost what their crawls cost and no array the
size of the history is made.

What makes it fast: a page's changed intervals are sorted once (insertion sort), so at
each node the terms run through the series, the exp route and the saturated tail in one
run each (no unpredictable branch), and the terms at the nodes are summed crawl by crawl
(:func:`_node_log_lik`) in loops of arithmetic only, which LLVM vectorises
(:func:`_series_run`: Bernoulli series near x = 0; :func:`_log1mexp_run`: exp and
atanh polynomials above). The other transcendental functions of a page are also formed
in arithmetic-only loops wherever their arguments are in range (:func:`_exp_ar`,
:func:`_expm1_neg_ar`, :func:`_log_ar`: a few ulps from libm; the range checks send
pages with nodes or draws beyond e^{±690} to the libm code): sinh, cosh and e^u at the
nodes (:func:`_node_setup_ar`), the likelihood's value and derivatives over the crawls in
the mode and tail searches (:func:`_log_lik_terms_ar`, :func:`_log_lik_derivs_ar`), the
density and cell slopes of the CDF, and per draw the in-cell inverse CDF and
exp(mode + scale·sinh(x)) (:func:`_cell_positions`, :func:`_draw_values`); each draw finds
its CDF cell from a table of 64 buckets. A tile's draws are gathered in a small buffer
and copied to the output row by row. Every value is within a few ulps of the NumPy
reference (``._grid``), which the tests check to 1e-12 on the draws (the draws use the
same uniforms).

Compiled on first use (``cache=True`` keeps the machine code on disk); importing this
module compiles nothing. Status codes per page: 0 ok, 1 no bracket for the mode, 2 mode
did not converge, 3 tails not within the float64 range.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numba as nb
import numpy as np

from .._vecmath import INV_LN2 as _INV_LN2
from .._vecmath import LN2_HI as _LN2_HI
from .._vecmath import LN2_LO as _LN2_LO
from .._vecmath import ROUND as _ROUND
from .._vecmath import ROUND_BITS as _ROUND_BITS
from .._vecmath import bits_f64 as _bits_f64
from .._vecmath import exp_split, expm1_reduced
from .._vecmath import f64_bits as _f64_bits

__all__ = ["grid_draws_block", "TILE", "CHUNK_TILES"]

#: buckets of the table that starts each draw's search for its CDF cell (a power of two)
BUCKETS = 64

#: pages per parallel work item: a tile's draws (TILE × n_draws doubles) stay in cache
TILE = 32
#: tiles handed to a thread at a time (numba.parallel_chunksize): dynamic scheduling, so that
#: a thread slowed by another process (or by the uniforms' thread) does not hold up the block
CHUNK_TILES = 4
#: pages with this many changed crawls or more sort them with numba's sort (insertion sort below)
INSERTION_SORT_BELOW = 48

_OPTS = dict(cache=True, nogil=True, error_model="numpy")
#: the runs of terms over nodes: fused multiply-adds, so that LLVM vectorises their loops
_OPTS_VEC = dict(_OPTS, fastmath={"contract"})

# the constants of ._grid (kept equal by the tests)
BRACKET_START = 20.0
DROP = 30.0
PROBE_SCALES = 5.0
END_SLACK = 5.0
END_ITERATIONS = 100
SIDE_NODES_SCALES = 4.0
MODE_TOL = 1e-9
MODE_MAX_ITER = 300
SERIES_BELOW = -18.0
LOG2 = math.log(2.0)
#: above this x, 1 − e^{−x} rounds to 1.0 (e^{−x} < 2^-54), so log(1 − e^{−x}) = 0.0 exactly
SATURATED = 37.5


@nb.njit(**_OPTS)
def _softplus(x):
    # np.logaddexp(0, x)
    if x > 0.0:
        return x + math.log1p(math.exp(-x))
    return math.log1p(math.exp(x))


@nb.njit(**_OPTS)
def _sigmoid(x):
    # scipy.special.expit
    return 1.0 / (1.0 + math.exp(-x))


@nb.njit(**_OPTS)
def _log_prior(u, A, B, C, M, E, L):
    return _log_prior_exp(u, math.exp(u) if B > 0.0 else 0.0, A, B, C, M, E, L)


@nb.njit(**_OPTS)
def _log_prior_exp(u, eu, A, B, C, M, E, L):
    """_log_prior(u, ...) given eu = exp(u)."""
    out = 0.0
    if A != 0.0:
        out += A * u
    if B > 0.0:
        out -= B * eu
    if C != 0.0:
        out -= C * (u - M) ** 2
    if E != 0.0:
        out -= E * _softplus(u - L)
    return out


@nb.njit(**_OPTS)
def _log_prior_derivs(u, A, B, C, M, E, L):
    d1 = 0.0
    d2 = 0.0
    if A != 0.0:
        d1 += A
    if B > 0.0:
        be = B * math.exp(u)
        d1 -= be
        d2 -= be
    if C != 0.0:
        d1 -= 2.0 * C * (u - M)
        d2 -= 2.0 * C
    if E != 0.0:
        s = _sigmoid(u - L)
        d1 -= E * s
        d2 -= E * s * (1.0 - s)
    return d1, d2


@nb.njit(**_OPTS)
def _times_exp(t0, u):
    if t0 > 0.0:
        return t0 * math.exp(u)
    return 0.0


#: at and below this x the terms use even power series (Bernoulli numbers) instead of
#: exp: log(1 − e^{−x}) = log x + h(x) and x/(e^x − 1); above it, 1 − e^{−x} is formed
#: from exp(−x), whose error is amplified by at most 1/(e^x − 1) < 0.59
SERIES_X = 1.0
#: terms of the series kept: the first one dropped is below 1.4e-19 (radius 2π, |x| <= 1)
SERIES_TERMS = 11


def _bernoulli_even(count):
    """B_2, B_4, ..., B_{2 count} as exact fractions (Akiyama–Tanigawa)."""
    a, out = [Fraction(0)] * (2 * count + 1), []
    for k in range(2 * count + 1):
        a[k] = Fraction(1, k + 1)
        for j in range(k, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        if k >= 2 and k % 2 == 0:
            out.append(a[0])
    return out


_B2N = _bernoulli_even(SERIES_TERMS)
#: x/(e^x − 1) = 1 − x/2 + Σ_n B_2n x^{2n}/(2n)!
_Q_COEF = np.array([float(b / math.factorial(2 * n)) for n, b in enumerate(_B2N, start=1)])
#: h(x) = log((1 − e^{−x})/x) = −x/2 + Σ_n B_2n x^{2n}/(2n (2n)!)
_H_COEF = np.array([float(b / (2 * n * math.factorial(2 * n))) for n, b in enumerate(_B2N, start=1)])


@nb.njit(inline="always", **_OPTS)
def _even_series(coef, z):
    """Σ_n coef[n] z^n over the SERIES_TERMS coefficients, by Horner's rule from the last."""
    acc = 0.0
    for n in range(SERIES_TERMS - 1, -1, -1):
        acc = acc * z + coef[n]
    return acc


@nb.njit(**_OPTS)
def _h_series(x):
    """log((1 − e^{−x})/x) for 0 <= x <= SERIES_X (so log(1 − e^{−x}) = log x + h(x))."""
    z = x * x
    return -0.5 * x + z * _even_series(_H_COEF, z)


@nb.njit(**_OPTS)
def _q_series(x):
    """x e^{−x}/(1 − e^{−x}) = x/(e^x − 1) for 0 <= x <= SERIES_X (1 at x = 0)."""
    z = x * x
    return (1.0 - 0.5 * x) + z * _even_series(_Q_COEF, z)


@nb.njit(**_OPTS)
def _log_lik(u, tau, m, t0):
    """Σ_{changed} log(1 − e^{−τ e^u}) − S0 e^u (as ExactLikelihood.value).

    ``tau[:m]`` must be sorted ascending: the terms run from the smallest x = τ e^u (the
    series) through exp(−x) to the first x above :data:`SATURATED`, where the sum stops
    (every later term is 0.0), so each branch is taken in one run per call.
    """
    eu = math.exp(u)
    total = 0.0
    for j in range(m):
        x = tau[j] * eu
        if x < 1e-290 or u < -700.0:
            v = u + math.log(tau[j])
            x2 = math.exp(v)
            if v < SERIES_BELOW:
                term = v - 0.5 * x2 + x2 * x2 / 24.0
            else:
                term = math.log(-math.expm1(-x2))
        elif x > SATURATED:
            break  # log(−expm1(−x)) is exactly 0.0 in float64 here and for every later (larger) x
        elif x > SERIES_X:
            term = math.log(1.0 - math.exp(-x))
        else:
            term = math.log(x) + _h_series(x)
        total += term
    return total - _times_exp(t0, u)


@nb.njit(**_OPTS)
def _log_lik_derivs(u, tau, m, t0):
    """First and second derivative in u (as ExactLikelihood.derivatives); ``tau[:m]`` sorted."""
    eu = math.exp(u)
    g = 0.0
    h = 0.0
    for j in range(m):
        x = tau[j] * eu
        if x > 745.0:
            break  # x e^{−x} underflows to q = 0 here and for every later (larger) x
        if x > SERIES_X:
            e = math.exp(-x)
            q = x * e / (1.0 - e)
        else:
            q = _q_series(x)
        g += q
        if q > 0.0:
            h += -q * (q + x - 1.0)
    t0e = _times_exp(t0, u)
    return g - t0e, h - t0e


#: bits of sqrt(1/2): y = 2^k · w with w in [sqrt(1/2), sqrt(2)) is read off bits(y) − this
_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD
_MANTISSA = 0x000FFFFFFFFFFFFF
#: the arithmetic exp below is used for arguments in [−FAST_EXP, FAST_EXP] only (normal results)
FAST_EXP = 700.0


@nb.njit(inline="always", **_OPTS_VEC)
def _exp_ar(y):
    """e^y for |y| <= FAST_EXP in arithmetic only, so that loops over it vectorise:
    y = n ln 2 + r, n = round(y/ln 2), |r| <= ln(2)/2, e^r − 1 from
    :func:`changerate_bayes._vecmath.expm1_reduced`, 2^n built from its bits (an error of
    about 1 ulp against libm's exp)."""
    sc, r = exp_split(y)
    return sc + sc * expm1_reduced(r)


@nb.njit(inline="always", **_OPTS_VEC)
def _expm1_neg_ar(y):
    """e^y − 1 for −FAST_EXP <= y <= 0 in arithmetic only: 2^n (e^r − 1) + (2^n − 1), both
    terms of the same sign for r <= 0 and of opposite sign only for n >= −1 and r > 0,
    where the cancellation costs at most a factor 2: within 3 ulps."""
    sc, r = exp_split(y)
    return sc * expm1_reduced(r) + (sc - 1.0)


@nb.njit(inline="always", **_OPTS_VEC)
def _atanh_series(q, z):
    """The odd series of atanh s = s (1 + z/3 + z²/5 + ...), z = s², from its terms of
    z^9/19 down: Horner's steps q·z + 1/19, ..., q·z + 1/3 applied to ``q`` (the sum of the
    higher terms, e.g. 1/21 for the series to s^21)."""
    q = q * z + 1.0 / 19.0
    q = q * z + 1.0 / 17.0
    q = q * z + 1.0 / 15.0
    q = q * z + 1.0 / 13.0
    q = q * z + 1.0 / 11.0
    q = q * z + 1.0 / 9.0
    q = q * z + 1.0 / 7.0
    q = q * z + 1.0 / 5.0
    q = q * z + 1.0 / 3.0
    return q


@nb.njit(inline="always", **_OPTS_VEC)
def _log_ar(y):
    """log y for a positive normal double y in arithmetic only (loops over it vectorise).

    y = 2^k w with w in [sqrt(1/2), sqrt(2)) taken from the bits of y; log w = 2 atanh(s),
    s = (w − 1)/(w + 1), |s| <= 0.1716, by its odd series to s^21 (the first term dropped,
    s^23/23, is below 1e-18 relative); log y = k ln 2 + log w with ln 2 split so that
    k·LN2_HI is exact: within a few ulps of log y (of |log w| near y = 1).
    """
    ix = _f64_bits(y) - _SQRT_HALF_BITS
    k = ix >> 52
    w = _bits_f64((ix & _MANTISSA) + _SQRT_HALF_BITS)
    f = w - 1.0  # exact (Sterbenz)
    sv = f / (2.0 + f)
    z = sv * sv
    q = _atanh_series(1.0 / 21.0, z)
    kf = _bits_f64(k + _ROUND_BITS) - _ROUND  # float(k) by bits (AVX2 has no int64 → double)
    return kf * _LN2_HI + ((2.0 * sv + 2.0 * sv * (z * q)) + kf * _LN2_LO)


@nb.njit(**_OPTS)
def _fast_nodes(s_lo, s_hi, lo_end, hi_end, tau, m):
    """Whether the nodes of a page are in the range of :func:`_node_terms_ar`: |s| and |u|
    below :data:`FAST_EXP` (with a margin for the rounding of the node formula) and the
    smallest x = τ e^u at least 1e-290 (normal, above the route of the tiny terms)."""
    lim = FAST_EXP - 10.0
    if not (abs(s_lo) < lim and abs(s_hi) < lim and lo_end > -lim and hi_end < lim):
        return False
    return m == 0 or math.log(tau[0]) + lo_end > -660.0


@nb.njit(**_OPTS_VEC)
def _node_setup_ar(mode, scale, s, u, eu, acc, log_cosh):
    """u = mode + scale·sinh(s), e^u and log cosh s at every node (and acc = 0), with the
    formulas of :func:`_node_log_lik` in arithmetic only (a loop that vectorises), for
    pages whose nodes are in the range of :func:`_exp_ar` (see :func:`_fast_nodes`)."""
    for g in range(s.size):
        e = _exp_ar(s[g])
        ie = 1.0 / e
        ug = mode + scale * (0.5 * (e - ie))
        u[g] = ug
        log_cosh[g] = _log_ar(0.5 * (e + ie))
        eu[g] = _exp_ar(ug)
        acc[g] = 0.0


@nb.njit(**_OPTS_VEC)
def _log1mexp_run(t, eu, lo, hi, acc, fbuf, ibuf):
    """acc[g] += log(1 − e^{−x}), x = t·eu[g], for SERIES_X < x <= SATURATED (g in lo:hi).

    Arithmetic only, in loops that vectorise: e^{−x} = 2^n e^r with n = round(−x/ln 2),
    |r| <= ln(2)/2 and e^r from its Taylor polynomial of degree 13 (truncation below 5e-18
    relative; 2^n built from its bits through the int64 view of ``fbuf``/``ibuf``), then
    log(1 − w) = 2 atanh(−w/(2 − w)) by its odd series (|w/(2 − w)| <= 0.23 for x >= 1,
    truncation below 1e-17 relative): a few ulps of log(−expm1(−x)).
    """
    n_run = hi - lo
    e_run = eu[lo:hi]
    acc_run = acc[lo:hi]
    fbits = fbuf.view(np.int64)
    scale = ibuf.view(np.float64)
    for g in range(n_run):
        fbuf[g] = (-t * e_run[g]) * _INV_LN2 + _ROUND
    for g in range(n_run):
        ibuf[g] = (fbits[g] - _ROUND_BITS + 1023) << 52
    for g in range(n_run):
        y = -t * e_run[g]
        n = fbuf[g] - _ROUND
        r = (y - n * _LN2_HI) - n * _LN2_LO
        sc = scale[g]
        w = sc + sc * expm1_reduced(r)  # e^{−x}
        v = -w / (2.0 - w)  # (y − 1)/(y + 1) for y = 1 − w
        z = v * v
        q = 1.0 / 25.0
        q = q * z + 1.0 / 23.0
        q = _atanh_series(q * z + 1.0 / 21.0, z)
        acc_run[g] += 2.0 * (v + v * (z * q))


@nb.njit(**_OPTS_VEC)
def _series_run(t, u, eu, lo, hi, acc):
    """acc[g] += log(1 − e^{−x}) = (u[g] + log t) + h(x), x = t·eu[g] <= SERIES_X (g in lo:hi), vectorised."""
    log_t = math.log(t)
    u_run = u[lo:hi]
    e_run = eu[lo:hi]
    acc_run = acc[lo:hi]
    for g in range(hi - lo):
        acc_run[g] += (u_run[g] + log_t) + _h_series(t * e_run[g])


@nb.njit(**_OPTS)
def _node_log_lik(mode, scale, s, tau, m, u, eu, acc, log_cosh, fbuf, ibuf, fast):
    """Σ_{changed} log(1 − e^{−τ e^u}) at every node u = mode + scale·sinh(s), into ``acc``
    (and u, e^u and log cosh s, the Jacobian of the sinh map, into the other arrays).

    The same terms as :func:`_log_lik` node by node, summed crawl by crawl: ``tau[:m]``
    ascending and the nodes ascending, x = τ e^u grows along both, so for each crawl the
    nodes split into four runs (tiny x, series, exp, saturated) whose ends only move
    down from one crawl to the next; each run is a loop without a branch. With ``fast``
    (:func:`_fast_nodes`), the nodes come from :func:`_node_setup_ar`.
    """
    size = s.size
    if fast:
        _node_setup_ar(mode, scale, s, u, eu, acc, log_cosh)
    for g in range(0 if fast else size):
        if abs(s[g]) < 700.0:
            e = math.exp(s[g])
            u[g] = mode + scale * (0.5 * (e - 1.0 / e))  # as _sinh
            log_cosh[g] = math.log(0.5 * (e + 1.0 / e))  # no cancellation: a few ulps
        else:
            u[g] = mode + scale * math.sinh(s[g])
            log_cosh[g] = _log_cosh(s[g])
        eu[g] = math.exp(u[g])
        acc[g] = 0.0
    tiny_end = size  # nodes [0, tiny_end): x < 1e-290 or u < −700 (the log τ + u route)
    series_end = size  # [tiny_end, series_end): x <= SERIES_X
    exp_end = size  # [series_end, exp_end): x <= SATURATED; beyond: the term is 0.0
    for j in range(m):
        t = tau[j]
        while exp_end > 0 and t * eu[exp_end - 1] > SATURATED:
            exp_end -= 1
        series_end = min(series_end, exp_end)
        while series_end > 0 and t * eu[series_end - 1] > SERIES_X:
            series_end -= 1
        tiny_end = min(tiny_end, series_end)
        while tiny_end > 0 and not (t * eu[tiny_end - 1] < 1e-290 or u[tiny_end - 1] < -700.0):
            tiny_end -= 1
        for g in range(tiny_end):
            v = u[g] + math.log(t)
            x2 = math.exp(v)
            if v < SERIES_BELOW:
                acc[g] += v - 0.5 * x2 + x2 * x2 / 24.0
            else:
                acc[g] += math.log(-math.expm1(-x2))
        _series_run(t, u, eu, tiny_end, series_end, acc)
        _log1mexp_run(t, eu, series_end, exp_end, acc, fbuf, ibuf)


@nb.njit(**_OPTS_VEC)
def _log_lik_terms_ar(eu, tau, m, tb):
    """Σ_j log(1 − e^{−x_j}), x_j = τ_j e^u (``tau[:m]`` sorted), with the formulas of
    :func:`_log_lik` in arithmetic only: one loop over the crawls that vectorises (both
    routes computed, one kept), then the sum in the crawl order. For x_0 >= 1e-290 and
    u >= −700 (no tiny terms); saturated terms (x > :data:`SATURATED`) are log 1 = 0.0."""
    for j in range(m):
        x = tau[j] * eu
        series = x <= SERIES_X
        z = x * x
        acc = 0.0
        for n in range(SERIES_TERMS - 1, -1, -1):
            acc = acc * z + _H_COEF[n]
        e = _exp_ar(-min(x, FAST_EXP))
        arg = x if series else (1.0 if x > SATURATED else 1.0 - e)
        tb[j] = _log_ar(arg) + ((-0.5 * x + z * acc) if series else 0.0)
    total = 0.0
    for j in range(m):
        total += tb[j]
    return total


@nb.njit(**_OPTS_VEC)
def _log_lik_derivs_ar(eu, tau, m, qb, hb):
    """The sums of :func:`_log_lik_derivs` for x_j = τ_j e^u <= FAST_EXP (every term
    counts: q > 0), in arithmetic only (one loop that vectorises, then the sums in order)."""
    for j in range(m):
        x = tau[j] * eu
        z = x * x
        acc = 0.0
        for n in range(SERIES_TERMS - 1, -1, -1):
            acc = acc * z + _Q_COEF[n]
        e = _exp_ar(-x)
        q = ((1.0 - 0.5 * x) + z * acc) if x <= SERIES_X else x * e / (1.0 - e)
        qb[j] = q
        hb[j] = -q * (q + x - 1.0)
    g = 0.0
    h = 0.0
    for j in range(m):
        g += qb[j]
        h += hb[j]
    return g, h


@nb.njit(**_OPTS)
def _lik(u, tau, m, t0, qb):
    """_log_lik(u, tau, m, t0), by :func:`_log_lik_terms_ar` where its range allows."""
    eu = math.exp(u)
    if m > 0 and u >= -700.0 and tau[0] * eu >= 1e-290:
        return _log_lik_terms_ar(eu, tau, m, qb) - (t0 * eu if t0 > 0.0 else 0.0)
    return _log_lik(u, tau, m, t0)


@nb.njit(**_OPTS)
def _lik_derivs(u, tau, m, t0, qb, hb):
    """_log_lik_derivs(u, tau, m, t0), by :func:`_log_lik_derivs_ar` where its range allows."""
    eu = math.exp(u)
    if m > 0 and tau[m - 1] * eu <= FAST_EXP:
        g, h = _log_lik_derivs_ar(eu, tau, m, qb, hb)
        t0e = t0 * eu if t0 > 0.0 else 0.0
        return g - t0e, h - t0e
    return _log_lik_derivs(u, tau, m, t0)


@nb.njit(**_OPTS)
def _post(u, tau, m, t0, A, B, C, M, E, L, qb):
    return _lik(u, tau, m, t0, qb) + _log_prior(u, A, B, C, M, E, L)


@nb.njit(**_OPTS)
def _post_derivs(u, tau, m, t0, A, B, C, M, E, L, qb, hb):
    g, h = _lik_derivs(u, tau, m, t0, qb, hb)
    p1, p2 = _log_prior_derivs(u, A, B, C, M, E, L)
    return g + p1, h + p2


@nb.njit(**_OPTS)
def _mode(start, tau, m, t0, A, B, C, M, E, L, qb, hb):
    """(mode, status) as ._grid._mode for one page."""
    if not math.isfinite(start):
        start = 0.0
    lo = start - BRACKET_START
    hi = start + BRACKET_START
    width = BRACKET_START
    ok = False
    for _ in range(40):
        bad_lo = not (_post_derivs(lo, tau, m, t0, A, B, C, M, E, L, qb, hb)[0] > 0.0)
        bad_hi = not (_post_derivs(hi, tau, m, t0, A, B, C, M, E, L, qb, hb)[0] < 0.0)
        if not (bad_lo or bad_hi):
            ok = True
            break
        width *= 4.0
        if bad_lo:
            lo = lo - width
        if bad_hi:
            hi = hi + width
    if not ok:
        return start, 1
    u = min(max(start, lo), hi)
    prev2 = hi - lo
    prev = prev2
    for _ in range(MODE_MAX_ITER):
        g, h = _post_derivs(u, tau, m, t0, A, B, C, M, E, L, qb, hb)
        if g > 0.0:
            lo = u
        if g < 0.0:
            hi = u
        newton = u - g / h
        use = (newton >= lo) and (newton <= hi) and (2.0 * abs(newton - u) <= abs(prev2))
        new = newton if use else 0.5 * (lo + hi)
        if g == 0.0:
            new = u
        step = new - u
        prev2 = prev
        prev = step
        tol_u = MODE_TOL * (1.0 + abs(u))
        done = (abs(step) <= tol_u) or (hi - lo <= tol_u)
        u = new
        if done:
            return u, 0
    return u, 2


@nb.njit(**_OPTS)
def _tail_end(mode, scale, level, side, tau, m, t0, A, B, C, M, E, L, qb, hb):
    probe = mode + side * PROBE_SCALES * scale
    f_p = _post(probe, tau, m, t0, A, B, C, M, E, L, qb)
    g_p = _post_derivs(probe, tau, m, t0, A, B, C, M, E, L, qb, hb)[0]
    short = f_p > level
    if short:
        return probe + side * (f_p - level) / abs(g_p)
    end = probe
    inner = mode
    f_out = f_p
    g_out = g_p
    for _ in range(END_ITERATIONS):
        work = (not (f_out >= level - END_SLACK)) and (abs(end - inner) > 1e-12 * (1.0 + abs(end)))
        if not work:
            break
        newton = end - (f_out - level) / g_out
        useful = (
            math.isfinite(newton) and (side * (newton - inner) > 0.0) and (abs(newton - end) >= 0.5 * abs(end - inner))
        )
        trial = newton if useful else 0.5 * (inner + end)
        f_t = _post(trial, tau, m, t0, A, B, C, M, E, L, qb)
        if not (f_t > level):
            g_t = _post_derivs(trial, tau, m, t0, A, B, C, M, E, L, qb, hb)[0]
            end = trial
            f_out = f_t
            g_out = g_t
        else:
            inner = trial
    return end


@nb.njit(**_OPTS)
def _sinh(x):
    """sinh x from one exp: the absolute error is a few ulps of cosh x, which is all
    u = mode + scale·sinh(s) needs (math.sinh's accurate small-|x| branch costs 4×)."""
    if abs(x) < 700.0:
        e = math.exp(x)
        return 0.5 * (e - 1.0 / e)
    return math.sinh(x)


@nb.njit(**_OPTS)
def _log_cosh(s):
    a = abs(s)
    return a + math.log1p(math.exp(-2.0 * a)) - LOG2


@nb.njit(**_OPTS_VEC)
def _normalised_density(logd, peak, work):
    """logd −= peak and work = exp(logd) (0.0 below −FAST_EXP, i.e. under e^-700 of the peak)."""
    for g in range(logd.size):
        v = logd[g] - peak
        logd[g] = v
        e = _exp_ar(min(max(v, -FAST_EXP), 0.0))
        work[g] = e if v >= -FAST_EXP else 0.0


@nb.njit(**_OPTS_VEC)
def _cell_slopes(logd, beta, work):
    """beta[g] = logd[g + 1] − logd[g] (0 where undefined) and work[g] = expm1 of the
    clipped −|beta[g]|, once per cell rather than once per draw."""
    for g in range(logd.size - 1):
        b = logd[g + 1] - logd[g]
        b = 0.0 if b != b else b
        beta[g] = b
        work[g] = _expm1_neg_ar(min(max(-abs(b), -700.0), -1e-300))


@nb.njit(**_OPTS_VEC)
def _cell_positions(x0, step, dz, dn, dj, dr):
    """x = x0 + (j + t)·step per draw, t the inverse CDF of e^{bt} on [0, 1] (into ``dz``).

    t = log1p(z)/nb with z = ψ·expm1(nb) (``dz``), nb = clipped −|b| (``dn``), mirrored
    (t → 1 − t) where the cell rises (``dr`` = 1): log1p by Kahan's log(w)·z/(w − 1),
    w = 1 + z rounded, with the arithmetic log (w is 0 or at least 2^-53).
    """
    for d in range(dz.size):
        z = dz[d]
        w = 1.0 + z
        lw = _log_ar(max(w, 1e-300)) * (z / (w - 1.0))
        l1p = z if w == 1.0 else (lw if w > 0.0 else -np.inf)
        t = l1p / dn[d]
        t = 1.0 if t != t else t
        t = min(max(t, 0.0), 1.0)
        t = 1.0 - t if dr[d] > 0.0 else t
        dz[d] = x0 + (dj[d] + t) * step


@nb.njit(**_OPTS_VEC)
def _draw_values(mode, scale, shift, dx, dv):
    """dv = exp(mode + scale·sinh(x) − shift) for draws whose values lie within e^{±FAST_EXP}."""
    for d in range(dx.size):
        e = _exp_ar(dx[d])
        dv[d] = _exp_ar(mode + scale * (0.5 * (e - 1.0 / e)) - shift)


@nb.njit(**_OPTS)
def _fit(tau, m, t0, start, A, B, C, M, E, L, lin, s, ub, eub, logd, work, fbuf, ibuf, qb, hb):
    """One page's adapted grid (as ._grid.fit_grid for one page).

    Returns (status, mode, scale, log Z, lo_end, hi_end, fast): the tails' ends in u and
    whether the nodes' likelihood took the fast path (:func:`_fast_nodes`). On success ``s`` holds the nodes, ``ub`` the nodes in log Δ, ``logd`` the normalised
    log density of s and ``work`` the density over its peak.
    """
    mode, status = _mode(start, tau, m, t0, A, B, C, M, E, L, qb, hb)
    if status != 0:
        return status, mode, 0.0, 0.0, 0.0, 0.0, False
    f_m = _post(mode, tau, m, t0, A, B, C, M, E, L, qb)
    h = _post_derivs(mode, tau, m, t0, A, B, C, M, E, L, qb, hb)[1]
    scale = 1.0 / math.sqrt(max(-h, 1e-300))
    level = f_m - DROP
    lo_end = _tail_end(mode, scale, level, -1.0, tau, m, t0, A, B, C, M, E, L, qb, hb)
    hi_end = _tail_end(mode, scale, level, 1.0, tau, m, t0, A, B, C, M, E, L, qb, hb)
    if not (math.isfinite(lo_end) and math.isfinite(hi_end) and math.isfinite(scale) and scale > 0.0):
        return 3, mode, 0.0, 0.0, 0.0, 0.0, False
    scale = min(scale, min(mode - lo_end, hi_end - mode) / SIDE_NODES_SCALES)
    s_lo = -math.asinh((mode - lo_end) / scale)
    s_hi = math.asinh((hi_end - mode) / scale)
    size = lin.size
    log_scale = math.log(scale)
    for g in range(size):
        s[g] = s_lo + (s_hi - s_lo) * lin[g]
    fast = _fast_nodes(s_lo, s_hi, lo_end, hi_end, tau, m)
    # ub, eub, work: u, e^u and the likelihood's terms at the nodes; logd: log cosh s
    _node_log_lik(mode, scale, s, tau, m, ub, eub, work, logd, fbuf, ibuf, fast)
    peak = -np.inf
    for g in range(size):
        u = ub[g]
        eu = eub[g]
        v = (work[g] - (t0 * eu if t0 > 0.0 else 0.0)) + _log_prior_exp(u, eu, A, B, C, M, E, L)
        v += log_scale + logd[g]
        logd[g] = v
        if v > peak:
            peak = v
    _normalised_density(logd, peak, work)
    total = 0.0
    for g in range(size):
        total += work[g] * (0.5 if (g == 0 or g == size - 1) else 1.0)
    log_mass = math.log(total * (s[1] - s[0]))
    for g in range(size):
        logd[g] -= log_mass
    return 0, mode, scale, peak + log_mass, lo_end, hi_end, fast


@nb.njit(inline="always", **_OPTS)
def _fit_buffers(size, max_len):
    """The scratch of :func:`_fit` and of the CDF of one page at a time: the changed
    intervals and their two series terms (max_len), then the nodes s, log density, CDF,
    work and the float/int64 buffers of the vectorised exp (size)."""
    return (
        np.empty(max_len),
        np.empty(max_len),
        np.empty(max_len),
        np.empty(size),
        np.empty(size),
        np.empty(size),
        np.empty(size),
        np.empty(size),
        np.empty(size, dtype=np.int64),
    )


@nb.njit(**_OPTS)
def _simpson_cdf(work, cdf):
    """cdf = the cumulative Simpson integral of ``work`` with unit spacing
    (scipy.integrate.cumulative_simpson), made monotone and normalised to end at 1."""
    size = work.size
    cdf[0] = 0.0
    acc = 0.0
    third = 1.0 / 3.0
    for c in range(size - 1):
        if c == size - 2 or c % 2 == 1:
            # the h2 formula: the cell [c, c+1] from y[c-1], y[c], y[c+1]
            f1 = work[c + 1]
            f2 = work[c]
            f3 = work[c - 1]
        else:
            f1 = work[c]
            f2 = work[c + 1]
            f3 = work[c + 2]
        acc += third * (5.0 * f1 / 4.0 + 2.0 * f2 - f3 / 4.0)
        cdf[c + 1] = acc
    for g in range(1, size):
        if cdf[g] < cdf[g - 1]:
            cdf[g] = cdf[g - 1]
    last = cdf[size - 1]
    for g in range(size):
        cdf[g] /= last


@nb.njit(inline="always", **_OPTS)
def _cell(cdf, size, p, j):
    """The cell of p in the CDF, searched up from cell j: the largest j' <= size − 2 with
    cdf[j'] <= p (j' >= j), and the fraction of the cell's mass below p, in [0, 1] (0 in a
    cell without mass)."""
    while j < size - 2 and cdf[j + 1] <= p:
        j += 1
    low = cdf[j]
    mass = cdf[j + 1] - low
    phi = 0.0
    if mass > 0.0:
        phi = min(max((p - low) / mass, 0.0), 1.0)
    return j, phi


@nb.njit(**_OPTS)
def _sort_ascending(buf, m):
    """Sort buf[:m] in place: insertion sort for the few changed crawls of a typical page
    (no call, no allocation), numba's sort above :data:`INSERTION_SORT_BELOW`."""
    if m >= INSERTION_SORT_BELOW:
        buf[:m].sort()
        return
    for k in range(1, m):
        v = buf[k]
        j = k - 1
        while j >= 0 and buf[j] > v:
            buf[j + 1] = buf[j]
            j -= 1
        buf[j + 1] = v


@nb.njit(**_OPTS)
def _gather(changed, tau, lo, hi, buf):
    """The changed intervals of crawls lo:hi into buf (sorted ascending, see _log_lik) and
    S0 = Σ(1 − I)τ; returns (m, S0)."""
    m = 0
    t0 = 0.0
    for k in range(lo, hi):
        if changed[k] != 0:
            buf[m] = tau[k]
            m += 1
        else:
            t0 += tau[k]
    _sort_ascending(buf, m)
    return m, t0


@nb.njit(**_OPTS)
def _start(buf, m, t0):
    """Crude starting value of the mode of log Δ: each of the m changed intervals buf[:m]
    counts half as exposure."""
    half = 0.0
    for j in range(m):
        half += buf[j]
    half /= 2.0
    return math.log((m + 0.5) / (t0 + half))


@nb.njit(parallel=True, **_OPTS)
def grid_draws_block(changed, tau, offsets, lo, hi, A, B, C, M, E, L, shift, lin, uniforms, out, status, bad_mode):
    """Draws for pages lo:hi into out[:, lo:hi] (out has shape (n_draws, n_pages)).

    ``changed``, ``tau`` and ``offsets`` are the flat (CSR) history; ``uniforms`` has
    shape (hi − lo, n_draws), row r for page lo + r.
    """
    n = hi - lo
    size = lin.size
    n_draws = uniforms.shape[1]
    n_tiles = (n + TILE - 1) // TILE
    lim = FAST_EXP - 10.0
    max_len = 1
    for i in range(lo, hi):
        max_len = max(max_len, offsets[i + 1] - offsets[i])
    for t in nb.prange(n_tiles):
        buf, qb, hb, s, logd, cdf, work, fbuf, ibuf = _fit_buffers(size, max_len)
        beta = np.empty(size)
        table = np.empty(BUCKETS, dtype=np.intp)
        dz = np.empty(n_draws)
        dn = np.empty(n_draws)
        dj = np.empty(n_draws)
        dr = np.empty(n_draws)
        # the tile's draws, column k for page first + k, copied to out row by row at the end:
        # TILE consecutive doubles per row instead of one store per row and page (rows of out
        # are n_pages · 8 bytes apart, so column stores miss the cache and alias in its sets)
        tile_out = np.empty((n_draws, TILE))
        first = lo + t * TILE
        last = min(first + TILE, hi)
        for i in range(first, last):
            m, t0 = _gather(changed, tau, offsets[i], offsets[i + 1], buf)
            start = _start(buf, m, t0)
            # fit page i's grid; cdf and beta hold u and e^u at the nodes until the CDF needs them
            st, mode, scale, _, lo_end, hi_end, fast = _fit(
                buf, m, t0, start, A[i], B[i], C[i], M[i], E[i], L[i], lin, s, cdf, beta, logd, work, fbuf, ibuf, qb, hb
            )
            status[i] = st
            if st != 0:
                bad_mode[i] = mode
                continue
            # its draws exp(u) · e^{−shift} into column i − first of tile_out
            step = s[1] - s[0]
            _simpson_cdf(work[:size], cdf)
            _cell_slopes(logd, beta, work)
            # the cell of each draw, j = max{j <= size − 2 : cdf[j] <= p} (the binary search of
            # ._grid.inverse_cdf), from a table of that cell at p = k/BUCKETS and a short walk up
            j = 0
            for k in range(BUCKETS):
                q = k * (1.0 / BUCKETS)  # exact: BUCKETS is a power of two
                while j < size - 2 and cdf[j + 1] <= q:
                    j += 1
                table[k] = j
            # per draw: its cell and the argument of the in-cell inverse CDF (the branches), then
            # the transcendental functions in loops of arithmetic only (_cell_positions, _draw_values)
            probs = uniforms[i - lo]
            for d in range(n_draws):
                p = probs[d]
                j = table[min(int(p * BUCKETS), BUCKETS - 1)]
                # two steps without a branch (a bucket rarely spans more cells), then the rest
                j += 1 if (j < size - 2) & (cdf[j + 1] <= p) else 0
                j += 1 if (j < size - 2) & (cdf[min(j + 1, size - 1)] <= p) else 0
                j, phi = _cell(cdf, size, p, j)
                b = beta[j]
                rising = b > 0.0
                dz[d] = (1.0 - phi if rising else phi) * work[j]
                dn[d] = min(max(-abs(b), -700.0), -1e-300)
                dj[d] = j
                dr[d] = 1.0 if rising else 0.0
            _cell_positions(s[0], step, dz, dn, dj, dr)
            col = i - first
            if fast and lo_end - shift[i] > -lim and hi_end - shift[i] < lim:
                _draw_values(mode, scale, shift[i], dz, dn)
                for d in range(n_draws):
                    tile_out[d, col] = dn[d]
            else:
                for d in range(n_draws):
                    tile_out[d, col] = math.exp(mode + scale * _sinh(dz[d]) - shift[i])
        for d in range(n_draws):
            for k in range(last - first):
                out[d, first + k] = tile_out[d, k]
