"""Forms of a time the readers accept: HTTP dates in every form of RFC 9110, and epoch seconds.

- Last-Modified in the obsolete RFC 850 and asctime forms, or with ``gmt``, ``UTC`` or a
  numeric offset, is the instant an IMF-fixdate of the same moment gives;
- a number (a numeric column, or text that is a decimal number) is seconds since
  1970-01-01T00:00:00Z, exact to the nanosecond as text; 1e11 or more (milliseconds) is refused.
"""

import numpy as np
import pandas as pd
import pytest
from _io_engines import assert_engines_agree, dask_client_fixture, engines  # noqa: F401 (the fixture `client`)

from changerate_bayes.io import CrawlLogError, read_csv, read_frame, read_parquet

pytestmark = pytest.mark.xdist_group("dask_cluster")


# 1994-11-06 08:49:37 UTC in each form a server may send (RFC 9110 section 5.6.7), and with other zones
_SAME_INSTANT = [
    "Sun, 06 Nov 1994 08:49:37 GMT",  # IMF-fixdate
    "Sunday, 06-Nov-94 08:49:37 GMT",  # RFC 850
    "Sun Nov  6 08:49:37 1994",  # asctime
    "Sun, 06 Nov 1994 08:49:37 gmt",
    "Sun, 06 Nov 1994 08:49:37 UTC",
    "Sun, 06 Nov 1994 10:49:37 +0200",
    "Sun, 06 Nov 1994 03:49:37 -0500",
]
_INSTANT_NS = np.datetime64("1994-11-06T08:49:37", "ns").astype(np.int64)


def _with_last_modified(values):
    """Page a: visits on 1 and 2 January 2024 whose Last-Modified is ``values`` (the second one changed)."""
    return pd.DataFrame(
        {
            "page": ["a"] * len(values),
            "fetch_time": [f"2024-01-0{i + 1}T00:00:00Z" for i in range(len(values))],
            "last_modified": values,
        }
    )


@pytest.mark.parametrize("form", _SAME_INSTANT)
def test_every_http_date_form_is_the_same_instant(form):
    # visit 1: Last-Modified 1994; visit 2: a date 1 h before it (2024-01-01T23:00Z) in the IMF form
    log = read_frame(_with_last_modified([form, "Mon, 01 Jan 2024 23:00:00 GMT"]))
    assert log.history.flat_changed.tolist() == [1]
    assert log.last_modified_age.tolist() == [1.0]
    # the instant itself, through the age of a change it dates: visit 2 of a page fetched in 1994
    frame = pd.DataFrame(
        {
            "page": ["b", "b"],
            "fetch_time": ["1994-11-06T00:00:00Z", "1994-11-06T09:49:37Z"],
            "last_modified": ["Sat, 05 Nov 1994 00:00:00 GMT", form],
        }
    )
    log = read_frame(frame)
    assert log.history.flat_changed.tolist() == [1]
    assert log.last_modified_age.tolist() == [1.0]  # 09:49:37 - 08:49:37


def test_http_dates_are_parsed_once_per_distinct_value(monkeypatch):
    import email.utils

    calls = []
    real = email.utils.parsedate_to_datetime

    def counting(text):
        calls.append(text)
        return real(text)

    monkeypatch.setattr(email.utils, "parsedate_to_datetime", counting)
    n = 3000
    forms = ["Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "Mon, 01 Jan 2024 12:00:00 UTC"]
    frame = pd.DataFrame(
        {
            "page": [f"p{i % 300}" for i in range(n)],
            "fetch_time": [f"2024-02-{1 + i // 300:02d}T00:00:00Z" for i in range(n)],
            "last_modified": [forms[i % 3] for i in range(n)],
        }
    )
    read_frame(frame)
    assert sorted(calls) == sorted(forms)


@pytest.mark.parametrize(
    "bad",
    ["Sun, 06 Nov 1994 08:49:37 XYZ", "Sunday, 06-Nov-94 08:49:37", "Nov 6 1994", "Sun, 31 Feb 1994 08:49:37 GMT"],
)
def test_a_date_of_no_known_form_or_zone_is_refused(bad):
    # email.utils would read an unknown zone as naive: such a date is not guessed
    with pytest.raises(CrawlLogError, match=r"row 2, column 'last_modified': unparsable time"):
        read_frame(_with_last_modified(["Sun, 06 Nov 1994 08:49:37 GMT", bad]))


def test_http_date_forms_on_every_engine(tmp_path, client):
    text = "page,fetch_time,digest,last_modified\n" + "".join(
        f'p{i},2024-01-0{d}T00:00:00Z,{"ab"[d > 2]},"{lm}"\n'
        for i in range(4)
        for d, lm in [
            (1, _SAME_INSTANT[i]),
            (2, _SAME_INSTANT[i + 1]),
            (3, "Tue, 02 Jan 2024 12:00:00 +0000"),
            (4, "Tuesday, 02-Jan-24 12:00:00 GMT"),
        ]
    )
    out = engines(tmp_path, text, client=client)
    assert out["frame"][0]["n_changes"].tolist() == [1, 1, 1, 1]
    assert_engines_agree(out)


_EPOCH_CSV = (
    "page,fetch_time,digest\na,1700000000,x\na,1700003600,y\na,1700010800.25,y\nb,1700000000.5,x\nb,1700086400.5,x\n"
)


def test_epoch_seconds_as_text(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(_EPOCH_CSV)
    log = read_csv(path)
    assert log.history.flat_intervals.tolist() == [1.0, 7200.25 / 3600, 24.0]
    assert log.history.flat_changed.tolist() == [1, 0, 0]
    assert log.first_visit.tolist() == [
        np.datetime64("2023-11-14T22:13:20", "ns").astype(int),
        np.datetime64("2023-11-14T22:13:20.5", "ns").astype(int),
    ]


def test_epoch_seconds_as_text_are_exact_to_the_nanosecond():
    frame = pd.DataFrame({"page": ["a", "a"], "fetch_time": ["1700000000.123456789", "-86400.25"], "changed": [0, 1]})
    log = read_frame(frame)
    assert log.first_visit.astype(np.int64).tolist() == [-86_400_250_000_000]
    assert log.last_visit.astype(np.int64).tolist() == [1_700_000_000_123_456_789]


@pytest.mark.parametrize("dtype", ["int64", "float64", "Int64"])
def test_epoch_seconds_in_a_numeric_column(tmp_path, dtype):
    frame = pd.DataFrame(
        {
            "page": ["a", "a", "a"],
            "fetch_time": pd.array([1700000000, 1700003600, 1700010800], dtype=dtype),
            "digest": ["x", "y", "y"],
        }
    )
    log = read_frame(frame)
    assert log.history.flat_intervals.tolist() == [1.0, 2.0]
    path = tmp_path / "log.parquet"
    frame.to_parquet(path)
    assert read_parquet(path).history.flat_intervals.tolist() == [1.0, 2.0]


def test_epoch_seconds_are_time_zone_aware():
    # a number is an exact instant: with ISO times carrying an offset, fine; with naive ones, refused
    aware = pd.DataFrame(
        {"page": ["a"] * 3, "fetch_time": ["1700000000", "2023-11-14T23:13:20Z", "1700007200"], "changed": [0, 1, 0]}
    )
    assert read_frame(aware).history.flat_intervals.tolist() == [1.0, 1.0]
    naive = aware.assign(fetch_time=["1700000000", "2023-11-14T23:13:20", "1700007200"])
    with pytest.raises(CrawlLogError, match="naive and time-zone-aware times are mixed"):
        read_frame(naive)


MILLISECONDS = (
    r"row 1, column 'fetch_time': the number .* is too large for seconds since 1970-01-01 UTC .* milliseconds or "
    r"microseconds\?"
)


@pytest.mark.parametrize(
    "times, match",
    [
        # milliseconds are refused, not guessed
        *(
            ([value, value], MILLISECONDS)
            for value in ["1700000000000", "1700000000000.5", "-100000000000", 1_700_000_000_000, 1.7e12]
        ),
        # epoch seconds outside the years the reader holds
        (
            ["1700000000", "9300000000"],
            r"row 2, column 'fetch_time': time '9300000000' \(seconds since 1970-01-01 UTC\) is outside the years "
            "1678-2261",
        ),
    ],
)
def test_epoch_numbers_that_are_no_time_the_reader_holds_are_refused(times, match):
    frame = pd.DataFrame({"page": ["a", "a"], "fetch_time": times, "changed": [0, 1]})
    if not isinstance(times[0], str):
        frame["fetch_time"] = pd.Series(times)
    with pytest.raises(CrawlLogError, match=match):
        read_frame(frame)


def test_iso_basic_dates_stay_dates():
    # text is read as ISO-8601 first: 20240101 is 1 January 2024, not 20,240,101 seconds (the numbers of
    # crawl times, 9 to 10 digits or with a fraction, are no ISO-8601 form)
    frame = pd.DataFrame({"page": ["a", "a"], "fetch_time": ["20240101", "20240102"], "changed": [0, 1]})
    log = read_frame(frame)
    assert log.first_visit.tolist() == [np.datetime64("2024-01-01", "ns").astype(int)]


def test_epoch_seconds_on_every_engine(tmp_path, client):
    text = "page,fetch_time,digest,last_modified\n" + "".join(
        f"p{i},{1700000000 + 3600 * k + i}.{k},{'ab'[k > 1]},{1699990000 + 3600 * k}\n"
        for i in range(4)
        for k in range(4)
    )
    out = engines(tmp_path, text, client=client)
    assert out["frame"][0]["n_changes"].tolist() == [1] * 4
    assert_engines_agree(out)
    bad = text.replace("1700003602.1", "1700003602100", 1)
    out = engines(tmp_path, bad, client=client)
    assert "too large for seconds" in str(out["frame"])
    assert_engines_agree(out)
