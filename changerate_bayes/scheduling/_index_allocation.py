r"""The stationary schedule of the freshness index policy: one price, one interval per page.

The index. A page whose changes are Poisson with rate Δ, crawled every t, is fresh a
fraction (1 − e^{−Δt})/(Δt) of the time. Under a price λ per crawl, its weighted gain per
unit time w (1 − e^{−Δt})/(Δt) − λ/t has derivative (λ − w ν_Δ(t))/t² in t, with

.. math:: ν_Δ(t) = \frac{1 − e^{−Δt}(1 + Δt)}{Δ} = \int_0^t s\,Δ e^{−Δs}\,ds,           (1)

increasing from 0 to 1/Δ. So the best interval under λ is the t with w ν_Δ(t) = λ: the
Lagrangian condition of Cho & Garcia-Molina's freshness allocation (2003, Section 4),
and the crawl rule of the Whittle index policy w ν_Δ(elapsed) >= λ (Whittle's relaxation
of the budget to a mean with multiplier λ: Avrachenkov & Borkar, "Whittle index policy for
crawling ephemeral content", Section 2; the index in :mod:`changerate_bayes.replay`). With
an uncertain Δ the index is its posterior mean, here over a log-normal posterior
log Δ ~ N(m, s²) by Gauss-Hermite quadrature (nodes ξ_q, weights a_q, Σ a_q = 1):

.. math:: g(t) = w \sum_q a_q\, ν_{Δ_q}(t), \quad Δ_q = e^{m + s ξ_q}                  (2)

(one node Δ = e^m when s = 0: a point mass), increasing in t since every ν is.

The schedule. Page i is crawled every I_i(λ): the root of g_i(t) = λ, held to a range
[t_min, t_max] and a revisit bound M:

.. math:: I_i(λ) = \begin{cases} t_{min} & g_i(t_{min}) >= λ \\
          g_i^{-1}(λ) & g_i(t_{min}) < λ <= g_i(\min(t_{max}, M)) \\
          M & \text{otherwise (no root up to } t_{max}\text{, or beyond } M)\end{cases}   (3)

and the price solves the budget equation

.. math:: S(λ) = \sum_i 1 / I_i(λ) = B.                                              (4)

Each I_i is non-decreasing in λ, so S is non-increasing: one multiplier, as in
water-filling (:func:`~changerate_bayes.scheduling.optimal_crawl_rates`).

The page's root. With u = log t + m and x_q = Δ_q t = e^{u + s ξ_q}, ν_{Δ_q}(t) =
ψ(x_q)/Δ_q and 1/Δ_q = e^{−m} e^{−s ξ_q} give log g_i(t) = log w_i − m_i + K_i(u) with

.. math:: K(u) = \log \sum_q a_q e^{−s ξ_q} ψ(x_q), \quad ψ(x) = 1 − e^{−x}(1 + x),   (5)

so g_i(t) = λ is K_i(u) = c_i = log λ − log w_i + m_i: one function of u per posterior
width s, shifted by the page's constants. K increases from slope 2 (K ≈ 2u + log(Σ a_q
e^{sξ_q}/2) as u → −∞, an upper bound) to slope 0 (K → log Σ a_q e^{−sξ_q}: w E[1/Δ]
is the largest index a page reaches); its derivatives need no further exponential:
K' = Σ a_q e^{−sξ_q} x_q² e^{−x_q} / Σ a_q e^{−sξ_q} ψ(x_q), and K'' likewise with the
factor (2 − x_q). Each root is found by Halley steps in u, safeguarded by a bracket
(bisection when a step leaves it), to a step below 2e-6 (cubic convergence: an error of
order 1e-17 in log t after it) or a bracket of 4 ulp. For small x the sums use the series
ψ(x)/x² = 1/2 − x/3 + x²/8 − ..., and for u <= 0 the sums are scaled by e^{−2u}, so
no term under- or overflows for any Δ > 0.

The price. z = log λ solves log S(e^z) = log B by Newton steps with the exact derivative
dS/dz = −Σ_i (1/I_i) / K_i'(u_i) (interior pages; the implicit derivative of K_i(u_i) = c_i),
inside a bracket that bisection falls back on. After a step δz each root starts from the
last one moved by the inverse function's Taylor series, u + δ − K''δ²/(2K'), δ = δz/K'
(error O(δ³)); a root moved by δ <= 1e-5 is moved by that series alone, and a page at a
bound keeps K there to know without evaluation whether it stays. The first price comes
from the small-t bound of K: with every u = (c − s²/2 + log 2)/2, S(e^z) = e^{−z/2}
Σ_i e^{(m_i + log w_i + s_i²/2 − log 2)/2}. The search ends when S is within 2e-15 of B
(relative), or the bracket is below 4 ulp of z: S jumps there (a page leaving t_max for M when
M > t_max), or the pages whose index is flat at their interval to rounding (Δ I beyond
about 20) are not resolved by any float λ, and share what the others leave of B.

Large collections. With more than 65,536 live pages the search runs first on 16,384 of the
pages (every k-th, the budget scaled by their share), whose price (within about 1e-2 of the
last) starts the search on all, and each root comes from tables instead of Halley steps on K:

- The table of roots: for s <= 1.5 and an index below e^{−1} of its top (ĉ = c − K_top(s) <= −1,
  K_top = log Σ a_q e^{−sξ_q}; about Δ I < 1.3 for a point mass), the root u(s, c) itself, with
  du/dc = 1/K' and d²u/dc² = −K''/K'³ (exact roots of K at s = j/80, ĉ = −62 + k/20: 124 × 1221
  points, 3.6 MB, about 40 ms once per process), interpolated as K is below (degree 5 in s,
  quintic Hermite in c). Below the top u is smooth in c (du/dc from 1/2, where the index grows
  as t², to about 1), and the root returned meets K(u) = c within 3.2e-10 (3.12e-10 on a grid
  of 601 × 6101 points). One interpolation a page, no step on K. At the next prices such a
  root is moved by the inverse's cubic Taylor series, u + u'δ + u''δ²/2 + u'''δ³/6 (u''' the
  interpolant's), for price steps |δ| <= 1e-2 (in c = log λ + b): the remainder u''''δ⁴/24 is
  at most 1.5e-9 in K (|K' u''''| <= 3.6 over the table).
- The table of K: K, K' and K'' (exact) at s = j/40 <= 4 and u = −30 + k/10, |u| <= 30 (165 ×
  601 points, 2.4 MB, about 20 ms once per process), interpolated in s by degree 5 (Lagrange,
  six rows) and in u by quintic Hermite (K, K', K'' at both ends of the cell). For s <= 2 it is
  within 2e-8 of K (1.35e-8 on a grid of 1,600 × 8,200 points, near s = 2; 5e-9 for
  s <= 1.5). The other pages of s <= 2 (index near its top) end their roots on it (Halley
  steps on the interpolant, to a step below 3e-5: an error below 1e-11 in K where K' is not
  small); a page of 2 < s <= 4 starts its root on it (within 2e-7 of K) and ends it on K itself
  (one evaluation; then Taylor moves); a page of s > 4 or a root outside |u| <= 30 is solved
  on K. At the first price such a root starts on the small-t bound and ends at a Halley step
  below 1e-2, and is evaluated again at the next; after it, a root moved by δ/K' <= 1.5e-3 is
  moved by the second-order series (remainder |3K''²/K' − K'''| δ³/6 <= 0.76 δ³ in K, below
  2.6e-9).

So each page's index at the interval returned is within 2e-8 relative of the price,
w E[ν_Δ(I_i)] = λ (1 ± 2e-8) (within 2e-9 for the roots of the table of roots), and its interval
within 2e-8/K' relative of the exact one at that price (K' = d log g/d log t at the root; 0.05
or more for all but nearly flat pages); the budget equation holds to rounding on the intervals
returned, and the price is within about 1e-10 of the exact search's. The kernel also returns
d²S/dz², and the steps on the price are Halley's; once |log S − log B| <= 1e-9 the last
Newton step is not evaluated: the roots are moved by it to first order (δ/K' each, an error
O(δ²), about 1e-18) as the intervals are computed.

Cost. Each evaluation of K is one exponential per node (16 for a log-normal page, 1 for a
point mass; the node loop is branch-free, e^{−x} a polynomial, so it runs in SIMD lanes),
8 more, e^{sξ_q}, per page and price; an interpolation in a table is 72 numbers read and no
exponential (about 50 ns with the bookkeeping). On 10^6 pages (the benchmark
``bench_allocate``, pages of s <= 1.1 whose roots are nearly all in the table of roots; wall
time on 2 cores, quiet): the sample about 3.5 ms; one interpolation a page at the first price
(about 31 ms), then two passes of cubic moves (8-10 and 6-8 ms, no interpolation), then the
intervals with the last step (about 2 ms): about 50 ms of the 75-90 ms of ``allocate_crawls``.
Tiles of 2,048 pages run on all cores above 65,536 pages, their sums added in tile order (the
same result for any number of threads); 9 arrays of N floats (no temporary of N × nodes) and
the tables.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from .._validation import as_float_array

__all__ = ["index_crawl_intervals", "IndexIntervals", "INDEX_NODES"]

#: Gauss-Hermite nodes of the posterior mean of the index over a log-normal posterior.
INDEX_NODES = 16
_XI, _A = np.polynomial.hermite_e.hermegauss(INDEX_NODES)
_A = _A / _A.sum()

_KERNELS: dict = {}


def _kernels() -> dict:
    """The numba kernel, compiled (or loaded from numba's cache) on first call."""
    if not _KERNELS:
        from . import _index_allocation_kernels as k

        _KERNELS["spend"] = k.spend_kernel
        _KERNELS["tiles"] = k.spend_tiles
        _KERNELS["table"] = k.k_table
        _KERNELS["roots"] = k.u_table
        _KERNELS["intervals"] = k.intervals_of_roots
    return _KERNELS


#: The table of K that solves the roots on large collections: s = j h_s (h_s = 0.025, s <= 4),
#: u = −30 + k h_u (h_u = 0.1, |u| <= 30); 165 × 601 triples (K, h_u K', h_u² K''), 2.4 MB.
#: Its interpolant is within 2e-8 of K for s <= 2 (1.35e-8 on a grid of 1,600 × 8,200 points),
#: where the roots end on it; wider pages end theirs on K itself.
_TABLE_HS, _TABLE_U0, _TABLE_HU = 0.025, -30.0, 0.1
_TABLE_NS, _TABLE_NU = 165, 601
#: |interpolant − K| at most, for s <= 2 and |u| <= 30 (tested)
TABLE_ERROR = 2e-8


def _table() -> np.ndarray:
    """The table of K, K' and K'' (exact), built on first use and kept for the process."""
    if "k_table" not in _KERNELS:
        _KERNELS["k_table"] = _kernels()["table"](_XI, _A, _TABLE_HS, _TABLE_NS, _TABLE_U0, _TABLE_HU, _TABLE_NU)
    return _KERNELS["k_table"]


#: The table of the roots of K for s <= 1.5 (:func:`._index_allocation_kernels.u_table`): s = j h_s
#: (h_s = 0.0125, rows to s = 1.5 + 3 h_s), ĉ = c − K_top(s) = −62 + k h_c (h_c = 0.05, ĉ <= −1);
#: 124 × 1221 triples (u, h_c du/dc, h_c² d²u/dc²), 3.6 MB. The roots of its interpolant meet
#: K(u) = c within 3.2e-10 (3.12e-10 on a grid of 601 × 6101 points).
_ROOTS_HS, _ROOTS_C0, _ROOTS_HC = 0.0125, -62.0, 0.05
_ROOTS_NS, _ROOTS_NC = 124, 1221
#: |K(u) − c| at most at a root of the table of roots (tested)
ROOTS_ERROR = 3.2e-10
#: Taylor moves of a root by at most this much in u (log t) after the first price on large
#: collections: the remainder, |3K''²/K' − K'''| δ³/6 <= 0.76 δ³ in K (4.55 at most over s and u),
#: is below 2.6e-9
_TAYLOR_DU = 1.5e-3


def _roots() -> tuple:
    """The table of roots, K's top per row and the grid (h_s, c0, h_c), built on first use and kept."""
    if "u_table" not in _KERNELS:
        tab, top = _kernels()["roots"](_XI, _A, _ROOTS_HS, _ROOTS_NS, _ROOTS_C0, _ROOTS_HC, _ROOTS_NC)
        _KERNELS["u_table"] = (tab, top, np.array([_ROOTS_HS, _ROOTS_C0, _ROOTS_HC]))
    return _KERNELS["u_table"]


#: pages in the sample whose price starts the search on large collections
_SAMPLE = 16384
#: live pages above which the roots are solved on the table of K (from a sample's price)
_TABLE_ABOVE = 4 * _SAMPLE
#: the kernels' state of a page with no root yet (started on the small-t bound)
_COLD = 4
#: the kernels' state of a root ended roughly from the small-t bound (evaluated again)
_ROUGH = 5
#: the kernels' state of an interior root taken from the table of roots
_TABLE_ROOT = 3


def _first_price(m, b, s, live, live_budget) -> float:
    """log λ if every root were on the small-t bound K <= 2u + s²/2 − log 2 (the log-normal's
    mean for Σ a e^{sξ}): S(e^z) = e^{−z/2} Σ e^{(m + log w + s²/2 − log 2)/2}."""
    if not live_budget > 0:
        return 0.0
    half = 0.5 * (m[live] - b[live] + 0.5 * s[live] ** 2 - np.log(2.0))
    top = half.max()
    return float(2.0 * (top + np.log(np.sum(np.exp(half - top))) - np.log(live_budget)))


def _start(u, z, b, s, live) -> None:
    """Each root's start: on the small-t bound, at or below the root."""
    u[:] = np.where(live, 0.5 * (z + b - 0.5 * s * s + np.log(2.0)), 0.0)


def _solver(arrays, inv_cap, table=False, du_max=1e-5):
    """S(e^z), dS/dz and the count of evaluations (and, with ``table``, d²S/dz²), each root
    solved in place; with ``table`` the roots come from the table of roots of :func:`_roots`
    where it holds and K is the interpolant of :func:`_table` elsewhere (exact outside it), and
    a root of K the price moves by at most ``du_max`` is moved by the Taylor series alone."""
    m, s, b, dead, ulo, utop, u, k1, k2, state, k3 = arrays
    if table:
        tab = _table()
        roots = _roots()
        kernels = _kernels()
        tiles = kernels["tiles"]

        def solve(z, shift):
            return tiles(
                z, shift, m, s, b, dead, ulo, utop, inv_cap, _XI, _A, 1.0, u, k1, k2, state,
                tab, _TABLE_HS, _TABLE_U0, _TABLE_HU, du_max, *roots, k3,
            )  # fmt: skip

        return solve
    kernel = _kernels()["spend"]

    def solve(z, shift):
        return kernel(z, shift, m, s, b, dead, ulo, utop, inv_cap, _XI, _A, 1.0, u, k1, k2, state)

    return solve


def _price_search(z, arrays, inv_cap, live_budget, table=False, tol=2e-15, du_max=1e-5, last_step=False):
    """Newton steps on log S(e^z) = log B in a bracket (bisection when a step leaves it), to
    |log S − log B| <= ``tol``. With ``last_step``, a Newton step from |log S − log B| <= 1e-9
    ends the search unevaluated: the roots are to be moved to first order by it (its error and
    theirs O(1e-18)); it is returned (0 otherwise) after z, the bracket, the jump flag and the
    count of steps."""
    solve = _solver(arrays, inv_cap, table, du_max)
    state, dead = arrays[9], arrays[3]
    live = ~dead
    z_lo, z_hi = -np.inf, np.inf  # S(z_lo) > B >= S(z_hi)
    expand = 1.0
    steps = 0
    shift = 0.0
    jump = False
    pending = 0.0
    for steps in range(1, 400):  # noqa: B007 (the count is returned)
        out = solve(z, shift)
        spend, dspend = out[0], out[1]
        phi = (
            np.log(spend) - np.log(live_budget)
            if spend > 0 and live_budget > 0
            else (-np.inf if live_budget > 0 else np.inf)
        )
        if phi > 0:
            z_lo = z
        else:
            z_hi = z
        if abs(phi) <= tol:
            if not (table and (state == _ROUGH).any()):
                break
            shift = 0.0  # the roots ended roughly at the first price: each evaluated again here
            continue
        if z_hi - z_lo <= 8.9e-16 * max(1.0, abs(z)):
            jump = True
            break
        if dspend < 0 and np.isfinite(phi):
            zn = z - phi * spend / dspend
            if last_step and abs(phi) <= 1e-9 and z_lo < zn < z_hi and not (state == _ROUGH).any():
                pending = zn - z
                z = zn
                break
            if len(out) > 3:  # the table's kernel gives d²S/dz² too: a Halley step on log S
                slope = dspend / spend
                den = 1.0 - 0.5 * phi * (out[3] / spend - slope * slope) / (slope * slope)
                if 0.5 < den < 2.0:
                    zn = z - phi / slope / den
        else:  # every live page at a bound: no slope
            if phi > 0 and (state[live] == 2).all():
                break  # the bound M for every page still spends more than B
            if phi < 0 and (state[live] == 1).all():
                break  # every page at t_min spends less than B
            zn = z + (expand if phi > 0 else -expand)
            expand *= 2.0
        if not (z_lo < zn < z_hi):
            if np.isfinite(z_lo) and np.isfinite(z_hi):
                zn = 0.5 * (z_lo + z_hi)
            else:
                zn = z + (expand if phi > 0 else -expand)
                expand *= 2.0
        shift = zn - z  # each root starts from its last one moved by δz/K' (first order)
        z = zn
    return z, z_lo, z_hi, jump, steps, pending


def _inverse(u, m, state, dead, cap, t_min):
    """1/I per page from the roots u (1/t_min and 1/M at the bounds, 1/M for dead pages)."""
    inv = np.exp(m - u)
    inv[state == 1] = 1.0 / t_min
    inv[(state == 2) | dead] = 1.0 / cap
    return inv


class IndexIntervals(NamedTuple):
    """The stationary schedule of the index policy (see :func:`index_crawl_intervals`)."""

    #: I_i, shape (N,), in the time unit of the rates; M for a page held at the bound.
    intervals: np.ndarray
    #: λ, the price per crawl (weight × time unit).
    price: float
    #: Newton steps on the price (kernel calls).
    steps: int


def _check_scalar(value, name, *, low=0.0, allow_inf=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a number; got {type(value).__name__}")
    value = float(value)
    if not (value > low and (allow_inf or np.isfinite(value))) or np.isnan(value):
        raise ValueError(f"`{name}` must be > {low:g}{'' if allow_inf else ' and finite'}; got {value}")
    return value


def _check_index_args(rate, log_sd, weights, budget, max_interval, interval_range):
    """The checked arguments of :func:`index_crawl_intervals` (and of the host-capped
    version): (rate, log_sd, weights, budget, max_interval, t_min, t_max); raises
    ValueError/TypeError naming the argument."""
    d = as_float_array(rate, name="rate", nonnegative=True, ndim=(1,), allow_empty=True)
    s = as_float_array(log_sd, name="log_sd", nonnegative=True, ndim=(1,), allow_empty=True)
    if s.shape != d.shape:
        raise ValueError(f"`log_sd` must have the shape of `rate` {d.shape}; got {s.shape}")
    if weights is None:
        w = np.ones(d.size)
    else:
        w = as_float_array(weights, name="weights", nonnegative=True, ndim=(1,), allow_empty=True)
        if w.shape != d.shape:
            raise ValueError(f"`weights` must have the shape of `rate` {d.shape}; got {w.shape}")
    budget = _check_scalar(budget, "budget")
    cap = _check_scalar(max_interval, "max_interval", allow_inf=True)
    try:
        t_min, t_max = (float(v) for v in interval_range)
    except (TypeError, ValueError):
        raise TypeError(f"`interval_range` must be two numbers (t_min, t_max); got {interval_range!r}") from None
    if not (0.0 < t_min < t_max and np.isfinite(t_min)):
        raise ValueError(f"`interval_range` must satisfy 0 < t_min < t_max (t_min finite); got {interval_range!r}")
    return d, s, w, budget, cap, t_min, t_max


def index_crawl_intervals(
    rate, log_sd, budget, *, weights=None, max_interval=np.inf, interval_range=(1e-4, 1e5)
) -> IndexIntervals:
    r"""Each page's crawl interval under the freshness index policy's price that spends ``budget``.

    Page i's posterior is log Δ_i ~ N(log ``rate[i]``, ``log_sd[i]``²) (a point mass at
    ``rate[i]`` when ``log_sd[i]`` = 0); its index is the posterior mean of the Poisson
    freshness index, w_i E[(1 − e^{−Δt}(1 + Δt))/Δ] (16-node Gauss-Hermite quadrature),
    and it is crawled every I_i, where its index reaches the price λ (eq. 3 of the module
    notes), with λ such that Σ_i 1/I_i = ``budget`` (eq. 4). Vectorised over pages: one
    Newton search on λ, each step solving every page's root (compiled; see the module notes).

    Parameters
    ----------
    rate : array_like of float, shape (N,)
        e^m_i >= 0, the posterior median of each page's change rate (per time unit); 0 for a
        page that never changes (its index is 0).
    log_sd : array_like of float, shape (N,)
        s_i >= 0, the posterior's standard deviation of log Δ_i.
    budget : float
        B > 0, crawls per time unit over all pages.
    weights : array_like of float, shape (N,), optional
        w_i >= 0 (default 1). A page with w_i = 0 or rate 0 gets ``max_interval``.
    max_interval : float, default inf
        M > 0: no interval exceeds it; a page whose index stays below the price up to M
        (or up to ``interval_range[1]``) gets M.
    interval_range : (float, float), default (1e-4, 1e5)
        (t_min, t_max), 0 < t_min < t_max <= inf, in the time unit (days for rates per
        day): a page whose index reaches the price before t_min is crawled every t_min, one
        whose index has not reached it by t_max gets M.

    Returns
    -------
    IndexIntervals
        ``intervals`` (shape (N,), in the time unit; finite unless M is infinite),
        ``price`` (λ) and ``steps`` (Newton steps on λ). Σ 1/I_i = B to within 1e-13
        relative, unless no price spends exactly B: every live page at t_min with B beyond
        their spend (``price`` is then the last one tried: any lower price gives the same
        intervals), every page at M with N/M > B, or a jump of S where a page's root passes
        t_max < M (``price`` is the jump, the intervals those just above it, spending less
        than B). Where λ is resolved to its last bit, the pages whose index is nearly flat
        at their interval (Δ I beyond about 20, where dI/dλ is huge) share what the other
        pages leave of B in proportion to their spend on either side of that bit. If no page has a
        positive index (every rate or weight 0), the index is taken as t itself for every
        page: each interval (and the price) is N/B.

    Raises
    ------
    ValueError
        If ``rate`` or ``log_sd`` is negative or not finite, the shapes differ, ``weights``
        is negative, not finite or of another shape, ``budget`` <= 0 or not finite,
        ``max_interval`` <= 0, or ``interval_range`` is not 0 < t_min < t_max.
    TypeError
        For non-numeric input.

    Notes
    -----
    The derivation (the index, the log-space root of each page and the price search) is
    in the module notes of :mod:`changerate_bayes.scheduling._index_allocation`. Up to
    65,536 live pages the result is exact up to rounding (each interval to about 1e-13
    relative). Above, each root comes from tables built once per process (of the roots
    themselves for ``log_sd`` <= 1.5 and an index below e^{−1} of its largest value, of the
    index elsewhere): each page's index at its interval is within 2e-8 relative of the
    price, w_i E[ν_Δ(I_i)] = λ (1 ± 2e-8), so each interval is within 2e-8/K' relative of the
    exact one, K' = d log(index)/d log t at it (0.05 or more for all but nearly flat
    pages); pages of ``log_sd`` > 2 end their roots on the index itself. It is the allocation
    :func:`changerate_bayes.crawllog.allocate_crawls` makes with ``policy="index_mean"``.

    References
    ----------
    J. Cho and H. Garcia-Molina, "Effective page refresh policies for web crawlers", ACM
    TODS 28(4), 2003, Section 4 (the Lagrangian condition w ν(I) = λ). K. Avrachenkov and
    V. S. Borkar, "Whittle index policy for crawling ephemeral content", Section 2 (the
    price of a crawl as the multiplier of the relaxed budget). P. Whittle, "Restless
    bandits: activity allocation in a changing world", J. Appl. Prob. 25A, 1988.

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes.scheduling import index_crawl_intervals
    >>> res = index_crawl_intervals([1.0, 1.0], [0.0, 0.0], 4.0)  # equal pages: round robin
    >>> res.intervals.round(12).tolist()
    [0.5, 0.5]
    >>> round(res.price, 12)  # ν_1(0.5) = 1 − e^{−1/2}(1 + 1/2)
    0.090204010431
    >>> res = index_crawl_intervals([0.5, 2.0], [0.0, 1.0], 3.0)
    >>> float(round(np.sum(1 / res.intervals), 12))
    3.0
    """
    d, s, w, budget, cap, t_min, t_max = _check_index_args(rate, log_sd, weights, budget, max_interval, interval_range)
    n = d.size
    if n == 0:
        return IndexIntervals(np.zeros(0), float("nan"), 0)
    dead = d == 0.0 if weights is None else (d == 0.0) | (w == 0.0)
    n_dead = int(dead.sum())
    if n_dead == n:  # no page gains from a crawl: the index is t for every page, round robin
        return IndexIntervals(np.full(n, n / budget), n / budget, 0)
    with np.errstate(divide="ignore", invalid="ignore"):  # (a page of rate 0 and weight 0: dead, never read)
        m = np.log(d)
        b = m if weights is None else m - np.log(w)  # c_i = log λ + b_i (log 1 = 0; read only)
    inv_cap = 1.0 / cap
    live_budget = budget - n_dead * inv_cap
    ulo = float(np.log(t_min))  # the bounds of u − m = log t
    utop = float(min(np.log(cap), np.log(t_max)))

    live = ~dead
    k1 = np.zeros(n)
    k2 = np.zeros(n)
    state = np.zeros(n, dtype=np.int8)
    u = np.zeros(n)
    k3 = np.zeros(n if n - n_dead > _TABLE_ABOVE else 0)
    arrays = (m, s, b, dead, ulo, utop, u, k1, k2, state, k3)
    n_live = n - n_dead
    large = n_live > _TABLE_ABOVE
    if large:  # the price of a sample of the pages first, then every root on the table of K
        state.fill(_COLD)
        if n_dead:
            state[dead] = 0
        step = n_live // _SAMPLE
        every = np.flatnonzero(live)[::step] if n_dead else np.arange(0, n, step)
        sample = tuple(x[every].copy() if isinstance(x, np.ndarray) else x for x in arrays)
        share = live_budget * every.size / n_live
        z = _first_price(m[every], b[every], s[every], live[every], share)
        z = _price_search(z, sample, inv_cap, share, table=True, tol=1e-4, du_max=2e-2)[0]
    else:
        z = _first_price(m, b, s, live, live_budget)
        _start(u, z, b, s, live)
    du_max = _TAYLOR_DU if large else 1e-5
    z, z_lo, z_hi, jump, steps, pending = _price_search(
        z, arrays, inv_cap, live_budget, table=large, du_max=du_max, last_step=large
    )
    solve = _solver(arrays, inv_cap, table=large, du_max=du_max)
    if jump:
        # λ is resolved to its last bit. Between the two ends of the bracket only pages whose index
        # is flat at their interval to rounding move (dI/dλ = I/(λ K'), Δ I beyond about 20): their
        # root is not resolved by any float λ. They share what the others leave of B, in proportion
        # to their spend at the lower end; at a true jump (a root passing t_max < M) the intervals
        # just above it are kept.
        solve(z_lo, z_lo - z)
        inv_lo, state_lo = _inverse(u, m, state, dead, cap, t_min), state.copy()
        solve(z_hi, z_hi - z_lo)
        inv = _inverse(u, m, state, dead, cap, t_min)
        z = z_hi
        moved = ~np.isclose(inv, inv_lo, rtol=1e-12, atol=0.0)
        if not moved.any():  # no root is left unresolved: the interior pages share the rounding of B
            moved = ((state == 0) | (state == _TABLE_ROOT)) & ~dead
        true_jump = t_max < cap and bool(((state == 2) & (state_lo != 2)).any())
        rest = budget - inv[~moved].sum()
        if moved.any() and not true_jump and rest > 0:
            inv[moved] = np.maximum(inv_lo[moved] * (rest / inv_lo[moved].sum()), inv_cap)
        with np.errstate(divide="ignore"):  # M = inf: 1/I = 0
            return IndexIntervals(1.0 / inv, float(np.exp(z)), steps)
    if large:  # (on all cores, with the last step's first-order move)
        intervals = _kernels()["intervals"](u, m, k1, state, dead, pending, t_min, min(cap, t_max), cap)
        return IndexIntervals(intervals, float(np.exp(z)), steps)
    intervals = np.exp(np.subtract(u, m, out=k1), out=k1)  # (k1 no longer needed)
    intervals[state == 1] = t_min
    intervals[(state == 2) | dead] = cap
    return IndexIntervals(intervals, float(np.exp(z)), steps)
