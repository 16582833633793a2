"""Ephemeral-content crawling: sources, simulated policies and the exact DP optimum."""

import numpy as np
import pytest

from changerate_bayes.scheduling import (
    EphemeralSources,
    schedule_period,
    simulate_ephemeral_crawling,
    solve_ephemeral_dp,
)

# the example of the validation study (parameters of the paper's Table 1 are not in our text)
EXAMPLE = EphemeralSources([30.0, 23.0, 15.0, 2.4], [10.0, 10.0, 5.0, 3.7], [1.05, 0.45, 1.1, 0.08])
THREE = EphemeralSources(EXAMPLE.arrival_rate[:3], EXAMPLE.mean_utility[:3], EXAMPLE.decay_rate[:3])


def test_sources_alpha_and_inflow():
    s = EphemeralSources([10.0, 2.0], [1.0, 3.0], [np.log(2.0), 1.0], period=2.0)
    np.testing.assert_allclose(s.alpha, [0.25, np.exp(-2.0)])
    # u = Λ ξ̄ (1 - e^{-μT})/μ
    np.testing.assert_allclose(s.inflow, [10 * 0.75 / np.log(2.0), 6 * (1 - np.exp(-2.0))])
    assert s.n_sources == 2


def test_random_inflow_has_mean_u():
    s = EphemeralSources([5.0, 0.5], [2.0, 10.0], [0.7, 0.2])
    draws = s.sample_inflow(40_000, rng=3)
    # compound Poisson: Var U = Λ E[ξ²] ∫ e^{-2μ(T-s)} ds = Λ 2ξ̄² (1 - e^{-2μ})/(2μ)
    var = s.arrival_rate * 2 * s.mean_utility**2 * (1 - np.exp(-2 * s.decay_rate)) / (2 * s.decay_rate)
    se = np.sqrt(var / 40_000)
    assert np.all(np.abs(draws.mean(axis=0) - s.inflow) < 4 * se)
    assert np.all(draws >= 0)


def test_dp_two_equal_sources_alternate():
    src = EphemeralSources([1.0, 1.0], [1.0, 1.0], [1.0, 1.0])
    sol = solve_ephemeral_dp(src, 1)
    # alternating collects x_1 = u(1 + α) per period; crawling one source only collects u
    assert sol.average_reward == pytest.approx(src.inflow[0] * (1 + src.alpha[0]), rel=1e-9)
    assert solve_ephemeral_dp(src, 2).average_reward == pytest.approx(2 * src.inflow[0], rel=1e-9)


def test_policies_versus_exact_optimum_three_sources():
    for m in (1, 2):
        dp = solve_ephemeral_dp(THREE, m)
        sims = {
            p: simulate_ephemeral_crawling(THREE, m, policy=p, n_periods=1500, dp=dp).average_reward
            for p in ("whittle", "greedy", "static", "optimal")
        }
        # the DP value is an upper bound and the DP policy attains it
        assert sims["optimal"] == pytest.approx(dp.average_reward, rel=1e-8)
        for name in ("whittle", "greedy", "static"):
            assert sims[name] <= dp.average_reward * (1 + 1e-9)
        # on this example the index policy is optimal (measured fact, both M)
        assert sims["whittle"] == pytest.approx(dp.average_reward, rel=1e-8)
    # M = 1: crawling only the best source gets u_1
    assert simulate_ephemeral_crawling(THREE, 1, policy="static").average_reward == pytest.approx(THREE.inflow[0])


def test_paper_findings_on_the_example():
    m1 = simulate_ephemeral_crawling(EXAMPLE, 1, policy="whittle", n_periods=1000)
    tail = m1.crawled[-200:]
    assert schedule_period(tail) == 2 and tail[:, 0].sum() == tail[:, 1].sum() == 100  # alternate 1 and 2
    assert m1.average_reward > 1.4 * EXAMPLE.inflow.max()
    m2 = simulate_ephemeral_crawling(EXAMPLE, 2, policy="whittle", n_periods=2000)
    tail = m2.crawled[-800:]
    assert tail[:, 0].all()  # source 1 always crawled
    gaps = [set(np.diff(np.flatnonzero(tail[:, i])).tolist()) for i in (1, 2)]
    assert all(len(g) > 1 for g in gaps)  # irregular gaps for sources 2 and 3
    assert schedule_period(tail) > 10


def test_stochastic_simulation_reproducible_and_near_deterministic_mean():
    a = simulate_ephemeral_crawling(THREE, 1, policy="static", n_periods=20_000, stochastic=True, rng=5)
    b = simulate_ephemeral_crawling(THREE, 1, policy="static", n_periods=20_000, stochastic=True, rng=5)
    assert a.average_reward == b.average_reward
    # static crawling of source 1 collects U_1 each period: mean u_1; SE from the sample
    tail = a.rewards[a.burn_in :]
    assert abs(tail.mean() - THREE.inflow[0]) < 4 * tail.std() / np.sqrt(tail.size)


def test_schedule_period():
    assert schedule_period([[1, 0], [0, 1]] * 5) == 2
    assert schedule_period([[1, 0]] * 4) == 1
    assert schedule_period(np.eye(5, dtype=bool)) is None
    with pytest.raises(ValueError, match=r"`crawled` must have shape"):
        schedule_period([1, 0, 1])


def test_bad_input():
    with pytest.raises(ValueError, match=r"`decay_rate` must be > 0; got 0.0 at index 1"):
        EphemeralSources([1.0, 1.0], [1.0, 1.0], [1.0, 0.0])
    with pytest.raises(ValueError, match=r"must have the same shape"):
        EphemeralSources([1.0, 1.0], [1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match=r"`n_active` must be <= the number of sources 3; got 4"):
        simulate_ephemeral_crawling(THREE, 4)
    with pytest.raises(ValueError, match=r"`policy` must be one of"):
        simulate_ephemeral_crawling(THREE, 1, policy="best")
    with pytest.raises(ValueError, match=r"`dp` must be the EphemeralDPSolution"):
        simulate_ephemeral_crawling(THREE, 1, policy="optimal")
    with pytest.raises(ValueError, match=r"`burn_in` must be < n_periods"):
        simulate_ephemeral_crawling(THREE, 1, n_periods=10, burn_in=10)
    with pytest.raises(TypeError, match=r"`sources` must be an EphemeralSources"):
        solve_ephemeral_dp([1.0, 2.0])
    with pytest.raises(ValueError, match=r"more than 5 million points"):
        solve_ephemeral_dp(EphemeralSources([1.0] * 4, [1.0] * 4, [0.01] * 4))
