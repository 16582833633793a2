"""The contract shared by the streaming change-rate estimators.

Every estimator of this package exists twice, with one implementation of the maths:

* a batch trajectory, ``estimate_path(history, method, **params)``, and
* a streaming object ``update(changed, interval=None)`` / ``.rate`` whose rate equals
  the trajectory after every single update.

This module holds the streaming base class (constructor checks, the per-crawl input
checks of ``update``) and the small input helpers used by both forms.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import as_float_array, check_finite_real, check_positive_int, first_bad_index

__all__ = ["StreamingEstimator"]


def scaled_ratio(p, num, den):
    """p · num / den, elementwise, without a spurious overflow of p · num.

    Computed as (p · num) / den, the form of the paper's formulas; where that product
    overflows (a crawl rate near the float64 limit) it is p · (num / den) instead, the
    finite answer when there is one. 0/0 gives NaN without a warning.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        out = np.asarray(p * num / den)
        bad = ~np.isfinite(out)
        if bad.any():
            alt = np.broadcast_to(p * (num / den), out.shape)
            out = np.where(bad & np.isfinite(alt), alt, out)
    return out


def check_finite_scalar(x, *, name: str) -> float:
    """Return ``x`` as a float after checking it is a finite real number."""
    return check_finite_real(x, name=name)


def check_exponent(x, *, name: str, low: float, high: float, low_open: bool = True) -> float:
    """A stepsize exponent in ``(low, high]`` (or ``[low, high]`` if not ``low_open``)."""
    x = check_finite_scalar(x, name=name)
    ok = (x > low if low_open else x >= low) and x <= high
    if not ok:
        bracket = "(" if low_open else "["
        raise ValueError(f"`{name}` must be in {bracket}{low:g}, {high:g}]; got {x:g}")
    return x


def check_rate_param(crawl_rate, n_pages):
    """The crawl rate p of a streaming estimator: a float, or an array (n_pages,)."""
    if isinstance(crawl_rate, numbers.Real) and not isinstance(crawl_rate, bool):
        p = float(crawl_rate)
        if not (np.isfinite(p) and p > 0):
            raise ValueError(f"`crawl_rate` must be a finite number > 0; got {p}")
        return p
    p = as_float_array(crawl_rate, name="crawl_rate", positive=True, ndim=(0, 1))
    if p.ndim == 0:
        return float(p)
    if n_pages is None or p.shape != (n_pages,):
        raise ValueError(f"`crawl_rate` must be a scalar or have shape (n_pages,) = ({n_pages},); got {p.shape}")
    return p


#: numpydoc entries shared by the estimators' docstrings: a subclass's docstring names
#: one as ``{key}`` on a line of its own (indented as an entry) and gets the text
_SHARED_DOC = {
    "crawl_rate": """crawl_rate : float or array_like of shape (n_pages,)
        The crawl rate p > 0, crawls per unit time; the rate is in the same unit.
        Required: a ValueError names it when missing.""",
    "n_pages": """n_pages : int, optional
        None for one page, or the number of pages updated together.""",
    "n_crawls_": """n_crawls_ : int
        k, crawls seen so far.""",
    "count_attributes": """Attributes
    ----------
    n_crawls_ : int
        k, crawls seen so far.
    changes_ : float or ndarray
        Î_k, the number of crawls that saw a change.""",
}


class StreamingEstimator:
    """Base class of the streaming estimators (one page, or ``n_pages`` pages at once).

    Subclasses set ``method`` (the name understood by :func:`estimate_path`),
    ``needs_crawl_rate`` / ``needs_intervals``, store their constructor arguments
    verbatim under the same names, keep their learned state in attributes ending in
    ``_`` and implement ``_update(changed, interval, mask)`` and ``_rate()`` (also called
    before the first crawl, with ``n_crawls_ == 0``: the value of the formula at k = 0,
    or NaN where the estimator is undefined there). ``mask`` is None when every page is
    crawled, else a bool array (n_pages,) of the pages crawled in this step.

    Parameters
    ----------
    crawl_rate : float or array_like of shape (n_pages,), optional
        The crawl rate p > 0 (crawls per unit time).
    n_pages : int, optional
        None (default) for one page: ``update`` takes scalars and ``rate`` is a float.
        An int for that many pages updated together: ``update`` takes arrays of shape
        (n_pages,) and ``rate`` is an array of shape (n_pages,).
    """

    method: str = ""
    needs_crawl_rate: bool = True
    needs_intervals: bool = False

    def __init_subclass__(cls, **kwargs):
        """Fill the ``{key}`` entries of the subclass's docstring from :data:`_SHARED_DOC`."""
        super().__init_subclass__(**kwargs)
        doc = cls.__dict__.get("__doc__")
        if doc:
            for key, text in _SHARED_DOC.items():
                doc = doc.replace("{" + key + "}", text)
            cls.__doc__ = doc

    def __init__(self, *, crawl_rate=None, n_pages=None):
        if n_pages is not None:
            n_pages = check_positive_int(n_pages, name="n_pages")
        if crawl_rate is None:
            if self.needs_crawl_rate:
                raise ValueError(f"{type(self).__name__} needs the crawl rate: pass `crawl_rate` (p > 0)")
        else:
            crawl_rate = check_rate_param(crawl_rate, n_pages)
        self.crawl_rate = crawl_rate
        self.n_pages = n_pages
        self.n_crawls_ = 0
        self.counts_ = None  # per-page crawl counts once a mask has made them differ
        self._p_flat = (
            None
            if crawl_rate is None
            else np.ascontiguousarray(np.atleast_1d(np.asarray(crawl_rate, dtype=np.float64)))
        )

    # ------------------------------------------------------------------ helpers
    @property
    def _shape(self) -> tuple[int, ...]:
        return () if self.n_pages is None else (self.n_pages,)

    def _p(self) -> np.ndarray:
        """The crawl rate as an array broadcastable against the state."""
        return np.asarray(self.crawl_rate, dtype=np.float64)

    def _k(self):
        """Crawls seen by each page: a float (every page alike), or a float array (n_pages,)."""
        return float(self.n_crawls_) if self.counts_ is None else self.counts_.astype(np.float64)

    @property
    def page_crawls(self):
        """Crawls seen so far by each page: an int (one page) or int64 array (n_pages,).

        Equal to ``n_crawls_`` on every page unless ``update`` was given a ``mask``.
        """
        if self.n_pages is None:
            return self.n_crawls_
        if self.counts_ is None:
            return np.full(self.n_pages, self.n_crawls_, dtype=np.int64)
        return self.counts_.copy()

    def _check_changed_array(self, changed):
        shape = self._shape
        arr = np.asarray(changed)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"`changed` must be 0/1 numbers or booleans; got dtype {arr.dtype}")
        if arr.shape != shape:
            raise ValueError(f"`changed` must have shape {shape} (n_pages={self.n_pages}); got {arr.shape}")
        return arr

    @staticmethod
    def _raise_bad_changed(arr, i):
        where = "" if arr.ndim == 0 else f" at index {i}"
        raise ValueError(f"`changed` must be 0 or 1; got {arr.reshape(-1)[i].item()!r}{where}")

    def _kernel_input(self, changed, interval, mask):
        """``changed`` checked for a compiled update: its dtype and shape, and ``interval``;
        on the masked path the page counts are started and the crawled pages' I checked to be
        0 or 1 (the unmasked kernels check them in their own pass over the data)."""
        from . import _kernels  # numba kernels: loaded on first use, nothing compiled at import

        arr = self._check_changed_array(changed)
        self._check_interval(interval, mask)
        if mask is not None:
            self._start_counts()
            bad = _kernels.first_bad_changed(arr, mask)
            if bad >= 0:
                self._raise_bad_changed(arr, bad)
        return arr

    def _check_mask(self, mask):
        """None (every page crawled), or a bool array (n_pages,) with at least one False."""
        if mask is None:
            return None
        if self.n_pages is None:
            raise ValueError(
                "`mask` is for estimators of several pages (n_pages given); "
                "a one-page estimator is crawled at every update"
            )
        m = np.asarray(mask)
        if m.dtype != bool:
            raise TypeError(f"`mask` must be a boolean array (True = page crawled); got dtype {m.dtype}")
        if m.shape != self._shape:
            raise ValueError(f"`mask` must have shape {self._shape} (n_pages={self.n_pages}); got {m.shape}")
        if m.all() and self.counts_ is None:
            return None
        return np.ascontiguousarray(m)

    def _check_interval(self, interval, mask):
        shape = self._shape
        if interval is None:
            if self.needs_intervals:
                raise ValueError(f"method {self.method!r} needs the crawl interval τ: pass `interval` to update()")
            return None
        if mask is None:
            tau = as_float_array(interval, name="interval", positive=True)
        else:  # only the crawled pages' intervals are used, and checked
            tau = np.asarray(interval)
            if tau.dtype == bool or tau.dtype.kind not in "iuf":
                raise TypeError(f"`interval` must be numeric; got dtype {tau.dtype}")
            tau = tau.astype(np.float64, copy=False)
            bad = mask & ~(np.isfinite(tau) & (tau > 0)) if tau.shape == shape else None
            if bad is not None and bad.any():
                raise ValueError(
                    f"`interval` must be finite and > 0 on the crawled pages; got "
                    f"{tau[bad].flat[0]} at index {first_bad_index(bad)}"
                )
        if tau.shape != shape:
            raise ValueError(f"`interval` must have shape {shape} (n_pages={self.n_pages}); got {tau.shape}")
        return tau

    def _check_observation(self, changed, interval, mask=None):
        arr = self._check_changed_array(changed)
        bad = (arr != 0) & (arr != 1)
        if mask is not None:
            bad &= mask
        if bad.any():
            self._raise_bad_changed(arr, int(np.flatnonzero(bad.reshape(-1))[0]))
        return arr.astype(np.float64), self._check_interval(interval, mask)

    def _start_counts(self):
        if self.counts_ is None:
            self.counts_ = np.full(self.n_pages, self.n_crawls_, dtype=np.int64)

    # ------------------------------------------------------------------ public API
    def update(self, changed, interval=None, mask=None) -> None:
        """Feed one crawl: I (``changed``) and, where the method needs it, τ (``interval``).

        Parameters
        ----------
        changed : {0, 1} or array_like of shape (n_pages,)
            I_k = 1 if the page changed since the previous crawl (bool or any numeric
            dtype holding 0/1).
        interval : float or array_like of shape (n_pages,), optional
            τ_k = t_k - t_{k-1} > 0 (required by ``"mle"`` and ``"mm"``).
        mask : array_like of bool, shape (n_pages,), optional
            The pages crawled in this step (default: all). The other pages' state is
            left untouched and their entries of ``changed`` / ``interval`` are neither
            used nor checked, so pages crawled at different times and of any length
            stream through one estimator; each page's ``rate`` is then its estimate
            after its own crawls (its :func:`estimate_path` row at ``page_crawls - 1``).

        Raises
        ------
        ValueError
            If ``changed`` is not 0/1 or has the wrong shape, ``interval`` is not > 0
            and finite, or is missing where the method needs it, or ``mask`` has the
            wrong shape (or is given to a one-page estimator).
        TypeError
            If ``changed`` is not numeric or ``mask`` is not boolean.
        """
        mask = self._check_mask(mask)
        if mask is None and self.counts_ is not None:  # pages already differ: all crawled now
            mask = np.ones(self.n_pages, dtype=bool)
        self._update_checked(changed, interval, mask)
        self.n_crawls_ += 1

    def _update_checked(self, changed, interval, mask):
        """Check the input and update (overridden by the fused kernels of the subclasses)."""
        obs, tau = self._check_observation(changed, interval, mask)
        if mask is not None:
            self._start_counts()
        self._update(obs, tau, mask)
        if mask is not None:
            self.counts_[mask] += 1

    @property
    def rate(self):
        """The current estimate of Δ (float, or ndarray of shape (n_pages,)).

        Before any crawl it is what the estimator's formula gives at k = 0 (SA and SAM:
        ``initial``); NaN only where that is undefined (each class says which).
        """
        r = np.broadcast_to(np.asarray(self._rate(), dtype=np.float64), self._shape)
        return float(r) if self.n_pages is None else r.copy()

    def path_params(self) -> dict:
        """The keyword parameters that make ``estimate_path`` compute this estimator."""
        return {}

    def _check_mergeable(self, other):
        if type(other) is not type(self):
            raise TypeError(f"can only merge a {type(self).__name__} with another; got {type(other).__name__}")
        if other.n_pages != self.n_pages:
            raise ValueError(f"`n_pages` differ: {self.n_pages} and {other.n_pages}")
        if not np.array_equal(np.asarray(self.crawl_rate, dtype=float), np.asarray(other.crawl_rate, dtype=float)):
            raise ValueError("`crawl_rate` differs between the two estimators")
        mine, theirs = self.path_params(), other.path_params()
        if mine != theirs:
            raise ValueError(f"parameters differ: {mine} and {theirs}")

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.path_params().items())
        sep = ", " if params else ""
        return f"{type(self).__name__}(crawl_rate={self.crawl_rate!r}{sep}{params}, n_pages={self.n_pages!r})"


class ChangeCountEstimator(StreamingEstimator):
    """Base of the estimators whose state is (k, Î_k): Naive, LLN and regular-crawl.

    Keeps ``changes_`` = Î_k = Σ_{j≤k} I_j (updated in place); subclasses implement
    ``_rate()`` from ``_k()`` and ``changes_``. For several pages the update is one
    compiled pass that checks the I_k and adds them.
    """

    def __init__(self, *, crawl_rate=None, n_pages=None):
        super().__init__(crawl_rate=crawl_rate, n_pages=n_pages)
        self.changes_ = np.zeros(self._shape)

    def _update_checked(self, changed, interval, mask):
        from . import _kernels  # numba kernels: loaded on first use, nothing compiled at import

        arr = self._kernel_input(changed, interval, mask)
        if mask is None:
            bad = _kernels.count_update(arr.reshape(-1), self.changes_.reshape(-1))
            if bad >= 0:
                self._raise_bad_changed(arr, bad)
        else:
            _kernels.count_update_masked(arr, mask, self.changes_, self.counts_)

    def merge(self, other):
        """A new estimator holding the crawls of ``self`` and ``other`` (disjoint data).

        The estimate depends on the data only through (k, Î_k), so merging adds both
        (per page when the estimators were fed with masks).

        Raises
        ------
        TypeError, ValueError
            If ``other`` is not of the same class with the same crawl rate, parameters
            and pages.
        """
        self._check_mergeable(other)
        out = type(self)(crawl_rate=self.crawl_rate, n_pages=self.n_pages, **self.path_params())
        out.n_crawls_ = self.n_crawls_ + other.n_crawls_
        out.changes_ = self.changes_ + other.changes_
        if self.counts_ is not None or other.counts_ is not None:
            out.counts_ = self.page_crawls + other.page_crawls
        return out
