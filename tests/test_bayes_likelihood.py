"""The exact interval-censored likelihood, in numpy and in PyTensor."""

import math

import numpy as np
import pytest
from scipy import stats

from changerate_bayes.bayes import log_likelihood, pt_log_likelihood
from changerate_bayes.bayes._likelihood import ExactLikelihood, MarginalLikelihood, sparse_data


def test_log_likelihood_hand_derivation():
    # P(I = 1 | τ) = 1 − P(no Poisson event in τ) = 1 − e^{−Δτ}; three crawls by hand:
    # log L = log(1 − e^{−0.4}) − 0.8·2 + log(1 − e^{−0.8})
    hand = math.log(1 - math.exp(-0.4)) - 1.6 + math.log(1 - math.exp(-0.8))
    assert log_likelihood(0.8, [1, 0, 1], [0.5, 2.0, 1.0]) == pytest.approx(hand, rel=1e-14)
    # the same from scipy's Poisson pmf (an independent route)
    p0 = stats.poisson.pmf(0, 0.8 * np.array([0.5, 2.0, 1.0]))
    alt = np.log(1 - p0[0]) + np.log(p0[1]) + np.log(1 - p0[2])
    assert log_likelihood(0.8, [1, 0, 1], [0.5, 2.0, 1.0]) == pytest.approx(alt, rel=1e-12)


def test_log_likelihood_broadcasts_over_draws_and_pages():
    changed = np.array([[1, 0], [0, 0], [1, 1]])
    tau = np.array([[0.5, 1.0], [2.0, 3.0], [0.1, 0.2]])
    rates = np.array([[0.5], [2.0]])  # (draws, 1) against 3 pages
    out = log_likelihood(rates, changed, tau)
    assert out.shape == (2, 3)
    assert out[1, 1] == pytest.approx(-2.0 * 5.0)
    assert out[0, 2] == pytest.approx(math.log(-math.expm1(-0.05)) + math.log(-math.expm1(-0.1)))


@pytest.mark.parametrize(
    ("x", "exact"),
    [
        (1e-300, math.log(1e-300)),  # log(1 − e^{−x}) ≈ log x for tiny x
        (1e-8, math.log(1e-8) - 0.5e-8),  # log x − x/2 + O(x²)
        (1.0, math.log(1 - math.exp(-1.0))),
        (40.0, -math.exp(-40.0)),  # −e^{−x} for large x, to full relative precision
        (1e8, 0.0),
        (1e300, 0.0),
    ],
)
def test_log_likelihood_is_finite_and_accurate_at_extreme_rate_times_interval(x, exact):
    value = log_likelihood(1.0, [1], [x])
    assert np.isfinite(value)
    assert value == pytest.approx(exact, rel=1e-12, abs=1e-300)


def test_pymc_log1mexp_sign_convention():
    # PyMC 5 / PyTensor 2: log1mexp(y) = log(1 − e^{y}) for y < 0 (its docstring says
    # log(1 − e^{−x})): the likelihood must call it with −Δτ.
    import pymc as pm
    import pytensor
    import pytensor.tensor as pt

    y = pt.dvector("y")
    f = pytensor.function([y], pm.math.log1mexp(y))
    x = np.array([1e-8, 0.5, 30.0])
    exact = [math.log(-math.expm1(-1e-8)), math.log1p(-math.exp(-0.5)), math.log1p(-math.exp(-30.0))]
    np.testing.assert_allclose(f(-x), exact, rtol=1e-12)
    with np.errstate(invalid="ignore"):
        assert np.isnan(f(x)).all()  # the wrong sign gives NaN, not a wrong number


def test_pytensor_likelihood_value_and_gradient_are_finite_from_1e_minus_8_to_1e8():
    import pytensor
    import pytensor.tensor as pt

    u = pt.dvector("u")
    tau = pt.dmatrix("tau")
    changed = np.array([[1.0], [0.0]])
    ll = pt_log_likelihood(u, changed, tau)
    f = pytensor.function([u, tau], [ll, pytensor.grad(ll, u)])
    for x in np.logspace(-8, 8, 33):
        value, grad = f(np.zeros(2), np.array([[x], [x]]))
        assert np.isfinite(value) and np.isfinite(grad).all()
        assert value == pytest.approx(math.log(-math.expm1(-x)) - x, rel=1e-12)
        # d/du log(1 − e^{−x}) = x/(e^x − 1) and d/du (−x) = −x, with x = e^u τ
        assert grad[0] == pytest.approx(x / math.expm1(x) if x < 700 else 0.0, rel=1e-10, abs=1e-300)
        assert grad[1] == pytest.approx(-x, rel=1e-12)


def _random_pages(rng, n=6, k=9):
    changed = (rng.random((n, k)) < 0.5).astype(np.int8)
    changed[0] = 0  # a page never seen changed
    changed[1] = 1  # a page that changed at every crawl
    tau = rng.exponential(1.0, (n, k)) * np.logspace(-3, 3, n)[:, None]
    return changed, tau


def test_exact_likelihood_object_matches_the_function_and_its_derivatives(rng):
    changed, tau = _random_pages(rng)
    lik = ExactLikelihood(changed, tau)
    u = rng.normal(0.0, 1.0, changed.shape[0])
    np.testing.assert_allclose(lik.value(u), log_likelihood(np.exp(u), changed, tau), rtol=1e-12)
    g, h = lik.derivatives(u)
    eps = 1e-5
    np.testing.assert_allclose(g, (lik.value(u + eps) - lik.value(u - eps)) / (2 * eps), rtol=1e-6, atol=1e-8)
    g_plus, _ = lik.derivatives(u + eps)
    g_minus, _ = lik.derivatives(u - eps)
    np.testing.assert_allclose(h, (g_plus - g_minus) / (2 * eps), rtol=1e-5, atol=1e-8)
    assert (h <= 0).all()  # concave in log Δ
    # a block of pages is the same likelihood restricted to those pages
    blk = lik.block(2, 5)
    np.testing.assert_allclose(blk.value(u[2:5]), lik.value(u)[2:5], rtol=1e-14)


def test_sparse_data_keeps_what_the_likelihood_needs(rng):
    changed, tau = _random_pages(rng)
    d = sparse_data(changed, tau)
    np.testing.assert_allclose(d["t0"], np.where(changed == 0, tau, 0).sum(axis=1))
    assert d["tau1"].size == changed.sum()
    np.testing.assert_array_equal(np.bincount(d["page1"], minlength=6), changed.sum(axis=1))


def test_marginal_likelihood_is_bernoulli_of_rate_over_rate_plus_p():
    changed = np.array([[1, 0, 1, 1]])
    lik = MarginalLikelihood(changed, 2.0)
    delta = 3.0
    mu = delta / (delta + 2.0)
    expected = 3 * math.log(mu) + math.log(1 - mu)
    assert lik.value(np.array([math.log(delta)]))[0] == pytest.approx(expected, rel=1e-13)
