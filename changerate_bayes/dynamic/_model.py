"""Settings shared by the streaming filter and the batch posterior: lattice, prior, volatilities."""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import as_float_array, check_positive_int
from ..bayes import LogNormalPrior, Prior, log_prior_u

__all__ = [
    "DEFAULT_PRIOR",
    "DEFAULT_SIGMAS",
    "DEFAULT_GRID_SIZE",
    "UNIT_FREE_SIGMAS",
    "Lattice",
    "make_lattice",
    "check_sigmas",
    "typical_intervals",
    "rounded_intervals",
    "page_chunks",
]

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
#: node-updates (pages × volatilities × crawls × nodes) per call of a compiled kernel
#: (about half a second of CPU on 200 nodes)
CALL_WORK = 100_000_000
#: ... but at least this many pages per thread in a call (4 blocks of 64) ...
PAGES_PER_THREAD_CALL = 256
#: ... and at most this many pages in a call
MAX_CALL_PAGES = 8192
#: a default lattice must hold at least this much of the prior's mass (on every page)
MIN_GRID_MASS = 0.5
#: the rates (per time unit) a default lattice may span: float64 holds them, their
#: products with the intervals and the likelihood's e^{−Δτ} with room to spare
RATE_RANGE = (1e-300, 1e300)


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
    """(lo, hi) in log Δ of the default lattice: the prior's quantiles GRID_TAIL and
    1 − GRID_TAIL (over all pages), cut to MAX_GRID_SPAN units centred on the median and
    to the rates float64 represents with room (RATE_RANGE).

    Raises ValueError when that window holds less than MIN_GRID_MASS of some page's prior
    mass: the prior spreads over more of log Δ than a default lattice can hold (e.g.
    a GammaPrior of shape 1e-3, whose log Δ has a left tail of about 1/shape units).
    """
    dist = prior.distribution(crawl_rate)
    u_min, u_max = np.log(RATE_RANGE)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        lo = float(np.log(np.min(dist.ppf(GRID_TAIL))))
        hi = float(np.log(np.max(dist.ppf(1.0 - GRID_TAIL))))
        mid = float(np.log(np.median(dist.median())))
    if not (np.isfinite(mid) and u_min <= mid <= u_max):
        raise ValueError(
            f"`prior` {prior!r} has its median rate {np.exp(mid):.3g} outside the rates a default "
            f"lattice can hold [{RATE_RANGE[0]:g}, {RATE_RANGE[1]:g}] per time unit: rescale the "
            "time unit or the prior, or pass `grid`"
        )
    lo, hi = max(lo, u_min), min(hi, u_max)
    if hi - lo > MAX_GRID_SPAN:
        lo, hi = max(lo, mid - MAX_GRID_SPAN / 2), min(hi, mid + MAX_GRID_SPAN / 2)
    mass = np.atleast_1d(dist.cdf(np.exp(hi)) - dist.cdf(np.exp(lo)))
    if not np.all(mass >= MIN_GRID_MASS):
        raise ValueError(
            f"`prior` {prior!r} spreads over more of log Δ than a default lattice holds: the {hi - lo:.3g} units of "
            f"log Δ around its median, rates [{np.exp(lo):.3g}, {np.exp(hi):.3g}], hold only "
            f"{float(np.nanmin(mass)):.2g} of its mass (at least {MIN_GRID_MASS:g} needed); pass `grid` with the "
            "rates your pages can have, e.g. numpy.geomspace(1e-6, 1e2, 200), or a prior with less spread"
        )
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
            raise ValueError(
                "`grid` must be equally spaced in log Δ (e.g. numpy.geomspace(low, high, size)); "
                f"log-spacings range from {steps.min():.6g} to {steps.max():.6g}"
            )
        u = u[0] + steps.mean() * np.arange(u.size)
    coef = prior.coefficients(crawl_rate).as_arrays(n_pages)
    if all(np.ptp(v) == 0 for v in coef.values()):
        lp = log_prior_u(u[None, :], {c: v[:1] for c, v in coef.items()})[0]
    else:
        lp = log_prior_u(np.broadcast_to(u, (n_pages, u.size)), coef)
    return Lattice(u, lp)


def page_chunks(n_pages: int, work_per_page: int, *, max_pages: int | None = MAX_CALL_PAGES):
    """Ranges (a, b) of pages for one call of a compiled kernel each.

    Between calls control returns to Python, which then acts on pending signals (Ctrl-C),
    so a call is kept to about CALL_WORK node-updates (``work_per_page`` per page, e.g.
    volatilities × crawls × nodes; the kernel's width adds a factor bounded by the
    lattice), but at least PAGES_PER_THREAD_CALL pages per thread (to keep the threads busy)
    and at most ``max_pages`` pages (None: no cap; the default bounds the working set of
    per-crawl outputs).
    """
    import numba  # numba: heavy; the package imports without it

    least = PAGES_PER_THREAD_CALL * numba.get_num_threads()
    size = max(least, CALL_WORK // max(1, work_per_page))
    if max_pages is not None:
        size = min(max_pages, size)
    size = int(size)
    return [(a, min(n_pages, a + size)) for a in range(0, n_pages, size)]


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
