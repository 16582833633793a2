"""The crawl plan of the page table: the index allocation, the revisit bound, the plug-in."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changerate_bayes import allocate_crawls
from changerate_bayes.replay import freshness_index


def _table(mean, lower=None, upper=None, level=0.9):
    mean = np.asarray(mean, dtype=float)
    t = pd.DataFrame(
        {
            "page": [f"p{i}" for i in range(mean.size)],
            "mean_interval_h": 6.0,
            "posterior_mean": mean,
            "posterior_lower": mean if lower is None else lower,
            "posterior_upper": mean if upper is None else upper,
        }
    )
    t.attrs["level"] = level
    return t


def test_equal_pages_get_round_robin():
    out = allocate_crawls(_table([0.5, 0.5, 0.5, 0.5]), 2.0, policy="index_mean")
    np.testing.assert_allclose(out["crawl_interval_h"], 48.0, rtol=1e-9)  # N/B = 2 days each
    assert out.attrs["policy"] == "index_mean" and not out["at_revisit_bound"].any()


def test_auto_is_the_index_from_the_total_change_rate_up_and_round_robin_below():
    t = _table([0.1, 0.4, 2.5])  # 3 changes a day in all
    hi = allocate_crawls(t, 3.0)
    assert hi.attrs["policy"] == "index_mean"
    np.testing.assert_allclose(hi["crawl_interval_h"], allocate_crawls(t, 3.0, policy="index_mean")["crawl_interval_h"])
    lo = allocate_crawls(t, 2.9)
    assert lo.attrs["policy"] == "uniform"
    np.testing.assert_allclose(lo["crawl_interval_h"], 24 * 3 / 2.9)


def test_intervals_equalise_the_index_at_the_price():
    # Known rates (point-mass posteriors): each page's interval I_i solves ν_{Δ_i}(I_i) = λ, the
    # Lagrangian condition, with Σ 1/I_i = B (the index is tabulated 40 nodes a decade and
    # interpolated linearly in log-log: error <= h²/8 = 4.2e-4 times the curvature of log ν, at most 1)
    rates = np.array([0.05, 0.2, 1.0, 3.0])
    out = allocate_crawls(_table(rates), 6.0, policy="index_mean")
    days = out["crawl_interval_h"].to_numpy() / 24
    nu = freshness_index(rates, days)
    np.testing.assert_allclose(nu, out.attrs["price"], rtol=5e-4)
    assert out["crawls_per_day"].sum() == pytest.approx(6.0, rel=1e-9)


def test_weights_shift_crawls_to_the_heavier_page():
    out = allocate_crawls(_table([1.0, 1.0]), 2.0, weights=[3.0, 1.0], policy="index_mean")
    days = out["crawl_interval_h"].to_numpy() / 24
    np.testing.assert_allclose(freshness_index([1.0, 1.0], days, weight=[3.0, 1.0]), out.attrs["price"], rtol=5e-4)
    assert days[0] < days[1]


def test_a_page_the_index_would_drop_gets_the_bound_and_is_flagged():
    # Δ = 200/day: its index never exceeds 1/Δ = 0.005 day, below the price here, so the index
    # alone would never crawl it; it gets M = 4·N/B = 4·3/1.5 = 8 days.
    out = allocate_crawls(_table([0.1, 0.2, 200.0]), 1.5, policy="index_mean")
    assert out["at_revisit_bound"].tolist() == [False, False, True]
    assert out["crawl_interval_h"].iloc[2] == pytest.approx(8 * 24)
    assert out.attrs["max_interval_h"] == pytest.approx(8 * 24) and out.attrs["n_at_revisit_bound"] == 1
    assert out["crawls_per_day"].sum() == pytest.approx(1.5, rel=1e-9)


def test_plug_in_never_gives_an_infinite_interval():
    # optimal_crawl_rates gives the fast page rate 0; the plan gives it the bound and scales the rest
    out = allocate_crawls(_table([0.1, 0.2, 200.0]), 1.5, policy="plug_in")
    assert np.isfinite(out["crawl_interval_h"]).all()
    assert out["at_revisit_bound"].tolist() == [False, False, True]
    assert out["crawl_interval_h"].iloc[2] == pytest.approx(8 * 24)
    assert out["crawls_per_day"].sum() == pytest.approx(1.5, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    rates=st.lists(st.floats(0.0, 500.0), min_size=1, max_size=12),
    budget=st.floats(0.05, 200.0),
    spread=st.floats(0.0, 3.0),
    factor=st.floats(1.0, 10.0),
)
def test_every_interval_is_finite_and_bounded_and_the_budget_is_spent(rates, budget, spread, factor):
    m = np.asarray(rates)
    lo, hi = m * math.exp(-spread), m * math.exp(spread)
    out = allocate_crawls(_table(m, lo, hi), budget, max_interval_factor=factor, policy="index_mean")
    h = out["crawl_interval_h"].to_numpy()
    assert np.isfinite(h).all() and (h > 0).all()
    assert (h <= factor * m.size / budget * 24 * (1 + 1e-12)).all()
    assert out["crawls_per_day"].sum() == pytest.approx(budget, rel=1e-6)


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(budget=0.0), ValueError, "`budget`"),
        (dict(budget="a"), TypeError, "`budget`"),
        (dict(budget=1.0, policy="best"), ValueError, "`policy`"),
        (dict(budget=1.0, max_interval_factor=0.5), ValueError, "`max_interval_factor`"),
        (dict(budget=1.0, weights=[1.0]), ValueError, "`weights`"),
    ],
)
def test_input_errors(kwargs, err, match):
    with pytest.raises(err, match=match):
        allocate_crawls(_table([0.1, 0.2]), **kwargs)


def test_bad_posterior_mean_names_the_row():
    with pytest.raises(ValueError, match="'posterior_mean'.*row 1"):
        allocate_crawls(_table([0.1, np.nan]), 1.0)
