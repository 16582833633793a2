"""Common Crawl's URL index: shard names, pages keyed by URL, CDX and WARC as one log, the shard generator."""

import gzip
import json
import re

import numpy as np
import pytest
from test_io_archives import _write_warc

from changerate_bayes.datasets import surt, write_cdxj_shards
from changerate_bayes.io import CrawlLogError, detect_format, read_cdx, read_log, read_warc


def _shards(tmp_path, **kw):
    return write_cdxj_shards(tmp_path / "cc", **{"n_urls": 40, "n_crawls": 3, "rng": 7, "n_shards": 2, **kw})


def test_generated_shards_are_in_common_crawls_format(tmp_path):
    shards = _shards(tmp_path)
    assert [s.relative_to(tmp_path / "cc").as_posix() for s in shards] == [
        f"CC-MAIN-SYNTH-{c:02d}/indexes/cdx-{k:05d}.gz" for c in range(3) for k in range(2)
    ]
    keys = ["url", "mime", "mime-detected", "status", "digest", "length", "offset", "filename"]
    for shard in shards:
        assert gzip.open(shard).read(1)  # gzip, not empty
        lines = gzip.open(shard, "rt", encoding="utf-8").read().splitlines()
        parsed = [line.split(" ", 2) for line in lines]
        for key, stamp, block in parsed:
            meta = json.loads(block)
            assert set(keys) <= set(meta) and key == surt(meta["url"]) and re.fullmatch(r"\d{14}", stamp)
            assert isinstance(meta["status"], str) and re.fullmatch(r"[A-Z2-7]{32}", meta["digest"])
        assert [(k, t) for k, t, _ in parsed] == sorted((k, t) for k, t, _ in parsed)
    # the key ranges of the shards do not overlap, and a URL is in the same shard of every crawl
    first = {
        json.loads(line.split(" ", 2)[2])["url"]: s.name
        for s in shards
        for line in gzip.open(s, "rt").read().splitlines()
    }
    for s in shards:
        for line in gzip.open(s, "rt").read().splitlines():
            assert first[json.loads(line.split(" ", 2)[2])["url"]] == s.name


def test_generator_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match=r"`n_urls` must be >= 1; got 0"):
        write_cdxj_shards(tmp_path, 0, 2)
    with pytest.raises(TypeError, match=r"`n_crawls` must be an int; got float"):
        write_cdxj_shards(tmp_path, 3, 2.0)
    with pytest.raises(ValueError, match=r"`capture_probability` must be in \(0, 1\]; got 0"):
        write_cdxj_shards(tmp_path, 3, 2, capture_probability=0)
    with pytest.raises(ValueError, match=r"need 0 < `crawl_days` <= `crawl_interval_days`"):
        write_cdxj_shards(tmp_path, 3, 2, crawl_days=40)
    assert not list(tmp_path.iterdir())  # nothing written


def test_auto_format_recognises_shards_by_content(tmp_path):
    shards = _shards(tmp_path)
    assert {detect_format(s) for s in shards} == {"cdx"}
    log = read_log(shards)  # --format auto
    n_lines = sum(len(gzip.open(s, "rt").read().splitlines()) for s in shards)
    a = log.audit
    assert a.rows_read == n_lines == a.visits_kept + a.reference_visits + a.dropped_total
    assert a.pages == 40 and log.page_ids[0].startswith("https://")
    plain = tmp_path / "index-part"  # a CDX without suffix, uncompressed
    plain.write_text("com,a)/ 20240101000000 http://a/ text/html 200 X 1\n")
    assert detect_format(plain) == "cdx"
    warc = tmp_path / "capture-file"
    _write_warc(warc, [("response", "http://a/", "2024-01-01T00:00:00Z", 200, b"x", None)])
    assert detect_format(warc) == "warc"
    other = tmp_path / "notes.gz"
    other.write_bytes(gzip.compress(b"hello world\n"))
    with pytest.raises(CrawlLogError, match=r"notes\.gz: unknown format: .* its first line is not that of a known"):
        detect_format(other)


def test_a_shard_cut_before_its_first_line_is_named_as_cut(tmp_path):
    # the name does not tell the format and the content cannot be decompressed far enough to tell it:
    # the error is the truncated file, not an unknown format
    shard = _shards(tmp_path, n_urls=3, n_crawls=1, n_shards=1)[0]
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])
    with pytest.raises(CrawlLogError, match=r"cdx-00000\.gz: cannot be decompressed .*truncated"):
        detect_format(shard)
    shard.write_bytes(data[:5])  # inside gzip's own header
    with pytest.raises(CrawlLogError, match=r"cdx-00000\.gz: cannot be decompressed .*truncated"):
        detect_format(shard)


def test_surt_keys_are_refused_for_warc_files(tmp_path, capsys):
    # WARC records name their page by URL only: asked for SURT keys, a WARC file (alone, or beside a CDX
    # index whose keys would then differ from its own) is refused by name rather than keyed by URL in silence
    from changerate_bayes.cli import main

    warc = tmp_path / "crawl.warc.gz"
    _write_warc(
        warc,
        [
            ("response", "http://www.a.com/", "2024-01-01T00:00:00Z", 200, b"x", None),
            ("response", "https://a.com/", "2024-01-02T00:00:00Z", 200, b"y", None),
            ("response", "http://www.a.com/", "2024-01-03T00:00:00Z", 200, b"y", None),
        ],
    )
    cdx = _shards(tmp_path)[0]
    for paths in ([warc], [cdx, warc]):
        with pytest.raises(CrawlLogError, match=r"crawl\.warc\.gz: `page_key` surt keys .* CDX"):
            read_log(paths, page_key="surt")
        for engine in ("pandas", "dask"):
            code = main(
                [
                    "estimate",
                    *map(str, paths),
                    "--page-key",
                    "surt",
                    "--engine",
                    engine,
                    "--out",
                    str(tmp_path / "e.csv"),
                ]
            )
            assert code == 2 and "--page-key surt" in capsys.readouterr().err
    assert not (tmp_path / "e.csv").exists()
    assert read_log([warc]).page_ids.tolist() == ["http://www.a.com/"]  # keyed by URL: https://a.com/ is another


def test_cdx_and_warc_of_the_same_captures_give_the_same_pages_and_merge(tmp_path):
    captures = [
        ("http://a.com/x", "20240101000000", b"v1", 200),
        ("https://a.com/x", "20240101060000", b"v1", 200),
        ("http://a.com/x", "20240102000000", b"v2", 200),
        ("http://b.org/", "20240101000000", b"w", 200),
        ("http://b.org/", "20240103000000", b"w", 404),
        ("http://b.org/", "20240104000000", b"w2", 200),
    ]

    def sha1(body):
        import base64
        import hashlib

        return base64.b32encode(hashlib.sha1(body).digest()).decode()

    def iso(t):
        return f"{t[:4]}-{t[4:6]}-{t[6:8]}T{t[8:10]}:{t[10:12]}:{t[12:]}Z"

    cdx = tmp_path / "index.cdxj"
    cdx.write_text(
        "".join(
            f"{surt(u)} {t} {json.dumps({'url': u, 'status': str(s), 'digest': sha1(b)})}\n" for u, t, b, s in captures
        )
    )
    warc = tmp_path / "crawl.warc.gz"
    _write_warc(warc, [("response", u, iso(t), s, b, None) for u, t, b, s in captures])
    c, w = read_cdx(cdx), read_warc(warc)
    assert c.page_ids.tolist() == w.page_ids.tolist() == ["http://a.com/x", "http://b.org/"]
    np.testing.assert_array_equal(c.history.flat_changed, w.history.flat_changed)
    np.testing.assert_array_equal(c.history.flat_intervals, w.history.flat_intervals)
    assert c.audit.as_dict() | {"sources": None} == w.audit.as_dict() | {"sources": None}
    assert read_cdx(cdx, page_key="surt").page_ids.tolist() == ["com,a)/x", "org,b)/"]  # http and https as one
    # the CDX of the first day and the WARC of the rest read as one log: the histories of the whole
    cdx_early = tmp_path / "early.cdxj"
    cdx_early.write_text("".join(line for line in cdx.read_text().splitlines(keepends=True) if " 202401010" in line))
    warc_late = tmp_path / "late.warc.gz"
    _write_warc(warc_late, [("response", u, iso(t), s, b, None) for u, t, b, s in captures if t[:8] != "20240101"])
    both = read_log([cdx_early, warc_late])
    assert both.page_ids.tolist() == ["http://a.com/x", "http://b.org/"]
    np.testing.assert_array_equal(both.history.flat_changed, w.history.flat_changed)
    np.testing.assert_array_equal(both.history.flat_intervals, w.history.flat_intervals)
    assert both.audit.rows_read == 6 and both.audit.dropped_by("failed_status") == 1


def test_bad_cdxj_records_are_named(tmp_path):
    path = tmp_path / "cdx-00007.gz"
    good = 'com,a)/ 20240101000000 {"url": "http://a/", "status": "200", "digest": "X"}\n'
    for bad, message in [
        ('com,a)/ 20240102000000 ["url"]\n', r"cdx-00007\.gz: line 2: the CDXJ JSON block must be an object"),
        (
            'com,a)/ 20240102000000 {"url": "http://a/", "status": "2x"}\n',
            r"cdx-00007\.gz: line 2, column 'statuscode': expected a number; got '2x'",
        ),
        ('com,a)/ 20240102000000 {"status": "200", "digest": "Y"}\n', r"cdx-00007\.gz: line 2, column 'url': missing"),
        ('com,a)/ 2024010200 {"url": "http://a/"}\n', r"cdx-00007\.gz: line 2, field 'timestamp': expected 14"),
    ]:
        path.write_bytes(gzip.compress((good + bad).encode()))
        with pytest.raises(CrawlLogError, match=message):
            read_log(path)
    with pytest.raises(ValueError, match=r"`page_key` must be one of \['url', 'surt'\]; got 'host'"):
        read_cdx(path, page_key="host")
