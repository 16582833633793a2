"""posterior_summary: exact moments and credible intervals, rectangular and ragged."""

import math

import numpy as np
import pytest
from _helpers import gamma_moments
from scipy import stats

from changerate_bayes import BetaPrimePrior, CrawlHistory, GammaPrior, LogNormalPrior, posterior_summary
from changerate_bayes.bayes import PosteriorSummary

# the tests that compile the grid posterior's and the summary's kernels run in one pytest-xdist
# worker, so that a fresh checkout compiles them once, not once in every worker at the same time
pytestmark = pytest.mark.xdist_group("grid_kernels")


PAGES = [
    ([1, 0, 1, 1, 0, 0, 1, 0], [0.4, 0.9, 1.7, 0.2, 0.6, 1.1, 2.5, 0.3]),
    ([1, 1, 1], [0.3, 1.2, 0.5]),
    ([0, 0], [0.3, 1.2]),
    ([1], [0.7]),
    ([0, 1, 0, 0, 1], [2.0, 0.1, 0.5, 0.5, 3.0]),
]


def ragged(pages, crawl_rate=None, page_ids=None):
    return CrawlHistory.from_segments(
        np.concatenate([c for c, _ in pages]),
        np.concatenate([t for _, t in pages]),
        lengths=[len(c) for c, _ in pages],
        crawl_rate=crawl_rate,
        page_ids=page_ids,
    )


@pytest.mark.parametrize(("a", "b"), [(2.0, 1.0), (0.5, 3.0)])
def test_grid_summary_of_a_ragged_history_matches_the_exact_gamma_posterior(a, b):
    s = posterior_summary(ragged(PAGES), prior=GammaPrior(a, b), method="grid", level=0.8)
    assert isinstance(s, PosteriorSummary) and s.n_pages == len(PAGES) and s.level == 0.8
    for i, (changed, tau) in enumerate(PAGES):
        mean, sd, cdf = gamma_moments(a, b, changed, tau)
        assert s.mean[i] == pytest.approx(mean, rel=1e-8)
        assert s.sd[i] == pytest.approx(sd, rel=1e-7)
        # quantiles invert the quadrature CDF, log-linear inside each of the 63 cells
        assert cdf(s.lower[i]) == pytest.approx(0.1, abs=5e-5)
        assert cdf(s.upper[i]) == pytest.approx(0.9, abs=5e-5)
    fine = posterior_summary(ragged(PAGES), prior=GammaPrior(a, b), method="grid", level=0.8, grid_size=512)
    for i, (changed, tau) in enumerate(PAGES):
        cdf = gamma_moments(a, b, changed, tau)[2]
        assert cdf(fine.lower[i]) == pytest.approx(0.1, abs=1e-6)
        assert cdf(fine.upper[i]) == pytest.approx(0.9, abs=1e-6)


def test_ragged_summary_equals_each_page_alone():
    prior = LogNormalPrior(0.0, 1.5)
    both = posterior_summary(ragged(PAGES, crawl_rate=np.arange(1.0, 6.0)), prior=prior)
    for i, (changed, tau) in enumerate(PAGES):
        one = posterior_summary(CrawlHistory(changed, tau, crawl_rate=float(i + 1)), prior=prior)
        for field in ("mean", "sd", "lower", "upper"):
            assert getattr(both, field)[i] == pytest.approx(getattr(one, field)[0], rel=1e-12)


def test_rectangular_and_ragged_layouts_agree():
    rng = np.random.default_rng(3)
    changed = rng.integers(0, 2, (40, 6))
    tau = rng.exponential(1.0, (40, 6)) + 0.01
    rect = posterior_summary(CrawlHistory(changed, tau, crawl_rate=1.5))
    flat = posterior_summary(CrawlHistory.from_segments(changed.ravel(), tau.ravel(), lengths=[6] * 40, crawl_rate=1.5))
    np.testing.assert_allclose(rect.mean, flat.mean, rtol=1e-12)
    np.testing.assert_allclose(rect.upper, flat.upper, rtol=1e-12)


def test_conjugate_summary_is_the_beta_prime_posterior():
    p = np.array([0.5, 2.0, 1.0, 3.0, 0.25])
    s = posterior_summary(ragged(PAGES, crawl_rate=p), prior=BetaPrimePrior(1.5, 3.5), method="conjugate", level=0.95)
    for i, (changed, _) in enumerate(PAGES):
        dist = stats.betaprime(1.5 + sum(changed), 3.5 + len(changed) - sum(changed), scale=p[i])
        assert s.mean[i] == pytest.approx(dist.mean(), rel=1e-12)
        assert s.sd[i] == pytest.approx(dist.std(), rel=1e-12)
        assert s.lower[i] == pytest.approx(dist.ppf(0.025), rel=1e-10)
        assert s.upper[i] == pytest.approx(dist.ppf(0.975), rel=1e-10)


def test_heavy_tails_give_infinite_moments():
    # BetaPrime(1, 2) prior, every crawl changed: the posterior tail is Δ^{-3} (the
    # likelihood tends to 1), so the mean is finite and the second moment diverges
    h = CrawlHistory([1, 1, 1], [0.5, 1.0, 2.0], crawl_rate=1.0)
    s = posterior_summary(h, prior=BetaPrimePrior(1.0, 2.0))
    assert np.isfinite(s.mean[0]) and s.sd[0] == np.inf and np.isfinite(s.upper[0])
    c = posterior_summary(h, prior=BetaPrimePrior(1.0, 2.0), method="conjugate")
    assert c.mean[0] == pytest.approx(4.0) and c.sd[0] == np.inf  # p (a + 3)/(b - 1)


def test_grid_summary_heavy_but_finite_variance_against_quadrature():
    # BetaPrime(1, 3.5), all changed: tail Δ^{-4.5}, so E[Δ²] converges slowly; the
    # moments come from their own grids, not from the density's truncated one
    changed, tau = [1, 1], [0.5, 2.0]
    h = CrawlHistory(changed, tau, crawl_rate=1.0)
    s = posterior_summary(h, prior=BetaPrimePrior(1.0, 3.5))
    dens = lambda d: np.prod(-np.expm1(-d * np.array(tau))) * stats.betaprime(1.0, 3.5).pdf(d)
    from scipy import integrate

    z = integrate.quad(dens, 0, np.inf, epsabs=0, epsrel=1e-12, limit=500)[0]
    m1 = integrate.quad(lambda d: d * dens(d), 0, np.inf, epsabs=0, epsrel=1e-12, limit=500)[0] / z
    m2 = integrate.quad(lambda d: d * d * dens(d), 0, np.inf, epsabs=0, epsrel=1e-12, limit=500)[0] / z
    assert s.mean[0] == pytest.approx(m1, rel=1e-7)
    assert s.sd[0] == pytest.approx(np.sqrt(m2 - m1 * m1), rel=1e-6)
    cdf = lambda x: integrate.quad(dens, 0, x, epsabs=0, epsrel=1e-12, limit=500)[0] / z
    assert cdf(s.upper[0]) == pytest.approx(0.95, abs=5e-5)


def test_tight_posterior_sd_without_cancellation():
    # 10^5 crawls: sd/mean ~ 1e-2.5, the variance from the grid's central moment
    rng = np.random.default_rng(0)
    tau = rng.exponential(1.0, 100_000)
    changed = (rng.random(tau.size) < -np.expm1(-0.7 * tau)).astype(int)
    s = posterior_summary(CrawlHistory(changed, tau), prior=GammaPrior(1.0, 1.0))
    # Laplace approximation in Δ: sd ≈ (−ℓ''(Δ̂))^{-1/2}, to relative O(1/sqrt(n)) ~ 1e-2
    d = s.mean[0]
    t1 = tau[changed == 1]
    e = np.exp(-d * t1)
    info = np.sum(t1**2 * e / (1 - e) ** 2)
    assert s.sd[0] == pytest.approx(info**-0.5, rel=2e-2)
    assert s.lower[0] < d < s.upper[0]


def test_page_ids_and_frame():
    s = posterior_summary(ragged(PAGES[:2], crawl_rate=1.0, page_ids=["a", "b"]))
    df = s.to_frame()
    assert df.columns.tolist() == ["page", "mean", "sd", "lower", "upper"]
    assert df["page"].tolist() == ["a", "b"]
    np.testing.assert_array_equal(df["mean"], s.mean)
    one = posterior_summary(CrawlHistory([1, 0], [1.0, 1.0], crawl_rate=1.0))
    assert one.mean.shape == (1,) and one.to_frame()["page"].tolist() == [0]


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        (dict(level=1.0), ValueError, r"`level` must be in \(0, 1\); got 1.0"),
        (dict(level="0.9"), TypeError, "`level` must be a real number"),
        (dict(method="nuts"), ValueError, "method"),
        (dict(method="conjugate", prior=GammaPrior(1.0, 1.0)), ValueError, "BetaPrimePrior"),
        (dict(prior=BetaPrimePrior(0.0, 2.0)), ValueError, "improper"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    h = ragged([([0, 0], [1.0, 1.0]), ([1], [1.0])], crawl_rate=1.0)
    with pytest.raises(exc, match=match):
        posterior_summary(h, **kwargs)


def test_missing_data_named():
    no_tau = CrawlHistory.from_segments([1, 0, 1], lengths=[1, 2], crawl_rate=1.0)
    with pytest.raises(ValueError, match="needs the crawl intervals"):
        posterior_summary(no_tau, method="grid")
    assert posterior_summary(no_tau, method="conjugate").n_pages == 2
    with pytest.raises(ValueError, match="needs a crawl_rate"):
        posterior_summary(
            CrawlHistory.from_segments([1, 0, 1], lengths=[1, 2]), method="conjugate", prior=BetaPrimePrior(1.0, 2.0)
        )
    with pytest.raises(TypeError, match="CrawlHistory"):
        posterior_summary([1, 0])


def test_grid_summary_refuses_a_mean_below_its_own_interval():
    # one change seen in an interval of 1e-100: the posterior ∝ x (1 + x)^-3 up to x ≈ 1e100
    # has a mean of about 2 ln(1e100) ≈ 460 that the grid cannot resolve; E[Δ] >= 0.95·q05
    # for any Δ >= 0, so a mean below that bound is refused rather than returned
    h = CrawlHistory(changed=np.array([1]), intervals=np.array([1e-100]), crawl_rate=1.0)
    with pytest.raises(ValueError, match="page 0: the posterior spreads over more orders of magnitude"):
        posterior_summary(h)
    ok = posterior_summary(CrawlHistory(changed=np.array([1]), intervals=np.array([1e-30]), crawl_rate=1.0))
    assert ok.mean[0] >= 0.95 * ok.lower[0]


def test_grid_summary_at_the_smallest_intervals():
    """Intervals of 5e-324 (the smallest float64). Under GammaPrior(1, 1) the likelihood
    of [1, 1, 0] tends to (Δτ)² (e^{−Δτ} → 1), so the posterior is Gamma(3, 1): mean 3,
    sd √3. Under the heavy-tailed BetaPrimePrior(1, 2) the posterior ∝ Δ²(1 + Δ)^{−3}
    runs up to Δ ≈ 1/τ ≈ 2e323, beyond float64: a ValueError, not a NaN sd."""
    h = CrawlHistory([1, 1, 0], intervals=[5e-324] * 3, crawl_rate=1.0)
    s = posterior_summary(h, prior=GammaPrior(1.0, 1.0))
    assert s.mean[0] == pytest.approx(3.0, rel=1e-8)
    assert s.sd[0] == pytest.approx(math.sqrt(3.0), rel=1e-6)
    with pytest.raises(ValueError, match=r"page 0: the posterior reaches rates beyond the float64 range .* 4.94e-324"):
        posterior_summary(h, prior=BetaPrimePrior(1.0, 2.0))
