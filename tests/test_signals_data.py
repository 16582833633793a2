"""Counting signals per crawl interval from a table of crawls and a table of signals,
against a page-by-page reference written from the definition, and the refusals of bad
tables."""

import numpy as np
import pandas as pd
import pytest

from changerate_bayes.signals import SignalData, signal_data


def _reference(visits, signals, end):
    """Per page (intervals, changed, counts, tail time, tail count) by plain loops."""
    out = {}
    for page in pd.unique(visits["page"]):
        v = visits[visits["page"] == page].sort_values("timestamp")
        times, changed = v["timestamp"].to_list(), v["changed"].to_list()
        sig = sorted(set(signals.loc[signals["page"] == page, "timestamp"].to_list()))
        counts = [sum(1 for s in sig if a < s <= b) for a, b in zip(times[:-1], times[1:])]
        tail = sum(1 for s in sig if times[-1] < s <= end)
        out[page] = ([b - a for a, b in zip(times[:-1], times[1:])], changed[1:], counts, end - times[-1], tail)
    return out


def _tables(rng, n_pages=6):
    rows = []
    for i in range(n_pages):
        times = np.unique(rng.integers(0, 40, size=rng.integers(1, 9))).astype(float)
        rows += [(f"p{i}", t, int(rng.integers(0, 2))) for t in times]
    visits = pd.DataFrame(rows, columns=["page", "timestamp", "changed"]).sample(frac=1.0, random_state=1)
    pages = rng.choice([f"p{i}" for i in range(n_pages + 2)], size=120)  # p6, p7 are never crawled
    stimes = rng.integers(0, 45, size=120).astype(float)  # integers: ties with crawls and duplicates
    signals = pd.DataFrame({"page": pages, "timestamp": stimes})
    return visits, signals


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_counts_match_a_page_by_page_reference(seed):
    rng = np.random.default_rng(seed)
    visits, signals = _tables(rng)
    data, audit = signal_data(visits, signals, end=50.0)
    ref = _reference(visits, signals, 50.0)
    assert list(data.page_ids) == list(ref)
    for i, page in enumerate(ref):
        sl = slice(data.offsets[i], data.offsets[i + 1])
        tau, changed, counts, tail_time, tail = ref[page]
        np.testing.assert_array_equal(data.intervals[sl], tau)
        np.testing.assert_array_equal(data.changed[sl], changed)
        np.testing.assert_array_equal(data.signals[sl], counts)
        assert data.tail_time[i] == tail_time
        assert data.tail_signals[i] == tail
    # the audit accounts for every signal row
    unknown = (~signals["page"].isin(visits["page"])).sum()
    known = signals[signals["page"].isin(visits["page"])]
    duplicates = len(known) - len(known.drop_duplicates())
    first = visits.groupby("page")["timestamp"].min()
    distinct = known.drop_duplicates()
    early = (distinct["timestamp"] <= distinct["page"].map(first)).sum()
    assert audit["unknown_page"] == unknown
    assert audit["duplicates"] == duplicates
    assert audit["before_first_visit"] == early
    assert audit["after_end"] == 0
    assert audit["signals_used"] == data.signals.sum() + data.tail_signals.sum()
    assert sum(
        audit[k] for k in ("unknown_page", "duplicates", "before_first_visit", "after_end", "signals_used")
    ) == len(signals)


def test_datetimes_are_days_and_signals_after_the_end_are_dropped():
    t0 = pd.Timestamp("2024-01-01", tz="UTC")
    visits = pd.DataFrame(
        {
            "url": ["a"] * 3,
            "at": [t0, t0 + pd.Timedelta(hours=36), t0 + pd.Timedelta(days=3)],
            "diff": [False, True, False],
        }
    )
    signals = pd.DataFrame(
        {
            "url": ["a", "a", "a"],
            "at": [t0 + pd.Timedelta(hours=12), t0 + pd.Timedelta(days=4), t0 + pd.Timedelta(days=9)],
        }
    )
    data, audit = signal_data(visits, signals, end=t0 + pd.Timedelta(days=5), page="url", time="at", changed="diff")
    np.testing.assert_allclose(data.intervals, [1.5, 1.5])
    assert data.signals.tolist() == [1, 0]
    assert data.changed.tolist() == [1, 0]
    assert data.tail_time.tolist() == [2.0]
    assert data.tail_signals.tolist() == [1]
    assert audit["after_end"] == 1


def test_by_default_the_observation_ends_at_the_latest_time():
    visits = pd.DataFrame({"page": ["a", "a", "b"], "timestamp": [0.0, 2.0, 1.0], "changed": [0, 1, 0]})
    signals = pd.DataFrame({"page": ["b"], "timestamp": [6.0]})
    data, _ = signal_data(visits, signals)
    assert data.tail_time.tolist() == [4.0, 5.0]
    assert data.tail_signals.tolist() == [0, 1]
    assert data.lengths.tolist() == [1, 0]


_NO_SIGNALS = pd.DataFrame({"page": pd.Series([], dtype=object), "timestamp": pd.Series([], dtype=float)})


@pytest.mark.parametrize(
    ("visits", "signals", "kwargs", "error", "match"),
    [
        ({"page": ["a"], "timestamp": [0.0]}, None, {}, ValueError, "no column 'changed'"),
        ({"page": ["a"], "timestamp": [0.0], "changed": [0]}, {"page": ["a"]}, {}, ValueError, "no column 'timestamp'"),
        ({"page": ["a", "a"], "timestamp": [0.0, np.nan], "changed": [0, 1]}, None, {}, ValueError, "row 1"),
        (
            {"page": ["a"], "timestamp": [0.0], "changed": [0]},
            {"page": ["a"], "timestamp": [np.inf]},
            {},
            ValueError,
            "signals column 'timestamp'",
        ),
        ({"page": ["a", "a"], "timestamp": [0.0, 1.0], "changed": [0, 2]}, None, {}, ValueError, "0 or 1"),
        ({"page": ["a", "a"], "timestamp": [1.0, 1.0], "changed": [0, 1]}, None, {}, ValueError, "two crawls"),
        ({"page": ["a", "a"], "timestamp": [0.0, 3.0], "changed": [0, 1]}, None, {"end": 2.0}, ValueError, "`end`"),
        ({"page": ["a"], "timestamp": ["x"], "changed": [0]}, None, {}, TypeError, "datetimes or numbers"),
        ({"page": ["a"], "timestamp": [0.0], "changed": ["y"]}, None, {}, TypeError, "'changed'"),
    ],
)
def test_bad_tables_are_refused_with_the_column_named(visits, signals, kwargs, error, match):
    with pytest.raises(error, match=match):
        signal_data(pd.DataFrame(visits), _NO_SIGNALS if signals is None else pd.DataFrame(signals), **kwargs)


def test_tables_must_be_data_frames():
    with pytest.raises(TypeError, match="`visits` must be a pandas DataFrame"):
        signal_data({"page": ["a"]}, _NO_SIGNALS)


def _fields(**change):
    fields = {
        "intervals": np.array([1.0, 2.0, 1.0]),
        "changed": np.array([1, 0, 1], dtype=np.int8),
        "signals": np.array([2, 0, 1]),
        "offsets": np.array([0, 2, 3]),
        "tail_time": np.array([0.5, 0.0]),
        "tail_signals": np.array([1, 0]),
    }
    fields.update(change)
    return fields


def test_the_constructor_stores_arrays_of_the_documented_dtypes():
    d = SignalData(**_fields(intervals=[1, 2, 1], changed=[True, False, True], offsets=[0, 2, 3]))
    assert d.intervals.dtype == np.float64 and d.changed.dtype == np.int8 and d.offsets.dtype == np.int64
    assert d.n_pages == 2 and d.lengths.tolist() == [2, 1]


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"intervals": np.array([1.0, -2.0, 1.0])}, ValueError, r"`intervals` must be > 0 and finite days; got -2"),
        ({"intervals": np.array([1.0, np.nan, 1.0])}, ValueError, r"`intervals` must be > 0 and finite days; got nan"),
        ({"intervals": np.array([1.0, 2.0])}, ValueError, r"`intervals`, `changed` and `signals` must be 1-D of one"),
        ({"signals": np.array([2, 0])}, ValueError, r"of one length; got shapes \(3,\), \(3,\), \(2,\)"),
        ({"signals": np.array([2, -1, 1])}, ValueError, r"`signals` must be >= 0; got -1"),
        ({"signals": np.array([2.5, 0, 1])}, ValueError, r"`signals` must hold whole numbers"),
        ({"changed": np.array([1, 2, 1])}, ValueError, r"`changed` must hold 0 or 1; got 2"),
        ({"changed": np.array(["a", "b", "c"])}, TypeError, r"`changed` must hold integers"),
        ({"offsets": np.array([0, 2, 4])}, ValueError, r"`offsets` must be non-decreasing from 0 to 3"),
        ({"offsets": np.array([0, 3, 2, 3])}, ValueError, r"`offsets` must be non-decreasing"),
        ({"tail_time": np.array([0.5])}, ValueError, r"`tail_time` and `tail_signals` must have shape \(2,\)"),
        ({"tail_time": np.array([-0.5, 0.0])}, ValueError, r"`tail_time` must be >= 0"),
        ({"tail_signals": np.array([1, 1])}, ValueError, r"0 where `tail_time` is 0"),
        ({"page_ids": np.array(["a"])}, ValueError, r"`page_ids` must have shape \(2,\)"),
    ],
)
def test_the_constructor_refuses_bad_fields(change, error, match):
    with pytest.raises(error, match=match):
        SignalData(**_fields(**change))
