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

# the tests that compile the dynamic filter's kernels run in one pytest-xdist worker, so that a
# fresh checkout compiles them once, not once in every worker at the same time (conftest.py)
pytestmark = pytest.mark.xdist_group("dynamic_kernels")


TAIL = 1e-30  # the support rule of the model (``_kernels`` module docstring, step 1)


# ---------------------------------------------------------------------------------------------
# the definition, in NumPy
# ---------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=8192)  # the smoother reuses the filter's kernels
def _page_taps(t, g):
    """Taps k(d), d = −B..B: the discrete Gaussian e^{−t} I_|d|(t), B = min(G − 1, ⌈6√t⌉ + 3)
    (t = 0: no move, B = 0)."""
    k = ive(np.arange(min(g - 1, math.ceil(6.0 * math.sqrt(t)) + 3) + 1 if t > 0 else 1), t)
    return np.concatenate([k[:0:-1], k])


def _taps(t, g):
    """Each page's taps (t of shape (n,))."""
    return [_page_taps(float(ti), g) for ti in t]


def _convolve(x, taps):
    """Σ_d k(d) x_{j−d} for each row of x (n, G) with its own taps, nothing from outside the lattice."""
    g = x.shape[1]
    return np.stack([np.convolve(row, k)[k.size // 2 : k.size // 2 + g] for row, k in zip(x, taps)])


def _predict(w, t):
    """K w for each page: node j's mass spread by the kernel over the lattice, renormalised per
    column j (divided by the kernel's mass inside the lattice)."""
    taps = _taps(t, w.shape[1])
    return _convolve(w / _convolve(np.ones_like(w), taps), taps)


def _predict_adjoint(v, t):
    """Kᵀ v for each page (the backward message of the smoother)."""
    taps = _taps(t, v.shape[1])
    return _convolve(v, taps) / _convolve(np.ones_like(v), taps)


def _lik(rates, tau):
    """P(I = 0 | Δ, τ) and P(I = 1 | Δ, τ) at the nodes, each page's τ a row."""
    return np.exp(-rates * tau[:, None]), -np.expm1(-rates * tau[:, None])


def _variance(sigma, tau, h):
    """t = σ²τ/h²: the random walk's variance over τ in squared lattice spacings."""
    return sigma * sigma * tau / (h * h)


def _crawl(w, rates, h, sigma, tau, changed):
    """One crawl of every page (rows of w): support, predict, predictive (p0, p1), and the updated w."""
    w = np.where(w > TAIL * w.max(axis=1, keepdims=True), w, 0.0)
    w = _predict(w, _variance(sigma, tau, h))
    e, om = _lik(rates, tau)
    p0, p1 = (w * e).sum(axis=1), (w * om).sum(axis=1)
    lik, z = np.where(changed[:, None], om, e), np.where(changed, p1, p0)
    return p0, p1, w * lik / z[:, None]


def _mixture(log_ev):
    """Weights of the volatilities (axis 0) by their evidence."""
    pi = np.where(log_ev > -np.inf, np.exp(log_ev - log_ev.max(axis=0)), 0.0)
    return pi / pi.sum(axis=0)


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


def _reference(changed, tau, mask, sigmas, smooth=True):
    """The outputs of ``batch_filter``: each volatility filtered on its own, page by page in
    parallel; a page's masked crawls leave it as it is."""
    n, k = changed.shape
    lat = make_lattice(GRID, check_prior(None, None), None, n)
    rates, u, h, n_s = lat.rates, lat.u, lat.h, len(sigmas)
    w = np.repeat(lat.prior_weights(n)[None], n_s, axis=0)  # (S, n, G)
    lev = np.zeros((n_s, n))
    pred, wpath = np.full((n, k), np.nan), np.full((n, k, n_s), np.nan)
    f_mix, s_mix, filt = np.full((n, k, rates.size), np.nan), np.full((n, k, rates.size), np.nan), []
    for c in range(k):
        m = mask[:, c]
        pi = _mixture(lev)
        p0, p1, upd = (
            np.stack(x) for x in zip(*[_crawl(w[s], rates, h, sigmas[s], tau[:, c], changed[:, c]) for s in range(n_s)])
        )
        w = np.where(m[:, None], upd, w)
        pred[m, c] = (pi * p1).sum(axis=0)[m]
        lev = np.where(m, lev + np.log(np.where(changed[:, c], p1, p0)), lev)
        pi = _mixture(lev)
        wpath[m, c] = pi.T[m]
        f_mix[m, c] = np.einsum("sn,sng->ng", pi, w)[m]
        filt.append(w)
    if smooth:  # β_c = Kᵀ(L_next ⊙ β_next) from the page's next crawl on, scaled to max 1
        pi = _mixture(lev)
        beta, nxt, rows = np.ones_like(w), np.full(n, -1), np.arange(n)
        for c in range(k - 1, -1, -1):
            m = mask[:, c]
            step = m & (nxt >= 0)
            e, om = _lik(rates, tau[rows, nxt])
            lik = np.where(changed[rows, nxt][:, None], om, e)
            for s in range(n_s):
                b = _predict_adjoint(lik * beta[s], _variance(sigmas[s], tau[rows, nxt], h))
                beta[s] = np.where(step[:, None], b / b.max(axis=1, keepdims=True), beta[s])
            sm = filt[c] * beta
            s_mix[m, c] = np.einsum("sn,sng->ng", pi, sm / sm.sum(axis=2, keepdims=True))[m]
            nxt = np.where(m, c, nxt)
    f_mean, f_q = _summary(f_mix, u, h, PROBS)
    s_mean, s_q = _summary(s_mix, u, h, PROBS)
    return dict(pred=pred, wpath=wpath, log_ev=lev.T, f_mean=f_mean, f_q=f_q, s_mean=s_mean, s_q=s_q)


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
    out = [
        np.empty((n, k)),
        np.empty((n, k)),
        np.empty((n, k, PROBS.size)),
        np.full((n, k), np.nan),
        np.full((n, k, PROBS.size), np.nan),
        np.empty((n, k, sig.size)),
        np.empty((n, sig.size)),
        np.zeros(n, dtype=np.int8),
    ]
    _kernels.batch_filter(
        lat.prior_weights(n), changed, tau, mask, lat.rates, float(lat.u[0]), lat.h, sig, PROBS, smooth, *out
    )
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
        m = mask[:, c]
        for s in range(sigmas.size):
            p0, p1, updated = _crawl(w_ref[s], lat.rates, lat.h, sigmas[s], tau[:, c], changed[:, c])
            np.testing.assert_allclose(p[s], p1, rtol=1e-12, atol=0)
            w_ref[s] = np.where(m[:, None], updated, w_ref[s])
            lev_ref[s] += np.where(m, np.log(np.where(changed[:, c], p1, p0)), 0.0)
        np.testing.assert_array_equal(status, 0)
        np.testing.assert_allclose(lev, lev_ref, rtol=1e-12, atol=_log_ev_atol(c + 1))
        # node probabilities: 1e-12 relative, except nodes at most 1e-30 of the page's largest (set to zero)
        np.testing.assert_allclose(w, w_ref, rtol=1e-12, atol=1e-28)
