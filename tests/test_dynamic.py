"""The dynamic posterior: kernel, σ = 0 equals the static posterior, dense-matrix reference,
streaming equals batch, masks, errors."""

import numpy as np
import pytest
from scipy import integrate, special, stats

from changerate_bayes import CrawlHistory, DynamicRateFilter, GammaPrior, LogNormalPrior, dynamic_posterior
from changerate_bayes.bayes import posterior_mean_path
from changerate_bayes.bayes._grid import posterior_mean
from changerate_bayes.bayes._likelihood import ExactLikelihood, log_likelihood
from changerate_bayes.bayes._priors import log_prior_u
from changerate_bayes.dynamic import _kernels

# the tests that compile the dynamic filter's kernels run in one pytest-xdist worker, so that a
# fresh checkout compiles them once, not once in every worker at the same time (conftest.py)
pytestmark = pytest.mark.xdist_group("dynamic_kernels")


def _history(n, k, seed, rate=0.5):
    rng = np.random.default_rng(seed)
    tau = rng.exponential(1.0, (n, k))
    changed = (rng.random((n, k)) < -np.expm1(-rate * tau)).astype(np.int8)
    return changed, tau


# ------------------------------------------------------------------ kernel
@pytest.mark.parametrize("t", [1e-9, 1e-3, 0.3, 2.0, 47.0, 2500.0])
def test_lattice_kernel_is_the_discrete_gaussian(t):
    out = np.empty(600)
    b = _kernels.lattice_kernel(t, 599, out)
    ref = special.ive(np.arange(b + 1), t)  # e^{-t} I_n(t)
    ref /= ref[0] + 2 * ref[1:].sum()
    np.testing.assert_allclose(out[: b + 1], ref, rtol=0, atol=1e-15)
    # its variance is t (to the truncation, < 1e-8 relative)
    var = 2 * np.sum(np.arange(b + 1) ** 2 * out[: b + 1])
    assert var == pytest.approx(t, rel=1e-7)


def test_lattice_kernel_semigroup():
    """K_s * K_t = K_{s+t}: two crawls' diffusion equals one over the summed interval."""
    a, b, c = (np.empty(200) for _ in range(3))
    ba = _kernels.lattice_kernel(1.3, 199, a)
    bb = _kernels.lattice_kernel(2.1, 199, b)
    bc = _kernels.lattice_kernel(3.4, 199, c)
    full = lambda k, n: np.concatenate([k[1 : n + 1][::-1], k[: n + 1]])  # noqa: E731
    conv = np.convolve(full(a, ba), full(b, bb))
    mid = conv.size // 2
    np.testing.assert_allclose(conv[mid - bc : mid + bc + 1], full(c, bc), atol=1e-8)


# ------------------------------------------------------------------ σ = 0 is the static posterior
GRID = np.geomspace(1e-9, 1e6, 4000)  # wide enough for the log-normal prior's upper tail of e^u


@pytest.mark.parametrize("prior", [GammaPrior(2.0, 1.0), LogNormalPrior(-0.5, 1.5)])
def test_sigma_zero_equals_static_posterior(prior):
    changed, tau = _history(4, 40, 1)
    idata = dynamic_posterior(CrawlHistory(changed, tau), sigma=0.0, prior=prior, grid=GRID)
    # after every crawl, the posterior mean of the static exact posterior (quadrature)
    ref_path = posterior_mean_path(CrawlHistory(changed, tau), prior=prior, likelihood="exact")
    np.testing.assert_allclose(idata.posterior["filtered_mean"].values, ref_path, rtol=1e-10)
    # the grid method's own quadrature of the final posterior
    coef = prior.coefficients().as_arrays(4)
    ref = posterior_mean(ExactLikelihood(changed, tau), coef, size=128)
    np.testing.assert_allclose(idata.posterior["filtered_mean"].values[:, -1], ref, rtol=1e-10)
    # smoothed = the final posterior at every crawl (a constant rate)
    sm = idata.posterior["smoothed_mean"].values
    np.testing.assert_allclose(sm, np.repeat(ref[:, None], 40, axis=1), rtol=1e-10)
    assert np.all(idata.posterior["sigma_weights"].values == 1.0)


def test_sigma_zero_node_probabilities_are_prior_times_likelihood():
    changed, tau = _history(3, 25, 2)
    prior = GammaPrior(1.5, 2.0)
    f = DynamicRateFilter(3, sigma=0.0, prior=prior, grid=np.geomspace(1e-4, 1e2, 400))
    for j in range(25):
        f.update(changed[:, j], tau[:, j])
    u = np.log(f.grid)
    logp = log_likelihood(f.grid[:, None], changed, tau).T + log_prior_u(
        np.broadcast_to(u, (3, u.size)), prior.coefficients().as_arrays(3)
    )
    ref = np.exp(logp - logp.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(f.node_probabilities(), ref, rtol=0, atol=1e-12)


def test_sigma_zero_predictive_equals_ratio_of_integrals():
    """P(I_k = 1 | I_1..I_{k-1}) = ∫ π L_{k-1} (1 - e^{-Δτ_k}) / ∫ π L_{k-1}, by adaptive quadrature."""
    changed, tau = _history(1, 12, 3)
    prior = GammaPrior(2.0, 1.0)
    idata = dynamic_posterior(CrawlHistory(changed[0], tau[0]), sigma=0.0, prior=prior, grid=GRID)
    pred = idata.predictions["change_probability"].values
    dist = stats.gamma(2.0, scale=1.0)
    for k in (0, 5, 11):

        def f(d, extra):
            return dist.pdf(d) * np.exp(log_likelihood(d, changed[0, :k], tau[0, :k])) * extra(d)

        num = integrate.quad(f, 0, 60, args=(lambda d: -np.expm1(-d * tau[0, k]),), epsabs=0, epsrel=1e-13, limit=200)[
            0
        ]
        den = integrate.quad(f, 0, 60, args=(lambda d: 1.0,), epsabs=0, epsrel=1e-13, limit=200)[0]
        assert pred[k] == pytest.approx(num / den, rel=1e-10)


# ------------------------------------------------------------------ dense-matrix reference for σ > 0
def _dense_reference(changed, tau, u, prior_w, sigmas):
    """Forward filter and forward-backward smoother with explicit (G, G) matrices."""
    g = u.size
    h = u[1] - u[0]
    rates = np.exp(u)
    d = np.abs(np.arange(g)[:, None] - np.arange(g)[None, :])

    def kmat(sig, t):
        if sig == 0:
            return np.eye(g)
        k = special.ive(d, sig**2 * t / h**2)
        return k / k.sum(axis=0, keepdims=True)  # column j: from node j

    def lik(c, t):
        return -np.expm1(-rates * t) if c else np.exp(-rates * t)

    out = []
    for sig in sigmas:
        w = prior_w.copy()
        filt, pred, lev = [], [], 0.0
        for c, t in zip(changed, tau):
            w = kmat(sig, t) @ w
            p1 = w @ -np.expm1(-rates * t)
            pred.append(p1)
            w = w * lik(c, t)
            lev += np.log(w.sum())
            w /= w.sum()
            filt.append(w)
        beta = np.ones(g)
        smooth = [None] * len(changed)
        for k in range(len(changed) - 1, -1, -1):
            s = filt[k] * beta
            smooth[k] = s / s.sum()
            if k:
                beta = kmat(sig, tau[k]).T @ (lik(changed[k], tau[k]) * beta)
                beta /= beta.max()
        out.append((np.array(filt), np.array(pred), lev, np.array(smooth)))
    return out


def test_filter_and_smoother_match_dense_reference():
    changed, tau = _history(1, 30, 4, rate=1.0)
    changed, tau = changed[0], 3.0 * tau[0]
    grid = np.geomspace(1e-3, 1e2, 70)
    sigmas = (0.0, 0.15, 0.5)
    prior = LogNormalPrior(0.0, 1.5)
    idata = dynamic_posterior(CrawlHistory(changed, tau), sigma=sigmas, prior=prior, grid=grid, levels=(0.9,))
    u = np.log(grid)
    u = u[0] + (u[-1] - u[0]) / 69 * np.arange(70)
    lp = log_prior_u(u[None, :], prior.coefficients().as_arrays(1))[0]
    w0 = np.exp(lp - lp.max())
    w0 /= w0.sum()
    ref = _dense_reference(changed, tau, u, w0, sigmas)
    levs = np.array([r[2] for r in ref])
    np.testing.assert_allclose(idata.posterior["log_evidence"].values, levs, rtol=1e-8)
    # BMA: weights after each crawl, predictive mixing the weights before it
    lev_path = np.array([np.cumsum(np.log(np.where(changed, r[1], 1 - r[1]))) for r in ref])  # (S, K)
    wts = np.exp(lev_path - lev_path.max(axis=0))
    wts /= wts.sum(axis=0)
    np.testing.assert_allclose(idata.posterior["sigma_weights"].values, wts.T, rtol=1e-8, atol=1e-14)
    prev = np.concatenate([np.full((3, 1), 1 / 3), wts[:, :-1]], axis=1)
    pred = np.sum(prev * np.array([r[1] for r in ref]), axis=0)
    np.testing.assert_allclose(idata.predictions["change_probability"].values, pred, rtol=1e-8)
    rates = np.exp(u)
    f_mix = np.einsum("sk,skg->kg", wts, np.array([r[0] for r in ref]))
    np.testing.assert_allclose(idata.posterior["filtered_mean"].values, f_mix @ rates, rtol=1e-8)
    s_mix = np.einsum("s,skg->kg", wts[:, -1], np.array([r[3] for r in ref]))
    np.testing.assert_allclose(idata.posterior["smoothed_mean"].values, s_mix @ rates, rtol=1e-8)
    # the last smoothed posterior is the last filtered one
    assert idata.posterior["smoothed_mean"].values[-1] == pytest.approx(
        idata.posterior["filtered_mean"].values[-1], rel=1e-12
    )


# ------------------------------------------------------------------ streaming = batch, masks
def test_streaming_equals_batch_and_predictive_is_before_the_crawl():
    changed, tau = _history(5, 20, 5)
    sig = (0.0, 0.05, 0.2)
    grid = np.geomspace(1e-3, 1e2, 150)
    idata = dynamic_posterior((changed, tau), sigma=sig, grid=grid, smooth=False)
    f = DynamicRateFilter(5, sigma=sig, grid=grid)
    for j in range(20):
        p = f.predict_change_probability(tau[:, j])
        np.testing.assert_allclose(p, idata.predictions["change_probability"].values[:, j], rtol=1e-12)
        f.update(changed[:, j], tau[:, j])
        np.testing.assert_allclose(f.rate, idata.posterior["filtered_mean"].values[:, j], rtol=1e-12)
        np.testing.assert_allclose(f.sigma_weights, idata.posterior["sigma_weights"].values[:, j], rtol=1e-12)
    q = idata.posterior["filtered_quantiles"]
    ci = f.credible_interval(0.9)
    np.testing.assert_allclose(ci[:, 0], q.sel(quantile=0.05).values[:, -1], rtol=1e-10)
    np.testing.assert_allclose(ci[:, 1], q.sel(quantile=0.95).values[:, -1], rtol=1e-10)


def test_mask_leaves_state_untouched_and_padding_equals_short_rows():
    changed, tau = _history(3, 12, 6)
    grid = np.geomspace(1e-3, 1e2, 120)
    f = DynamicRateFilter(3, sigma=(0.0, 0.1), grid=grid)
    f.update(changed[:, 0], tau[:, 0])
    before = f.node_probabilities().copy(), f.sigma_weights.copy()
    mask = np.array([True, False, True])
    f.update(changed[:, 1], np.where(mask, tau[:, 1], -1.0), mask=mask)  # masked-out interval not checked
    np.testing.assert_array_equal(f.node_probabilities()[1], before[0][1])
    np.testing.assert_array_equal(f.sigma_weights[1], before[1][1])
    assert not np.array_equal(f.node_probabilities()[0], before[0][0])
    # ragged: row 1 keeps 7 crawls, padded at the end, and row 2 has a hole in the middle
    m = np.ones((3, 12), dtype=bool)
    m[1, 7:] = False
    m[2, 4] = False
    full = dynamic_posterior((changed, tau, m), sigma=(0.0, 0.1), grid=grid)
    short = dynamic_posterior(CrawlHistory(changed[1, :7], tau[1, :7]), sigma=(0.0, 0.1), grid=grid)
    np.testing.assert_allclose(
        full.posterior["smoothed_mean"].values[1, :7], short.posterior["smoothed_mean"].values, rtol=1e-12
    )
    assert np.isnan(full.posterior["smoothed_mean"].values[1, 7:]).all()
    keep = np.r_[0:4, 5:12]
    holed = dynamic_posterior(CrawlHistory(changed[2, keep], tau[2, keep]), sigma=(0.0, 0.1), grid=grid)
    np.testing.assert_allclose(
        full.predictions["change_probability"].values[2, keep],
        holed.predictions["change_probability"].values,
        rtol=1e-12,
    )


def test_predictive_includes_diffusion_over_the_interval():
    """predict_change_probability(τ) spreads the posterior by the walk over τ first:
    Σ_i (K_τ w)_i (1 − e^{−Δ_i τ}), with K_τ the dense discrete-Gaussian matrix."""
    grid = np.geomspace(1e-4, 1e2, 120)
    f = DynamicRateFilter(sigma=0.3, grid=grid)
    for c in (0, 0, 1, 0, 0, 0):
        f.update(c, 1.0)
    w = f.node_probabilities()
    u = np.log(grid)
    h = (u[-1] - u[0]) / 119
    tau = 50.0
    d = np.abs(np.arange(120)[:, None] - np.arange(120)[None, :])
    k = special.ive(d, 0.3**2 * tau / h**2)
    k /= k.sum(axis=0, keepdims=True)
    om = -np.expm1(-f.grid * tau)
    assert f.predict_change_probability(tau) == pytest.approx((k @ w) @ om, rel=1e-9)
    assert abs(f.predict_change_probability(tau) - w @ om) > 1e-3  # the diffusion matters


def test_sample_follows_the_posterior():
    n = 20000
    f = DynamicRateFilter(n, sigma=0.1, prior=GammaPrior(2.0, 1.0), grid=np.geomspace(1e-3, 1e2, 200))
    f.update(np.ones(n), np.full(n, 2.0))
    lo, hi = f.credible_interval(0.8)[0]
    draws = f.sample(1)
    # P(draw < lo) = 0.1 exactly: binomial 99.9% bounds
    for bound, p in ((lo, 0.1), (hi, 0.9)):
        frac = np.mean(draws < bound)
        assert abs(frac - p) < 3.3 * np.sqrt(p * (1 - p) / n)
    np.testing.assert_array_equal(draws, f.sample(1))


def test_one_page_is_scalar_and_repr():
    f = DynamicRateFilter(sigma=0.1)
    f.update(1, 2.0)
    assert np.ndim(f.rate) == 0 and f.credible_interval().shape == (2,) and f.sigma_weights.shape == (1,)
    assert "DynamicRateFilter" in repr(f)


# ------------------------------------------------------------------ errors
def test_bad_inputs():
    with pytest.raises(ValueError, match="sigma"):
        DynamicRateFilter(sigma=-0.1)
    with pytest.raises(ValueError, match="distinct"):
        DynamicRateFilter(sigma=(0.1, 0.1))
    with pytest.raises(ValueError, match="equally spaced"):
        DynamicRateFilter(grid=np.linspace(0.1, 10, 50))
    with pytest.raises(TypeError, match="prior"):
        DynamicRateFilter(prior="gamma")
    f = DynamicRateFilter(3, sigma=0.1)
    with pytest.raises(ValueError, match="interval"):
        f.update([1, 0, 1], [1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="shape"):
        f.update([1, 0], [1.0, 1.0])
    with pytest.raises(ValueError, match="0 or 1"):
        f.update([1, 2, 0], 1.0)
    with pytest.raises(ValueError, match="level"):
        f.credible_interval(1.5)
    with pytest.raises(TypeError, match="mask"):
        dynamic_posterior((np.zeros((2, 3)), np.ones((2, 3)), np.ones((2, 3))))
    with pytest.raises(ValueError, match="one shape"):
        dynamic_posterior((np.zeros((2, 3)), np.ones((2, 4))))
    with pytest.raises(TypeError, match="history"):
        dynamic_posterior([1, 0, 1])
    with pytest.raises(ValueError, match="intervals"):
        dynamic_posterior(CrawlHistory([1, 0], crawl_rate=1.0))
    g = DynamicRateFilter(sigma=0.0, prior=GammaPrior(50.0, 1.0), grid=np.geomspace(10.0, 100.0, 20))
    with pytest.raises(ValueError, match="widen `grid`"):
        g.update(0, 1000.0)


def test_crawls_at_intervals_far_below_the_lattice_scale_change_nothing():
    """A crawl that saw no change after τ = 1e-160 h has likelihood e^{−Δτ} = 1 at every
    node, and the random walk's kernel over it (t = σ²τ/h² ≈ 2e-163) is the identity to
    rounding: the posterior after it is the posterior before it. So inserting such crawls
    leaves every later filtered summary as it was, and nothing is NaN."""
    rng = np.random.default_rng(5)
    tau = rng.exponential(1.0, (3, 12))
    changed = rng.random((3, 12)) < 0.4
    tiny_tau = np.insert(tau, [4, 8], 1e-160, axis=1)
    tiny_changed = np.insert(changed, [4, 8], False, axis=1)
    kept = np.delete(np.arange(14), [4, 9])  # the columns of the original crawls
    grid = np.geomspace(1e-4, 1e2, 200)
    ref = dynamic_posterior((changed, tau), sigma=0.03, grid=grid, smooth=False).posterior
    got = dynamic_posterior((tiny_changed, tiny_tau), sigma=0.03, grid=grid, smooth=False).posterior
    for name in ("filtered_mean", "filtered_quantiles"):
        g = got[name].values
        assert np.all(np.isfinite(g))
        np.testing.assert_allclose(g[:, kept], ref[name].values, rtol=1e-12, atol=0)
