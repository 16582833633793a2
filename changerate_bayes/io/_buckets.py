"""A log's visits partitioned by page, so that its semantics run one bucket of pages at a time.

The readers reduce each chunk of a log to compact columns (:class:`VisitColumns`, about
35 bytes a row). :class:`PageBuckets` scatters every chunk's rows into ``n_buckets``
buckets by page code (code mod ``n_buckets``; every row of a page lands in the same
bucket, in file order), holds them in memory up to ``memory_bytes`` and appends them to
one file per bucket and column beyond that. :func:`reduce_buckets` then applies
:func:`build_log` to one bucket at a time. The change semantics depend on a page's own
rows only (and on their file order, which a bucket keeps), so each bucket's pages get
exactly the intervals, changes and audit counts that the whole log gives them; the
audit is the sum of the buckets' (:meth:`Audit.combine`).

Memory: the page labels, the buckets held in memory (at most ``memory_bytes``) and the
work arrays of one bucket (about 200 bytes per row of that bucket), never the whole log.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, cast

import numpy as np

from ._audit import Audit
from ._errors import CrawlLogError
from ._semantics import CrawlLog, VisitColumns, build_log

__all__ = ["PageBuckets", "bucket_count", "reduce_buckets", "BUCKET_ROWS"]

#: Rows per bucket aimed at when the size of the log is known or estimated (~0.4 GB of work arrays).
BUCKET_ROWS = 2_000_000
_NAMES = tuple(f.name for f in fields(VisitColumns))


def different_columns_message(present, first) -> str:
    """The error for rows whose compact columns (``present``) differ from the first rows' (``first``)."""
    missing = [n for n, a, b in zip(_NAMES, present, first) if a != b]
    return f"the files do not all have a {missing[0]!r} column: give them the same columns"


def bucket_count(rows_estimate: float, bucket_rows: int | None = None) -> int:
    """Buckets for a log of about ``rows_estimate`` rows: ceil(rows / bucket_rows), at least 1.

    ``bucket_rows`` defaults to :data:`BUCKET_ROWS`.
    """
    bucket_rows = BUCKET_ROWS if bucket_rows is None else bucket_rows
    if not (rows_estimate > 0) or not math.isfinite(rows_estimate):
        return 1
    return max(1, int(math.ceil(rows_estimate / bucket_rows)))


class PageBuckets:
    """Compact visit columns scattered into buckets by page, spilled to disk beyond a budget.

    Parameters
    ----------
    n_buckets : int
        Buckets (>= 1); a page's rows all go to bucket ``code % n_buckets``.
    memory_bytes : float, default inf
        Bytes of rows held in memory; beyond it every bucket is appended to its files
        (in ``folder``, or a temporary folder removed by :meth:`close`).
    folder : path, optional
        Where the files go (default: the system's temporary folder).

    Notes
    -----
    Use as a context manager, or call :meth:`close`, so that the files are removed.
    """

    def __init__(self, n_buckets: int, *, memory_bytes: float = math.inf, folder=None):
        if isinstance(n_buckets, bool) or not isinstance(n_buckets, int) or n_buckets < 1:
            raise ValueError(f"`n_buckets` must be an int >= 1; got {n_buckets!r}")
        if not (memory_bytes >= 0):
            raise ValueError(f"`memory_bytes` must be >= 0; got {memory_bytes!r}")
        self.n_buckets = n_buckets
        self.memory_bytes = memory_bytes
        self.folder = folder
        self.rows = 0
        self.spilled_bytes = 0
        # per bucket: VisitColumns in file order
        self._pieces: list[list[VisitColumns]] = [[] for _ in range(n_buckets)]
        self._held = 0
        self._present: tuple[bool, ...] | None = None  # the columns present (all chunks must agree)
        self._dtypes: dict[str, np.dtype] = {}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._dir: Path | None = None

    @property
    def present(self) -> tuple | None:
        """Which of the compact columns the rows have (one bool per ``VisitColumns`` field), None before any row."""
        return self._present

    # ----------------------------------------------------------------- writing
    def add(self, part: VisitColumns) -> None:
        """Scatter one chunk's rows (in file order) into the buckets."""
        present = tuple(getattr(part, n) is not None for n in _NAMES)
        if self._present is None:
            self._present = present
            self._dtypes = {n: getattr(part, n).dtype for n, p in zip(_NAMES, present) if p}
        elif present != self._present:
            raise CrawlLogError(different_columns_message(present, self._present))
        n = part.page.size
        if n == 0:
            return
        self.rows += n
        if self.n_buckets == 1:
            self._pieces[0].append(part)
            self._held += _nbytes(part)
        else:
            which = (part.page % self.n_buckets).astype(np.uint16 if self.n_buckets < 2**16 else np.int64)
            order = np.argsort(which, kind="stable")  # keeps file order within a bucket
            bounds = np.concatenate(([0], np.cumsum(np.bincount(which, minlength=self.n_buckets))))
            cols = {name: (None if getattr(part, name) is None else getattr(part, name)[order]) for name in _NAMES}
            for b in range(self.n_buckets):
                lo, hi = bounds[b], bounds[b + 1]
                if hi > lo:
                    piece = VisitColumns(
                        **cast(dict[str, Any], {k: (None if v is None else v[lo:hi]) for k, v in cols.items()})
                    )
                    self._pieces[b].append(piece)
                    self._held += _nbytes(piece)
        if self._held > self.memory_bytes:
            self._spill()

    def _path(self, b: int, name: str) -> Path:
        assert self._dir is not None  # set by the first spill; callers ask for paths only after it
        return self._dir / f"bucket{b:05d}-{name}.bin"

    def _spill(self) -> None:
        if self._dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="changerate-buckets-", dir=self.folder)
            self._dir = Path(self._tmp.name)
        for b, pieces in enumerate(self._pieces):
            if not pieces:
                continue
            for name in self._dtypes:
                data = np.concatenate([getattr(p, name) for p in pieces])
                with open(self._path(b, name), "ab") as fh:
                    data.tofile(fh)
                self.spilled_bytes += data.nbytes
            self._pieces[b] = []
        self._held = 0

    # ----------------------------------------------------------------- reading
    def bucket(self, b: int) -> VisitColumns | None:
        """The rows of bucket ``b`` in file order (None if it holds none)."""
        if self._present is None:
            return None
        cols: dict[str, Any] = {}
        for name, present in zip(_NAMES, self._present):
            if not present:
                cols[name] = None
                continue
            parts = []
            if self._dir is not None and self._path(b, name).exists():
                parts.append(np.fromfile(self._path(b, name), dtype=self._dtypes[name]))
            parts += [getattr(p, name) for p in self._pieces[b]]
            cols[name] = np.concatenate(parts) if parts else np.zeros(0, self._dtypes[name])
        if cols["page"].size == 0:
            return None
        return VisitColumns(**cols)

    def release(self, b: int) -> None:
        """Forget bucket ``b`` (its memory and files)."""
        self._pieces[b] = []
        if self._dir is not None:
            for name in self._dtypes:
                try:
                    os.remove(self._path(b, name))
                except FileNotFoundError:
                    pass

    def any_digest(self) -> bool | None:
        """Whether some row has a digest (None without a digest column)."""
        if self._present is None or not dict(zip(_NAMES, self._present))["has_digest"]:
            return None
        for b in range(self.n_buckets):
            if any(cast(np.ndarray, p.has_digest).any() for p in self._pieces[b]):  # present: checked above
                return True
            if self._dir is not None and self._path(b, "has_digest").exists():
                if np.fromfile(self._path(b, "has_digest"), dtype=bool).any():
                    return True
        return False

    def close(self) -> None:
        """Remove the files and forget the rows."""
        self._pieces = [[] for _ in range(self.n_buckets)]
        self._held = 0
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = self._dir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _nbytes(v: VisitColumns) -> int:
    return sum(getattr(v, n).nbytes for n in _NAMES if getattr(v, n) is not None)


def reduce_buckets(store: PageBuckets, *, change_from: str, sources):
    """Apply :func:`build_log` to each bucket in turn.

    Yields
    ------
    (codes, CrawlLog)
        ``codes``: the global page codes (int64, increasing) of the bucket's history,
        whose ``page_ids`` are those codes (map them to labels with the reader's
        labels). A bucket without a page of two usable visits yields a log whose
        history is None (its audit still counts its rows). Each bucket is released
        once its log is built.
    """
    for b in range(store.n_buckets):
        v = store.bucket(b)
        if v is None:
            continue
        uniq, local = np.unique(v.page, return_inverse=True)  # increasing codes = order of first appearance
        v = replace(v, page=local.astype(np.int64, copy=False))
        store.release(b)
        part = build_log(v, uniq.astype(object), change_from=change_from, sources=sources, empty_ok=True)
        del v
        codes = None if part.history is None else np.asarray(part.history.page_ids, dtype=np.int64)
        yield codes, part


def no_pages_error(audit: Audit) -> CrawlLogError:
    """The error of a log where no page has two usable visits (as :func:`build_log` raises it)."""
    return CrawlLogError(
        f"{', '.join(audit.sources)}: no page has two usable visits, so there is nothing to estimate\n" + audit.format()
    )


def build_log_bucketed(store: PageBuckets, labels, *, change_from: str, sources) -> CrawlLog:
    """:func:`build_log` of all the rows of ``store``, one bucket at a time: the same :class:`CrawlLog`.

    The buckets' histories are put back in order of first appearance (increasing code):
    every page's intervals, changes, crawl rate and visit times are those the whole log
    gives it, and the audit is the sum of the buckets'.

    Raises
    ------
    CrawlLogError
        If no page has two usable visits.
    """
    from ..history import CrawlHistory

    labels = np.asarray(labels, dtype=object)
    audits, codes, lengths, changed, tau, rate, first, last, ages, liars = [], [], [], [], [], [], [], [], [], []
    attempts = []
    for c, part in reduce_buckets(store, change_from=change_from, sources=sources):
        audits.append(part.audit)
        if part.history is None:
            continue
        h = part.history
        codes.append(c)
        lengths.append(np.asarray(h.lengths, dtype=np.int64))
        changed.append(h.flat_changed)
        tau.append(h.flat_intervals)
        rate.append(np.broadcast_to(np.asarray(h.crawl_rate, dtype=np.float64), c.shape))
        first.append(part.first_visit)
        last.append(part.last_visit)
        attempts.append(part.last_attempt)
        ages.append(part.last_modified_age)
        liars.append(part.last_modified_unreliable)
    audit = Audit.combine(audits, sources=tuple(str(s) for s in sources))
    if not codes:
        raise no_pages_error(audit)
    page_codes = np.concatenate(codes)
    page_lengths = np.concatenate(lengths)
    order = np.argsort(page_codes, kind="stable")
    starts = np.concatenate(([0], np.cumsum(page_lengths)[:-1]))
    new_lengths = page_lengths[order]
    new_starts = np.concatenate(([0], np.cumsum(new_lengths)[:-1]))
    gather = np.arange(int(page_lengths.sum()), dtype=np.int64) + np.repeat(starts[order] - new_starts, new_lengths)
    history = CrawlHistory.from_segments(
        np.concatenate(changed)[gather],
        np.concatenate(tau)[gather],
        lengths=new_lengths,
        crawl_rate=np.concatenate(rate)[order],
        page_ids=labels[page_codes[order]],
    )
    age = None if any(a is None for a in ages) else np.concatenate(ages)[gather]
    liar = None if any(a is None for a in liars) else np.concatenate(liars)[order]
    return CrawlLog(
        history=history,
        first_visit=np.concatenate(first)[order],
        last_visit=np.concatenate(last)[order],
        audit=audit,
        last_modified_age=age,
        last_modified_unreliable=liar,
        last_attempt=None if any(a is None for a in attempts) else np.concatenate(attempts)[order],
    )
