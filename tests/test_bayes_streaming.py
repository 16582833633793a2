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
    StatisticalWarning,
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
    dict(likelihood="exact", prior=GammaPrior(2.0, 1.0)),
    dict(likelihood="exact", prior=LogNormalPrior(0.0, 1.5)),
    dict(likelihood="exact", prior=BetaPrimePrior(1.0, 0.5)),  # infinite mean until a crawl sees no change
    dict(likelihood="exact", prior=LogNormalPrior(0.0, 1.5), rate_grid=(1e-5, 1e5, 400)),
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
    est = BayesianEstimator(prior=GammaPrior(2.0, 1.0), likelihood="exact")
    assert est.rate == 2.0  # the prior mean before any crawl
    est.update(1, 0.5)
    est.update(0, 1.0)
    assert est.rate == pytest.approx(0.122 / 0.09, rel=1e-10)
    lo, hi = est.credible_interval(0.5)
    cdf = lambda x: (stats.gamma(2, scale=1 / 2).cdf(x) / 4 - stats.gamma(2, scale=1 / 2.5).cdf(x) / 6.25) / 0.09
    assert cdf(lo) == pytest.approx(0.25, abs=1e-4) and cdf(hi) == pytest.approx(0.75, abs=1e-4)


@pytest.mark.parametrize("likelihood", ["conjugate", "exact"])
def test_merge_equals_one_estimator_over_all_crawls(likelihood):
    h = _history((3, 30), seed=6)
    kw = dict(
        likelihood=likelihood,
        crawl_rate=h.crawl_rate,
        n_pages=3,
        prior=BetaPrimePrior(1.0, 2.0) if likelihood == "conjugate" else GammaPrior(1.0, 1.0),
    )
    a, b, whole = (BayesianEstimator(**kw) for _ in range(3))
    for j in range(30):
        (a if j < 11 else b).update(h.changed[:, j], h.intervals[:, j])
        whole.update(h.changed[:, j], h.intervals[:, j])
    merged = a.merge(b)
    assert merged.n_crawls_ == 30 and a.n_crawls_ == 11
    assert_allclose(merged.rate, whole.rate, rtol=1e-10)
    lo, hi = merged.credible_interval(0.8)
    lo_w, hi_w = whole.credible_interval(0.8)
    assert_allclose([lo, hi], [lo_w, hi_w], rtol=1e-8)
    with pytest.raises(ValueError, match="`n_pages` differs: 3 and None"):
        a.merge(BayesianEstimator(**{**kw, "n_pages": None, "crawl_rate": 1.0}))
    with pytest.raises(TypeError, match="`other` must be a BayesianEstimator"):
        a.merge(LLNEstimator(crawl_rate=1.0))


@pytest.mark.parametrize(
    ("first", "second", "name"),
    [
        (dict(crawl_rate=1.0), dict(crawl_rate=2.0), "crawl_rate"),
        (dict(crawl_rate=[1.0, 2.0], n_pages=2), dict(crawl_rate=[1.0, 3.0], n_pages=2), "crawl_rate"),
        (dict(crawl_rate=1.0), dict(crawl_rate=1.0, prior=BetaPrimePrior(1.0, 3.0)), "prior"),
        (dict(crawl_rate=1.0), dict(crawl_rate=1.0, likelihood="exact"), "likelihood"),
        (
            dict(likelihood="exact", prior=GammaPrior(1.0, 1.0)),
            dict(likelihood="exact", prior=GammaPrior(1.0, 1.0), crawl_rate=2.0),
            "crawl_rate",
        ),
        (
            dict(likelihood="exact", prior=GammaPrior(1.0, 1.0)),
            dict(likelihood="exact", prior=GammaPrior(1.0, 1.0), rate_grid=(1e-3, 1e3, 100)),
            "rate_grid",
        ),
        (
            dict(likelihood="exact", prior=GammaPrior(1.0, 1.0), rate_grid=(1e-3, 1e3, 100)),
            dict(likelihood="exact", prior=GammaPrior(1.0, 1.0), rate_grid=(1e-3, 1e3, 101)),
            "rate_grid",
        ),
    ],
)
def test_merge_refuses_estimators_with_different_settings(first, second, name):
    # counts seen at crawl rate p = 1 and p = 2 estimate different things: pooling them
    # silently (keeping the first p) gave 1.5 for 1.0 and 2.0
    with pytest.raises(ValueError, match=f"`{name}` differs"):
        BayesianEstimator(**first).merge(BayesianEstimator(**second))


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
        (
            dict(prior=GammaPrior(1.0, 1.0), crawl_rate=1.0),
            ValueError,
            "must be a BetaPrimePrior for likelihood 'conjugate'",
        ),
        (dict(), ValueError, "likelihood 'conjugate' needs `crawl_rate`"),
        (dict(crawl_rate=0.0), ValueError, "`crawl_rate` must be > 0"),
        (dict(likelihood="exact", prior=BetaPrimePrior(0.0, 2.0), crawl_rate=1.0), ValueError, "needs a proper prior"),
        (dict(likelihood="exact", prior=BetaPrimePrior(1.0, 2.0)), ValueError, "prior on Δ/p: pass `crawl_rate`"),
        (dict(likelihood="exact", prior=GammaPrior(1, 1), rate_grid=(1.0, 0.5, 100)), ValueError, "needs low < high"),
        (
            dict(likelihood="exact", prior=GammaPrior(1, 1), rate_grid=(0.0, 1.0, 100)),
            ValueError,
            "`rate_grid` must be > 0",
        ),
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
    with pytest.raises(TypeError, match="`level` must be a real number in \\(0, 1\\); got str"):
        est.credible_interval("0.9")
    assert est.n_crawls_ == 0 and exact.n_crawls_ == 0  # nothing was counted


def test_posterior_mean_path_bad_input():
    with pytest.raises(TypeError, match="`history` must be a CrawlHistory"):
        posterior_mean_path([1, 0])
    with pytest.raises(ValueError, match="needs the crawl intervals"):
        posterior_mean_path(CrawlHistory([1, 0]), prior=GammaPrior(1, 1), likelihood="exact")
    with pytest.raises(ValueError, match="needs `crawl_rate`"):
        posterior_mean_path(CrawlHistory([1, 0], [1.0, 1.0]))


# --------------------------------------------------------------------------- exact state at any Δ
def _quad_posterior(prior, changed, tau, p=None):
    """Posterior mean and CDF of Δ by adaptive quadrature in u = log Δ (scipy), independent
    of the package's grids: log L from `log_likelihood`, the prior from its scipy density."""
    import warnings

    from scipy import integrate

    from changerate_bayes.bayes import log_likelihood

    dist = prior.distribution(p)

    def f(u):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return log_likelihood(np.exp(u), changed, tau) + dist.logpdf(np.exp(u)) + u

    scan = np.linspace(-700.0, 700.0, 1401)
    vals = f(scan)
    u0 = scan[int(np.nanargmax(vals))]
    u_star, width = u0, 1.0
    while width > 1e-13 * (1 + abs(u_star)):  # zoom in on the mode: 201-point scans, each 50 times narrower
        local = np.linspace(u_star - width, u_star + width, 201)
        u_star = local[int(np.nanargmax(f(local)))]
        width /= 50
    f_star = f(u_star)
    h = 1e-7 if getattr(prior, "sigma", 1.0) < 1e-3 else 1e-3
    sd = 1.0 / np.sqrt(-(f(u_star + h) - 2 * f_star + f(u_star - h)) / h**2)
    ends = []
    for side in (-1, 1):  # out to where the density is e^-50 of its peak (long tails of vague priors)
        edge = u_star + side * 10 * sd
        while f(edge) - f_star > -50:
            edge += side * 10 * sd
        ends.append(edge)
    lo, hi = ends
    kw = dict(points=[u_star + k * sd for k in (-3, -1, 0, 1, 3)], limit=2000, epsabs=0, epsrel=1e-12)
    z = integrate.quad(lambda u: np.exp(f(u) - f_star), lo, hi, **kw)[0]
    m = integrate.quad(lambda u: np.exp(f(u) - f_star + u - u_star), lo, hi, **kw)[0] * np.exp(u_star) / z

    def cdf(x):
        x = min(max(np.log(x), lo), hi)
        return integrate.quad(lambda u: np.exp(f(u) - f_star), lo, x, limit=2000, epsabs=0, epsrel=1e-12)[0] / z

    return m, cdf


EXTREME = {
    # the newcomer's cases; true means from high-resolution quadrature, rounded
    "tau 1e8, alternating, lognormal(0, 1)": (LogNormalPrior(0.0, 1.0), [1, 0] * 10, [1e8] * 20, None, 2.08e-8),
    "tau 1e8, alternating, gamma(2, 1)": (GammaPrior(2.0, 1.0), [1, 0] * 10, [1e8] * 20, None, 8.42e-9),
    "tau 1e-8, all changed": (LogNormalPrior(0.0, 1.0), [1] * 20, [1e-8] * 20, None, 3.09e7),
    "prior median e^50": (LogNormalPrior(50.0, 1.0), [1, 0], [1.0, 1.0], None, 46.2),
    "prior median e^-50": (LogNormalPrior(-50.0, 1.0), [1, 0], [1.0, 1.0], None, 8.7e-22),
    "prior median e^-50, no change": (LogNormalPrior(-50.0, 1.0), [0, 0], [1.0, 1.0], None, 3.2e-22),
    "prior sd 1e-6": (LogNormalPrior(0.0, 1e-6), [1, 0], [1.0, 1.0], None, 1.0),
    "vague gamma(0.01, 1)": (GammaPrior(0.01, 1.0), [1, 0], [1.0, 1.0], None, 0.415),
    "vague beta-prime(0.01, 0.01)": (BetaPrimePrior(0.01, 0.01), [1, 0], [1.0, 1.0], 1.0, 0.724),
    "beta-prime(1, 1e-4)": (BetaPrimePrior(1.0, 1e-4), [1, 0], [1.0, 1.0], 1.0, 1.13),
    "tau from 1e-6 to 1e6": (GammaPrior(2.0, 1.0), [1, 0, 1, 0, 1, 1], [1e-6, 1e6, 1e-2, 3.0, 1e3, 1e-4], None, 6.0e-6),
}


@pytest.mark.filterwarnings("error")  # no RuntimeWarning from log(0) and the like
@pytest.mark.parametrize("case", list(EXTREME))
def test_exact_streaming_matches_quadrature_wherever_the_posterior_is(case):
    from changerate_bayes.bayes._grid import fit_grid, posterior_mean
    from changerate_bayes.bayes._likelihood import ExactLikelihood

    prior, changed, tau, p, rounded = EXTREME[case]
    est = BayesianEstimator(prior=prior, likelihood="exact", crawl_rate=p)
    for c, t in zip(changed, tau):
        est.update(c, t)
    mean, cdf = _quad_posterior(prior, changed, tau, p)
    assert mean == pytest.approx(rounded, rel=5e-3)  # the value quoted for the case
    assert est.rate == pytest.approx(mean, rel=1e-8)
    lo, hi = est.credible_interval(0.9)
    assert 0 < lo < hi < np.inf
    assert cdf(lo) == pytest.approx(0.05, abs=1e-5) and cdf(hi) == pytest.approx(0.95, abs=1e-5)
    # the grid engine of posterior(method="grid") on the same data
    lik = ExactLikelihood(np.array([changed]), np.array([tau], dtype=float))
    coef = prior.coefficients(p).as_arrays(1)
    assert posterior_mean(lik, coef, size=128)[0] == pytest.approx(est.rate, rel=1e-8)
    assert_allclose(fit_grid(lik, coef, size=128).quantile([0.05, 0.95])[0], [lo, hi], rtol=1e-4)
    # and the batch path, crawl by crawl
    path = posterior_mean_path(CrawlHistory(changed, tau, crawl_rate=p), prior=prior, likelihood="exact")
    assert path[-1] == est.rate


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    ("prior", "p", "mean"),
    [
        (GammaPrior(0.01, 1.0), None, 0.01),
        (BetaPrimePrior(0.01, 0.01), 1.0, np.inf),  # b <= 1: no prior mean
        (BetaPrimePrior(1.0, 1e-4), 1.0, np.inf),
        (LogNormalPrior(-50.0, 1.0), None, np.exp(-49.5)),
    ],
    ids=repr,
)
def test_exact_streaming_before_any_crawl_is_the_prior_in_closed_form(prior, p, mean):
    est = BayesianEstimator(prior=prior, likelihood="exact", crawl_rate=p)
    assert est.rate == pytest.approx(mean, rel=1e-12)
    lo, hi = est.credible_interval(0.9)
    with np.errstate(all="ignore"):
        ref = prior.distribution(p).ppf([0.05, 0.95])  # scipy: inf beyond the float range
    assert_allclose([lo, hi], ref, rtol=1e-12)


@pytest.mark.filterwarnings("error")
def test_exact_streaming_mean_is_infinite_exactly_while_the_posterior_mean_does_not_exist():
    # BetaPrime(1, b) on Δ/p: the right tail of Δ decays like Δ^{-1-b} until a crawl sees
    # no change (the likelihood then adds e^{-ΔT0}): the mean exists iff b > 1 or T0 > 0
    heavy = BayesianEstimator(prior=BetaPrimePrior(1.0, 0.5), likelihood="exact", crawl_rate=1.0)
    light = BayesianEstimator(prior=BetaPrimePrior(1.0, 2.5), likelihood="exact", crawl_rate=1.0)
    for est in (heavy, light):
        est.update(1, 0.7)
        est.update(1, 2.0)
    assert heavy.rate == np.inf and np.isfinite(light.rate)
    mean, _ = _quad_posterior(BetaPrimePrior(1.0, 2.5), [1, 1], [0.7, 2.0], 1.0)
    assert light.rate == pytest.approx(mean, rel=1e-8)
    heavy.update(0, 0.3)
    mean, _ = _quad_posterior(BetaPrimePrior(1.0, 0.5), [1, 1, 0], [0.7, 2.0, 0.3], 1.0)
    assert heavy.rate == pytest.approx(mean, rel=1e-8)


def test_fixed_rate_grid_warns_when_the_posterior_leaves_it():
    grid = (1e-3, 1e3, 200)
    inside = BayesianEstimator(prior=GammaPrior(2.0, 1.0), likelihood="exact", rate_grid=grid)
    outside = BayesianEstimator(prior=GammaPrior(2.0, 1.0), likelihood="exact", rate_grid=grid)
    for c in [1, 0] * 10:
        inside.update(c, 1.0)
        outside.update(c, 1e8)  # posterior near 1e-8, far below the grid
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact = BayesianEstimator(prior=GammaPrior(2.0, 1.0), likelihood="exact")
        for c in [1, 0] * 10:
            exact.update(c, 1.0)
        assert inside.rate == pytest.approx(exact.rate, rel=1e-6)
    with pytest.warns(
        StatisticalWarning,
        match=r"posterior of page 0 has more than 1e-06 of its mass at an end of "
        r"the fixed `rate_grid` \[0.001, 1e\+03\]",
    ):
        outside.rate  # noqa: B018 (the property raises)
    narrow = BayesianEstimator(prior=LogNormalPrior(0.0, 1e-6), likelihood="exact", rate_grid=grid)
    with pytest.warns(StatisticalWarning, match="narrower than 3 node spacings"):
        narrow.credible_interval()


def test_exact_streaming_prior_values_per_page_crawl_rate():
    p = np.array([1.0, 2.0, 4.0])
    est = BayesianEstimator(prior=BetaPrimePrior(2.0, 3.0), likelihood="exact", crawl_rate=p, n_pages=3)
    assert_allclose(est.rate, p * 2.0 / 2.0, rtol=1e-14)  # p a/(b − 1)
    lo, hi = est.credible_interval(0.5)
    assert_allclose(lo, stats.betaprime(2.0, 3.0, scale=p).ppf(0.25), rtol=1e-12)
    assert_allclose(hi, stats.betaprime(2.0, 3.0, scale=p).ppf(0.75), rtol=1e-12)
