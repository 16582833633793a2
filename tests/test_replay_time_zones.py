"""Naive and time-zone-aware times together are refused by the replay, as by the log readers."""

import datetime as dt

import pandas as pd
import pytest

from changerate_bayes.cli import main
from changerate_bayes.io._times import time_kinds
from changerate_bayes.replay import pages_from_table

AWARE_WINDOW = ("2024-01-01T00:00Z", "2024-01-10T00:00Z")


def test_time_kinds_follows_the_log_readers_rule():
    values = [
        "2024-01-02T00:00Z",
        "2024-01-02T00:00",
        "2024-01-02",
        "2024-01-02 01:00+01:00",
        "2024-01-02T01:00-0500",
        pd.Timestamp("2024-01-02", tz="UTC"),
        dt.datetime(2024, 1, 2, 3),
        dt.date(2024, 1, 2),
    ]
    assert time_kinds(values).tolist() == [1, 0, -1, 1, 1, 1, 0, -1]
    assert time_kinds(pd.Series(pd.to_datetime(["2024-01-02"], utc=True))).tolist() == [1]


def test_mixed_change_times_are_refused_naming_the_row_and_column():
    changes = pd.DataFrame({"page": ["a", "a"], "timestamp": ["2024-01-02T00:00Z", "2024-01-03T00:00"]})
    with pytest.raises(
        ValueError,
        match=r"^row 1, column 'timestamp': naive and time-zone-aware times are mixed "
        r"\(row 0, column 'timestamp' is time-zone-aware",
    ):
        pages_from_table(changes, window=AWARE_WINDOW)


def test_a_window_of_the_other_kind_is_refused_naming_the_argument():
    changes = pd.DataFrame({"page": ["a", "a"], "timestamp": ["2024-01-02T00:00", "2024-01-03T00:00"]})
    with pytest.raises(ValueError, match=r"^`window` start: naive and time-zone-aware"):
        pages_from_table(changes, window=AWARE_WINDOW)
    win = pd.DataFrame({"page": ["a"], "start": ["2024-01-01T00:00"], "end": [pd.Timestamp("2024-01-10", tz="UTC")]})
    with pytest.raises(ValueError, match=r"^row 0 of `window`, column 'end': naive and time-zone-aware"):
        pages_from_table(changes, window=win)
    own = changes.assign(start="2024-01-01T00:00", end=["2024-01-10T00:00+00:00"] * 2)
    with pytest.raises(ValueError, match=r"^row 0, column 'end': naive and time-zone-aware"):
        pages_from_table(own, window=None)


def test_times_of_one_kind_and_dates_alone_are_read():
    aware = pd.DataFrame({"page": ["a", "a"], "timestamp": ["2024-01-02T00:00Z", "2024-01-03T06:00+06:00"]})
    naive = pd.DataFrame({"page": ["a", "a"], "timestamp": ["2024-01-02T00:00", "2024-01-03T00:00"]})
    ms = [
        pages_from_table(aware, window=("2024-01-01", "2024-01-10")),  # a date alone goes with either kind
        pages_from_table(naive, window=("2024-01-01", "2024-01-10")),
        pages_from_table(naive, window=("2024-01-01T00:00", "2024-01-10T00:00")),
        pages_from_table(aware, window=AWARE_WINDOW),
    ]
    day = 86_400_000
    for p in ms:
        assert p.change_ms.tolist() == [19724 * day, 19725 * day]  # 2024-01-02 and -03 at 00:00 UTC
        assert p.start_ms.tolist() == [19723 * day] and p.end_ms.tolist() == [19732 * day]
    typed = pd.DataFrame({"page": ["a"], "timestamp": pd.to_datetime(["2024-01-02"], utc=True)})
    assert pages_from_table(typed, window=AWARE_WINDOW).change_ms.tolist() == [19724 * day]


def test_the_command_names_the_file_line_and_column(tmp_path, capsys):
    ch = tmp_path / "changes.csv"
    ch.write_text("page,timestamp\na,2024-01-02T00:00Z\na,2024-01-03T00:00\n")
    code = main(
        ["replay", str(ch), "--window", *AWARE_WINDOW, "--budget", "1", "--policies", "uniform", "--n-boot", "0"]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert f"line 3 of {ch}, column 'timestamp': naive and time-zone-aware times are mixed" in err
    win = tmp_path / "windows.csv"
    win.write_text("page,start,end\na,2024-01-01T00:00Z,2024-01-10T00:00\n")
    naive = tmp_path / "naive.csv"
    naive.write_text("page,timestamp\na,2024-01-02T00:00Z\n")
    assert (
        main(["replay", str(naive), "--windows", str(win), "--budget", "1", "--policies", "uniform", "--n-boot", "0"])
        == 2
    )
    assert f"line 2 of {win}, column 'end': naive and time-zone-aware" in capsys.readouterr().err
