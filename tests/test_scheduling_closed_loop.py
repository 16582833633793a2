"""Closed-loop crawling: freshness accounting, the per-page posterior and the estimator plumbing."""

import numpy as np
import pytest
from scipy import integrate

from changerate_bayes import CrawlHistory
from changerate_bayes.estimators import estimate_path
from changerate_bayes.scheduling import optimal_crawl_rates, simulate_closed_loop
from changerate_bayes.scheduling._closed_loop import _epoch_estimates, _expected_fresh_time, _GridPosterior


def test_expected_fresh_time():
    np.testing.assert_allclose(
        _expected_fresh_time(np.array([0.0, 2.0]), np.array([3.0, 1.0])), [3.0, (1 - np.exp(-2.0)) / 2]
    )


@pytest.mark.parametrize("policy", ["oracle", "uniform"])
def test_fixed_policies_reach_their_steady_state(policy):
    # with fixed rates, freshness of page i tends to p/(p+Δ) (Poisson crawls); the pages
    # start fresh, so skip a transient of a few mean crawl intervals
    gen = np.random.default_rng(11)
    n_rep, n = 6, 1500
    delta = gen.lognormal(0.0, 1.0, (n_rep, n))
    w = gen.lognormal(0.0, 1.0, (n_rep, n))
    budget = 0.8 * n
    res = simulate_closed_loop(delta, w, budget, policies=(policy,), n_epochs=12, epoch_length=2.0, rng=3)
    if policy == "oracle":
        p = np.array([optimal_crawl_rates(delta[r], w[r], budget) for r in range(n_rep)])
        np.testing.assert_allclose(res.oracle_freshness, (w * p / (p + delta)).sum(1) / w.sum(1), rtol=1e-12)
    else:
        p = np.full(delta.shape, budget / n)
    target = (w * p / (p + delta)).sum(1) / w.sum(1)
    late = res.freshness[0, :, 6:].mean(axis=1)  # time-average over t in [12, 24]
    # pages with p = 0 decay from their t = 0 copy: e^{-Δ t} is < 1e-2 of the weight by t = 12
    se = (late - target).std(ddof=1) / np.sqrt(n_rep)
    assert abs((late - target).mean()) < 4 * se + 2e-3


def test_regret_is_cumulative_gap_to_oracle_value():
    gen = np.random.default_rng(2)
    delta = gen.lognormal(0.0, 1.0, 300)
    res = simulate_closed_loop(delta, 1.0, 150.0, policies=("uniform", "thompson"), n_epochs=6, rng=1)
    gap = (res.oracle_freshness[None, :, None] - res.freshness) * 1.0
    np.testing.assert_allclose(res.regret, np.cumsum(gap, axis=2))
    assert np.isnan(res.estimate_within_2x[0]).all() and not np.isnan(res.estimate_within_2x[1]).any()
    rows = res.summary(last=3)
    assert [r["policy"] for r in rows] == ["uniform", "thompson"] and rows[0]["freshness_se"] is None


def test_same_seed_same_result_and_exploration_keeps_every_page_crawled():
    delta = np.random.default_rng(0).lognormal(0.0, 2.0, 200)
    a = simulate_closed_loop(delta, 1.0, 50.0, policies=("lln",), n_epochs=4, rng=9, exploration=0.1)
    b = simulate_closed_loop(delta, 1.0, 50.0, policies=("lln",), n_epochs=4, rng=9, exploration=0.1)
    np.testing.assert_array_equal(a.freshness, b.freshness)
    assert np.all(a.crawled_fraction == 1.0)


@pytest.mark.parametrize(
    ("args", "policies"),
    [
        ((np.ones(50), np.ones(50), 0.5), ("uniform",)),  # p = 0.01 per page: most pages see no crawl
        (([1.0], [1.0], 1.0), ("oracle", "uniform", "lln", "sam", "posterior_mean", "thompson")),
        ((np.zeros(5), np.ones(5), 2.0), ("lln", "oracle")),  # never changing pages
    ],
)
def test_epochs_without_crawls_of_some_or_all_pages(args, policies):
    # Newcomer report: IndexError whenever an epoch contained no crawl at all.
    res = simulate_closed_loop(*args, policies=policies, n_epochs=3, rng=0)
    assert res.freshness.shape == (len(policies), 1, 3)
    assert np.all((res.freshness >= 0) & (res.freshness <= 1))
    if not np.any(args[0]):
        np.testing.assert_array_equal(res.freshness, 1.0)  # Δ = 0: always fresh


def test_freshness_without_any_crawl_is_the_decay_of_the_first_copy():
    # B = 1e-12 over 3 pages and 3 epochs: P(any crawl) < 1e-11. Every page keeps its t = 0
    # copy, fresh with probability e^{-Δt}: epoch e averages (e^{-Δ(e-1)} - e^{-Δe})/Δ.
    delta = np.array([0.5, 1.0, 2.0])
    res = simulate_closed_loop(delta, 1.0, 1e-12, policies=("uniform", "thompson"), n_epochs=3, rng=4)
    e = np.arange(1, 4)[:, None]
    expected = ((np.exp(-delta * (e - 1)) - np.exp(-delta * e)) / delta).mean(axis=1)
    np.testing.assert_allclose(res.freshness[:, 0], np.broadcast_to(expected, (2, 3)), rtol=1e-12)


def test_rng_int_or_generator_and_independent_replication_streams():
    gen = np.random.default_rng(5)
    delta = gen.lognormal(0.0, 1.0, (3, 120))
    kw = dict(policies=("lln", "thompson"), n_epochs=3)
    a = simulate_closed_loop(delta, 1.0, 60.0, rng=17, **kw)
    b = simulate_closed_loop(delta, 1.0, 60.0, rng=np.random.default_rng(17), **kw)
    np.testing.assert_array_equal(a.freshness, b.freshness)
    # replication r runs on SeedSequence(17).spawn(R)[r]: row 0 alone gives the same numbers
    one = simulate_closed_loop(delta[:1], 1.0, 60.0, rng=17, **kw)
    np.testing.assert_allclose(one.freshness[:, 0], a.freshness[:, 0], rtol=1e-12)
    # a Generator is consumed: two calls with the same Generator draw different streams
    g = np.random.default_rng(17)
    c1 = simulate_closed_loop(delta, 1.0, 60.0, rng=g, **kw)
    c2 = simulate_closed_loop(delta, 1.0, 60.0, rng=g, **kw)
    assert not np.array_equal(c1.freshness, c2.freshness)
    with pytest.raises(TypeError, match=r"`rng` must be an int seed, a numpy.random.Generator or None; got float"):
        simulate_closed_loop(delta, 1.0, 60.0, rng=1.5, **kw)


def test_grid_posterior_matches_quadrature():
    # one page, exact interval-censored likelihood × log-normal prior, integrated by scipy
    gen = np.random.default_rng(4)
    tau = gen.exponential(0.5, 40)
    changed = (gen.random(40) < -np.expm1(-1.3 * tau)).astype(np.int8)
    post = _GridPosterior((1, 1), median=1.0, sigma=2.0, size=400)
    post.update(np.zeros(40, dtype=int), changed, tau)

    def density(d):
        ll = np.sum(np.where(changed == 1, np.log(-np.expm1(-d * tau)), -d * tau))
        return np.exp(ll - 0.5 * (np.log(d) / 2.0) ** 2) / d  # log-normal prior density in Δ

    norm = integrate.quad(density, 0, 50, limit=200, points=[0.5, 1, 2, 4])[0]
    mean = integrate.quad(lambda d: d * density(d), 0, 50, limit=200, points=[0.5, 1, 2, 4])[0] / norm
    assert post.mean()[0, 0] == pytest.approx(mean, rel=2e-3)
    draws = post.sample(gen.random((1, 20_000)).reshape(20_000, 1).T, gen.random((1, 20_000)))
    assert draws.mean() == pytest.approx(mean, rel=0.03)


def test_epoch_estimates_equal_per_page_estimate_path():
    # flat crawls sorted by page; pages with 0, 2, 3, 2 crawls in the epoch
    n_valid = np.array([[0, 2, 3, 2]])
    changed = np.array([1, 0, 1, 1, 0, 0, 1], dtype=np.int8)
    p = np.array([[1.0, 2.0, 3.0, 4.0]])
    for method in ("lln", "sam"):
        out = _epoch_estimates(method, changed, n_valid, p)
        assert out[0, 0] == 0.0
        starts = [0, 2, 5]
        for page, start in zip((1, 2, 3), starts):
            k = n_valid[0, page]
            ref = estimate_path(CrawlHistory(changed[start : start + k], crawl_rate=p[0, page]), method)[-1]
            assert out[0, page] == pytest.approx(ref, rel=1e-14)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"change_rates": [1.0, -1.0]}, r"`change_rates` must be >= 0; got -1.0 at index 1"),
        ({"weights": [1.0, np.nan]}, r"`weights` must be finite; got nan at index 1"),
        ({"weights": [0.0, 0.0]}, r"`weights` must not be all zero"),
        ({"budget": 0.0}, r"`budget` must be a finite number > 0; got 0.0"),
        ({"policies": ("oracle", "oracle")}, r"`policies` must be distinct"),
        ({"policies": ("greedy",)}, r"`policies` must be one of"),
        ({"exploration": 1.0}, r"`exploration` must be in \[0, 1\); got 1.0"),
        ({"n_epochs": 0}, r"`n_epochs` must be >= 1; got 0"),
    ],
)
def test_bad_input(kwargs, match):
    args = {"change_rates": [1.0, 2.0], "weights": 1.0, "budget": 1.0}
    args.update(kwargs)
    extra = {k: v for k, v in args.items() if k not in ("change_rates", "weights", "budget")}
    with pytest.raises(ValueError, match=match):
        simulate_closed_loop(args["change_rates"], args["weights"], args["budget"], **extra)


def test_grid_posterior_matches_bayes_streaming_estimator():
    # The closed loop keeps its own per-page grid because its crawls are asynchronous
    # (pages have different numbers of crawls per epoch); on synchronous crawls it must
    # agree with the bayes package's exact-likelihood streaming posterior on the same grid.
    from changerate_bayes import BayesianEstimator
    from changerate_bayes.bayes import LogNormalPrior

    gen = np.random.default_rng(6)
    n_pages, k, median, sigma, size = 5, 30, 0.8, 1.5, 200
    delta = gen.lognormal(0.0, 1.0, n_pages)
    mine = _GridPosterior((1, n_pages), median=median, sigma=sigma, size=size)
    theirs = BayesianEstimator(
        prior=LogNormalPrior(np.log(median), sigma),
        likelihood="exact",
        n_pages=n_pages,
        rate_grid=(median * np.exp(-6 * sigma), median * np.exp(6 * sigma), size),
    )
    for _ in range(k):  # a loop over crawls
        tau = gen.exponential(1.0, n_pages)
        changed = (gen.random(n_pages) < -np.expm1(-delta * tau)).astype(np.int8)
        mine.update(np.arange(n_pages), changed, tau)
        theirs.update(changed, tau)
    np.testing.assert_allclose(mine.mean()[0], theirs.rate, rtol=1e-8)
