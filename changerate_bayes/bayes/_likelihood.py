"""The exact interval-censored likelihood of the crawl indicators.

Given the crawl intervals, the indicators are independent with
P(I_j = 1 | τ_j) = 1 − e^{−Δτ_j} (a Poisson process of rate Δ has at least one event
in an interval of length τ_j), so

    log L(Δ) = Σ_j I_j log(1 − e^{−Δτ_j}) − Δ Σ_j (1 − I_j) τ_j.

``log(1 − e^{−x})`` is evaluated as in Mächler (2012): ``log(−expm1(−x))`` for
x <= log 2 and ``log1p(−e^{−x})`` above, finite and accurate for x from 1e-300 to
1e300; in PyTensor it is ``pm.math.log1mexp(−x)`` (in PyMC 5 / PyTensor 2,
``log1mexp(y)`` is log(1 − e^{y}) for y < 0: the argument is negated here).
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = [
    "log_likelihood",
    "pt_log_likelihood",
    "pt_sparse_log_likelihood",
    "sparse_data",
    "ExactLikelihood",
    "MarginalLikelihood",
    "log1mexp_exp",
]


_LN2 = np.log(2.0)


def _log1mexp_neg(x):
    """log(1 − e^{−x}) for x > 0, to full relative precision (Mächler 2012).

    ``log(−expm1(−x))`` for x <= log 2 and ``log1p(−e^{−x})`` above.
    """
    x = np.asarray(x, dtype=np.float64)
    small = x <= _LN2
    out = np.empty_like(x)
    out[small] = np.log(-np.expm1(-x[small]))
    out[~small] = np.log1p(-np.exp(-x[~small]))
    return out


#: below this log(Δτ), log(1 − e^{−Δτ}) is evaluated by its series in Δτ (see log1mexp_exp)
_SERIES_BELOW = -18.0


def log1mexp_exp(v):
    """log(1 − e^{−x}) with x = e^v, for any real v (one crawl that saw a change, in log Δτ).

    ``log(−expm1(−x))`` for v >= −18 and the series v − x/2 + x²/24 below (truncation
    error x⁴/2880 < 1e-34), so the value stays exact where Δτ underflows (v < −745)
    and is 0 where it overflows.
    """
    v = np.asarray(v, dtype=np.float64)
    with np.errstate(over="ignore"):
        x = np.exp(v)
    with np.errstate(divide="ignore"):
        direct = np.log(-np.expm1(-x))
    return np.where(v < _SERIES_BELOW, v - 0.5 * x + x * x / 24.0, direct)


def _real_array(x, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"`{name}` must hold real numbers; got dtype {arr.dtype}")
    return arr.astype(np.float64)


def _checked_likelihood_args(change_rate, changed, intervals):
    """Validated float arrays (Δ, I, τ) for :func:`log_likelihood`."""
    delta = _real_array(change_rate, "change_rate")
    changed = _real_array(changed, "changed")
    intervals = _real_array(intervals, "intervals")
    if np.isnan(delta).any() or (delta < 0).any():
        bad = delta[np.isnan(delta) | (delta < 0)].flat[0]
        raise ValueError(f"`change_rate` must be >= 0 (changes per time unit); got {bad}")
    if changed.ndim == 0:
        raise ValueError("`changed` must have a crawl axis, shape (k,) or (n_pages, k); got a scalar")
    if changed.shape != intervals.shape:
        raise ValueError(
            f"`changed` and `intervals` must have the same shape; got {changed.shape} and {intervals.shape}"
        )
    bad = (changed != 0) & (changed != 1)
    if bad.any():
        raise ValueError(f"`changed` must hold 0 or 1 (did crawl j see a change); got {changed[bad].flat[0]}")
    bad = ~(np.isfinite(intervals) & (intervals > 0))
    if bad.any():
        raise ValueError(f"`intervals` must be positive and finite; got {intervals[bad].flat[0]}")
    try:
        np.broadcast_shapes(delta.shape, changed.shape[:-1])
    except ValueError:
        raise ValueError(
            f"`change_rate` of shape {delta.shape} does not broadcast against the pages, shape {changed.shape[:-1]}"
        ) from None
    return delta, changed, intervals


def log_likelihood(change_rate, changed, intervals) -> np.ndarray:
    """Exact log-likelihood of crawl indicators given their intervals.

    Parameters
    ----------
    change_rate : float or array_like
        Δ > 0 per unit time; shape () or broadcastable against the pages
        (``changed.shape[:-1]`` plus any leading axes, e.g. (n_draws, n_pages)).
    changed : array_like of {0, 1}, shape (k,) or (n_pages, k)
        I_1, ..., I_k.
    intervals : array_like of float, same shape as ``changed``
        τ_1, ..., τ_k > 0, in the time unit of Δ.

    Returns
    -------
    ndarray
        log L(Δ), summed over the crawl axis; shape of ``change_rate`` broadcast
        against ``changed.shape[:-1]``. Δ = 0 gives −inf if any crawl saw a change.

    Raises
    ------
    TypeError
        If an argument does not hold real numbers (e.g. strings).
    ValueError
        If ``change_rate`` is negative or NaN, ``changed`` holds values other than 0
        and 1, ``intervals`` are not positive and finite, ``changed`` and
        ``intervals`` differ in shape, or ``change_rate`` does not broadcast against
        the pages ``changed.shape[:-1]``.

    Notes
    -----
    log L(Δ) = Σ_j I_j log(1 − e^{−Δτ_j}) − Δ Σ_j (1 − I_j) τ_j.

    References
    ----------
    Paper "Online estimators of change rates", Section 3.1: E[I | τ] = 1 − e^{−Δτ}.

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes.bayes import log_likelihood
    >>> float(log_likelihood(2.0, [1, 0], [0.5, 0.25]))  # log(1 - e^-1) - 0.5
    -0.9586751453870819
    """
    delta, changed, intervals = _checked_likelihood_args(change_rate, changed, intervals)
    x = delta[..., None] * intervals
    x, changed = np.broadcast_arrays(x, changed)
    with np.errstate(divide="ignore"):  # Δ = 0 with a change seen: log 0 = -inf, as documented
        return np.sum(np.where(changed > 0, _log1mexp_neg(np.where(changed > 0, x, 1.0)), -x), axis=-1)


def pt_log_likelihood(log_rate, changed, intervals):
    """PyTensor version of :func:`log_likelihood` as a function of u = log Δ.

    Parameters
    ----------
    log_rate : pytensor variable, shape () or (n_pages,)
    changed, intervals : pytensor variables or arrays, shape (k,) or (n_pages, k)

    Returns
    -------
    pytensor variable
        The log-likelihood summed over all crawls and pages (a scalar).

    Notes
    -----
    Finite with a finite gradient for Δτ from 1e-8 to 1e8: d/du log(1 − e^{−x}) =
    x/(e^x − 1) with x = e^u τ; ``pm.math.log1mexp(-x)`` switches between
    ``log1p(−e^{−x})`` and ``log(−expm1(−x))``.
    """
    import pymc as pm  # PyMC: heavy, loaded on first use
    import pytensor.tensor as pt  # PyTensor: heavy, loaded on first use

    rate = pt.exp(log_rate)
    x = (rate[..., None] if getattr(log_rate, "ndim", 0) else rate) * intervals
    return pt.sum(changed * pm.math.log1mexp(-x) - (1 - changed) * x)


def sparse_data(changed: np.ndarray, intervals: np.ndarray) -> dict[str, np.ndarray]:
    """What the likelihood needs of (n_pages, k) crawl data, for the PyMC models.

    ``t0`` (n_pages,): total length of the intervals without change; ``tau1`` and
    ``page1`` (n_changes,): the intervals that saw a change and their page index.
    """
    changed = np.asarray(changed) > 0
    page, _ = np.nonzero(changed)
    return {
        "t0": np.where(changed, 0.0, intervals).sum(axis=1),
        "tau1": np.ascontiguousarray(intervals[changed], dtype=np.float64),
        "page1": page.astype(np.int64),
    }


def pt_sparse_log_likelihood(log_rate, t0, tau1, page1):
    """:func:`pt_log_likelihood` from :func:`sparse_data`: log1mexp only where I = 1.

    Σ_{I_j = 1} log(1 − e^{−Δ_{page(j)} τ_j}) − Σ_i Δ_i T0_i, with ``log_rate`` of
    shape (n_pages,); half the work of the dense form when half the crawls changed.
    """
    import pymc as pm  # PyMC: heavy, loaded on first use
    import pytensor.tensor as pt  # PyTensor: heavy, loaded on first use

    rate = pt.exp(log_rate)
    return pt.sum(pm.math.log1mexp(-rate[page1] * tau1)) - pt.sum(rate * t0)


class ExactLikelihood:
    """Exact log-likelihood of many pages, in u = log Δ, with two derivatives.

    Stores only what the likelihood needs: per page the total length of the crawl
    intervals without change T0 and the number of changes seen S, and the intervals
    of the crawls that saw a change (flattened, with their page index), so one
    evaluation costs O(number of changes seen).

    Parameters
    ----------
    changed, intervals : ndarray, shape (n_pages, k)
    """

    def __init__(self, changed: np.ndarray, intervals: np.ndarray):
        changed = np.asarray(changed) > 0
        self.n_pages = changed.shape[0]
        self.n_changed = changed.sum(axis=1).astype(np.float64)
        self.t0 = np.where(changed, 0.0, intervals).sum(axis=1)
        self._page, _ = np.nonzero(changed)
        self._tau = intervals[changed]
        self._segments()
        # crude starting value: each changed interval counts half its length as exposure
        half = self._sum(self._tau) / 2.0
        with np.errstate(over="ignore", divide="ignore"):  # inf for intervals near 1e-323: the grid then starts at 0
            self.start = np.log((self.n_changed + 0.5) / (self.t0 + half))

    def block(self, start: int, stop: int) -> ExactLikelihood:
        """The likelihood of pages ``start:stop`` (a view on contiguous storage)."""
        new = object.__new__(ExactLikelihood)
        a, b = np.searchsorted(self._page, [start, stop])
        new.n_pages = stop - start
        new.n_changed, new.t0, new.start = self.n_changed[start:stop], self.t0[start:stop], self.start[start:stop]
        new._page, new._tau = self._page[a:b] - start, self._tau[a:b]
        new._segments()
        return new

    def _segments(self):
        """Pages with at least one change and where their entries start (page-sorted storage)."""
        self._nonempty = np.flatnonzero(self.n_changed > 0)
        self._starts = np.searchsorted(self._page, self._nonempty)

    def _sum(self, values):
        """Per-page sums of per-change values (np.add.reduceat over the page segments)."""
        out = np.zeros(self.n_pages)
        if self._nonempty.size:
            out[self._nonempty] = np.add.reduceat(values, self._starts)
        return out

    def value(self, u: np.ndarray) -> np.ndarray:
        """log L at u (shape (n_pages,)).

        Uses ``log(−expm1(−x))`` on every term: its absolute error is below 1e-16 per
        term (relative precision is lost only where the term itself is below ~1e-16),
        which is what a sum of log-probabilities needs, at half the cost of the
        two-branch form of :func:`log_likelihood`.
        """
        with np.errstate(over="ignore", divide="ignore"):  # entries with Δτ = 0 are redone below
            x = self._tau * np.exp(u)[self._page]
            terms = np.log(-np.expm1(-x))
        # where Δτ underflows (tiny τ or u < −700), log Δτ = u + log τ is exact
        fix = (x < 1e-290) | (u < -700.0)[self._page]
        if fix.any():
            terms[fix] = log1mexp_exp(u[self._page[fix]] + np.log(self._tau[fix]))
        return self._sum(terms) - _times_exp(self.t0, u)

    def derivatives(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """First and second derivatives of log L in u (each of shape (n_pages,))."""
        with np.errstate(over="ignore"):
            x = self._tau * np.exp(u)[self._page]
        q = _x_over_expm1(x)  # d/du log(1 - e^{-x})
        t0e = _times_exp(self.t0, u)
        with np.errstate(invalid="ignore"):
            second = np.where(q > 0, -q * (q + x - 1.0), 0.0)
        return self._sum(q) - t0e, self._sum(second) - t0e

    def right_tail_finite(self) -> np.ndarray:
        """True where the likelihood alone decays as Δ → ∞ (some crawl saw no change)."""
        return self.t0 > 0


class MarginalLikelihood:
    """Likelihood of the indicators alone under Poisson crawling at rate p.

    The I_k are i.i.d. Bernoulli(Δ/(Δ + p)) once τ is integrated out (paper eq. 4):
    log L = S log Δ − k log(Δ + p) + (k − S) log p. Used to check the grid
    quadrature against the conjugate closed form.
    """

    def __init__(self, changed: np.ndarray, crawl_rate):
        changed = np.asarray(changed) > 0
        self.n_pages, k = changed.shape
        self.n_changed = changed.sum(axis=1).astype(np.float64)
        self.n_crawls = float(k)
        self.log_p = np.broadcast_to(np.log(np.asarray(crawl_rate, dtype=np.float64)).ravel(), (self.n_pages,))
        self.start = self.log_p + np.log((self.n_changed + 0.5) / (k - self.n_changed + 0.5))

    def block(self, start: int, stop: int) -> MarginalLikelihood:
        """The likelihood of pages ``start:stop``."""
        new = object.__new__(MarginalLikelihood)
        new.n_pages, new.n_crawls = stop - start, self.n_crawls
        new.n_changed, new.log_p, new.start = (
            self.n_changed[start:stop],
            self.log_p[start:stop],
            self.start[start:stop],
        )
        return new

    def value(self, u):
        v = u - self.log_p
        return self.n_changed * v - self.n_crawls * np.logaddexp(0.0, v)

    def derivatives(self, u):
        s = special.expit(u - self.log_p)
        return self.n_changed - self.n_crawls * s, -self.n_crawls * s * (1.0 - s)

    def right_tail_finite(self):
        return self.n_changed < self.n_crawls


def _times_exp(t, u):
    """t·e^u, 0 where t = 0 (no overflow warning where e^u is inf but unused)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(t > 0, t * np.exp(u), 0.0)


def _x_over_expm1(x):
    """x/(e^x − 1) computed as x e^{−x}/(1 − e^{−x}); 1 at x = 0, 0 for x > 745."""
    em = -np.expm1(-x)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        q = x * np.exp(-x) / em
    return np.where(em > 0, np.where(x > 745.0, 0.0, q), 1.0)
