"""One log file as compact columns, before the change rules: the unit of work of a cluster run.

A :class:`Piece` holds every row of one file (or the rows of some of its pages) with
the values already parsed and checked, so that errors name the file and its line or
record, while the change rules (:func:`~changerate_bayes.io._semantics.build_log`)
run later on all the pieces of a set of pages, wherever those pages' rows were read.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, cast

import numpy as np
import pandas as pd

from ._errors import CrawlLogError
from ._semantics import VisitColumns

__all__ = ["Piece", "compact_file", "merge_pieces", "read_pieces", "split_piece"]

#: Row key of the table's page order: file index * _FILE_STRIDE + row position in the file.
_FILE_STRIDE = 1 << 40


@dataclass
class Piece:
    """Rows of one file (internal).

    ``v.page`` are codes into ``labels`` (the file's pages in order of first
    appearance); ``pos`` is each row's position in the file (from 0); ``kind`` is
    what decides changes; ``digest_column`` the file's digest column (None if none).
    """

    v: VisitColumns | None  # None: no visit in the file
    labels: np.ndarray
    pos: np.ndarray
    file_index: int
    source: str
    kind: str
    digest_column: str | None
    extra: dict | None = None  # the reader's own audit counts (WARC: truncated records, ...)
    time_kinds: dict | None = None  # column -> "naive"/"aware" -> (line, value) of its first time
    line_word: str = "line"


def _tabular(path, fmt, mapping, change_from, chunk_rows, state):
    """One CSV or Parquet file's chunks, read by the pandas engine's scan (same columns, checks and errors)."""
    from pathlib import Path

    from ._tabular import _Scan, scan_csv, scan_parquet

    class Collect(_Scan):
        def __init__(self):
            super().__init__([Path(path)], None)
            self.parts = []

        def add(self, part):
            self.parts.append(part)

    scan = Collect()
    scan.state = state
    if fmt == "parquet":
        scan_parquet(scan, mapping=mapping, change_from=change_from, chunk_rows=chunk_rows)
    else:
        scan_csv(scan, mapping=mapping, change_from=change_from, chunk_rows=chunk_rows)
    return scan.parts, scan.labels, scan.kind, scan.plans[0].get("digest")


def compact_file(
    path, fmt: str, *, file_index: int = 0, columns=None, change_from="auto", chunk_rows=None, page_key="url"
) -> Piece:
    """Read one log file (``fmt`` one of "csv", "parquet", "cdx", "warc") into a :class:`Piece`.

    Raises
    ------
    CrawlLogError (a ValueError)
        As the format's reader, naming the file, the line (row, record) and the field.
    """
    from ._tabular import DEFAULT_CHUNK_ROWS, _check_chunk

    chunk_rows = DEFAULT_CHUNK_ROWS if chunk_rows is None else _check_chunk(chunk_rows)
    # naive/aware times recorded, checked over all files by the caller
    state: dict[str, Any] = {"defer": True, "kinds": {}}
    if fmt in ("csv", "parquet"):
        parts, labels, kind, digest_column = _tabular(path, fmt, columns or {}, change_from, chunk_rows, state)
    elif fmt == "cdx":
        from ._cdx import _compact_cdx_file

        parts, labels = _compact_cdx_file(path, chunk_rows=chunk_rows, page_key=page_key, state=state)
        kind, digest_column = "digest", "digest"
    elif fmt == "warc":
        from ._warc import _compact_warc_file, new_extra

        extra = new_extra()
        parts, labels = _compact_warc_file(path, chunk_rows=chunk_rows, extra=extra, state=state)
        kind, digest_column = "digest", "WARC-Payload-Digest"
    else:
        raise ValueError(f"`fmt` must be one of ['csv', 'parquet', 'cdx', 'warc']; got {fmt!r}")
    v = VisitColumns.concat(parts) if parts else None  # None: no visit in the file
    return Piece(
        v=v,
        labels=np.asarray(labels, dtype=object),
        pos=np.arange(0 if v is None else v.page.size, dtype=np.int64),
        file_index=file_index,
        source=str(path),
        kind=kind,
        digest_column=digest_column,
        extra=extra if fmt == "warc" else None,
        time_kinds=state["kinds"],
        line_word={"parquet": "row", "warc": "record"}.get(fmt, "line"),
    )


def check_time_kinds(found) -> None:
    """Refuse naive and time-zone-aware times mixed anywhere in the files, as the readers do.

    ``found`` holds, file by file in log order, (source, line word, time kinds).
    """
    from ._times import check_kinds

    state: dict = {}
    for source, line_word, kinds in found:
        for column, firsts in (kinds or {}).items():
            check_kinds(state, firsts, source=source, column=column, line_word=line_word)


def _take(piece: Piece, mask: np.ndarray) -> Piece:
    assert piece.v is not None  # only pieces with visits are split
    codes = piece.v.page[mask]
    used = np.unique(codes)  # codes are in order of first appearance, so this keeps that order
    cols = {
        f.name: (None if getattr(piece.v, f.name) is None else getattr(piece.v, f.name)[mask])
        for f in fields(VisitColumns)
    }
    cols["page"] = np.searchsorted(used, codes).astype(np.int64)
    return replace(piece, v=VisitColumns(**cast(dict[str, Any], cols)), labels=piece.labels[used], pos=piece.pos[mask])


def page_hashes(labels) -> np.ndarray:
    """A uint64 hash of each page label (the same on every machine)."""
    return pd.util.hash_array(np.asarray(labels, dtype=object))


def split_piece(piece: Piece, n: int) -> list[Piece]:
    """The piece's rows in ``n`` parts by a hash of the page: every page's rows in one part."""
    if piece.v is None:
        parts = [piece] + [replace(piece) for _ in range(n - 1)]
    else:
        bucket = (page_hashes(piece.labels) % np.uint64(n)).astype(np.int64)[piece.v.page]
        parts = [_take(piece, bucket == b) for b in range(n)]
    for p in parts[1:]:  # the file's own counts are counted once, with its first part
        p.extra = None
    return parts


def _visits(p: Piece) -> VisitColumns:
    """The rows of a piece that has some."""
    assert p.v is not None
    return p.v


def merge_pieces(pieces: list[Piece]) -> tuple[VisitColumns | None, np.ndarray, np.ndarray, dict | None]:
    """Rows of several pieces as one log, in file order.

    Returns
    -------
    (VisitColumns, labels, first_key, extra)
        ``first_key`` is, per label, the log position of the page's first row
        (file index * 2**40 + position in the file): the order of first appearance;
        ``extra`` the readers' own audit counts summed (None if none).
    """
    extra = sum_extras([p.extra for p in pieces])
    pieces = sorted((p for p in pieces if p.v is not None and p.v.page.size), key=lambda p: p.file_index)
    if not pieces:
        return None, np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64), extra
    all_labels = np.concatenate([p.labels for p in pieces])
    codes, uniques = pd.factorize(all_labels, sort=False)
    offsets = np.cumsum([0] + [p.labels.size for p in pieces])
    for name in ("last_modified", "server_date"):
        if any(getattr(p.v, name) is None for p in pieces) and not all(getattr(p.v, name) is None for p in pieces):
            from ._semantics import _NAT  # e.g. CDX (no dates) and WARC (Last-Modified and Date headers) together

            pieces = [
                p
                if getattr(p.v, name) is not None
                else replace(p, v=replace(_visits(p), **{name: np.full(_visits(p).page.size, _NAT, dtype=np.int64)}))
                for p in pieces
            ]
    parts = []
    first_key = np.full(uniques.size, np.iinfo(np.int64).max, dtype=np.int64)
    for p, off in zip(pieces, offsets[:-1]):
        remap = codes[off : off + p.labels.size]
        assert p.v is not None  # pieces without visits are left out above
        page = remap[p.v.page].astype(np.int64)
        parts.append(replace(p.v, page=page))
        used, at = np.unique(page, return_index=True)  # each page's first row in this piece
        first_key[used] = np.minimum(first_key[used], p.file_index * _FILE_STRIDE + p.pos[at])
    return VisitColumns.concat(parts), np.asarray(uniques, dtype=object), first_key, extra


def sum_extras(extras) -> dict | None:
    """The readers' own audit counts of several files, summed (None if no file has any)."""
    extras = [e for e in extras if e is not None]
    if not extras:
        return None
    out: dict[str, Any] = {k: 0 for k in extras[0] if k != "truncated_files"}
    for e in extras:
        for k in out:
            out[k] += e[k]
    out["truncated_files"] = tuple(dict.fromkeys(f for e in extras for f in e["truncated_files"]))
    return out


def read_pieces(files, formats, *, columns=None, change_from="auto", chunk_rows=None, page_key="url"):
    """Files of possibly different formats (e.g. CDX and WARC) read as one log: a ``CrawlLog``.

    Raises
    ------
    CrawlLogError (a ValueError)
        As the readers; files whose changes would be decided differently; a digest
        empty in every file; no page with two usable visits.
    """
    from ._semantics import build_log

    pieces = [
        compact_file(
            f, fmt, file_index=i, columns=columns, change_from=change_from, chunk_rows=chunk_rows, page_key=page_key
        )
        for i, (f, fmt) in enumerate(zip(files, formats))
    ]
    kinds = sorted({p.kind for p in pieces})
    names = ", ".join(map(str, files))
    if len(kinds) > 1:
        raise CrawlLogError(
            f"{names}: changes would be decided by {kinds} in different files; give the files the same columns"
        )
    if all(p.v is None for p in pieces):
        raise CrawlLogError(f"{names}: no visits in the files")
    check_time_kinds([(p.source, p.line_word, p.time_kinds) for p in pieces])
    if kinds[0] == "digest" and not any(p.v.has_digest.any() for p in pieces if p.v is not None):
        raise CrawlLogError(
            f"{names}: line 1, column {pieces[0].digest_column!r}: the digest column is entirely "
            "empty; map another column with `columns=` or choose `change_from`"
        )
    v, labels, _, extra = merge_pieces(pieces)
    return build_log(v, labels, change_from=kinds[0], sources=files, audit_extra=extra)
