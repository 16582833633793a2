"""Calibration of the dynamic posterior on pages simulated from its own model: credible bands
of filtered and smoothed Δ_t and the one-step predictive probabilities."""

import numpy as np
import pytest
from scipy import stats

from changerate_bayes import LogNormalPrior, dynamic_posterior
from changerate_bayes.dynamic._simulate import simulate_drifting_pages

N, K = 1500, 40


@pytest.fixture(scope="module")
def fitted():
    sim = simulate_drifting_pages("random_walk", N, K, crawl_rate=0.5, sigma=0.1, rng=2024)
    idata = dynamic_posterior((sim.changed, sim.intervals), sigma=0.1, prior=LogNormalPrior(np.log(0.5), 1.0))
    return sim, idata


def _binomial_99(n, p):
    return stats.binom.ppf(0.005, n, p) / n, stats.binom.ppf(0.995, n, p) / n


@pytest.mark.parametrize("which", ["filtered", "smoothed"])
@pytest.mark.parametrize("level", [0.5, 0.9])
@pytest.mark.parametrize("crawl", [9, 39])
def test_bands_cover_the_true_rate_at_their_level(fitted, which, level, crawl):
    """At one crawl index the pages are independent: coverage is binomial(N, level)."""
    sim, idata = fitted
    q = idata.posterior[f"{which}_quantiles"]
    lo = q.sel(quantile=round((1 - level) / 2, 12)).values[:, crawl]
    hi = q.sel(quantile=round((1 + level) / 2, 12)).values[:, crawl]
    truth = sim.true_rate[:, crawl]
    cover = np.mean((lo <= truth) & (truth <= hi))
    a, b = _binomial_99(N, level)
    assert a <= cover <= b, f"{which} {level:.0%} band at crawl {crawl}: coverage {cover:.3f} not in [{a:.3f}, {b:.3f}]"


def test_predictive_probabilities_are_calibrated(fitted):
    """In each decile bin of the predicted P(I = 1), Σ(I − p) is a martingale sum with
    variance Σ p(1 − p): |z| < 3.29 in every bin (1% over ten bins, Bonferroni)."""
    sim, idata = fitted
    p = idata.predictions["change_probability"].values.ravel()
    i = sim.changed.ravel()
    edges = np.quantile(p, np.linspace(0, 1, 11))
    b = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, 9)
    for j in range(10):
        sel = b == j
        z = np.sum(i[sel] - p[sel]) / np.sqrt(np.sum(p[sel] * (1 - p[sel])))
        assert abs(z) < 3.29, f"bin {j}: z = {z:.2f}"


def test_simulated_kinds_have_their_shapes():
    for kind in ("jumps", "daily"):
        sim = simulate_drifting_pages(kind, 50, 30, rng=1)
        assert sim.changed.shape == sim.true_rate.shape == (50, 30)
        assert np.all((sim.change_probability >= 0) & (sim.change_probability <= 1))
    # jumps: the rate is piecewise constant, so most consecutive crawls share it
    sim = simulate_drifting_pages("jumps", 200, 50, segment_mean=48.0, crawl_rate=0.5, rng=2)
    same = np.mean(sim.true_rate[:, 1:] == sim.true_rate[:, :-1])
    assert 0.9 < same < 0.99  # P(no jump in an interval) = E[e^{-τ/48}] = 1/(1 + 2/48) = 0.96
