"""The marginal pooled model: quadrature of p(data_i | θ), exact conditional draws, and
agreement with the joint NUTS model.

Reference values are independent of the code under test: for the gamma population
p(data_i | θ) has a closed form (below); for the log-normal it is ``scipy.integrate.quad``.
"""

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import integrate, stats

from changerate_bayes import pooled_posterior, sampler_diagnostics, simulate_history
from changerate_bayes._validation import StatisticalWarning
from changerate_bayes.bayes import _conditional
from changerate_bayes.bayes._conditional import conditional_draws
from changerate_bayes.bayes._likelihood import log_likelihood
from changerate_bayes.bayes._marginal import likelihood_table, marginal_log_likelihood

# one pytest-xdist worker for the whole group (see tests/conftest.py)
pytestmark = pytest.mark.xdist_group("nuts_pooled")


def _pages(n_pages, k, seed):
    gen = np.random.default_rng(seed)
    tau = gen.exponential(1.0, (n_pages, k))
    changed = (gen.random((n_pages, k)) < 0.5).astype(np.int8)
    changed[0], changed[1] = 0, 1  # a page never seen changed and one always seen changed
    return changed, tau


def gamma_marginal(changed, tau, log_mean, shape):
    """log p(data | θ) for Δ ~ Gamma(shape, rate shape/mean), by hand.

    L(Δ) = Π_{j: I_j=1} (1 − e^{−Δτ_j}) · e^{−Δ T0} = Σ_{S ⊆ changed} (−1)^|S| e^{−Δ(T0 + Σ_S τ_j)},
    and E[e^{−cΔ}] = (1 + c·mean/shape)^{−shape}; so p(data | θ) is a finite signed sum.
    """
    mean = math.exp(log_mean)
    out = []
    for ch, t in zip(changed, tau):
        t0 = float(t[ch == 0].sum())
        seen = t[ch == 1]
        total = 0.0
        for r in range(seen.size + 1):
            for sub in itertools.combinations(seen, r):
                c = t0 + sum(sub)
                total += (-1) ** r * math.exp(-shape * math.log1p(c * mean / shape))
        out.append(math.log(total))
    return np.array(out)


def lognormal_marginal(changed, tau, m, s):
    """log p(data | θ) for log Δ ~ Normal(m, s) by adaptive quadrature over u = log Δ."""
    out = []
    for ch, t in zip(changed, tau):

        def f(u, ch=ch, t=t):
            return math.exp(float(log_likelihood(math.exp(u), ch, t))) * stats.norm.pdf(u, m, s)

        # L varies near u = −log τ_j; the population sits within m ± 40 s
        lo, hi = m - 40 * s, m + 40 * s
        pts = sorted(p for p in [m, *(-np.log(t))] if lo < p < hi)
        val, _ = integrate.quad(f, lo, hi, points=pts, epsabs=0.0, epsrel=1e-13, limit=500)
        out.append(math.log(val))
    return np.array(out)


@pytest.mark.parametrize("shape", [0.02, 0.5, 3.0, 100.0, 1e4, 1e6])
def test_gamma_marginal_matches_closed_form(shape):
    changed, tau = _pages(12, 5, seed=1)
    got = marginal_log_likelihood(changed, tau, "gamma", math.log(0.7), shape)
    want = gamma_marginal(changed, tau, math.log(0.7), shape)
    # the quadrature's documented accuracy: relative error of p(data_i | θ) below 1e-8
    np.testing.assert_allclose(np.exp(got - want), 1.0, rtol=0, atol=1e-8)


@pytest.mark.parametrize("s", [0.003, 0.05, 0.15, 0.3, 1.0, 3.0, 8.0])
def test_lognormal_marginal_matches_quad(s):
    changed, tau = _pages(12, 5, seed=2)
    got = marginal_log_likelihood(changed, tau, "lognormal", -0.4, s)
    want = lognormal_marginal(changed, tau, -0.4, s)
    np.testing.assert_allclose(np.exp(got - want), 1.0, rtol=0, atol=1e-8)


def test_likelihood_table_spans_where_every_likelihood_varies():
    """Beyond the end nodes every likelihood is at its limit to 1e-12 (``SATURATION``).

    Bottom node Δ_0 = 1e-12 / max_i Σ_j τ_ij: a page never seen changed has
    L = e^{−Δ_0 T0} >= 1 − 1e-12, any other L <= Π_{changed} Δ_0 τ_j <= 1e-12. Top node:
    a page with an unchanged crawl has L <= e^{−Δ T0} <= 1e-12; a page always seen
    changed has L >= 1 − Σ_j e^{−Δ τ_j} >= 1 − 1e-12.
    """
    changed, tau = _pages(30, 10, seed=3)
    table = likelihood_table(changed, tau)
    assert table.interpolation_error <= 1e-8 and table.step == 0.1
    assert ((table.scaled >= 0) & (table.scaled <= 1 + 1e-12)).all()
    lik = table.scaled * np.exp(table.log_max)[:, None]  # L_i at the nodes
    n_seen = changed.sum(axis=1)
    never, always = n_seen == 0, n_seen == changed.shape[1]
    assert never.any() and always.any() and (~never & ~always).any()
    assert np.all(lik[never, 0] >= 1 - 1e-12) and np.all(lik[~never, 0] <= 1e-12)
    assert np.all(lik[always, -1] >= 1 - 1e-12) and np.all(lik[~always, -1] <= 1e-12)


def _conditional_cdf(ch, t, population, loc, spread):
    """CDF of Δ given the page's data and θ (reference for the draws).

    Composite Simpson on 200 001 points of u = log Δ over loc ± 30 (mass outside < 1e-40
    for these θ); its error, O(h⁴) with h = 3e-4, is far below the KS test's resolution.
    """
    u = np.linspace(loc - 30, loc + 30, 200_001)
    log_lik = log_likelihood(np.exp(u), ch[None, :], t[None, :])
    if population == "lognormal":
        log_prior = stats.norm.logpdf(u, loc, spread)
    else:  # density of u = log Δ for Δ ~ Gamma(spread, rate spread/e^loc)
        log_prior = stats.gamma.logpdf(np.exp(u), spread, scale=math.exp(loc) / spread) + u
    dens = np.exp(log_lik + log_prior - np.max(log_lik + log_prior))
    cdf = np.concatenate([[0.0], integrate.cumulative_simpson(dens, x=u)])
    cdf /= cdf[-1]
    return lambda x: np.interp(np.log(x), u, cdf)


@pytest.mark.parametrize(("population", "loc", "spread"), [("lognormal", -0.5, 1.2), ("gamma", 0.3, 0.8)])
@pytest.mark.parametrize("fallback", [False, True])
def test_conditional_draws_follow_the_exact_conditional(population, loc, spread, fallback, monkeypatch):
    """One page, 3000 draws given fixed θ: a KS test against the quadrature CDF.

    ``fallback`` forces every draw through the grid path (no rejection round), which must
    give the same distribution.
    """
    if fallback:
        monkeypatch.setattr(_conditional, "MAX_ROUNDS", 0)
    ch = np.array([[1, 0, 1]])
    t = np.array([[0.8, 1.5, 0.3]])
    table = likelihood_table(ch, t)
    n = 3000
    draws, n_grid = conditional_draws(
        ch, t, table.log_max, population, np.full(n, loc), np.full(n, spread), np.random.default_rng(11)
    )
    assert draws.shape == (n, 1) and np.all(draws > 0)
    assert n_grid == (n if fallback else 0)
    res = stats.kstest(draws[:, 0], _conditional_cdf(ch[0], t[0], population, loc, spread))
    assert res.pvalue > 1e-3, res


@pytest.mark.slow
def test_marginal_and_joint_give_the_same_hyperparameter_posterior():
    """Both methods sample one posterior: hyperparameter means agree within their MCSE, and
    the marginal one mixes at k = 1 crawl per page."""
    gen = np.random.default_rng(7)
    delta = np.exp(gen.normal(np.log(0.5), 1.0, 400))
    h = simulate_history(delta, 1.0, 1, n_pages=400, rng=gen)
    fits = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)
        for method in ("marginal", "joint"):
            fits[method] = pooled_posterior(h, method=method, draws=1000, tune=1000, chains=2, rng=5)
    import arviz as az

    for name in ("population_log_median", "population_sigma"):
        means, ses = [], []
        for idata in fits.values():
            summ = az.summary(idata, var_names=[name], kind="all")
            means.append(float(summ["mean"].iloc[0]))
            ses.append(float(summ["mcse_mean"].iloc[0]))
        z = abs(means[0] - means[1]) / math.hypot(*ses)
        assert z < 4, (name, means, ses)
    diag = sampler_diagnostics(fits["marginal"])
    assert diag.problems == (), diag.problems
    assert fits["marginal"].posterior.attrs["pooling"] == "marginal"
    assert fits["marginal"].posterior["change_rate"].shape == (2, 1000, 400)


def test_conditional_draws_stay_positive_under_a_very_heavy_left_tail():
    """Gamma population with shape 0.0044 (a case found by search): P(Δ < 1e-304) ≈ 5% for a page
    never seen changed, below the smallest double; draws are floored there, never 0."""
    ch = np.zeros((50, 3), dtype=np.int8)
    t = np.random.default_rng(0).exponential(1.0, (50, 3))
    table = likelihood_table(ch, t)
    n = 400
    draws, _ = conditional_draws(
        ch, t, table.log_max, "gamma", np.full(n, 0.0), np.full(n, 0.0044), np.random.default_rng(1)
    )
    floor = np.finfo(np.float64).tiny
    assert np.all(draws >= floor) and np.all(np.isfinite(np.log(draws)))
    # the floor is reached (the case is real): the population alone puts 4.3% below it
    # (scipy gamma CDF) and L <= 1 only lifts that for pages never seen changed; SE of the
    # fraction over 20000 draws is < 0.002
    assert (draws < 1.001 * floor).mean() > 0.02


def _ragged_pages(lengths, seed):
    from changerate_bayes import CrawlHistory

    gen = np.random.default_rng(seed)
    changed = [(gen.random(n) < 0.5).astype(np.int8) for n in lengths]
    tau = [gen.exponential(1.0, n) for n in lengths]
    changed[0][:], changed[1][:] = 0, 1  # a page never seen changed and one always seen changed
    h = CrawlHistory.from_segments(np.concatenate(changed), np.concatenate(tau), lengths=lengths)
    return h, changed, tau


@pytest.mark.parametrize(("population", "loc", "spread"), [("gamma", math.log(0.7), 0.5), ("lognormal", -0.4, 1.0)])
def test_marginal_likelihood_of_a_ragged_history(population, loc, spread):
    """Pages of 1 to 9 crawls in one table: p(data_i | θ) against the closed form / quad."""
    from changerate_bayes.bayes._marginal import marginal_log_likelihood_of
    from changerate_bayes.bayes._sufficient import exact_likelihood

    lengths = [3, 5, 1, 9, 2, 4, 7, 1, 6]
    h, changed, tau = _ragged_pages(lengths, seed=5)
    got = marginal_log_likelihood_of(exact_likelihood(h), h.n_crawls, population, loc, spread)
    ref = gamma_marginal if population == "gamma" else lognormal_marginal
    want = ref(changed, tau, loc, spread)
    np.testing.assert_allclose(np.exp(got - want), 1.0, rtol=0, atol=1e-8)


def test_conditional_draws_of_ragged_pages_follow_the_exact_conditional():
    """Two pages of 2 and 6 crawls drawn together: a KS test per page (3000 draws each)."""
    from changerate_bayes import CrawlHistory
    from changerate_bayes.bayes._conditional import conditional_draws_of
    from changerate_bayes.bayes._marginal import likelihood_table_of
    from changerate_bayes.bayes._sufficient import exact_likelihood

    ch = [np.array([1, 0]), np.array([0, 1, 1, 0, 0, 1])]
    t = [np.array([0.8, 1.5]), np.array([0.3, 0.9, 0.2, 1.1, 0.4, 2.0])]
    h = CrawlHistory.from_segments(np.concatenate(ch), np.concatenate(t), lengths=[2, 6])
    lik = exact_likelihood(h)
    table = likelihood_table_of(lik, h.n_crawls)
    n = 3000
    draws, _ = conditional_draws_of(
        lik, h.n_crawls, table.log_max, "lognormal", np.full(n, -0.5), np.full(n, 1.2), np.random.default_rng(4)
    )
    assert draws.shape == (n, 2)
    for i in range(2):
        res = stats.kstest(draws[:, i], _conditional_cdf(ch[i], t[i], "lognormal", -0.5, 1.2))
        assert res.pvalue > 1e-3


def test_pooled_posterior_of_a_ragged_history():
    from changerate_bayes import CrawlHistory

    gen = np.random.default_rng(8)
    lengths = gen.integers(1, 8, 60)
    rates = np.exp(gen.normal(-0.5, 0.8, 60))
    tau = gen.exponential(1.0, lengths.sum())
    changed = (gen.random(tau.size) < -np.expm1(-np.repeat(rates, lengths) * tau)).astype(np.int8)
    h = CrawlHistory.from_segments(changed, tau, lengths=lengths)
    assert h.is_ragged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)
        idata = pooled_posterior(h, draws=200, tune=200, chains=2, rng=3)
    assert idata.posterior["change_rate"].shape == (2, 200, 60)
    assert np.all(idata.posterior["change_rate"].values > 0)
    np.testing.assert_array_equal(idata.constant_data["observed"].values.sum(axis=1), lengths)
    # the population's median rate e^m against the truth's e^{-0.5}: within its posterior spread
    m = idata.posterior["population_log_median"].values
    assert abs(m.mean() - (-0.5)) < 4 * m.std() + 0.1
