"""Each diagnostic test against hand-derived values and the libraries it follows."""

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.diagnostic import lilliefors

from changerate_bayes.diagnostics import crawl_calibration, segment_rates
from changerate_bayes.diagnostics._burstiness import burstiness_coefficient, gap_cv
from changerate_bayes.diagnostics._counts import (
    cochran_ok,
    dispersion_statistic,
    seasonal_exposure,
    seasonality_statistic,
)
from changerate_bayes.diagnostics._crawl import (
    calibration_from_windows,
    calibration_table,
    fit_cloglog_rate,
    fit_rate_grouped,
    g_statistic,
)
from changerate_bayes.diagnostics._exponential import edf_statistics, lilliefors_pvalues
from changerate_bayes.diagnostics._qq import exponential_qq
from changerate_bayes.diagnostics._segments import Segments, rescaled_gaps
from changerate_bayes.diagnostics._trend import laplace_statistic, mil_hdbk_189_statistic

TIMES = np.array([0.0, 1.0, 2.0, 3.0, 10.0])


def test_laplace_by_hand():
    # inner u = 0.1, 0.2, 0.3; z = (0.2 - 0.5) * sqrt(12 * 3) = -1.8
    z, p = laplace_statistic(TIMES)
    assert z == pytest.approx(-1.8, abs=1e-12)
    assert p == pytest.approx(2 * 0.0359303191129258, rel=1e-9)  # Φ(-1.8), normal table


def test_mil_hdbk_189_by_hand():
    # 2 (log 10/1 + log 10/2 + log 10/3) = 2 log(1000/6), chi-square with 6 df
    stat, p, df = mil_hdbk_189_statistic(TIMES)
    assert stat == pytest.approx(2 * np.log(1000 / 6), rel=1e-12)
    assert df == 6
    assert p == pytest.approx(2 * stats.chi2.sf(2 * np.log(1000 / 6), 6), rel=1e-12)


def test_trend_statistics_are_vectorised_over_rows():
    rows = np.stack([TIMES, TIMES * 2 + 1, np.array([0.0, 5, 6, 7, 10])])
    z, p = laplace_statistic(rows)
    assert z[:2] == pytest.approx([-1.8, -1.8])  # location-scale invariant
    assert z[2] == pytest.approx((0.6 - 0.5) * 6)
    stat, _, _ = mil_hdbk_189_statistic(rows)
    assert stat[1] == pytest.approx(stat[0])


def test_dispersion_by_hand():
    # inner events 1, 2, 3, 6, 7 in windows (0, 5], (5, 10]: counts 3, 2; expected 2.5
    index, chi2, p, counts = dispersion_statistic(np.array([0.0, 1, 2, 3, 6, 7, 10]), 2)
    assert counts.tolist() == [3, 2]
    assert chi2 == pytest.approx(0.2) and index == pytest.approx(0.2)
    assert p == pytest.approx(stats.chi2.sf(0.2, 1))


def test_seasonal_exposure_by_hand():
    # (6 h, 30 h) on a 24-h clock with 4 bins of 6 h: bin 0 [0, 6): 6 h (24-30); others 6 h each
    assert seasonal_exposure(6.0, 30.0, 24.0, 4).tolist() == [6.0, 6.0, 6.0, 6.0]
    assert seasonal_exposure(3.0, 9.0, 24.0, 4).tolist() == [3.0, 3.0, 0.0, 0.0]
    # a week from Monday 12:00: one full week, a day per weekday
    assert seasonal_exposure(12.0, 180.0, 168.0, 7).tolist() == [24.0] * 7


def test_seasonality_counts_and_cochran():
    # events at hours 1, 2, 25, 26 ... over 30 days: inner events all in 00-03h
    clock = np.sort(np.concatenate([np.arange(30) * 24 + 1.5, np.arange(30) * 24 + 2.5]))
    chi2, p, counts, expected = seasonality_statistic(clock, "hour_of_day")
    assert counts.sum() == 58 and counts[1] + counts[2] == 58
    assert expected.sum() == pytest.approx(58)
    assert p < 1e-10
    assert not cochran_ok(expected)  # 58 events over 24 bins: expected 2.4 < 5
    assert cochran_ok(np.full(24, 5.0)) and not cochran_ok(np.array([0.9] + [10.0] * 23))


def test_gap_cv_and_burstiness_by_hand():
    assert gap_cv(np.array([1.0, 3.0])) == pytest.approx(np.sqrt(2) / 2)
    assert burstiness_coefficient(np.sqrt(2) / 2) == pytest.approx((np.sqrt(2) / 2 - 1) / (np.sqrt(2) / 2 + 1))
    assert burstiness_coefficient(1.0) == 0.0
    assert gap_cv(np.ones((3, 4))).tolist() == [0.0, 0.0, 0.0]


def test_edf_statistics_match_scipy_and_statsmodels(rng):
    gaps = rng.exponential(2.0, size=(3, 40))
    vec = edf_statistics(gaps)
    for i in range(3):
        for s in ("ks", "ad", "cvm"):
            res = stats.goodness_of_fit(
                stats.expon, gaps[i], known_params={"loc": 0}, statistic=s, n_mc_samples=19, rng=0
            )
            assert vec[s][i] == pytest.approx(res.statistic, rel=1e-10)
        d, p = lilliefors(gaps[i], dist="exp", pvalmethod="table")
        assert vec["ks"][i] == pytest.approx(d, rel=1e-12)
        assert lilliefors_pvalues(vec["ks"][i : i + 1], 40)[0] == pytest.approx(p, rel=1e-12)
        ad = stats.anderson(gaps[i], dist="expon", method="interpolate")
        assert vec["ad"][i] == pytest.approx(ad.statistic, rel=1e-10)


def test_plain_ks_pvalue_is_scipy_kstest(rng):
    # the pitfall of the size study: KS with the plug-in rate and the known-parameter p-value
    g = rng.exponential(size=30)
    d = edf_statistics(g)["ks"]
    res = stats.kstest(g, "expon", args=(0, g.mean()), method="exact")
    assert d == pytest.approx(res.statistic) and stats.kstwo.sf(d, 30) == pytest.approx(res.pvalue)


def test_grouped_rate_fit_matches_statsmodels_glm(rng):
    tau = np.array([0.5, 1.0, 2.0, 4.0])
    n_w = rng.integers(20, 60, size=(5, 4))
    n_d = rng.binomial(n_w, -np.expm1(-0.4 * tau))
    vec = fit_rate_grouped(n_w, n_d, tau)
    for i in range(5):
        assert vec[i] == pytest.approx(fit_cloglog_rate(n_w[i], n_d[i], tau)[0], rel=1e-7)
    # the score of the MLE (paper eq. 15, grouped) vanishes at the fit
    d = vec[0]
    assert np.sum(n_d[0] * tau / np.expm1(d * tau)) == pytest.approx(np.sum((n_w[0] - n_d[0]) * tau), rel=1e-8)
    assert np.isnan(fit_rate_grouped(np.array([5, 5]), np.array([5, 5]), np.array([1.0, 2.0])))


def test_g_statistic_by_hand():
    # one bin, 10 windows, 4 detected, H0 probability 0.5: G = 2 [4 log(0.4/0.5) + 6 log(0.6/0.5)]
    g = g_statistic(np.array([10]), np.array([4]), np.array([0.5]))
    assert g == pytest.approx(2 * (4 * np.log(0.8) + 6 * np.log(1.2)))


def test_calibration_table_counts_windows_with_a_detection():
    times = np.array([0.9, 1.2, 3.7, 3.8])
    edges = np.array([0.5, 1.5, 3.5, 7.5])  # windows of 1, 2, 4 crawl intervals
    n_w, n_d = calibration_table(times, edges, np.array([1, 2, 4]), np.array([1, 2, 4]))
    assert n_w.tolist() == [1, 1, 1] and n_d.tolist() == [1, 0, 1]


def test_crawl_calibration_glm_and_statsmodels_agree(rng):
    changes = np.sort(rng.uniform(0, 3000, 1500))
    det = np.unique(np.ceil(changes / 0.2) * 0.2)
    res = crawl_calibration(det, 0.2, rng=1)
    assert res.ran and 0 <= res.pvalue <= 1
    tau = np.array(res.details["tau"])
    d2 = fit_rate_grouped(np.array(res.details["n_windows"]), np.array(res.details["n_detected"]), tau)
    assert res.details["delta"] == pytest.approx(float(d2), rel=1e-6)
    # the rate is recovered within 4 standard errors (true Δ = 0.5 per unit)
    assert abs(res.details["delta"] - 0.5) < 4 * res.details["delta_se"]


def test_crawl_calibration_detects_bursts_spread_over_crawls(rng):
    # bursts of 6 changes spread over 3 h = 12 crawl intervals: short windows see a change
    # more often, long ones less often, than 1 - exp(-Δτ) with one Δ allows
    parents = np.sort(rng.uniform(0, 4000, 200))
    changes = np.sort((parents[:, None] + rng.uniform(0, 3.0, (200, 6))).ravel())
    det = np.unique(np.ceil(changes / 0.25) * 0.25)
    res = crawl_calibration(det, 0.25, rng=7)
    assert res.ran and res.pvalue < 1e-4


def test_crawl_calibration_cannot_see_bursts_shorter_than_a_crawl(rng):
    # 5 changes within 0.05 h merge into one detection: the detections are Poisson again
    parents = np.sort(rng.uniform(0, 4000, 800))
    changes = np.sort((parents[:, None] + rng.uniform(0, 0.05, (800, 5))).ravel())
    det = np.unique(np.ceil(changes / 0.25) * 0.25)
    res = crawl_calibration(det, 0.25, rng=7)
    assert res.ran and res.pvalue > 0.01  # H0 holds for the detections (fixed seed, no retry)


def test_calibration_from_windows_with_too_few_windows():
    r = calibration_from_windows(np.array([1.0, 2.0]), np.array([0.5, 1.5]), np.array([1]), np.array([1, 2]), 1.0)
    assert r.status == "insufficient data" and r.pvalue is None


def test_segments_cumulative_rate_and_rescaling():
    seg = Segments(np.array([0.0, 10.0, 20.0]), np.array([10, 30]), np.array([1.0, 3.0]), 0.05)
    assert seg.cumulative_rate(np.array([5.0, 10.0, 15.0, 20.0])).tolist() == [5.0, 10.0, 25.0, 40.0]
    assert rescaled_gaps(np.array([5.0, 15.0]), seg).tolist() == [20.0]


def test_segment_rates_finds_a_rate_change(rng):
    t = np.concatenate([np.sort(rng.uniform(0, 200, 200)), np.sort(rng.uniform(200, 220, 200))])
    seg = segment_rates(t)
    assert seg.n_segments == 2
    assert seg.edges[1] == pytest.approx(200, abs=1.0)
    assert seg.counts.sum() == 400
    # rates within 4 Poisson standard errors of 1 and 10
    assert abs(seg.rates[0] - 1.0) < 4 * np.sqrt(1.0 / 200) and abs(seg.rates[1] - 10.0) < 4 * np.sqrt(10 / 20)


def test_segment_rates_bad_input():
    with pytest.raises(ValueError, match="`p0` must be in"):
        segment_rates([0.0, 1.0, 2.0], p0=1.5)
    with pytest.raises(ValueError, match="at least two distinct times"):
        segment_rates([1.0, 1.0])


def test_qq_by_hand():
    qq = exponential_qq(np.array([1.0, 2.0, 3.0]), n_simulations=50, rng=0)
    # mean 2; quantiles -2 log(1 - (i - 1/2)/3)
    assert qq.theoretical == pytest.approx(-2 * np.log(1 - (np.arange(1, 4) - 0.5) / 3))
    assert qq.observed.tolist() == [1.0, 2.0, 3.0]
    assert np.all(qq.lower <= qq.upper)


def test_qq_envelope_covers_about_level_of_points_under_h0(rng):
    # pointwise 95% envelope: on exponential data about 5% of points fall outside; the
    # points are dependent, so the tolerance is the one-sample bound from 40 datasets
    out = [exponential_qq(rng.exponential(size=200), n_simulations=199, rng=i).fraction_outside() for i in range(40)]
    assert 0.0 < np.mean(out) < 0.15


def test_holm_matches_statsmodels(rng):
    from statsmodels.stats.multitest import multipletests

    from changerate_bayes.diagnostics._gof import holm_reject

    # a few cases only: multipletests runs gc.collect() on every call
    cases = [
        rng.uniform(0, 0.1, size=12),
        np.array([0.01, 0.04, 0.03, 0.005]),
        np.array([0.2]),
        np.array([0.0125, 0.0125, 0.05, 0.3]),
    ]
    for p in cases:
        assert holm_reject(p, 0.05).tolist() == multipletests(p, alpha=0.05, method="holm")[0].tolist()
    assert holm_reject(np.array([]), 0.05).size == 0


def test_cached_bayesian_blocks_equal_astropy(rng):
    from astropy.stats import bayesian_blocks

    from changerate_bayes.diagnostics._segments import fit_segments

    t = np.sort(np.concatenate([rng.uniform(0, 100, 150), rng.uniform(40, 45, 60), [50.0, 50.0]]))
    assert fit_segments(t).edges[1:-1].tolist() == bayesian_blocks(t, fitness="events", p0=0.05)[1:-1].tolist()
