"""Compiled per-page kernels of the grid posterior (numba, both cores).

The same algorithm as :mod:`._grid` (mode by safeguarded Newton, tail ends, sinh nodes,
trapezoid normalisation, cumulative Simpson CDF and log-linear inverse CDF), written
for one page at a time and run over pages in parallel (``numba.prange`` over tiles of
:data:`TILE` pages). Each page reads its own crawls from the flat (CSR) arrays of the
history, keeps the intervals of its changed crawls in a small buffer and S0 = Σ(1 − I)τ
as one number, so pages of any length cost what their crawls cost and no array the
size of the history is made.

What makes it fast: a page's changed intervals are sorted once, so at each node the
terms run through the series, the exp route and the saturated tail in one run each
(no unpredictable branch), and the terms at the nodes are summed crawl by crawl
(:func:`_node_log_lik`) in loops of arithmetic only, which LLVM vectorises
(:func:`_series_run`: Bernoulli series near x = 0; :func:`_log1mexp_run`: exp and
atanh polynomials above);
sinh, cosh and log1p are formed from one exp or one log; each draw finds its CDF cell
from a table of 64 buckets. Every value is within a few ulps of the NumPy reference
(``._grid``), which the tests check to 1e-12 on the draws.

Compiled on first use (``cache=True`` keeps the machine code on disk); importing this
module compiles nothing. Status codes per page: 0 ok, 1 no bracket for the mode, 2 mode
did not converge, 3 tails not within the float64 range.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .._vecmath import INV_LN2 as _INV_LN2
from .._vecmath import LN2_HI as _LN2_HI
from .._vecmath import LN2_LO as _LN2_LO
from .._vecmath import ROUND as _ROUND
from .._vecmath import ROUND_BITS as _ROUND_BITS
from .._vecmath import expm1_reduced

__all__ = ["grid_draws_block", "TILE"]

#: buckets of the table that starts each draw's search for its CDF cell (a power of two)
BUCKETS = 64

#: pages per parallel work item: a tile's draws (TILE × n_draws doubles) stay in cache
TILE = 16

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
    from fractions import Fraction

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


@nb.njit(**_OPTS)
def _h_series(x):
    """log((1 − e^{−x})/x) for 0 <= x <= SERIES_X (so log(1 − e^{−x}) = log x + h(x))."""
    z = x * x
    acc = 0.0
    for n in range(SERIES_TERMS - 1, -1, -1):
        acc = acc * z + _H_COEF[n]
    return -0.5 * x + z * acc


@nb.njit(**_OPTS)
def _q_series(x):
    """x e^{−x}/(1 − e^{−x}) = x/(e^x − 1) for 0 <= x <= SERIES_X (1 at x = 0)."""
    z = x * x
    acc = 0.0
    for n in range(SERIES_TERMS - 1, -1, -1):
        acc = acc * z + _Q_COEF[n]
    return (1.0 - 0.5 * x) + z * acc


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
        q = q * z + 1.0 / 21.0
        q = q * z + 1.0 / 19.0
        q = q * z + 1.0 / 17.0
        q = q * z + 1.0 / 15.0
        q = q * z + 1.0 / 13.0
        q = q * z + 1.0 / 11.0
        q = q * z + 1.0 / 9.0
        q = q * z + 1.0 / 7.0
        q = q * z + 1.0 / 5.0
        q = q * z + 1.0 / 3.0
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
def _node_log_lik(mode, scale, s, tau, m, u, eu, acc, log_cosh, fbuf, ibuf):
    """Σ_{changed} log(1 − e^{−τ e^u}) at every node u = mode + scale·sinh(s), into ``acc``
    (and u, e^u and log cosh s, the Jacobian of the sinh map, into the other arrays).

    The same terms as :func:`_log_lik` node by node, summed crawl by crawl: ``tau[:m]``
    ascending and the nodes ascending, x = τ e^u grows along both, so for each crawl the
    nodes split into four runs (tiny x, series, exp, saturated) whose ends only move
    down from one crawl to the next; each run is a loop without a branch.
    """
    size = s.size
    for g in range(size):
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


@nb.njit(**_OPTS)
def _post(u, tau, m, t0, A, B, C, M, E, L):
    return _log_lik(u, tau, m, t0) + _log_prior(u, A, B, C, M, E, L)


@nb.njit(**_OPTS)
def _post_derivs(u, tau, m, t0, A, B, C, M, E, L):
    g, h = _log_lik_derivs(u, tau, m, t0)
    p1, p2 = _log_prior_derivs(u, A, B, C, M, E, L)
    return g + p1, h + p2


@nb.njit(**_OPTS)
def _mode(start, tau, m, t0, A, B, C, M, E, L):
    """(mode, status) as ._grid._mode for one page."""
    if not math.isfinite(start):
        start = 0.0
    lo = start - BRACKET_START
    hi = start + BRACKET_START
    width = BRACKET_START
    ok = False
    for _ in range(40):
        bad_lo = not (_post_derivs(lo, tau, m, t0, A, B, C, M, E, L)[0] > 0.0)
        bad_hi = not (_post_derivs(hi, tau, m, t0, A, B, C, M, E, L)[0] < 0.0)
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
        g, h = _post_derivs(u, tau, m, t0, A, B, C, M, E, L)
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
def _tail_end(mode, scale, level, side, tau, m, t0, A, B, C, M, E, L):
    probe = mode + side * PROBE_SCALES * scale
    f_p = _post(probe, tau, m, t0, A, B, C, M, E, L)
    g_p = _post_derivs(probe, tau, m, t0, A, B, C, M, E, L)[0]
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
        useful = math.isfinite(newton) and (side * (newton - inner) > 0.0) and (
            abs(newton - end) >= 0.5 * abs(end - inner))
        trial = newton if useful else 0.5 * (inner + end)
        f_t = _post(trial, tau, m, t0, A, B, C, M, E, L)
        if not (f_t > level):
            g_t = _post_derivs(trial, tau, m, t0, A, B, C, M, E, L)[0]
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
def _log1p(z):
    """log(1 + z) to a few ulps with one log (Kahan: log(w)·z/(w − 1), w = 1 + z rounded)."""
    w = 1.0 + z
    if w == 1.0:
        return z
    return math.log(w) * (z / (w - 1.0))


@nb.njit(**_OPTS)
def _log_cosh(s):
    a = abs(s)
    return a + math.log1p(math.exp(-2.0 * a)) - LOG2


@nb.njit(**_OPTS)
def _page(i, tau, m, t0, start, A, B, C, M, E, L, shift, lin, probs, out, col, s, logd, cdf, beta, work, table,
          fbuf, ibuf):
    """Fit page i's grid and write its draws exp(u) · e^{−shift} to out[:, col]. Returns status."""
    mode, status = _mode(start, tau, m, t0, A, B, C, M, E, L)
    if status != 0:
        work[0] = mode
        return status
    f_m = _post(mode, tau, m, t0, A, B, C, M, E, L)
    h = _post_derivs(mode, tau, m, t0, A, B, C, M, E, L)[1]
    scale = 1.0 / math.sqrt(max(-h, 1e-300))
    level = f_m - DROP
    lo_end = _tail_end(mode, scale, level, -1.0, tau, m, t0, A, B, C, M, E, L)
    hi_end = _tail_end(mode, scale, level, 1.0, tau, m, t0, A, B, C, M, E, L)
    if not (math.isfinite(lo_end) and math.isfinite(hi_end) and math.isfinite(scale) and scale > 0.0):
        work[0] = mode
        return 3
    scale = min(scale, min(mode - lo_end, hi_end - mode) / SIDE_NODES_SCALES)
    s_lo = -math.asinh((mode - lo_end) / scale)
    s_hi = math.asinh((hi_end - mode) / scale)
    size = lin.size
    log_scale = math.log(scale)
    for g in range(size):
        s[g] = s_lo + (s_hi - s_lo) * lin[g]
    # the log posterior at the nodes (as _post at each node, the crawl loop outside):
    # cdf, beta and work hold u, e^u and the likelihood terms until the CDF needs them
    _node_log_lik(mode, scale, s, tau, m, cdf, beta, work, logd, fbuf, ibuf)
    peak = -np.inf
    for g in range(size):
        u = cdf[g]
        eu = beta[g]
        v = (work[g] - (t0 * eu if t0 > 0.0 else 0.0)) + _log_prior_exp(u, eu, A, B, C, M, E, L)  # as _post
        v += log_scale + logd[g]
        logd[g] = v
        if v > peak:
            peak = v
    # normalisation by the trapezoid rule over s (as fit_grid), then the CDF (inverse_cdf)
    # (work holds the density over its peak, exp(logd − max logd), for the CDF)
    total = 0.0
    for g in range(size):
        logd[g] -= peak
        e = math.exp(logd[g])
        work[g] = e
        w = 0.5 if (g == 0 or g == size - 1) else 1.0
        total += e * w
    step = s[1] - s[0]
    log_mass = math.log(total * (s[1] - s[0]))
    for g in range(size):
        logd[g] -= log_mass
    # cumulative Simpson with unit spacing (scipy.integrate.cumulative_simpson)
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
    for g in range(size - 1):
        b = logd[g + 1] - logd[g]
        beta[g] = 0.0 if math.isnan(b) else b
        # expm1 of the clipped cell slope, once per cell rather than once per draw
        work[g] = math.expm1(min(max(-abs(beta[g]), -700.0), -1e-300))
    # the cell of each draw, j = max{j <= size − 2 : cdf[j] <= p} (the binary search of
    # ._grid.inverse_cdf), from a table of that cell at p = k/BUCKETS and a short walk up
    j = 0
    for k in range(BUCKETS):
        q = k * (1.0 / BUCKETS)  # exact: BUCKETS is a power of two
        while j < size - 2 and cdf[j + 1] <= q:
            j += 1
        table[k] = j
    x0 = s[0]
    for d in range(probs.size):
        p = probs[d]
        j = table[min(int(p * BUCKETS), BUCKETS - 1)]
        while j < size - 2 and cdf[j + 1] <= p:
            j += 1
        low = cdf[j]
        mass = cdf[j + 1] - low
        phi = 0.0
        if mass > 0.0:
            phi = min(max((p - low) / mass, 0.0), 1.0)
        b = beta[j]
        rising = b > 0.0
        psi = 1.0 - phi if rising else phi
        nbv = min(max(-abs(b), -700.0), -1e-300)
        t = _log1p(psi * work[j]) / nbv
        if math.isnan(t):
            t = 1.0
        t = min(max(t, 0.0), 1.0)
        if rising:
            t = 1.0 - t
        x = x0 + (j + t) * step
        out[d, col] = math.exp(mode + scale * _sinh(x) - shift)
    return 0


@nb.njit(parallel=True, **_OPTS)
def grid_draws_block(changed, tau, offsets, lo, hi, A, B, C, M, E, L, shift, lin, uniforms, out, status, bad_mode):
    """Draws for pages lo:hi into out[:, lo:hi] (out has shape (n_draws, n_pages)).

    ``changed``, ``tau`` and ``offsets`` are the flat (CSR) history; ``uniforms`` has
    shape (hi − lo, n_draws), row r for page lo + r.
    """
    n = hi - lo
    size = lin.size
    n_tiles = (n + TILE - 1) // TILE
    max_len = 1
    for i in range(lo, hi):
        max_len = max(max_len, offsets[i + 1] - offsets[i])
    for t in nb.prange(n_tiles):
        buf = np.empty(max_len)
        s = np.empty(size)
        logd = np.empty(size)
        cdf = np.empty(size)
        beta = np.empty(size)
        work = np.empty(size)
        table = np.empty(BUCKETS, dtype=np.intp)
        fbuf = np.empty(size)
        ibuf = np.empty(size, dtype=np.int64)
        first = lo + t * TILE
        for i in range(first, min(first + TILE, hi)):
            m = 0
            t0 = 0.0
            for k in range(offsets[i], offsets[i + 1]):
                if changed[k] != 0:
                    buf[m] = tau[k]
                    m += 1
                else:
                    t0 += tau[k]
            buf[:m].sort()  # ascending: see _log_lik
            half = 0.0
            for j in range(m):
                half += buf[j]
            half /= 2.0
            start = math.log((m + 0.5) / (t0 + half))
            st = _page(i, buf, m, t0, start, A[i], B[i], C[i], M[i], E[i], L[i], shift[i], lin,
                       uniforms[i - lo], out, i, s, logd, cdf, beta, work, table, fbuf, ibuf)
            status[i] = st
            if st != 0:
                bad_mode[i] = work[0]
