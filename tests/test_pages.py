"""The per-page table against hand derivations and the underlying functions."""

import warnings

import numpy as np
import pandas as pd
import pytest

from changerate_bayes import (
    CrawlHistory,
    StatisticalWarning,
    allocate_crawls,
    estimate_pages,
    final_estimates,
    posterior_summary,
)
from changerate_bayes.crawllog.table import IDENTIFIED_MIN, PAGE_COLUMNS, RATE_COLUMNS, merge_notes, recommend_rate
from changerate_bayes.estimators import METHODS
from changerate_bayes.io import read_frame
from changerate_bayes.scheduling import optimal_crawl_rates


def _log():
    # page a: 3 observations every 6 h, changes at the 1st; page b: 2 observations of 12 h, both changed
    df = pd.DataFrame(
        {
            "page": ["a", "b", "a", "a", "b", "a", "b"],
            "fetch_time": [
                "2024-01-01T00:00Z",
                "2024-01-01T00:00Z",
                "2024-01-01T06:00Z",
                "2024-01-01T12:00Z",
                "2024-01-01T12:00Z",
                "2024-01-01T18:00Z",
                "2024-01-02T00:00Z",
            ],
            "digest": ["x", "u", "y", "y", "v", "y", "w"],
        }
    )
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
    np.testing.assert_allclose(t["posterior_upper"], post.upper * 24, rtol=1e-15)
    # a: the posterior's interval; b saw a change at both crawls (12 h each): only bounded below,
    # 1 − e^{−12 Δ_L} = √(1 − 0.9) per hour, and no upper end
    assert t["rate_bound"].tolist() == ["", "lower"]
    np.testing.assert_allclose(t["rate_lower_per_day"], [post.lower[0] * 24, -np.log1p(-np.sqrt(0.1)) / 12 * 24])
    assert t["rate_upper_per_day"].iloc[0] == pytest.approx(post.upper[0] * 24, rel=1e-15)
    assert np.isposinf(t["rate_upper_per_day"].iloc[1])
    # two pages of 3 and 2 crawls: too little evidence for the MLE, so the posterior mean is the rate
    assert t["rate_method"].tolist() == ["posterior_mean", "posterior_mean"]
    np.testing.assert_array_equal(t["rate_per_day"], t["posterior_mean"])
    assert (t["rate_lower_per_day"] < t["rate_per_day"]).all() and (t["rate_per_day"] < t["rate_upper_per_day"]).all()
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
    h = CrawlHistory.from_segments(
        [1, 0, 0, 1, 1, 0], [0.25, 0.25, 1.0, 0.5, 0.5, 2.0], lengths=[2, 4], crawl_rate=[4.0, 1.0]
    )
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


def _two_pages():
    # page "steady": 40 crawls every 6 h, the odd ones changed (20 changed, 20 not);
    # page "thin": 12 crawls every 6 h, 2 changed
    changed = [1, 0] * 20 + [1, 1] + [0] * 10
    return CrawlHistory.from_segments(
        changed, [6.0] * 52, lengths=[40, 12], crawl_rate=[1 / 6, 1 / 6], page_ids=["steady", "thin"]
    )


def test_recommended_rate_is_the_chosen_methods_value_per_day():
    h = _two_pages()
    with pytest.warns(StatisticalWarning, match="assume Poisson crawling"):  # a fixed schedule
        t = estimate_pages(h, methods=METHODS, budget=4.0)
    assert t["rate_method"].tolist() == ["mle", "posterior_mean"]
    # steady: equal intervals, so 1 − e^{−6Δ} = 20/40 and Δ = ln 2 / 6 per hour = 4 ln 2 per day
    assert t["rate_per_day"].iloc[0] == pytest.approx(4 * np.log(2), rel=1e-12)
    assert t["rate_per_day"].iloc[0] == t["mle"].iloc[0]
    assert t["rate_per_day"].iloc[1] == t["posterior_mean"].iloc[1]
    np.testing.assert_allclose(t["mle"], final_estimates(h, "mle") * 24, rtol=1e-15)
    np.testing.assert_allclose(t["posterior_mean"], posterior_summary(h).mean * 24, rtol=1e-15)
    # the same page in a history whose time unit is the day: the same rates per day
    h_days = CrawlHistory.from_segments(
        h.flat_changed, h.flat_intervals / 24, lengths=h.lengths, crawl_rate=[4.0, 4.0], page_ids=h.page_ids
    )
    t_days = estimate_pages(h_days, budget=4.0, unit_hours=24.0)
    assert t_days["rate_per_day"].iloc[0] == pytest.approx(4 * np.log(2), rel=1e-12)
    np.testing.assert_allclose(t_days["rate_per_day"], t["rate_per_day"], rtol=1e-9)


def test_recommend_rate_thresholds():
    n_changes = np.array([9, 10, 10, 30, 0, 10])
    n_crawls = np.array([40, 20, 19, 40, 40, 20])
    mle = np.array([1.0, 2.0, 3.0, 4.0, 0.0, np.inf])
    rate, method = recommend_rate(n_changes, n_crawls, mle, np.full(6, 7.0))
    # 9 changed: too few; 10 and 10: the MLE; 10 and 9 unchanged: too few; 30 and 10: the MLE; a zero or
    # infinite MLE is never chosen
    assert method.tolist() == ["posterior_mean", "mle", "posterior_mean", "mle", "posterior_mean", "posterior_mean"]
    np.testing.assert_array_equal(rate, [7.0, 2.0, 7.0, 4.0, 7.0, 7.0])
    assert IDENTIFIED_MIN == 10


def test_default_table_has_one_rate_and_no_other_estimator():
    t = estimate_pages(_two_pages(), budget=4.0)
    cols = t.columns.tolist()
    assert cols[: len(PAGE_COLUMNS) + len(RATE_COLUMNS)] == [*PAGE_COLUMNS, *RATE_COLUMNS]
    assert {"crawls_per_day", "crawl_interval_h"} <= set(cols) and not set(METHODS) & set(cols)
    assert "rate_per_day" in t.attrs["rate_rule"] and "changes per day" in t.attrs["rate_rule"]


def test_notes_appear_once():
    # crawls on a fixed 6 h schedule: naive, lln, sa and sam assume Poisson crawling and say so in one note
    h = _two_pages()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = estimate_pages(h, methods=METHODS, budget=4.0)
    notes = t.attrs["warnings"]
    poisson = [n for n in notes if "assume Poisson crawling" in n]
    assert len(poisson) == 1 and poisson[0].startswith("methods 'naive', 'lln', 'sa', 'sam' assume Poisson")
    assert not any(n.startswith("method 'lln'") for n in notes)
    assert len(notes) == len(set(notes))
    messages = [str(w.message) for w in caught]
    assert sorted(messages) == sorted(notes)  # each note issued once


def test_merge_notes_keeps_distinct_notes():
    merged = merge_notes(["method 'a' assumes X.", "method 'b' assumes X.", "method 'c' assumes Y.", "other", "other"])
    assert merged == ["methods 'a', 'b' assume X.", "method 'c' assumes Y.", "other"]


def test_dask_partitions_state_each_check_once():
    from changerate_bayes.crawllog.table import one_note_per_check as _one_note_per_check

    notes = [
        "methods 'lln', 'sa' assume Poisson crawling: D = 0.4",
        "methods 'lln', 'sa' assume Poisson crawling: D = 0.5",
        "method 'regular' assumes crawls on a fixed schedule: on 2 of 9 page(s), worst 0.03",
        "method 'regular' assumes crawls on a fixed schedule: on 1 of 7 page(s), worst 1.5e-02",
    ]
    out = _one_note_per_check(notes)
    assert len(out) == 2 and out[0].startswith("methods 'lln', 'sa' assume Poisson crawling: D = 0.4 (")
    assert "2 parts failed it" in out[0] and out[1].startswith(notes[2] + " (")
