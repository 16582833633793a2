"""The grid posterior against hand-derived exact posteriors, and its edge cases."""

import math

import numpy as np
import pytest
from _helpers import gamma_moments
from scipy import stats

from changerate_bayes import BetaPrimePrior, CrawlHistory, GammaPrior, LogNormalPrior, posterior, simulate_history
from changerate_bayes.bayes._grid import fit_grid, grid_draws
from changerate_bayes.bayes._likelihood import ExactLikelihood, MarginalLikelihood

# the tests that compile the grid posterior's and the summary's kernels run in one pytest-xdist
# worker, so that a fresh checkout compiles them once, not once in every worker at the same time
pytestmark = pytest.mark.xdist_group("grid_kernels")


EDGE_CASES = {
    "all changed": ([1, 1, 1, 1], [0.3, 1.2, 0.5, 2.0]),
    "none changed": ([0, 0, 0, 0, 0], [0.3, 1.2, 0.5, 2.0, 0.7]),
    "k = 1, changed": ([1], [0.7]),
    "k = 1, unchanged": ([0], [0.7]),
    "tau from 1e-6 to 1e6": ([1, 0, 1, 0, 1, 1], [1e-6, 1e6, 1e-2, 3.0, 1e3, 1e-4]),
    "typical": ([1, 0, 1, 1, 0, 0, 1, 0], [0.4, 0.9, 1.7, 0.2, 0.6, 1.1, 2.5, 0.3]),
}


@pytest.mark.parametrize("case", [c for c in EDGE_CASES if c != "tau from 1e-6 to 1e6"])
@pytest.mark.parametrize(("a", "b"), [(2.0, 1.0), (0.5, 3.0)])
def test_grid_quadrature_matches_the_exact_gamma_posterior(case, a, b):
    changed, tau = EDGE_CASES[case]
    lik = ExactLikelihood(np.array([changed]), np.array([tau], dtype=float))
    grid = fit_grid(lik, GammaPrior(a, b).coefficients().as_arrays(1))
    mean, _, cdf = gamma_moments(a, b, changed, tau)
    assert grid.mean()[0] == pytest.approx(mean, rel=1e-8)
    probs = np.array([0.01, 0.1, 0.5, 0.9, 0.99])
    q = grid.quantile(probs)[0]
    assert np.isfinite(q).all() and (q > 0).all()
    np.testing.assert_allclose([cdf(x) for x in q], probs, atol=2e-4)


def test_none_changed_is_exactly_gamma_with_the_exposure_added():
    # likelihood e^{−ΔT}: Gamma(a, b) prior -> Gamma(a, b + T) posterior
    tau = np.array([[0.3, 1.2, 0.5, 2.0, 0.7]])
    grid = fit_grid(
        ExactLikelihood(np.zeros_like(tau, dtype=int), tau), GammaPrior(0.5, 3.0).coefficients().as_arrays(1)
    )
    exact = stats.gamma(0.5, scale=1 / (3.0 + tau.sum()))
    assert grid.mean()[0] == pytest.approx(exact.mean(), rel=1e-8)  # geometric convergence: ~1e-9 at 64 nodes
    np.testing.assert_allclose(exact.cdf(grid.quantile([0.05, 0.5, 0.95])[0]), [0.05, 0.5, 0.95], atol=1e-4)


def test_grid_engine_matches_the_conjugate_closed_form_on_the_marginal_likelihood():
    # Poisson crawling with τ marginalised: the grid of the Bernoulli(Δ/(Δ+p)) likelihood
    # under BetaPrime(a, b) must reproduce BetaPrime(a + S, b + k − S) (scale p)
    changed = np.array([[1, 0, 1, 1, 0, 1], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1]])
    p = np.array([2.0, 0.5, 3.0])
    prior = BetaPrimePrior(1.5, 3.0)
    grid = fit_grid(MarginalLikelihood(changed, p), prior.coefficients(p).as_arrays(3))
    s = changed.sum(axis=1)
    exact = stats.betaprime(1.5 + s, 3.0 + 6 - s, scale=p)
    np.testing.assert_allclose(grid.mean(), exact.mean(), rtol=1e-9)
    probs = np.array([0.05, 0.5, 0.95])
    q = grid.quantile(probs)
    np.testing.assert_allclose(exact.cdf(q.T).T, np.broadcast_to(probs, (3, 3)), atol=1e-4)


@pytest.mark.parametrize(
    "prior", [GammaPrior(2.0, 1.0), GammaPrior(0.5, 3.0), LogNormalPrior(0.3, 0.8), BetaPrimePrior(1.0, 2.0)], ids=repr
)
def test_grid_quadrature_matches_scipy_quad_when_tau_spans_1e_minus_6_to_1e6(prior):
    from scipy import integrate

    changed, tau = EDGE_CASES["tau from 1e-6 to 1e6"]
    p = 2.0
    grid = fit_grid(ExactLikelihood(np.array([changed]), np.array([tau])), prior.coefficients(p).as_arrays(1))
    dist = prior.distribution(p)

    def dens(u, power):
        from changerate_bayes.bayes import log_likelihood

        return np.exp(power * u + log_likelihood(np.exp(u), changed, tau) + dist.logpdf(np.exp(u)) + u)

    pts = [-14.0, -12.0, -10.0]
    z = integrate.quad(dens, -40, 5, args=(0,), points=pts, limit=400, epsabs=0, epsrel=1e-12)[0]
    m = integrate.quad(dens, -40, 5, args=(1,), points=pts, limit=400, epsabs=0, epsrel=1e-12)[0]
    assert grid.mean()[0] == pytest.approx(m / z, rel=1e-8)


def test_public_grid_draws_agree_with_the_exact_mean_within_3_mcse():
    changed, tau = EDGE_CASES["typical"]
    h = CrawlHistory(changed, tau)
    idata = posterior(h, prior=GammaPrior(2.0, 1.0), method="grid", draws=2000, chains=2, rng=7)
    d = idata.posterior["change_rate"].values.ravel()
    mean = gamma_moments(2.0, 1.0, changed, tau)[0]
    assert abs(d.mean() - mean) < 3 * d.std(ddof=1) / np.sqrt(d.size)


@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_edge_cases_give_finite_proper_posteriors_under_a_proper_prior(case):
    changed, tau = EDGE_CASES[case]
    for prior, method in (
        (GammaPrior(2.0, 1.0), "grid"),
        (LogNormalPrior(0.0, 2.0), "grid"),
        (BetaPrimePrior(1.0, 2.0), "grid"),
        (BetaPrimePrior(1.0, 2.0), "conjugate"),
    ):
        h = CrawlHistory(changed, tau, crawl_rate=1.0)
        d = posterior(h, prior=prior, method=method, draws=300, chains=1, rng=1).posterior["change_rate"].values
        assert np.isfinite(d).all() and (d > 0).all(), (prior, method)


@pytest.mark.parametrize("method", ["grid", "conjugate", "nuts"])
def test_improper_prior_with_no_change_seen_is_refused(method):
    h = CrawlHistory([0, 0, 0], [1e-6, 1.0, 1e6], crawl_rate=1.0)
    with pytest.raises(ValueError, match=r"posterior is improper: prior BetaPrimePrior\(a=0.0, b=2.0\)"):
        posterior(h, prior=BetaPrimePrior(0.0, 2.0), method=method)
    pages = CrawlHistory([[1, 0, 1], [0, 0, 0]], [[1e-6, 1.0, 1e6]] * 2, crawl_rate=1.0)
    with pytest.raises(ValueError, match="no crawl of page 1 saw a change"):
        posterior(pages, prior=BetaPrimePrior(0.0, 2.0), method=method)


@pytest.mark.parametrize("case", ["all changed", "tau from 1e-6 to 1e6", "k = 1, changed"])
def test_improper_prior_is_accepted_once_a_change_was_seen(case):
    changed, tau = EDGE_CASES[case]
    h = CrawlHistory(changed, tau, crawl_rate=1.0)
    for method in ("grid", "conjugate"):
        d = posterior(h, prior=BetaPrimePrior(0.0, 2.0), method=method, draws=200, chains=1, rng=1)
        assert np.isfinite(d.posterior["change_rate"].values).all()


def test_pages_are_fitted_independently_and_in_blocks(monkeypatch):
    from changerate_bayes.bayes import _grid

    h = simulate_history(np.array([0.1, 1.0, 10.0, 3.0, 0.01]), 1.0, 40, n_pages=5, rng=3)
    lik = ExactLikelihood(h.changed, h.intervals)
    coef = GammaPrior(1.0, 1.0).coefficients().as_arrays(5)
    _, together = grid_draws(lik, coef, n_draws=3, rng=np.random.default_rng(0))
    monkeypatch.setattr(_grid, "BLOCK_PAGES", 2)
    _, blocked = grid_draws(lik, coef, n_draws=3, rng=np.random.default_rng(0))
    np.testing.assert_allclose(blocked, together, rtol=1e-10)
    for i in range(5):
        one = fit_grid(lik.block(i, i + 1), {c: v[i : i + 1] for c, v in coef.items()})
        assert one.mean()[0] == pytest.approx(together[i], rel=1e-10)


def test_many_pages_get_a_page_dimension_and_obey_the_tower_property():
    # Δ_i drawn from the prior: E[E[Δ | data]] = E[Δ] = prior mean (= 2), so the average of
    # the per-page posterior means is within 3 SE of 2 (pages are independent)
    prior = GammaPrior(2.0, 1.0)
    gen = np.random.default_rng(5)
    h = simulate_history(prior.sample(3000, rng=gen), 1.0, 20, n_pages=3000, rng=gen)
    idata = posterior(h, prior=prior, method="grid", draws=10, chains=2, rng=1)
    assert idata.posterior["change_rate"].dims == ("chain", "draw", "page")
    assert idata.posterior["change_rate"].shape == (2, 10, 3000)
    page_means = idata.posterior["change_rate"].values.mean(axis=(0, 1))
    assert abs(page_means.mean() - prior.mean) < 3 * page_means.std(ddof=1) / math.sqrt(page_means.size)


# --------------------------------------------------------------------------- any finite τ, any prior
@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(
    ("changed", "tau", "mean"),
    [
        # τ = 1e-300: 1 − e^{−Δτ} = Δτ(1 − Δτ/2 + ...) for any representable Δ, e^{−Δτ} = 1,
        # so Gamma(1, 1) becomes Gamma(1 + S, 1) exactly in float64: mean 1 + S
        ([1], [1e-300], 2.0),
        ([0], [1e-300], 1.0),
        ([1, 1, 1], [1e-300] * 3, 4.0),
        ([1, 0], [1e-300] * 2, 2.0),
        # τ = 1e300: a change is certain for any Δ >> 1e-300 (likelihood ≈ 1) and no change
        # means Δ ~ Gamma(1, 1e300): means 1 and 1e-300
        ([1], [1e300], 1.0),
        ([0], [1e300], 1e-300),
    ],
)
def test_grid_posterior_is_exact_for_any_finite_positive_interval(changed, tau, mean):
    lik = ExactLikelihood(np.array([changed]), np.array([tau]))
    coef = GammaPrior(1.0, 1.0).coefficients().as_arrays(1)
    assert fit_grid(lik, coef).mean()[0] == pytest.approx(mean, rel=1e-8)
    idata = posterior(
        CrawlHistory(changed, tau), prior=GammaPrior(1.0, 1.0), method="grid", draws=2000, chains=2, rng=5
    )
    d = idata.posterior["change_rate"].values.ravel() / mean  # scaled: 1e-300² underflows
    assert abs(d.mean() - 1.0) < 3 * d.std(ddof=1) / np.sqrt(d.size)  # was 1.08e213 for every draw


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize(("a", "b"), [(0.01, 1.0), (1e-3, 1e-3), (1e-4, 1.0)])
def test_vague_gamma_prior_with_mass_below_float_range_of_rates(a, b):
    # none changed: Gamma(a, b + T0) exactly; for a <= 0.01 part of its mass lies below
    # Δ = e^-700 (u < -700), which the grid must still count
    from changerate_bayes.bayes._grid import posterior_mean

    tau = np.array([[1.0, 1.0]])
    lik = ExactLikelihood(np.zeros_like(tau, dtype=int), tau)
    coef = GammaPrior(a, b).coefficients().as_arrays(1)
    exact = stats.gamma(a, scale=1.0 / (b + 2.0))
    assert posterior_mean(lik, coef, size=256)[0] == pytest.approx(exact.mean(), rel=1e-8)
    probs = np.array([0.99, 0.999])  # lower quantiles of Gamma(1e-4, ·) underflow to 0.0
    q = fit_grid(lik, coef, size=256).quantile(probs)[0]
    np.testing.assert_allclose(exact.cdf(q), probs, atol=1e-6)


def test_the_mode_is_found_from_a_start_far_off():
    # τ = 1e-300 puts the crude start at log Δ ≈ 690 while the mode is near 0: Newton alone
    # crawls back by ~1 per step (the old fit stopped after 200 steps at Δ ≈ 1e213)
    from changerate_bayes.bayes._grid import _mode

    lik = ExactLikelihood(np.array([[1, 1, 1, 0]]), np.array([[1e-300] * 4]))
    assert lik.start[0] > 680
    m = _mode(lik, GammaPrior(1.0, 1.0).coefficients().as_arrays(1))
    assert m[0] == pytest.approx(np.log(4.0), abs=1e-9)  # Gamma(4, 1): density of u ∝ e^{4u − e^u}


def test_a_posterior_too_flat_for_float64_is_refused_clearly():
    lik = ExactLikelihood(np.array([[0]]), np.array([[1.0]]))
    with pytest.raises(ValueError, match="too flat in log Δ for float64 quadrature"):
        fit_grid(lik, GammaPrior(5e-324, 1.0).coefficients().as_arrays(1))
