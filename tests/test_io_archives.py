"""CDX and WARC logs written by the tests (warcio, plain text) against hand-derived histories."""

import base64
import gzip
import hashlib
from io import BytesIO

import numpy as np
import pytest

from changerate_bayes.io import CrawlLogError, read_cdx, read_log, read_warc


def _cdx_text():
    # urlkey timestamp original mimetype statuscode digest length
    return "\n".join(
        [
            " CDX N b a m s k r M S V g",
            "com,example)/ 20240101000000 http://example.com/ text/html 200 AAAA 100",
            "com,example)/ 20240101060000 http://example.com/ text/html 200 AAAA 100",
            "com,example)/ 20240101090000 https://example.com/ text/html 503 - 10",  # failed
            "com,example)/ 20240101120000 http://example.com/ warc/revisit - AAAA 50",  # revisit: unchanged
            "com,example)/ 20240101180000 http://example.com/ text/html 200 BBBB 100",  # changed, τ = 6h
            "org,other)/a 20240102000000 http://other.org/a text/html 200 CCCC 100",
            "org,other)/a 20240101000000 http://other.org/a text/html 200 CCCC 100",  # out of order
            "org,other)/a 20240102000000 http://other.org/a text/html 200 CCCC 100",  # duplicate
            "org,other)/a 20240103000000 http://other.org/a text/html 404 DDDD 10",  # failed
            "org,other)/a 20240104000000 http://other.org/a text/html 200 EEEE 100 0 x.warc.gz",  # 11-field form
            "net,single)/ 20240101000000 http://single.net/ text/html 200 FFFF 100",
            "",
        ]
    )


def _assert_history(log, pages, lengths, changed, intervals):
    """The log's history is the hand-derived one, and its audit accounts for every row read."""
    h = log.history
    assert h.page_ids.tolist() == pages
    assert h.lengths.tolist() == lengths
    assert h.flat_changed.tolist() == changed
    assert h.flat_intervals.tolist() == intervals
    a = log.audit
    assert a.visits_kept + a.reference_visits + a.dropped_total == a.rows_read
    return h


def test_cdx_history_equals_hand_derived(tmp_path):
    path = tmp_path / "index.cdx"
    path.write_text(_cdx_text())
    log = read_cdx(path, page_key="surt")  # the http and https captures of example.com are one page
    h = _assert_history(log, ["com,example)/", "org,other)/a"], [3, 2], [0, 0, 1, 0, 1], [6.0, 6.0, 6.0, 24.0, 48.0])
    a = log.audit
    assert a.rows_read == 11 and a.pages == 3 and a.single_visit_pages == 1
    assert a.dropped_by("failed_status") == 2 and a.dropped_by("duplicate") == 1 and a.out_of_order == 1
    # gzipped and CDXJ give the same
    gz = tmp_path / "index.cdx.gz"
    gz.write_bytes(gzip.compress(_cdx_text().encode()))
    same = read_log(gz, page_key="surt")
    np.testing.assert_array_equal(same.history.flat_intervals, h.flat_intervals)
    cdxj = tmp_path / "index.cdxj"
    cdxj.write_text(
        'com,x)/ 20240101000000 {"url": "http://x.com/", "status": "200", "digest": "A"}\n'
        'com,x)/ 20240101020000 {"url": "http://x.com/", "status": "200", "digest": "B"}\n'
    )
    j = read_log(cdxj)
    assert j.history.flat_changed.tolist() == [1] and j.history.flat_intervals.tolist() == [2.0]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "com,a)/ 20240101000000 http://a/ text/html 200 X 1\ncom,a)/ 2024 http://a/ text/html 200 Y 1\n",
            r"bad\.cdx: line 2, field 'timestamp': expected 14 digits",
        ),
        (
            "com,a)/ 20240101000000 http://a/ text/html 200 X 1\ncom,a)/ 20240101000000 http://a/\n",
            r"bad\.cdx: line 2: a CDX line has at least 7",
        ),
        (
            "com,a)/ 20240101000000 http://a/ text/html 200 - 1\ncom,a)/ 20240102000000 http://a/ t 200 - 1\n",
            r"bad\.cdx: line 1, column 'digest': the digest column is entirely empty",
        ),
    ],
)
def test_cdx_bad_lines(tmp_path, text, message):
    path = tmp_path / "bad.cdx"
    path.write_text(text)
    with pytest.raises(CrawlLogError, match=message):
        read_cdx(path)


def _write_warc(path, captures, *, gz=True):
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=gz)
        writer.write_record(writer.create_warcinfo_record("test.warc", {"software": "tests"}))
        for kind, url, date, status, body, profile in captures:
            headers = {"WARC-Date": date}
            if kind == "response":
                http = StatusAndHeaders(f"{status} X", [("Content-Type", "text/html")], protocol="HTTP/1.1")
                rec = writer.create_warc_record(
                    url, "response", payload=BytesIO(body), http_headers=http, warc_headers_dict=headers
                )
            else:
                headers["WARC-Profile"] = profile
                if body is not None:
                    headers["WARC-Payload-Digest"] = "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
                http = StatusAndHeaders(f"{status} X", [], protocol="HTTP/1.1") if status else None
                rec = writer.create_warc_record(
                    url, "revisit", payload=BytesIO(b""), http_headers=http, warc_headers_dict=headers
                )
            writer.write_record(rec)


IPD = "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"
SNM = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"


def test_warc_history_equals_hand_derived(tmp_path):
    caps = [
        ("response", "http://a.com/", "2024-01-01T00:00:00Z", 200, b"v1", None),
        ("response", "http://a.com/", "2024-01-01T04:00:00Z", 200, b"v1", None),  # unchanged, 4h
        ("revisit", "http://a.com/", "2024-01-01T05:00:00Z", 200, b"v1", IPD),  # unchanged, 1h
        ("response", "http://a.com/", "2024-01-01T06:00:00Z", 500, b"oops", None),  # failed
        ("response", "http://a.com/", "2024-01-01T08:00:00Z", 200, b"v2", None),  # changed, 3h
        ("revisit", "http://a.com/", "2024-01-01T10:00:00Z", 304, None, SNM),  # unchanged, 2h
        ("revisit", "http://a.com/", "2024-01-01T11:00:00Z", 200, b"v2", "http://x/unknown"),  # not a capture
        ("response", "http://b.com/", "2024-01-02T00:00:00Z", 200, b"w1", None),
        ("response", "http://b.com/", "2024-01-01T12:00:00Z", 200, b"w0", None),  # out of order
    ]
    path = tmp_path / "crawl.warc.gz"
    _write_warc(path, caps)
    log = read_warc(path)
    h = _assert_history(log, ["http://a.com/", "http://b.com/"], [4, 1], [0, 0, 1, 0, 1], [4.0, 1.0, 3.0, 2.0, 12.0])
    a = log.audit
    assert a.rows_read == 9 and a.dropped_by("failed_status") == 1 and a.dropped_by("not_a_capture") == 1
    assert a.out_of_order == 1
    plain = tmp_path / "crawl.warc"
    _write_warc(plain, caps, gz=False)
    same = read_log(plain)
    np.testing.assert_array_equal(same.history.flat_changed, h.flat_changed)


def test_warc_bad_date_names_record(tmp_path):
    caps = [
        ("response", "http://a.com/", "2024-01-01T00:00:00Z", 200, b"v1", None),
        ("response", "http://a.com/", "not-a-date", 200, b"v2", None),
    ]
    path = tmp_path / "bad.warc.gz"
    _write_warc(path, caps)
    with pytest.raises(CrawlLogError, match=r"bad\.warc\.gz: record 3, column 'WARC-Date': unparsable time"):
        read_warc(path)
