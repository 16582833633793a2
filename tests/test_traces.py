"""The shipped traces, their loader and the parsing of event times (`_times`)."""

import datetime as dt
import re
from importlib import resources
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from changerate_bayes._event_times import as_event_times, parse_timestamps
from changerate_bayes.traces import list_traces, load_trace, read_trace_csv, trace_info


def _sources_table():
    """Rows of the table in data/SOURCES.md: name -> (events, first, last, ties, mean gap)."""
    text = (resources.files("changerate_bayes.traces") / "data" / "SOURCES.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| (\S+)\.csv \| [^|]+ \| (\d+) \| (\S+) \| (\S+) \| (\d+) \| ([\d.]+) \|", line)
        if m:
            rows[m.group(1)] = (int(m.group(2)), m.group(3), m.group(4), int(m.group(5)), float(m.group(6)))
    return rows


SOURCES = _sources_table()


def test_sources_table_lists_every_shipped_trace():
    assert len(list_traces()) == 12
    assert sorted(SOURCES) == list_traces()


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_trace_matches_sources_md(name):
    events, first, last, ties, mean_gap = SOURCES[name]
    t = load_trace(name)
    assert t.dtype == np.dtype("datetime64[us]")
    assert t.size == events
    assert str(t[0])[:10] == first and str(t[-1])[:10] == last
    assert int(np.sum(np.diff(t) == np.timedelta64(0, "us"))) == ties
    hours = as_event_times(t).values
    # mean gap rounded to 2 decimals in SOURCES.md
    assert abs(hours[-1] / (events - 1) - mean_gap) <= 0.005 + 1e-9
    assert np.all(np.diff(hours) >= 0)


def test_trace_kinds_and_crawl_intervals():
    kinds = {n: trace_info(n).kind for n in list_traces()}
    assert {n for n, k in kinds.items() if k == "crawl_detections"} == {
        n for n in list_traces() if n.startswith("gitscrape_")
    }
    assert trace_info("gitscrape_scrape-hacker-news-by-domain_simonwillison-net").crawl_interval_hours == 1.0
    assert trace_info("wikipedia_oblast").crawl_interval_hours is None
    assert kinds["git_awesome-python_README"] == "commits"


def test_unknown_trace_name():
    with pytest.raises(ValueError, match="`name` must be one of the shipped traces"):
        load_trace("no_such_trace")
    with pytest.raises(TypeError, match="`name`"):
        trace_info(3)


@pytest.mark.parametrize(
    "body, line, message",
    [
        ("2020-01-01T00:00:00Z\nnot a time\n", 3, "cannot parse 'not a time'"),
        ("2020-01-02T00:00:00Z\n2020-01-01T00:00:00Z\n", 3, "earlier than the line before"),
        ("2020-01-01T00:00:00Z\n2020-01-01T00:00:00Z,x\n", 3, "expected one column"),
        ("2020-01-01T00:00:00Z\n2020-01-01T01:00:00+00:00\n2020-01-01T02:00:00\n", 4, "time zone none (naive)"),
        ("2020-01-01T00:00:00Z\n2020-01-01T01:00:00\n", 3, "differs from UTC+0:00:00 at line 2"),
        ("2020-01-01T00:00:00Z\n\n", 3, "expected one column, got 0"),
    ],
)
def test_malformed_trace_file_names_the_line(tmp_path, body, line, message):
    path = tmp_path / "bad.csv"
    path.write_text("timestamp\n" + body, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"bad.csv line {line}: .*{re.escape(message)}"):
        read_trace_csv(path)


def test_malformed_header(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("time\n2020-01-01T00:00:00Z\n", encoding="utf-8")
    with pytest.raises(ValueError, match="first line must be the header 'timestamp'"):
        read_trace_csv(path)


def test_trace_file_with_ties_loads(tmp_path):
    path = tmp_path / "ties.csv"
    path.write_text("timestamp\n2020-01-01T00:00:00Z\n2020-01-01T00:00:00Z\n2020-01-01T03:00:00Z\n")
    t = read_trace_csv(path)
    assert as_event_times(t).values.tolist() == [0.0, 0.0, 3.0]


# ----------------------------------------------------------------------------- _times
def test_floats_are_kept_in_their_unit():
    et = as_event_times([0.5, 1.5, 1.5, 4.0])
    assert et.values.tolist() == [0.5, 1.5, 1.5, 4.0]
    assert et.unit == "input units" and et.origin is None and et.resolution is None


def test_datetimes_become_hours_since_the_first_event():
    et = as_event_times(
        np.array(["2020-01-01T00:00:00", "2020-01-01T01:30:00", "2020-01-02T00:00:00"], dtype="datetime64[s]")
    )
    assert et.values.tolist() == [0.0, 1.5, 24.0]
    assert et.unit == "hours" and et.origin == np.datetime64("2020-01-01T00:00:00")
    # 00:00, 01:30 and 24:00 are whole minutes, not whole hours: the precision is 1 min
    assert et.resolution == pytest.approx(1 / 60)


def test_resolution_is_the_timestamp_precision():
    assert as_event_times(["2020-01-01T00:00:00Z", "2020-01-01T01:30:00Z"]).resolution == pytest.approx(1 / 60)
    assert as_event_times(["2020-01-01T00:00:01Z", "2020-01-01T01:30:00Z"]).resolution == pytest.approx(1 / 3600)
    assert as_event_times(["2020-01-01T00:00:00Z", "2020-01-03T00:00:00Z"]).resolution == 24.0
    assert as_event_times(load_trace("wikipedia_oblast")).resolution == pytest.approx(1 / 3600)


def test_iso_strings_with_offsets_are_converted_to_utc():
    et = as_event_times(["2020-01-01T01:00:00+01:00", "2020-01-01T02:00:00+01:00"])
    assert et.origin == np.datetime64("2020-01-01T00:00:00") and et.values.tolist() == [0.0, 1.0]


def test_one_named_zone_across_daylight_saving_is_one_zone():
    london = ZoneInfo("Europe/London")
    t = [dt.datetime(2020, 3, 28, 12, tzinfo=london), dt.datetime(2020, 3, 30, 12, tzinfo=london)]
    assert as_event_times(t).values.tolist() == [0.0, 47.0]  # the clocks went forward on March 29


def test_different_utc_offsets_are_exact_instants():
    """ISO strings of one zone across daylight saving (+01:00, then +02:00), aware datetimes with
    different fixed offsets, ZoneInfo datetimes and a pandas tz-aware index: the same instants."""
    import pandas as pd  # a dependency of statsmodels

    iso = ["2021-03-27T12:00:00+01:00", "2021-03-28T12:00:00+02:00", "2021-03-29T12:00:00+02:00"]
    fixed = [
        dt.datetime(2021, 3, 27, 12, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        dt.datetime(2021, 3, 28, 12, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        dt.datetime(2021, 3, 29, 12, tzinfo=dt.timezone(dt.timedelta(hours=2))),
    ]
    berlin = ZoneInfo("Europe/Berlin")
    zoned = [dt.datetime(2021, 3, d, 12, tzinfo=berlin) for d in (27, 28, 29)]
    index = pd.DatetimeIndex(["2021-03-27 12:00", "2021-03-28 12:00", "2021-03-29 12:00"]).tz_localize(berlin)
    mixed = ["2021-03-27T11:00:00Z", "2021-03-28T05:00:00-05:00", "2021-03-29T12:00:00+02:00"]
    for t in (iso, fixed, zoned, index, mixed):
        et = as_event_times(t)
        assert et.values.tolist() == [0.0, 23.0, 47.0]  # the clocks went forward on March 28
        assert et.origin == np.datetime64("2021-03-27T11:00:00")


def test_utc_spellings_are_one_zone():
    t = [dt.datetime(2020, 1, 1, tzinfo=ZoneInfo("UTC")), dt.datetime(2020, 1, 2, tzinfo=dt.UTC)]
    assert as_event_times(t).values.tolist() == [0.0, 24.0]


@pytest.mark.parametrize(
    "values, row, message",
    [
        ([0.0, 1.0, float("nan")], 2, "is nan; times must be finite"),
        ([0.0, np.inf], 1, "is inf"),
        ([0.0, 2.0, 1.0], 2, "earlier than row 1"),
        (np.array([1.0, None], dtype=object), 1, "is missing (None/NaN)"),
        (["2020-01-01T00:00Z", "yesterday"], 1, "cannot parse 'yesterday'"),
        (["2020-01-01T00:00Z", None], 1, "is missing"),
        (np.array(["2020-01-01", "NaT"], dtype="datetime64[s]"), 1, "NaT"),
        (np.array([np.datetime64("2020-01-01"), np.datetime64("NaT")], dtype=object), 1, "NaT"),
        (["2020-01-01T00:00:00Z", "2020-01-01T01:00:00"], 1, "time zone none (naive) differs"),
        (["2020-01-01T00:00:00", "2020-01-01T01:00:00+02:00"], 1, "naive times (no UTC offset) mixed with"),
        (
            [dt.datetime(2020, 1, 1, tzinfo=ZoneInfo("Europe/Paris")), np.datetime64("2020-01-02T00:00")],
            1,
            "time zone none (naive) differs from UTC+1:00:00 at row 0",
        ),
        (["2020-01-02T00:00:00Z", "2020-01-01T00:00:00Z"], 1, "earlier than row 0"),
        (["2020-01-01T00:00:00Z", 3.5], 1, "cannot parse '3.5'"),
        (np.array(["2020-01-01T00:00:00Z", 3.5], dtype=object), 1, "expected a timestamp, got float"),
    ],
)
def test_bad_times_name_the_row(values, row, message):
    with pytest.raises(ValueError, match=rf"`event_times` row {row}: .*{re.escape(message)}"):
        as_event_times(values)


def test_pandas_nat_names_the_row():
    import pandas as pd  # a dependency of statsmodels

    with pytest.raises(ValueError, match=r"row 1: is NaT"):
        as_event_times(np.array([pd.Timestamp("2020-01-01"), pd.NaT], dtype=object))


@pytest.mark.parametrize(
    "bad, err",
    [
        ("2020-01-01", TypeError),
        ([[0.0, 1.0]], ValueError),
        ([True, False], TypeError),
        ([[0.0, 1.0], [2.0]], ValueError),
        ({1: 2}, TypeError),
        (7.0, TypeError),
        ({3.0, 4.0}, TypeError),
        (None, TypeError),
    ],
)
def test_wrong_shapes_and_types(bad, err):
    with pytest.raises(err, match="`event_times`"):
        as_event_times(bad)


def test_parse_timestamps_row_offset_names_file_lines():
    with pytest.raises(ValueError, match=r"`f` row 7: cannot parse"):
        parse_timestamps(["2020-01-01T00:00Z", "x"], name="f", row_offset=6)


def test_empty_input_is_empty():
    assert as_event_times([]).values.size == 0
    assert as_event_times(np.array([], dtype="datetime64[us]")).origin is None
