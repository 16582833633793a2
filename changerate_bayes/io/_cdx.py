"""Internet Archive / pywb CDX indexes: one capture per line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ._compressed import DECOMPRESSION_ERRORS, decompression_error, open_text
from ._errors import CrawlLogError
from ._semantics import CrawlLog, VisitColumns, build_log, check_digest_not_empty, compact_frame
from ._tabular import DEFAULT_CHUNK_ROWS, _as_paths, _check_chunk

__all__ = ["read_cdx"]

_REVISIT = "warc/revisit"
_TIME_FORMAT = "%Y%m%d%H%M%S"


def _frame(rows: list[list[str]]) -> pd.DataFrame:
    arr = np.array(rows, dtype=object).reshape(len(rows), 6) if rows else np.empty((0, 6), dtype=object)
    df = pd.DataFrame(arr, columns=["page", "fetch_time", "original", "mime", "status", "digest"])
    df["not_modified"] = (df["mime"] == _REVISIT).to_numpy(dtype=bool)
    return df.drop(columns=["original", "mime"])


def _parse_line(text: str, *, src: str, line: int) -> list[str] | None:
    text = text.rstrip("\r\n")
    if not text.strip():
        return None
    if line == 1 and text.lstrip().startswith("CDX"):
        return None  # the legend line " CDX N b a m s k r M S V g"
    parts = text.split(" ")
    if len(parts) >= 3 and parts[2].startswith("{"):  # CDXJ: urlkey timestamp {json}
        try:
            meta = json.loads(text.split(" ", 2)[2])
        except json.JSONDecodeError as exc:
            raise CrawlLogError(f"{src}: line {line}: the CDXJ JSON block is not valid JSON ({exc.msg})") from None
        return [parts[0], parts[1], meta.get("url", "-"), meta.get("mime", "-"),
                str(meta.get("status", "-")), meta.get("digest", "-")]
    if len(parts) < 7:
        raise CrawlLogError(
            f"{src}: line {line}: a CDX line has at least 7 space-separated fields (urlkey timestamp original "
            f"mimetype statuscode digest length); got {len(parts)}: {text[:80]!r}"
        )
    return parts[:6]


def read_cdx(paths, *, chunk_rows=DEFAULT_CHUNK_ROWS) -> CrawlLog:
    """Read Internet Archive / pywb CDX files (plain, or gzip/bz2/xz/zstd) into a ragged history.

    Each line is one capture: ``urlkey timestamp original mimetype statuscode digest
    length [...]`` (space-separated, ``-`` for a missing field; the 11-field form
    with offsets is accepted, a leading `` CDX ...`` legend line is skipped), or a
    CDXJ line ``urlkey timestamp {"url": ..., "status": ..., "digest": ...}``.

    The page is the ``urlkey`` (the canonical SURT form, so http/https and
    ``www.`` variants of one URL are one page); the time is the 14-digit UTC
    ``timestamp``; changes are decided by the payload ``digest`` (see
    :mod:`changerate_bayes.io`), a ``warc/revisit`` capture is a visit that saw no
    change, status ``-`` (missing) or >= 400 is a failed visit, and a redirect (3xx other
    than 304; e.g. the ``http`` capture of a page served over ``https``) is no
    observation of the page's content: it is dropped and counted as ``redirect`` in the
    audit. A UTF-8 byte-order mark at the start of a file is ignored.

    Parameters
    ----------
    paths : path or list of paths
    chunk_rows : int, default 500_000
        Lines parsed at a time.

    Returns
    -------
    CrawlLog

    Raises
    ------
    CrawlLogError (a ValueError)
        Naming the file, line and field: a line with fewer than 7 fields, a timestamp
        that is not ``YYYYMMDDhhmmss``, a non-numeric status, a digest field that is
        ``-`` on every line, no page with two usable captures, or a compressed file that
        is truncated or corrupt.
    """
    chunk_rows = _check_chunk(chunk_rows)
    files = _as_paths(paths)
    labels = pd.Index([], dtype=object)
    state: dict = {}
    parts = []
    names = {"page": "urlkey", "fetch_time": "timestamp", "status": "statuscode", "digest": "digest"}
    for path in files:
        src = str(path)
        with open_text(path) as fh:  # gzip, bz2, xz or zstd by the magic bytes; a UTF-8 BOM dropped
            rows: list = []
            first = None
            try:
                for line, text in enumerate(fh, start=1):
                    row = _parse_line(text, src=src, line=line)
                    if row is None:
                        continue
                    if first is None:
                        first = line
                    rows.append((line, row))
                    if len(rows) >= chunk_rows:
                        parts.append(_chunk(rows, src, labels, state, names))
                        labels = parts[-1][1]
                        rows = []
            except UnicodeDecodeError:
                raise CrawlLogError(f"{src}: not a text CDX file (not UTF-8)") from None
            except DECOMPRESSION_ERRORS as exc:
                raise decompression_error(src, exc, path) from None
            if rows:
                parts.append(_chunk(rows, src, labels, state, names))
                labels = parts[-1][1]
    if not parts:
        raise CrawlLogError(f"{', '.join(map(str, files))}: no CDX lines")
    v = VisitColumns.concat([p[0] for p in parts])
    check_digest_not_empty(v, source=", ".join(map(str, files)), column="digest")
    return build_log(v, labels, change_from="digest", sources=files)


def _chunk(rows, src, labels, state, names):
    lines = np.array([ln for ln, _ in rows], dtype=np.int64)
    df = _frame([r for _, r in rows])
    bad = ~df["fetch_time"].str.fullmatch(r"\d{14}")
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise CrawlLogError(f"{src}: line {lines[i]}, field 'timestamp': expected 14 digits YYYYMMDDhhmmss (UTC); "
                            f"got {df['fetch_time'].iloc[i]!r}")
    part, labels = compact_frame(df, source=src, first_line=int(lines[0]), line_word="line", labels=labels,
                                 state=state, names=names, time_format=_TIME_FORMAT, lines=lines)
    return part, labels


