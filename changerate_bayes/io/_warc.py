"""WARC files through warcio: response records and revisits."""

from __future__ import annotations

import base64
import hashlib

import numpy as np
import pandas as pd

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
    """
    from warcio.archiveiterator import ArchiveIterator
    from warcio.exceptions import ArchiveLoadFailed

    chunk_rows = _check_chunk(chunk_rows)
    files = _as_paths(paths)
    labels = pd.Index([], dtype=object)
    state: dict = {}
    parts = []
    names = {"page": "WARC-Target-URI", "fetch_time": "WARC-Date", "status": "HTTP status",
             "digest": "WARC-Payload-Digest"}
    for path in files:
        src = str(path)
        rows, nums = [], []
        number = 0

        def flush():
            nonlocal labels
            if not rows:
                return
            df = pd.DataFrame(rows, columns=["page", "fetch_time", "status", "digest", "not_modified", "not_capture"])
            part, labels = compact_frame(df, source=src, first_line=0, line_word="record", labels=labels,
                                         state=state, names=names, lines=np.asarray(nums, dtype=np.int64))
            parts.append(part)
            rows.clear()
            nums.clear()

        with open(path, "rb") as fh:
            try:
                for record in ArchiveIterator(fh):
                    number += 1
                    kind = record.rec_type
                    if kind not in ("response", "revisit"):
                        continue
                    head = record.rec_headers
                    status = record.http_headers.get_statuscode() if record.http_headers else None
                    if kind == "response":
                        digest = head.get_header("WARC-Payload-Digest") or _sha1_b32(record.content_stream())
                        rows.append((head.get_header("WARC-Target-URI"), head.get_header("WARC-Date"), status or "",
                                     digest, False, False))
                    else:
                        profile = head.get_header("WARC-Profile") or ""
                        known = any(profile.rstrip("/").endswith(p) for p in NOT_MODIFIED_PROFILES)
                        rows.append((head.get_header("WARC-Target-URI"), head.get_header("WARC-Date"), status or "",
                                     head.get_header("WARC-Payload-Digest") or "", known, not known))
                    nums.append(number)
                    if len(rows) >= chunk_rows:
                        flush()
            except ArchiveLoadFailed as exc:
                raise CrawlLogError(f"{src}: record {number + 1}: not a readable WARC record ({exc})") from None
        flush()
    if not parts:
        raise CrawlLogError(f"{', '.join(map(str, files))}: no response or revisit records")
    v = VisitColumns.concat(parts)
    return build_log(v, labels, change_from="digest", sources=files)
