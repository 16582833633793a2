"""Change semantics of the crawl-log readers, on small hand-written logs."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changerate_bayes.io import DROP_REASONS, CrawlLogError, read_csv, read_frame, read_log, read_parquet


def _csv(tmp_path, text, name="log.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _accounted(audit):
    return audit.visits_kept + audit.reference_visits + audit.dropped_total == audit.rows_read


def test_digest_semantics_failed_visits_and_304(tmp_path):
    # page a: ref x @0h; 1h failed (500); 3h digest y (changed, τ from 0h = 3h); 4h 304 (unchanged);
    # 6h digest y (unchanged vs y); 7h missing digest (dropped); 9h z (changed, τ = 3h)
    text = """page,fetch_time,status,digest
a,2024-01-01T00:00:00Z,200,x
a,2024-01-01T01:00:00Z,500,x
a,2024-01-01T03:00:00Z,200,y
a,2024-01-01T04:00:00Z,304,
a,2024-01-01T06:00:00Z,200,y
a,2024-01-01T07:00:00Z,200,
a,2024-01-01T09:00:00Z,200,z
"""
    log = read_csv(_csv(tmp_path, text))
    h = log.history
    assert h.flat_changed.tolist() == [1, 0, 0, 1]
    assert h.flat_intervals.tolist() == [3.0, 1.0, 2.0, 3.0]
    a = log.audit
    assert a.dropped_by("failed_status") == 1 and a.dropped_by("missing_digest") == 1
    assert a.reference_visits == 1 and a.visits_kept == 4 and _accounted(a)
    assert h.crawl_rate == pytest.approx(4 / 9.0)
    assert log.first_visit[0] == np.datetime64("2024-01-01T00:00:00")
    assert log.last_visit[0] == np.datetime64("2024-01-01T09:00:00")


def test_missing_status_and_status_400_dropped(tmp_path):
    text = """page,fetch_time,status,digest
a,2024-01-01T00:00Z,200,x
a,2024-01-01T01:00Z,,y
a,2024-01-01T02:00Z,404,y
a,2024-01-01T05:00Z,200,x
"""
    log = read_csv(_csv(tmp_path, text))
    assert log.history.flat_changed.tolist() == [0] and log.history.flat_intervals.tolist() == [5.0]
    assert log.audit.dropped_by("missing_status") == 1 and log.audit.dropped_by("failed_status") == 1


def test_unsorted_duplicates_single_visit_and_page_order(tmp_path):
    text = """page,fetch_time,digest
b,2024-01-01T02:00Z,q
a,2024-01-01T02:00Z,x
a,2024-01-01T01:00Z,w
a,2024-01-01T02:00Z,y
c,2024-01-01T00:00Z,k
a,2024-01-01T04:00Z,x
b,2024-01-01T03:00Z,q
"""
    log = read_csv(_csv(tmp_path, text))
    h = log.history
    # a sorted: w@1, x@2 (first of the duplicates at 2h in file order), x@4; b: q@2, q@3; c: single
    assert h.page_ids.tolist() == ["b", "a"]
    assert h.lengths.tolist() == [1, 2]
    assert h.flat_changed.tolist() == [0, 1, 0]
    assert h.flat_intervals.tolist() == [1.0, 1.0, 2.0]
    a = log.audit
    assert a.out_of_order == 1  # a@1h after a@2h in file order
    assert a.dropped_by("duplicate") == 1
    assert a.single_visit_pages == 1 and a.pages == 3 and a.pages_kept == 2
    assert _accounted(a)


def test_changed_column_and_reference_copy():
    df = pd.DataFrame(
        {
            "url": ["a"] * 4,
            "ts": ["2024-03-01T00:00", "2024-03-01T06:00", "2024-03-01T12:00", "2024-03-02T00:00"],
            "chg": [1, 1, "", 0],
        }
    )
    log = read_frame(df, columns={"page": "url", "fetch_time": "ts", "changed": "chg"})
    # first row is the reference copy (its 1 is ignored); the empty one is dropped
    assert log.history.flat_changed.tolist() == [1, 0]
    assert log.history.flat_intervals.tolist() == [6.0, 18.0]
    assert log.audit.dropped_by("missing_changed") == 1


def test_last_modified_now_is_ignored_and_counted():
    df = pd.DataFrame(
        {
            "page": ["a"] * 4,
            "fetch_time": ["2024-01-01T00:00Z", "2024-01-01T10:00Z", "2024-01-01T20:00Z", "2024-01-02T06:00Z"],
            "last_modified": ["2023-12-31T00:00Z", "2024-01-01T05:00Z", "2024-01-01T20:00Z", "2024-01-01T06:00Z"],
        }
    )
    log = read_frame(df, change_from="last_modified")
    # visit 2: lm 5h > previous visit 0h -> changed; visit 3: lm == fetch time -> ignored, dropped;
    # visit 4: lm 6h, previous kept visit 10h -> unchanged, τ = 20h
    assert log.history.flat_changed.tolist() == [1, 0]
    assert log.history.flat_intervals.tolist() == [10.0, 20.0]
    assert log.audit.last_modified_ignored == 1
    assert log.audit.dropped_by("missing_last_modified") == 1


def test_last_modified_counted_when_digest_decides(tmp_path):
    text = """page,fetch_time,digest,last_modified
a,2024-01-01T00:00Z,x,2024-01-01T00:00Z
a,2024-01-01T01:00Z,x,2024-01-01T03:00Z
a,2024-01-01T02:00Z,y,2023-01-01T00:00Z
"""
    log = read_csv(_csv(tmp_path, text))
    assert log.audit.change_source == "digest"
    assert log.audit.last_modified_ignored == 2
    assert log.history.flat_changed.tolist() == [0, 1]


def test_last_modified_as_the_server_sent_it(tmp_path):
    # a Last-Modified header logged verbatim is an HTTP date (RFC 9110 IMF-fixdate, always GMT): the same
    # instants as the ISO times, and as time-zone-aware as the fetch times' "Z"
    iso = """page,fetch_time,last_modified
a,2024-01-01T00:00:00Z,2023-12-31T00:00:00Z
a,2024-01-01T10:00:00Z,2024-01-01T05:00:00Z
a,2024-01-02T06:00:00Z,2024-01-01T06:00:00Z
"""
    http = (
        iso.replace("2023-12-31T00:00:00Z", '"Sun, 31 Dec 2023 00:00:00 GMT"')
        .replace(",2024-01-01T05:00:00Z", ',"Mon, 01 Jan 2024 05:00:00 GMT"')
        .replace(",2024-01-01T06:00:00Z", ',"Mon, 01 Jan 2024 06:00:00 GMT"')
    )
    assert "GMT" in http and http.count("GMT") == 3
    a, b = read_csv(_csv(tmp_path, iso)), read_csv(_csv(tmp_path, http, name="http.csv"))
    assert b.audit.change_source == "last_modified"
    assert b.history.flat_changed.tolist() == a.history.flat_changed.tolist() == [1, 0]
    assert b.history.flat_intervals.tolist() == a.history.flat_intervals.tolist() == [10.0, 20.0]
    bad = _csv(tmp_path, http.replace("Mon, 01 Jan 2024 06", "Mon, 41 Jan 2024 06"), name="bad.csv")
    _raises(bad, r"bad\.csv: line 4, column 'last_modified': unparsable time 'Mon, 41 Jan 2024 06:00:00 GMT'")


def test_weak_and_strong_etags_of_one_version_are_equal(tmp_path):
    # RFC 9110 8.8.3.2, weak comparison: W/"v1" and "v1" name the same content (servers such as
    # nginx weaken an ETag when they compress the response), so only the change to "v2" counts
    text = (
        "page,fetch_time,etag\n"
        'a,2024-01-01T00:00Z,"""v1"""\n'
        'a,2024-01-02T00:00Z,"W/""v1"""\n'
        'a,2024-01-03T00:00Z,"""v1"""\n'
        'a,2024-01-04T00:00Z,"W/""v2"""\n'
        'a,2024-01-05T00:00Z,"""v2"""\n'
    )  # CSV quoting: each quote of an ETag doubled
    assert pd.read_csv(_csv(tmp_path, text, name="e.csv"))["etag"].tolist() == [
        '"v1"',
        'W/"v1"',
        '"v1"',
        'W/"v2"',
        '"v2"',
    ]
    log = read_csv(_csv(tmp_path, text))
    assert log.audit.change_source == "digest"
    assert log.history.flat_changed.tolist() == [0, 0, 1, 0]


def test_changed_written_as_booleans(tmp_path):
    # a boolean column written by pandas (True/False) or by hand (true/false) is 1/0; anything else is named
    text = "page,fetch_time,changed\na,2024-01-01T00:00Z,False\na,2024-01-02T00:00Z,True\na,2024-01-03T00:00Z,false\n"
    assert read_csv(_csv(tmp_path, text)).history.flat_changed.tolist() == [1, 0]
    bad = _csv(tmp_path, text.replace("false", "yes"), name="bad.csv")
    _raises(bad, r"bad\.csv: line 4, column 'changed': expected 0 or 1 \(or true/false\); got 'yes'")


def test_not_modified_before_first_digest_is_dropped():
    df = pd.DataFrame(
        {
            "page": ["a"] * 3,
            "fetch_time": ["2024-01-01T00:00Z", "2024-01-01T01:00Z", "2024-01-01T03:00Z"],
            "status": [304, 200, 304],
            "digest": ["", "x", ""],
        }
    )
    log = read_frame(df)
    assert log.history.flat_changed.tolist() == [0] and log.history.flat_intervals.tolist() == [2.0]
    assert log.audit.dropped_by("not_modified_before_reference") == 1


def test_parquet_with_mapped_columns_and_timestamps_equals_csv(tmp_path):
    times = pd.to_datetime(
        ["2024-01-01T00:00Z", "2024-01-01T05:00Z", "2024-01-01T07:00Z", "2024-01-01T01:00Z", "2024-01-01T02:30Z"],
        utc=True,
    )
    df = pd.DataFrame(
        {"u": ["a", "a", "a", "b", "b"], "t": times, "h": ["x", "y", "y", "k", "m"], "s": [200, 200, 200, 200, 200]}
    )
    df.to_parquet(tmp_path / "log.parquet")
    log = read_parquet(
        tmp_path / "log.parquet", columns={"page": "u", "fetch_time": "t", "digest": "h", "status": "s"}, chunk_rows=2
    )
    assert log.history.page_ids.tolist() == ["a", "b"]
    assert log.history.flat_changed.tolist() == [1, 0, 1]
    np.testing.assert_allclose(log.history.flat_intervals, [5.0, 2.0, 1.5])
    csv = df.assign(t=df.t.dt.strftime("%Y-%m-%dT%H:%M:%SZ"))
    csv.to_csv(tmp_path / "log.csv", index=False)
    log2 = read_log(tmp_path / "log.csv", columns={"page": "u", "fetch_time": "t", "digest": "h", "status": "s"})
    np.testing.assert_array_equal(log2.history.flat_intervals, log.history.flat_intervals)
    np.testing.assert_array_equal(log2.history.flat_changed, log.history.flat_changed)


def test_chunked_reading_gives_the_same_log(tmp_path):
    rng = np.random.default_rng(5)
    n = 3000
    df = pd.DataFrame(
        {
            "page": rng.integers(0, 40, n).astype(str),
            "fetch_time": pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(rng.permutation(n), "min"),
            "digest": rng.integers(0, 3, n).astype(str),
            "status": rng.choice([200, 200, 304, 503], n),
        }
    )
    df["fetch_time"] = df.fetch_time.dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    path = tmp_path / "big.csv.gz"
    df.to_csv(path, index=False)
    whole = read_csv(path, chunk_rows=10**6)
    chunked = read_csv(path, chunk_rows=97)
    assert whole.audit == chunked.audit
    np.testing.assert_array_equal(whole.history.flat_changed, chunked.history.flat_changed)
    np.testing.assert_array_equal(whole.history.flat_intervals, chunked.history.flat_intervals)
    np.testing.assert_array_equal(whole.history.page_ids, chunked.history.page_ids)
    assert _accounted(whole.audit) and whole.audit.out_of_order > 0


def _reference(df):
    """The change rules read directly, one page at a time (the test's reference)."""
    expect_c, expect_t, ids = [], [], []
    d = df.assign(t=pd.to_datetime(df.fetch_time), row=np.arange(len(df)))
    for page in pd.unique(df.page):
        g = d[d.page == page]
        g = g[(g.status < 400) & ((g.digest != "") | (g.status == 304))]
        g = g.sort_values(["t", "row"]).drop_duplicates("t")
        prev_digest, prev_t, c, t = None, None, [], []
        for _, r in g.iterrows():
            if r.status == 304:
                if prev_digest is None:
                    continue
                cur = prev_digest
            else:
                cur = r.digest
            if prev_t is not None:
                c.append(int(cur != prev_digest))
                t.append((r.t - prev_t).total_seconds() / 3600)
            prev_digest, prev_t = cur, r.t
        if c:
            ids.append(page)
            expect_c += c
            expect_t += t
    return ids, expect_c, expect_t


def _random_log(rng, n, pages, hours):
    df = pd.DataFrame(
        {
            "page": rng.integers(0, pages, n).astype(str),
            "fetch_time": pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(rng.integers(0, hours, n), "h"),
            "status": rng.choice([200, 200, 200, 304, 404], n),
            "digest": rng.choice(["a", "b", ""], n, p=[0.6, 0.3, 0.1]),
        }
    )
    df["fetch_time"] = df.fetch_time.dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    return df


def test_vectorised_semantics_match_a_plain_reference():
    """The sort/shift implementation against a direct per-page reading of the rules."""
    df = _random_log(np.random.default_rng(11), 600, 12, 400)
    log = read_frame(df)
    ids, expect_c, expect_t = _reference(df)
    assert log.history.page_ids.tolist() == ids
    assert log.history.flat_changed.tolist() == expect_c
    np.testing.assert_allclose(log.history.flat_intervals, expect_t, rtol=0, atol=0)
    assert _accounted(log.audit)
    assert set(dict(log.audit.dropped)) == set(DROP_REASONS)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 80), pages=st.integers(1, 5), hours=st.integers(2, 30))
def test_semantics_property(seed, n, pages, hours):
    df = _random_log(np.random.default_rng(seed), n, pages, hours)
    ids, expect_c, expect_t = _reference(df)
    if not ids:
        with pytest.raises(CrawlLogError, match="no page has two usable visits"):
            read_frame(df)
        return
    log = read_frame(df)
    assert log.history.page_ids.tolist() == ids
    assert log.history.flat_changed.tolist() == expect_c
    assert log.history.flat_intervals.tolist() == expect_t
    assert _accounted(log.audit)


# ----------------------------------------------------------------------------- bad input
def _raises(path_or_df, match, **kw):
    with pytest.raises(CrawlLogError, match=match):
        if isinstance(path_or_df, pd.DataFrame):
            read_frame(path_or_df, **kw)
        else:
            read_log(path_or_df, **kw)


def test_missing_column_names_file_and_column(tmp_path):
    path = _csv(tmp_path, "url,fetch_time,digest\na,2024-01-01T00:00Z,x\n")
    _raises(path, r"log\.csv: line 1: missing required column 'page'")
    _raises(path, r"missing column 'when'", columns={"page": "url", "fetch_time": "when"})


def test_unparsable_time_names_line_and_column(tmp_path):
    path = _csv(tmp_path, "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,yesterday,y\n")
    _raises(path, r"log\.csv: line 3, column 'fetch_time': unparsable time 'yesterday'")
    path = _csv(tmp_path, "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,,y\n", name="m.csv")
    _raises(path, r"m\.csv: line 3, column 'fetch_time': missing time")


def test_naive_and_aware_mixed(tmp_path):
    path = _csv(tmp_path, "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,2024-01-01T03:00,y\n")
    _raises(path, r"log\.csv: line 3, column 'fetch_time': naive and time-zone-aware times are mixed")
    # across chunks and files too
    other = _csv(tmp_path, "page,fetch_time,digest\nb,2024-01-01T00:00,x\nb,2024-01-01T03:00,y\n", name="o.csv")
    ok = _csv(tmp_path, "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,2024-01-01T03:00+01:00,y\n", name="ok.csv")
    with pytest.raises(CrawlLogError, match=r"o\.csv: line 2, column 'fetch_time': naive times"):
        read_csv([ok, other])


def test_empty_digest_column(tmp_path):
    path = _csv(tmp_path, "page,fetch_time,digest\na,2024-01-01T00:00Z,\na,2024-01-01T03:00Z,\n")
    _raises(path, r"log\.csv: line 1, column 'digest': the digest column is entirely empty")


def test_unknown_format(tmp_path):
    path = _csv(tmp_path, "x", name="log.txt")
    _raises(path, r"log\.txt: unknown format")
    good = _csv(tmp_path, "page,fetch_time,digest\na,2024-01-01T00:00Z,x\n")
    _raises(good, r"log\.csv: unknown format 'xml'", format="xml")


def test_bad_values_name_the_row():
    df = pd.DataFrame({"page": ["a", "a"], "fetch_time": ["2024-01-01T00:00Z", "2024-01-01T01:00Z"], "changed": [0, 2]})
    _raises(df, r"<dataframe>: row 2, column 'changed': must be 0 or 1; got 2")
    df = pd.DataFrame(
        {
            "page": ["a", "a"],
            "fetch_time": ["2024-01-01T00:00Z", "2024-01-01T01:00Z"],
            "status": ["200", "OK"],
            "digest": ["x", "y"],
        }
    )
    _raises(df, r"row 2, column 'status': expected a number; got 'OK'")
    df = pd.DataFrame({"page": ["a"], "fetch_time": ["2024-01-01T00:00Z"], "digest": ["x"]})
    _raises(df, r"no page has two usable visits")


def test_files_that_decide_changes_differently_are_refused(tmp_path):
    from changerate_bayes.io import CrawlLogError, read_csv

    a = tmp_path / "a.csv"
    b = tmp_path / "b.csv"
    a.write_text("page,fetch_time,digest\nx,2024-01-01T00:00Z,d1\nx,2024-01-01T06:00Z,d2\n", encoding="utf-8")
    b.write_text("page,fetch_time,changed\ny,2024-01-01T00:00Z,0\ny,2024-01-01T06:00Z,1\n", encoding="utf-8")
    with pytest.raises(CrawlLogError, match=r"b\.csv: changes would be decided by 'changed' here but by 'digest'"):
        read_csv([a, b])
