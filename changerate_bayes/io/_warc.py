"""WARC files through warcio: response records and revisits."""

from __future__ import annotations

import base64
import hashlib
import os

import numpy as np
import pandas as pd

from ._cdx import strip_digest_algorithm
from ._compressed import DECOMPRESSION_ERRORS, decompression_error
from ._errors import CrawlLogError
from ._semantics import CrawlLog, VisitColumns, build_log, compact_frame
from ._tabular import DEFAULT_CHUNK_ROWS, _as_paths, _check_chunk

__all__ = ["read_warc", "NOT_MODIFIED_PROFILES"]

#: WARC/1.0 and WARC/1.1 revisit profiles that mean "the page did not change".
NOT_MODIFIED_PROFILES = ("identical-payload-digest", "server-not-modified")


def _sha1_b32(stream) -> str:
    h = hashlib.sha1()
    for block in iter(lambda: stream.read(1 << 16), b""):
        h.update(block)
    return "sha1:" + base64.b32encode(h.digest()).decode("ascii")


def _iterator(fh):
    """warcio's ArchiveIterator over ``fh`` that also tells whether the file ends inside a record.

    It also skips the HTTP headers of a record without a target URI (warcio fails on it).
    """
    from warcio.archiveiterator import ArchiveIterator

    class _Iterator(ArchiveIterator):
        ended_inside_member = False

        def __init__(self, fileobj):
            super().__init__(fileobj)
            load = self.loader.load_http_headers

            def load_http_headers(rec_type, uri, stream, length):
                # warcio reads a record's HTTP headers only for http(s) target URIs, and
                # fails on a record that has none; such a record is skipped by the reader.
                return None if uri is None else load(rec_type, uri, stream, length)

            self.loader.load_http_headers = load_http_headers

        def at_end(self) -> bool:
            """Whether every byte of the file has been read (after a record that failed to parse)."""
            return self.fh.read(1) == b"" and (self.reader is None or self.reader.rem_length() == 0)

        def close(self):
            # the file ends inside a gzip member, or past the end of the last whole record
            # (the headers of a record cut short, which warcio takes for the end of the file)
            decompressor = getattr(self.reader, "decompressor", None)
            if decompressor is not None and not getattr(decompressor, "eof", True):
                self.ended_inside_member = True
            try:
                size = os.fstat(self.fh.fileno()).st_size
            except (AttributeError, OSError, ValueError):
                size = None
            if size is not None and self.offset is not None and self.offset < size:
                self.ended_inside_member = True
            super().close()

    return _Iterator(fh)


def _complete(record, it) -> bool:
    """Read the rest of ``record``: whether all of its Content-Length (and its gzip member) was there."""
    length = record.rec_headers.get_header("Content-Length")
    stream = record.raw_stream
    while stream.read(1 << 16):
        pass
    if length is None or not length.strip().isdigit() or getattr(stream, "limit", 0) != 0:
        return False
    it.read_to_end()  # the blank lines after the record, and the end of its gzip member
    decompressor = getattr(it.reader, "decompressor", None)
    return decompressor is None or getattr(decompressor, "eof", True)


def read_warc(paths, *, chunk_rows=DEFAULT_CHUNK_ROWS) -> CrawlLog:
    """Read WARC files (plain or gzipped, via ``warcio``) into a ragged history.

    Rows are the capture records: ``response`` records (page = ``WARC-Target-URI``,
    time = ``WARC-Date``, status = the HTTP status, digest = ``WARC-Payload-Digest``,
    or the SHA-1 of the payload when the header is absent) and ``revisit`` records.
    A revisit with profile identical-payload-digest or server-not-modified (WARC 1.0
    and 1.1 URIs) is a visit that saw no change; a revisit of another profile is
    dropped as ``not_a_capture``. Other records (warcinfo, request, metadata,
    resource) are not visits and are not counted. Changes are then decided by the
    digest as in :mod:`changerate_bayes.io`.

    A record cut short (a file that ends inside it, after a download or copy that
    stopped early: fewer bytes than its ``Content-Length``, or a gzip member that ends
    early) is dropped, its partial payload never hashed: the audit counts it
    (``truncated_records``, the file in ``truncated_files``) and a warning names the
    file. A capture record without ``WARC-Target-URI`` belongs to no page: it is skipped
    and counted (``records_without_page``). Redirects (3xx) are dropped as in
    :func:`read_cdx`.

    Parameters
    ----------
    paths : path or list of paths
    chunk_rows : int, default 500_000
        Records gathered before they are compacted.

    Returns
    -------
    CrawlLog
        Row numbers in the audit and in errors are record numbers (from 1, counting
        every record of the file).

    Raises
    ------
    CrawlLogError (a ValueError)
        For a file warcio cannot read (naming the record), a ``WARC-Date`` that is not
        a time, no capture records, or no page with two usable captures.

    Warns
    -----
    UserWarning
        For each file with records cut short.
    """
    chunk_rows = _check_chunk(chunk_rows)
    files = _as_paths(paths)
    labels = pd.Index([], dtype=object)
    state: dict = {}
    parts = []
    extra = new_extra()
    for path in files:
        more, labels = _compact_warc_file(path, chunk_rows=chunk_rows, labels=labels, state=state, extra=extra)
        parts.extend(more)
    if not parts:
        skipped = "".join(
            f"; {n} {what}"
            for n, what in (
                (extra["truncated_records"], "record(s) cut short by the end of the file"),
                (extra["records_without_page"], "without WARC-Target-URI"),
            )
            if n
        )
        raise CrawlLogError(f"{', '.join(map(str, files))}: no response or revisit records{skipped}")
    v = VisitColumns.concat(parts)
    return build_log(v, labels, change_from="digest", sources=files, audit_extra=extra)


def http_dates(values: pd.Series) -> pd.Series:
    """HTTP dates (RFC 9110: ``Sun, 06 Nov 1994 08:49:37 GMT``) as ISO-8601 UTC; "" where missing or malformed.

    A malformed Last-Modified header is the server's error, not the log's: it is not used.
    """
    t = pd.to_datetime(values, format="%a, %d %b %Y %H:%M:%S GMT", utc=True, errors="coerce")
    return pd.Series(np.where(t.isna(), "", t.dt.strftime("%Y-%m-%dT%H:%M:%SZ")), index=values.index)


def new_extra() -> dict:
    """The WARC reader's own audit counts, zero."""
    return {"truncated_records": 0, "truncated_files": (), "records_without_page": 0}


def _compact_warc_file(path, *, chunk_rows, labels=None, state=None, extra=None):
    """Compact columns of one WARC file: (list of VisitColumns, labels); ``extra`` (the audit's
    truncated_records, truncated_files, records_without_page) is updated in place."""
    import warnings

    from warcio.exceptions import ArchiveLoadFailed

    labels = pd.Index([], dtype=object) if labels is None else labels
    state = {} if state is None else state
    extra = new_extra() if extra is None else extra
    parts = []
    names = {
        "page": "WARC-Target-URI",
        "fetch_time": "WARC-Date",
        "status": "HTTP status",
        "digest": "WARC-Payload-Digest",
        "server_date": "Date",
    }
    src = str(path)
    rows, nums = [], []
    number = 0

    def flush():
        nonlocal labels
        if not rows:
            return
        df = pd.DataFrame(
            rows,
            columns=[
                "page",
                "fetch_time",
                "status",
                "digest",
                "not_modified",
                "not_capture",
                "last_modified",
                "server_date",
            ],
        )
        df["digest"] = strip_digest_algorithm(df["digest"])  # as in a CDX index of the same captures
        df["last_modified"] = http_dates(df["last_modified"])
        df["server_date"] = http_dates(df["server_date"])
        part, labels = compact_frame(
            df,
            source=src,
            line_word="record",
            labels=labels,
            state=state,
            names=names,
            lines=np.asarray(nums, dtype=np.int64),
        )
        parts.append(part)
        rows.clear()
        nums.clear()

    cuts, last_cut = 0, False
    with open(path, "rb") as fh:
        it = _iterator(fh)
        try:
            for record in it:
                number += 1
                kind = record.rec_type
                head = record.rec_headers
                status = digest = None
                if kind in ("response", "revisit"):
                    status = record.http_headers.get_statuscode() if record.http_headers else None
                    digest = head.get_header("WARC-Payload-Digest") or ""
                    if kind == "response" and not digest:
                        digest = _sha1_b32(record.content_stream())
                last_cut = not _complete(record, it)  # a cut header may look like a record of no type
                if last_cut:  # a partial record is never a row (nor is its partial payload hashed)
                    cuts += 1
                    continue
                if kind not in ("response", "revisit"):
                    continue
                page = head.get_header("WARC-Target-URI")
                if not (page or "").strip():
                    extra["records_without_page"] += 1
                    continue
                http = record.http_headers
                modified = (http.get_header("Last-Modified") or "") if http else ""
                served = (http.get_header("Date") or "") if http else ""
                if kind == "response":
                    rows.append(
                        (page, head.get_header("WARC-Date"), status or "", digest, False, False, modified, served)
                    )
                else:
                    profile = head.get_header("WARC-Profile") or ""
                    known = any(profile.rstrip("/").endswith(p) for p in NOT_MODIFIED_PROFILES)
                    rows.append(
                        (page, head.get_header("WARC-Date"), status or "", digest, known, not known, modified, served)
                    )
                nums.append(number)
                if len(rows) >= chunk_rows:
                    flush()
        except ArchiveLoadFailed as exc:
            if not it.at_end():
                raise CrawlLogError(f"{src}: record {number + 1}: not a readable WARC record ({exc})") from None
            cuts, last_cut = cuts + 1, True  # the file ends inside the first line of a record
        except DECOMPRESSION_ERRORS as exc:
            raise decompression_error(src, exc, path) from None
        if it.ended_inside_member and not last_cut:  # cut inside headers warcio took for the end
            cuts += 1
    if cuts:
        extra["truncated_records"] += cuts
        extra["truncated_files"] += (src,)
        warnings.warn(
            f"{src}: {cuts} record(s) cut short (fewer bytes than their Content-Length, or a gzip "
            "member that ends early: a download or copy that stopped early?); dropped, see the "
            "audit's truncated_records",
            UserWarning,
            stacklevel=2,
        )
    flush()
    return parts, labels
