"""Numba kernels of the point-mass filter of log Δ (compiled on first use, cached on disk).

State of one page under one volatility: probabilities ``w`` (summing to one) of the
lattice nodes u_i = u_0 + i·h of u = log Δ, zero outside a range [lo, hi] of nodes (the
support). One crawl with interval τ:

1. support: nodes whose probability is at most :data:`TAIL` times the page's largest
   (a relative 1e-30, far below float64 resolution of the sums) are set to zero, and
   the range shrinks to the outermost nodes above it;
2. predict (σ > 0): w ← K_t w, K_t the transition of the nearest-neighbour
   continuous-time random walk on the lattice over time τ (the discrete Gaussian kernel
   e^{−t} I_n(t), t = σ²τ/h²: variance σ²τ exactly, K_s K_t = K_{s+t}), truncated at
   :data:`KERNEL_SDS` standard deviations and at the ends of the lattice, each column
   renormalised so that no mass leaves the lattice; the range grows by the kernel's
   half-width B on each side. The taps come from Miller's downward recurrence started at
   the order :func:`miller_start` chooses from t and B (a few orders past B for small t,
   where the recurrence's truncation error is bounded by MILLER_EPS = 1e-18 relative),
   or for t <= SERIES_T = 1e-30 from the series' leading terms (t/2)^n/n!, or, when the
   kernel is wider than the lattice (√t > G), by the upward recurrence from Hankel's
   expansion of I_1/I_0 (stable there; as t → ∞ the transition tends to the uniform
   distribution on the lattice). The work per crawl is thus O(G²) at most, whatever σ
   and τ are;
3. predictive: P(I = 1) = Σ_i w_i (1 − e^{−Δ_i τ}), P(I = 0) = Σ_i w_i e^{−Δ_i τ};
4. update: w_i ← w_i P(I | Δ_i, τ) / P(I).

How the loops are written (so that LLVM vectorises them): the kernel is applied as a
gather, out_i = k_0 v_i + Σ_{d=1..B} k_d (v_{i−d} + v_{i+d}), v the column-normalised
sources in a zero-padded buffer, one loop over the output range per tap without a branch;
e^{−Δ_i τ} and 1 − e^{−Δ_i τ} come from one arithmetic-only exp per node (reduction by
ln 2, 2^n built from its bits, e^r − 1 by :func:`changerate_bayes._vecmath.expm1_reduced`,
so 1 − e^{−x} keeps its relative accuracy as x → 0), in loops over slices that start at 0:
on the output range for one volatility, and once per page and crawl on the whole lattice,
shared by the volatilities, when there are several.
e^{−x} is taken as 0 where x > :data:`UNDERFLOW_X` (it is below the smallest normal
float64 there). h² is computed once per kernel call, not per crawl. Loops run over pages
in parallel (``prange``) and, within a page, over crawls and nodes; no Python loop over
pages.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .._vecmath import INV_LN2, LN2_HI, LN2_LO, ROUND, ROUND_BITS, expm1_reduced, max_of

#: the random-walk kernel is cut at this many standard deviations (mass beyond ≈ 2e-9)
KERNEL_SDS = 6.0
#: nodes with probability at most TAIL × (the page's largest) are set to zero
TAIL = 1e-30
#: Miller's recurrence for the kernel starts where its relative error bound is below this
MILLER_EPS = 1e-18
#: at or below this t = σ²τ/h², the kernel's taps are the leading terms of the series of
#: I_n(t) (relative error below t²/4 <= 2.5e-61) instead of Miller's recurrence
SERIES_T = 1e-30
#: the upward recurrence of a kernel wider than the lattice needs t at least this large
#: (Hankel's expansion of I_1/I_0 then converges to 1e-20 in about 25 terms)
WIDE_T_MIN = 64.0
#: above this x = Δτ, e^{−x} (< 2^-1021) is taken as 0 and 1 − e^{−x} as 1
UNDERFLOW_X = 708.0
#: status codes returned by the kernels
OK, NO_MASS = 0, 1
#: LLVM may reorder sums and fuse multiply-adds (results change at float64 rounding level);
#: NaN and infinity keep their IEEE meaning
FASTMATH = {"reassoc", "contract", "arcp", "nsz"}
#: the exp loops only fuse multiply-adds (the ln 2 reduction must not be reassociated)
_EXP_FASTMATH = {"contract"}


@njit(cache=True)
def miller_start(t, b, b_full):
    """The order N from which :func:`lattice_kernel` starts Miller's recurrence.

    Started from y_{N+1} = 0, the recurrence gives y_n ∝ I_n(t) + ±(I_{N+1}/K_{N+1}) K_n(t)
    (K_n the second solution), a relative error at n <= B of at most
    δ = (I_{N+1}/I_B)(K_B/K_{N+1}) (K_n/I_n grows with n). From the recurrences,
    I_{n+1}/I_n < t/(2(n+1)) and K_n/K_{n+1} < t/(2n), so δ < q^{N−B+1} with
    q = t²/(4B(B+1)). When q <= 1/2, N is the least order >= B with q^{N−B+1} <= MILLER_EPS
    (so δ <= MILLER_EPS, and the normalised taps are off by at most 2δ/(1 − δ) relative,
    far below rounding), but not above the fixed rule. Otherwise (t above about 83 with B
    uncut, or B = 0) N = B_full + ⌈2√t⌉ + 30, the fixed rule: past B_full by two standard
    deviations of the kernel and 30 orders. At t = 0.19 (B = 6) N is 10 instead of 39.
    """
    start = b_full + int(math.ceil(2.0 * math.sqrt(t))) + 30
    if b >= 1:
        q = (t * t) / (4.0 * b * (b + 1.0))
        if q <= 0.5:
            n = b  # N − B + 1 = m, the least m with q^m <= MILLER_EPS
            bound = q
            while bound > MILLER_EPS and n < start:
                bound *= q
                n += 1
            start = n
    return start


@njit(cache=True)
def lattice_kernel(t, bmax, out):
    """Fill ``out[0..B]`` with the normalised discrete Gaussian kernel; return B.

    k(n) = e^{−t} I_n(t) for |n| <= B, B = min(bmax, ⌈6√t⌉ + 3), renormalised so that
    k(0) + 2 Σ_{n=1..B} k(n) = 1. Three regimes, each with work O(bmax) at most:

    - t <= :data:`SERIES_T`: the series' leading terms (t/2)^n/n! (relative error below
      t²/4), where a step of the recurrence could overflow;
    - √t <= bmax + 1 (the kernel no wider than the lattice): Miller's downward recurrence
      I_{n−1} = (2n/t) I_n + I_{n+1} from the order :func:`miller_start` (y_{N+1} = 0),
      with rescaling; orders above B are not stored;
    - √t > bmax + 1 (wider than the lattice; t = ∞ included): the upward recurrence
      I_{n+1} = I_{n−1} − (2n/t) I_n from I_0 and I_1/I_0 (:func:`_wide_taps`).
      As t → ∞ the taps tend to 1 (k(n)/k(0) = 1 − n²/(2t) + O(t^{−2})), so every column
      of the renormalised transition tends to 1/G: the walk forgets the node it started
      from, and the transition is the uniform distribution on the lattice.

    B is compared with bmax in floating point, so that no t (however large) overflows the
    integer conversion.
    """
    if not (t > 0.0):
        out[0] = 1.0
        return 0
    sd = math.sqrt(t)
    if sd > bmax + 1.0 and t >= WIDE_T_MIN:
        b = bmax
        _wide_taps(t, b, out)
    else:
        b_full = int(math.ceil(KERNEL_SDS * sd)) + 3
        b = min(bmax, b_full)
        if t <= SERIES_T:
            # I_n(t)/I_0(t) = (t/2)^n/n! · (1 + ε), |ε| < t²/4 <= 2.5e-61: the leading terms of
            # the series, whose products of factors below 1 cannot overflow (the recurrence's
            # factors 2n/t would, past 1e58, before its rescaling)
            a = 1.0
            out[0] = 1.0
            for n in range(1, b + 1):
                a *= t / (2.0 * n)
                out[n] = a
        else:
            _miller_taps(t, b, miller_start(t, b, b_full), out)
    s = out[0]
    for n in range(1, b + 1):
        s += 2.0 * out[n]
    inv = 1.0 / s
    for n in range(b + 1):
        out[n] *= inv
    return b


@njit(cache=True)
def bessel_ratio_large(t):
    """I_1(t)/I_0(t) for t >= :data:`WIDE_T_MIN` (t = ∞ gives 1), from Hankel's expansion.

    I_ν(t) e^{−t} √(2πt) = Σ_k (−1)^k a_k(ν) t^{−k} + O(e^{−2t}),
    a_k(ν) = Π_{j<=k} (4ν² − (2j − 1)²)/(8j) (Abramowitz & Stegun 9.7.1; DLMF 10.40.1).
    Successive terms shrink by |(2j − 1)² − 4ν²|/(8jt) < j/(2t) <= j/128, so the sums
    stop when a term is below 1e-20 of the first (at most about 25 terms).
    """
    s0 = 1.0
    s1 = 1.0
    a0 = 1.0
    a1 = 1.0
    j = 1
    while j <= 60:
        odd2 = (2.0 * j - 1.0) ** 2
        a0 *= odd2 / (8.0 * j * t)
        a1 *= (odd2 - 4.0) / (8.0 * j * t)
        s0 += a0
        s1 += a1
        if abs(a0) < 1e-20 and abs(a1) < 1e-20:
            break
        j += 1
    return s1 / s0


@njit(cache=True)
def _wide_taps(t, b, out):
    """out[n] = I_n(t)/I_0(t) for n <= b, when √t > b + 1 (a kernel wider than the lattice).

    The upward recurrence I_{n+1} = I_{n−1} − (2n/t) I_n from 1 and
    :func:`bessel_ratio_large`. The other solution of the recurrence is (−1)^n K_n(t), so
    an error in a start value or a rounding stays an error of the same relative size
    times (I_0 K_n)/(K_0 I_n) <= e^{n²/t} < e for n <= b < √t: the recurrence is stable
    here, and its work is O(b), whatever t is.
    """
    out[0] = 1.0
    if b >= 1:
        out[1] = bessel_ratio_large(t)
    for n in range(1, b):
        out[n + 1] = out[n - 1] - (2.0 * n / t) * out[n]


@njit(cache=True)
def _miller_taps(t, b, start, out):
    """out[n] ∝ I_n(t) for n <= b by the downward recurrence from order ``start``."""
    two_over_t = 2.0 / t
    y_next = 0.0
    y = 1e-280
    if start <= b:
        for n in range(start + 1, b + 1):
            out[n] = 0.0
        out[start] = y
    for n in range(start, b + 1, -1):  # orders above B: not stored
        y_prev = (n * two_over_t) * y + y_next
        y_next = y
        y = y_prev
        if y > 1e250:
            y *= 1e-250
            y_next *= 1e-250
    for n in range(min(start, b + 1), 0, -1):
        y_prev = (n * two_over_t) * y + y_next
        y_next = y
        y = y_prev
        out[n - 1] = y
        if y > 1e250:
            y *= 1e-250
            y_next *= 1e-250
            for m in range(n - 1, b + 1):
                out[m] *= 1e-250


@njit(cache=True, fastmath=FASTMATH)
def _prefix(kern, b, prefix):
    acc = 0.0
    for n in range(b + 1):
        acc += kern[n]
        prefix[n] = acc


@njit(cache=True)
def _buffers(g):
    """Scratch of one worker: kernel taps, their prefix sums, the padded sources (3G),
    the diffused weights, e^{−x}, 1 − e^{−x}, and the exp's float/int buffers."""
    return (
        np.empty(g),
        np.empty(g),
        np.zeros(3 * g),
        np.empty(g),
        np.empty(g),
        np.empty(g),
        np.empty(g),
        np.empty(g, dtype=np.int64),
    )


@njit(cache=True)
def _max_bits(w, lo, hi):
    """The largest bit pattern of w[lo..hi] as int64: for w >= 0 (no NaN) the order of the
    patterns is the order of the values, and an integer maximum vectorises."""
    src = w[lo : hi + 1].view(np.int64)
    mx = 0
    for i in range(hi + 1 - lo):
        v = src[i]
        mx = v if v > mx else mx
    return mx


@njit(cache=True)
def _support(w, lo0, hi0, ibuf):
    """The nodes above TAIL × max within [lo0, hi0] (w >= 0, zero outside): (lo, hi, thr).
    ``ibuf`` is int64 scratch (its first entry is overwritten)."""
    ibuf[0] = _max_bits(w, lo0, hi0)
    thr = ibuf.view(np.float64)[0] * TAIL
    lo = lo0
    while lo < hi0 and not (w[lo] > thr):
        lo += 1
    hi = hi0
    while hi > lo and not (w[hi] > thr):
        hi -= 1
    return lo, hi, thr


@njit(cache=True, fastmath=_EXP_FASTMATH)
def _lik_run(rates, tau, lo, n, e, om, fbuf, ibuf):
    """e[i] = e^{−x}, om[i] = 1 − e^{−x} for x = rates[lo + i]·τ, i < n (arithmetic only).

    e^{−x} = 2^k (1 + p), k = round(−x/ln 2), p = e^r − 1, |r| <= ln(2)/2: for k = 0
    (x <= ln(2)/2) 1 − e^{−x} = −p keeps full relative accuracy; for x > UNDERFLOW_X,
    e^{−x} = 0 and 1 − e^{−x} = 1.
    """
    r_run = rates[lo : lo + n]
    fbits = fbuf.view(np.int64)
    scale = ibuf.view(np.float64)
    for i in range(n):
        y = max(-(r_run[i] * tau), -UNDERFLOW_X)
        fbuf[i] = y * INV_LN2 + ROUND
    for i in range(n):
        ibuf[i] = (fbits[i] - ROUND_BITS + 1023) << 52
    for i in range(n):
        x = r_run[i] * tau
        y = max(-x, -UNDERFLOW_X)
        k = fbuf[i] - ROUND
        r = (y - k * LN2_HI) - k * LN2_LO
        sc = scale[i]
        p = sc * expm1_reduced(r)
        under = x > UNDERFLOW_X
        e[i] = 0.0 if under else sc + p
        om[i] = 1.0 if under else (1.0 - sc) - p


@njit(cache=True, fastmath=FASTMATH)
def _sources(w, lo, hi, thr, kern, prefix, b, g, vp, o_lo, o_hi):
    """vp[g + j] = w_j / (column sum of the truncated kernel at j) for j in [lo, hi]
    (0 where w_j <= thr), and 0 on the rest of [o_lo − b, o_hi + b]."""
    base = g
    for j in range(o_lo - b, lo):
        vp[base + j] = 0.0
    for j in range(hi + 1, o_hi + b + 1):
        vp[base + j] = 0.0
    k0 = kern[0]
    e1 = min(hi, b - 1)  # last node of the left edge (columns cut by the lattice's start)
    s3 = max(lo, g - b)  # first node of the right edge
    for j in range(lo, e1 + 1):
        wj = w[j]
        nrm = prefix[min(b, j)] + prefix[min(b, g - 1 - j)] - k0
        vp[base + j] = wj / nrm if wj > thr else 0.0
    a = max(lo, e1 + 1)
    c = min(hi, s3 - 1)
    if c >= a:
        inv = 1.0 / (prefix[b] + prefix[b] - k0)
        src = w[a : c + 1]
        dst = vp[base + a : base + c + 1]
        for j in range(c + 1 - a):
            wj = src[j]
            dst[j] = wj * inv if wj > thr else 0.0
    for j in range(max(s3, e1 + 1), hi + 1):
        wj = w[j]
        nrm = prefix[min(b, j)] + prefix[min(b, g - 1 - j)] - k0
        vp[base + j] = wj / nrm if wj > thr else 0.0


@njit(cache=True, fastmath=FASTMATH)
def _convolve(vp, kern, b, g, o_lo, n_out, out):
    """out[i] = k_0 v_{o_lo+i} + Σ_{d=1..b} k_d (v_{o_lo+i−d} + v_{o_lo+i+d}), i < n_out."""
    base = g + o_lo
    src = vp[base : base + n_out]
    k0 = kern[0]
    for i in range(n_out):
        out[i] = k0 * src[i]
    for d in range(1, b + 1):
        kd = kern[d]
        lft = vp[base - d : base - d + n_out]
        rgt = vp[base + d : base + d + n_out]
        for i in range(n_out):
            out[i] += kd * (lft[i] + rgt[i])


@njit(cache=True, fastmath=FASTMATH)
def _dot2(a, b, c, n):
    """(Σ a_i b_i, Σ a_i c_i) over i < n."""
    ab = 0.0
    ac = 0.0
    for i in range(n):
        ab += a[i] * b[i]
        ac += a[i] * c[i]
    return ab, ac


@njit(cache=True, fastmath=FASTMATH)
def _write_update(w, o_lo, n, out, lik, inv, rates):
    """w[o_lo + i] = out[i]·lik[i]·inv; returns Σ w Δ and Σ w over the range."""
    dst = w[o_lo : o_lo + n]
    r_run = rates[o_lo : o_lo + n]
    mean = 0.0
    tot = 0.0
    for i in range(n):
        v = (out[i] * lik[i]) * inv
        dst[i] = v
        mean += v * r_run[i]
        tot += v
    return mean, tot


@njit(cache=True)
def _zero(w, a, b):
    for i in range(a, b):
        w[i] = 0.0


@njit(cache=True)
def _step(w, rng, bufs, rates, h2, sigma, tau, changed, update, shared):
    """One crawl of one page under one volatility.

    ``w`` is zero outside [rng[0], rng[1]]. With ``update``, w becomes the posterior after
    the crawl and ``rng`` its new range; otherwise w is untouched. ``h2`` is h². With
    ``shared``, the buffers e and om of ``bufs`` already hold e^{−Δτ} and 1 − e^{−Δτ} at
    every node (computed once for all volatilities); otherwise they are computed here on
    the output range. Returns (P(I = 0), P(I = 1)) before the crawl (the predictive) and a
    status.
    """
    kern, prefix, vp, out, e, om, fbuf, ibuf = bufs
    g = w.shape[0]
    lo0 = rng[0]
    hi0 = rng[1]
    lo, hi, thr = _support(w, lo0, hi0, ibuf)
    if sigma > 0.0:
        t = sigma * sigma * tau / h2
        b = lattice_kernel(t, g - 1, kern)
        _prefix(kern, b, prefix)
        o_lo = max(0, lo - b)
        o_hi = min(g - 1, hi + b)
        _sources(w, lo, hi, thr, kern, prefix, b, g, vp, o_lo, o_hi)
        n_out = o_hi - o_lo + 1
        _convolve(vp, kern, b, g, o_lo, n_out, out)
        src = out
    else:
        o_lo = lo
        o_hi = hi
        n_out = hi - lo + 1
        src = w[lo : hi + 1]
    if shared:
        e = e[o_lo : o_lo + n_out]
        om = om[o_lo : o_lo + n_out]
    else:
        _lik_run(rates, tau, o_lo, n_out, e, om, fbuf, ibuf)
    p0, p1 = _dot2(src, e, om, n_out)
    z = p1 if changed else p0
    mean = 0.0
    tot = 0.0
    if update:
        inv = 1.0 / z if z > 0.0 else 1.0
        mean, tot = _write_update(w, o_lo, n_out, src, om if changed else e, inv, rates)
        _zero(w, lo0, o_lo)
        _zero(w, o_hi + 1, hi0 + 1)
        rng[0] = o_lo
        rng[1] = o_hi
    return p0, p1, (OK if z > 0.0 else NO_MASS), mean, tot


BLOCK = 64


@njit(cache=True, parallel=True)
def _stream_pages(weights, log_ev, changed, tau, mask, rates, log_h2, sigmas, status, out, p_lo, p_hi, predict):
    """:func:`stream_update` (``predict`` False: ``out`` is not used) or :func:`stream_predict`
    (``predict`` True: ``log_ev``, ``changed``, ``mask`` and ``status`` are not used) for
    the pages i in [p_lo, p_hi), in parallel blocks of :data:`BLOCK` pages."""
    n_s, n, g = weights.shape
    h2 = math.exp(log_h2)
    shared = n_s > 1  # the likelihood computed once per page for all volatilities
    n_blocks = (p_hi - p_lo + BLOCK - 1) // BLOCK
    for blk in prange(n_blocks):
        bufs = _buffers(g)
        rng = np.empty(2, dtype=np.int64)
        for i in range(p_lo + blk * BLOCK, min(p_hi, p_lo + (blk + 1) * BLOCK)):
            if not predict:
                status[i] = OK
                if not mask[i]:
                    continue
            if shared:  # the likelihood at every node, once for all volatilities
                _lik_run(rates, tau[i], 0, g, bufs[4], bufs[5], bufs[6], bufs[7])
            for s in range(n_s):
                rng[0] = 0
                rng[1] = g - 1
                if predict:
                    _, p1, _, _, _ = _step(weights[s, i], rng, bufs, rates, h2, sigmas[s], tau[i], False, False, shared)
                    out[s, i] = p1
                    continue
                p0, p1, st, _, _ = _step(
                    weights[s, i], rng, bufs, rates, h2, sigmas[s], tau[i], changed[i], True, shared
                )
                z = p1 if changed[i] else p0
                log_ev[s, i] += math.log(z) if z > 0.0 else -np.inf
                if st != OK:
                    status[i] = st


def stream_update(weights, log_ev, changed, tau, mask, rates, log_h2, sigmas, status, p_lo, p_hi):
    """One crawl of every masked-in page i in [p_lo, p_hi), for every volatility (in place).

    weights : (S, n, G); log_ev : (S, n) log marginal likelihood so far;
    changed : (n,) bool; tau : (n,); mask : (n,) bool; status : (n,) int8 out.
    """
    _stream_pages(
        weights, log_ev, changed, tau, mask, rates, log_h2, sigmas, status, np.empty((0, 0)), p_lo, p_hi, False
    )


def stream_predict(weights, tau, rates, log_h2, sigmas, out, p_lo, p_hi):
    """P(I = 1) of the next crawl at interval tau[i] of page i in [p_lo, p_hi) under each
    volatility: out (S, n)."""
    unused = np.empty(0, dtype=np.bool_)
    _stream_pages(
        weights,
        np.empty((0, 0)),
        unused,
        tau,
        unused,
        rates,
        log_h2,
        sigmas,
        np.empty(0, dtype=np.int8),
        out,
        p_lo,
        p_hi,
        True,
    )


@njit(cache=True, fastmath=FASTMATH)
def _mixture_weights(log_ev, pi):
    n_s = log_ev.shape[0]
    if n_s == 1:
        pi[0] = 1.0 if log_ev[0] > -np.inf else np.nan  # exp(0) / exp(0), or 0 / 0
        return
    mx = max_of(log_ev)
    tot = 0.0
    for s in range(n_s):
        pi[s] = math.exp(log_ev[s] - mx) if log_ev[s] > -np.inf else 0.0
        tot += pi[s]
    for s in range(n_s):
        pi[s] /= tot


@njit(cache=True, fastmath=FASTMATH)
def _moments(m, rates, n):
    mean = 0.0
    tot = 0.0
    for i in range(n):
        mean += m[i] * rates[i]
        tot += m[i]
    return mean, tot


@njit(cache=True, fastmath=FASTMATH)
def _block_sums(m, n, bs):
    """bs[q] = m[4q] + ... + m[4q + 3] for the n // 4 whole blocks."""
    for q in range(n // 4):
        bs[q] = (m[4 * q] + m[4 * q + 1]) + (m[4 * q + 2] + m[4 * q + 3])


@njit(cache=True, fastmath=FASTMATH)
def _node_quantile(q_nodes, j, frac, h):
    """exp(u_0 + (j − 1/2 + frac)·h) as q_nodes[j]·e^{(frac − 1/2)h} (q_nodes[j] = e^{u_0 + jh})."""
    r = (frac - 0.5) * h
    if h <= 0.69:
        return q_nodes[j] + q_nodes[j] * expm1_reduced(r)
    return q_nodes[j] * math.exp(r)


@njit(cache=True)
def summarize_range(m, lo, hi, rates, q_nodes, h, probs, q_out, bs):
    """Mean of Δ under node probabilities m (zero outside [lo, hi]), and quantiles at
    sorted ``probs``; ``q_nodes[j] = exp(u_0 + j h)``, ``bs`` scratch of size >= G/4.

    Each node's mass is spread uniformly over its cell [u_i − h/2, u_i + h/2] of log Δ
    (a piecewise-uniform density in log Δ), so quantiles are continuous in the data. The
    cell of each quantile is found from sums of blocks of four nodes, then node by node.
    """
    n = hi - lo + 1
    mean, tot = _moments(m[lo : hi + 1], rates[lo : hi + 1], n)
    return _summarize(m, lo, hi, mean, tot, q_nodes, h, probs, q_out, bs)


@njit(cache=True)
def _summarize(m, lo, hi, mean, tot, q_nodes, h, probs, q_out, bs):
    """:func:`summarize_range` given mean = Σ m_i Δ_i and tot = Σ m_i."""
    n = hi - lo + 1
    mr = m[lo : hi + 1]
    mean /= tot
    nb = n // 4
    _block_sums(mr, n, bs)
    blk = 0
    cum = 0.0
    for qi in range(probs.shape[0]):
        target = probs[qi] * tot
        while blk < nb and cum + bs[blk] < target:
            cum += bs[blk]
            blk += 1
        j = 4 * blk
        c = cum
        while j < n - 1 and c + mr[j] < target:
            c += mr[j]
            j += 1
        frac = (target - c) / mr[j] if mr[j] > 0 else 0.5
        frac = min(1.0, max(0.0, frac))
        q_out[qi] = _node_quantile(q_nodes, lo + j, frac, h)
    return mean


@njit(cache=True)
def node_quantile_base(u0, h, g):
    """exp(u_0 + j h) for j < g (the base of :func:`summarize_range`'s quantiles)."""
    out = np.empty(g)
    for j in range(g):
        out[j] = math.exp(u0 + j * h)
    return out


@njit(cache=True, parallel=True)
def batch_filter(
    prior_w,
    changed,
    tau,
    mask,
    rates,
    u0,
    h,
    sigmas,
    probs,
    smooth,
    pred,
    f_mean,
    f_q,
    s_mean,
    s_q,
    wpath,
    log_ev,
    status,
):
    """Forward filtering (and forward-backward smoothing) of whole histories.

    prior_w : (n, G) prior node probabilities, or (1, G) shared by all pages;
    changed, tau, mask : (n, K);
    outputs: pred (n, K) one-step P(I=1); f_mean (n, K), f_q (n, K, Q) filtered;
    s_mean, s_q smoothed (when ``smooth``); wpath (n, K, S) volatility weights after each
    crawl; log_ev (n, S) log marginal likelihood; status (n,) int8. Entries at masked
    crawls are NaN.
    """
    n, k = changed.shape
    g = rates.shape[0]
    n_s = sigmas.shape[0]
    n_q = probs.shape[0]
    h2 = math.exp(2.0 * math.log(h))  # h², as the streaming kernels get it (exp of their log h²)
    n_blocks = (n + BLOCK - 1) // BLOCK
    q_nodes = node_quantile_base(u0, h, g)
    for blk in prange(n_blocks):
        bufs = _buffers(g)
        bs = np.empty(g // 4 + 1)
        mix = np.zeros(g)
        qbuf = np.empty(n_q)
        pi = np.empty(n_s)
        w = np.empty((n_s, g))
        rng = np.empty((n_s, 2), dtype=np.int64)
        lev = np.zeros(n_s)
        filt = np.empty((n_s, k, g)) if smooth else np.empty((1, 1, 1))
        # the pages' inputs, and the scratch of this worker, as the page functions take them
        data = (changed, tau, mask, rates, q_nodes, h, h2, sigmas, probs)
        scratch = (bufs, bs, mix, qbuf, pi, lev)
        for i in range(blk * BLOCK, min(n, (blk + 1) * BLOCK)):
            _filter_page(i, prior_w, data, smooth, pred, f_mean, f_q, wpath, log_ev, status, scratch, w, rng, filt)
            if smooth:
                _smooth_page(i, data, s_mean, s_q, scratch, filt)


@njit(cache=True)
def _filter_page(i, prior_w, data, smooth, pred, f_mean, f_q, wpath, log_ev, status, scratch, w, rng, filt):
    """Forward pass of page i: its outputs of :func:`batch_filter`, the filtered node
    probabilities of every crawl in ``filt`` (when ``smooth``)."""
    changed, tau, mask, rates, q_nodes, h, h2, sigmas, probs = data
    bufs, bs, mix, qbuf, pi, lev = scratch
    k = changed.shape[1]
    g = rates.shape[0]
    n_s = sigmas.shape[0]
    n_q = probs.shape[0]
    nan = np.nan
    row = i if prior_w.shape[0] > 1 else 0
    for s in range(n_s):
        for j in range(g):
            w[s, j] = prior_w[row, j]
        rng[s, 0] = 0
        rng[s, 1] = g - 1
        lev[s] = 0.0
    status[i] = OK
    for c in range(k):
        if not mask[i, c]:
            pred[i, c] = nan
            f_mean[i, c] = nan
            for q in range(n_q):
                f_q[i, c, q] = nan
            for s in range(n_s):
                wpath[i, c, s] = nan
            continue
        _mixture_weights(lev, pi)
        p_mix = 0.0
        shared = n_s > 1
        if shared:  # the likelihood at every node, once for all volatilities
            _lik_run(rates, tau[i, c], 0, g, bufs[4], bufs[5], bufs[6], bufs[7])
        for s in range(n_s):
            p0, p1, st, mean, tot = _step(
                w[s], rng[s], bufs, rates, h2, sigmas[s], tau[i, c], changed[i, c], True, shared
            )
            p_mix += pi[s] * p1
            z = p1 if changed[i, c] else p0
            lev[s] += math.log(z) if z > 0.0 else -np.inf
            if st != OK:
                status[i] = st
            if smooth:
                for j in range(g):
                    filt[s, c, j] = w[s, j]
        pred[i, c] = p_mix
        _mixture_weights(lev, pi)
        for s in range(n_s):
            wpath[i, c, s] = pi[s]
        if n_s == 1:
            f_mean[i, c] = _summarize(w[0], rng[0, 0], rng[0, 1], mean, tot, q_nodes, h, probs, qbuf, bs)
        else:
            lo = g
            hi = -1
            for s in range(n_s):
                lo = min(lo, rng[s, 0])
                hi = max(hi, rng[s, 1])
            _mix(w, pi, lo, hi, mix)
            f_mean[i, c] = summarize_range(mix, lo, hi, rates, q_nodes, h, probs, qbuf, bs)
        for q in range(n_q):
            f_q[i, c, q] = qbuf[q]
    for s in range(n_s):
        log_ev[i, s] = lev[s]


@njit(cache=True, fastmath=FASTMATH)
def _mix(w, pi, lo, hi, mix):
    n_s = w.shape[0]
    for j in range(lo, hi + 1):
        acc = 0.0
        for s in range(n_s):
            acc += pi[s] * w[s, j]
        mix[j] = acc


@njit(cache=True, fastmath=FASTMATH)
def _beta_step(lik, beta_row, kern, prefix, b, g, vp, out):
    """beta_j ← Σ_i K(i − j) lik_i beta_i / (column sum of the truncated kernel at j), all j."""
    base = g
    for j in range(b):
        vp[base - 1 - j] = 0.0
        vp[base + g + j] = 0.0
    dst = vp[base : base + g]
    for j in range(g):
        dst[j] = lik[j] * beta_row[j]
    _convolve(vp, kern, b, g, 0, g, out)
    k0 = kern[0]
    e1 = min(g, b)  # the left edge: j < b
    s3 = max(e1, g - b)  # the right edge: j > g − 1 − b
    for j in range(e1):
        beta_row[j] = out[j] / (prefix[min(b, j)] + prefix[min(b, g - 1 - j)] - k0)
    if s3 > e1:
        nrm = prefix[b] + prefix[b] - k0
        o_run = out[e1:s3]
        b_run = beta_row[e1:s3]
        for j in range(s3 - e1):
            b_run[j] = o_run[j] / nrm
    for j in range(s3, g):
        beta_row[j] = out[j] / (prefix[min(b, j)] + prefix[min(b, g - 1 - j)] - k0)


@njit(cache=True, fastmath=FASTMATH)
def _smooth_page(i, data, s_mean, s_q, scratch, filt):
    """Backward pass: beta_c(x) = p(I_{c+1..K} | Δ_c = x), normalised to max 1."""
    changed, tau, mask, rates, q_nodes, h, h2, sigmas, probs = data
    bufs, bs, mix, qbuf, pi, lev = scratch
    kern, prefix, vp, scratch, e, om, fbuf, ibuf = bufs
    k = changed.shape[1]
    g = rates.shape[0]
    n_s = sigmas.shape[0]
    n_q = probs.shape[0]
    nan = np.nan
    _mixture_weights(lev, pi)
    beta = np.empty((n_s, g))
    sm = np.empty((n_s, g))
    for s in range(n_s):
        for j in range(g):
            beta[s, j] = 1.0
    nxt = -1  # index of the next real crawl
    for c in range(k - 1, -1, -1):
        if not mask[i, c]:
            s_mean[i, c] = nan
            for q in range(n_q):
                s_q[i, c, q] = nan
            continue
        if nxt >= 0:
            tn = tau[i, nxt]
            _lik_run(rates, tn, 0, g, e, om, fbuf, ibuf)
            lik = om if changed[i, nxt] else e
            for s in range(n_s):
                # beta_c = K^T (L_{nxt} ⊙ beta_{nxt}), columns renormalised as in the forward pass
                sig = sigmas[s]
                if sig > 0.0:
                    b = lattice_kernel(sig * sig * tn / h2, g - 1, kern)
                    _prefix(kern, b, prefix)
                    _beta_step(lik, beta[s], kern, prefix, b, g, vp, scratch)
                else:
                    for j in range(g):
                        beta[s, j] = lik[j] * beta[s, j]
                mx = 0.0
                for j in range(g):
                    if beta[s, j] > mx:
                        mx = beta[s, j]
                if mx > 0.0:
                    for j in range(g):
                        beta[s, j] /= mx
        for j in range(g):
            mix[j] = 0.0
        for s in range(n_s):
            tot = 0.0
            for j in range(g):
                sm[s, j] = filt[s, c, j] * beta[s, j]
                tot += sm[s, j]
            if tot > 0.0:
                for j in range(g):
                    mix[j] += pi[s] * sm[s, j] / tot
        s_mean[i, c] = summarize_range(mix, 0, g - 1, rates, q_nodes, h, probs, qbuf, bs)
        for q in range(n_q):
            s_q[i, c, q] = qbuf[q]
        nxt = c
