"""Real change histories of many pages, checked and laid out for the replay engine."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..io import plain, time_kinds

__all__ = ["ReplayPages", "pages_from_table", "MS_PER_DAY"]

#: Milliseconds per day: the engine keeps every time as int64 milliseconds.
MS_PER_DAY = 86_400_000


@dataclass(frozen=True)
class ReplayPages:
    """Change times and observation windows of N pages (times in int64 ms).

    Attributes
    ----------
    names : tuple of str, length N
    start_ms, end_ms : ndarray of int64, shape (N,)
        Window of each page: the copy is taken (fresh) at ``start``, and the replay
        scores it until ``end``; end > start.
    change_ms : ndarray of int64, shape (M,)
        Change times in (start, end] of each page, sorted by page then time.
    offsets : ndarray of int64, shape (N + 1,)
        Page i's changes are ``change_ms[offsets[i]:offsets[i + 1]]``.
    weights : ndarray of float, shape (N,)
        w_i >= 0, not all 0 (default 1).
    origin : pandas.Timestamp or None
        The time that ``0 ms`` stands for when the table held datetimes (None for
        numeric times, which are days).
    """

    names: tuple
    start_ms: np.ndarray
    end_ms: np.ndarray
    change_ms: np.ndarray
    offsets: np.ndarray
    weights: np.ndarray
    origin: object = None

    @property
    def n_pages(self) -> int:
        return len(self.names)

    @property
    def n_changes(self) -> np.ndarray:
        """Changes of each page inside its window, shape (N,)."""
        return np.diff(self.offsets)

    @property
    def window_days(self) -> np.ndarray:
        """Window length of each page in days, shape (N,)."""
        return (self.end_ms - self.start_ms) / MS_PER_DAY

    @property
    def true_rates(self) -> np.ndarray:
        """Hindsight change rate of each page, n_i / T_i per day, shape (N,)."""
        return self.n_changes / self.window_days

    @property
    def span_days(self) -> float:
        """Days from the earliest window start to the latest window end."""
        return float(self.end_ms.max() - self.start_ms.min()) / MS_PER_DAY

    def total_change_rate(self) -> float:
        """All changes in the windows per day of the whole span (crawls/day to match one crawl per change)."""
        return float(self.n_changes.sum()) / self.span_days

    def subset(self, index) -> ReplayPages:
        """The pages at positions ``index`` (int array), in that order."""
        index = np.asarray(index, dtype=np.int64)
        counts = self.n_changes[index]
        offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        starts = self.offsets[index]
        flat = np.repeat(starts - offsets[:-1], counts) + np.arange(offsets[-1])
        return ReplayPages(
            tuple(self.names[i] for i in index),
            self.start_ms[index],
            self.end_ms[index],
            self.change_ms[flat],
            offsets,
            self.weights[index],
            self.origin,
        )

    def tile(self, copies: int) -> ReplayPages:
        """``copies`` independent copies of every page, copy-major (copy c holds pages c·N .. c·N + N - 1)."""
        index = np.tile(np.arange(self.n_pages), copies)
        out = self.subset(index)
        names = tuple(f"{n}#{c}" for c in range(copies) for n in self.names)
        return ReplayPages(names, out.start_ms, out.end_ms, out.change_ms, out.offsets, out.weights, self.origin)


def _check_page_times(table, name: str) -> None:
    """Raise unless ``table`` (the argument ``name``) is a DataFrame with columns page and timestamp."""
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"`{name}` must be a pandas DataFrame with columns page, timestamp; got {type(table).__name__}")
    missing = [c for c in ("page", "timestamp") if c not in table.columns]
    if missing:
        raise ValueError(f"`{name}` lacks column(s) {missing}; it has {list(table.columns)}")


def _parse_times(values, *, what: str, labels, datetimes: bool):
    """int64 ms (and the origin-free values) from a column; errors name the row."""
    if datetimes:
        numeric = [
            i
            for i, v in enumerate(values)
            if isinstance(v, (numbers.Real, np.number)) and not isinstance(v, (bool, np.bool_)) and v == v
        ]
        if numeric:  # pandas would read a number as nanoseconds after 1970 and carry on
            i = numeric[0]
            raise ValueError(
                f"{what} of {labels[i]} is a number ({plain(values[i])!r}), but the times are datetimes: "
                "give a datetime or an ISO-8601 string, or give every time as days (numbers)"
            )
        parsed = pd.to_datetime(pd.Series(values), utc=True, errors="coerce", format="mixed")
        bad = parsed.isna().to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"{what} of {labels[i]} is not a parsable time: {plain(values[i])!r}")
        epoch = pd.Timestamp(0, tz="UTC")
        return ((parsed - epoch) // pd.Timedelta(milliseconds=1)).to_numpy(dtype=np.int64)
    arr = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{what} of {labels[i]} is not a finite number (days): {plain(values[i])!r}")
    return np.rint(arr * MS_PER_DAY).astype(np.int64)


def _check_awareness(columns) -> None:
    """Refuse naive and time-zone-aware times together across the change times and the windows.

    ``columns`` is a list of (values, places): the place of each value for the message.
    A date alone names a day whatever the zone and goes with either kind.
    """
    first = None  # (kind, place, value) of the first time with a time of day
    for values, places in columns:
        kinds = time_kinds(values)
        timed = np.flatnonzero(kinds >= 0)
        if timed.size == 0:
            continue
        if first is None:
            i = int(timed[0])
            first = (int(kinds[i]), places[i], values[i])
        other = np.flatnonzero(kinds == 1 - first[0])
        if other.size:
            i = int(other[0])
            name = {1: "time-zone-aware", 0: "naive"}
            raise ValueError(
                f"{places[i]}: naive and time-zone-aware times are mixed ({first[1]} is {name[first[0]]}: "
                f"{str(first[2])!r}, this one {name[int(kinds[i])]}: {str(values[i])!r}); their order and gaps "
                "are ambiguous: give every time a UTC offset, or none"
            )


def _is_datetime_like(values) -> bool:
    s = pd.Series(values)
    if pd.api.types.is_datetime64_any_dtype(s):
        return True
    if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        return False
    return True  # strings: parsed as datetimes


def pages_from_table(changes, *, window=None, weights=None) -> ReplayPages:
    """Check a table of page change times and lay it out for the replay.

    Parameters
    ----------
    changes : pandas.DataFrame
        Columns ``page`` and ``timestamp`` (one row per change), and, when
        ``window`` is None, ``start`` and ``end`` (each page's window, the same on all
        of its rows). Timestamps are datetimes or ISO-8601 strings (UTC assumed when
        naive) or plain numbers in days; within a page they must be in time order.
        Naive and time-zone-aware times (with a time of day) are not mixed across the
        change times and the windows; a date alone goes with either.
    window : pandas.DataFrame, tuple (start, end) or None
        A table with columns ``page``, ``start``, ``end`` (one row per page; pages
        without a change row are valid: they never change), a single ``(start, end)``
        for every page of ``changes`` (changes outside it are then left out: the tuple
        selects a period), or None (the windows are columns of ``changes``).
    weights : mapping or pandas.Series from page to w >= 0, optional
        Default 1 for every page.

    Returns
    -------
    ReplayPages

    Raises
    ------
    TypeError
        If ``changes`` or ``window`` is not a table of the stated kind.
    ValueError
        For a missing column, an unparsable or non-finite time (naming the row), naive
        and time-zone-aware times mixed (naming the row and column, or ``window``), change
        times out of order within a page (naming the row), a page with no window, a
        window with end <= start, a change outside its page's window (per-page
        windows), a repeated page in the window table, or bad weights.
    """
    _check_page_times(changes, "changes")
    labels = list(changes.index)
    ts = changes["timestamp"].to_numpy()
    datetimes = _is_datetime_like(changes["timestamp"]) if len(changes) else None
    page = changes["page"].astype(str).to_numpy()

    if window is None:
        miss = [c for c in ("start", "end") if c not in changes.columns]
        if miss:
            raise ValueError(f"`window` is None, so `changes` needs columns start and end; it lacks {miss}")
        win = changes[["page", "start", "end"]].copy()
        win["page"] = page
        first = win.drop_duplicates("page")
        dup = win.merge(first, on="page", suffixes=("", "_first"))
        differs = (dup["start"].astype(str) != dup["start_first"].astype(str)) | (
            dup["end"].astype(str) != dup["end_first"].astype(str)
        )
        if differs.any():
            i = int(np.flatnonzero(differs.to_numpy())[0])
            raise ValueError(f"row {labels[i]!r}: page {page[i]!r} has a window different from its first row's")
        wrows = [f"row {x!r}, column {{col!r}}" for x in first.index]
        win, per_page = first.reset_index(drop=True), True
    elif isinstance(window, pd.DataFrame):
        miss = [c for c in ("page", "start", "end") if c not in window.columns]
        if miss:
            raise ValueError(f"`window` lacks column(s) {miss}; it has {list(window.columns)}")
        win = window[["page", "start", "end"]].copy()
        win["page"] = win["page"].astype(str)
        dup = win["page"].duplicated().to_numpy()
        if dup.any():
            raise ValueError(f"`window` lists page {win['page'].iloc[int(np.flatnonzero(dup)[0])]!r} more than once")
        wrows = [f"row {x!r} of `window`, column {{col!r}}" for x in win.index]
        win, per_page = win.reset_index(drop=True), True
    elif isinstance(window, tuple) and len(window) == 2:
        seen = list(dict.fromkeys(page))
        if not seen:
            raise ValueError("`changes` is empty: with a (start, end) window it must name the pages")
        win = pd.DataFrame({"page": seen, "start": [window[0]] * len(seen), "end": [window[1]] * len(seen)})
        wrows = ["`window` {col}"] * len(seen)
        per_page = False
    else:
        raise TypeError(
            f"`window` must be a DataFrame (page, start, end), a (start, end) tuple or None; got {window!r}"
        )
    if len(win) == 0:
        raise ValueError("no pages: `window` (or `changes`) lists no page")

    wlabels = [f"the window of page {p!r}" for p in win["page"]]
    if datetimes is None:
        datetimes = _is_datetime_like(win["start"])
    start = _parse_times(win["start"].to_numpy(), what="start", labels=wlabels, datetimes=datetimes)
    end = _parse_times(win["end"].to_numpy(), what="end", labels=wlabels, datetimes=datetimes)
    change = (
        _parse_times(ts, what="timestamp", labels=[f"row {x!r}" for x in labels], datetimes=datetimes)
        if len(changes)
        else np.zeros(0, np.int64)
    )
    if datetimes:
        _check_awareness(
            [
                (ts, [f"row {x!r}, column 'timestamp'" for x in labels]),
                (win["start"].to_numpy(), [w.format(col="start") for w in wrows]),
                (win["end"].to_numpy(), [w.format(col="end") for w in wrows]),
            ]
        )
    bad = end <= start
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"page {win['page'].iloc[i]!r} has an empty window: end {plain(win['end'].iloc[i])!r} "
            f"is not after start {plain(win['start'].iloc[i])!r}"
        )
    names = tuple(win["page"])
    pos = {n: i for i, n in enumerate(names)}

    pidx = np.array([pos.get(p, -1) for p in page], dtype=np.int64)
    if (pidx < 0).any():
        i = int(np.flatnonzero(pidx < 0)[0])
        raise ValueError(f"row {labels[i]!r}: page {page[i]!r} has no window (add it to `window`)")
    # time order within each page, in the table's order
    order = np.argsort(pidx, kind="stable")
    ps, cs = pidx[order], change[order]
    back = (ps[1:] == ps[:-1]) & (cs[1:] < cs[:-1])
    if back.any():
        j = int(np.flatnonzero(back)[0]) + 1
        i = int(order[j])
        raise ValueError(
            f"row {labels[i]!r}: timestamp {plain(ts[i])!r} of page {page[i]!r} is earlier than the page's "
            "previous change: change times must be sorted within each page"
        )
    lo, hi = start[ps], end[ps]
    outside = (cs < lo) | (cs > hi)
    if per_page and outside.any():
        i = int(order[int(np.flatnonzero(outside)[0])])
        raise ValueError(
            f"row {labels[i]!r}: timestamp {plain(ts[i])!r} of page {page[i]!r} lies outside its window "
            f"[{plain(win['start'].iloc[pidx[i]])!r}, {plain(win['end'].iloc[pidx[i]])!r}]"
        )
    keep = (cs > lo) & (cs <= hi)  # a change at the start is in the initial copy
    ps, cs = ps[keep], cs[keep]
    counts = np.bincount(ps, minlength=len(names))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)

    w = _weights(weights, names)
    origin = pd.Timestamp(0, unit="ms", tz="UTC") if datetimes else None
    return ReplayPages(names, start, end, cs.astype(np.int64), offsets, w, origin)


def _weights(weights, names) -> np.ndarray:
    if weights is None:
        return np.ones(len(names))
    if isinstance(weights, dict):
        weights = pd.Series(weights)
    if not isinstance(weights, pd.Series):
        raise TypeError(f"`weights` must be a dict or pandas Series from page to weight; got {type(weights).__name__}")
    weights = weights.copy()
    weights.index = weights.index.astype(str)
    missing = [n for n in names if n not in weights.index]
    if missing:
        raise ValueError(f"`weights` has no weight for page {missing[0]!r} ({len(missing)} pages missing)")
    w = weights.reindex(list(names)).to_numpy()
    if w.dtype == bool or not all(isinstance(x, numbers.Real) for x in w):
        raise TypeError("`weights` must be real numbers")
    w = w.astype(np.float64)
    bad = ~(np.isfinite(w) & (w >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"`weights` must be finite and >= 0; got {w[i]} for page {names[i]!r}")
    if w.sum() <= 0:
        raise ValueError("`weights` must not all be 0")
    return w
