"""interval_calibration: size under the Poisson model and power against a non-Poisson one, ragged pages."""

import numpy as np
import pytest
from scipy import stats

from changerate_bayes import CrawlHistory, simulate_history
from changerate_bayes.diagnostics import interval_calibration


def _ragged_poisson(n_pages, rng):
    """Poisson changes seen by Poisson crawls, pages of 150..400 crawls, rates in [0.2, 2] per crawl."""
    lengths = rng.integers(150, 401, n_pages)
    delta = rng.uniform(0.2, 2.0, n_pages)
    tau = rng.exponential(1.0, lengths.sum())
    q = -np.expm1(-np.repeat(delta, lengths) * tau)
    changed = (rng.random(tau.size) < q).astype(np.int8)
    return CrawlHistory.from_segments(changed, tau, lengths=lengths, crawl_rate=1.0)


def test_size_under_the_model_is_the_nominal_level():
    rng = np.random.default_rng(2024)
    h = _ragged_poisson(400, rng)
    res = interval_calibration(h)
    ok = res.status == "ok"
    assert ok.sum() >= 390
    # rejections at 5% among m tested pages ~ Binomial(m, 0.05) under the (asymptotic) null:
    # accept the central 99.9% binomial interval
    m = int(ok.sum())
    lo, hi = stats.binom.ppf([0.0005, 0.9995], m, 0.05)
    assert lo <= res.rejected(0.05).sum() <= hi
    # p-values roughly uniform: KS against U(0, 1) at the 0.1% level
    assert stats.kstest(res.pvalue[ok], "uniform").pvalue > 1e-3


def test_power_when_detection_does_not_grow_with_the_interval():
    # I independent of τ (probability 0.4 whatever the interval): not Poisson changes
    rng = np.random.default_rng(7)
    n, k = 50, 300
    tau = rng.exponential(1.0, (n, k))
    changed = (rng.random((n, k)) < 0.4).astype(np.int8)
    res = interval_calibration(CrawlHistory(changed, tau, 1.0))
    assert (res.status == "ok").all()
    assert res.rejected(0.05).mean() > 0.9


def test_matches_a_direct_computation_on_one_page():
    h = simulate_history(0.7, 1.0, 60, rng=3)
    res = interval_calibration(h, n_bins=3)
    from changerate_bayes import final_estimates

    d = final_estimates(h, "mle")
    order = np.argsort(h.intervals, kind="stable")
    bins = np.array_split(order, 3)  # 60 crawls: 20 per bin, like rank * 3 // 60
    x2 = 0.0
    for idx in bins:
        q = -np.expm1(-d * h.intervals[idx])
        x2 += (h.changed[idx].sum() - q.sum()) ** 2 / (q * (1 - q)).sum()
    assert res.statistic[0] == pytest.approx(x2, rel=1e-12)
    assert res.pvalue[0] == pytest.approx(stats.chi2.sf(x2, 2), rel=1e-12)


def test_insufficient_and_bad_input():
    h = CrawlHistory.from_segments([0, 1, 0, 0, 1, 1, 0], [1.0] * 7, lengths=[3, 4])
    res = interval_calibration(h)
    assert res.status.tolist() == ["insufficient data"] * 2 and np.isnan(res.pvalue).all()
    with pytest.raises(ValueError, match="needs the crawl intervals"):
        interval_calibration(CrawlHistory([0, 1, 1], crawl_rate=1.0))
    with pytest.raises(ValueError, match="`n_bins` must be >= 2"):
        interval_calibration(simulate_history(1.0, 1.0, 50, rng=0), n_bins=1)
