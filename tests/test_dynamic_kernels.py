"""The compiled filter against its previous implementation (kept below, verbatim from
line ``KERNEL_SDS = 6.0`` on): the forward filter, the smoother, the σ weights, the
evidence and the streaming kernels must agree to 1e-12 relative on rectangular, masked
and ragged histories, for several σ and for intervals from 1e-6 to 1e3 time units."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import njit, prange

from changerate_bayes.dynamic import _kernels
from changerate_bayes.dynamic._model import check_prior, make_lattice

# ---------------------------------------------------------------------------------------------
# previous implementation of changerate_bayes/dynamic/_kernels.py (verbatim)
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# the comparisons
# ---------------------------------------------------------------------------------------------
GRID = np.geomspace(1e-4, 1e2, 200)
PROBS = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
#: the rate of the simulated pages is about 1/(4 τ) (capped by the lattice), drifting
TAU_SCALES = {"tiny": 1e-6, "unit": 1.0, "large": 1e3, "mixed": None}


def _history(n, k, scale, seed):
    rng = np.random.default_rng(seed)
    if scale is None:  # intervals from 1e-6 to 1e3 within each page
        tau = 10.0 ** rng.uniform(-6.0, 3.0, (n, k))
        u0 = rng.normal(np.log(0.3), 1.0, (n, 1))
    else:
        tau = scale * rng.exponential(1.0, (n, k))
        u0 = rng.normal(np.log(min(0.25 / scale, 50.0)), 1.0, (n, 1))
    u = u0 + np.cumsum(0.1 * np.sqrt(tau / tau.mean()) * rng.standard_normal((n, k)), axis=1)
    rate = np.clip(np.exp(u), GRID[0], GRID[-1])
    changed = rng.random((n, k)) < -np.expm1(-rate * tau)
    return changed, tau


def _mask(n, k, kind, seed):
    if kind == "full":
        return np.ones((n, k), dtype=bool)
    rng = np.random.default_rng(seed + 1000)
    m = rng.random((n, k)) > 0.15  # holes
    lengths = rng.integers(1, k + 1, n)  # ragged: padding after each page's last crawl
    m &= np.arange(k)[None, :] < lengths[:, None]
    m[0] = False  # a page without crawls
    m[1] = True  # and a full one
    return m


def _run(batch_filter, changed, tau, mask, sigmas, smooth=True):
    n, k = changed.shape
    lat = make_lattice(GRID, check_prior(None, None), None, n)
    sig = np.asarray(sigmas, dtype=np.float64)
    out = [np.empty((n, k)), np.empty((n, k)), np.empty((n, k, PROBS.size)), np.full((n, k), np.nan),
           np.full((n, k, PROBS.size), np.nan), np.empty((n, k, sig.size)), np.empty((n, sig.size)),
           np.zeros(n, dtype=np.int8)]
    batch_filter(lat.prior_weights(n), changed, tau, mask, lat.rates, float(lat.u[0]), lat.h, sig, PROBS, smooth,
                 *out)
    return dict(zip(("pred", "f_mean", "f_q", "s_mean", "s_q", "wpath", "log_ev", "status"), out))


def _assert_close(new, old, name, rtol=1e-12, atol=0.0):
    assert np.array_equal(np.isnan(new), np.isnan(old)), name
    np.testing.assert_allclose(new, old, rtol=rtol, atol=atol, err_msg=name)


def _log_ev_atol(k):
    """log z for a predictive z near 1 (short intervals: z = 1 − O(Δτ)) carries the absolute
    rounding error of z (a sum over the lattice, a few 1e-16) in both implementations, so
    the evidence of k crawls is compared to 1e-12 relative or k·1e-15 absolute."""
    return k * 1e-15


SIGMA_SETS = [(0.0,), (0.03,), (0.3,), (2.0,), (0.0, 0.01, 0.1, 0.5)]


@pytest.mark.parametrize("scale", list(TAU_SCALES))
@pytest.mark.parametrize("sigmas", SIGMA_SETS, ids=lambda s: "sigma=" + ",".join(map(str, s)))
@pytest.mark.parametrize("mask_kind", ["full", "masked"])
def test_batch_filter_equals_previous_kernel(scale, sigmas, mask_kind):
    n, k = 24, 40
    seed = list(TAU_SCALES).index(scale) + 10 * len(sigmas) + int(100 * sigmas[-1])
    changed, tau = _history(n, k, TAU_SCALES[scale], seed)
    mask = _mask(n, k, mask_kind, seed)
    old = _run(batch_filter, changed, tau, mask, sigmas)
    new = _run(_kernels.batch_filter, changed, tau, mask, sigmas)
    assert not old["status"].any()  # every crawl possible on the lattice: the comparison is of real numbers
    np.testing.assert_array_equal(new["status"], old["status"])
    for name in ("pred", "f_mean", "f_q", "s_mean", "s_q", "wpath"):
        _assert_close(new[name], old[name], name)
    _assert_close(new["log_ev"], old["log_ev"], "log_ev", atol=_log_ev_atol(k))
    # the masked cells are NaN, the others finite
    assert np.isnan(new["f_mean"][~mask]).all() and np.isfinite(new["f_q"][mask]).all()


def test_batch_filter_equals_previous_kernel_without_smoothing_and_with_wide_kernels():
    """σ√τ of many lattice spacings: the kernel spans the whole lattice (its half-width
    is cut at G − 1 nodes), so every column is renormalised at the lattice's ends."""
    changed, tau = _history(16, 30, 30.0, 7)
    mask = _mask(16, 30, "masked", 7)
    for sigmas in ((1.0,), (0.0, 3.0)):
        old = _run(batch_filter, changed, tau, mask, sigmas, smooth=False)
        new = _run(_kernels.batch_filter, changed, tau, mask, sigmas, smooth=False)
        for name in ("pred", "f_mean", "f_q", "wpath"):
            _assert_close(new[name], old[name], name)
        _assert_close(new["log_ev"], old["log_ev"], "log_ev", atol=_log_ev_atol(30))
        assert np.isnan(new["s_mean"]).all()


@pytest.mark.parametrize("scale", ["tiny", "unit", "mixed"])
def test_streaming_kernels_equal_previous_kernels(scale):
    n, k = 12, 25
    changed, tau = _history(n, k, TAU_SCALES[scale], 3)
    mask = _mask(n, k, "masked", 3)
    sigmas = np.array([0.0, 0.05, 0.4])
    lat = make_lattice(GRID, check_prior(None, None), None, n)
    log_h2 = 2.0 * math.log(lat.h)
    states = []
    for _ in range(2):
        w = np.repeat(lat.prior_weights(n)[None], sigmas.size, axis=0)
        states.append((w, np.zeros((sigmas.size, n))))
    kernels = ((stream_update, stream_predict),
               (lambda *a: _kernels.stream_update(*a, 0, n), lambda *a: _kernels.stream_predict(*a, 0, n)))
    for c in range(k):
        preds, statuses = [], []
        for (update, predict), (w, lev) in zip(kernels, states):
            p = np.empty((sigmas.size, n))
            predict(w, tau[:, c], lat.rates, log_h2, sigmas, p)
            st = np.zeros(n, dtype=np.int8)
            update(w, lev, changed[:, c], tau[:, c], mask[:, c], lat.rates, log_h2, sigmas, st)
            preds.append(p)
            statuses.append(st)
        np.testing.assert_allclose(preds[1], preds[0], rtol=1e-12, atol=0)
        np.testing.assert_array_equal(statuses[1], statuses[0])
        (w_old, lev_old), (w_new, lev_new) = states
        np.testing.assert_allclose(lev_new, lev_old, rtol=1e-12, atol=_log_ev_atol(c + 1))
        # node probabilities: 1e-12 relative, except nodes below 1e-30 of the page's largest (set to zero)
        np.testing.assert_allclose(w_new, w_old, rtol=1e-12, atol=1e-28)

