"""Sampling-based change detection (Cho & Ntoulas 2002)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from changerate_bayes.scheduling import (
    allocate_downloads,
    expected_change_ratio,
    optimal_sample_size,
    rule_of_thumb_sample_size,
    simulate_change_detection,
)


def test_slides_example():
    # slides 11-13: A and B with 20 pages, samples 4/5 and 1/5, 10 downloads left
    assert allocate_downloads([4, 1], 5, [20, 20], 10).tolist() == [10, 0]
    assert allocate_downloads([4, 1], 5, [20, 20], 10, policy="proportional").tolist() == [8, 2]


def test_allocation_caps_and_redistribution():
    # greedy fills A (capacity 5) then B; proportional caps A and gives the rest to B, C
    assert allocate_downloads([5, 2, 1], 5, [10, 30, 30], 20).tolist() == [5, 15, 0]
    prop = allocate_downloads([5, 2, 1], 5, [10, 30, 30], 20, policy="proportional")
    assert prop.tolist() == [5, 10, 5]
    # no change seen anywhere: by capacity
    assert allocate_downloads([0, 0], 2, [12, 22], 15, policy="proportional").tolist() == [5, 10]
    # more budget than capacity: everything
    assert allocate_downloads([1, 0], 1, [3, 4], 100).tolist() == [2, 3]


@given(
    st.lists(st.tuples(st.integers(1, 40), st.integers(0, 10), st.integers(0, 10)), min_size=1, max_size=15),
    st.integers(0, 300),
    st.sampled_from(["greedy", "proportional"]),
)
def test_allocation_invariants(sites, remaining, policy):
    size = np.array([s[0] for s in sites]) + 10
    k = np.minimum(np.array([s[1] for s in sites]), size)
    x = np.minimum(np.array([s[2] for s in sites]), k)
    out = allocate_downloads(x, k, size, remaining, policy=policy)
    assert out.sum() == min(remaining, (size - k).sum())
    assert np.all((out >= 0) & (out <= size - k))


def test_rule_of_thumb():
    assert rule_of_thumb_sample_size(1400, 100_000 / 353_000) == pytest.approx(np.sqrt(1400 * 100_000 / 353_000))


def test_expected_change_ratio_exact_cases():
    assert expected_change_ratio(10, 100, 0.5, [0.0, 1.0]) == pytest.approx(0.9)
    # identical sites: whatever is sampled, ChangeRatio = ρ
    assert expected_change_ratio(7, 200, 0.3, [0.4] * 5) == pytest.approx(0.4)


def test_expected_change_ratio_matches_monte_carlo():
    # greedy with many sites (S = 4000, N = 100, r = 0.3, k = 8), sampling with replacement
    # as in the mean-field formula; tolerance from the spread over 20 seeded cycles
    gen = np.random.default_rng(8)
    rho = gen.beta(0.6, 2.5, 4000)
    n, r, k = 100, 0.3, 8
    values = []
    for _ in range(20):  # a loop over Monte Carlo repetitions of one cycle
        x = gen.binomial(k, rho)
        extra = allocate_downloads(x, np.full(rho.size, k), np.full(rho.size, n), int(r * n * rho.size) - k * rho.size)
        changed = x.sum() + gen.binomial(extra, rho).sum()
        values.append(changed / (r * n * rho.size))
    values = np.array(values)
    expected = expected_change_ratio(k, n, r, rho)
    assert abs(values.mean() - expected) < 4 * values.std(ddof=1) / np.sqrt(values.size) + 2e-3


def test_optimal_sample_size_is_the_argmax():
    rho = np.random.default_rng(1).beta(0.5, 2.0, 300)
    k, cr = optimal_sample_size(400, 0.25, rho)
    values = [expected_change_ratio(j, 400, 0.25, rho) for j in range(1, 101)]
    assert k == int(np.argmax(values)) + 1 and cr == pytest.approx(max(values))


def test_simulation_round_robin_first_cycle_and_sampling_costs():
    gen = np.random.default_rng(3)
    site = np.repeat(np.arange(50), 80)
    delta = np.repeat(gen.lognormal(np.log(0.2), 1.5, 50), 80)
    res = simulate_change_detection(
        delta,
        site,
        1200,
        policies=("round_robin", "greedy", "adaptive", "oracle"),
        n_cycles=3,
        sample_size=12,
        batch=4,
        rng=5,
    )
    # cycle 1: every page is stale with probability 1 - e^{-Δ}; 1200 random pages
    mu = np.mean(-np.expm1(-delta))
    assert abs(res.change_ratio[0, 0] - mu) < 4 * np.sqrt(mu * (1 - mu) / 1200)
    assert np.all(res.samples[1] == 50 * 12)
    assert np.all(res.samples[2] <= 50 * 12)
    # the oracle knows Δ: in expectation nothing beats it in the first cycle (all pages
    # have age 1); allow 4 binomial standard errors for the others' luck
    assert res.change_ratio[3, 0] >= res.change_ratio[:3, 0].max() - 4 * np.sqrt(0.25 / 1200)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: allocate_downloads([3, 1], 2, [20, 20], 5), r"`sample_changes` must be <= `sample_size`"),
        (lambda: allocate_downloads([1, 1], 30, [20, 20], 5), r"`sample_size` must be <= `site_sizes`"),
        (
            lambda: allocate_downloads([1.5, 1], 2, [20, 20], 5),
            r"`sample_changes` must hold whole numbers; got 1.5 at index 0",
        ),
        (lambda: allocate_downloads([1, -1], 2, [20, 20], 5), r"`sample_changes` must be >= 0; got -1.0 at index 1"),
        (lambda: allocate_downloads([1, 1], 2, [20, 20], -5), r"`remaining` must be >= 0; got -5.0"),
        (lambda: allocate_downloads([1, 1], 2, [20, 20], 5, policy="best"), r"`policy` must be one of"),
        (lambda: rule_of_thumb_sample_size(100, 1.5), r"`download_fraction` must be in \(0, 1\]; got 1.5"),
        (lambda: expected_change_ratio(60, 100, 0.5, [0.2]), r"`sample_size` must be <= rN = 50"),
        (lambda: expected_change_ratio(5, 100, 0.5, [1.2]), r"`change_fractions` must be in \[0, 1\]"),
        (
            lambda: simulate_change_detection([1.0, -1.0], [0, 0], 1),
            r"`change_rates` must be >= 0; got -1.0 at index 1",
        ),
        (lambda: simulate_change_detection([1.0, 1.0], [0, 2], 1), r"`site` must use every index"),
        (lambda: simulate_change_detection([1.0, 1.0], [0, 0], 3), r"`budget` must be <= the number of pages 2"),
        (
            lambda: simulate_change_detection([1.0] * 4, [0, 0, 1, 1], 3, sample_size=2),
            r"`budget` 3 must exceed the samples",
        ),
        (
            lambda: simulate_change_detection([1.0] * 4, [0, 0, 1, 1], 3, confidence=1.0, policies="frequency"),
            r"`confidence` must be in \(0, 1\)",
        ),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
