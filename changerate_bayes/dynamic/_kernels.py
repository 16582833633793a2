"""Numba kernels of the point-mass filter of log Δ (compiled on first use, cached on disk).

State of one page under one volatility: probabilities ``w`` (summing to one) of the
lattice nodes u_i = u_0 + i·h of u = log Δ. One crawl with interval τ:

1. predict: w ← K_t w, K_t the transition of the nearest-neighbour continuous-time
   random walk on the lattice over time τ (the discrete Gaussian kernel
   e^{−t} I_n(t), t = σ²τ/h²: variance σ²τ exactly, K_s K_t = K_{s+t}), truncated at
   :data:`KERNEL_SDS` standard deviations and at the ends of the lattice, each column
   renormalised so that no mass leaves the lattice;
2. predictive: P(I = 1) = Σ_i w_i (1 − e^{−Δ_i τ}), P(I = 0) = Σ_i w_i e^{−Δ_i τ};
3. update: w_i ← w_i P(I | Δ_i, τ) / P(I).

Nodes whose probability is below :data:`TAIL` times the page's largest are skipped (a
relative 1e-30, far below float64 resolution of the sums). Loops run over pages in
parallel (``prange``) and, within a page, over crawls and nodes; no Python loop over
pages.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

#: the random-walk kernel is cut at this many standard deviations (mass beyond ≈ 2e-9)
KERNEL_SDS = 6.0
#: nodes with probability below TAIL × (the page's largest) are skipped
TAIL = 1e-30
#: status codes returned by the kernels
OK, NO_MASS = 0, 1
#: LLVM may reorder sums and fuse multiply-adds (results change at float64 rounding level);
#: NaN and infinity keep their IEEE meaning
FASTMATH = {"reassoc", "contract", "arcp", "nsz"}


@njit(cache=True)
def lattice_kernel(t, bmax, out):
    """Fill ``out[0..B]`` with the normalised discrete Gaussian kernel; return B.

    k(n) = e^{−t} I_n(t) for |n| <= B, B = min(bmax, ⌈6√t⌉ + 3), renormalised so that
    k(0) + 2 Σ_{n=1..B} k(n) = 1. I_n by Miller's downward recurrence
    I_{n−1} = (2n/t) I_n + I_{n+1} from far in the tail, with rescaling.
    """
    if t <= 0.0:
        out[0] = 1.0
        return 0
    sd = math.sqrt(t)
    b_full = int(math.ceil(KERNEL_SDS * sd)) + 3
    b = min(bmax, b_full)
    start = b_full + int(math.ceil(2.0 * sd)) + 30
    for n in range(b + 1):
        out[n] = 0.0
    two_over_t = 2.0 / t
    y_next = 0.0
    y = 1e-280
    if start <= b:
        out[start] = y
    for n in range(start, 0, -1):
        y_prev = (n * two_over_t) * y + y_next
        y_next = y
        y = y_prev
        if n - 1 <= b:
            out[n - 1] = y
        if y > 1e250:
            y *= 1e-250
            y_next *= 1e-250
            for m in range(max(n - 1, 0), b + 1):
                out[m] *= 1e-250
    s = out[0]
    for n in range(1, b + 1):
        s += 2.0 * out[n]
    for n in range(b + 1):
        out[n] /= s
    return b


@njit(cache=True, fastmath=FASTMATH)
def _prefix(kern, b, prefix):
    acc = 0.0
    for n in range(b + 1):
        acc += kern[n]
        prefix[n] = acc


@njit(cache=True, fastmath=FASTMATH)
def _support(w, g):
    mx = 0.0
    for i in range(g):
        if w[i] > mx:
            mx = w[i]
    thr = mx * TAIL
    lo = 0
    while lo < g - 1 and not (w[lo] > thr):
        lo += 1
    hi = g - 1
    while hi > lo and not (w[hi] > thr):
        hi -= 1
    return lo, hi, thr


@njit(cache=True, fastmath=FASTMATH)
def _diffuse(w, out, kern, prefix, b, g):
    """out ← K w (column-renormalised at the lattice ends); returns the support of out."""
    lo, hi, thr = _support(w, g)
    o_lo = max(0, lo - b)
    o_hi = min(g - 1, hi + b)
    for i in range(o_lo, o_hi + 1):
        out[i] = 0.0
    k0 = kern[0]
    for j in range(lo, hi + 1):
        wj = w[j]
        if not (wj > thr):
            continue
        a = min(b, j)
        c = min(b, g - 1 - j)
        v = wj / (prefix[a] + prefix[c] - k0)
        for d in range(0, c + 1):
            out[j + d] += kern[d] * v
        for d in range(1, a + 1):
            out[j - d] += kern[d] * v
    return o_lo, o_hi


@njit(cache=True, fastmath=FASTMATH)
def _observe(w, lo, hi, rates, tau, changed, do_update):
    """Predictive P(I = 0), P(I = 1) of ``w`` (already diffused) on [lo, hi]; update in place."""
    p0 = 0.0
    p1 = 0.0
    for i in range(lo, hi + 1):
        x = rates[i] * tau
        if x < 0.5:
            om = -math.expm1(-x)
            e = 1.0 - om
        else:
            e = math.exp(-x)
            om = 1.0 - e
        p0 += w[i] * e
        p1 += w[i] * om
        if do_update:
            w[i] *= om if changed else e
    if do_update:
        z = p1 if changed else p0
        if z > 0.0:
            inv = 1.0 / z
            for i in range(lo, hi + 1):
                w[i] *= inv
    return p0, p1


@njit(cache=True, fastmath=FASTMATH)
def _step(w, scratch, kern, prefix, rates, log_h2, sigma, tau, changed, g):
    """One crawl of one page under one volatility; w updated in place.

    Returns (P(I = 0), P(I = 1)) before the crawl (predictive) and a status.
    """
    if sigma > 0.0:
        t = sigma * sigma * tau / math.exp(log_h2)
        b = lattice_kernel(t, g - 1, kern)
        _prefix(kern, b, prefix)
        lo, hi = _diffuse(w, scratch, kern, prefix, b, g)
        for i in range(g):
            w[i] = 0.0
        for i in range(lo, hi + 1):
            w[i] = scratch[i]
    else:
        lo, hi, _ = _support(w, g)
    p0, p1 = _observe(w, lo, hi, rates, tau, changed, True)
    z = p1 if changed else p0
    return p0, p1, (OK if z > 0.0 else NO_MASS)


@njit(cache=True, fastmath=FASTMATH)
def _predictive(w, scratch, kern, prefix, rates, log_h2, sigma, tau, g):
    """P(I = 1) of the next crawl at interval τ (w untouched)."""
    if sigma > 0.0:
        t = sigma * sigma * tau / math.exp(log_h2)
        b = lattice_kernel(t, g - 1, kern)
        _prefix(kern, b, prefix)
        lo, hi = _diffuse(w, scratch, kern, prefix, b, g)
    else:
        lo, hi, _ = _support(w, g)
        for i in range(lo, hi + 1):
            scratch[i] = w[i]
    p0, p1 = _observe(scratch, lo, hi, rates, tau, False, False)
    return p1


BLOCK = 64


@njit(cache=True, parallel=True, fastmath=FASTMATH)
def stream_update(weights, log_ev, changed, tau, mask, rates, log_h2, sigmas, status):
    """One crawl of every masked-in page, for every volatility (in place).

    weights : (S, n, G); log_ev : (S, n) log marginal likelihood so far;
    changed : (n,) bool; tau : (n,); mask : (n,) bool; status : (n,) int8 out.
    """
    n_s, n, g = weights.shape
    n_blocks = (n + BLOCK - 1) // BLOCK
    for blk in prange(n_blocks):
        scratch = np.empty(g)
        kern = np.empty(g)
        prefix = np.empty(g)
        for i in range(blk * BLOCK, min(n, (blk + 1) * BLOCK)):
            status[i] = OK
            if not mask[i]:
                continue
            for s in range(n_s):
                p0, p1, st = _step(weights[s, i], scratch, kern, prefix, rates, log_h2, sigmas[s], tau[i],
                                   changed[i], g)
                z = p1 if changed[i] else p0
                log_ev[s, i] += math.log(z) if z > 0.0 else -np.inf
                if st != OK:
                    status[i] = st


@njit(cache=True, parallel=True, fastmath=FASTMATH)
def stream_predict(weights, tau, rates, log_h2, sigmas, out):
    """P(I = 1) of the next crawl at interval tau[i] of page i under each volatility: out (S, n)."""
    n_s, n, g = weights.shape
    n_blocks = (n + BLOCK - 1) // BLOCK
    for blk in prange(n_blocks):
        scratch = np.empty(g)
        kern = np.empty(g)
        prefix = np.empty(g)
        for i in range(blk * BLOCK, min(n, (blk + 1) * BLOCK)):
            for s in range(n_s):
                out[s, i] = _predictive(weights[s, i], scratch, kern, prefix, rates, log_h2, sigmas[s], tau[i], g)


@njit(cache=True, fastmath=FASTMATH)
def _mixture_weights(log_ev, pi):
    n_s = log_ev.shape[0]
    mx = -np.inf
    for s in range(n_s):
        if log_ev[s] > mx:
            mx = log_ev[s]
    tot = 0.0
    for s in range(n_s):
        pi[s] = math.exp(log_ev[s] - mx) if log_ev[s] > -np.inf else 0.0
        tot += pi[s]
    for s in range(n_s):
        pi[s] /= tot


@njit(cache=True, fastmath=FASTMATH)
def summarize(m, rates, u0, h, probs, q_out):
    """Mean of Δ under node probabilities m, and quantiles at sorted ``probs``.

    Each node's mass is spread uniformly over its cell [u_i − h/2, u_i + h/2] of log Δ
    (a piecewise-uniform density in log Δ), so quantiles are continuous in the data.
    """
    g = m.shape[0]
    mean = 0.0
    tot = 0.0
    for i in range(g):
        mean += m[i] * rates[i]
        tot += m[i]
    mean /= tot
    j = 0
    cum = 0.0
    for qi in range(probs.shape[0]):
        target = probs[qi] * tot
        while j < g - 1 and cum + m[j] < target:
            cum += m[j]
            j += 1
        frac = (target - cum) / m[j] if m[j] > 0 else 0.5
        frac = min(1.0, max(0.0, frac))
        q_out[qi] = math.exp(u0 + (j - 0.5 + frac) * h)
    return mean


@njit(cache=True, parallel=True, fastmath=FASTMATH)
def batch_filter(prior_w, changed, tau, mask, rates, u0, h, sigmas, probs, smooth,
                 pred, f_mean, f_q, s_mean, s_q, wpath, log_ev, status):
    """Forward filtering (and forward-backward smoothing) of whole histories.

    prior_w : (n, G) prior node probabilities; changed, tau, mask : (n, K);
    outputs: pred (n, K) one-step P(I=1); f_mean (n, K), f_q (n, K, Q) filtered;
    s_mean, s_q smoothed (when ``smooth``); wpath (n, K, S) volatility weights after each
    crawl; log_ev (n, S) log marginal likelihood; status (n,) int8. Entries at masked
    crawls are NaN.
    """
    n, k = changed.shape
    g = rates.shape[0]
    n_s = sigmas.shape[0]
    n_q = probs.shape[0]
    log_h2 = 2.0 * math.log(h)
    nan = np.nan
    for i in prange(n):
        scratch = np.empty(g)
        kern = np.empty(g)
        prefix = np.empty(g)
        mix = np.empty(g)
        qbuf = np.empty(n_q)
        pi = np.empty(n_s)
        w = np.empty((n_s, g))
        lev = np.zeros(n_s)
        for s in range(n_s):
            for j in range(g):
                w[s, j] = prior_w[i, j]
        filt = np.empty((n_s, k, g)) if smooth else np.empty((1, 1, 1))
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
            for s in range(n_s):
                p0, p1, st = _step(w[s], scratch, kern, prefix, rates, log_h2, sigmas[s], tau[i, c],
                                   changed[i, c], g)
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
            for j in range(g):
                acc = 0.0
                for s in range(n_s):
                    acc += pi[s] * w[s, j]
                mix[j] = acc
            f_mean[i, c] = summarize(mix, rates, u0, h, probs, qbuf)
            for q in range(n_q):
                f_q[i, c, q] = qbuf[q]
        for s in range(n_s):
            log_ev[i, s] = lev[s]
        if not smooth:
            continue
        # backward pass: beta_c(x) = p(I_{c+1..K} | Δ_c = x), normalised to max 1
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
                for s in range(n_s):
                    # m = L_{nxt} ⊙ beta_{nxt}
                    for j in range(g):
                        x = rates[j] * tn
                        lik = -math.expm1(-x) if changed[i, nxt] else math.exp(-x)
                        scratch[j] = lik * beta[s, j]
                    sig = sigmas[s]
                    if sig > 0.0:
                        b = lattice_kernel(sig * sig * tn / math.exp(log_h2), g - 1, kern)
                        _prefix(kern, b, prefix)
                        k0 = kern[0]
                        for j in range(g):
                            a = min(b, j)
                            cc = min(b, g - 1 - j)
                            acc = kern[0] * scratch[j]
                            for d in range(1, cc + 1):
                                acc += kern[d] * scratch[j + d]
                            for d in range(1, a + 1):
                                acc += kern[d] * scratch[j - d]
                            beta[s, j] = acc / (prefix[a] + prefix[cc] - k0)
                    else:
                        for j in range(g):
                            beta[s, j] = scratch[j]
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
            s_mean[i, c] = summarize(mix, rates, u0, h, probs, qbuf)
            for q in range(n_q):
                s_q[i, c, q] = qbuf[q]
            nxt = c
