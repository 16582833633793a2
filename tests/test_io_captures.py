"""CDX/CDXJ indexes and WARC files: mixed in one log, CDXJ nulls, bytes that are not UTF-8.

- CDX and WARC files of the same pages are one log (a Common Crawl index shard named
  ``cdx-00000.gz`` included), on the command line and on every engine; a CSV among them
  is refused, saying why;
- a CDXJ ``null`` field (``"status": null``) is a missing field, as if it were absent;
- a byte that is not UTF-8 in a CDX index is named by its file and line.
"""

import base64
import gzip
import hashlib
import json
import warnings

import numpy as np
import pytest
from _helpers import dask_files_estimates
from _io_engines import assert_same, dask_client_fixture  # noqa: F401 (the fixture `client`)
from test_io_archives import _write_warc

from changerate_bayes import StatisticalWarning, estimate_pages
from changerate_bayes.io import CrawlLogError, detect_format, read_cdx, read_log

pytestmark = pytest.mark.xdist_group("dask_cluster")


def _digest(body: bytes) -> str:
    return base64.b32encode(hashlib.sha1(body).digest()).decode()


@pytest.fixture
def captures(tmp_path):
    """A CDX shard (captures at 00:00 of days 1-5) and a WARC (12:00) of http://a.com/, and a CSV.

    The content is v0 on day 1, v1 on days 2-3, v2 on days 4-5: over the ten captures,
    12 h apart, it changes at the 3rd and the 7th.
    """
    cdx = tmp_path / "cdx-00000.gz"
    with gzip.open(cdx, "wt") as fh:
        fh.write(
            "".join(
                f"com,a)/ 2024010{d}000000 http://a.com/ text/html 200 {_digest(b'v%d' % (d // 2))} 100\n"
                for d in range(1, 6)
            )
        )
    warc = tmp_path / "crawl.warc.gz"
    _write_warc(
        warc,
        [("response", "http://a.com/", f"2024-01-0{d}T12:00:00Z", 200, b"v%d" % (d // 2), None) for d in range(1, 6)],
    )
    csv = tmp_path / "crawl.csv"
    csv.write_text("page,fetch_time,digest\nhttp://a.com/,2024-01-07T00:00Z,x\nhttp://a.com/,2024-01-08T00:00Z,y\n")
    return cdx, warc, csv


def test_a_cdx_shard_and_a_warc_are_one_log(captures):
    cdx, warc, _ = captures
    assert detect_format(cdx) == "cdx"
    log = read_log([cdx, warc])
    assert log.history.page_ids.tolist() == ["http://a.com/"]
    assert log.history.flat_changed.tolist() == [0, 1, 0, 0, 0, 1, 0, 0, 0]
    assert log.history.flat_intervals.tolist() == [12.0] * 9


_WHY = (
    r"CDX/CDXJ and WARC files mix in one log \(captures keyed by URL, changes decided by their payload "
    r"digests\), but a 'csv' log names its pages and digests in its own columns, which cannot be matched to "
    r"the captures' URLs and payload digests; read the 'csv' file\(s\) separately"
)


def test_a_csv_among_captures_is_refused_saying_why(captures, tmp_path, capsys):
    from changerate_bayes.cli import main

    cdx, warc, csv = captures
    with pytest.raises(CrawlLogError, match=r"cdx-00000\.gz is 'cdx' and .*crawl\.csv is 'csv': " + _WHY):
        read_log([cdx, warc, csv])
    assert main(["estimate", str(cdx), str(warc), str(csv), "--out", str(tmp_path / "out.csv")]) == 2
    err = capsys.readouterr().err
    assert "CDX/CDXJ and WARC files mix in one log" in err and "read the 'csv' file(s) separately" in err


def test_captures_on_the_dask_engine(captures, client):
    cdx, warc, csv = captures
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)
        log = read_log([cdx, warc])
        expect = (estimate_pages(log, methods=("lln", "mle")), log.audit)
        res = dask_files_estimates([cdx, warc], methods=("lln", "mle"), client=client)
    assert_same(expect, (res.table, res.audit))
    with pytest.raises(CrawlLogError) as pandas_error:
        read_log([cdx, warc, csv])
    with pytest.raises(CrawlLogError) as dask_error:
        dask_files_estimates([cdx, warc, csv], client=client)
    assert str(dask_error.value) == str(pandas_error.value)


def _cdxj(day, fields):
    return f"com,a)/ 2024010{day}000000 {json.dumps(fields)}\n"


def test_a_cdxj_null_is_a_missing_field(tmp_path):
    path = tmp_path / "index.cdxj"
    path.write_text(
        _cdxj(1, {"url": "http://a.com/", "status": "200", "digest": "A"})
        + _cdxj(2, {"url": "http://a.com/", "status": None, "digest": "B"})  # no status: dropped
        + _cdxj(3, {"url": "http://a.com/", "status": "200", "digest": "B"})
        + _cdxj(4, {"url": "http://a.com/", "digest": "C"})  # no status: dropped
        + _cdxj(5, {"url": "http://a.com/", "mime": None, "status": 200, "digest": "C"})
        + _cdxj(6, {"url": "http://a.com/", "status": "200", "digest": None})  # no digest: dropped
    )
    log = read_cdx(path)
    assert log.history.flat_changed.tolist() == [1, 1]
    assert log.history.flat_intervals.tolist() == [48.0, 48.0]
    assert log.audit.dropped_by("missing_status") == 2
    assert log.audit.dropped_by("missing_digest") == 1


def _shard_with_a_bad_byte(path, line):
    rows = [
        f"com,a)/ 2024010{d}000000 http://a.com/ text/html 200 {_digest(b'v%d' % d)} 100\n".encode()
        for d in range(1, 5)
    ]
    rows[line - 1] = rows[line - 1].replace(b"text/html", b"text/h\xfftml")
    with gzip.open(path, "wb") as fh:
        fh.write(b"".join(rows))


@pytest.mark.parametrize("line", [1, 3])
def test_a_byte_that_is_not_utf8_is_named_by_file_and_line(tmp_path, line):
    path = tmp_path / "cdx-00000.gz"
    _shard_with_a_bad_byte(path, line)
    assert detect_format(path) == "cdx"
    want = rf"cdx-00000\.gz: line {line}: not UTF-8 text \(byte 0xff at column 44\)"
    with pytest.raises(CrawlLogError, match=want):
        read_log(path)
    with pytest.raises(CrawlLogError, match=want):
        read_cdx(path)


def test_a_byte_that_is_not_utf8_on_the_dask_engine(tmp_path, client):
    path = tmp_path / "cdx-00000.gz"
    _shard_with_a_bad_byte(path, 3)
    with pytest.raises(CrawlLogError) as pandas_error:
        read_log(path)
    with pytest.raises(CrawlLogError) as dask_error:
        dask_files_estimates([path], client=client)
    assert str(dask_error.value) == str(pandas_error.value)
    assert np.char.count(str(dask_error.value), "line 3") == 1
