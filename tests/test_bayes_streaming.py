"""BayesianEstimator: streaming = batch after every update, and the LLN identity."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import stats

from changerate_bayes import (
    BayesianEstimator,
    BetaPrimePrior,
    CrawlHistory,
    GammaPrior,
    LLNEstimator,
    LogNormalPrior,
    estimate_path,
    posterior,
    posterior_mean_path,
    simulate_history,
)


def _history(shape, seed):
    n_pages = None if len(shape) == 1 else shape[0]
    rates = 2.0 if n_pages is None else np.array([0.3, 2.0, 9.0, 1.0][:n_pages])
    h = simulate_history(rates, 1.5, shape[-1], n_pages=n_pages, rng=seed)
    changed = h.changed.copy()
    changed[..., :4] = 1  # an all-changed prefix
    if n_pages:
        changed[0, :] = 0  # a page never seen changed
    return CrawlHistory(changed, h.intervals, h.crawl_rate)


SETTINGS = [
    dict(likelihood="conjugate", prior=BetaPrimePrior(1.0, 2.0)),
    dict(likelihood="conjugate", prior=BetaPrimePrior(0.0, 3.0)),  # improper: LLN, alpha = 2
    dict(likelihood="exact", prior=GammaPrior(2.0, 1.0), rate_grid=(1e-4, 1e3, 300)),
    dict(likelihood="exact", prior=LogNormalPrior(0.0, 1.5)),
]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: f"{s['likelihood']}-{s['prior']!r}")
@pytest.mark.parametrize("shape", [(40,), (4, 40)])
def test_streaming_rate_equals_batch_path_after_every_update(settings, shape):
    h = _history(shape, seed=3)
    path = posterior_mean_path(h, **settings)
    assert path.shape == h.shape
    n_pages = None if len(shape) == 1 else shape[0]
    est = BayesianEstimator(crawl_rate=h.crawl_rate, n_pages=n_pages, **settings)
    for j in range(h.n_crawls):
        assert est.update(h.changed[..., j], interval=h.intervals[..., j]) is None
        rate = est.rate
        assert isinstance(rate, float) if n_pages is None else rate.shape == (n_pages,)
        assert_allclose(rate, path[..., j], rtol=1e-12, atol=0)
    assert est.n_crawls_ == h.n_crawls


@pytest.mark.parametrize("alpha", [0.25, 1.0, 2.0, 7.5])
@pytest.mark.parametrize("shape", [(60,), (4, 60)])
def test_lln_equals_posterior_mean_under_betaprime_0_1_plus_alpha(alpha, shape):
    # x_k = p Î_k/(k + α − Î_k) = p(a + Î_k)/(b + k − Î_k − 1) with a = 0, b = 1 + α,
    # at every k, including prefixes with no change (both 0) and with only changes
    h = _history(shape, seed=5)
    lln = estimate_path(h, "lln", alpha=alpha)
    bayes = posterior_mean_path(h, prior=BetaPrimePrior(0.0, 1.0 + alpha))
    assert_allclose(bayes, lln, rtol=1e-12, atol=1e-12)
    # and the streaming forms agree update by update
    n_pages = None if len(shape) == 1 else shape[0]
    a = LLNEstimator(crawl_rate=h.crawl_rate, alpha=alpha, n_pages=n_pages)
    b = BayesianEstimator(prior=BetaPrimePrior(0.0, 1.0 + alpha), crawl_rate=h.crawl_rate, n_pages=n_pages)
    for j in range(h.n_crawls):
        a.update(h.changed[..., j])
        b.update(h.changed[..., j])
        assert_allclose(b.rate, a.rate, rtol=1e-12, atol=1e-12)


def test_lln_identity_holds_for_the_posterior_draws_too():
    h = simulate_history(2.0, 1.0, 50, rng=8)
    idata = posterior(h, prior=BetaPrimePrior(0.0, 2.0), method="conjugate", draws=20000, chains=1, rng=2)
    d = idata.posterior["change_rate"].values.ravel()
    lln = estimate_path(h, "lln", alpha=1.0)[-1]
    assert abs(d.mean() - lln) < 3 * d.std(ddof=1) / np.sqrt(d.size)


def test_conjugate_state_is_two_counts_and_the_prior_mean_comes_first():
    est = BayesianEstimator(prior=BetaPrimePrior(2.0, 5.0), crawl_rate=3.0)
    assert est.rate == pytest.approx(3.0 * 2.0 / 4.0)  # prior mean p a/(b − 1) before any crawl
    for c in (1, 0, 1):
        est.update(c)
    assert est.n_crawls_ == 3 and est.n_changed_ == 2.0
    assert est.rate == pytest.approx(3.0 * 4.0 / (5.0 + 1.0 - 1.0))
    lo, hi = est.credible_interval(0.9)
    ref = stats.betaprime(4.0, 6.0, scale=3.0).ppf([0.05, 0.95])
    assert_allclose([lo, hi], ref, rtol=1e-12)


def test_exact_streaming_matches_the_hand_derived_gamma_posterior():
    # Gamma(2, 1) prior; I = (1, 0), τ = (0.5, 1): π ∝ Δ e^{−2Δ} − Δ e^{−2.5Δ},
    # mean = (2/8 − 2/15.625)/(1/4 − 1/6.25) = 0.122/0.09
    est = BayesianEstimator(prior=GammaPrior(2.0, 1.0), likelihood="exact", rate_grid=(1e-6, 1e3, 2000))
    est.update(1, 0.5)
    est.update(0, 1.0)
    assert est.rate == pytest.approx(0.122 / 0.09, rel=1e-9)
    lo, hi = est.credible_interval(0.5)
    cdf = lambda x: (stats.gamma(2, scale=1 / 2).cdf(x) / 4 - stats.gamma(2, scale=1 / 2.5).cdf(x) / 6.25) / 0.09
    assert cdf(lo) == pytest.approx(0.25, abs=1e-4) and cdf(hi) == pytest.approx(0.75, abs=1e-4)


@pytest.mark.parametrize("likelihood", ["conjugate", "exact"])
def test_merge_equals_one_estimator_over_all_crawls(likelihood):
    h = _history((3, 30), seed=6)
    kw = dict(likelihood=likelihood, crawl_rate=h.crawl_rate, n_pages=3,
              prior=BetaPrimePrior(1.0, 2.0) if likelihood == "conjugate" else GammaPrior(1.0, 1.0))
    a, b, whole = (BayesianEstimator(**kw) for _ in range(3))
    for j in range(30):
        (a if j < 11 else b).update(h.changed[:, j], h.intervals[:, j])
        whole.update(h.changed[:, j], h.intervals[:, j])
    merged = a.merge(b)
    assert merged.n_crawls_ == 30 and a.n_crawls_ == 11
    assert_allclose(merged.rate, whole.rate, rtol=1e-10)
    with pytest.raises(ValueError, match="same likelihood, prior, grid and n_pages"):
        a.merge(BayesianEstimator(**{**kw, "n_pages": None, "crawl_rate": 1.0}))
    with pytest.raises(TypeError, match="`other` must be a BayesianEstimator"):
        a.merge(LLNEstimator(crawl_rate=1.0))


def test_improper_posterior_has_rate_zero_but_no_credible_interval():
    est = BayesianEstimator(prior=BetaPrimePrior(0.0, 2.0), crawl_rate=1.0, n_pages=2)
    est.update(np.array([1, 0]))
    assert_allclose(est.rate, [1.0 / (1 + 1 - 1), 0.0])  # the LLN, α = 1
    with pytest.raises(ValueError, match="posterior of page 1 is improper"):
        est.credible_interval()


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(likelihood="mcmc", crawl_rate=1.0), ValueError, "`likelihood` must be one of"),
        (dict(prior="beta", crawl_rate=1.0), TypeError, "`prior` must be a GammaPrior"),
        (dict(prior=GammaPrior(1.0, 1.0), crawl_rate=1.0), ValueError, "must be a BetaPrimePrior for likelihood 'conjugate'"),
        (dict(), ValueError, "likelihood 'conjugate' needs `crawl_rate`"),
        (dict(crawl_rate=0.0), ValueError, "`crawl_rate` must be > 0"),
        (dict(likelihood="exact", prior=BetaPrimePrior(0.0, 2.0), crawl_rate=1.0), ValueError, "needs a proper prior"),
        (dict(likelihood="exact", prior=BetaPrimePrior(1.0, 2.0)), ValueError, "prior on Δ/p: pass `crawl_rate`"),
        (dict(likelihood="exact", prior=GammaPrior(1, 1), rate_grid=(1.0, 0.5, 100)), ValueError, "needs low < high"),
        (dict(likelihood="exact", prior=GammaPrior(1, 1), rate_grid=(0.0, 1.0, 100)), ValueError, "`rate_grid` must be > 0"),
        (dict(likelihood="exact", prior=GammaPrior(1, 1), rate_grid=[1e-3, 1.0, 100]), TypeError, "tuple"),
        (dict(likelihood="exact", prior=GammaPrior(1, 1), rate_grid=(1e-3, 1.0, 4)), ValueError, "size` must be >= 16"),
        (dict(crawl_rate=np.ones(3), n_pages=2), ValueError, r"shape \(n_pages,\) = \(2,\)"),
        (dict(crawl_rate=1.0, n_pages=0), ValueError, "`n_pages` must be >= 1"),
    ],
)
def test_bad_constructor_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        BayesianEstimator(**kwargs)


def test_bad_update_input():
    est = BayesianEstimator(crawl_rate=1.0, n_pages=2)
    with pytest.raises(ValueError, match=r"`changed` must be 0 or 1; got 2.0 at index 1"):
        est.update([1, 2])
    with pytest.raises(ValueError, match=r"`changed` must have shape \(2,\)"):
        est.update([1, 0, 1])
    with pytest.raises(TypeError, match="`changed` must be numeric"):
        est.update(["a", "b"])
    exact = BayesianEstimator(prior=GammaPrior(1.0, 1.0), likelihood="exact")
    with pytest.raises(ValueError, match="needs the crawl `interval`"):
        exact.update(1)
    with pytest.raises(ValueError, match=r"`interval` must be finite and > 0; got -1.0"):
        exact.update(1, -1.0)
    with pytest.raises(ValueError, match=r"`level` must be in \(0, 1\)"):
        est.credible_interval(1.0)
    assert est.n_crawls_ == 0 and exact.n_crawls_ == 0  # nothing was counted


def test_posterior_mean_path_bad_input():
    with pytest.raises(TypeError, match="`history` must be a CrawlHistory"):
        posterior_mean_path([1, 0])
    with pytest.raises(ValueError, match="needs the crawl intervals"):
        posterior_mean_path(CrawlHistory([1, 0]), prior=GammaPrior(1, 1), likelihood="exact")
    with pytest.raises(ValueError, match="needs `crawl_rate`"):
        posterior_mean_path(CrawlHistory([1, 0], [1.0, 1.0]))
