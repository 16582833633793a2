"""The compiled point-mass filter against its definition written out in NumPy on the same
lattice (``_reference_page``): per crawl, nodes at most 1e-30 of the largest set to zero;
predict w ← K w with K the discrete Gaussian kernel e^{−t} I_n(t), t = σ²τ/h² (scipy's
``ive``), cut at ⌈6√t⌉ + 3 nodes and at the lattice's ends, each column renormalised;
predictive P(I = 1) = Σ w (1 − e^{−Δτ}); Bayes' update; the volatilities mixed by their
evidence; the smoother by the backward messages β ← Kᵀ(L ⊙ β). The forward filter, the
smoother, the σ weights, the evidence and the streaming kernels must agree to 1e-12
relative on rectangular, masked and ragged histories, for several σ and for intervals
from 1e-6 to 1e3 time units."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy.special import ive

from changerate_bayes.dynamic import _kernels
from changerate_bayes.dynamic._model import check_prior, make_lattice

TAIL = 1e-30  # the support rule of the model (``_kernels`` module docstring, step 1)


# ---------------------------------------------------------------------------------------------
# the definition, in NumPy
# ---------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def _kernel(t, g):
    """Taps k(−B..B) of the discrete Gaussian kernel e^{−t} I_n(t), B = min(G − 1, ⌈6√t⌉ + 3),
    and the column sums of the transition over the lattice's nodes (before renormalising)."""
    b = min(g - 1, math.ceil(6.0 * math.sqrt(t)) + 3)
    k = ive(np.arange(b + 1), t)
    taps = np.concatenate([k[:0:-1], k])
    return taps, b, np.convolve(np.ones(g), taps)[b:b + g]


def _predict(w, t):
    """K w: node j's mass spread by the kernel over the lattice, renormalised per column j."""
    if t <= 0.0:
        return w.copy()
    taps, b, col = _kernel(t, w.size)
    return np.convolve(w / col, taps)[b:b + w.size]


def _predict_adjoint(v, t):
    """Kᵀ v (the backward message of the smoother)."""
    if t <= 0.0:
        return v.copy()
    taps, b, col = _kernel(t, v.size)
    return np.convolve(v, taps)[b:b + v.size] / col


def _lik(rates, tau):
    """P(I = 0 | Δ, τ) and P(I = 1 | Δ, τ) at the nodes."""
    return np.exp(-rates * tau), -np.expm1(-rates * tau)


def _variance(sigma, tau, h):
    """t = σ²τ/h²: the random walk's variance over τ in squared lattice spacings."""
    return sigma * sigma * tau / (h * h)


def _crawl(w, rates, h, sigma, tau, changed):
    """One crawl: support, predict, predictive (p0, p1), and the updated w."""
    w = np.where(w > TAIL * w.max(), w, 0.0)
    w = _predict(w, _variance(sigma, tau, h))
    e, om = _lik(rates, tau)
    p0, p1 = w @ e, w @ om
    z = p1 if changed else p0
    return p0, p1, w * (om if changed else e) / z


def _mixture(log_ev):
    pi = np.where(log_ev > -np.inf, np.exp(log_ev - log_ev.max()), 0.0)
    return pi / pi.sum()


def _summary(m, u, h, probs):
    """Mean of Δ under node probabilities m (..., G), and the quantiles (..., Q) of the density
    that spreads each node's mass uniformly over its cell [u_j − h/2, u_j + h/2] of log Δ."""
    tot = m.sum(axis=-1, keepdims=True)
    cum = np.cumsum(m, axis=-1)
    target = probs * tot  # (..., Q)
    j = np.minimum((cum[..., None, :] < target[..., None]).sum(axis=-1), m.shape[-1] - 1)  # first cum >= target
    mj = np.take_along_axis(m, j, axis=-1)
    below = np.take_along_axis(cum, j, axis=-1) - mj
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(mj > 0, (target - below) / mj, 0.5)
    q = np.exp(u[j] + (np.clip(frac, 0.0, 1.0) - 0.5) * h)
    return (m @ np.exp(u)) / tot[..., 0], np.where(np.isnan(tot), np.nan, q)  # NaN rows: no crawl


def _reference_page(prior, changed, tau, mask, lat, sigmas, probs, smooth):
    """Filter (and smoother) of one page: the outputs of ``batch_filter`` for row i."""
    k, n_s = changed.size, len(sigmas)
    rates, u, h = lat.rates, lat.u, lat.h
    out = dict(pred=np.full(k, np.nan), wpath=np.full((k, n_s), np.nan))
    w = [prior.copy() for _ in sigmas]
    lev = np.zeros(n_s)
    filt = {}
    f_mix, s_mix = np.full((k, rates.size), np.nan), np.full((k, rates.size), np.nan)
    for c in np.flatnonzero(mask):
        pi = _mixture(lev)
        steps = [_crawl(w[s], rates, h, sigmas[s], tau[c], changed[c]) for s in range(n_s)]
        w = [st[2] for st in steps]
        out["pred"][c] = sum(pi[s] * steps[s][1] for s in range(n_s))
        lev = lev + np.log([st[1] if changed[c] else st[0] for st in steps])
        pi = _mixture(lev)
        out["wpath"][c] = pi
        f_mix[c] = sum(pi[s] * w[s] for s in range(n_s))
        filt[c] = w
    out["log_ev"] = lev
    if smooth:
        pi = _mixture(lev)
        beta = [np.ones(rates.size) for _ in sigmas]
        crawls = np.flatnonzero(mask)
        for c, nxt in zip(crawls[::-1], [None, *crawls[::-1][:-1]]):
            if nxt is not None:
                e, om = _lik(rates, tau[nxt])
                lik = om if changed[nxt] else e
                beta = [_predict_adjoint(lik * beta[s], _variance(sigmas[s], tau[nxt], h)) for s in range(n_s)]
                beta = [b / b.max() for b in beta]
            sm = [filt[c][s] * beta[s] for s in range(n_s)]
            s_mix[c] = sum(pi[s] * sm[s] / sm[s].sum() for s in range(n_s))
    out["f_mean"], out["f_q"] = _summary(f_mix, u, h, probs)
    out["s_mean"], out["s_q"] = _summary(s_mix, u, h, probs)
    return out


def _reference(changed, tau, mask, sigmas, smooth=True):
    n, _ = changed.shape
    lat = make_lattice(GRID, check_prior(None, None), None, n)
    prior = lat.prior_weights(n)
    pages = [_reference_page(prior[i], changed[i], tau[i], mask[i], lat, list(sigmas), PROBS, smooth)
             for i in range(n)]
    return {name: np.stack([p[name] for p in pages]) for name in pages[0]}


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


def _run(changed, tau, mask, sigmas, smooth=True):
    n, k = changed.shape
    lat = make_lattice(GRID, check_prior(None, None), None, n)
    sig = np.asarray(sigmas, dtype=np.float64)
    out = [np.empty((n, k)), np.empty((n, k)), np.empty((n, k, PROBS.size)), np.full((n, k), np.nan),
           np.full((n, k, PROBS.size), np.nan), np.empty((n, k, sig.size)), np.empty((n, sig.size)),
           np.zeros(n, dtype=np.int8)]
    _kernels.batch_filter(lat.prior_weights(n), changed, tau, mask, lat.rates, float(lat.u[0]), lat.h, sig, PROBS,
                          smooth, *out)
    return dict(zip(("pred", "f_mean", "f_q", "s_mean", "s_q", "wpath", "log_ev", "status"), out))


def _assert_close(new, ref, name, rtol=1e-12, atol=0.0):
    assert np.array_equal(np.isnan(new), np.isnan(ref)), name
    np.testing.assert_allclose(new, ref, rtol=rtol, atol=atol, err_msg=name)


def _log_ev_atol(k):
    """log z for a predictive z near 1 (short intervals: z = 1 − O(Δτ)) carries the absolute
    rounding error of z (a sum over the lattice, a few 1e-16) in both computations, so
    the evidence of k crawls is compared to 1e-12 relative or k·1e-15 absolute."""
    return k * 1e-15


SIGMA_SETS = [(0.0,), (0.03,), (0.3,), (2.0,), (0.0, 0.01, 0.1, 0.5)]


@pytest.mark.parametrize("scale", list(TAU_SCALES))
@pytest.mark.parametrize("sigmas", SIGMA_SETS, ids=lambda s: "sigma=" + ",".join(map(str, s)))
@pytest.mark.parametrize("mask_kind", ["full", "masked"])
def test_batch_filter_equals_the_filter_written_out(scale, sigmas, mask_kind):
    n, k = 24, 40
    seed = list(TAU_SCALES).index(scale) + 10 * len(sigmas) + int(100 * sigmas[-1])
    changed, tau = _history(n, k, TAU_SCALES[scale], seed)
    mask = _mask(n, k, mask_kind, seed)
    ref = _reference(changed, tau, mask, sigmas)
    new = _run(changed, tau, mask, sigmas)
    assert not new["status"].any()  # every crawl possible on the lattice: the comparison is of real numbers
    for name in ("pred", "f_mean", "f_q", "s_mean", "s_q", "wpath"):
        _assert_close(new[name], ref[name], name)
    _assert_close(new["log_ev"], ref["log_ev"], "log_ev", atol=_log_ev_atol(k))
    # the masked cells are NaN, the others finite
    assert np.isnan(new["f_mean"][~mask]).all() and np.isfinite(new["f_q"][mask]).all()


def test_batch_filter_equals_the_filter_written_out_without_smoothing_and_with_wide_kernels():
    """σ√τ of many lattice spacings: the kernel spans the whole lattice (its half-width
    is cut at G − 1 nodes), so every column is renormalised at the lattice's ends."""
    changed, tau = _history(16, 30, 30.0, 7)
    mask = _mask(16, 30, "masked", 7)
    for sigmas in ((1.0,), (0.0, 3.0)):
        ref = _reference(changed, tau, mask, sigmas, smooth=False)
        new = _run(changed, tau, mask, sigmas, smooth=False)
        for name in ("pred", "f_mean", "f_q", "wpath"):
            _assert_close(new[name], ref[name], name)
        _assert_close(new["log_ev"], ref["log_ev"], "log_ev", atol=_log_ev_atol(30))
        assert np.isnan(new["s_mean"]).all()


@pytest.mark.parametrize("scale", ["tiny", "unit", "mixed"])
def test_streaming_kernels_equal_the_filter_written_out(scale):
    n, k = 12, 25
    changed, tau = _history(n, k, TAU_SCALES[scale], 3)
    mask = _mask(n, k, "masked", 3)
    sigmas = np.array([0.0, 0.05, 0.4])
    lat = make_lattice(GRID, check_prior(None, None), None, n)
    log_h2 = 2.0 * math.log(lat.h)
    w = np.repeat(lat.prior_weights(n)[None], sigmas.size, axis=0)
    lev = np.zeros((sigmas.size, n))
    w_ref, lev_ref = w.copy(), lev.copy()
    for c in range(k):
        p = np.empty((sigmas.size, n))
        _kernels.stream_predict(w, tau[:, c], lat.rates, log_h2, sigmas, p, 0, n)
        status = np.ones(n, dtype=np.int8)
        _kernels.stream_update(w, lev, changed[:, c], tau[:, c], mask[:, c], lat.rates, log_h2, sigmas, status, 0, n)
        for s in range(sigmas.size):
            for i in range(n):
                p0, p1, updated = _crawl(w_ref[s, i], lat.rates, lat.h, sigmas[s], tau[i, c], changed[i, c])
                assert p[s, i] == pytest.approx(p1, rel=1e-12, abs=0)
                if mask[i, c]:
                    w_ref[s, i] = updated
                    lev_ref[s, i] += math.log(p1 if changed[i, c] else p0)
        np.testing.assert_array_equal(status, 0)
        np.testing.assert_allclose(lev, lev_ref, rtol=1e-12, atol=_log_ev_atol(c + 1))
        # node probabilities: 1e-12 relative, except nodes at most 1e-30 of the page's largest (set to zero)
        np.testing.assert_allclose(w, w_ref, rtol=1e-12, atol=1e-28)
