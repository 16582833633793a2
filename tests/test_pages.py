"""The per-page table against hand derivations and the underlying functions."""

import numpy as np
import pandas as pd
import pytest

from changerate_bayes import CrawlHistory, allocate_crawls, estimate_pages, final_estimates, posterior_summary
from changerate_bayes.io import read_frame
from changerate_bayes.scheduling import optimal_crawl_rates


def _log():
    # page a: 3 observations every 6 h, changes at the 1st; page b: 2 observations of 12 h, both changed
    df = pd.DataFrame({
        "page": ["a", "b", "a", "a", "b", "a", "b"],
        "fetch_time": ["2024-01-01T00:00Z", "2024-01-01T00:00Z", "2024-01-01T06:00Z", "2024-01-01T12:00Z",
                       "2024-01-01T12:00Z", "2024-01-01T18:00Z", "2024-01-02T00:00Z"],
        "digest": ["x", "u", "y", "y", "v", "y", "w"],
    })
    return read_frame(df)


def test_table_from_a_log_matches_hand_derivation():
    log = _log()
    t = estimate_pages(log, methods=["naive", "lln", "mle"], budget=3.0)
    assert t["page"].tolist() == ["a", "b"]
    assert t["n_crawls"].tolist() == [3, 2] and t["n_changes"].tolist() == [1, 2]
    assert t["mean_interval_h"].tolist() == [6.0, 12.0]
    assert t["first_visit"].tolist() == [pd.Timestamp("2024-01-01T00:00Z")] * 2
    assert t["last_visit"].tolist() == [pd.Timestamp("2024-01-01T18:00Z"), pd.Timestamp("2024-01-02T00:00Z")]
    # naive = p Î/k with p = 1/6 per hour, per day x24: a: 4 * 1/3; b: 2 * 2/2
    np.testing.assert_allclose(t["naive"], [4 / 3, 2.0], rtol=1e-15)
    # LLN (α = 1): p Î / (k + 1 − Î): a: 4 * 1/3; b: 2 * 2/1
    np.testing.assert_allclose(t["lln"], [4 / 3, 4.0], rtol=1e-15)
    # MLE with equal intervals: 1 − e^{−Δτ} = Î/k -> a: −ln(2/3)/6 per hour; b: every crawl changed -> inf
    np.testing.assert_allclose(t["mle"].iloc[0], -np.log(2 / 3) / 6 * 24, rtol=1e-12)
    assert np.isinf(t["mle"].iloc[1])
    post = posterior_summary(log.history, level=0.9)
    np.testing.assert_allclose(t["posterior_mean"], post.mean * 24, rtol=1e-15)
    np.testing.assert_allclose(t["posterior_lower"], post.lower * 24, rtol=1e-15)
    assert (t["posterior_lower"] < t["posterior_mean"]).all() and (t["posterior_mean"] < t["posterior_upper"]).all()
    # the recommended plan: the index's mean form from the total change rate up, round robin below
    chosen = "index_mean" if 3.0 >= t["posterior_mean"].sum() else "uniform"
    assert t.attrs["policy"] == chosen
    assert t["crawls_per_day"].sum() == pytest.approx(3.0, rel=1e-12)
    np.testing.assert_allclose(t["crawl_interval_h"], 24 / t["crawls_per_day"], rtol=1e-15)
    # the plug-in allocation (no page below the revisit bound here: both rates > 1/M = 3/(4·2))
    expect = optimal_crawl_rates(post.mean * 24, 1.0, 3.0)
    plug = allocate_crawls(t, 3.0, policy="plug_in")
    np.testing.assert_allclose(plug["crawls_per_day"], expect, rtol=1e-15)
    np.testing.assert_allclose(plug["crawl_interval_h"], 24 / expect, rtol=1e-15)
    assert not plug["at_revisit_bound"].any()


def test_default_budget_is_the_crawls_the_log_shows():
    t = estimate_pages(_log(), methods=["lln"])
    assert t.attrs["budget_per_day"] == pytest.approx(24 / 6 + 24 / 12)
    assert t["crawls_per_day"].sum() == pytest.approx(6.0, rel=1e-12)


def test_bare_ragged_history_and_unit():
    h = CrawlHistory.from_segments([1, 0, 0, 1, 1, 0], [0.25, 0.25, 1.0, 0.5, 0.5, 2.0], lengths=[2, 4],
                                   crawl_rate=[4.0, 1.0])
    t = estimate_pages(h, methods=["lln", "mm"], budget=10.0, unit_hours=24.0)  # history in days
    np.testing.assert_allclose(t["lln"], final_estimates(h, "lln"), rtol=1e-15)
    np.testing.assert_allclose(t["mm"], final_estimates(h, "mm"), rtol=1e-15)
    assert t["page"].tolist() == [0, 1] and t["first_visit"].isna().all()
    np.testing.assert_allclose(t["mean_interval_h"], [6.0, 24.0])


def test_bad_arguments():
    log = _log()
    with pytest.raises(ValueError, match="`methods` must be among"):
        estimate_pages(log, methods=["magic"])
    with pytest.raises(ValueError, match="`budget` must be > 0"):
        estimate_pages(log, budget=-1.0)
    with pytest.raises(TypeError, match="`history_or_log` must be a CrawlLog or a CrawlHistory"):
        estimate_pages([1, 0, 1])
