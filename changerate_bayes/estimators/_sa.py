"""The stochastic-approximation (SA) estimator (paper eq. 2, Theorem 2)."""

from __future__ import annotations

import warnings

import numpy as np

from .._validation import StatisticalWarning
from ._base import StreamingEstimator, check_exponent, check_finite_scalar
from ._segments import crawl_rates

__all__ = ["SAEstimator"]


def sa_params(eta=0.75, initial=0.0) -> dict:
    """Check ``eta`` in (0, 1] and a finite ``initial``."""
    return {
        "eta": check_exponent(eta, name="eta", low=0.0, high=1.0),
        "initial": check_finite_scalar(initial, name="initial"),
    }


def stepsizes(exponent, n: int) -> np.ndarray:
    """(k + 1)^(-exponent) for k = 0, ..., n - 1; shape (n,) + np.shape(exponent).

    The exponent is expanded to a full array so that numpy never takes its scalar
    fast paths (e.g. 1/x for an exponent of −1): every element is computed by the same
    ``pow`` whatever the shape, and stacked settings equal single ones bit for bit.
    """
    exponent = np.asarray(exponent, dtype=np.float64)
    k = np.arange(n, dtype=np.float64).reshape((n,) + (1,) * exponent.ndim)
    base = k + 1.0
    shape = np.broadcast_shapes(base.shape, exponent.shape)
    return np.power(np.broadcast_to(base, shape).copy(), np.broadcast_to(-exponent, shape).copy())


def stepsize_at(exponent, k: int):
    """(k + 1)^(-exponent) for one k (the same ``pow`` on full arrays as :func:`stepsizes`)."""
    exponent = np.asarray(exponent, dtype=np.float64)
    flat = np.atleast_1d(exponent)
    return np.power(np.full(flat.shape, float(k) + 1.0), -flat).reshape(exponent.shape)


def sa_step(y, changed, eta_k, p):
    """One SA step y_{k+1} = y_k + η_k [I_{k+1}(y_k + p) − y_k] (paper eq. 2)."""
    return y + eta_k * (changed * (y + p) - y)


def sa_recursion(changed_t, p, eta, initial, keep=None) -> np.ndarray:
    """Run the SA recursion over crawls (time-major input).

    Parameters
    ----------
    changed_t : ndarray, shape (k, ...)
        I_1, ..., I_k along the first axis (any trailing shape: pages, replications).
    p : float or ndarray
        Crawl rate, broadcastable against ``changed_t[0]``.
    eta, initial : float or ndarray
        Stepsize exponents and y_0, broadcastable against the state (several settings
        can be stacked along extra leading axes of the state).
    keep : ndarray of int, optional
        0-based crawl indices j to record (estimate after j + 1 crawls); default all.

    Returns
    -------
    ndarray, shape (len(keep) or k,) + state shape
    """
    n = changed_t.shape[0]
    etas = stepsizes(eta, n)
    state_shape = np.broadcast_shapes(changed_t.shape[1:], np.shape(p), np.shape(eta), np.shape(initial))
    y = np.broadcast_to(np.asarray(initial, dtype=np.float64), state_shape).copy()
    keep = np.arange(n) if keep is None else np.asarray(keep)
    out = np.empty((len(keep),) + state_shape)
    slot = 0
    for k in range(n):
        y = sa_step(y, changed_t[k], etas[k], p)
        if slot < len(keep) and keep[slot] == k:
            out[slot] = y
            slot += 1
    return out


RANGE_LIMIT = 2.0**500  # crawl rates (or initial values) from here on run scaled by 2^-512


def range_scale(p, initial) -> float:
    """The power of two 2^e by which the recursion's output is multiplied (1.0 or 2^512).

    The SA/SAM recursions are linear in (y, p, y_0): run on (p, y_0)/2^e and multiplied
    back by 2^e they give the same numbers (powers of two scale exactly), while a crawl
    rate near the float64 limit (e.g. 1.7e308) no longer overflows the state. An
    estimate beyond the float64 range is then reported as ±inf for that crawl only.
    """
    big = float(np.max(np.abs(p))) >= RANGE_LIMIT or abs(float(initial)) >= RANGE_LIMIT
    return 2.0**512 if big else 1.0


def unscaled(state, up):
    """The state ``state`` (kept scaled by 1/``up``, see :func:`range_scale`) in the rate's units:
    ``state`` itself when ``up`` is 1, else a scaled copy (inf beyond the float64 range)."""
    if up == 1.0:
        return state
    with np.errstate(over="ignore"):  # an estimate beyond the float64 range is inf
        return state * up


def warn_overflow(n_bad, n_total, stacklevel):
    warnings.warn(
        f"SA estimates left the float64 range on {n_bad} of {n_total} trajectories (the crawl rate "
        "times the step sizes exceeds 1.8e308); they are reported as +inf from then on",
        StatisticalWarning,
        stacklevel=stacklevel + 1,
    )


def _sa_segments(history, eta, initial, *, path: bool):
    from . import _kernels  # numba kernels: loaded on first use, nothing compiled at import

    p = crawl_rates(history, method="sa")
    up = range_scale(p, initial)
    lengths = history.lengths
    n, k = lengths.size, int(lengths.max())
    etas = np.ascontiguousarray(stepsizes(eta, k))
    out = np.full((n, k) if path else (n, 0), np.nan)
    final = np.empty(n)
    diverged = np.zeros(n, dtype=bool)
    _kernels.sa_segments(
        history.flat_changed, history.offsets, p / up, etas, float(initial) / up, up, out, final, diverged
    )
    if diverged.any():
        warn_overflow(int(diverged.sum()), n, stacklevel=4)
    return out, final


def sa_path(history, *, eta=0.75, initial=0.0) -> np.ndarray:
    """y_1, ..., y_k for every page, shape ``history.shape`` (NaN-padded (n_pages, n_crawls)
    if ragged); one compiled pass over the crawls (``_kernels.sa_segments``)."""
    out, _ = _sa_segments(history, eta, initial, path=True)
    return out if history.is_ragged else out.reshape(history.shape)


def sa_final(history, *, eta=0.75, initial=0.0) -> np.ndarray:
    """y_k after each page's last crawl, shape (n_pages,), without the path."""
    return _sa_segments(history, eta, initial, path=False)[1]


class SAEstimator(StreamingEstimator):
    """The stochastic-approximation change-rate estimator of Avrachenkov et al., streaming.

    Parameters
    ----------
    {crawl_rate}
    eta : float, default 0.75
        Stepsize exponent η in (0, 1]: η_k = (k + 1)^(−η), k = 0, 1, ...
    initial : float, default 0.0
        y_0, the estimate before any crawl.
    {n_pages}

    Attributes
    ----------
    {n_crawls_}
    estimate_ : ndarray, shape () or (n_pages,)
        y_k (updated in place: one compiled pass checks the I_k and steps every page).
        With a crawl rate >= 2^500 the state is kept scaled by 2^-512 (exactly) so that
        it cannot overflow, and ``estimate_`` is a scaled copy.

    Notes
    -----
    y_{k+1} = y_k + η_k [I_{k+1}(y_k + p) − y_k] (paper eq. 2): a stochastic
    approximation of the zero of h(y) = p(Δ − y)/(Δ + p). y_k → Δ a.s. when Σ η_k = ∞
    and Σ η_k² < ∞ (η in (1/2, 1]), and E|y_k − Δ| = O(k^{−η/2}) for η in (0, 1)
    (Theorem 2). At η = 1 the rate is k^{−min(1/2, p/(Δ+p))}: it depends on the slope
    p/(Δ+p) of the limiting ODE. Before any crawl ``rate`` is y_0 = ``initial``. O(1)
    state; the recursion is order dependent, so two estimators cannot be merged.

    The mean field h(y) uses E[I] = Δ/(Δ + p), which holds for Poisson crawling at rate
    p: intervals exponential with mean 1/p (paper eq. 4). With crawls on a fixed
    schedule y_k tends to p(e^{Δ/p} − 1), not Δ. This object does not see the
    intervals; :func:`estimate_path` checks them and warns.

    References
    ----------
    Avrachenkov, Patil & Thoppe, "Online algorithms for estimating change rates of web
    pages", eq. (2) and Theorem 2.

    Examples
    --------
    >>> from changerate_bayes import SAEstimator
    >>> est = SAEstimator(crawl_rate=3.0, eta=1.0)
    >>> est.rate  # y_0 = initial
    0.0
    >>> for i in [1, 0, 1]:
    ...     est.update(i)
    >>> est.rate  # y1 = 3, y2 = 3 - 3/2, y3 = 1.5 + (4.5 - 1.5)/3
    2.5
    """

    method = "sa"

    def __init__(self, *, crawl_rate=None, eta=0.75, initial=0.0, n_pages=None):
        super().__init__(crawl_rate=crawl_rate, n_pages=n_pages)
        params = sa_params(eta, initial)
        self.eta = params["eta"]
        self.initial = params["initial"]
        self._up = range_scale(self._p_flat, self.initial)
        self._p_run = self._p_flat / self._up
        self._y = np.full(self._shape, self.initial / self._up)
        self._etas = np.zeros(0)
        self._frozen = False  # whether some estimate has left the float64 range (then kept at ±inf)

    @property
    def estimate_(self) -> np.ndarray:
        """y_k: shape () or (n_pages,)."""
        return unscaled(self._y, self._up)

    def path_params(self) -> dict:
        return {"eta": self.eta, "initial": self.initial}

    def _update_checked(self, changed, interval, mask):
        from . import _kernels  # numba kernels: loaded on first use, nothing compiled at import

        arr = self._kernel_input(changed, interval, mask)
        if mask is None:
            eta_k = float(stepsize_at(self.eta, self.n_crawls_))
            bad, n_over = _kernels.sa_update(arr.reshape(-1), self._y.reshape(-1), self._p_run, eta_k, self._frozen)
            if bad >= 0:
                self._raise_bad_changed(arr, bad)
        else:
            need = int(self.counts_.max()) + 1
            if self._etas.size < need:
                self._etas = np.ascontiguousarray(stepsizes(self.eta, max(need, 2 * self._etas.size)))
            n_over = _kernels.sa_update_masked(arr, mask, self._y, self.counts_, self._p_run, self._etas)
        if n_over:
            self._frozen = True
            warn_overflow(n_over, self._y.size, stacklevel=3)

    def _rate(self):
        return self.estimate_
