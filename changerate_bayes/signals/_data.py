"""Per-page crawl intervals with their signal counts, and their construction from tables."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SignalData", "signal_data"]

_DAY_NS = 86_400e9


def _int_array(x, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind == "b":
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"`{name}` must hold integers; got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and (~np.isfinite(arr) | (arr != np.round(arr))).any():
        raise ValueError(f"`{name}` must hold whole numbers; got {arr[~np.isfinite(arr) | (arr != np.round(arr))][0]}")
    return arr.astype(np.int64)


def _check_intervals(tau: np.ndarray, ch: np.ndarray, n: np.ndarray) -> None:
    """ValueError naming the field for an interval not > 0 and finite, a change flag not 0/1,
    or a negative signal count."""
    bad = ~(np.isfinite(tau) & (tau > 0))
    if bad.any():
        raise ValueError(f"`intervals` must be > 0 and finite days; got {tau[bad][0]}")
    if ((ch != 0) & (ch != 1)).any():
        raise ValueError(f"`changed` must hold 0 or 1; got {ch[(ch != 0) & (ch != 1)][0]}")
    if (n < 0).any():
        raise ValueError(f"`signals` must be >= 0; got {n[n < 0][0]}")


@dataclass(frozen=True)
class SignalData:
    """Crawl intervals, change indicators and signal counts of many pages (ragged).

    Use :meth:`from_segments` or :func:`signal_data` rather than the constructor; the
    constructor checks its fields all the same (TypeError, ValueError).

    Attributes
    ----------
    intervals : ndarray of float64, shape (K,)
        τ_k > 0, days, every page's intervals one page after the other.
    changed : ndarray of int8, shape (K,)
        I_k: 1 if the crawl ending interval k saw a change.
    signals : ndarray of int64, shape (K,)
        n_k >= 0: signals in interval k (a signal at a crawl's time belongs to the
        interval that this crawl ends).
    offsets : ndarray of int64, shape (n_pages + 1,)
        Page i's intervals are ``offsets[i]:offsets[i + 1]``.
    tail_time : ndarray of float64, shape (n_pages,)
        Days from each page's last crawl to the end of observation (>= 0).
    tail_signals : ndarray of int64, shape (n_pages,)
        Signals in that time.
    page_ids : ndarray or None
        The pages' identifiers, shape (n_pages,).
    """

    intervals: np.ndarray
    changed: np.ndarray
    signals: np.ndarray
    offsets: np.ndarray
    tail_time: np.ndarray
    tail_signals: np.ndarray
    page_ids: np.ndarray | None = None

    def __post_init__(self):
        """Check the fields (any constructor), and store them as arrays of their dtypes.

        Raises
        ------
        TypeError
            If counts or indicators are not numbers.
        ValueError
            If a field's shape, sign or value is not as described in the class docstring.
        """
        tau = np.asarray(self.intervals, dtype=np.float64)
        ch = _int_array(self.changed, "changed")
        n = _int_array(self.signals, "signals")
        offsets = _int_array(self.offsets, "offsets")
        if tau.ndim != 1 or ch.shape != tau.shape or n.shape != tau.shape:
            raise ValueError(
                f"`intervals`, `changed` and `signals` must be 1-D of one length; got shapes "
                f"{tau.shape}, {ch.shape}, {n.shape}"
            )
        if (
            offsets.ndim != 1
            or offsets.size < 1
            or offsets[0] != 0
            or offsets[-1] != tau.size
            or (np.diff(offsets) < 0).any()
        ):
            raise ValueError(
                f"`offsets` must be non-decreasing from 0 to {tau.size} (the number of intervals), "
                f"of shape (n_pages + 1,); got {offsets}"
            )
        _check_intervals(tau, ch, n)
        n_pages = offsets.size - 1
        tail = np.asarray(self.tail_time, dtype=np.float64)
        m = _int_array(self.tail_signals, "tail_signals")
        if tail.shape != (n_pages,) or m.shape != (n_pages,):
            raise ValueError(
                f"`tail_time` and `tail_signals` must have shape ({n_pages},) (one per page); "
                f"got {tail.shape}, {m.shape}"
            )
        if (~(np.isfinite(tail) & (tail >= 0))).any():
            raise ValueError("`tail_time` must be >= 0 and finite days")
        if (m < 0).any() or ((tail == 0) & (m > 0)).any():
            raise ValueError("`tail_signals` must be >= 0, and 0 where `tail_time` is 0")
        ids = None if self.page_ids is None else np.asarray(self.page_ids)
        if ids is not None and ids.shape != (n_pages,):
            raise ValueError(f"`page_ids` must have shape ({n_pages},); got {ids.shape}")
        for name, value in (
            ("intervals", tau),
            ("changed", ch.astype(np.int8)),
            ("signals", n),
            ("offsets", offsets),
            ("tail_time", tail),
            ("tail_signals", m),
            ("page_ids", ids),
        ):
            object.__setattr__(self, name, value)

    @classmethod
    def from_segments(
        cls, intervals, changed, signals, *, lengths, tail_time=0.0, tail_signals=0, page_ids=None
    ) -> SignalData:
        """Build from flat per-interval arrays and each page's number of intervals.

        Parameters
        ----------
        intervals : array_like of float, shape (K,)
            τ_k > 0 and finite, days.
        changed : array_like of {0, 1}, shape (K,)
            I_k.
        signals : array_like of int, shape (K,)
            n_k >= 0.
        lengths : array_like of int, shape (n_pages,)
            Intervals per page (>= 0), summing to K.
        tail_time : float or array_like of shape (n_pages,), default 0
            Days after each page's last crawl (>= 0, finite).
        tail_signals : int or array_like of shape (n_pages,), default 0
            Signals in that time (>= 0; 0 where ``tail_time`` is 0).
        page_ids : array_like of shape (n_pages,), optional

        Returns
        -------
        SignalData

        Raises
        ------
        TypeError
            If counts or indicators are not numbers.
        ValueError
            If a shape, a sign or a value is not as described.

        Examples
        --------
        >>> from changerate_bayes.signals import SignalData
        >>> d = SignalData.from_segments([1.0, 1.0, 2.0], [1, 0, 1], [3, 0, 1], lengths=[2, 1])
        >>> d.n_pages, d.offsets.tolist()
        (2, [0, 2, 3])
        """
        tau = np.asarray(intervals, dtype=np.float64)
        ch = _int_array(changed, "changed")
        n = _int_array(signals, "signals")
        lengths = _int_array(lengths, "lengths")
        if tau.ndim != 1 or ch.shape != tau.shape or n.shape != tau.shape:
            raise ValueError(
                f"`intervals`, `changed` and `signals` must be 1-D of one length; got shapes "
                f"{tau.shape}, {ch.shape}, {n.shape}"
            )
        if lengths.ndim != 1 or (lengths < 0).any() or int(lengths.sum()) != tau.size:
            raise ValueError(f"`lengths` must be >= 0 per page and sum to {tau.size} intervals; got {lengths}")
        _check_intervals(tau, ch, n)
        n_pages = lengths.size
        try:
            tail = np.broadcast_to(np.asarray(tail_time, dtype=np.float64), (n_pages,)).copy()
            m = np.broadcast_to(_int_array(tail_signals, "tail_signals"), (n_pages,)).copy()
        except ValueError as err:
            if "broadcast" not in str(err):
                raise
            raise ValueError(f"`tail_time` and `tail_signals` must be scalars or of shape ({n_pages},)") from None
        if (~(np.isfinite(tail) & (tail >= 0))).any():
            raise ValueError("`tail_time` must be >= 0 and finite days")
        if (m < 0).any() or ((tail == 0) & (m > 0)).any():
            raise ValueError("`tail_signals` must be >= 0, and 0 where `tail_time` is 0")
        ids = None if page_ids is None else np.asarray(page_ids)
        if ids is not None and ids.shape != (n_pages,):
            raise ValueError(f"`page_ids` must have shape ({n_pages},); got {ids.shape}")
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        return cls(tau, ch.astype(np.int8), n, offsets, tail, m, ids)

    @property
    def n_pages(self) -> int:
        """Number of pages."""
        return int(self.offsets.size - 1)

    @property
    def lengths(self) -> np.ndarray:
        """Intervals per page, shape (n_pages,)."""
        return np.diff(self.offsets)

    def page_index(self) -> np.ndarray:
        """The page of each interval, shape (K,)."""
        return np.repeat(np.arange(self.n_pages), self.lengths)

    def totals(self) -> dict[str, np.ndarray]:
        """Per-page sums, each of shape (n_pages,).

        Returns
        -------
        dict
            ``crawled_time`` (Σ_k τ_k, days), ``time`` (crawled plus tail time, days),
            ``signals`` (all signals, tail included), ``changes_seen`` (Σ_k I_k).
        """
        page, n = self.page_index(), self.n_pages
        crawled = np.bincount(page, weights=self.intervals, minlength=n)
        return {
            "crawled_time": crawled,
            "time": crawled + self.tail_time,
            "signals": np.bincount(page, weights=self.signals, minlength=n) + self.tail_signals,
            "changes_seen": np.bincount(page, weights=self.changed, minlength=n),
        }


def _days(values, column: str, table: str) -> np.ndarray:
    """Times in days: datetimes (days since the epoch) or numbers (days)."""
    import pandas as pd  # pandas: loaded on first use

    s = pd.Series(values)
    if pd.api.types.is_datetime64_any_dtype(s.dtype):
        if getattr(s.dt, "tz", None) is not None:
            s = s.dt.tz_convert("UTC").dt.tz_localize(None)
        if s.isna().any():
            raise ValueError(f"{table} column {column!r} has a missing time at row {int(np.flatnonzero(s.isna())[0])}")
        return s.astype("datetime64[ns]").to_numpy().astype(np.int64) / _DAY_NS
    if not pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        raise TypeError(f"{table} column {column!r} must hold datetimes or numbers of days; got dtype {s.dtype}")
    arr = s.to_numpy(dtype=np.float64)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(
            f"{table} column {column!r} has a missing or infinite time at row {int(np.flatnonzero(bad)[0])}"
        )
    return arr


def _columns(table, names, which: str):
    import pandas as pd  # pandas: loaded on first use

    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"`{which}` must be a pandas DataFrame; got {type(table).__name__}")
    missing = [c for c in names if c not in table.columns]
    if missing:
        raise ValueError(f"`{which}` has no column {missing[0]!r}; it has {list(table.columns)}")


def signal_data(visits, signals, *, end=None, page="page", time="timestamp", changed="changed"):
    """Count the signals in each crawl interval of each page.

    Parameters
    ----------
    visits : pandas.DataFrame
        One row per crawl: columns ``page``, ``time`` (datetimes, or numbers of days) and
        ``changed`` (0/1 or bool: did this crawl see a change since the page's previous
        one; ignored on a page's first crawl). Any order.
    signals : pandas.DataFrame
        One row per change-indicating signal: columns ``page`` and ``time``. Any order.
    end : datetime-like or float, optional
        End of observation (same kind as the times); default the latest time in either
        table. Signals after it are dropped and counted.
    page, time, changed : str, default "page", "timestamp", "changed"
        Column names.

    Returns
    -------
    data : SignalData
        Pages in order of first appearance in ``visits``; interval k of a page is
        (t_{k−1}, t_k] between consecutive crawls, so a signal at a crawl's time counts in
        the interval that the crawl ends; the tail is (last crawl, ``end``].
    audit : dict of int
        ``pages``, ``visits``, ``signals`` (rows read), ``signals_used``,
        ``unknown_page`` (signals of pages never crawled), ``before_first_visit``
        (signals at or before a page's first crawl), ``after_end`` and ``duplicates``
        (repeated (page, time) signal rows, kept once). The dropped and the used add up
        to ``signals``.

    Raises
    ------
    TypeError
        If a table is not a DataFrame or a column has the wrong type.
    ValueError
        If a column is missing, a time is missing or infinite, ``changed`` holds other
        values than 0 and 1, a page has two crawls at one time, or ``end`` is before a
        crawl.

    Notes
    -----
    Vectorised: the crawls and signals are sorted together by (page, time, signal before
    crawl), and each signal's interval is the number of the page's crawls before it.

    Examples
    --------
    >>> import pandas as pd
    >>> from changerate_bayes.signals import signal_data
    >>> visits = pd.DataFrame({"page": ["a", "a", "a"], "timestamp": [0.0, 1.0, 2.0], "changed": [0, 1, 0]})
    >>> sig = pd.DataFrame({"page": ["a", "a", "a", "b"], "timestamp": [0.5, 0.5, 1.0, 1.0]})
    >>> d, audit = signal_data(visits, sig, end=3.0)
    >>> d.signals.tolist(), d.changed.tolist(), d.tail_time.tolist()
    ([2, 0], [1, 0], [1.0])
    >>> audit["duplicates"], audit["unknown_page"], audit["signals_used"]
    (1, 1, 2)
    """
    import pandas as pd  # pandas: loaded on first use

    _columns(visits, [page, time, changed], "visits")
    _columns(signals, [page, time], "signals")
    vt = _days(visits[time], time, "visits")
    st = _days(signals[time], time, "signals")
    ch = visits[changed]
    if pd.api.types.is_bool_dtype(ch.dtype):
        ch_arr = ch.to_numpy().astype(np.int8)
    else:
        if not pd.api.types.is_numeric_dtype(ch.dtype):
            raise TypeError(f"visits column {changed!r} must hold 0/1 or booleans; got dtype {ch.dtype}")
        raw = ch.to_numpy(dtype=np.float64)
        bad = ~((raw == 0) | (raw == 1))
        if bad.any():
            raise ValueError(
                f"visits column {changed!r} must hold 0 or 1; got {raw[bad][0]} at row {int(np.flatnonzero(bad)[0])}"
            )
        ch_arr = raw.astype(np.int8)
    codes, ids = pd.factorize(visits[page], sort=False)
    if (codes < 0).any():
        raise ValueError(f"visits column {page!r} has a missing page at row {int(np.flatnonzero(codes < 0)[0])}")
    n_pages = ids.size
    scodes = pd.Index(ids).get_indexer(signals[page])
    if end is None:
        end_day = max(vt.max(initial=-np.inf), st.max(initial=-np.inf))
    else:
        end_day = float(_days(pd.Series([end]), "end", "`end`")[0])
    audit = {"pages": int(n_pages), "visits": int(vt.size), "signals": int(st.size)}
    # crawls sorted by (page, time)
    order = np.lexsort((vt, codes))
    vp, vtime, vch = codes[order], vt[order], ch_arr[order]
    same = (vp[1:] == vp[:-1]) & (vtime[1:] == vtime[:-1])
    if same.any():
        raise ValueError(f"visits: page {ids[vp[1:][same][0]]!r} has two crawls at time {vtime[1:][same][0]}")
    if vt.size and end_day < vtime.max():
        raise ValueError(f"`end` ({end_day} days) is before the last crawl ({vtime.max()} days)")
    visits_per_page = np.bincount(vp, minlength=n_pages)
    first = np.concatenate([[0], np.cumsum(visits_per_page)])[:-1]
    # signals: known pages, deduplicated on (page, time), up to end
    known = scodes >= 0
    audit["unknown_page"] = int((~known).sum())
    sp, stime = scodes[known], st[known]
    sorder = np.lexsort((stime, sp))
    sp, stime = sp[sorder], stime[sorder]
    dup = np.zeros(sp.size, dtype=bool)
    dup[1:] = (sp[1:] == sp[:-1]) & (stime[1:] == stime[:-1])
    audit["duplicates"] = int(dup.sum())
    sp, stime = sp[~dup], stime[~dup]
    late = stime > end_day
    audit["after_end"] = int(late.sum())
    sp, stime = sp[~late], stime[~late]
    # crawls of the signal's page strictly before it: sort crawls and signals together,
    # a signal before a crawl at the same time (kind 0 < 1)
    kind = np.concatenate([np.ones(vp.size, np.int8), np.zeros(sp.size, np.int8)])
    allp = np.concatenate([vp, sp])
    allt = np.concatenate([vtime, stime])
    joint = np.lexsort((kind, allt, allp))
    is_visit = kind[joint] == 1
    visits_before = np.cumsum(is_visit) - is_visit  # crawls of any page before, in sorted order
    page_sorted = allp[joint]
    before = visits_before[~is_visit] - first[page_sorted[~is_visit]]  # crawls of its own page before it
    sig_page = page_sorted[~is_visit]
    early = before == 0
    audit["before_first_visit"] = int(early.sum())
    audit["signals_used"] = int((~early).sum())
    lengths = np.maximum(visits_per_page - 1, 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    in_tail = before == visits_per_page[sig_page]
    inside = ~early & ~in_tail
    flat = offsets[sig_page[inside]] + before[inside] - 1
    counts = np.bincount(flat, minlength=int(offsets[-1]))
    tail_signals = np.bincount(sig_page[in_tail & ~early], minlength=n_pages)
    # intervals: consecutive crawls of one page
    cont = vp[1:] == vp[:-1]
    tau = (vtime[1:] - vtime[:-1])[cont]
    chg = vch[1:][cont]
    last = vtime[first + visits_per_page - 1]
    data = SignalData.from_segments(
        tau,
        chg,
        counts,
        lengths=lengths,
        tail_time=end_day - last,
        tail_signals=tail_signals,
        page_ids=np.asarray(ids, dtype=object),
    )
    return data, audit
