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


#: What names a page in a CDX log: the capture's URL, or the SURT key of the index.
PAGE_KEYS = ("url", "surt")


def strip_digest_algorithm(digests: pd.Series) -> pd.Series:
    """Digests without a leading ``sha1:`` (WARC headers have it, CDX indexes mostly not)."""
    return digests.str.replace(r"^(?i:sha1):", "", regex=True)


def _frame(rows: list[list[str]], page_key: str = "url") -> pd.DataFrame:
    arr = np.array(rows, dtype=object).reshape(len(rows), 6) if rows else np.empty((0, 6), dtype=object)
    df = pd.DataFrame(arr, columns=["surt", "fetch_time", "url", "mime", "status", "digest"])
    df["not_modified"] = (df["mime"] == _REVISIT).to_numpy(dtype=bool)
    df["digest"] = strip_digest_algorithm(df["digest"])
    df["page"] = df[page_key].mask(df[page_key] == "-", "")  # "-": no URL, a missing page named by its line
    return df.drop(columns=["surt", "url", "mime"])


def _json_field(meta: dict, key: str) -> str:
    """A CDXJ field as CDX text: missing and JSON ``null`` are both ``-`` (a missing field)."""
    value = meta.get(key)
    return "-" if value is None else str(value)


def _parse_line(text: str, *, src: str, line: int) -> list[str] | None:
    text = text.rstrip("\r\n")
    if not text.strip():
        return None
    if line == 1 and text.lstrip().startswith("CDX"):
        return None  # the legend line " CDX N b a m s k r M S V g"
    parts = text.split(" ")
    if len(parts) >= 3 and parts[2][:1] in ("{", "["):  # CDXJ: urlkey timestamp {json}
        try:
            meta = json.loads(text.split(" ", 2)[2])
        except json.JSONDecodeError as exc:
            raise CrawlLogError(f"{src}: line {line}: the CDXJ JSON block is not valid JSON ({exc.msg})") from None
        if not isinstance(meta, dict):
            raise CrawlLogError(
                f"{src}: line {line}: the CDXJ JSON block must be an object "
                f'({{"url": ..., "digest": ...}}); got {type(meta).__name__}'
            )
        return [parts[0], parts[1], *(_json_field(meta, key) for key in ("url", "mime", "status", "digest"))]
    if len(parts) < 7:
        raise CrawlLogError(
            f"{src}: line {line}: a CDX line has at least 7 space-separated fields (urlkey timestamp original "
            f"mimetype statuscode digest length); got {len(parts)}: {text[:80]!r}"
        )
    return parts[:6]


def read_cdx(paths, *, chunk_rows=DEFAULT_CHUNK_ROWS, page_key="url") -> CrawlLog:
    """Read Internet Archive / pywb CDX files (plain, or gzip/bz2/xz/zstd) into a ragged history.

    Each line is one capture: ``urlkey timestamp original mimetype statuscode digest
    length [...]`` (space-separated, ``-`` for a missing field; the 11-field form
    with offsets is accepted, a leading `` CDX ...`` legend line is skipped), or a
    CDXJ line ``urlkey timestamp {"url": ..., "status": ..., "digest": ...}``.

    The page is the capture's URL (``original``, or the JSON ``url``), as in a WARC
    log of the same captures, so that the two can be read as one log; with
    ``page_key="surt"`` it is the ``urlkey`` (the canonical SURT form, so http/https
    and ``www.`` variants of one URL are one page). The time is the 14-digit UTC
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
    page_key : {"url", "surt"}, default "url"
        What names a page: the captured URL or the index's SURT key.

    Returns
    -------
    CrawlLog

    Raises
    ------
    ValueError
        For a ``page_key`` not in {"url", "surt"}.
    CrawlLogError (a ValueError)
        Naming the file, line and field: a CDXJ JSON block that is not a JSON object,
        a missing URL (with ``page_key="url"``), a line with fewer than 7 fields, a timestamp
        that is not ``YYYYMMDDhhmmss``, a non-numeric status, a digest field that is
        ``-`` on every line, no page with two usable captures, or a compressed file that
        is truncated or corrupt.
    """
    chunk_rows = _check_chunk(chunk_rows)
    _check_page_key(page_key)
    files = _as_paths(paths)
    labels = pd.Index([], dtype=object)
    state: dict = {}
    parts = []
    for path in files:
        more, labels = _compact_cdx_file(path, chunk_rows=chunk_rows, page_key=page_key, labels=labels, state=state)
        parts.extend(more)
    if not parts:
        raise CrawlLogError(f"{', '.join(map(str, files))}: no CDX lines")
    v = VisitColumns.concat(parts)
    check_digest_not_empty(v, source=", ".join(map(str, files)), column="digest")
    return build_log(v, labels, change_from="digest", sources=files)


def _check_page_key(page_key) -> None:
    if page_key not in PAGE_KEYS:
        raise ValueError(f"`page_key` must be one of {list(PAGE_KEYS)}; got {page_key!r}")


def _compact_cdx_file(path, *, chunk_rows, page_key="url", labels=None, state=None):
    """Compact columns of one CDX file: (list of VisitColumns, labels)."""
    labels = pd.Index([], dtype=object) if labels is None else labels
    state = {} if state is None else state
    names = {
        "page": "url" if page_key == "url" else "urlkey",
        "fetch_time": "timestamp",
        "status": "statuscode",
        "digest": "digest",
    }
    src = str(path)
    parts = []
    with open_text(path) as fh:  # gzip, bz2, xz or zstd by the magic bytes; a UTF-8 BOM dropped
        rows: list = []
        try:
            for line, text in enumerate(fh, start=1):
                row = _parse_line(text, src=src, line=line)
                if row is None:
                    continue
                rows.append((line, row))
                if len(rows) >= chunk_rows:
                    part, labels = _chunk(rows, src, labels, state, names, page_key)
                    parts.append(part)
                    rows = []
        except UnicodeDecodeError:
            raise _not_utf8(path, src) from None
        except DECOMPRESSION_ERRORS as exc:
            raise decompression_error(src, exc, path) from None
        if rows:
            part, labels = _chunk(rows, src, labels, state, names, page_key)
            parts.append(part)
    return parts, labels


def _not_utf8(path, src: str) -> CrawlLogError:
    """The error for a CDX file that is not UTF-8, naming its first such line (the file is read again as bytes)."""
    from ._compressed import open_bytes

    try:
        with open_bytes(path) as fh:
            for line, raw in enumerate(fh, start=1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    return CrawlLogError(
                        f"{src}: line {line}: not UTF-8 text (byte {raw[exc.start]:#04x} at "
                        f"column {exc.start + 1}); a CDX index is UTF-8: re-encode the file"
                    )
    except DECOMPRESSION_ERRORS as exc:
        return decompression_error(src, exc, path)
    return CrawlLogError(f"{src}: not a text CDX file (not UTF-8)")


def _chunk(rows, src, labels, state, names, page_key):
    lines = np.array([ln for ln, _ in rows], dtype=np.int64)
    df = _frame([r for _, r in rows], page_key)
    bad = ~df["fetch_time"].str.fullmatch(r"\d{14}")
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        raise CrawlLogError(
            f"{src}: line {lines[i]}, field 'timestamp': expected 14 digits YYYYMMDDhhmmss (UTC); "
            f"got {df['fetch_time'].iloc[i]!r}"
        )
    part, labels = compact_frame(
        df,
        source=src,
        first_line=int(lines[0]),
        line_word="line",
        labels=labels,
        state=state,
        names=names,
        time_format=_TIME_FORMAT,
        lines=lines,
    )
    return part, labels
