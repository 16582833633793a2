"""Crawl logs that are damaged or odd: cut short, compressed wrongly, out of range, redirects.

Each case was read wrongly before (a silent wrong answer, data read as fine, or a
traceback): here it is read right, or refused with the file, line and column named.
"""

import bz2
import gzip
import lzma
from io import BytesIO

import numpy as np
import pandas as pd
import pytest
from _helpers import assert_read_csv_refuses, daily_log, dask_frame_estimates, write_log

from changerate_bayes.io import CrawlLogError, read_cdx, read_csv, read_frame, read_log, read_parquet, read_warc

GOOD = "page,fetch_time,digest\n" + "".join(f"a,2024-01-{d:02d}T00:00Z,{d // 3}\n" for d in range(1, 28))


# --- times outside the years int64 nanoseconds hold -------------------------------------


@pytest.mark.parametrize(
    "rows, line",
    [
        (["2024-01-01T00:00Z", "2924-01-02T00:00Z", "2024-01-03T00:00Z"], 3),  # a typo year among 2024 rows
        (["2024-01-01T00:00Z", "2024-01-03T00:00Z", "2924-01-02T00:00Z"], 4),
        (["2924-01-02T00:00Z", "2024-01-01T00:00Z", "2024-01-03T00:00Z"], 2),
        (["2024-01-01T00:00Z", "1024-01-02T00:00Z", "2024-01-03T00:00Z"], 3),
        (["2024-01-01T00:00", "2924-01-02T00:00", "2024-01-03T00:00"], 3),  # naive
    ],
)
def test_csv_time_outside_the_range_is_refused_at_its_line(tmp_path, rows, line):
    path = write_log(tmp_path, "page,fetch_time,digest\n" + "".join(f"a,{t},{i}\n" for i, t in enumerate(rows)))
    assert_read_csv_refuses(
        path, rf"log\.csv: line {line}, column 'fetch_time': time '.*' is outside the years 1678-2261"
    )


def test_times_at_the_edges_of_the_range_are_read(tmp_path):
    path = write_log(
        tmp_path,
        "page,fetch_time,digest\na,1678-01-01T00:00Z,x\na,1678-01-02T00:00Z,y\n"
        "b,2261-12-30T00:00Z,x\nb,2261-12-31T23:00Z,x\n",
    )
    log = read_csv(path)
    assert log.history.flat_intervals.tolist() == [24.0, 47.0]
    np.testing.assert_array_equal(log.first_visit, np.array(["1678-01-01", "2261-12-30"], dtype="datetime64[ns]"))


def test_times_more_than_292_years_apart_give_their_interval(tmp_path):
    # int64 nanoseconds hold 292 years of difference: 1724 -> 2024 is computed without wrapping
    path = write_log(
        tmp_path, "page,fetch_time,digest\na,2024-01-01T00:00Z,x\na,1724-01-02T00:00Z,y\na,2024-01-03T00:00Z,z\n"
    )
    log = read_csv(path)
    days = (np.datetime64("2024-01-01") - np.datetime64("1724-01-02")).astype(int)
    assert log.history.flat_intervals.tolist() == [days * 24.0, 48.0]
    assert log.history.flat_changed.tolist() == [1, 1] and log.audit.out_of_order == 1


@pytest.mark.parametrize("tz", [None, "UTC"])
def test_parquet_timestamp_us_in_year_3000_is_refused(tmp_path, tz):
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.array(np.array(["2024-01-01", "2024-02-01", "3000-01-01"], dtype="datetime64[us]"))
    t = t.cast(pa.timestamp("us", tz=tz))
    pq.write_table(
        pa.table({"page": ["a", "a", "a"], "fetch_time": t, "digest": ["x", "y", "z"]}), tmp_path / "log.parquet"
    )
    with pytest.raises(
        CrawlLogError,
        match=r"log\.parquet: row 3, column 'fetch_time': time '3000-01-01 00:00:00' "
        r"is outside the years",
    ):
        read_parquet(tmp_path / "log.parquet")


def test_last_modified_outside_the_range_is_refused(tmp_path):
    path = write_log(
        tmp_path,
        "page,fetch_time,last_modified\na,2024-01-01T00:00Z,2023-01-01T00:00Z\na,2024-01-02T00:00Z,2924-01-01T00:00Z\n",
    )
    assert_read_csv_refuses(path, r"line 3, column 'last_modified': time '2924-01-01T00:00Z' is outside")


# --- awareness of times -------------------------------------------------------------------


def test_a_date_alone_is_naive(tmp_path):
    path = write_log(tmp_path, "page,fetch_time,digest\na,2024-01-01,x\na,2024-01-02T06:00,y\n")
    assert read_csv(path).history.flat_intervals.tolist() == [30.0]
    path = write_log(tmp_path, "page,fetch_time,digest\na,2024-01-01,x\na,2024-01-02T06:00Z,y\n")
    assert_read_csv_refuses(
        path,
        r"line 3, column 'fetch_time': naive and time-zone-aware times are mixed \(line 2 is naive, this one "
        "time-zone-aware",
    )


@pytest.mark.parametrize(
    "tz, lm1, lm2, ok",
    [
        ("Z", "2023-06-01T00:00", "2024-01-01T12:00", False),  # naive last_modified, aware fetch times
        ("", "2023-06-01T00:00Z", "2024-01-01T12:00+01:00", False),  # aware last_modified, naive fetch times
        ("Z", "2023-06-01T00:00+01:00", "2024-01-01T12:00Z", True),
        ("", "2023-06-01", "2024-01-01T12:00", True),
    ],
)
def test_last_modified_must_be_as_aware_as_fetch_time(tmp_path, tz, lm1, lm2, ok):
    path = write_log(
        tmp_path, f"page,fetch_time,last_modified\na,2024-01-01T00:00{tz},{lm1}\na,2024-01-02T00:00{tz},{lm2}\n"
    )
    if ok:
        assert read_csv(path).history.flat_changed.tolist() == [1]
    else:
        assert_read_csv_refuses(
            path,
            r"line 2, column 'last_modified': \w+ times, but .*log\.csv: line 2, column 'fetch_time' holds \w+ ones",
        )


# --- statuses: redirects and values that are not HTTP statuses ----------------------------


def test_cdx_redirects_are_not_content_observations(tmp_path):
    # the http capture redirects (301) to the https one (200) of the same SURT key
    lines = []
    for d in range(1, 11):
        lines.append(f"com,a)/ 202401{d:02d}000000 http://a.com/ text/html 301 R{d} 100")
        lines.append(f"com,a)/ 202401{d:02d}000010 https://a.com/ text/html 200 SAME 100")
    path = write_log(tmp_path, "\n".join(lines) + "\n", "index.cdx")
    log = read_cdx(path)
    assert log.history.flat_changed.tolist() == [0] * 9
    assert log.history.flat_intervals.tolist() == [24.0] * 9
    assert log.audit.dropped_by("redirect") == 10 and log.audit.rows_read == 20
    assert "redirect 10" in log.audit.format()


def test_warc_redirect_is_dropped(tmp_path):
    caps = [
        ("response", "http://a.com/", f"2024-01-0{d}T00:00:00Z", s, body, None)
        for d, s, body in [(1, 200, b"v1"), (2, 302, b"moved"), (3, 200, b"v1"), (4, 200, b"v2")]
    ]
    path = tmp_path / "c.warc.gz"
    _write_warc(path, caps)
    log = read_warc(path)
    assert log.history.flat_changed.tolist() == [0, 1] and log.history.flat_intervals.tolist() == [48.0, 24.0]
    assert log.audit.dropped_by("redirect") == 1


def test_statuses_that_are_not_http_are_failed_visits(tmp_path):
    text = daily_log(
        "page,fetch_time,status,digest\n",
        [(1, "200", "x"), (2, "-1", "y"), (3, "0", "y"), (4, "-inf", "y"), (5, "200.5", "y"), (6, "inf", "y")]
        + [(7, "200", "x")],
    )
    log = read_csv(write_log(tmp_path, text))
    assert log.history.flat_changed.tolist() == [0] and log.history.flat_intervals.tolist() == [144.0]
    assert log.audit.dropped_by("failed_status") == 5


@pytest.mark.parametrize(
    "values, changed",
    [
        (["0", "False", "0", "false"], [1, 0, 1]),
        (["0", "1", "true", "0"], [0, 0, 1]),
        (["", "yes", "no", "TRUE"], [0, 1, 0]),
    ],
)
def test_not_modified_text_is_parsed_not_cast(tmp_path, values, changed):
    digests = ["x", "y", "y", "z"]
    text = daily_log(
        "page,fetch_time,digest,not_modified\n",
        [(d + 1, x, v) for d, (x, v) in enumerate(zip(digests, values, strict=True))],
    )
    log = read_csv(write_log(tmp_path, text))
    assert log.history.flat_changed.tolist() == changed
    frame = pd.read_csv(tmp_path / "log.csv", dtype=str, keep_default_na=False)
    assert read_frame(frame).history.flat_changed.tolist() == changed


def test_not_modified_that_is_not_a_boolean_is_refused(tmp_path):
    text = "page,fetch_time,digest,not_modified\na,2024-01-01T00:00Z,x,0\na,2024-01-02T00:00Z,y,maybe\n"
    assert_read_csv_refuses(
        write_log(tmp_path, text), r"line 3, column 'not_modified': expected 0/1 or true/false; got 'maybe'"
    )


# --- byte-order marks, lines, odd files ---------------------------------------------------


@pytest.mark.parametrize("compress", [False, True])
def test_cdx_with_a_byte_order_mark(tmp_path, compress):
    text = (
        "\ufeffcom,a)/ 20240101000000 http://a/ text/html 200 X 1\ncom,a)/ 20240102000000 http://a/ text/html 200 Y 1\n"
    )
    path = tmp_path / ("index.cdx.gz" if compress else "index.cdx")
    path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    log = read_log(path, page_key="surt")
    assert log.history.page_ids.tolist() == ["com,a)/"] and log.history.flat_changed.tolist() == [1]


def test_csv_with_a_byte_order_mark(tmp_path):
    path = tmp_path / "log.csv"
    path.write_bytes(("\ufeff" + GOOD).encode())
    assert read_csv(path).history.page_ids.tolist() == ["a"]


def test_errors_name_the_physical_line_after_quoted_newlines_and_blank_lines(tmp_path):
    text = 'page,fetch_time,digest\n"a\nb",2024-01-01T00:00Z,x\n\na,2024-01-03T00:00Z,"z\n\nz"\na,bad,z\n'
    assert_read_csv_refuses(write_log(tmp_path, text), r"log\.csv: line 8, column 'fetch_time': unparsable time 'bad'")
    text = 'page,fetch_time,digest\n"a\nb",2024-01-01T00:00Z,x\na,2024-01-03T00:00Z,z\na,2024-01-04T00:00,z\n'
    assert_read_csv_refuses(
        write_log(tmp_path, text),
        r"log\.csv: line 5, column 'fetch_time': naive and time-zone-aware times are mixed \(line 2 is time-zone-aware",
    )


def test_dev_null_is_not_a_regular_file(tmp_path, capsys):
    from changerate_bayes.cli import main

    for read in (read_csv, read_log):
        with pytest.raises(CrawlLogError, match=r"/dev/null: not a regular file"):
            read("/dev/null")
    assert main(["estimate", "/dev/null", "--out", str(tmp_path / "e.csv")]) == 2
    assert "/dev/null: not a regular file" in capsys.readouterr().err


def test_empty_parquet_with_a_schema_and_a_header_only_csv(tmp_path):
    pd.DataFrame(
        {"page": pd.Series([], dtype=str), "fetch_time": pd.Series([], dtype=str), "digest": pd.Series([], dtype=str)}
    ).to_parquet(tmp_path / "e.parquet")
    with pytest.raises(CrawlLogError, match=r"e\.parquet: no visits"):
        read_parquet(tmp_path / "e.parquet")
    assert_read_csv_refuses(write_log(tmp_path, "page,fetch_time,digest\n", "h.csv"), r"h\.csv: no visits")


@pytest.mark.parametrize(
    "frame",
    [
        pd.DataFrame({"page": [], "fetch_time": [], "digest": []}),
        pd.DataFrame(
            {
                "page": pd.Series([], dtype=str),
                "fetch_time": pd.Series([], dtype="datetime64[ns]"),
                "digest": pd.Series([], dtype=str),
            }
        ),
    ],
)
def test_read_frame_of_an_empty_frame(frame):
    with pytest.raises(CrawlLogError, match="<dataframe>: no visits: the frame has no rows"):
        read_frame(frame)


@pytest.mark.parametrize(
    "columns, roles",
    [
        ({"page": "fetch_time"}, ("page", "fetch_time")),
        ({"page": "digest", "digest": "digest"}, ("page", "digest")),
    ],
)
def test_one_column_given_two_roles(tmp_path, columns, roles):
    with pytest.raises(ValueError, match=rf"the column '\w+' would be read as both '{roles[0]}' and '{roles[1]}'"):
        read_csv(write_log(tmp_path, GOOD), columns=columns)


# --- compressed logs ----------------------------------------------------------------------


def _zstd(data):
    import zstandard

    return zstandard.ZstdCompressor().compress(data)


COMPRESSORS = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress, ".zst": _zstd}


@pytest.mark.parametrize("suffix", list(COMPRESSORS))
def test_compressed_csv_reads_as_plain(tmp_path, suffix):
    path = tmp_path / f"log.csv{suffix}"
    path.write_bytes(COMPRESSORS[suffix](GOOD.encode()))
    expect = read_csv(write_log(tmp_path, GOOD, "plain.csv")).history
    got = read_log(path).history
    assert got.flat_changed.tolist() == expect.flat_changed.tolist()
    assert got.flat_intervals.tolist() == expect.flat_intervals.tolist()


@pytest.mark.parametrize("suffix", list(COMPRESSORS))
def test_truncated_compressed_csv_names_the_file(tmp_path, suffix):
    path = tmp_path / f"log.csv{suffix}"
    path.write_bytes(COMPRESSORS[suffix](GOOD.encode())[:-12])
    assert_read_csv_refuses(path, rf"log\.csv\{suffix}: cannot be decompressed .*truncated or corrupt")


@pytest.mark.parametrize("suffix", [".gz", ".xz"])
def test_corrupt_compressed_csv_names_the_file(tmp_path, suffix):
    data = bytearray(COMPRESSORS[suffix](GOOD.encode()))
    data[len(data) // 2] ^= 0xFF
    path = tmp_path / f"log.csv{suffix}"
    path.write_bytes(bytes(data))
    assert_read_csv_refuses(path, rf"log\.csv\{suffix}: cannot be decompressed")


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".zst"])
def test_csv_not_compressed_as_its_name_says(tmp_path, suffix):
    path = tmp_path / f"log.csv{suffix}"
    path.write_bytes(GOOD.encode())
    assert_read_csv_refuses(
        path, rf"log\.csv\{suffix}: cannot be decompressed .*its name says .* but it is not compressed"
    )


def test_truncated_gzipped_cdx_names_the_file(tmp_path):
    text = "".join(f"com,a)/ 202401{d:02d}000000 http://a/ text/html 200 D{d % 3} 1\n" for d in range(1, 29))
    path = tmp_path / "index.cdx.gz"
    path.write_bytes(gzip.compress(text.encode())[:-10])
    with pytest.raises(CrawlLogError, match=r"index\.cdx\.gz: cannot be decompressed"):
        read_cdx(path)
    path.write_bytes(_zstd(text.encode()))
    assert read_cdx(path).history.flat_changed.size == 27


def test_dask_engine_names_a_compressed_file_cut_after_its_head(tmp_path):
    import dask
    import dask.dataframe as dd

    rng = np.random.default_rng(0)
    rows = "".join(
        f"p{rng.integers(1000)},2024-01-01T{h % 24:02d}:{h % 60:02d}Z,{rng.integers(10**9)}\n" for h in range(40_000)
    )
    path = tmp_path / "log.csv.gz"
    data = gzip.compress(("page,fetch_time,digest\n" + rows).encode())
    path.write_bytes(data[: len(data) * 3 // 4])
    ddf = dd.read_csv(path, dtype=str, keep_default_na=False, blocksize=None)  # reads the head: still fine
    with (
        dask.config.set(scheduler="synchronous"),
        pytest.raises(
            CrawlLogError,
            match=r"log\.csv\.gz: cannot be "
            "decompressed",
        ),
    ):
        dask_frame_estimates(ddf, source=str(path), methods=("lln",))


@pytest.mark.parametrize(
    "name, data",
    [
        ("log.csv.gz", gzip.compress(GOOD.encode(), mtime=0)[:-12]),
        ("log.csv.gz", GOOD.encode()),  # not gzip
        ("log.csv.bz2", bz2.compress(GOOD.encode())[:-12]),
        ("log.csv.zst", _zstd(GOOD.encode())[:-12]),
    ],
    ids=["cut-gzip", "not-gzip", "cut-bz2", "cut-zstd"],
)  # fixed ids: every xdist worker collects the same names
def test_estimate_command_names_a_damaged_file_on_both_engines(tmp_path, capsys, name, data):
    from changerate_bayes.cli import main

    path = tmp_path / name
    path.write_bytes(data)
    for engine in ("pandas", "dask"):
        assert main(["estimate", str(path), "--engine", engine, "--out", str(tmp_path / "e.csv")]) == 2
        err = capsys.readouterr().err
        assert f"{name}: cannot be decompressed" in err, engine
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


# --- WARC files cut short -----------------------------------------------------------------


def _write_warc(path, captures, *, gz=True, digests=True):
    """A WARC of response records; returns the offset at which each record ends."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    ends = []
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=gz)
        writer.write_record(writer.create_warcinfo_record("test.warc", {"software": "tests"}))
        for kind, url, date, status, body, _ in captures:
            http = StatusAndHeaders(f"{status} X", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            rec = writer.create_warc_record(
                url, kind, payload=BytesIO(body), http_headers=http, warc_headers_dict={"WARC-Date": date}
            )
            if not digests:
                rec.rec_headers.remove_header("WARC-Payload-Digest")
            writer.write_record(rec)
            ends.append(fh.tell())
    return ends


def _captures(n=6):
    return [
        ("response", "http://a.com/", f"2024-01-01T{h:02d}:00:00Z", 200, (b"v%d" % (h // 2)) * 300, None)
        for h in range(n)
    ]


@pytest.mark.parametrize("gz", [True, False])
@pytest.mark.parametrize("digests", [True, False])
@pytest.mark.parametrize("where", [0.02, 0.3, 0.6, 0.97])  # the fraction of the last record kept
def test_truncated_warc_drops_and_counts_the_partial_record(tmp_path, gz, digests, where):
    path = tmp_path / ("full.warc.gz" if gz else "full.warc")
    ends = _write_warc(path, _captures(), gz=gz, digests=digests)
    data = path.read_bytes()
    cut = ends[-2] + max(1, int((ends[-1] - ends[-2]) * where))
    short = tmp_path / ("cut.warc.gz" if gz else "cut.warc")
    short.write_bytes(data[:cut])
    with pytest.warns(UserWarning, match=r"cut\.warc(\.gz)?: 1 record\(s\) cut short"):
        log = read_warc(short)
    a = log.audit
    assert a.rows_read == 5 and a.truncated_records == 1 and a.truncated_files == (str(short),)
    assert "cut short by the end of the file" in a.format() and str(short) in a.format()
    full = read_warc(path)
    assert full.audit.truncated_records == 0 and full.audit.rows_read == 6
    # the five whole records read as they do in the whole file
    assert log.history.flat_changed.tolist() == full.history.flat_changed.tolist()[:4]
    assert log.history.flat_intervals.tolist() == [1.0] * 4


def test_warc_cut_inside_the_gzip_trailer_of_its_last_record(tmp_path):
    path = tmp_path / "full.warc.gz"
    _write_warc(path, _captures())
    short = tmp_path / "cut.warc.gz"
    short.write_bytes(path.read_bytes()[:-4])  # the member's length field is missing
    with pytest.warns(UserWarning, match="1 record\\(s\\) cut short"):
        assert read_warc(short).audit.truncated_records == 1


def test_warc_record_without_target_uri_is_skipped_and_counted(tmp_path):
    path = tmp_path / "c.warc"
    caps = _captures(4)
    caps.insert(2, ("response", None, "2024-01-01T01:30:00Z", 200, b"other", None))
    _write_warc(path, caps, gz=False)
    log = read_warc(path)
    assert log.audit.records_without_page == 1 and log.audit.rows_read == 4
    assert log.history.flat_intervals.tolist() == [1.0, 1.0, 1.0]
    assert "without WARC-Target-URI" in log.audit.format()
