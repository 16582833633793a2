"""The compiled grid and conjugate kernels of posterior() against the previous code.

The reference for the grid is the vectorised NumPy implementation that
``posterior(method="grid")`` used before (``_grid.grid_draws`` on the whole history,
reproduced below): same uniforms in the same order, so the draws must agree to 1e-12.
The conjugate draws now come from a compiled gamma sampler on per-block generators (so
only their distribution can be compared with the previous
``scipy.stats.betaprime(...).rvs``): KS tests against the closed form and the previous
sampler, the documented per-block streams, and the same draws whatever the number of
threads.
"""

import numba
import numpy as np
import pytest
from scipy import stats

from changerate_bayes import (
    BetaPrimePrior,
    CrawlHistory,
    GammaPrior,
    LogNormalPrior,
    posterior,
    posterior_summary,
    simulate_history,
)
from changerate_bayes.bayes import BayesianEstimator
from changerate_bayes.bayes._grid import grid_draws
from changerate_bayes.bayes._sufficient import crawl_rates, exact_likelihood

# the tests that compile the grid posterior's and the summary's kernels run in one pytest-xdist
# worker, so that a fresh checkout compiles them once, not once in every worker at the same time
pytestmark = pytest.mark.xdist_group("grid_kernels")


def previous_grid_posterior(history, prior, *, draws, chains, rng, grid_size=64):
    """posterior(method="grid")'s draws as computed before the compiled kernels."""
    lik = exact_likelihood(history)
    coef = prior.coefficients(crawl_rates(history)).as_arrays(lik.n_pages)
    flat, _ = grid_draws(lik, coef, n_draws=chains * draws, rng=np.random.default_rng(rng), size=grid_size)
    return flat.reshape(lik.n_pages, chains, draws).transpose(1, 2, 0)


def _draws(history, prior, **kw):
    return posterior(history, prior=prior, method="grid", **kw).posterior["change_rate"].values


@pytest.fixture(scope="module")
def many_pages():
    gen = np.random.default_rng(11)
    rates = np.exp(gen.normal(0.0, 1.5, 3000))
    return simulate_history(rates, np.exp(gen.normal(0.0, 1.0, 3000)), 20, n_pages=3000, rng=gen)


@pytest.mark.parametrize(
    "prior",
    [
        GammaPrior(2.0, 1.0),
        BetaPrimePrior(1.0, 2.0),
        LogNormalPrior(-1.0, 2.0),
        GammaPrior(0.01, 1e-3),
        BetaPrimePrior(0.0, 2.0),
    ],
)
def test_grid_kernel_matches_the_previous_implementation(many_pages, prior):
    if not prior.proper:  # a = 0 needs a change on every page
        keep = np.flatnonzero(many_pages.changed.sum(axis=1) > 0)
        many_pages = CrawlHistory(many_pages.changed[keep], many_pages.intervals[keep], many_pages.crawl_rate[keep])
    new = _draws(many_pages, prior, draws=40, chains=2, rng=5)
    old = previous_grid_posterior(many_pages, prior, draws=40, chains=2, rng=5)
    np.testing.assert_allclose(new, old, rtol=1e-12, atol=0)


@pytest.mark.parametrize("grid_size", [8, 33, 65])
def test_grid_kernel_matches_at_other_grid_sizes(many_pages, grid_size):
    h = CrawlHistory(many_pages.changed[:300], many_pages.intervals[:300], many_pages.crawl_rate[:300])
    new = _draws(h, GammaPrior(1.0, 0.5), draws=30, chains=1, rng=2, grid_size=grid_size)
    old = previous_grid_posterior(h, GammaPrior(1.0, 0.5), draws=30, chains=1, rng=2, grid_size=grid_size)
    np.testing.assert_allclose(new, old, rtol=1e-12, atol=0)


EXTREME = [
    ([1, 0, 1, 0, 1, 1], [1e-6, 1e6, 1e-2, 3.0, 1e3, 1e-4]),
    ([1, 1, 1, 1], [0.3, 1.2, 0.5, 2.0]),
    ([0, 0, 0, 0, 0], [0.3, 1.2, 0.5, 2.0, 0.7]),
    ([1], [1e-300]),
    ([1, 0], [1e-300, 1e-300]),
    ([0, 1], [1e250, 1e-250]),
    ([1, 1], [1e300, 1e300]),
]


@pytest.mark.parametrize("prior", [GammaPrior(2.0, 1.0), LogNormalPrior(0.0, 1.0)])
def test_grid_kernel_matches_on_extreme_intervals(prior):
    for changed, tau in EXTREME:
        h = CrawlHistory(changed, tau)
        new = _draws(h, prior, draws=200, chains=1, rng=3)
        old = previous_grid_posterior(h, prior, draws=200, chains=1, rng=3)[..., 0]
        np.testing.assert_allclose(new, old, rtol=1e-12, atol=0, err_msg=f"{changed} {tau}")


def test_grid_kernel_matches_on_a_ragged_history():
    gen = np.random.default_rng(4)
    lengths = gen.integers(1, 40, 500)
    tau = gen.exponential(1.0, lengths.sum())
    changed = (gen.random(tau.size) < 0.4).astype(np.int8)
    h = CrawlHistory.from_segments(changed, tau, lengths=lengths, crawl_rate=1.0)
    new = _draws(h, BetaPrimePrior(1.0, 2.0), draws=50, chains=2, rng=9)
    old = previous_grid_posterior(h, BetaPrimePrior(1.0, 2.0), draws=50, chains=2, rng=9)
    np.testing.assert_allclose(new, old, rtol=1e-12, atol=0)


def test_same_grid_draws_whatever_the_number_of_threads(many_pages):
    prior = BetaPrimePrior(1.0, 2.0)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = _draws(many_pages, prior, draws=20, chains=1, rng=8)
        numba.set_num_threads(max(2, before))
        two = _draws(many_pages, prior, draws=20, chains=1, rng=8)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one, two)


def test_same_grid_draws_whatever_the_block_of_uniforms(many_pages, monkeypatch):
    """Blocks of 700 pages (five, the last one short, their uniforms drawn into two buffers
    in turn) read the same uniforms as one block of all 3000 pages: the same draws."""
    from changerate_bayes.bayes import _grid_fast

    prior = GammaPrior(2.0, 1.0)
    one = _draws(many_pages, prior, draws=20, chains=1, rng=8)
    monkeypatch.setattr(_grid_fast, "BLOCK_PAGES", 700)
    five = _draws(many_pages, prior, draws=20, chains=1, rng=8)
    np.testing.assert_array_equal(one, five)


def test_same_conjugate_draws_whatever_the_number_of_threads(many_pages, monkeypatch):
    from changerate_bayes.bayes import _conjugate

    monkeypatch.setattr(_conjugate, "BLOCK_PAGES", 512)  # several blocks
    runs = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(_conjugate, "THREADS", threads)
        idata = posterior(many_pages, prior=BetaPrimePrior(1.0, 2.0), method="conjugate", draws=20, chains=1, rng=8)
        runs.append(idata.posterior["change_rate"].values)
    np.testing.assert_array_equal(runs[0], runs[1])
    np.testing.assert_array_equal(runs[0], runs[2])


def test_conjugate_blocks_read_the_documented_streams(monkeypatch):
    """Block j is ratio_block on SFC64(SeedSequence(s).spawn(n_blocks)[j]), s from ``rng``."""
    from changerate_bayes.bayes import _conjugate
    from changerate_bayes.bayes import _gamma_kernels as gk

    monkeypatch.setattr(_conjugate, "BLOCK_PAGES", 2)
    n_changed, n_crawls = np.array([0.0, 3.0, 7.0]), np.array([5.0, 9.0, 7.0])
    p = np.array([0.5, 1.0, 2.0])
    out = _conjugate.conjugate_posterior_draws(
        0.5, 2.0, n_changed, n_crawls, p, n_draws=40, rng=np.random.default_rng(3)
    )
    s = int(np.random.default_rng(3).integers(0, 2**63))
    seeds = np.random.SeedSequence(s).spawn(2)
    for j, (lo, hi) in enumerate([(0, 2), (2, 3)]):
        ref = np.empty((40, hi - lo))
        gk.ratio_block(
            gk.sfc64_state(seeds[j]),
            *gk.shape_constants(0.5 + n_changed[lo:hi]),
            *gk.shape_constants(2.0 + n_crawls[lo:hi] - n_changed[lo:hi]),
            p[lo:hi],
            np.log(p[lo:hi]),
            ref,
            0,
        )
        np.testing.assert_array_equal(out[:, lo:hi], ref)


def test_conjugate_block_has_the_law_of_the_previous_sampler():
    """One block against ``scipy.stats.betaprime(...).rvs`` (the previous sampler).

    The numbers cannot be compared: the previous sampler drew NumPy's standard_gamma
    from PCG64 words; the compiled kernel runs Marsaglia & Tsang's method on SFC64
    words, so the same seed gives other (equally exact) variates. Both must have the
    law BetaPrime(α, β)·p: two-sample KS per page (20 000 draws each, level 1e-3).
    """
    from changerate_bayes.bayes import _conjugate

    n_changed, n_crawls, p = np.array([0.0, 3.0, 7.0]), np.array([5.0, 9.0, 7.0]), np.array([0.5, 1.0, 2.0])
    out = _conjugate.conjugate_posterior_draws(
        1.0, 2.0, n_changed, n_crawls, p, n_draws=20_000, rng=np.random.default_rng(3)
    )
    ref = stats.betaprime(1.0 + n_changed, 2.0 + n_crawls - n_changed, scale=p).rvs(
        size=(20_000, 3), random_state=np.random.default_rng(4)
    )
    for j in range(3):
        assert stats.ks_2samp(out[:, j], ref[:, j]).pvalue > 1e-3


def test_conjugate_kernel_draws_the_beta_prime_posterior():
    # pages spread over several seed blocks; KS per page against the closed form
    n = 9000
    gen = np.random.default_rng(1)
    p = np.exp(gen.normal(0.0, 1.0, n))
    h = simulate_history(np.full(n, 0.7), p, 12, n_pages=n, rng=gen)
    idata = posterior(h, prior=BetaPrimePrior(1.5, 2.5), method="conjugate", draws=1000, chains=2, rng=6)
    draws = idata.posterior["change_rate"].values
    s = h.changed.sum(axis=1)
    pvalues = []
    for i in (0, 1, 4500, 8999):
        dist = stats.betaprime(1.5 + s[i], 2.5 + 12 - s[i], scale=p[i])
        pvalues.append(stats.kstest(draws[..., i].ravel(), dist.cdf).pvalue)
    assert min(pvalues) > 1e-3
    # the pooled PIT of all pages is uniform (one KS test on 9000 × 20 values)
    a, b = 1.5 + s, 2.5 + 12 - s
    pit = stats.betaprime.cdf(draws[0, :20], a, b, scale=p)
    assert stats.kstest(pit.ravel(), "uniform").pvalue > 1e-3


# ------------------------------------------------------------ extreme magnitudes
def test_grid_posterior_with_intervals_summing_beyond_float64():
    # S0 = 2 × 1.7e308 overflows; the posterior is ∝ Δ^{a−1} e^{−bΔ} (1 − e^{−Δ}) e^{−Δ S0}
    # ≈ Gamma(a + 1, S0) (Δ ~ 1e-308, so 1 − e^{−Δ} = Δ to 1e-300)
    h = CrawlHistory([1, 0, 0], [1.0, 1.7e308, 1.7e308])
    draws = _draws(h, GammaPrior(2.0, 1.0), draws=2000, chains=2, rng=1).ravel()
    assert np.all(np.isfinite(draws)) and np.all(draws > 0)
    scaled = np.ldexp(draws, 1024)  # Δ · 2^1024 ~ Gamma(3, S0 / 2^1024)
    rate = 2.0 * np.ldexp(1.7e308, -1024)
    assert stats.kstest(scaled, stats.gamma(3.0, scale=1.0 / rate).cdf).pvalue > 1e-3
    s = posterior_summary(h, prior=GammaPrior(2.0, 1.0))
    assert np.ldexp(s.mean[0], 1024) == pytest.approx(3.0 / rate, rel=1e-10)
    assert np.ldexp(s.sd[0], 1024) == pytest.approx(np.sqrt(3.0) / rate, rel=1e-8)
    lo, hi = stats.gamma(3.0, scale=1.0 / rate).ppf([0.05, 0.95])
    assert np.ldexp(s.lower[0], 1024) == pytest.approx(lo, rel=1e-4)
    assert np.ldexp(s.upper[0], 1024) == pytest.approx(hi, rel=1e-4)


def test_conjugate_at_the_largest_crawl_rate():
    h = CrawlHistory([1, 0, 0], [1.0, 1.0, 1.0], crawl_rate=1.7e308)
    # draws of Δ = p · BetaPrime(2, 4) exceed 1.8e308 with probability 0.17: refused
    with pytest.raises(ValueError, match="puts probability 0.17.* above the largest float64"):
        posterior(h, method="conjugate", draws=10, chains=1)
    # the exact summary: mean p · 2/3 is finite, the 95% quantile lies beyond float64
    s = posterior_summary(h, method="conjugate", level=0.9)
    assert s.mean[0] == pytest.approx(1.7e308 * (2.0 / 3.0), rel=1e-14)
    assert s.lower[0] == pytest.approx(1.7e308 * stats.betaprime(2.0, 4.0).ppf(0.05), rel=1e-10)
    assert s.upper[0] == np.inf and not np.isnan(s.sd[0])
    est = BayesianEstimator(crawl_rate=1.7e308)
    for c in (1, 0, 0):
        est.update(c)
    assert est.rate == pytest.approx(1.7e308 * (2.0 / 3.0), rel=1e-14)  # p (a + 1)/(b + 3 − 1 − 1)


def test_conjugate_at_a_large_but_safe_crawl_rate():
    h = CrawlHistory([1, 0, 0, 0, 0, 0, 0, 0], crawl_rate=1e300)
    d = posterior(h, method="conjugate", draws=500, chains=2, rng=0).posterior["change_rate"].values
    assert np.all(np.isfinite(d))


def test_flat_posterior_is_refused_by_the_kernel():
    with pytest.raises(ValueError, match="too flat in log Δ"):
        posterior(CrawlHistory([0], [1.0]), prior=GammaPrior(5e-324, 1.0), method="grid", draws=5, chains=1)


def test_series_terms_of_the_likelihood_agree_with_expm1_to_a_few_ulps():
    """log(1 − e^{−x}) = log x + h(x) and x/(e^x − 1) from the Bernoulli series, x in [0, 1]."""
    from changerate_bayes.bayes import _grid_kernels as k

    x = np.concatenate([np.geomspace(1e-300, 1e-3, 200), np.linspace(1e-3, k.SERIES_X, 2001)])
    h = np.array([k._h_series(v) for v in x])
    q = np.array([k._q_series(v) for v in x])
    np.testing.assert_allclose(np.log(x) + h, np.log(-np.expm1(-x)), rtol=4 * np.finfo(float).eps, atol=1e-300)
    np.testing.assert_allclose(q, x / np.expm1(x), rtol=4 * np.finfo(float).eps)
    assert k._q_series(0.0) == 1.0 and k._h_series(0.0) == 0.0
    # the series' first coefficients (x/(e^x − 1) = 1 − x/2 + x²/12 − x⁴/720 + ...)
    np.testing.assert_allclose(k._Q_COEF[:3], [1 / 12, -1 / 720, 1 / 30240], rtol=1e-15)
    np.testing.assert_allclose(k._H_COEF[:2], [1 / 24, -1 / 2880], rtol=1e-15)


def test_vectorised_runs_of_terms_agree_with_expm1_to_a_few_ulps():
    """The node runs: log(1 − e^{−x}) by exp/atanh polynomials above SERIES_X, by the series below."""
    from changerate_bayes.bayes import _grid_kernels as k

    for t, lo_x, hi_x in ((1.0, k.SERIES_X * (1 + 1e-15), k.SATURATED), (3e-7, 1e-12, k.SERIES_X)):
        x = np.geomspace(lo_x, hi_x, 4001)
        u = np.log(x / t)
        eu = np.exp(u)
        acc = np.full(x.size + 3, 0.25)  # the run adds to what is there, and only inside lo:hi
        fbuf, ibuf = np.empty(acc.size), np.empty(acc.size, dtype=np.int64)
        padded_u, padded_eu = np.r_[0.0, u, 0.0, 0.0], np.r_[0.0, eu, 0.0, 0.0]
        if t == 1.0:
            k._log1mexp_run(t, padded_eu, 1, x.size + 1, acc, fbuf, ibuf)
        else:
            k._series_run(t, padded_u, padded_eu, 1, x.size + 1, acc)
        ref = np.log(-np.expm1(-t * eu))
        assert acc[0] == 0.25 and np.all(acc[-2:] == 0.25)
        np.testing.assert_array_less(
            np.abs((acc[1:-2] - 0.25) - ref), 8 * np.finfo(float).eps * np.maximum(1, np.abs(ref))
        )


def test_sinh_of_the_draws_is_within_a_few_ulps_of_cosh():
    """_sinh (the slow path of the draws) has an absolute error of a few ulps of cosh."""
    from changerate_bayes.bayes import _grid_kernels as k

    s = np.concatenate([np.linspace(-30.0, 30.0, 4001), [1e-300, -1e-12, 705.0, -705.0]])
    got = np.array([k._sinh(v) for v in s])
    np.testing.assert_array_less(np.abs(got - np.sinh(s)), 4 * np.finfo(float).eps * np.cosh(s))


def test_arithmetic_exp_log_and_expm1_are_within_a_few_ulps():
    """The loops of the nodes and draws use exp, expm1 and log in arithmetic only."""
    import numba as nb

    from changerate_bayes.bayes import _grid_kernels as k

    eps = np.finfo(float).eps

    @nb.njit
    def apply(which, x):
        out = np.empty_like(x)
        for i in range(x.size):
            out[i] = k._exp_ar(x[i]) if which == 0 else (k._expm1_neg_ar(x[i]) if which == 1 else k._log_ar(x[i]))
        return out

    y = np.concatenate([np.linspace(-k.FAST_EXP, k.FAST_EXP, 20001), [0.0, 1e-300, -1e-300, 0.5 * np.log(2.0)]])
    np.testing.assert_allclose(apply(0, y), np.exp(y), rtol=2 * eps, atol=0)
    neg = -np.concatenate([np.geomspace(1e-300, k.FAST_EXP, 20001), np.linspace(0.0, 2.0, 2001)])
    np.testing.assert_allclose(apply(1, neg), np.expm1(neg), rtol=3 * eps, atol=0)
    pos = np.concatenate(
        [
            np.geomspace(np.finfo(float).tiny, 1e300, 20001),
            np.linspace(0.5, 2.0, 3001),
            1.0 + np.linspace(-1e-12, 1e-12, 201),
            [1.0, np.sqrt(0.5), np.sqrt(2.0)],
        ]
    )
    got, ref = apply(2, pos), np.log(pos)
    # a few ulps of log y, or of 1 near y = 1 where log y = log w (w the reduced mantissa)
    np.testing.assert_array_less(np.abs(got - ref), 3 * eps * np.maximum(np.abs(ref), np.abs(pos - 1.0)) + 1e-300)
    assert apply(2, np.array([1.0]))[0] == 0.0 and apply(1, np.array([0.0]))[0] == 0.0


def test_arithmetic_likelihood_sums_agree_with_the_libm_ones():
    """The mode and tail searches' sums over the crawls (arithmetic loops) against the
    scalar libm code they replace: each term within a few ulps, so each sum within
    m·4·eps of the sum of the terms' magnitudes."""
    from changerate_bayes.bayes import _grid_kernels as k

    eps = np.finfo(float).eps
    gen = np.random.default_rng(3)
    for m in (1, 5, 12, 40):
        tau = np.sort(gen.exponential(1.0, m) * np.exp(gen.normal(0.0, 2.0, m)))
        qb, hb = np.empty(m), np.empty(m)
        for u in np.linspace(-8.0, 5.0, 27):
            eu = np.exp(u)
            x = tau * eu
            if x[-1] <= k.FAST_EXP:
                g, h = k._log_lik_derivs_ar(eu, tau, m, qb, hb)
                g0, h0 = k._log_lik_derivs(u, tau, m, 0.0)
                bound = 4 * m * eps * (np.abs(qb).sum() + np.abs(hb).sum() + 1.0)
                assert abs(g - g0) <= bound and abs(h - h0) <= bound, (m, u)
            if x[0] >= 1e-290:
                f = k._log_lik_terms_ar(eu, tau, m, qb)
                f0 = k._log_lik(u, tau, m, 0.0)
                assert abs(f - f0) <= 4 * m * eps * (np.abs(qb).sum() + 1.0), (m, u)


def test_overflow_refusal_names_the_first_page_beyond_the_threshold():
    """The Markov shortcut of refuse_overflow changes no decision: the page named is the
    first whose tail I_{1/(1+t)}(β, α), t = max/p, exceeds OVERFLOW_PROBABILITY."""
    from types import SimpleNamespace

    from scipy import special

    from changerate_bayes.bayes._posterior import OVERFLOW_PROBABILITY, refuse_overflow

    gen = np.random.default_rng(21)
    n = 5000
    a, b = np.exp(gen.uniform(np.log(0.3), np.log(50.0), (2, n)))
    p = 10.0 ** gen.uniform(280.0, 308.0, n)
    tail = special.betainc(b, a, 1.0 / (1.0 + np.finfo(np.float64).max / p))
    first = int(np.flatnonzero(tail > OVERFLOW_PROBABILITY)[0])
    assert first > 0 and (tail < OVERFLOW_PROBABILITY * 1e-3).sum() > n // 4  # both kinds of pages present
    with pytest.raises(ValueError, match=f"posterior of page {first} puts probability {tail[first]:.3g} "):
        refuse_overflow(a, b, p, SimpleNamespace(n_pages=n))
    safe = tail <= OVERFLOW_PROBABILITY
    refuse_overflow(a[safe], b[safe], p[safe], SimpleNamespace(n_pages=int(safe.sum())))  # no page refused
