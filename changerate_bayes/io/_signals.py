"""Change-indicating signals beside a crawl log: a signals file, or the signal rows of a log, and their audit.

A signal (a sitemap's ``lastmod``, a feed entry, a ping) says a page may have changed
at a time; it is not a visit. Signals come either as a file of their own, one row per
signal with the columns ``page``, ``signal_time`` and optionally ``source`` (CSV,
optionally compressed, or Parquet), read by :func:`read_signals`; or as rows of the crawl
log itself whose ``signal`` column is 1 (:func:`log_signal_rows`; the readers skip these
rows as visits, so that the log's visits and audit are those of the log without them).

Bad values (a missing page, an unparsable or missing time, a ``signal`` value that is not
0/1) raise :class:`CrawlLogError` naming the file, line (or row) and column. What the
signals say about the log is checked once the log is read
(:func:`changerate_bayes.crawllog.log_signals`) and counted in a :class:`SignalAudit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from ._audit import _DropCounts
from ._compressed import DECOMPRESSION_ERRORS, decompression_error
from ._errors import CrawlLogError
from ._signal_values import signal_flags, signal_frame

__all__ = ["SIGNAL_DROP_REASONS", "SignalAudit", "read_signals", "log_signal_rows"]

#: Why a signal is not used, in the order the checks are applied.
SIGNAL_DROP_REASONS: tuple[str, ...] = (
    "unknown_page",  # the page has no row in the table: not in the log, or without two usable visits
    "duplicate",  # same page, same time as a signal kept before it
    "before_first_visit",  # at or before the page's first usable visit (the reference copy)
    "after_end",  # after the log's end, its latest usable visit (a time in the future of the log)
)


@dataclass(frozen=True)
class SignalAudit(_DropCounts):
    """What was done with every signal read: ``signals_read == signals_kept + sum(dropped)``.

    Attributes
    ----------
    sources : tuple of str
        The signals file(s), or the log files whose ``signal`` rows were read.
    signals_read : int
        Signal rows read.
    signals_kept : int
        Signals used: each on a page of the table, after its first visit, at or before
        the log's end, counted once.
    dropped : tuple of (str, int)
        Signals not used, by reason (:data:`SIGNAL_DROP_REASONS`, in that order; every
        reason listed, zeros included).
    after_last_visit : int
        Of the kept signals, those after their page's last usable visit (they count
        towards the signals since the last crawl in a schedule).
    pages_with_signals : int
        Pages of the table with at least one kept signal.
    log_end : str
        The log's end, ISO 8601 UTC: its latest usable visit; a signal after it is dropped
        (``after_end``).
    """

    sources: tuple
    signals_read: int
    signals_kept: int
    dropped: tuple
    after_last_visit: int
    pages_with_signals: int
    log_end: str

    _reasons: ClassVar[tuple[str, ...]] = SIGNAL_DROP_REASONS

    def format(self) -> str:
        """Two lines of plain text, as the ``estimate`` and ``schedule`` commands print them.

        Examples
        --------
        >>> a = SignalAudit(("s.csv",), 5, 3, (("unknown_page", 1), ("duplicate", 1), ("before_first_visit", 0),
        ...                 ("after_end", 0)), 1, 2, "2024-01-02T00:00:00Z")
        >>> print(a.format())
        signals: read 5 from 1 file(s), kept 3 on 2 pages (1 after the page's last visit; log end 2024-01-02T00:00:00Z)
        signals dropped: 2: unknown_page 1, duplicate 1
        """
        return "\n".join(
            [
                f"signals: read {self.signals_read} from {len(self.sources)} file(s), kept {self.signals_kept} on "
                f"{self.pages_with_signals} pages ({self.after_last_visit} after the page's last visit; "
                f"log end {self.log_end})",
                f"signals dropped: {self.dropped_total}"
                + (": " + ", ".join(f"{r} {n}" for r, n in self.dropped if n) if self.dropped_total else ""),
            ]
        )


def _is_parquet(path) -> bool:
    from ._formats import detect_format

    return detect_format(path) == "parquet"


def read_signals(paths, *, sep: str = ",") -> pd.DataFrame:
    """Read signals files: one row per signal, columns ``page``, ``signal_time`` and optionally ``source``.

    Parameters
    ----------
    paths : path or list of paths
        CSV files (optionally compressed: .gz, .bz2, .xz, .zst) or Parquet files, read as
        one. ``signal_time`` as the log's ``fetch_time`` (ISO 8601, with or without a
        UTC offset, naive taken as UTC; or seconds since 1970-01-01 UTC; or a Parquet
        timestamp). ``source`` (what sent the signal: a sitemap, a feed) is kept as text.
    sep : str, default ","
        The CSV field separator.

    Returns
    -------
    pandas.DataFrame
        Columns ``page`` (object), ``signal_time`` (datetime64[ns, UTC]), ``source``
        (object; "" where not given) and ``line`` (the row's line, or row for Parquet,
        in its file), in file order; ``attrs["sources"]`` the files.

    Raises
    ------
    CrawlLogError (a ValueError)
        Naming the file, line and column: a missing column ``page`` or ``signal_time``, a
        missing page, a missing or unparsable time, a row with fields too many or too
        few; or a path that is not a regular file.

    Examples
    --------
    >>> import os, tempfile
    >>> from changerate_bayes.io import read_signals
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "signals.csv")
    ...     _ = open(path, "w").write("page,signal_time,source\\na,2024-01-01T03:00Z,sitemap\\n")
    ...     s = read_signals(path)
    >>> s["signal_time"].dt.strftime("%H:%M").tolist(), s["source"].tolist()
    (['03:00'], ['sitemap'])
    """
    from ._fields import check_field_counts
    from ._tabular import _as_paths

    files = _as_paths(paths)
    parts = []
    state: dict = {}
    for path in files:
        src = str(path)
        if _is_parquet(path):
            import pyarrow.parquet as pq

            try:
                frame = pq.read_table(path).to_pandas()
            except Exception as exc:  # pyarrow raises several kinds for a file it cannot read
                raise CrawlLogError(f"{src}: not a readable Parquet file ({exc})") from None
            first, word = 1, "row"
        else:
            check_field_counts(path, src=src, sep=sep)
            try:
                frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False)
            except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
                raise CrawlLogError(f"{src}: line 1: not a readable CSV file ({exc})") from None
            first, word = 2, "line"
        for col in ("page", "signal_time"):
            if col not in frame.columns:
                raise CrawlLogError(
                    f"{src}: line 1: missing required column {col!r}; the file has {list(frame.columns)} "
                    "(a signals file has the columns page, signal_time and optionally source)"
                )
        lines = np.arange(first, first + len(frame), dtype=np.int64)
        pages, ns = signal_frame(
            frame, source=src, page_col="page", time_col="signal_time", lines=lines, line_word=word, state=state
        )
        source = frame["source"].astype(str).to_numpy(dtype=object) if "source" in frame.columns else ""
        parts.append(pd.DataFrame({"page": pages, "signal_time": ns, "source": source, "line": lines, "file": src}))
    out = pd.concat(parts, ignore_index=True)
    out["signal_time"] = pd.to_datetime(out["signal_time"].to_numpy(dtype=np.int64), utc=True)
    out.attrs["sources"] = tuple(str(p) for p in files)
    return out


def log_signal_rows(files, fmt: str, *, columns=None) -> pd.DataFrame | None:
    """The signal rows (``signal`` 1) of CSV or Parquet log files, as :func:`read_signals` returns them.

    Parameters
    ----------
    files : list of paths
        The log's files.
    fmt : {"csv", "parquet"}
        Their format (other formats have no ``signal`` column: None).
    columns : dict, optional
        The log's column names (``page``, ``fetch_time``), as :func:`read_csv`.

    Returns
    -------
    pandas.DataFrame or None
        None when no file has a ``signal`` column; else the rows whose ``signal`` is 1,
        with the page and the ``fetch_time`` as ``signal_time`` (possibly none).

    Raises
    ------
    CrawlLogError
        Naming the file, line and column of a bad signal flag, page or time.
    """
    if fmt not in ("csv", "parquet"):
        return None
    mapping = columns or {}
    page_col, time_col = mapping.get("page", "page"), mapping.get("fetch_time", "fetch_time")
    parts, any_column, state = [], False, {}  # type: list, bool, dict
    for path in files:
        src = str(path)
        if fmt == "parquet":
            import pyarrow.parquet as pq

            pf = pq.ParquetFile(path)
            if "signal" not in pf.schema_arrow.names:
                continue
            frame = pf.read(columns=[page_col, time_col, "signal"]).to_pandas()
            first, word = 1, "row"
        else:
            try:  # a damaged compressed log is named as its reader names it
                header = list(pd.read_csv(path, nrows=0).columns)
            except DECOMPRESSION_ERRORS as exc:
                raise decompression_error(src, exc, path) from None
            except ValueError:  # empty, not text, not CSV: the log's reader names what is wrong
                continue
            if "signal" not in header:
                continue
            try:
                frame = pd.read_csv(path, usecols=[page_col, time_col, "signal"], dtype=str, keep_default_na=False)
            except DECOMPRESSION_ERRORS as exc:
                raise decompression_error(src, exc, path) from None
            except ValueError as exc:
                raise CrawlLogError(f"{src}: not a readable CSV file ({exc})") from None
            first, word = 2, "line"
        any_column = True
        lines = np.arange(first, first + len(frame), dtype=np.int64)
        flags = signal_flags(frame["signal"], source=src, column="signal", lines=lines, line_word=word)
        pages, ns = signal_frame(
            frame[flags],
            source=src,
            page_col=page_col,
            time_col=time_col,
            lines=lines[flags],
            line_word=word,
            state=state,
        )
        parts.append(pd.DataFrame({"page": pages, "signal_time": ns, "source": "", "line": lines[flags], "file": src}))
    if not any_column:
        return None
    out = pd.concat(parts, ignore_index=True)
    out["signal_time"] = pd.to_datetime(out["signal_time"].to_numpy(dtype=np.int64), utc=True)
    out.attrs["sources"] = tuple(str(p) for p in files)
    return out
