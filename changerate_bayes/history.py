"""The crawl history: what a crawler observes about a page."""

from __future__ import annotations

import numbers

import numpy as np

from ._validation import as_float_array, check_positive_scalar, first_bad_index

__all__ = ["CrawlHistory"]


def _as_array(x, *, name):
    try:
        return np.asarray(x)
    except ValueError:  # ragged nested sequences
        raise ValueError(f"`{name}` must be a rectangular array (rows of equal length)") from None


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


class CrawlHistory:
    """What a crawler saw on one page, or on many pages with the same number of crawls.

    At crawl k the crawler learns ``changed[k]`` = I_k (1 if the page changed at least
    once since the previous crawl, else 0) and ``intervals[k]`` = τ_k = t_k - t_{k-1}.

    Parameters
    ----------
    changed : array_like of {0, 1}, shape (k,) or (n_pages, k)
        Change indicators I_1, ..., I_k, in crawl order along the last axis.
    intervals : array_like of float, same shape as ``changed``, optional
        Crawl intervals τ_k > 0, in the time unit of the change rate (e.g. hours, so
        that rates are per hour). Needed by the MLE, MM and exact-likelihood methods.
    crawl_rate : float or array_like of shape (n_pages,), optional
        The crawl rate p > 0 (crawls per unit time), known to the crawler. Needed by
        the Naive, LLN, SA and SAM estimators (paper eq. 1-3).

    Attributes
    ----------
    changed : ndarray of int8
    intervals : ndarray of float64 or None
    crawl_rate : float, ndarray of float64 or None
    n_crawls : int
        k, the length of the last axis.
    n_pages : int or None
        None for a single page (1-D input).

    Raises
    ------
    ValueError
        If ``changed`` holds values other than 0/1, is empty or has more than two
        dimensions; if ``intervals`` is not > 0 and finite or its shape differs; if
        ``crawl_rate`` is not > 0 and finite or its shape does not match the pages.
    TypeError
        If an argument is not numeric.

    Examples
    --------
    >>> from changerate_bayes import CrawlHistory
    >>> h = CrawlHistory([1, 0, 1], intervals=[0.5, 0.2, 1.0], crawl_rate=2.0)
    >>> h.n_crawls, h.n_pages
    (3, None)
    """

    def __init__(self, changed, intervals=None, crawl_rate=None):
        arr = _as_array(changed, name="changed")
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"`changed` must hold 0/1 numbers or booleans; got dtype {arr.dtype}")
        if arr.ndim not in (1, 2):
            raise ValueError(f"`changed` must have shape (k,) or (n_pages, k); got shape {arr.shape}")
        if arr.shape[-1] == 0 or arr.size == 0:
            raise ValueError(f"`changed` must hold at least one crawl; got shape {arr.shape}")
        bad = (arr != 0) & (arr != 1)
        if bad.any():
            raise ValueError(
                f"`changed` must be 0 or 1; got {arr[bad].flat[0].item()!r} at index {first_bad_index(bad)}"
            )
        self._changed = _frozen(arr.astype(np.int8))  # astype copies: the caller's array is untouched
        if intervals is None:
            self._intervals = None
        else:
            tau = as_float_array(intervals, name="intervals", positive=True)
            if tau.shape != arr.shape:
                raise ValueError(
                    f"`intervals` must have the same shape as `changed` {arr.shape}; got {tau.shape}"
                )
            self._intervals = _frozen(tau.copy())
        self._crawl_rate = self._check_crawl_rate(crawl_rate, arr.shape)

    @staticmethod
    def _check_crawl_rate(crawl_rate, shape):
        if crawl_rate is None:
            return None
        if isinstance(crawl_rate, numbers.Real) and not isinstance(crawl_rate, bool):
            return check_positive_scalar(crawl_rate, name="crawl_rate")
        p = as_float_array(crawl_rate, name="crawl_rate", positive=True, ndim=(0, 1))
        if p.ndim == 0:
            return float(p)
        if len(shape) == 1:
            raise ValueError(
                f"`crawl_rate` must be a scalar for a one-page history (`changed` of shape {shape}); "
                f"got an array of shape {p.shape}"
            )
        if p.shape != (shape[0],):
            raise ValueError(
                f"`crawl_rate` must be a scalar or have shape (n_pages,) = ({shape[0]},); got {p.shape}"
            )
        return _frozen(p.copy())

    # ------------------------------------------------------------------ data
    @property
    def changed(self) -> np.ndarray:
        """Change indicators I_k, int8 of shape (k,) or (n_pages, k) (read-only)."""
        return self._changed

    @property
    def intervals(self) -> np.ndarray | None:
        """Crawl intervals τ_k > 0, float64 of the same shape, or None (read-only)."""
        return self._intervals

    @property
    def crawl_rate(self):
        """The crawl rate p: a float, a read-only (n_pages,) array, or None."""
        return self._crawl_rate

    # ------------------------------------------------------------------ properties
    @property
    def n_crawls(self) -> int:
        """Number of crawls k (length of the last axis)."""
        return int(self.changed.shape[-1])

    @property
    def n_pages(self) -> int | None:
        """Number of pages, or None for a single-page (1-D) history."""
        return int(self.changed.shape[0]) if self.changed.ndim == 2 else None

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of ``changed``: (k,) or (n_pages, k)."""
        return self.changed.shape

    def __len__(self) -> int:
        return self.n_crawls

    def __repr__(self) -> str:
        p = self.crawl_rate
        p_txt = "None" if p is None else (f"{p:g}" if np.ndim(p) == 0 else f"array{np.shape(p)}")
        return (
            f"CrawlHistory(shape={self.shape}, changes_seen={int(self.changed.sum())}, "
            f"intervals={'None' if self.intervals is None else 'given'}, crawl_rate={p_txt})"
        )

    # --------------------------------------------------------------- derived data
    def crawl_rate_column(self, *, method: str) -> np.ndarray:
        """Crawl rate broadcastable against ``changed`` (shape () or (n_pages, 1)).

        Raises
        ------
        ValueError
            If the history has no crawl rate.
        """
        if self.crawl_rate is None:
            raise ValueError(f"method {method!r} needs the crawl rate: pass `crawl_rate` to CrawlHistory")
        p = np.asarray(self.crawl_rate, dtype=np.float64)
        return p[:, None] if p.ndim == 1 else p

    def require_intervals(self, *, method: str) -> np.ndarray:
        """The crawl intervals, or a ValueError naming ``method`` if they are missing."""
        if self.intervals is None:
            raise ValueError(
                f"method {method!r} needs the crawl intervals τ: pass `intervals` to CrawlHistory"
            )
        return self.intervals

    def page(self, i: int) -> "CrawlHistory":
        """The 1-D history of page ``i`` of a multi-page history."""
        if self.n_pages is None:
            raise ValueError("`page` needs a multi-page history of shape (n_pages, k)")
        p = self.crawl_rate
        return CrawlHistory(
            self.changed[i],
            None if self.intervals is None else self.intervals[i],
            None if p is None else (p if np.ndim(p) == 0 else float(p[i])),
        )

    def head(self, k: int) -> "CrawlHistory":
        """The history of the first ``k`` crawls."""
        if not 1 <= k <= self.n_crawls:
            raise ValueError(f"`k` must be in [1, {self.n_crawls}]; got {k}")
        return CrawlHistory(
            self.changed[..., :k],
            None if self.intervals is None else self.intervals[..., :k],
            self.crawl_rate,
        )

    # -------------------------------------------------------------- constructors
    @classmethod
    def from_times(cls, change_times, crawl_times, *, start=None, crawl_rate=None) -> "CrawlHistory":
        """Build a single-page history from change times and crawl times.

        Crawl k reports I_k = 1 if at least one change time lies in (t_{k-1}, t_k],
        and τ_k = t_k - t_{k-1}, with t_0 = ``start`` (paper Section 2).

        Parameters
        ----------
        change_times : array_like, shape (m,)
            Times the page changed (sorted ascending; may be empty): floats in any
            unit, or datetimes (``datetime64``, ``datetime`` or ISO-8601 strings).
        crawl_times : array_like, shape (k,)
            Crawl times t_1 < t_2 < ... < t_k, all after ``start``; floats in the unit
            of ``change_times``, or datetimes when ``change_times`` are.
        start : float or datetime, optional
            t_0, the time of the reference copy (the start of observation). Default:
            0.0 for float times. With datetimes there is no natural time 0, so by
            default the *first crawl* fetches the reference copy: it becomes t_0 and
            the history starts at the second crawl.
        crawl_rate : float, optional
            The crawl rate p, stored on the history (per hour for datetimes).

        Returns
        -------
        CrawlHistory
            Shape (k,) (or (k - 1,) for datetimes without ``start``). With datetimes
            the intervals are in hours, so rates are per hour.

        Raises
        ------
        TypeError
            If floats and datetimes are mixed, or ``start`` is of the wrong kind.
        ValueError
            If times are not finite/parsable, ``change_times`` is not sorted,
            ``crawl_times`` is not strictly increasing or not all after ``start``.

        Examples
        --------
        >>> h = CrawlHistory.from_times([0.5, 0.7, 2.5], [1.0, 2.0, 3.0])
        >>> h.changed.tolist(), h.intervals.tolist()
        ([1, 0, 1], [1.0, 1.0, 1.0])
        >>> crawls = ["2024-01-01T00:00Z", "2024-01-01T06:00Z", "2024-01-01T12:00Z"]
        >>> h = CrawlHistory.from_times(["2024-01-01T03:00Z"], crawls)  # first crawl = reference
        >>> h.changed.tolist(), h.intervals.tolist()  # hours
        ([1, 0], [6.0, 6.0])
        """
        changes, crawls, start = _times_as_hours(change_times, crawl_times, start)
        if changes.size > 1 and (np.diff(changes) < 0).any():
            i = int(np.flatnonzero(np.diff(changes) < 0)[0]) + 1
            raise ValueError(f"`change_times` must be sorted ascending; row {i} is earlier than row {i - 1}")
        edges = np.concatenate(([start], crawls))
        steps = np.diff(edges)
        if (steps <= 0).any():
            i = int(np.flatnonzero(steps <= 0)[0])
            raise ValueError(
                f"`crawl_times` must be strictly increasing and after `start`; row {i} is {crawls[i]} "
                f"after {edges[i]}"
            )
        # number of changes in (t_{k-1}, t_k]
        counts = np.diff(np.searchsorted(changes, edges, side="right"))
        return cls((counts > 0).astype(np.int8), steps, crawl_rate)


def _is_datetime_like(x) -> bool:
    arr = np.asarray(x) if not isinstance(x, (str, bytes)) else np.asarray([x])
    if arr.dtype.kind == "M" or arr.dtype.kind == "U":
        return True
    return arr.dtype.kind == "O" and arr.size > 0 and not isinstance(arr.flat[0], numbers.Number)


def _times_as_hours(change_times, crawl_times, start):
    """Float times for :meth:`CrawlHistory.from_times`: datetimes become hours."""
    from ._times import parse_timestamps

    kinds = {_is_datetime_like(crawl_times), _is_datetime_like(change_times) if np.size(change_times) else None}
    kinds.discard(None)
    if len(kinds) > 1:
        raise TypeError("`change_times` and `crawl_times` must both be floats or both be datetimes")
    if kinds == {False}:
        changes = as_float_array(change_times, name="change_times", ndim=(1,), allow_empty=True)
        crawls = as_float_array(crawl_times, name="crawl_times", ndim=(1,))
        if start is None:
            start = 0.0
        if isinstance(start, bool) or not isinstance(start, numbers.Real):
            raise TypeError(f"`start` must be a number for float times; got {type(start).__name__}")
        start = float(start)
        if not np.isfinite(start):
            raise ValueError(f"`start` must be finite; got {start}")
        return changes, crawls, start

    def stamps(x, name):
        arr = np.asarray(x)
        if arr.ndim != 1:
            raise ValueError(f"`{name}` must be one-dimensional; got shape {arr.shape}")
        if arr.dtype.kind == "M":
            if np.isnat(arr).any():
                raise ValueError(f"`{name}` row {int(np.flatnonzero(np.isnat(arr))[0])}: is NaT (missing time)")
            return arr.astype("datetime64[us]")
        return parse_timestamps(list(arr), name=name)

    crawls = stamps(crawl_times, "crawl_times")
    if crawls.size == 0:
        raise ValueError("`crawl_times` must not be empty")
    changes = stamps(change_times, "change_times") if np.size(change_times) else np.zeros(0, "datetime64[us]")
    if start is None:
        origin, crawls = crawls[0], crawls[1:]
        if crawls.size == 0:
            raise ValueError("`crawl_times` needs at least two datetimes when `start` is not given "
                             "(the first crawl is the reference copy)")
    else:
        if isinstance(start, numbers.Number):
            raise TypeError(f"`start` must be a datetime for datetime times; got {type(start).__name__}")
        origin = stamps([start], "start")[0]
    hour = np.timedelta64(3600, "s")
    return (changes - origin) / hour, (crawls - origin) / hour, 0.0
