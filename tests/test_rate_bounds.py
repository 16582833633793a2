"""Pages whose rate the data bound on one side only (column ``rate_bound``): the likelihood's
one-sided interval, its hand-derived values, its coverage by simulation, and the same column
on every engine."""

import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import assert_same_page_table, dask_frame_estimates, local_dask_client
from scipy.optimize import brentq

from changerate_bayes import CrawlHistory, StatisticalWarning, estimate_pages
from changerate_bayes.cli import main
from changerate_bayes.crawllog.table import bound_notes, page_table, rate_bounds
from changerate_bayes.io import read_log

LEVEL = 0.9


# -- hand-derived values ------------------------------------------------------------------------


@pytest.mark.parametrize("level", [0.5, 0.9, 0.99])
def test_one_and_two_equal_intervals_match_the_closed_form(level):
    tau = 30.0
    h = CrawlHistory.from_segments([1, 1, 1, 0, 0, 0, 0], [tau] * 7, lengths=[1, 2, 4])
    bound, lower, upper = rate_bounds(h, level)
    assert bound.tolist() == ["lower", "lower", "upper"]
    # one interval: 1 − e^{−Δτ} = 1 − c  ⇒  Δ_L = −ln(c)/τ
    assert lower[0] == pytest.approx(-np.log(level) / tau, rel=1e-12)
    # two equal intervals: (1 − e^{−Δτ})² = 1 − c  ⇒  1 − e^{−Δ_L τ} = √(1 − c)
    assert lower[1] == pytest.approx(-np.log1p(-np.sqrt(1 - level)) / tau, rel=1e-12)
    # no change in T = 4τ: e^{−Δ_U T} = 1 − c
    assert upper[2] == pytest.approx(-np.log(1 - level) / (4 * tau), rel=1e-12)
    assert np.isposinf(upper[:2]).all() and lower[2] == 0.0


def test_mixed_and_empty_pages_are_not_bounded():
    h = CrawlHistory.from_segments([1, 0, 0, 1], [1.0, 2.0, 3.0, 4.0], lengths=[2, 2])
    bound, lower, upper = rate_bounds(h)
    assert bound.tolist() == ["", ""]
    assert np.isnan(lower).all() and np.isnan(upper).all()


def test_ragged_intervals_match_a_root_from_the_definition():
    rng = np.random.default_rng(7)
    k = rng.integers(1, 15, size=40)
    tau = rng.exponential(30.0, size=k.sum()) * rng.choice([1e-3, 1.0, 1e3], size=k.sum())
    h = CrawlHistory.from_segments(np.ones(k.sum(), dtype=int), tau, lengths=k)
    bound, lower, upper = rate_bounds(h, LEVEL)
    assert (bound == "lower").all() and np.isposinf(upper).all()
    edges = np.concatenate(([0], np.cumsum(k)))
    for i in range(k.size):  # the reference: a scalar root of ∏(1 − e^{−Δτ_k}) = 1 − c per page
        t = tau[edges[i] : edges[i + 1]]

        def g(log_rate, t=t):
            return np.sum(np.log(-np.expm1(-np.exp(log_rate) * t))) - np.log(1 - LEVEL)

        want = np.exp(brentq(g, -60.0, 60.0, xtol=1e-14, rtol=1e-14))
        assert lower[i] == pytest.approx(want, rel=1e-9), i
        assert np.prod(-np.expm1(-lower[i] * t)) == pytest.approx(1 - LEVEL, rel=1e-9)


def test_without_intervals_poisson_crawling_gives_the_marginal_bounds():
    # a crawl sees a change with probability Δ/(Δ + p): (Δ_L/(Δ_L + p))^k = 1 − c, (p/(p + Δ_U))^k = 1 − c
    p, k = 0.5, 3
    h = CrawlHistory.from_segments([1] * k + [0] * k, None, lengths=[k, k], crawl_rate=p)
    bound, lower, upper = rate_bounds(h, LEVEL)
    assert bound.tolist() == ["lower", "upper"]
    assert (lower[0] / (lower[0] + p)) ** k == pytest.approx(1 - LEVEL, rel=1e-12)
    assert (p / (p + upper[1])) ** k == pytest.approx(1 - LEVEL, rel=1e-12)
    with pytest.raises(ValueError, match="intervals or a crawl_rate"):
        rate_bounds(CrawlHistory.from_segments([1, 1], None, lengths=[2]))


@pytest.mark.parametrize("level", [0.0, 1.0, -0.1, float("nan"), True])
def test_level_outside_the_unit_interval_is_refused(level):
    h = CrawlHistory.from_segments([1], [1.0], lengths=[1])
    with pytest.raises(ValueError, match="`level` must be a number in"):
        rate_bounds(h, level)


def test_history_of_another_type_is_refused():
    with pytest.raises(TypeError, match="`history` must be a CrawlHistory"):
        rate_bounds([1, 1])


# -- coverage by simulation ---------------------------------------------------------------------

RATES = np.geomspace(0.01, 3.0, 10)  # changes per day, across saturation at monthly crawls
KS = np.array([3, 6, 12])
N_REP = 300


def _simulate(rng):
    """Pages crawled every 30 days ("regular", 0) or at Poisson times of mean 30 days (1), for each
    (true rate, crawls, scheme) cell N_REP pages; intervals in days."""
    d, k, s = (a.ravel() for a in np.meshgrid(RATES, KS, [0, 1], indexing="ij"))
    cell = np.repeat(np.arange(d.size), N_REP)
    d, k, s = d[cell], k[cell], s[cell]
    page = np.repeat(np.arange(k.size), k)
    tau = np.where(s[page] == 0, 30.0, rng.exponential(30.0, size=k.sum()))
    changed = rng.random(k.sum()) < -np.expm1(-d[page] * tau)
    h = CrawlHistory.from_segments(
        changed.astype(np.int8), tau, lengths=k, crawl_rate=k / np.bincount(page, weights=tau)
    )
    return page_table(h, unit_hours=24.0, level=LEVEL), d, k, s, cell


@pytest.fixture(scope="module")
def simulated():
    return _simulate(np.random.default_rng(20261206))


def test_lower_end_covers_the_truth_unconditionally(simulated):
    t, rate, *_ = simulated
    n = len(t)
    se = np.sqrt(LEVEL * (1 - LEVEL) / n)
    # flagged pages report Δ_L, the others their posterior interval's lower end
    assert np.mean(t["rate_lower_per_day"].to_numpy() <= rate) >= LEVEL - 3 * se
    miss = (t["rate_bound"].to_numpy() == "lower") & (t["rate_lower_per_day"].to_numpy() > rate)
    assert miss.mean() <= 1 - LEVEL + 3 * se


def test_upper_end_covers_the_truth_unconditionally(simulated):
    t, rate, *_ = simulated
    n = len(t)
    se = np.sqrt(LEVEL * (1 - LEVEL) / n)
    assert np.mean(t["rate_upper_per_day"].to_numpy() >= rate) >= LEVEL - 3 * se
    miss = (t["rate_bound"].to_numpy() == "upper") & (t["rate_upper_per_day"].to_numpy() < rate)
    assert miss.mean() <= 1 - LEVEL + 3 * se


def test_misses_of_the_bounds_per_cell_are_below_one_minus_level(simulated):
    # for every true rate and crawl scheme P(flagged and the bound misses Δ) < 1 − c
    t, rate, k, s, cell = simulated
    bound, lo, hi = (t[c].to_numpy() for c in ("rate_bound", "rate_lower_per_day", "rate_upper_per_day"))
    se = np.sqrt(LEVEL * (1 - LEVEL) / N_REP)
    for miss in ((bound == "lower") & (lo > rate), (bound == "upper") & (hi < rate)):
        per_cell = np.bincount(cell, weights=miss) / N_REP
        assert per_cell.max() <= 1 - LEVEL + 3 * se, per_cell.max()


def test_misses_at_regular_crawls_match_their_exact_probability(simulated):
    # every 30 days: all k crawls change with probability q^k, q = 1 − e^{−30Δ}, and then Δ_L > Δ iff
    # q^k < 1 − c; no change with probability e^{−30kΔ}, and then Δ_U < Δ iff e^{−30kΔ} < 1 − c
    t, rate, k, s, cell = simulated
    bound, lo, hi = (t[c].to_numpy() for c in ("rate_bound", "rate_lower_per_day", "rate_upper_per_day"))
    regular = s == 0
    first = np.unique(cell[regular], return_index=True)[1]
    d, kk = rate[regular][first], k[regular][first]
    p_all = (-np.expm1(-30.0 * d)) ** kk
    p_none = np.exp(-30.0 * kk * d)
    for miss, p in (
        ((bound == "lower") & (lo > rate), np.where(p_all < 1 - LEVEL, p_all, 0.0)),
        ((bound == "upper") & (hi < rate), np.where(p_none < 1 - LEVEL, p_none, 0.0)),
    ):
        got = np.bincount(cell[regular], weights=miss[regular])[np.unique(cell[regular])] / N_REP
        assert (np.abs(got - p) <= 3 * np.sqrt(p * (1 - p) / N_REP) + 1e-12).all(), (got, p)
    assert (p_all < 1 - LEVEL).any() and (p_all >= 1 - LEVEL).any()  # the grid spans the boundary


@pytest.mark.parametrize("k", [3, 6, 12])
def test_monthly_captures_of_a_page_changing_three_times_a_day_are_a_lower_bound(k):
    # Common Crawl: one capture a month; the page changes 3 times a day, so every capture differs
    h = CrawlHistory.from_segments(np.ones(k, dtype=int), np.full(k, 30.0 * 24), lengths=[k], crawl_rate=1 / 720)
    t = estimate_pages(h)
    row = t.iloc[0]
    assert row["rate_bound"] == "lower"
    assert row["rate_lower_per_day"] <= 3.0 <= row["rate_upper_per_day"] == np.inf
    assert row["rate_lower_per_day"] == pytest.approx(-np.log1p(-(0.1 ** (1 / k))) / 30, rel=1e-12)
    # the posterior's interval, where the prior sets the upper end, stays in its own columns
    assert row["posterior_upper"] < 3.0 and row["rate_per_day"] == row["posterior_mean"]
    assert "crawl them more often" in t.attrs["notes"][0] and t.attrs["notes"][0].startswith("1 page(s) of 1")


def test_notes_count_both_sides():
    notes = bound_notes(pd.DataFrame({"rate_bound": ["lower", "", "upper", "upper", "lower", "lower"]}))
    assert len(notes) == 2
    assert notes[0].startswith("3 page(s) of 6 saw a change at every crawl")
    assert notes[1].startswith("2 page(s) of 6 saw no change")
    assert bound_notes(pd.DataFrame({"rate_bound": ["", ""]})) == []


# -- every engine --------------------------------------------------------------------------------


def _log_files(tmp_path, n_pages=24, seed=3):
    """Two CSV files, rows dealt alternately (every page in both): pages that change at every visit,
    at none, and in between."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_pages):
        visits = int(rng.integers(2, 9))
        times = pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(
            np.cumsum(rng.exponential(30.0, visits)), unit="D"
        )
        p = (1.0, 0.0, 0.5)[i % 3]
        changed = (rng.random(visits) < p).astype(int)
        rows += [(f"p{i}", ts.strftime("%Y-%m-%dT%H:%M:%SZ"), c) for ts, c in zip(times, changed)]
    df = pd.DataFrame(rows, columns=["page", "fetch_time", "changed"])
    paths = []
    for j in range(2):
        path = tmp_path / f"log-{j}.csv"
        df.iloc[j::2].to_csv(path, index=False)
        paths.append(path)
    return paths


def test_every_engine_gives_the_same_bounds(tmp_path):
    import dask
    import dask.dataframe as dd

    from changerate_bayes.crawllog import estimate
    from changerate_bayes.crawllog.out_of_core import estimate_log

    files = _log_files(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)
        want = estimate_pages(read_log(files))
        got = {"buckets": estimate_log(files, bucket_rows=16).table}
        with dask.config.set(scheduler="synchronous"):
            ddf = dd.read_csv([str(f) for f in files], dtype=str, keep_default_na=False, blocksize=200)
            got["dask dataframe"] = dask_frame_estimates(ddf, npartitions=3).table
        with local_dask_client(processes=False) as client:
            got["dask files"] = estimate(files, engine="dask", client=client).table
    assert set(want["rate_bound"]) == {"lower", "upper", ""}
    for name, table in got.items():
        assert_same_page_table(table, want)
        assert table["rate_bound"].tolist() == want["rate_bound"].tolist(), name
        assert table.attrs["notes"] == want.attrs["notes"], name


def test_cli_estimate_prints_the_bounded_pages_and_reports_them(tmp_path, capsys):
    files = _log_files(tmp_path)
    out = tmp_path / "est.csv"
    report = tmp_path / "report"
    assert main(["estimate", *map(str, files), "--out", str(out), "--engine", "pandas", "--report", str(report)]) == 0
    text = capsys.readouterr().out
    # the report's figure draws pages without upper end (and one whose rate lies below its lower bound)
    assert "intervals of the busiest pages" in (report / "index.html").read_text(encoding="utf-8")
    t = pd.read_csv(out, keep_default_na=False)
    n_lower = int((t["rate_bound"] == "lower").sum())
    assert n_lower > 0
    assert f"note: {n_lower} page(s) of {len(t)} saw a change at every crawl" in text
    assert "crawl them more often to learn their rate" in text


# -- the validation section ----------------------------------------------------------------------


def test_validation_section_measures_the_misses_of_the_bounds():
    from changerate_bayes.validation._rate_bounds import bound_coverage, render_bound_coverage

    res = bound_coverage(50, rng=11)
    assert len(res["cells"]) == 60 and res["pooled"]["pages"] == 60 * 50
    assert res["allowed_miss"] == pytest.approx(0.1 + 3 * np.sqrt(0.09 / 50))
    # the pages crawled monthly at 3 changes a day are (almost) all flagged "lower", and never missed
    top = [c for c in res["cells"] if c["rate"] == 3.0 and c["scheme"] == "regular"]
    assert all(c["flagged_lower"] == 1.0 and c["miss_lower"] == 0.0 for c in top)
    assert res["ok"] is True
    html = render_bound_coverage(res)
    assert "Misses of the one-sided bounds per cell" in html and f"{res['pooled']['lower_covers']:.3f}" in html
    with pytest.raises(ValueError, match="`n_rep` must be an integer >= 1"):
        bound_coverage(0, rng=1)
