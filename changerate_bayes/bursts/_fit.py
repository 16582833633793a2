"""Whole crawl histories under the burst model: one-step predictions, likelihood, and the
pooled (empirical-Bayes) maximum-likelihood fit of the parameters."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from .._validation import as_float_array, page_vector
from ._model import DEFAULT_SCALES, BurstParameters, check_params, check_rates_per_page, check_scales

__all__ = ["BurstFit", "BurstPredictive", "burst_predictive", "fit_bursts"]

#: log-parameters are kept within this many units of the starting point's time scale
_LOG_BOUND = 25.0
#: The median interval (in the pages' time unit) that :func:`fit_bursts` accepts: the rates it tries,
#: up to e^25 / median, stay below :data:`~changerate_bayes.bursts._model.MAX_RATE`.
MEDIAN_INTERVAL_RANGE = (1e-100, 1e100)


@dataclass(frozen=True)
class BurstPredictive:
    """One-step predictions of whole histories under the burst model.

    Attributes
    ----------
    change_probability : ndarray, shape (n_pages, k)
        P(I_k = 1 | I_1..I_{k−1}, τ_k), formed before crawl k (NaN where masked).
    log_likelihood : ndarray, shape (n_pages,)
        log p(I_1..I_K | τ, parameters) per page.
    """

    change_probability: np.ndarray
    log_likelihood: np.ndarray


@dataclass(frozen=True)
class BurstFit:
    """The pooled maximum-marginal-likelihood fit of :func:`fit_bursts`.

    Attributes
    ----------
    params : BurstParameters
        The fitted rates, per time unit of the intervals given.
    log_likelihood : float
        Σ over pages of log p(I_1..I_K | τ, params) at the maximum.
    standard_errors : ndarray, shape (4,)
        Standard errors of (log λ0, log(λ1 − λ0), log q01, log q10) from the inverse of
        the observed information (finite-difference Hessian); NaN where it is not
        positive definite.
    n_pages, n_crawls : int
    scales : tuple of float
    converged : bool
        The optimiser's success flag.
    """

    params: BurstParameters
    log_likelihood: float
    standard_errors: np.ndarray
    n_pages: int
    n_crawls: int
    scales: tuple
    converged: bool


def _histories(changed, intervals, mask):
    c = np.asarray(changed)
    if c.dtype.kind not in "biuf":
        raise TypeError(f"`changed` must hold 0/1 numbers or booleans; got dtype {c.dtype}")
    if c.ndim not in (1, 2):
        raise ValueError(f"`changed` must have shape (k,) or (n_pages, k); got {c.shape}")
    c2 = c.reshape(-1, c.shape[-1]) if c.ndim == 2 else c[None, :]
    tau = np.asarray(intervals)
    if tau.shape != c.shape:
        raise ValueError(f"`intervals` must have the shape of `changed` {c.shape}; got {tau.shape}")
    if mask is None:
        m = np.ones(c2.shape, dtype=bool)
    else:
        m = np.asarray(mask)
        if m.dtype != bool:
            raise TypeError(f"`mask` must be boolean (True = a crawl); got dtype {m.dtype}")
        if m.shape != c.shape:
            raise ValueError(f"`mask` must have the shape of `changed` {c.shape}; got {m.shape}")
        m = m.reshape(c2.shape)
    bad = m & (c2 != 0) & (c2 != 1)
    if bad.any():
        raise ValueError(f"`changed` must be 0 or 1 where `mask` is True; got {c2[bad][0]!r}")
    t2 = tau.reshape(c2.shape)
    t_ok = as_float_array(np.where(m, t2, 1.0), name="intervals", positive=True)
    return (np.ascontiguousarray((c2 == 1) & m), np.ascontiguousarray(t_ok), np.ascontiguousarray(m), c.ndim == 1)


def _page_rates(params: BurstParameters, time_scale, n: int):
    inv = np.ones(n) if time_scale is None else 1.0 / page_vector(time_scale, n, name="time_scale", positive=True)
    return [np.ascontiguousarray(x * inv) for x in check_rates_per_page(params, inv)]


#: pages from which the whole-history filter runs on several threads
PARALLEL_PAGES = 1024


def _run(changed, tau, mask, rates, scales, log_prior, *, serial=False):
    from . import _kernels  # numba kernels: loaded on first use, nothing compiled at import

    n, k = changed.shape
    pred = np.empty((n, k))
    ll = np.empty(n)
    status = np.zeros(n, dtype=np.int8)
    kernel = _kernels.batch_filter_serial if serial or n < PARALLEL_PAGES else _kernels.batch_filter
    kernel(changed, tau, mask, *rates, scales, log_prior, pred, ll, status)
    return pred, ll, status


def burst_predictive(
    changed, intervals, mask=None, *, params, scales=DEFAULT_SCALES, time_scale=None
) -> BurstPredictive:
    """One-step predictive probabilities and log likelihood of crawl histories (burst model).

    Parameters
    ----------
    changed : array_like of {0, 1}, shape (k,) or (n_pages, k)
        I_j: whether crawl j saw a change.
    intervals : array_like of float, same shape
        τ_j > 0, time since the previous crawl, in the time unit of ``params``.
    mask : array_like of bool, same shape, optional
        True where a crawl exists (padded histories); entries elsewhere are ignored.
    params : BurstParameters
    scales : sequence of float, default (1.0,)
        Per-page rate scales averaged over (see :class:`BurstFilter`).
    time_scale : float or array_like of shape (n_pages,), optional
        Per-page time unit dividing the rates (see :class:`BurstFilter`).

    Returns
    -------
    BurstPredictive
        Arrays of shape (n_pages, k) and (n_pages,) ((k,) and () for one page).

    Raises
    ------
    TypeError, ValueError
        For inputs of the wrong type, shape or value (the message names the argument).

    Notes
    -----
    Each page starts in the stationary distribution; the filter is that of
    :class:`BurstFilter` (the same compiled step), so the two agree crawl by crawl.
    """
    check_params(params)
    c, tau, m, single = _histories(changed, intervals, mask)
    sc, lp = check_scales(scales)
    pred, ll, _ = _run(c, tau, m, _page_rates(params, time_scale, c.shape[0]), sc, lp)
    if single:
        return BurstPredictive(pred[0], ll[0])
    return BurstPredictive(pred, ll)


def _to_params(x) -> BurstParameters:
    l0 = math.exp(x[0])
    return BurstParameters(l0, l0 + math.exp(x[1]), math.exp(x[2]), math.exp(x[3]))


def _hessian(f, x, h=1e-3):
    d = x.size
    hess = np.empty((d, d))
    f0 = f(x)
    for i in range(d):
        for j in range(i, d):
            ei = np.zeros(d)
            ej = np.zeros(d)
            ei[i] = h
            ej[j] = h
            if i == j:
                v = (f(x + ei) - 2 * f0 + f(x - ei)) / h**2
            else:
                v = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)) / (4 * h**2)
            hess[i, j] = hess[j, i] = v
    return hess


def fit_bursts(
    changed, intervals, mask=None, *, scales=DEFAULT_SCALES, time_scale=None, init=None, maxiter: int = 3000
) -> BurstFit:
    """Fit the burst model's four rates, shared by all pages, by maximum marginal likelihood.

    The likelihood of each page's crawls, p(I_1..I_K | τ, θ) with the quiet/busy path
    integrated out, comes exactly from the forward filter; the fit maximises its sum over
    pages (empirical Bayes: most pages see too few changes to fit their own four rates,
    so the pages share one θ, and with several ``scales`` each page's own speed is
    averaged over a discrete prior).

    Parameters
    ----------
    changed, intervals, mask : see :func:`burst_predictive`
    scales : sequence of float, default (1.0,)
        Per-page rate scales (uniform prior) around the shared θ.
    time_scale : float or array_like of shape (n_pages,), optional
        Per-page time unit (e.g. each page's median crawl interval, making θ unit-free).
    init : BurstParameters, optional
        The one starting point (e.g. a fit to similar data); default two starts from the
        pooled change frequency and median interval.
    maxiter : int, default 3000
        Nelder-Mead iterations per start.

    Returns
    -------
    BurstFit
        θ per time unit of the intervals (per hour for intervals in hours; per
        ``time_scale`` when one is given).

    Raises
    ------
    TypeError, ValueError
        For bad inputs (the message names the argument); ValueError also if no crawl is
        in ``mask``, or if the median interval (per ``time_scale``) is outside
        :data:`MEDIAN_INTERVAL_RANGE` (1e-100 to 1e100), where the rates searched would overflow.

    Notes
    -----
    The optimiser (``scipy.optimize.minimize``, Nelder-Mead) works on
    x = (log λ0, log(λ1 − λ0), log q01, log q10), so λ1 >= λ0 (no label switching); without
    ``init``, from two starting points (rates 5 times below and above the pooled rate,
    switching every 10 and 2 median intervals; and the same with rates 10 times apart and
    switching 10 times slower), keeping the better maximum. The filter runs in one
    thread here (many short calls).
    """
    c, tau, m, _ = _histories(changed, intervals, mask)
    if not m.any():
        raise ValueError("`mask` holds no crawl: nothing to fit")
    if isinstance(maxiter, bool) or not isinstance(maxiter, numbers.Integral):
        raise TypeError(f"`maxiter` must be an integer; got {type(maxiter).__name__}")
    if maxiter < 1:
        raise ValueError(f"`maxiter` must be >= 1; got {maxiter}")
    sc, lp = check_scales(scales)
    n = c.shape[0]
    ones = _page_rates(BurstParameters(1.0, 1.0, 1.0, 1.0), time_scale, n)[0]
    tau_unit = tau * ones[:, None]  # intervals in each page's time unit
    med = float(np.median(tau_unit[m]))
    if not (MEDIAN_INTERVAL_RANGE[0] <= med <= MEDIAN_INTERVAL_RANGE[1]):
        raise ValueError(
            f"`intervals`: their median is {med:g} (per `time_scale` where given); fit_bursts needs it within "
            f"[{MEDIAN_INTERVAL_RANGE[0]:g}, {MEDIAN_INTERVAL_RANGE[1]:g}], since it searches rates up to e^{_LOG_BOUND:g} "
            "times 1/median, whose products must stay finite: give the intervals in another time unit"
        )
    f = float(np.clip(c[m].mean(), 0.01, 0.99))
    r = -math.log1p(-f) / med
    starts = []
    if init is not None:
        p0 = check_params(init)
        starts.append(
            np.log(
                [
                    max(p0.quiet_rate, 1e-12),
                    max(p0.busy_rate - p0.quiet_rate, 1e-12),
                    max(p0.to_busy, 1e-12),
                    max(p0.to_quiet, 1e-12),
                ]
            )
        )
    else:
        starts.append(np.log([r / 5.0, 5.0 * r, 0.1 / med, 0.5 / med]))
        starts.append(np.log([r / 10.0, 10.0 * r, 0.01 / med, 0.05 / med]))
    centre = math.log(1.0 / med)
    lo, hi = centre - _LOG_BOUND, centre + _LOG_BOUND
    n_crawls = int(m.sum())

    def nll(x):
        x = np.clip(x, lo, hi)
        _, ll, _ = _run(c, tau, m, _page_rates(_to_params(x), time_scale, n), sc, lp, serial=True)
        tot = float(ll.sum())
        return -tot / n_crawls if math.isfinite(tot) else 1e10

    best = None
    for x0 in starts:
        res = optimize.minimize(
            nll, x0, method="Nelder-Mead", options={"maxiter": int(maxiter), "xatol": 1e-5, "fatol": 1e-10}
        )
        if best is None or res.fun < best.fun:
            best = res
    x = np.clip(best.x, lo, hi)
    hess = _hessian(nll, x) * n_crawls
    try:
        cov = np.linalg.inv(hess)
        se = np.sqrt(np.diag(cov)) if np.all(np.linalg.eigvalsh(hess) > 0) else np.full(4, np.nan)
    except np.linalg.LinAlgError:
        se = np.full(4, np.nan)
    return BurstFit(
        params=_to_params(x),
        log_likelihood=-best.fun * n_crawls,
        standard_errors=se,
        n_pages=n,
        n_crawls=n_crawls,
        scales=tuple(float(s) for s in sc),
        converged=bool(best.success),
    )
