"""The Gibbs sampler's conditional draws against their exact distributions.

The kernels draw by inversion, so each scalar draw is compared with scipy's quantile
function at the same uniform (equal wherever the uniform is not within 1e-9 of a jump of
the distribution function); the joint draw of (S, U) of a changed interval, and the tail's
S, by a chi-square test of many draws against the exact probabilities of the module
docstring of ``changerate_bayes.signals._estimation``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from changerate_bayes.signals import SignalData
from changerate_bayes.signals import _estimation as est
from changerate_bayes.signals import _gibbs_kernels as gk

V = np.concatenate([np.random.default_rng(0).random(600), [0.0, 1e-12, 0.5, 1 - 1e-12]])


def _compare(draw, dist, v, targets, *, scale=1.0, reflect=None):
    """draw(v) against the quantile of ``dist`` at ``targets`` (n − it if ``reflect`` is n).

    Skipped where the target is within 1e-9 × ``scale`` (the mass the target spans) of a jump
    of the distribution function, where rounding may decide.
    """
    expected = dist.ppf(targets)
    tol = 1e-9 * scale + 1e-15
    ok = (np.abs(dist.cdf(expected) - targets) > tol) & (np.abs(dist.cdf(expected - 1) - targets) > tol)
    if reflect is not None:
        expected = reflect - expected
    got = np.array([draw(x) for x in v])
    assert ok.mean() > 0.9
    np.testing.assert_array_equal(got[ok], expected[ok])


@pytest.mark.parametrize("mu", [1e-9, 0.01, 0.7, 3.0, 9.99, 10.0, 37.5, 1e3, 2e5])
def test_poisson_draws_are_the_quantiles(mu):
    dist, none = stats.poisson(mu), np.exp(-mu)
    _compare(lambda x: gk.poisson_inv(x, mu), dist, V, V)
    # given X >= 1: the quantile at P(X = 0) + v P(X >= 1)
    _compare(lambda x: gk.truncated_poisson_inv(x, mu), dist, V, none + V * -np.expm1(-mu), scale=-np.expm1(-mu))


@pytest.mark.parametrize(
    ("n", "p"), [(1, 0.3), (5, 0.3), (7, 0.999), (40, 0.9), (30, 1e-6), (1000, 0.02), (10**5, 0.4), (200, 0.97)]
)
def test_binomial_draws_are_the_quantiles(n, p):
    none = (1 - p) ** n
    if p <= 0.5:
        dist = stats.binom(n, p)
        _compare(lambda x: gk.binomial_inv(x, n, p), dist, V, V)
        _compare(lambda x: gk.truncated_binomial_inv(x, n, p), dist, V, none + V * (1 - none), scale=1 - none)
    else:  # n − X ~ Binomial(n, 1 − p) inverted: at 1 − v, and given n − X <= n − 1 at v P(X >= 1)
        dist = stats.binom(n, 1 - p)
        _compare(lambda x: gk.binomial_inv(x, n, p), dist, V, 1 - V, reflect=n)
        _compare(lambda x: gk.truncated_binomial_inv(x, n, p), dist, V, V * (1 - none), reflect=n)


def test_zero_truncated_draws_are_at_least_one_even_at_the_extremes():
    for v in (0.0, 1e-300, 1 - 2**-53):
        assert gk.truncated_poisson_inv(v, 1e-12) >= 1 and gk.truncated_poisson_inv(v, 50.0) >= 1
        assert 1 <= gk.truncated_binomial_inv(v, 3, 1e-12) <= 3 and 1 <= gk.truncated_binomial_inv(v, 300, 0.9) <= 300


def _one_page_per_interval(n_signals, tau, k):
    """_Flat of k pages of one changed interval each, with n_signals signals."""
    data = SignalData.from_segments(np.full(k, tau), np.ones(k), np.full(k, n_signals), lengths=np.ones(k, dtype=int))
    return est._flat(data)


def _joint_chi_square(s_draws, u_draws, n, pi, mu, tail=0, tail_pi=None):
    """p-value of the draws of (S, U) against P(S, U) ∝ Bin(S; n, π) Pois(U; μ) on S + U >= 1."""
    smax, umax = int(max(s_draws.max(), n)), int(u_draws.max())
    s_grid, u_grid = np.meshgrid(np.arange(smax + 1), np.arange(umax + 2), indexing="ij")
    prob = stats.binom.pmf(s_grid, n, pi) * stats.poisson.pmf(u_grid, mu)
    prob[0, 0] = 0.0
    prob /= prob.sum()
    prob[:, -1] += 1 - prob.sum()  # U beyond the largest draw
    observed = np.zeros_like(prob)
    np.add.at(observed, (s_draws.astype(int), u_draws.astype(int)), 1)
    expected = prob.ravel() * s_draws.size
    big = expected >= 5  # cells of expected count < 5 pooled into one
    obs = np.append(observed.ravel()[big], observed.ravel()[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] == 0:
        assert obs[-1] == 0
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp).pvalue


@pytest.mark.parametrize(
    ("n", "s", "u", "nu", "tau"),
    [
        (0, 0.3, 0.4, 0.2, 1.5),  # no signal: U zero-truncated
        (3, 0.6, 0.5, 0.4, 1.0),
        (1, 0.05, 0.01, 2.0, 0.5),  # S = 0 unlikely a priori, U >= 1 rarer still
        (2, 0.3, 0.2, 0.0, 1.0),  # ν = 0: every signal true
        (12, 0.2, 3.0, 0.1, 5.0),  # large means: the searches from the mode
    ],
)
def test_latent_draws_follow_their_joint_conditional(n, s, u, nu, tau):
    k = 40_000
    f = _one_page_per_interval(n, tau, k)
    rates = [np.full((2, k), r) for r in (s, u, nu)]
    s_draws, u_draws = est._draw_latent(np.random.default_rng(1), *rates, f, k)
    assert s_draws.shape == u_draws.shape == (2, k)
    pi = s / (s + nu)
    assert _joint_chi_square(s_draws.ravel(), u_draws.ravel(), n, pi, u * tau) > 1e-3
    assert np.all(s_draws + u_draws >= 1) and np.all(s_draws <= n)


def test_the_sums_per_page_add_the_intervals_and_the_tail():
    # page 0: 3 changed intervals with 2 signals each, 5 tail signals; page 1: no changed interval
    data = SignalData.from_segments(
        np.ones(5), [1, 1, 1, 0, 0], [2, 2, 2, 1, 0], lengths=[3, 2], tail_time=[1.0, 1.0], tail_signals=[5, 4]
    )
    f = est._flat(data)
    k = 20_000
    s, u, nu = (np.full((k, 2), r) for r in (0.5, 0.3, 0.5))
    s_sum, u_sum = est._draw_latent(np.random.default_rng(2), s, u, nu, f, 2)
    # page 1: only the tail, S ~ Binomial(4, 1/2)
    counts = np.bincount(s_sum[:, 1].astype(int), minlength=5)
    assert stats.chisquare(counts, stats.binom.pmf(np.arange(5), 4, 0.5) * k).pvalue > 1e-3
    assert np.all(u_sum[:, 1] == 0)
    # page 0: the mean of ΣS and ΣU is EM's expectation (3 intervals + tail), within 4 standard errors
    es, eu = est._expected_latent(s[0], u[0], nu[0], f)
    for draws, mean in ((s_sum[:, 0], es[0]), (u_sum[:, 0], eu[0])):
        assert abs(draws.mean() - mean) < 4 * draws.std() / np.sqrt(k)


def test_the_stream_is_a_function_of_the_seed():
    f = _one_page_per_interval(2, 1.0, 100)
    rates = [np.full((2, 100), r) for r in (0.4, 0.3, 0.2)]
    a = est._draw_latent(np.random.default_rng(7), *rates, f, 100)
    b = est._draw_latent(np.random.default_rng(7), *rates, f, 100)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_expected_latent_without_false_signals_is_exact_and_quiet():
    # ν = 0: π = 1, every signal true. Interval 0 (2 signals): S = 2, U ~ Poisson(uτ) free;
    # interval 1 (no signal): S = 0, U ~ Poisson(uτ) given U >= 1, mean uτ/(1 − e^{−uτ}).
    data = SignalData.from_segments([1.0, 2.0], [1, 1], [2, 0], lengths=[2], tail_time=1.0, tail_signals=3)
    f = est._flat(data)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s_sum, u_sum = est._expected_latent(np.array([0.4]), np.array([0.25]), np.array([0.0]), f)
    assert s_sum[0] == pytest.approx(2 + 3, rel=1e-15)
    assert u_sum[0] == pytest.approx(0.25 + 0.5 / -np.expm1(-0.5), rel=1e-14)
