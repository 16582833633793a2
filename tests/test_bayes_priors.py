"""Priors on Δ: parameter checks, units, and their log-density in log Δ."""

import math

import numpy as np
import pytest
from scipy import stats

from changerate_bayes import BetaPrimePrior, GammaPrior, LogNormalPrior
from changerate_bayes.bayes._priors import log_prior_u


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda v: GammaPrior(v, 1.0), "shape"),
        (lambda v: GammaPrior(1.0, v), "rate"),
        (lambda v: LogNormalPrior(0.0, v), "sigma"),
        (lambda v: BetaPrimePrior(1.0, v), "b"),
    ],
)
@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_bad_positive_parameter_names_itself(make, name, bad):
    with pytest.raises(ValueError, match=f"`{name}` must be a finite number > 0; got {bad}"):
        make(bad)


@pytest.mark.parametrize("bad", [-0.5, math.nan, math.inf])
def test_betaprime_a_must_be_nonnegative_and_finite(bad):
    with pytest.raises(ValueError, match=r"`a` must be a finite number >= 0"):
        BetaPrimePrior(bad, 2.0)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_lognormal_mu_must_be_finite(bad):
    with pytest.raises(ValueError, match="`mu` must be a finite number"):
        LogNormalPrior(bad, 1.0)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda v: GammaPrior(v, 1.0), "shape"),
        (lambda v: LogNormalPrior(v, 1.0), "mu"),
        (lambda v: BetaPrimePrior(v, 1.0), "a"),
    ],
)
@pytest.mark.parametrize("bad", ["1", None, True, [1.0]])
def test_non_numbers_are_type_errors(make, name, bad):
    with pytest.raises(TypeError, match=f"`{name}` must be a real number"):
        make(bad)


def test_improper_betaprime_is_allowed_but_flagged():
    prior = BetaPrimePrior(0.0, 2.0)
    assert not prior.proper
    assert BetaPrimePrior(0.5, 2.0).proper
    with pytest.raises(ValueError, match="improper"):
        prior.distribution(1.0)
    with pytest.raises(ValueError, match="improper"):
        prior.sample(3, rng=np.random.default_rng(0), crawl_rate=1.0)


def test_betaprime_needs_the_crawl_rate():
    with pytest.raises(ValueError, match="needs the crawl rate"):
        BetaPrimePrior(1.0, 2.0).coefficients(None)


def test_moments_in_the_stated_units():
    # Gamma(a, b): mean a/b; log-normal: median e^mu, mean e^(mu + sigma^2/2)
    assert GammaPrior(3.0, 2.0).mean == 1.5
    assert LogNormalPrior(math.log(2.0), 0.5).median == pytest.approx(2.0, rel=1e-15)
    assert LogNormalPrior(0.0, 1.0).mean == pytest.approx(math.exp(0.5), rel=1e-15)
    # BetaPrime(a, b) on Δ/p with p = 3: mean of Δ = p a/(b - 1)
    assert BetaPrimePrior(2.0, 5.0).distribution(3.0).mean() == pytest.approx(3.0 * 2.0 / 4.0, rel=1e-12)


@pytest.mark.parametrize("prior", [GammaPrior(2.5, 0.7), LogNormalPrior(-1.0, 0.8), BetaPrimePrior(1.5, 3.0)], ids=repr)
def test_coefficients_give_the_log_density_of_log_rate(prior):
    # log π_u(u) = log π_Δ(e^u) + u, up to a constant, and its derivatives
    p = 2.0
    u = np.linspace(-4.0, 3.0, 41)
    coef = prior.coefficients(p).as_arrays(u.size)
    mine = log_prior_u(u, coef)
    ref = prior.distribution(p).logpdf(np.exp(u)) + u
    np.testing.assert_allclose(mine - ref, (mine - ref)[0], atol=1e-10)
    h = 1e-5
    d1 = (log_prior_u(u + h, coef) - log_prior_u(u - h, coef)) / (2 * h)
    np.testing.assert_allclose(log_prior_u(u, coef, 1), d1, rtol=1e-6, atol=1e-6)
    d2 = (log_prior_u(u + h, coef, 1) - log_prior_u(u - h, coef, 1)) / (2 * h)
    np.testing.assert_allclose(log_prior_u(u, coef, 2), d2, rtol=1e-5, atol=1e-5)
    assert (log_prior_u(u, coef, 2) <= 0).all()  # log-concave in log Δ


def test_sampling_is_seeded_and_matches_the_distribution():
    prior = GammaPrior(2.0, 4.0)
    a = prior.sample(4000, rng=np.random.default_rng(1))
    b = prior.sample(4000, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(a, b)
    assert stats.kstest(a, prior.distribution().cdf).pvalue > 0.01


@pytest.mark.parametrize(
    ("mu", "sigma", "name", "match"),
    [
        (0.0, 1e-300, "sigma", r"`sigma` must be in \[1e-12, 1e\+150\] for mu = 0"),  # was ZeroDivisionError later
        (0.0, 1e300, "sigma", r"`sigma` must be in \[1e-12, 1e\+150\] for mu = 0"),  # was OverflowError later
        (50.0, 1e-12, "sigma", r"`sigma` must be in \[5e-11, 1e\+150\] for mu = 50"),
        (1e300, 1.0, "mu", r"`mu` must be in \[-700, 700\]"),
        (-701.0, 1.0, "mu", r"`mu` must be in \[-700, 700\]"),
    ],
)
def test_lognormal_parameters_outside_float64_reach_are_refused_at_construction(mu, sigma, name, match):
    with pytest.raises(ValueError, match=match):
        LogNormalPrior(mu, sigma)


def test_lognormal_extremes_that_are_accepted_work():
    assert LogNormalPrior(0.0, 1e-6).coefficients().C == pytest.approx(5e11)
    assert LogNormalPrior(700.0, 1e150).mean == math.inf  # beyond float64, not OverflowError
    assert LogNormalPrior(-700.0, 1.0).median == pytest.approx(math.exp(-700.0))


@pytest.mark.parametrize(
    ("shape", "rate", "match"),
    [
        (1e300, 1e-300, r"`shape` and `rate` must give a prior scale .* got e\^1381.55"),  # a/b = 1e600
        (1.0, 1e-310, r"`shape` and `rate` must give a prior scale"),  # 1/b = 1e310
        (0.5, 1e305, r"`shape` and `rate` must give a prior scale"),  # mass ends near 1e-305
        (1e300, 1.0, r"`shape` must be at most 2.1e\+18 for rate = 1"),  # sd of log Δ ≈ 1e-150 at log Δ ≈ 690.8
        (1e25, 1.0, r"`shape` must be at most"),
    ],
)
def test_gamma_prior_outside_float64_is_refused(shape, rate, match):
    """The prior of log Δ must sit where float64 holds its rates and resolves its width:
    GammaPrior(1e300, 1e-300) (mean 1e600) used to give NaN posteriors on the grid."""
    with pytest.raises(ValueError, match=match):
        GammaPrior(shape, rate)


def test_gamma_prior_at_the_edges_of_float64_is_kept():
    """Shapes far below 1 (nearly log-uniform priors) and large but resolvable shapes stay."""
    for shape, rate in ((5e-324, 1.0), (1e-300, 1.0), (1e20, 1e20), (1e18, 1e-250), (2.0, 1e-300)):
        prior = GammaPrior(shape, rate)
        assert (prior.shape, prior.rate) == (shape, rate)
