"""Crawl detections on their grid (``_grid``): exact nulls, hand-derived statistics, and the
size of ``poisson_gof(..., crawl_interval=c)`` on crawl detections of Poisson changes.

Tolerances of Monte Carlo checks are 4 binomial (or sample) standard errors unless said.
"""

import itertools
import warnings

import numpy as np
import pytest
from scipy import stats

from changerate_bayes import StatisticalWarning
from changerate_bayes.diagnostics import CRAWL_TESTS, poisson_gof
from changerate_bayes.diagnostics._grid import (
    _pearson_hypergeometric,
    _window_cells,
    crawl_grid,
    geometric_ks,
    mc_pvalue,
    random_subsets,
    wilcoxon_trend,
)


def _crawled_poisson(rng, delta_c, n_crawls, delay=0.2):
    """Detection times of Poisson changes (Δc per crawl interval) seen by crawls 1..N (c = 1),
    recorded up to ``delay`` late."""
    seen = np.flatnonzero(rng.poisson(delta_c, n_crawls) > 0) + 1.0
    return seen + rng.uniform(0, delay, seen.size)


# ----------------------------------------------------------------------------- the exact null
@pytest.mark.parametrize("n_slots, m", [(6, 3), (6, 4), (5, 1)])
def test_random_subsets_are_uniform(n_slots, m):
    """Every m-subset is equally likely (chi-square over all C(L, m) subsets, 20000 draws; the
    seed is fixed, the bound is the 0.1% point)."""
    s = random_subsets(n_slots, m, 20000, np.random.default_rng(n_slots * 10 + m))
    assert s.shape == (20000, m) and np.all(np.diff(s, axis=1) > 0) and s.min() >= 0 and s.max() < n_slots
    index = {c: i for i, c in enumerate(itertools.combinations(range(n_slots), m))}
    counts = np.bincount([index[tuple(row)] for row in s.tolist()], minlength=len(index))
    assert stats.chisquare(counts).pvalue > 1e-3


def test_random_subsets_large_inclusion_probability():
    s = random_subsets(3000, 400, 200, np.random.default_rng(1))
    hits = np.bincount(s.ravel(), minlength=3000) / 200  # each slot in a subset with probability 400/3000
    p = 400 / 3000
    assert abs(hits.mean() - p) < 1e-12 and abs(hits.std() - np.sqrt(p * (1 - p) / 200)) < 0.1 * np.sqrt(p / 200)
    assert random_subsets(10, 0, 3, np.random.default_rng(0)).shape == (3, 0)
    assert random_subsets(4, 4, 2, np.random.default_rng(0)).tolist() == [[0, 1, 2, 3]] * 2


def test_mc_pvalue_is_exact_for_a_discrete_statistic():
    """Observed and 39 simulated statistics i.i.d. Binomial(3, 1/2) (heavy ties): with random
    tie-breaking P(p <= 0.05) is exactly 0.05 (2/40), one- and two-sided; counting ties as
    'at least as extreme' would give far less."""
    g = np.random.default_rng(2)
    reps = 4000
    x = g.binomial(3, 0.5, size=(reps, 40)).astype(float)
    one = np.array([mc_pvalue(r[0], r[1:], "greater", g) for r in x])
    two = np.array([mc_pvalue(r[0], r[1:], "two-sided", g) for r in x])
    se = np.sqrt(0.05 * 0.95 / reps)
    assert abs(np.mean(one <= 0.05) - 0.05) < 4 * se
    assert abs(np.mean(two <= 0.05) - 0.05) < 4 * se
    ties_as_extreme = (1 + np.sum(x[:, 1:] >= x[:, :1], axis=1)) / 40
    assert np.mean(ties_as_extreme <= 0.05) < 0.05 - 4 * se
    assert set(np.round(one * 40).astype(int)) <= set(range(1, 41))


# ----------------------------------------------------------------------------- statistics by hand
def test_geometric_ks_equals_brute_force(rng):
    gaps = rng.geometric(0.3, size=(5, 40))
    q = 0.27
    k = np.arange(0, 200)
    cdf = 1 - (1 - q) ** k
    for i in range(5):
        emp = np.searchsorted(np.sort(gaps[i]), k, side="right") / 40
        assert geometric_ks(gaps[i], q) == pytest.approx(np.max(np.abs(emp - cdf)), abs=1e-12)
    assert geometric_ks(gaps, q).shape == (5,)


def test_wilcoxon_trend_equals_scipy_mannwhitneyu(rng):
    L = 300
    for m in (5, 40, 150):
        inner = np.sort(rng.choice(np.arange(1, L + 1), m, replace=False))
        missed = np.setdiff1d(np.arange(1, L + 1), inner)
        z, p = wilcoxon_trend(inner.sum(), m, L)
        ref = stats.mannwhitneyu(inner, missed, method="asymptotic")
        assert p == pytest.approx(ref.pvalue, rel=1e-10)
        # z > 0 when detections crowd at the end
        assert np.sign(z) == np.sign(inner.mean() - (L + 1) / 2)


def test_hypergeometric_pearson_has_mean_k_minus_one():
    """Counts of m detections among L crawls cut into K windows are multivariate
    hypergeometric: Pearson's statistic times (L - 1)/(L - m) has mean K - 1."""
    L, m, k, reps = 100, 30, 4, 20000
    s = random_subsets(L, m, reps, np.random.default_rng(3)) + 1
    cells = _window_cells(L, k)
    assert cells.tolist() == [25, 25, 25, 25] and _window_cells(10, 3).tolist() == [4, 3, 3]
    chi2 = np.array(
        [_pearson_hypergeometric(np.bincount((r - 1) * k // L, minlength=k), cells, m, L)[0] for r in s[:4000]]
    )
    assert abs(chi2.mean() - (k - 1)) < 4 * chi2.std() / np.sqrt(chi2.size)


def test_crawl_grid_recovers_slots_under_recording_delay(rng):
    slots = np.sort(rng.choice(np.arange(500), 120, replace=False))
    slots -= slots[0]
    t = 7.0 + slots * 0.5 + rng.uniform(0, 0.1, slots.size)  # c = 0.5, delays below c/4
    g = crawl_grid(t, 0.5)
    assert g.slots.tolist() == slots.tolist() and g.n_off_grid == 0 and g.n_shifted == 0
    assert g.detection_probability == pytest.approx(119 / slots[-1])
    assert g.change_rate == pytest.approx(-np.log1p(-119 / slots[-1]) / 0.5)


# ----------------------------------------------------------------------------- poisson_gof on crawl data
def test_poisson_gof_on_crawl_detections_runs_the_crawl_tests(rng):
    t = _crawled_poisson(rng, 0.3, 1500)
    res = poisson_gof(t, crawl_interval=1.0, n_resamples=99, rng=0)
    assert res.jittered is None and res.crawl_grid is not None
    assert res.crawl_grid.n_crawls == round(t[-1] - t[0])
    ran = {k for k, r in res.tests.items() if r.ran}
    assert ran == set(CRAWL_TESTS) - {"hour_of_day", "day_of_week"}  # floats: no clock
    for k in ("ks_lilliefors", "anderson_darling", "ks_bootstrap", "ad_bootstrap", "cvm_bootstrap", "time_rescaling"):
        assert res.tests[k].status == "not applicable" and "whole numbers of crawl intervals" in res.tests[k].reading
    assert res.qq.distribution == "geometric" and res.qq.observed.size == res.n_events - 1
    # Δ̂ = -log(1 - q̂)/c within 4 standard errors of Δ = 0.3 (delta method: SE ≈ sqrt(q / (N (1-q))) / c)
    q = res.crawl_grid.detection_probability
    assert abs(res.crawl_grid.change_rate - 0.3) < 4 * np.sqrt(q / (1500 * (1 - q)))
    assert "change rate" in res.summary()


def test_crawl_detections_of_poisson_changes_are_not_rejected():
    """The newcomer's report: hourly crawls of Poisson changes at Δ = 0.3/h (a quarter of the
    mean gap between detections) were rejected on every replication, by Lilliefors on
    detections jittered into their crawl interval. On the crawl grid the family-wise rejection
    rate of poisson_gof is at most α: 60 datasets of about 180 detections, 99.9% binomial bound
    of Bin(60, 0.05) (jittered Lilliefors rejects about 98% of them)."""
    d = 60
    reject = 0
    for i in range(d):
        t = _crawled_poisson(np.random.default_rng(100 + i), 0.3, 700)
        res = poisson_gof(t, crawl_interval=1.0, n_resamples=39, rng=i)
        reject += bool(res.rejected())
    assert reject <= stats.binom.ppf(0.999, d, 0.05)


def test_every_crawl_detected_is_insufficient_not_consistent():
    t = np.arange(1.0, 40.0)  # a detection at every crawl: q̂ = 1, nothing to compare
    res = poisson_gof(t, crawl_interval=1.0, n_resamples=39, rng=0)
    for k in ("geometric_gaps", "laplace_trend", "gap_cv", "dispersion_index"):
        assert res.tests[k].status == "insufficient data" and "q̂ = 1" in res.tests[k].reading
    assert "No test rejects" not in res.summary()


def test_irregular_schedule_warns(rng):
    t = np.cumsum(rng.uniform(0.5, 4.0, 200))  # crawl times nowhere near a grid of step 1
    with pytest.warns(StatisticalWarning, match="do not sit on a regular crawl grid"):
        res = poisson_gof(t, crawl_interval=1.0, n_resamples=39, rng=0)
    assert res.crawl_grid.n_off_grid > 40


def test_crawl_detections_with_datetimes_get_the_clock_tests(rng):
    t = _crawled_poisson(rng, 0.1, 24 * 7 * 30)  # 30 weeks of hourly crawls
    stamps = np.datetime64("2021-01-04T00:07:00") + (t * 3600).astype("timedelta64[s]")
    with warnings.catch_warnings():
        warnings.simplefilter("error", StatisticalWarning)  # on the grid, no caveat
        res = poisson_gof(stamps, crawl_interval=1.0, n_resamples=39, rng=0)
    assert res.tests["hour_of_day"].ran and res.tests["day_of_week"].ran
    crawls = res.tests["hour_of_day"].details["crawls"]  # hourly crawls: every hour of day as often, ±1
    assert len(crawls) == 24 and max(crawls) - min(crawls) <= 1
    assert sum(1 for k, r in res.tests.items() if r.ran and k != "burstiness") == 9
