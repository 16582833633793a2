"""The crawl history: what a crawler observes about a page."""

from __future__ import annotations

import datetime as _dt
import numbers
import warnings

import numpy as np

from ._event_times import parse_timestamps
from ._validation import StatisticalWarning, as_float_array, check_positive_scalar, first_bad_index

__all__ = ["CrawlHistory"]


def _as_array(x, *, name):
    try:
        return np.asarray(x)
    except ValueError:  # ragged nested sequences
        raise ValueError(f"`{name}` must be a rectangular array (rows of equal length)") from None


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


# from_times warns when the implicit first interval [0, t_1] is this many times the median
# of the others: for Poisson crawls, P(τ_1 > 1000 · median(τ_2..τ_k)) <= 1/1001 (k = 2) and
# is below 1e-5 from k = 3 on, so genuine data rarely trips it.
_EPOCH_RATIO = 1000.0

_RAGGED_MSG = (
    "this history is ragged (pages have different numbers of crawls), so `{attr}` has no "
    "rectangular array: use `flat_{attr}` with `offsets`/`lengths`, or `padded()`"
)


class CrawlHistory:
    """What a crawler saw on one page, or on many pages.

    At crawl k the crawler learns ``changed[k]`` = I_k (1 if the page changed at least
    once since the previous crawl, else 0) and ``intervals[k]`` = τ_k = t_k - t_{k-1}.

    The constructor takes pages with the same number of crawls (rectangular arrays).
    Pages with different numbers of crawls (a *ragged* history, as real crawl logs are)
    come from :meth:`from_segments`: the crawls of all pages one after the other, with
    each page's number of crawls. Both kinds expose the same flat (CSR) view,
    ``flat_changed``, ``flat_intervals``, ``offsets`` and ``lengths``, and a padded view,
    :meth:`padded`, so that code vectorised over pages handles either without a loop.

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
        k, the length of the last axis (the longest page of a ragged history).
    n_pages : int or None
        None for a single page (1-D input).
    is_ragged : bool
        True for a history built by :meth:`from_segments` whose pages differ in length.
    lengths : ndarray of int64, shape (n_pages,)
        Crawls per page (``(1,)`` holding k for a single page).
    offsets : ndarray of int64, shape (n_pages + 1,)
        Page i's crawls are ``flat_changed[offsets[i]:offsets[i + 1]]``.
    page_ids : ndarray or None
        Optional page labels (e.g. URLs), shape (n_pages,).

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
        self._ragged = None  # (flat_changed, flat_intervals, offsets) for ragged histories
        self._page_ids = None
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
                raise ValueError(f"`intervals` must have the same shape as `changed` {arr.shape}; got {tau.shape}")
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
            raise ValueError(f"`crawl_rate` must be a scalar or have shape (n_pages,) = ({shape[0]},); got {p.shape}")
        return _frozen(p.copy())

    # ------------------------------------------------------------------ data
    @property
    def changed(self) -> np.ndarray:
        """Change indicators I_k, int8 of shape (k,) or (n_pages, k) (read-only).

        Raises
        ------
        ValueError
            For a ragged history, which has no rectangular array: use
            :attr:`flat_changed` with :attr:`offsets`, or :meth:`padded`.
        """
        if self._ragged is not None:
            raise ValueError(_RAGGED_MSG.format(attr="changed"))
        return self._changed

    @property
    def intervals(self) -> np.ndarray | None:
        """Crawl intervals τ_k > 0, float64 of the same shape, or None (read-only).

        Raises
        ------
        ValueError
            For a ragged history (see :attr:`changed`).
        """
        if self._ragged is not None:
            raise ValueError(_RAGGED_MSG.format(attr="intervals"))
        return self._intervals

    @property
    def is_ragged(self) -> bool:
        """True if the pages have different numbers of crawls (see :meth:`from_segments`)."""
        return self._ragged is not None

    @property
    def flat_changed(self) -> np.ndarray:
        """All pages' I_k one page after the other, int8 of shape (n_visits,) (read-only)."""
        return self._changed.reshape(-1) if self._ragged is None else self._ragged[0]

    @property
    def flat_intervals(self) -> np.ndarray | None:
        """All pages' τ_k one page after the other, float64 (n_visits,), or None (read-only)."""
        if self._ragged is not None:
            return self._ragged[1]
        return None if self._intervals is None else self._intervals.reshape(-1)

    @property
    def offsets(self) -> np.ndarray:
        """CSR offsets, int64 of shape (n_pages + 1,): page i is ``flat[offsets[i]:offsets[i+1]]``."""
        if self._ragged is not None:
            return self._ragged[2]
        cached = self.__dict__.get("_offsets")
        if cached is None:  # made once: the history is immutable
            k = self._changed.shape[-1]
            n = 1 if self._changed.ndim == 1 else self._changed.shape[0]
            cached = self.__dict__["_offsets"] = _frozen(np.arange(n + 1, dtype=np.int64) * k)
        return cached

    @property
    def lengths(self) -> np.ndarray:
        """Crawls per page, int64 of shape (n_pages,) (``(1,)`` for one page) (read-only)."""
        cached = self.__dict__.get("_lengths")
        if cached is None:  # made once: the history is immutable
            cached = self.__dict__["_lengths"] = _frozen(np.diff(self.offsets))
        return cached

    @property
    def n_visits(self) -> int:
        """Total number of crawls over all pages."""
        return int(self.flat_changed.size)

    @property
    def page_ids(self) -> np.ndarray | None:
        """Page labels of shape (n_pages,) given to :meth:`from_segments`, or None."""
        return self._page_ids

    def page_index(self) -> np.ndarray:
        """The page number of every flat crawl, int64 of shape (n_visits,)."""
        return np.repeat(np.arange(self.lengths.size, dtype=np.int64), self.lengths)

    def padded(self, *, fill_interval: float = 0.0):
        """The history as rectangular arrays padded after each page's last crawl.

        Parameters
        ----------
        fill_interval : float, default 0.0
            Interval put in the padding (0.0 is neutral in sums of τ and of the
            interval-censored log-likelihood, where an unchanged crawl contributes −Δτ).

        Returns
        -------
        changed : ndarray of int8, shape (n_pages, n_crawls)
            Padding is 0.
        intervals : ndarray of float64 of the same shape, or None
        mask : ndarray of bool of the same shape
            True where a crawl was observed. A rectangular history gives all-True
            (and a single page shape (1, k)).
        """
        lengths = self.lengths
        n, k = lengths.size, int(lengths.max())
        mask = np.arange(k)[None, :] < lengths[:, None]
        if self._ragged is None:
            changed = self._changed.reshape(n, k)
            tau = None if self._intervals is None else self._intervals.reshape(n, k)
            return changed, tau, mask
        changed = np.zeros((n, k), dtype=np.int8)
        changed[mask] = self._ragged[0]
        tau = None
        if self._ragged[1] is not None:
            tau = np.full((n, k), float(fill_interval))
            tau[mask] = self._ragged[1]
        return changed, tau, mask

    @property
    def crawl_rate(self):
        """The crawl rate p: a float, a read-only (n_pages,) array, or None."""
        return self._crawl_rate

    # ------------------------------------------------------------------ properties
    @property
    def n_crawls(self) -> int:
        """Number of crawls k (length of the last axis; the longest page if ragged)."""
        if self._ragged is not None:
            return int(self.lengths.max())
        return int(self._changed.shape[-1])

    @property
    def n_pages(self) -> int | None:
        """Number of pages, or None for a single-page (1-D) history."""
        if self._ragged is not None:
            return int(self._ragged[2].size - 1)
        return int(self._changed.shape[0]) if self._changed.ndim == 2 else None

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of ``changed``: (k,) or (n_pages, k); the padded shape if ragged."""
        if self._ragged is not None:
            return (int(self._ragged[2].size - 1), self.n_crawls)  # n_pages, never None when ragged
        return self._changed.shape

    def __len__(self) -> int:
        return self.n_crawls

    def __repr__(self) -> str:
        p = self.crawl_rate
        p_txt = "None" if p is None else (f"{p:g}" if np.ndim(p) == 0 else f"array{np.shape(p)}")
        shape = f"ragged, n_pages={self.n_pages}, n_visits={self.n_visits}" if self.is_ragged else f"shape={self.shape}"
        return (
            f"CrawlHistory({shape}, changes_seen={int(self.flat_changed.sum())}, "
            f"intervals={'None' if self.flat_intervals is None else 'given'}, crawl_rate={p_txt})"
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
        """The crawl intervals, or a ValueError naming ``method`` if they are missing.

        Returns ``intervals`` (shape of ``changed``), or ``flat_intervals`` (n_visits,)
        for a ragged history.
        """
        if self.flat_intervals is None:
            raise ValueError(f"method {method!r} needs the crawl intervals τ: pass `intervals` to CrawlHistory")
        tau = self.flat_intervals if self.is_ragged else self.intervals
        assert tau is not None  # flat_intervals is None exactly when intervals is
        return tau

    def page(self, i: int) -> CrawlHistory:
        """The 1-D history of page ``i`` of a multi-page history."""
        if self.n_pages is None:
            raise ValueError("`page` needs a multi-page history of shape (n_pages, k)")
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise TypeError(f"`i` must be an int; got {type(i).__name__}")
        if not -self.n_pages <= i < self.n_pages:
            raise ValueError(f"`i` must be in [{-self.n_pages}, {self.n_pages - 1}]; got {i}")
        i = int(i) % self.n_pages
        lo, hi = self.offsets[i], self.offsets[i + 1]
        tau = self.flat_intervals
        p = self.crawl_rate
        return CrawlHistory(
            self.flat_changed[lo:hi],
            None if tau is None else tau[lo:hi],
            None if p is None else (p if np.ndim(p) == 0 else float(p[i])),
        )

    def head(self, k: int) -> CrawlHistory:
        """The history of the first ``k`` crawls (of each page: at most ``k`` if ragged)."""
        if not 1 <= k <= self.n_crawls:
            raise ValueError(f"`k` must be in [1, {self.n_crawls}]; got {k}")
        if self.is_ragged:
            keep = np.minimum(self.lengths, k)
            sel = (np.arange(self.n_visits) - np.repeat(self.offsets[:-1], self.lengths)) < k
            tau = self.flat_intervals
            return CrawlHistory.from_segments(
                self.flat_changed[sel],
                None if tau is None else tau[sel],
                lengths=keep,
                crawl_rate=self.crawl_rate,
                page_ids=self.page_ids,
            )
        return CrawlHistory(
            self.changed[..., :k],
            None if self.intervals is None else self.intervals[..., :k],
            self.crawl_rate,
        )

    # -------------------------------------------------------------- constructors
    @classmethod
    def from_segments(cls, changed, intervals=None, *, lengths, crawl_rate=None, page_ids=None) -> CrawlHistory:
        """Build a history of pages with different numbers of crawls (CSR layout).

        Parameters
        ----------
        changed : array_like of {0, 1}, shape (n_visits,)
            I_k of page 0's crawls in order, then page 1's, and so on.
        intervals : array_like of float, shape (n_visits,), optional
            τ_k > 0 in the same order, in the time unit of the rates.
        lengths : array_like of int, shape (n_pages,)
            Crawls of each page, each >= 1, summing to ``n_visits``.
        crawl_rate : float or array_like of shape (n_pages,), optional
            The crawl rate p > 0 of every page, or of each page.
        page_ids : array_like, shape (n_pages,), optional
            Page labels (e.g. URLs) kept on the history.

        Returns
        -------
        CrawlHistory
            Ragged (``is_ragged``) unless every page has the same length, in which case
            it is the ordinary rectangular history of shape (n_pages, k).

        Raises
        ------
        ValueError
            If ``changed`` is not 0/1 or not 1-D; ``intervals`` is not > 0 and finite
            or has another length; a length is < 1 or the lengths do not sum to
            ``n_visits``; ``page_ids`` has the wrong length; ``crawl_rate`` is not > 0
            or its shape does not match the pages.
        TypeError
            If an argument is not numeric (``lengths`` must be integers).

        Examples
        --------
        >>> h = CrawlHistory.from_segments([1, 0, 0, 1, 1, 0], [1., 2., 1., .5, .5, 3.], lengths=[2, 4])
        >>> h.is_ragged, h.n_pages, h.lengths.tolist(), h.n_crawls
        (True, 2, [2, 4], 4)
        >>> h.page(0).changed.tolist(), h.page(1).intervals.tolist()
        ([1, 0], [1.0, 0.5, 0.5, 3.0])
        >>> changed, tau, mask = h.padded()
        >>> changed.tolist(), mask.sum(axis=1).tolist()
        ([[1, 0, 0, 0], [0, 1, 1, 0]], [2, 4])
        """
        arr = _as_array(changed, name="changed")
        if arr.ndim != 1:
            raise ValueError(f"`changed` must be one-dimensional (n_visits,); got shape {arr.shape}")
        lens = np.asarray(lengths)
        if lens.ndim != 1 or lens.size == 0:
            raise ValueError(f"`lengths` must be a non-empty 1-D array (n_pages,); got shape {lens.shape}")
        if lens.dtype == bool or lens.dtype.kind not in "iu":
            raise TypeError(f"`lengths` must hold integers; got dtype {lens.dtype}")
        if (lens < 1).any():
            i = int(np.flatnonzero(lens < 1)[0])
            raise ValueError(f"`lengths` must be >= 1; got {int(lens[i])} at index {i}")
        lens = lens.astype(np.int64)
        if int(lens.sum()) != arr.size:
            raise ValueError(
                f"`lengths` must sum to the number of crawls in `changed` ({arr.size}); got {int(lens.sum())}"
            )
        if page_ids is not None:
            ids = np.asarray(page_ids)
            if ids.shape != lens.shape:
                raise ValueError(f"`page_ids` must have shape ({lens.size},), one label per page; got {ids.shape}")
        if (lens == lens[0]).all():
            shape = (lens.size, int(lens[0]))
            tau = None
            if intervals is not None:
                tau = _as_array(intervals, name="intervals")
                if tau.shape != arr.shape:
                    raise ValueError(f"`intervals` must have the same shape as `changed` {arr.shape}; got {tau.shape}")
                tau = tau.reshape(shape)
            out = cls(arr.reshape(shape), tau, crawl_rate)
        else:
            flat = cls(arr, intervals, None)  # checks the values (0/1, τ > 0) once
            offsets = np.zeros(lens.size + 1, dtype=np.int64)
            np.cumsum(lens, out=offsets[1:])
            out = cls.__new__(cls)
            out._changed = None
            out._intervals = None
            out._ragged = (flat._changed, flat._intervals, _frozen(offsets))
            out._crawl_rate = cls._check_crawl_rate(crawl_rate, (lens.size, 1))
            out._page_ids = None
        if page_ids is not None:
            out._page_ids = _frozen(np.array(page_ids, copy=True))
        return out

    @classmethod
    def from_times(cls, change_times, crawl_times, *, start=None, crawl_rate=None) -> CrawlHistory:
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
            the history starts at the second crawl. Float times counted from an
            epoch (e.g. Unix seconds) need ``start``: without it the first interval
            runs from 0, and a :class:`StatisticalWarning` says so when that interval
            is over 1000 times the median of the others.
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
            If times are not finite/parsable, naive and time-zone-aware datetimes are
            mixed (within or across the arguments), ``change_times`` is not sorted,
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
        implicit_zero = start is None and not _is_datetime_like(crawl_times)
        changes, crawls, start = _times_as_hours(change_times, crawl_times, start)
        if changes.size > 1 and (np.diff(changes) < 0).any():
            i = int(np.flatnonzero(np.diff(changes) < 0)[0]) + 1
            raise ValueError(f"`change_times` must be sorted ascending; row {i} is earlier than row {i - 1}")
        edges = np.concatenate(([start], crawls))
        steps = np.diff(edges)
        if (steps <= 0).any():
            i = int(np.flatnonzero(steps <= 0)[0])
            raise ValueError(
                f"`crawl_times` must be strictly increasing and after `start`; row {i} is {crawls[i]} after {edges[i]}"
            )
        if implicit_zero and steps.size >= 2 and steps[0] > _EPOCH_RATIO * np.median(steps[1:]):
            warnings.warn(
                f"the first crawl interval runs from start=0 to the first crawl ({steps[0]:.6g}) and is "
                f"{steps[0] / np.median(steps[1:]):.3g} times the median of the others: float times that "
                "count from an epoch need `start` (the time of the reference copy), or pass datetimes, "
                "where the first crawl is the reference copy",
                StatisticalWarning,
                stacklevel=2,
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

    _check_same_awareness(
        [("change_times", change_times), ("crawl_times", crawl_times), ("start", None if start is None else [start])]
    )
    crawls = stamps(crawl_times, "crawl_times")
    if crawls.size == 0:
        raise ValueError("`crawl_times` must not be empty")
    changes = stamps(change_times, "change_times") if np.size(change_times) else np.zeros(0, "datetime64[us]")
    if start is None:
        origin, crawls = crawls[0], crawls[1:]
        if crawls.size == 0:
            raise ValueError(
                "`crawl_times` needs at least two datetimes when `start` is not given "
                "(the first crawl is the reference copy)"
            )
    else:
        if isinstance(start, numbers.Number):
            raise TypeError(f"`start` must be a datetime for datetime times; got {type(start).__name__}")
        origin = stamps([start], "start")[0]
    hour = np.timedelta64(3600, "s")
    return (changes - origin) / hour, (crawls - origin) / hour, 0.0


def _awareness(item):
    """'aware' or 'naive' for one timestamp value (ISO string, datetime, datetime64)."""
    if isinstance(item, np.datetime64):
        return "naive"
    if isinstance(item, str):
        try:
            item = _dt.datetime.fromisoformat(item.strip())
        except ValueError:
            return None  # unparsable: reported by the parser with its row
    if isinstance(item, _dt.datetime):
        return "aware" if item.tzinfo is not None and item.utcoffset() is not None else "naive"
    return None


def _check_same_awareness(named):
    """Refuse naive times in one argument mixed with time-zone-aware times in another."""
    seen = []
    for name, values in named:
        if values is None or np.size(values) == 0:
            continue
        arr = np.asarray(values)
        kind = "naive" if arr.dtype.kind == "M" else _awareness(arr.flat[0])
        if kind is not None:
            seen.append((name, kind))
    kinds = {k for _, k in seen}
    if len(kinds) > 1:
        naive = next(n for n, k in seen if k == "naive")
        aware = next(n for n, k in seen if k == "aware")
        raise ValueError(
            f"`{naive}` holds naive times (no UTC offset) and `{aware}` time-zone-aware ones: their "
            "order and gaps are ambiguous; give every time a UTC offset, or none"
        )
