"""The index policy's stationary schedule: against root finding from the definition, its
properties (budget spent, monotonicity, limits), and the commands' outputs."""

import decimal
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.special import gammainc
from scipy.stats import norm

from changerate_bayes.cli import main
from changerate_bayes.crawllog import allocate_crawls, page_table
from changerate_bayes.scheduling import index_crawl_intervals

XI, A = np.polynomial.hermite_e.hermegauss(16)
A = A / A.sum()


# ----------------------------------------------------------------------------- reference
def _index(rate, sd, w, t):
    """w E[ν_Δ(t)], ν_Δ(t) = P(2, Δt)/Δ (regularised incomplete gamma), 16 Gauss-Hermite nodes."""
    d = rate * np.exp(sd * XI) if sd > 0 else np.array([rate])
    a = A if sd > 0 else np.array([1.0])
    return w * np.sum(a * gammainc(2.0, d * t) / d)


def _interval(rate, sd, w, lam, t_min, t_max, cap):
    if rate == 0 or w == 0:
        return cap
    if _index(rate, sd, w, t_min) >= lam:
        return t_min
    top = min(t_max, cap)
    if _index(rate, sd, w, top) < lam:
        return cap
    return math.exp(
        brentq(
            lambda y: math.log(_index(rate, sd, w, math.exp(y)) / lam),
            math.log(t_min),
            math.log(top),
            xtol=1e-15,
            rtol=8.9e-16,
            maxiter=500,
        )
    )


def _reference(rate, sd, w, budget, t_min=1e-4, t_max=1e5, cap=math.inf):
    """brentq on log Σ 1/I_i(λ) = log B over log λ, each I_i by brentq on its own condition."""

    def gap(log_lam):
        return math.log(
            sum(1.0 / _interval(r, s, ww, math.exp(log_lam), t_min, t_max, cap) for r, s, ww in zip(rate, sd, w))
        ) - math.log(budget)

    lo, hi = -5.0, 5.0
    while gap(lo) < 0:
        lo -= 5.0
    while gap(hi) > 0:
        hi += 5.0
    log_lam = brentq(gap, lo, hi, xtol=1e-15, rtol=8.9e-16, maxiter=500)
    lam = math.exp(log_lam)
    return np.array([_interval(r, s, ww, lam, t_min, t_max, cap) for r, s, ww in zip(rate, sd, w)]), lam


CASES = [  # (seed, budget as a multiple of Σ rate, share of point masses)
    (1, 0.05, 0.2),
    (2, 0.3, 0.0),
    (3, 1.0, 0.5),
    (4, 3.0, 0.2),
    (5, 10.0, 1.0),
    (6, 100.0, 0.3),
]


@pytest.mark.parametrize("seed, times, point", CASES)
def test_matches_root_finding_from_the_definition(seed, times, point):
    rng = np.random.default_rng(seed)
    n = 12
    rate = rng.lognormal(math.log(0.5), 1.5, n)
    sd = np.where(rng.random(n) < point, 0.0, rng.uniform(0.01, 2.0, n))
    w = rng.uniform(0.2, 3.0, n)
    budget = times * rate.sum()
    cap = 4.0 * n / budget
    got = index_crawl_intervals(rate, sd, budget, weights=w, max_interval=cap)
    want, lam = _reference(rate, sd, w, budget, cap=cap)
    np.testing.assert_allclose(got.intervals, want, rtol=1e-9)
    assert got.price == pytest.approx(lam, rel=1e-9)
    assert np.sum(1.0 / got.intervals) == pytest.approx(budget, rel=1e-12)


def test_two_equal_pages_by_hand():
    # equal pages share the budget: I = 2/B = 0.5, and λ = ν_1(0.5) = 1 − 1.5 e^{−1/2}
    res = index_crawl_intervals([1.0, 1.0], [0.0, 0.0], 4.0)
    np.testing.assert_allclose(res.intervals, [0.5, 0.5], rtol=1e-13)
    assert res.price == pytest.approx(1.0 - 1.5 * math.exp(-0.5), rel=1e-13)


def test_tiny_and_huge_rates_and_wide_posteriors():
    rate = np.array([5e-300, 1e-12, 1.0, 1e6, 3.0])
    sd = np.array([0.0, 3.0, 8.0, 0.5, 0.0])
    got = index_crawl_intervals(rate, sd, 20.0, max_interval=1e3)
    want, lam = _reference(rate, sd, np.ones(5), 20.0, cap=1e3)
    np.testing.assert_allclose(got.intervals, want, rtol=1e-9)
    assert got.price == pytest.approx(lam, rel=1e-9)


# ----------------------------------------------------------------------------- properties
pages = st.integers(1, 8).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(1e-3, 1e3), min_size=n, max_size=n),
        st.lists(st.one_of(st.just(0.0), st.floats(0.01, 3.0)), min_size=n, max_size=n),
        st.lists(st.floats(0.1, 10.0), min_size=n, max_size=n),
    )
)


@settings(max_examples=60, deadline=None)
@given(p=pages, budget=st.floats(1e-3, 1e3))
def test_the_budget_is_spent_exactly(p, budget):
    rate, sd, w = (np.asarray(x) for x in p)
    cap = 4.0 * rate.size / budget
    res = index_crawl_intervals(rate, sd, budget, weights=w, max_interval=cap, interval_range=(1e-4, math.inf))
    assert (res.intervals >= 1e-4).all() and (res.intervals <= cap).all()
    assert np.sum(1.0 / res.intervals) == pytest.approx(budget, rel=1e-13)


@settings(max_examples=60, deadline=None)
@given(p=pages, budget=st.floats(1e-2, 1e2), j=st.integers(0, 7), factor=st.floats(1.01, 10.0))
def test_a_heavier_page_is_crawled_more_often_and_raises_the_price(p, budget, j, factor):
    rate, sd, w = (np.asarray(x) for x in p)
    j %= rate.size
    before = index_crawl_intervals(rate, sd, budget, weights=w, interval_range=(1e-4, math.inf))
    w2 = w.copy()
    w2[j] *= factor
    after = index_crawl_intervals(rate, sd, budget, weights=w2, interval_range=(1e-4, math.inf))
    assert after.intervals[j] <= before.intervals[j] * (1 + 1e-12)
    others = np.arange(rate.size) != j
    assert (after.intervals[others] >= before.intervals[others] * (1 - 1e-12)).all()
    assert after.price >= before.price * (1 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(p=pages, budget=st.floats(1e-2, 1e2), j=st.integers(0, 7), factor=st.floats(1.01, 3.0))
def test_a_faster_page_is_crawled_more_often_while_its_index_still_grows_with_the_rate(p, budget, j, factor):
    # ∂ν_Δ(t)/∂Δ = (x² e^{−x} − ψ(x))/Δ² >= 0 while x = Δt <= 1.79 (e^x = 1 + x + x²): a point
    # mass whose new rate times its old interval is below that has a larger index up to it
    rate, _, w = (np.asarray(x) for x in p)
    sd = np.zeros(rate.size)
    j %= rate.size
    before = index_crawl_intervals(rate, sd, budget, weights=w, interval_range=(1e-4, math.inf))
    rate2 = rate.copy()
    rate2[j] *= factor
    if rate2[j] * before.intervals[j] > 1.79:
        return
    after = index_crawl_intervals(rate2, sd, budget, weights=w, interval_range=(1e-4, math.inf))
    assert after.intervals[j] <= before.intervals[j] * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(p=pages)
def test_limits_of_the_budget(p):
    rate, sd, w = (np.asarray(x) for x in p)
    n = rate.size
    # beyond N / t_min every page is crawled every t_min (the spend cannot reach the budget)
    big = index_crawl_intervals(rate, sd, 2e4 * n, weights=w, max_interval=10.0)
    np.testing.assert_array_equal(big.intervals, np.full(n, 1e-4))
    # at or below N / M every page is held at the bound M
    small = index_crawl_intervals(rate, sd, 0.5 * n / 1e3, weights=w, max_interval=1e3)
    np.testing.assert_array_equal(small.intervals, np.full(n, 1e3))


def test_pages_that_never_change_get_the_bound_and_alone_share_the_budget():
    res = index_crawl_intervals([0.0, 1.0, 2.0], [0.0, 0.5, 0.0], 3.0, weights=[1.0, 1.0, 0.0], max_interval=4.0)
    assert res.intervals[0] == 4.0 and res.intervals[2] == 4.0
    assert 1.0 / res.intervals[1] == pytest.approx(3.0 - 2 / 4.0, rel=1e-12)
    flat = index_crawl_intervals([0.0, 0.0], [0.0, 1.0], 4.0)  # no page gains: round robin
    np.testing.assert_array_equal(flat.intervals, [0.5, 0.5])


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        (dict(rate=[-1.0]), ValueError, "`rate`"),
        (dict(rate=[np.nan]), ValueError, "`rate`"),
        (dict(log_sd=[0.0, 1.0]), ValueError, "`log_sd`"),
        (dict(log_sd=[-0.5]), ValueError, "`log_sd`"),
        (dict(weights=[1.0, 2.0]), ValueError, "`weights`"),
        (dict(budget=0.0), ValueError, "`budget`"),
        (dict(budget="1"), TypeError, "`budget`"),
        (dict(max_interval=0.0), ValueError, "`max_interval`"),
        (dict(interval_range=(1.0, 0.5)), ValueError, "`interval_range`"),
        (dict(interval_range=3.0), TypeError, "`interval_range`"),
    ],
)
def test_input_errors(kwargs, err, match):
    args = dict(rate=[1.0], log_sd=[0.0], budget=1.0) | kwargs
    with pytest.raises(err, match=match):
        index_crawl_intervals(args.pop("rate"), args.pop("log_sd"), args.pop("budget"), **args)


# ----------------------------------------------------------------------------- the commands
def _grid_allocation(mean, lo, hi, budget, cap, level=0.9):
    """The schedule on a table of the index (40 nodes a decade from 1e-4 to 1e5 days),
    linear in (log t, log ν) between nodes, λ by bisection: the approximation the exact
    solution replaces, accurate to its interpolation (about 1e-4 relative)."""
    grid = np.geomspace(1e-4, 1e5, 361)
    ok = (lo > 0) & (hi > lo)
    mu = np.where(ok, 0.5 * np.log(np.where(ok, lo * hi, 1.0)), np.log(mean))
    sd = np.where(ok, np.log(np.where(ok, hi / lo, 1.0)) / (2 * norm.ppf(0.5 + 0.5 * level)), 0.0)
    d = np.exp(mu[:, None, None] + sd[:, None, None] * XI[None, None, :])
    nu = np.sum(A * gammainc(2.0, d * grid[None, :, None]) / d, axis=2)

    def intervals(lam):
        out = np.empty(len(mean))
        for i, row in enumerate(nu):
            j = np.searchsorted(row, lam)  # first node at or above λ
            if j == 0:
                out[i] = grid[0]
            elif j == grid.size:
                out[i] = np.inf
            else:
                f = np.log(lam / row[j - 1]) / np.log(row[j] / row[j - 1])
                out[i] = np.exp(np.log(grid[j - 1]) + f * np.log(grid[j] / grid[j - 1]))
        return np.minimum(out, cap)

    a, b = math.log(nu.max()) - 80.0, math.log(nu.max()) + 1.0
    for _ in range(60):
        c = 0.5 * (a + b)
        a, b = (c, b) if np.sum(1 / intervals(math.exp(c))) > budget else (a, c)
    return intervals(math.exp(b))


@pytest.fixture
def index_log(tmp_path):
    """30 pages crawled every 6 h on average, changing more slowly: the default budget is above
    the total change rate, so the commands take the index allocation."""
    rng = np.random.default_rng(7)
    rows = ["page,fetch_time,status,digest"]
    t0 = np.datetime64("2024-01-01T00:00:00")
    for p in range(30):
        rate = rng.lognormal(math.log(0.01), 1.5)  # changes per hour
        t = np.cumsum(rng.exponential(6.0, rng.integers(2, 60)))
        v = np.cumsum(rng.poisson(rate * np.diff(t, prepend=t[0])))
        rows += [f"p{p},{t0 + np.timedelta64(int(x * 3600), 's')}Z,200,d{k}" for x, k in zip(t, v)]
    path = tmp_path / "log.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_estimate_and_schedule_commands(tmp_path, index_log, capsys):
    from changerate_bayes.io import read_log

    est, sch = tmp_path / "est.csv", tmp_path / "sch.csv"
    assert main(["estimate", str(index_log), "--out", str(est)]) == 0
    assert "crawl plan: index" in capsys.readouterr().out
    assert main(["schedule", str(index_log), "--out", str(sch)]) == 0
    got, plan = pd.read_csv(est), pd.read_csv(sch)
    # every column but the allocation is the page table's
    table = page_table(read_log(index_log))
    for c in (
        "n_crawls",
        "n_changes",
        "mean_interval_h",
        "rate_per_day",
        "posterior_mean",
        "posterior_lower",
        "posterior_upper",
    ):
        np.testing.assert_allclose(got[c], table[c], rtol=1e-15, err_msg=c)
    # the allocation: the exact schedule (here no page at the bound, nothing rescaled)
    budget = float(np.sum(24.0 / table["mean_interval_h"]))
    n = len(table)
    mean, lo, hi = (table[c].to_numpy() for c in ("posterior_mean", "posterior_lower", "posterior_upper"))
    assert budget >= mean.sum() and not got["at_revisit_bound"].any()
    ok = (lo > 0) & (hi > lo)
    sd = np.where(ok, np.log(np.where(ok, hi / lo, 1.0)) / (2 * norm.ppf(0.95)), 0.0)
    median = np.where(ok, np.sqrt(np.where(ok, lo * hi, 1.0)), mean)
    want, _ = _reference(median, sd, np.ones(n), budget, cap=4.0 * n / budget)
    np.testing.assert_allclose(got["crawl_interval_h"], 24.0 * want, rtol=1e-9)
    # within the interpolation error of the tabulated schedule it replaces
    grid = _grid_allocation(mean, lo, hi, budget, 4.0 * n / budget)
    np.testing.assert_allclose(got["crawl_interval_h"], 24.0 * grid, rtol=5e-4)
    # the schedule is the allocation in whole seconds
    np.testing.assert_allclose(plan["interval_h"], np.rint(24.0 * want * 3600) / 3600, atol=1.01 / 3600)


def test_allocate_crawls_index_table_of_a_page_table():
    t = pd.DataFrame(
        {"posterior_mean": [0.2, 1.0, 5.0], "posterior_lower": [0.0, 0.5, 2.0], "posterior_upper": [0.5, 2.0, 10.0]}
    )
    t.attrs["level"] = 0.8
    out = allocate_crawls(t, 12.0, policy="index_mean")
    z = norm.ppf(0.9)  # the 80% interval's half-width in sd
    want, lam = _reference(
        [0.2, 1.0, math.sqrt(20.0)],
        [0.0, math.log(4.0) / (2 * z), math.log(5.0) / (2 * z)],
        np.ones(3),
        12.0,
        cap=4.0 * 3 / 12.0,
    )
    np.testing.assert_allclose(out["crawl_interval_h"], 24.0 * want, rtol=1e-9)
    assert out.attrs["price"] == pytest.approx(lam, rel=1e-9)


def test_a_large_collection_is_solved_on_the_table_within_its_bound(monkeypatch):
    # above 4 × 16,384 live pages the roots are solved on the table's interpolant of K (from the
    # price of a sample): the budget is spent to rounding on the intervals returned, and each
    # page's index at its interval is within the table's bound (2e-8 relative) of the price;
    # against the exact search of the same pages (the price to ~1e-10, each interval to
    # 2e-8/K' relative) and brentq on the definition for a few pages
    import changerate_bayes.scheduling._index_allocation as mod

    rng = np.random.default_rng(11)
    n = 70_000
    rate = rng.lognormal(math.log(0.5), 1.5, n)
    sd = np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0.05, 1.5, n))
    budget = 3.0 * rate.sum()
    cap = 4.0 * n / budget
    got = index_crawl_intervals(rate, sd, budget, max_interval=cap)
    monkeypatch.setattr(mod, "_TABLE_ABOVE", n)
    plain = index_crawl_intervals(rate, sd, budget, max_interval=cap)
    assert np.sum(1.0 / got.intervals) == pytest.approx(budget, rel=1e-13)
    assert got.price == pytest.approx(plain.price, rel=1e-9)
    # K' = d log(index)/d log t at each exact interval (interior pages), by a central difference
    inside = (plain.intervals > 1e-4 * (1 + 1e-12)) & (plain.intervals < cap * (1 - 1e-12))
    pick = rng.choice(np.flatnonzero(inside), 300, replace=False)
    slope = np.array(
        [
            (math.log(_index(rate[i], sd[i], 1.0, plain.intervals[i] * 1.0001))
             - math.log(_index(rate[i], sd[i], 1.0, plain.intervals[i] / 1.0001))) / (2 * math.log(1.0001))
            for i in pick
        ]
    )  # fmt: skip
    lam_gap = abs(math.log(got.price / plain.price))
    err = np.abs(np.log(got.intervals[pick] / plain.intervals[pick]))
    assert np.all(err <= (2e-8 + lam_gap) / slope * 1.01 + 1e-12)
    for i in pick[:40]:  # the condition itself at the interval returned: index = λ (1 ± 2e-8)
        assert _index(rate[i], sd[i], 1.0, got.intervals[i]) == pytest.approx(got.price, rel=2e-8)
    for k, i in enumerate(pick[:6]):
        want = _interval(rate[i], sd[i], 1.0, got.price, 1e-4, 1e5, cap)
        assert got.intervals[i] == pytest.approx(want, rel=2e-8 / slope[k] * 1.01 + 1e-12)
    # the pages at the bounds are the same
    np.testing.assert_array_equal(got.intervals >= cap * (1 - 1e-12), plain.intervals >= cap * (1 - 1e-12))


def test_a_bracket_at_its_last_bit_still_spends_the_budget():
    # the price resolved to its last bit with no root moving by more than 1e-12 between the
    # bracket's ends (one page interior, two held at the revisit bound): the interior pages
    # share the budget's rounding, so Σ 1/I = B to rounding
    rate = np.array([265.3159447090508, 955.2096991571037, 854.8289655142539])
    sd = np.array([0.0, 0.01, 2.432558014716038])
    w = np.array([0.5237893645508833, 5.173539579755771, 0.5237893645508833])
    res = index_crawl_intervals(rate, sd, 144.0, weights=w, max_interval=12 / 144.0, interval_range=(1e-4, math.inf))
    assert np.sum(1.0 / res.intervals) == pytest.approx(144.0, rel=1e-14)
    assert res.intervals[1] < res.intervals[0] == res.intervals[2] == 12 / 144.0


def test_the_log_normal_of_each_pages_interval():
    # median √(lower · upper) and sd log(upper/lower)/(2 z) at the table's level, from the
    # definition; a point mass at the mean (sd 0) where 0 < lower < upper < inf fails
    from changerate_bayes.crawllog import allocate as mod

    lower = np.array([0.5, 0.0, 2.0, 1.0, np.nan, 3.0, 1e-300, 1e300])
    upper = np.array([2.0, 1.0, 2.0, np.inf, 4.0, 1.0, 1e-200, 1e301])
    mean = np.arange(1.0, 9.0)
    t = pd.DataFrame({"posterior_mean": mean, "posterior_lower": lower, "posterior_upper": upper})
    t.attrs["level"] = 0.8
    median, sd = mod._lognormal_posterior(t, mean)
    ok = np.array([True, False, False, False, False, False, True, True])
    z = norm.ppf(0.9)
    ctx = decimal.Context(prec=40)  # √(lower · upper) to 40 digits
    want_median = np.array(
        [float(ctx.sqrt(ctx.multiply(decimal.Decimal(lo), decimal.Decimal(hi)))) if k else mu
         for lo, hi, mu, k in zip(lower, upper, mean, ok, strict=True)]
    )  # fmt: skip
    with np.errstate(all="ignore"):
        want_sd = np.where(ok, (np.log(upper) - np.log(lower)) / (2 * z), 0.0)
    np.testing.assert_allclose(median, want_median, rtol=3e-16)
    np.testing.assert_allclose(sd, want_sd, rtol=1e-13)


def test_a_page_of_rate_and_weight_zero_raises_no_warning():
    # such a page is dead (it gets M); its log-price offset log 0 − log 0 is never read
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = index_crawl_intervals([0.0, 1.0, 2.0], [0.0, 0.3, 0.0], 3.0, weights=[0.0, 1.0, 1.0], max_interval=2.0)
    assert res.intervals[0] == 2.0
    assert np.sum(1.0 / res.intervals) == pytest.approx(3.0, rel=1e-13)
