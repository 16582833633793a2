"""posterior(method="grid" | "conjugate") on ragged histories (pages of any length)."""

import numpy as np
import pytest
from _helpers import gamma_moments
from scipy import stats
from test_bayes_summary import PAGES, ragged

from changerate_bayes import BetaPrimePrior, CrawlHistory, GammaPrior, posterior
from changerate_bayes.bayes._likelihood import ExactLikelihood
from changerate_bayes.bayes._sufficient import exact_likelihood, take_pages

# the tests that compile the grid posterior's and the summary's kernels run in one pytest-xdist
# worker, so that a fresh checkout compiles them once, not once in every worker at the same time
pytestmark = pytest.mark.xdist_group("grid_kernels")


def test_sufficient_statistics_equal_the_rectangular_likelihood():
    rng = np.random.default_rng(1)
    changed = rng.integers(0, 2, (30, 7))
    tau = rng.exponential(1.0, (30, 7))
    ref = ExactLikelihood(changed, tau)
    got = exact_likelihood(CrawlHistory(changed, tau))
    np.testing.assert_array_equal(got._page, ref._page)
    np.testing.assert_array_equal(got._tau, ref._tau)
    np.testing.assert_array_equal(got.n_changed, ref.n_changed)
    np.testing.assert_allclose(got.t0, ref.t0, rtol=1e-15)
    np.testing.assert_allclose(got.start, ref.start, rtol=1e-14)
    idx = np.array([4, 4, 0, 29])
    sub = take_pages(got, idx)
    np.testing.assert_allclose(sub.value(np.zeros(4)), got.value(np.zeros(30))[idx], rtol=1e-15)


def test_grid_draws_of_ragged_pages_follow_the_exact_posterior():
    a, b = 2.0, 1.0
    idata = posterior(ragged(PAGES), prior=GammaPrior(a, b), method="grid", draws=1000, chains=3, rng=7)
    draws = idata.posterior["change_rate"].values
    assert draws.shape == (3, 1000, len(PAGES))
    for i, (changed, tau) in enumerate(PAGES):
        cdf = gamma_moments(a, b, changed, tau)[2]
        pit = np.array([cdf(x) for x in draws[..., i].ravel()])
        assert stats.kstest(pit, "uniform").pvalue > 1e-3


def test_conjugate_draws_of_ragged_pages():
    p = np.array([0.5, 2.0, 1.0, 3.0, 0.25])
    prior = BetaPrimePrior(1.5, 4.5)
    idata = posterior(ragged(PAGES, crawl_rate=p), prior=prior, method="conjugate", draws=2000, chains=2, rng=2)
    draws = idata.posterior["change_rate"].values
    for i, (changed, _) in enumerate(PAGES):
        dist = stats.betaprime(1.5 + sum(changed), 4.5 + len(changed) - sum(changed), scale=p[i])
        assert stats.kstest(draws[..., i].ravel(), dist.cdf).pvalue > 1e-3


def test_ragged_data_groups_are_padded_with_a_mask():
    h = ragged(PAGES, crawl_rate=1.0)
    idata = posterior(h, method="grid", draws=10, chains=1, rng=0)
    changed, tau, mask = h.padded()
    np.testing.assert_array_equal(idata.observed_data["changed"].values, changed)
    np.testing.assert_array_equal(idata.constant_data["intervals"].values, tau)
    np.testing.assert_array_equal(idata.constant_data["observed"].values, mask)


def test_ragged_improper_posterior_names_the_page():
    h = CrawlHistory.from_segments([1, 0, 0, 0], [1.0, 1.0, 1.0, 1.0], lengths=[1, 3], crawl_rate=1.0)
    with pytest.raises(ValueError, match="improper.*of page 1"):
        posterior(h, prior=BetaPrimePrior(0.0, 2.0), method="grid", draws=10, chains=1)
    with pytest.raises(ValueError, match="needs the crawl intervals"):
        posterior(CrawlHistory.from_segments([1, 0, 0], lengths=[1, 2], crawl_rate=1.0), method="grid")
