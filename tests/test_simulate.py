"""Simulation of crawl histories: distributional facts with tolerances from standard errors."""

import numpy as np
import pytest

from changerate_bayes import simulate_change_times, simulate_history, simulate_replications
from changerate_bayes._rng import as_generator, replication_generators


def test_same_seed_same_history():
    a = simulate_history(5.0, 3.0, 50, n_pages=4, rng=7)
    b = simulate_history(5.0, 3.0, 50, n_pages=4, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a.changed, b.changed)
    np.testing.assert_array_equal(a.intervals, b.intervals)


def test_change_probability_matches_delta_over_delta_plus_p():
    # E[I] = Δ/(Δ+p) (paper eq. 4); n = 200_000 Bernoulli draws, SE = sqrt(μ(1-μ)/n)
    h = simulate_history(5.0, 3.0, 200_000, rng=1)
    mu, n = 5 / 8, 200_000
    assert abs(h.changed.mean() - mu) < 4 * np.sqrt(mu * (1 - mu) / n)
    # intervals ~ Exp(p): mean 1/p with SE (1/p)/sqrt(n)
    assert abs(h.intervals.mean() - 1 / 3) < 4 * (1 / 3) / np.sqrt(n)


def test_regular_crawls_have_fixed_interval_and_probability():
    h = simulate_history(2.0, 4.0, 100_000, crawl="regular", rng=2)
    assert np.all(h.intervals == 0.25)
    mu, n = 1 - np.exp(-0.5), 100_000
    assert abs(h.changed.mean() - mu) < 4 * np.sqrt(mu * (1 - mu) / n)


def test_per_page_rates_and_zero_rate():
    h = simulate_history([0.0, 1.0, 100.0], [1.0, 1.0, 1.0], 2000, n_pages=3, rng=3)
    assert h.changed[0].sum() == 0  # Δ = 0 never changes
    assert h.changed[2].mean() > 0.97  # Δ/(Δ+p) = 0.990
    assert h.crawl_rate.shape == (3,)


def test_replications_are_identical_in_chunks():
    whole = simulate_replications(5.0, 3.0, 30, 10, rng=99)
    parts = [simulate_replications(5.0, 3.0, 30, 10, rng=99, start=a, stop=b) for a, b in ((0, 3), (3, 4), (4, 10))]
    np.testing.assert_array_equal(whole.changed, np.vstack([p.changed for p in parts]))
    np.testing.assert_array_equal(whole.intervals, np.vstack([p.intervals for p in parts]))


def test_replication_i_uses_the_ith_spawned_stream():
    gens = replication_generators(5, 4)
    direct = np.random.default_rng(np.random.SeedSequence(5).spawn(4)[2])
    assert gens[2].random() == direct.random()


def test_change_times_count_and_range():
    t = simulate_change_times(2.0, 5000.0, rng=4)
    n, lam = t.size, 2.0 * 5000
    assert abs(n - lam) < 4 * np.sqrt(lam)
    assert np.all(np.diff(t) >= 0) and t.min() > 0 and t.max() <= 5000


@pytest.mark.parametrize(
    ("call", "exc", "message"),
    [
        (lambda: simulate_history(-1.0, 3.0, 5), ValueError, r"`change_rate` must be >= 0; got -1.0"),
        (lambda: simulate_history(1.0, 0.0, 5), ValueError, r"`crawl_rate` must be > 0; got 0.0"),
        (lambda: simulate_history(np.nan, 1.0, 5), ValueError, r"`change_rate` must be finite"),
        (lambda: simulate_history(1.0, 1.0, 0), ValueError, r"`n_crawls` must be >= 1; got 0"),
        (lambda: simulate_history(1.0, 1.0, 2.5), TypeError, r"`n_crawls` must be an integer"),
        (lambda: simulate_history(1.0, 1.0, 5, crawl="uniform"), ValueError, r"`crawl` must be one of"),
        (lambda: simulate_history([1.0, 2.0], 1.0, 5), ValueError, r"pass `n_pages=2`"),
        (lambda: simulate_history(1.0, 1e-310, 5), ValueError, r"`crawl_rate` is too small"),
        (lambda: simulate_change_times(1e10, 1e10), ValueError, r"1e\+20 expected changes"),
        (lambda: simulate_history([1.0, 2.0], 1.0, 5, n_pages=3), ValueError, r"shape \(n_pages,\) = \(3,\)"),
        (lambda: simulate_history(1.0, 1.0, 5, rng=1.5), TypeError, r"`rng` must be an int seed"),
        (lambda: simulate_replications(1.0, 1.0, 5, 0), ValueError, r"`n_replications` must be a positive"),
        (lambda: simulate_replications(1.0, 1.0, 5, 4, start=3, stop=2), ValueError, r"start <= stop"),
        (lambda: simulate_change_times(1.0, 0.0), ValueError, r"`horizon` must be a finite number > 0"),
    ],
)
def test_bad_input(call, exc, message):
    with pytest.raises(exc, match=message):
        call()


def test_as_generator_passes_generators_through():
    g = np.random.default_rng(0)
    assert as_generator(g) is g
    with pytest.raises(ValueError, match="non-negative"):
        as_generator(-3)


def test_replications_from_a_generator():
    # a Generator spawns fresh children: same state, same numbers; the next call differs
    a = simulate_replications(5.0, 3.0, 20, 4, rng=np.random.default_rng(3))
    b = simulate_replications(5.0, 3.0, 20, 4, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a.intervals, b.intervals)
    gen = np.random.default_rng(3)
    first = simulate_replications(5.0, 3.0, 20, 4, rng=gen)
    second = simulate_replications(5.0, 3.0, 20, 4, rng=gen)
    assert not np.array_equal(first.intervals, second.intervals)
    with pytest.raises(TypeError, match="`rng` must be a non-negative int seed, a SeedSequence or a numpy Generator"):
        simulate_replications(5.0, 3.0, 20, 4, rng=1.5)
