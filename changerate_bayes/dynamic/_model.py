"""Settings shared by the streaming filter and the batch posterior: lattice, prior, volatilities."""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import as_float_array, check_positive_int
from ..bayes._priors import LogNormalPrior, Prior, log_prior_u

__all__ = ["DEFAULT_PRIOR", "DEFAULT_SIGMAS", "DEFAULT_GRID_SIZE", "UNIT_FREE_SIGMAS", "Lattice", "make_lattice",
           "check_sigmas", "typical_intervals", "rounded_intervals"]

#: default prior on Δ: log Δ ~ Normal(0, 3), Δ per unit of the intervals (with hours,
#: 95% prior mass between one change in 17 days and 400 per hour)
DEFAULT_PRIOR = LogNormalPrior(0.0, 3.0)
#: volatilities of the absolute grid, per √(time unit of the intervals): with hours,
#: 0.1 per √hour lets log Δ drift by 0.1·√24 ≈ 0.5 (a factor 1.6) in a day
DEFAULT_SIGMAS = (0.0, 0.01, 0.03, 0.1, 0.3)
#: default (unit-free) volatilities averaged over, per √(each page's typical crawl
#: interval m): page i uses σ = c/√m_i, so the largest lets log Δ move by about 1 per
#: typical interval whatever the unit of time and however often the page is crawled
UNIT_FREE_SIGMAS = (0.0, 0.01, 0.03, 0.1, 0.3, 1.0)
#: typical intervals are rounded to this fraction of an octave (to within 2^{1/16}, so σ is
#: within 2^{1/32}, 2.2%, of c/√m), so that pages with nearly the same interval share one
#: compiled call
TYPICAL_STEP = 0.125
DEFAULT_GRID_SIZE = 200
#: a default lattice spans the prior's quantiles from GRID_TAIL to 1 − GRID_TAIL in log Δ
GRID_TAIL = 1e-6
#: ... but at most this many units of log Δ, centred on the prior median
MAX_GRID_SPAN = 30.0
MIN_GRID_SIZE = 8


class Lattice:
    """An equally spaced lattice of u = log Δ and the prior's probabilities on it.

    Attributes
    ----------
    u : ndarray, shape (G,)
        Nodes of log Δ.
    rates : ndarray, shape (G,)
        e^u, in changes per unit of the crawl intervals.
    h : float
        Node spacing in log Δ.
    log_prior : ndarray, shape (G,) or (n_pages, G)
        Log prior density of u at the nodes (Jacobian included, up to a constant).
    """

    def __init__(self, u: np.ndarray, log_prior: np.ndarray):
        self.u = u
        self.rates = np.exp(u)
        self.h = float(u[1] - u[0])
        self.log_prior = log_prior

    def prior_weights(self, n_pages: int) -> np.ndarray:
        """Prior node probabilities, shape (n_pages, G), each row summing to one."""
        lp = np.broadcast_to(self.log_prior, (n_pages, self.u.size))
        w = np.exp(lp - lp.max(axis=1, keepdims=True))
        return np.ascontiguousarray(w / w.sum(axis=1, keepdims=True))


def check_prior(prior, crawl_rate) -> Prior:
    if prior is None:
        return DEFAULT_PRIOR
    if not isinstance(prior, Prior):
        raise TypeError(f"`prior` must be a GammaPrior, LogNormalPrior or BetaPrimePrior; got {type(prior).__name__}")
    if not prior.proper:
        raise ValueError(f"`prior` must be proper (the lattice needs prior probabilities); got {prior!r}")
    if prior.needs_crawl_rate and crawl_rate is None:
        raise ValueError(f"`prior` {prior!r} is a prior on Δ/p: pass `crawl_rate`")
    return prior


def _default_span(prior, crawl_rate):
    dist = prior.distribution(crawl_rate)
    lo = np.log(np.min(dist.ppf(GRID_TAIL)))
    hi = np.log(np.max(dist.ppf(1.0 - GRID_TAIL)))
    if hi - lo > MAX_GRID_SPAN:
        mid = float(np.log(np.median(dist.median())))
        lo, hi = max(lo, mid - MAX_GRID_SPAN / 2), min(hi, mid + MAX_GRID_SPAN / 2)
    return float(lo), float(hi)


def make_lattice(grid, prior: Prior, crawl_rate, n_pages: int) -> Lattice:
    """The lattice from ``grid`` (None, a size, or increasing rates equally spaced in log).

    Raises
    ------
    TypeError
        If ``grid`` is neither None, an integer nor an array of numbers.
    ValueError
        If the size is below 8, or the rates are not > 0, increasing and equally spaced
        in log Δ (to 1e-9 relative).
    """
    if grid is None or (isinstance(grid, numbers.Integral) and not isinstance(grid, bool)):
        size = DEFAULT_GRID_SIZE if grid is None else check_positive_int(grid, name="grid", minimum=MIN_GRID_SIZE)
        lo, hi = _default_span(prior, crawl_rate)
        u = np.linspace(lo, hi, size)
    else:
        if isinstance(grid, (str, bytes, bool)):
            raise TypeError(f"`grid` must be None, an int or an array of rates; got {type(grid).__name__}")
        rates = as_float_array(grid, name="grid", positive=True, ndim=(1,))
        if rates.size < MIN_GRID_SIZE:
            raise ValueError(f"`grid` must hold at least {MIN_GRID_SIZE} rates; got {rates.size}")
        u = np.log(rates)
        steps = np.diff(u)
        if not (steps > 0).all():
            raise ValueError(f"`grid` must be increasing; rate {int(np.argmin(steps)) + 1} is not above the one before")
        if np.max(np.abs(steps - steps.mean())) > 1e-9 * max(1.0, np.abs(u).max()):
            raise ValueError("`grid` must be equally spaced in log Δ (e.g. numpy.geomspace(low, high, size)); "
                             f"log-spacings range from {steps.min():.6g} to {steps.max():.6g}")
        u = u[0] + steps.mean() * np.arange(u.size)
    coef = prior.coefficients(crawl_rate).as_arrays(n_pages)
    if all(np.ptp(v) == 0 for v in coef.values()):
        lp = log_prior_u(u[None, :], {c: v[:1] for c, v in coef.items()})[0]
    else:
        lp = log_prior_u(np.broadcast_to(u, (n_pages, u.size)), coef)
    return Lattice(u, lp)


def check_sigmas(sigma) -> np.ndarray:
    """Volatilities as a float64 array of shape (S,), each >= 0 and finite, distinct.

    Raises
    ------
    TypeError
        If ``sigma`` is not a number or a sequence of numbers.
    ValueError
        If a value is negative, NaN or infinite, or the values repeat.
    """
    if isinstance(sigma, bool):
        raise TypeError("`sigma` must be a number >= 0 or a sequence of them; got bool")
    arr = as_float_array(sigma, name="sigma", nonnegative=True, ndim=(0, 1))
    arr = np.atleast_1d(arr).copy()
    if np.unique(arr).size != arr.size:
        raise ValueError(f"`sigma` values must be distinct; got {arr.tolist()}")
    return arr


def typical_intervals(tau: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Each page's median crawl interval over its crawls in ``mask`` (1.0 for a page without any).

    ``tau`` and ``mask`` of shape (n_pages, k); returns shape (n_pages,).
    """
    med = np.ones(tau.shape[0])
    some = mask.any(axis=1)
    if some.any():
        med[some] = np.nanmedian(np.where(mask[some], tau[some], np.nan), axis=1)
    return med


def rounded_intervals(m: np.ndarray) -> np.ndarray:
    """Typical intervals rounded to :data:`TYPICAL_STEP` of an octave in log2 (nearest)."""
    return np.exp2(np.round(np.log2(m) / TYPICAL_STEP) * TYPICAL_STEP)


def unit_free_groups(m: np.ndarray, sigmas: np.ndarray):
    """Pages grouped by rounded typical interval: a list of (page indices, σ of the group)."""
    r = rounded_intervals(m)
    values, inverse = np.unique(r, return_inverse=True)
    return [(np.flatnonzero(inverse == j), sigmas / np.sqrt(v)) for j, v in enumerate(values)]
