"""Change signals in crawl logs: reading and counting them, the table's signal columns, the signal-aware schedule."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from changerate_bayes.crawllog import (
    SIGNAL_COLUMNS,
    SIGNAL_SCHEDULE_COLUMNS,
    effective_delay,
    estimate,
    expected_fetch_interval,
    log_signals,
    schedule,
    signal_schedule,
)
from changerate_bayes.crawllog.signal_log import jump_hours, part_signals, unique_signals
from changerate_bayes.io import CrawlLogError, read_frame, read_signals
from changerate_bayes.signals import signal_data, signal_log_likelihood

T0 = pd.Timestamp("2024-01-01", tz="UTC")
FAST = {"draws": 60, "tune": 20, "chains": 1}


def _log(n_pages=12, n_visits=25, seed=0):
    """Visits (page, fetch_time, changed) and signals of pages whose signals follow their changes."""
    gen = np.random.default_rng(seed)
    visits, sigs = [], []
    for p in range(n_pages):
        days = np.sort(gen.choice(np.arange(1, 600), n_visits, replace=False)) / 10.0  # whole 2.4 h steps
        changes = np.sort(gen.uniform(0, 60, gen.poisson(12)))
        seen = np.searchsorted(changes, days)
        changed = np.concatenate([[0], (np.diff(seen) > 0).astype(int)])
        visits += [(f"p{p}", T0 + pd.Timedelta(days=d), c) for d, c in zip(days, changed)]
        true = changes[gen.random(changes.size) < 0.7]
        false = gen.uniform(0, 62, gen.poisson(4))
        sigs += [(f"p{p}", T0 + pd.Timedelta(days=float(t))) for t in np.concatenate([true, false])]
    v = pd.DataFrame(visits, columns=["page", "fetch_time", "changed"])
    s = pd.DataFrame(sigs, columns=["page", "signal_time"])
    s["signal_time"] = s["signal_time"].dt.round("s")
    return v, s


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


@pytest.fixture(autouse=True)
def _few_draws(monkeypatch):
    """Short Gibbs runs: the tests check the plumbing and the engines' agreement, not the sampler."""
    import changerate_bayes.crawllog.signal_log as sl

    monkeypatch.setattr(sl, "SIGNAL_DRAWS", FAST)


def test_counts_per_interval_match_signal_data():
    """The compressed per-page data (changed crawls + one entry for the rest) has the likelihood of
    signal_data on the raw visits, up to a constant per page."""
    v, s = _log()
    log = read_frame(v)
    table = pd.DataFrame({"page": log.page_ids, "last_visit": log.last_visit})
    got = log_signals(table, [part_signals(log, *unique_signals(s))], s).data
    ref, audit = signal_data(
        v.rename(columns={"fetch_time": "timestamp"}),
        s.rename(columns={"signal_time": "timestamp"}),
        end=v["fetch_time"].max(),
    )
    for key in ("crawled_time", "time", "signals", "changes_seen"):
        np.testing.assert_allclose(got.totals()[key], ref.totals()[key], rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(got.tail_signals, ref.tail_signals)
    a = (np.full(12, 0.3), np.full(12, 0.6), np.full(12, 0.2))
    b = (np.full(12, 1.1), np.full(12, 0.2), np.full(12, 0.5))
    diff_got = signal_log_likelihood(*a, got) - signal_log_likelihood(*b, got)
    diff_ref = signal_log_likelihood(*a, ref) - signal_log_likelihood(*b, ref)
    np.testing.assert_allclose(diff_got, diff_ref, rtol=1e-9, atol=1e-9)
    assert audit["before_first_visit"] > 0  # the example exercises the rule


def test_audit_counts_each_reason():
    v = pd.DataFrame(
        {
            "page": ["a"] * 4 + ["b"] * 3,
            "fetch_time": [T0 + pd.Timedelta(hours=h) for h in (0, 10, 20, 30, 0, 12, 24)],
            "changed": [0, 1, 0, 1, 0, 1, 1],
        }
    )
    h = lambda x: T0 + pd.Timedelta(hours=x)  # noqa: E731
    s = pd.DataFrame(
        {
            "page": ["a", "a", "a", "a", "a", "b", "zz", "b", "a"],
            "signal_time": [h(5), h(5), h(0), h(-1), h(31), h(12), h(3), h(29), h(40)],
        }
    )
    res = _quiet(estimate, v, signals=s, rng=0)
    a = res.signal_audit
    # the log ends at a's last visit, 30 h: a@31 and a@40 are after it; a@0 (at the first visit) and a@-1 before
    assert dict(a.dropped) == {"unknown_page": 1, "duplicate": 1, "before_first_visit": 2, "after_end": 2}
    assert a.log_end == "2024-01-02T06:00:00Z"
    assert (a.signals_read, a.signals_kept) == (9, 3)  # a@5, b@12, b@29
    table = res.table.set_index("page")
    assert table.loc["a", "n_signals"] == 1 and table.loc["b", "n_signals"] == 2
    assert table.loc["b", "signals_since_last_visit"] == 1  # b@29, after b's last visit at 24
    assert a.after_last_visit == 1 and a.pages_with_signals == 2
    assert list(res.table.columns[-len(SIGNAL_COLUMNS) :]) == list(SIGNAL_COLUMNS)


def test_signals_on_no_page_of_the_log_is_an_error(tmp_path):
    v, _ = _log(n_pages=3)
    path = tmp_path / "signals.csv"
    path.write_text("page,signal_time\nother,2024-01-02T00:00Z\n")
    with pytest.raises(CrawlLogError, match=r"signals\.csv: none of the 1 signals is on a page"):
        estimate(v, signals=path)
    # with a second file that does name a page of the log, the first is still refused, by name
    good = tmp_path / "good.csv"
    good.write_text(f"page,signal_time\n{v['page'].iloc[0]},{v['fetch_time'].iloc[1]}\n")
    with pytest.raises(CrawlLogError, match=r"signals\.csv: none of its 1 signals is on a page"):
        estimate(v, signals=[good, path])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("page,signal_time\na,2024-01-02T00:00Z\na,yesterday\n", r"signals\.csv: line 3, column 'signal_time'"),
        ("page,when\na,2024-01-02T00:00Z\n", r"missing required column 'signal_time'"),
    ],
)
def test_unparsable_signal_time_names_file_line_column(tmp_path, text, message):
    path = tmp_path / "signals.csv"
    path.write_text(text)
    with pytest.raises(CrawlLogError, match=message):
        read_signals(path)


def _write_log(tmp_path, v, s=None, name="log.csv", *, keep_signals=True):
    """The visits, with the signals as rows (``signal`` 1) among them in time order; without them
    (``keep_signals`` False) the same visits in the same order, and no ``signal`` column."""
    frame = v.assign(signal=0)
    if s is not None:
        rows = pd.DataFrame({"page": s["page"], "fetch_time": s["signal_time"], "changed": "", "signal": 1})
        frame = pd.concat([frame, rows], ignore_index=True).sort_values("fetch_time", kind="stable")
    if not keep_signals:
        frame = frame[frame["signal"] == 0].drop(columns="signal")
    elif s is None:
        frame = frame.drop(columns="signal")
    frame = frame.assign(fetch_time=pd.to_datetime(frame["fetch_time"]).dt.strftime("%Y-%m-%dT%H:%M:%SZ"))
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("engine", ["pandas", "buckets"])
def test_signal_rows_leave_visits_and_audit_unchanged(tmp_path, engine):
    v, s = _log()
    plain = _quiet(estimate, _write_log(tmp_path, v, s, name="plain.csv", keep_signals=False), engine=engine)
    mixed = _quiet(estimate, _write_log(tmp_path, v, s, name="mixed.csv"), engine=engine, rng=3)
    assert plain.signal_audit is None and not set(SIGNAL_COLUMNS) & set(plain.table.columns)
    pd.testing.assert_frame_equal(mixed.table[plain.table.columns], plain.table)
    assert dataclass_dict(mixed.audit, drop="sources") == dataclass_dict(plain.audit, drop="sources")
    assert mixed.signal_audit.signals_read == len(s)
    # the same signals from a file give the same columns
    spath = tmp_path / "signals.csv"
    s.assign(signal_time=s["signal_time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")).to_csv(spath, index=False)
    filed = _quiet(estimate, tmp_path / "plain.csv", engine=engine, signals=spath, rng=3)
    pd.testing.assert_frame_equal(filed.table, mixed.table)


def dataclass_dict(audit, drop):
    out = audit.as_dict()
    out.pop(drop)
    return out


def test_engines_agree_with_signals(tmp_path):
    v, s = _log()
    path = _write_log(tmp_path, v, s)
    res = {e: _quiet(estimate, path, engine=e, rng=7) for e in ("pandas", "buckets")}
    pd.testing.assert_frame_equal(res["pandas"].table, res["buckets"].table)
    assert res["pandas"].signal_audit == res["buckets"].signal_audit
    assert res["pandas"].signal_audit.dropped_by("before_first_visit") > 0
    assert (res["pandas"].table["n_signals"] > 0).all()


def test_signal_rows_of_a_parquet_log_and_of_a_data_frame(tmp_path):
    v, s = _log(n_pages=4)
    csv = _write_log(tmp_path, v, s)
    frame = pd.read_csv(csv, dtype=str, keep_default_na=False)
    frame.to_parquet(tmp_path / "log.parquet", index=False)
    expect = _quiet(estimate, csv, engine="pandas", rng=1)
    for source in (tmp_path / "log.parquet", frame):
        got = _quiet(estimate, source, engine="pandas", rng=1)
        pd.testing.assert_frame_equal(got.table, expect.table)
        assert got.signal_audit.signals_kept == expect.signal_audit.signals_kept
    bad = frame.copy()
    bad.loc[bad.index[bad["signal"] == "1"][0], "signal"] = "maybe"
    with pytest.raises(CrawlLogError, match=r"row \d+, column 'signal'.*0 or 1"):
        estimate(bad)


def test_without_signals_nothing_changes(tmp_path):
    v, _ = _log()
    path = _write_log(tmp_path, v)
    zeros = tmp_path / "zeros.csv"
    pd.read_csv(path).assign(signal=0).to_csv(zeros, index=False)  # a signal column without a signal
    for engine in ("pandas", "buckets"):
        res = _quiet(estimate, path, engine=engine)
        assert res.signal_audit is None and "n_signals" not in res.table.columns
        same = _quiet(estimate, zeros, engine=engine)
        assert same.signal_audit is None
        pd.testing.assert_frame_equal(same.table, res.table)
        assert dataclass_dict(same.audit, drop="sources") == dataclass_dict(res.audit, drop="sources")
    sched = _quiet(schedule, path)
    assert list(sched.schedule.columns) == list(
        __import__("changerate_bayes.crawllog", fromlist=["x"]).SCHEDULE_COLUMNS
    )
    assert sched.signal_audit is None


def test_next_fetch_by_hand():
    """q = 0.5, Δ = 1/day, ν = 0.5/day: J = ln((0.5 + 0.5)/0.5)/1 day = 24 ln 2 h; I = 48 h, n = 2."""
    last = pd.Timestamp("2024-03-01T00:00:00Z")
    sched = pd.DataFrame(
        {
            "url": ["a", "b", "c", "d"],
            "last_attempt": [last] * 4,
            "next_fetch": [last + pd.Timedelta(hours=48)] * 4,
            "interval_h": [48.0, 48.0, 48.0, 10.0],
        }
    )
    sched.attrs["max_interval_h"] = 2160.0
    cols = pd.DataFrame(
        {
            "signal_recall": [0.5, 0.5, 0.3, 0.5],
            "n_signals": [5, 3, 0, 1],
            "signals_since_last_visit": [2, 0, 0, 0],
            "signal_change_rate_per_day": [1.0, 1.0, 1.0, 1.0],
            "signal_false_rate_per_day": [0.5, 0.5, 0.5, 0.5],
        }
    )
    out = signal_schedule(sched, cols, now=last + pd.Timedelta(hours=1))
    j = 24 * np.log(2.0)
    assert out["signal_jump_h"].iloc[0] == pytest.approx(j, rel=1e-12)
    expect_a = last + pd.Timedelta(seconds=round((48 - 2 * j) / 0.5 * 3600))
    assert out["next_fetch"].iloc[0] == expect_a  # 29.458 h after the last fetch
    assert out["next_fetch"].iloc[1] == last + pd.Timedelta(hours=96)  # no signal yet: I/(1 - q)
    assert out["next_fetch"].iloc[2] == last + pd.Timedelta(hours=48)  # never signalled: the index, unchanged
    assert out["fetch_trigger"].tolist() == ["both", "both", "index", "on_signal"]  # d: J = 16.6 h >= I = 10 h
    assert out.attrs["n_on_signal"] == 1 and out.attrs["n_index"] == 1 and out.attrs["n_both"] == 2
    assert list(out.columns[-len(SIGNAL_SCHEDULE_COLUMNS) :]) == list(SIGNAL_SCHEDULE_COLUMNS)
    # one more signal on d makes it due now: the log's end
    cols.loc[3, "signals_since_last_visit"] = 1
    out = signal_schedule(sched, cols, now=last + pd.Timedelta(hours=1))
    assert out["next_fetch"].iloc[3] == last + pd.Timedelta(hours=1) and out.attrs["n_due_now"] == 1
    # due now counts every page whose next fetch is at or before the log's end: 50 h after the last
    # fetch, a (29.458 h), c (never signalled, its interval of 48 h past) and d (a signal); not b (96 h)
    out = signal_schedule(sched, cols, now=last + pd.Timedelta(hours=50))
    assert out["signals_since_last_visit"].tolist() == [2, 0, 0, 1]
    assert out.attrs["n_due_now"] == 3


def test_jump_and_delay_edges():
    assert jump_hours([0.5], [1.0], [0.0])[0] == np.inf  # no false signal: one signal is a change
    assert jump_hours([0.0], [1.0], [0.5])[0] == 0.0
    assert effective_delay([24.0], [0], [0.5], [np.inf])[0] == 48.0  # no signal: I/(1 - q), also with J = inf
    assert effective_delay([24.0], [1], [0.5], [np.inf])[0] == -np.inf


def test_expected_fetch_interval_against_simulation():
    """E[T] for T = min{t: (1 - q) t + N(t) J >= I}: the quadrature against 20,000 simulated pages (4 SE)."""
    i, q, lam, j = 30.0, 0.4, 0.08, 12.0
    got = expected_fetch_interval([i], [q], [lam], [j], nodes=2048)[0]
    gen = np.random.default_rng(5)
    gaps = gen.exponential(1 / lam, size=(20_000, 4))
    arrivals = np.cumsum(gaps, axis=1)
    t_max = i / (1 - q)
    # with k signals by time t_k, the clock reaches I at (I - k J)/(1 - q): T = min_k max(t_k, (I - k J)/(1 - q))
    k = np.arange(0, 5)
    t_k = np.concatenate([np.zeros((20_000, 1)), arrivals], axis=1)
    t = np.min(np.maximum(t_k, (i - k * j) / (1 - q)), axis=1)
    assert abs(got - t.mean()) < 4 * t.std() / np.sqrt(t.size)
    closed = (1 - np.exp(-lam * t_max)) / lam  # J = inf: E[min(T_max, Exp(λ))]
    assert expected_fetch_interval([i], [q], [lam], [np.inf], nodes=2048)[0] == pytest.approx(closed, abs=t_max / 2048)


def test_schedule_with_signals_moves_informed_pages_only():
    v, s = _log()
    s = s[s["page"] != "p0"]  # p0: no signal ever, the index's next fetch
    plain = _quiet(schedule, v).schedule
    with_sig = _quiet(schedule, v, signals=s, rng=2)
    out = with_sig.schedule
    pd.testing.assert_frame_equal(out[plain.columns].drop(columns="next_fetch"), plain.drop(columns="next_fetch"))
    row = out.set_index("url").loc["p0"]
    assert row["fetch_trigger"] == "index" and row["next_fetch"] == plain.set_index("url").loc["p0", "next_fetch"]
    informed = out["fetch_trigger"] != "index"
    assert informed.sum() == 11
    counts = {k: out.attrs[f"n_{k}"] for k in ("on_signal", "index", "both")}
    assert sum(counts.values()) == len(out)
    assert with_sig.signal_audit.signals_kept > 0


def test_cli_estimate_and_schedule_with_signals(tmp_path, capsys):
    from changerate_bayes.cli import main

    v, s = _log()
    log = _write_log(tmp_path, v, s, name="plain.csv", keep_signals=False)
    spath = tmp_path / "signals.csv"
    s.assign(signal_time=s["signal_time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")).to_csv(spath, index=False)
    out = tmp_path / "est.csv"
    assert main(["estimate", str(log), "--signals", str(spath), "--out", str(out), "--seed", "4"]) == 0
    text = capsys.readouterr().out
    assert f"signals: read {len(s)} from 1 file(s)" in text
    table = pd.read_csv(out)
    assert set(SIGNAL_COLUMNS) <= set(table.columns)
    sched = tmp_path / "sched.csv"
    assert main(["schedule", str(log), "--signals", str(spath), "--out", str(sched)]) == 0
    text = capsys.readouterr().out
    assert "signals: next fetch by fetch_trigger: on_signal" in text and "the budget counts index crawls" in text
    assert set(pd.read_csv(sched)["fetch_trigger"]) <= {"on_signal", "index", "both"}
    # a bad signals file: one line naming the file, line and column, exit status 2
    spath.write_text("page,signal_time\np1,not a time\n")
    assert main(["schedule", str(log), "--signals", str(spath), "--out", str(sched)]) != 0
    assert "signals.csv: line 2, column 'signal_time'" in capsys.readouterr().err


def test_prior_on_a_sample_of_pages(monkeypatch):
    """Above PRIOR_PAGES the prior is fitted on a seeded sample: the pages taken are those pages' data."""
    import changerate_bayes.crawllog.signal_log as sl
    from changerate_bayes.crawllog import signal_columns

    v, s = _log()
    log = read_frame(v)
    table = pd.DataFrame({"page": log.page_ids, "last_visit": log.last_visit})
    matched = log_signals(table, [part_signals(log, *unique_signals(s))], s)
    picked = np.array([1, 4, 7])
    sub = sl._take(matched.data, picked)
    for key, values in sub.totals().items():
        np.testing.assert_array_equal(values, matched.data.totals()[key][picked])
    np.testing.assert_array_equal(sub.lengths, matched.data.lengths[picked])
    monkeypatch.setattr(sl, "PRIOR_PAGES", 6)
    a, b = signal_columns(matched, rng=3), signal_columns(matched, rng=3)
    pd.testing.assert_frame_equal(a, b)
    assert a["signal_recall"].between(0, 1).all()


@pytest.mark.parametrize(
    "data, what",
    [(b"", "No columns to parse"), (b"\xff\xfe\x00garbage\n", "can't decode"), (b"\x1f\x8b\x08\x00\x00", "cannot")],
    ids=["empty", "not-utf8", "cut-gzip"],
)
def test_a_log_that_cannot_be_read_is_named_before_its_signal_rows_are_looked_for(tmp_path, capsys, data, what):
    """Looking for a log's signal rows must not replace the reader's message naming the file."""
    from changerate_bayes.cli import main

    path = tmp_path / ("log.csv.gz" if data.startswith(b"\x1f\x8b") else "log.csv")
    path.write_bytes(data)
    assert main(["estimate", str(path), "--out", str(tmp_path / "e.csv")]) == 2
    err = capsys.readouterr().err
    assert f"{path}" in err and what in err
