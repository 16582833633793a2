"""Estimation of (Δ, q, ν): EM against a direct optimiser, the coverage of its Wald
intervals, the Gibbs posterior against a quadrature of the posterior density, and the
predictive's reduction to the crawl-only model."""

import warnings

import arviz as az
import numpy as np
import pytest
from scipy import optimize, special, stats

from changerate_bayes import CrawlHistory, GammaPrior
from changerate_bayes.bayes import change_probability
from changerate_bayes.signals import (
    SignalData,
    SignalPosterior,
    SignalPrior,
    pooled_signal_prior,
    signal_log_likelihood,
    signal_mle,
    signal_posterior,
    simulate_signal_pages,
    unchanged_probability,
)


def _page(data, i):
    sl = slice(data.offsets[i], data.offsets[i + 1])
    return SignalData.from_segments(
        data.intervals[sl],
        data.changed[sl],
        data.signals[sl],
        lengths=[data.lengths[i]],
        tail_time=data.tail_time[i],
        tail_signals=data.tail_signals[i],
    )


def test_em_reaches_the_maximum_a_direct_optimiser_finds():
    data = simulate_signal_pages(
        [0.3, 1.0, 2.5], [0.8, 0.5, 0.3], [0.5, 2.0, 1.0], horizon=150.5, crawl_interval=1.0, rng=3
    )
    fit = signal_mle(data)
    assert fit.converged.all()
    for i in range(3):
        one = _page(data, i)

        def negative(x, one=one):
            return -signal_log_likelihood(np.exp(x[0]), special.expit(x[1]), np.exp(x[2]), one)[0]

        ref = optimize.minimize(
            negative,
            x0=[0.0, 0.0, 0.0],
            method="Nelder-Mead",
            options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 20_000},
        )
        best = signal_log_likelihood(fit.change_rate[i], fit.recall[i], fit.false_rate[i], one)[0]
        assert best >= -ref.fun - 1e-7
        np.testing.assert_allclose(
            [fit.change_rate[i], fit.recall[i], fit.false_rate[i]],
            [np.exp(ref.x[0]), special.expit(ref.x[1]), np.exp(ref.x[2])],
            rtol=1e-3,
        )
    np.testing.assert_allclose(
        fit.precision, fit.recall * fit.change_rate / (fit.recall * fit.change_rate + fit.false_rate)
    )


def test_wald_intervals_cover_the_true_rates_nine_times_in_ten():
    n_pages, level = 200, 0.9
    data = simulate_signal_pages(np.full(n_pages, 0.5), 0.7, 1.0, horizon=400.0, crawl_interval=1.0, rng=11)
    fit = signal_mle(data)
    intervals = fit.interval(level)
    se = np.sqrt(level * (1 - level) / n_pages)
    for name, true in (("change_rate", 0.5), ("recall", 0.7), ("false_rate", 1.0)):
        lo, hi = intervals[name]
        coverage = np.mean((lo < true) & (true < hi))
        assert abs(coverage - level) < 4 * se, (name, coverage)


def test_boundary_estimates_have_no_wald_interval():
    # every change signalled and no false signal: q̂ = 1, ν̂ = 0
    data = simulate_signal_pages([0.5, 1.0], 1.0, 0.0, horizon=60.0, crawl_interval=1.0, rng=0)
    fit = signal_mle(data, max_iter=200)
    np.testing.assert_allclose(fit.recall, 1.0, atol=1e-6)
    np.testing.assert_allclose(fit.false_rate, 0.0, atol=1e-12)
    # the signal counts are the changes: Δ̂ is the signals per day
    np.testing.assert_allclose(fit.change_rate, data.totals()["signals"] / data.totals()["time"], rtol=1e-6)
    assert np.isnan(fit.covariance).all()


def _quadrature_means(one, prior, size=64):
    """Posterior means of Δ and q on a grid in (s, u, ν) with the three Gamma prior densities."""
    s = (np.arange(size) + 0.5) * (2.5 / size)
    u = (np.arange(size) + 0.5) * (2.0 / size)
    nu = (np.arange(size) + 0.5) * (4.0 / size)
    S, U, N = np.meshgrid(s, u, nu, indexing="ij")
    S, U, N = S.ravel(), U.ravel(), N.ravel()
    log_post = (
        signal_log_likelihood((S + U)[:, None], (S / (S + U))[:, None], N[:, None], one)[:, 0]
        + stats.gamma.logpdf(S, prior.recall_a, scale=1 / prior.change_b)
        + stats.gamma.logpdf(U, prior.recall_b, scale=1 / prior.change_b)
        + stats.gamma.logpdf(N, prior.false_shape, scale=1 / prior.false_b)
    )
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    return (w * (S + U)).sum(), (w * S / (S + U)).sum(), (w * N).sum()


def test_gibbs_means_agree_with_a_quadrature_of_the_posterior():
    prior = SignalPrior(recall_a=2.0, recall_b=2.0, change_b=4.0, false_shape=2.0, false_b=2.0)
    data = simulate_signal_pages([0.6], 0.6, 1.0, horizon=25.5, crawl_interval=1.0, rng=5)
    # the page 40 times over: 40 independent runs of the chain at once, whose spread is the
    # Monte Carlo error of one run's mean
    copies = 40
    many = SignalData.from_segments(
        np.tile(data.intervals, copies),
        np.tile(data.changed, copies),
        np.tile(data.signals, copies),
        lengths=np.repeat(data.lengths, copies),
        tail_time=data.tail_time[0],
        tail_signals=data.tail_signals[0],
    )
    post = signal_posterior(many, prior=prior, draws=500, tune=100, chains=1, rng=6)
    # midpoint rule on 40³ cells: within 2e-3 of the 96³ rule for this page
    expect = _quadrature_means(data, prior, size=40)
    for name, value in zip(("change_rate", "recall", "false_rate"), expect):
        means = post.draws(name).mean(axis=(0, 1))
        se = means.std(ddof=1) / np.sqrt(copies)
        assert abs(means.mean() - value) < 4 * se + 2e-3, (name, means.mean(), value, se)


def test_credible_intervals_cover_pages_drawn_from_the_prior_nine_times_in_ten():
    # pages whose rates are drawn from the prior: the 90% posterior intervals are calibrated
    prior = SignalPrior(recall_a=3.0, recall_b=1.0, change_b=4.0, false_shape=2.0, false_b=2.0)
    n_pages, level = 200, 0.9
    gen = np.random.default_rng(0)
    s = gen.gamma(prior.recall_a, size=n_pages) / prior.change_b
    u = gen.gamma(prior.recall_b, size=n_pages) / prior.change_b
    nu = gen.gamma(prior.false_shape, size=n_pages) / prior.false_b
    data = simulate_signal_pages(s + u, s / (s + u), nu, horizon=60.5, crawl_interval=1.0, rng=1)
    summary = signal_posterior(data, prior=prior, draws=400, tune=100, chains=1, rng=2).summary(level)
    se = np.sqrt(level * (1 - level) / n_pages)
    for name, true in (
        ("change_rate", s + u),
        ("recall", s / (s + u)),
        ("false_rate", nu),
        ("precision", s / (s + nu)),
    ):
        coverage = np.mean((summary[f"{name}_lower"] < true) & (true < summary[f"{name}_upper"]))
        assert abs(coverage - level) < 4 * se, (name, coverage)


def test_without_recall_and_signals_the_predictive_is_the_crawl_only_one():
    rng = np.random.default_rng(8)
    k = 30
    changed = (rng.random((3, k)) < [[0.2], [0.5], [0.8]]).astype(np.int8)
    tau = np.ones((3, k))
    data = SignalData.from_segments(tau.ravel(), changed.ravel(), np.zeros(3 * k), lengths=[k] * 3)
    prior = SignalPrior(recall_a=0.0, recall_b=2.0, change_b=3.0, false_shape=0.0, false_b=1.0)  # q = 0, ν = 0
    post = signal_posterior(data, prior=prior, draws=1500, tune=200, chains=2, rng=9)
    assert (post.signalled == 0).all() and (post.false_rate == 0).all()
    t = 1.5
    got = unchanged_probability(t, 0, post)
    history = CrawlHistory.from_segments(changed.ravel(), tau.ravel(), lengths=[k] * 3)
    exact = 1 - change_probability(history, t, prior=GammaPrior(2.0, 3.0))  # Δ ~ Gamma(a + b, change_b)
    values = np.exp(-post.unsignalled * t)  # (chains, draws, pages)
    mcse = az.mcse(az.convert_to_dataset(values), method="mean")["x"].values
    assert (np.abs(got - exact) < 4 * mcse).all(), (got, exact, mcse)


def test_the_predictive_reweights_for_new_signals_and_is_ordered():
    data = simulate_signal_pages(np.full(3, 0.5), 0.9, 1.0, horizon=100.0, crawl_interval=1.0, rng=2)
    prior = SignalPrior(1.0, 1.0, 2.0, 1.0, 1.0)
    post = signal_posterior(data, prior=prior, draws=400, tune=100, rng=3)
    # the data's own tail (none here): plain posterior mean of the formula
    s, u, nu = (x.reshape(-1, 3) for x in (post.signalled, post.unsignalled, post.false_rate))
    plain = np.mean(np.exp(-u * 2.0) * (nu / (s + nu)) ** 2, axis=0)
    w = stats.poisson.pmf(2, (s + nu) * 2.0)
    weighted = (w * np.exp(-u * 2.0) * (nu / (s + nu)) ** 2).sum(axis=0) / w.sum(axis=0)
    np.testing.assert_allclose(unchanged_probability(2.0, 2, post), weighted, rtol=1e-12)
    assert np.abs(weighted - plain).max() < 0.05  # λ is well known after 100 days
    p = np.stack([unchanged_probability(2.0, n, post) for n in range(4)])
    assert (np.diff(p, axis=0) <= 0).all() and ((p >= 0) & (p <= 1)).all()


def test_the_pooled_prior_centres_on_the_population():
    delta = np.random.default_rng(4).gamma(4.0, 0.25, size=60)  # mean 1 per day
    data = simulate_signal_pages(delta, 0.8, 0.5, horizon=200.0, crawl_interval=1.0, rng=5)
    prior = pooled_signal_prior(data)
    assert 0.8 < prior.mean_change_rate < 1.2
    assert 0.7 < prior.mean_recall < 0.9
    assert 0.4 < prior.false_shape / prior.false_b < 0.6


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda d: signal_mle([1.0]), TypeError, "SignalData"),
        (
            lambda d: signal_mle(SignalData.from_segments([], [], [], lengths=[0], tail_time=1.0)),
            ValueError,
            "no crawl interval",
        ),
        (lambda d: signal_posterior(d, prior=GammaPrior(1.0, 1.0)), TypeError, "SignalPrior"),
        (lambda d: signal_posterior(d, prior=SignalPrior(1, 1, 1, 1, 1), draws=0), ValueError, "draws"),
        (lambda d: pooled_signal_prior(_page(d, 0)), ValueError, "at least 2 pages"),
        (lambda d: SignalPrior(0.0, 0.0, 1.0, 1.0, 1.0), ValueError, "both be 0"),
        (lambda d: SignalPrior(1.0, 1.0, 0.0, 1.0, 1.0), ValueError, "change_b"),
        (lambda d: SignalPrior(1.0, -1.0, 1.0, 1.0, 1.0), ValueError, "recall_b"),
        (lambda d: unchanged_probability(1.0, 0, "posterior"), TypeError, "SignalPosterior"),
        (lambda d: signal_mle(d).interval(1.5), ValueError, "level"),
    ],
)
def test_bad_input_is_refused(call, error, match):
    data = simulate_signal_pages([0.5, 1.0], 0.5, 1.0, horizon=20.0, crawl_interval=1.0, rng=0)
    with pytest.raises(error, match=match):
        call(data)


def test_predictive_refuses_bad_times_and_counts():
    data = simulate_signal_pages([0.5, 1.0], 0.5, 1.0, horizon=20.0, crawl_interval=1.0, rng=0)
    post = signal_posterior(data, prior=SignalPrior(1, 1, 1, 1, 1), draws=5, tune=0, rng=0)
    assert isinstance(post, SignalPosterior)
    with pytest.raises(ValueError, match="`t`"):
        unchanged_probability(-1.0, 0, post)
    with pytest.raises(ValueError, match="`n`"):
        unchanged_probability(1.0, [0.5, 1], post)
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        unchanged_probability([1.0, 2.0, 3.0], 0, post)


def test_signals_at_no_time_since_the_crawl_are_refused_not_nan():
    # Poisson(n; λ·0) = 0 for n > 0: every draw's weight is 0 and the predictive undefined
    data = simulate_signal_pages(np.full(5, 0.5), 0.5, 1.0, horizon=20.0, crawl_interval=1.0, rng=0)
    post = signal_posterior(data, prior=SignalPrior(1, 1, 1, 1, 1), draws=20, tune=0, rng=0)
    with pytest.raises(ValueError, match=r"page 0: `n` = 3 signals in `t` = 0 days"):
        unchanged_probability(0.0, [3, 0, 0, 0, 0], post)
    # no signal at t = 0: surely unchanged, e^0 · 1 = 1 exactly
    np.testing.assert_array_equal(unchanged_probability(0.0, 0, post), np.ones(5))


def test_signals_without_a_signal_rate_are_refused():
    data = SignalData.from_segments(np.ones(10), np.tile([0, 1], 5), np.zeros(10), lengths=[5, 5])
    prior = SignalPrior(recall_a=0.0, recall_b=2.0, change_b=3.0, false_shape=0.0, false_b=1.0)  # s = ν = 0
    post = signal_posterior(data, prior=prior, draws=10, tune=0, rng=1)
    with pytest.raises(ValueError, match=r"page 1: `n` = 2 signals in `t` = 1\.5 days"):
        unchanged_probability(1.5, [0, 2], post)


def test_em_that_does_not_converge_warns_with_the_count():
    data = simulate_signal_pages([0.5, 1.0, 2.0], 0.7, 1.0, horizon=100.0, crawl_interval=1.0, rng=4)
    with pytest.warns(RuntimeWarning, match=r"3 of 3 pages did not converge in 2 EM iterations"):
        fit = signal_mle(data, max_iter=2)
    assert fit.iterations == 2 and not fit.converged.any()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        full = signal_mle(data)
    assert full.converged.all()


def test_precision_is_nan_exactly_for_pages_without_signals():
    data = SignalData.from_segments(np.ones(6), [1, 0, 1, 1, 0, 1], [0, 0, 0, 2, 0, 1], lengths=[3, 3])
    fit = signal_mle(data)
    assert np.isnan(fit.precision[0]) and fit.recall[0] == 0.0 and fit.false_rate[0] == 0.0
    assert 0.0 <= fit.precision[1] <= 1.0
