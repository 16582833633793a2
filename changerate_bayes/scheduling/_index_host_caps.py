r"""The stationary schedule of the freshness index under a budget and per-host caps.

The problem. Page i on host h is crawled every I_i; its index g_i(t) = w_i ν̄_i(t) (the
posterior mean of ν_Δ(t) = (1 − e^{−Δt}(1 + Δt))/Δ, eq. 2 of
:mod:`changerate_bayes.scheduling._index_allocation`) increases in t. With a price λ for
the budget Σ_i 1/I_i <= B and a price η_h >= 0 for each cap Σ_{i∈h} 1/I_i <= c_h
(Kolobov et al. 2019: a crawler that waits d seconds between fetches from a host has
c_h = 86,400/d fetches per day), the conditions are

.. math:: g_i(I_i) = λ + η_h \quad (i ∈ h), \qquad η_h (c_h − S_h) = 0,
          \qquad λ (B − Σ_h S_h) = 0,                                            (1)

with S_h(μ) = Σ_{i∈h} 1/I_i(μ) the spend of host h when its pages are priced at μ
(I_i(μ) the root of g_i = μ, held to [t_min, min(t_max, M)] as in eq. 3 there). Page i
is then the uncapped problem's page with its weight divided by 1 + η_h/λ: log w_i is
replaced by log w_i − log(1 + η_h/λ), i.e. its shift b_i by b_i + log(1 + η_h/λ).

Each S_h is non-increasing in μ (every I_i is non-decreasing). So host h is at its cap
exactly when S_h(λ) > c_h, its price μ_h = λ + η_h then solving S_h(μ_h) = c_h, and the
budget equation reads G(λ) = Σ_h min(c_h, S_h(λ)) = B.

Saturate and recurse. Let K be a set of hosts held at their caps, and λ_K the price that
spends B − Σ_{h∈K} c_h on the other hosts' pages (the allocation without caps,
:func:`~changerate_bayes.scheduling.index_crawl_intervals`). If every host of K is at its
cap at the solution (λ*, η*) of (1), then λ_K >= λ*: the hosts outside K spend at the
solution Σ_{h∉K} S_h(λ* + η_h*) = B − Σ_{h∈K} c_h (or less when no host has room, where
λ* = 0) <= Σ_{h∉K} S_h(λ*), and their spend is non-increasing in the price. So a host
h ∉ K with S_h(λ_K) > c_h has S_h(λ*) >= S_h(λ_K) > c_h: it cannot be free at the
solution, and is at its cap there too. Starting from K = ∅ and adding every host over its
cap, round after round, K stays within the hosts at cap at the solution; the rounds end
when no free host exceeds its cap, at most one round per host (two or three in practice).
There, every free host spends S_h(λ_K) <= c_h at the common price, and every host of K,
over its cap at some earlier λ_j >= λ_K, has μ_h = S_h^{-1}(c_h) >= λ_j >= λ_K: η_h =
μ_h − λ_K >= 0, so (1) holds.

The prices. The first round is the allocation without caps
(:func:`~changerate_bayes.scheduling.index_crawl_intervals`: where no cap binds, that is the
answer, unchanged). The later rounds go on from its roots, with safeguarded Newton steps on
every price at once: z = log λ for the free pages (one call of the compiled kernel of
:mod:`~changerate_bayes.scheduling._index_allocation` per step, each root moved by the
step's Taylor series as in the search without caps) and z_h = log μ_h for every host of K
(one more kernel call per step over the pages of the hosts not yet converged, each page
with its own shift b_i + z_h, since the kernel solves K_i(u) = z + b_i, starting from its
last root), the spend and its derivative dS_h/dz_h = −Σ_{i∈h} (1/I_i)/K_i' per host by
``np.bincount``. Each price keeps its own bracket (a host joins K at the free price, where it
spends more than its cap: the lower end of μ_h; the free price then falls: its old value is
the upper end), with bisection when a step leaves it, until |log S − log target| <= 2e-15
or the bracket is 4 ulp. When every price has converged, the free hosts over their caps
join K and the steps go on.

The revisit bound. As without caps, no interval exceeds M: a page whose root is beyond M
gets M, and the pages off the bound are scaled to spend what the bound leaves (in each
host held at its cap: c_h; among the free hosts: B − Σ_{h∈K} c_h). A host whose pages at
the bound alone would spend at least its cap (n_h/M >= c_h) cannot keep the bound: the cap
wins, and its n_h pages are crawled every n_h/c_h >= M (held at the cap from the start,
with price +inf).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._host_caps import check_host_budgets, check_hosts
from ._index_allocation import INDEX_NODES, _check_index_args, index_crawl_intervals

__all__ = ["capped_index_intervals", "CappedIndexIntervals", "revisit_bound_rates", "solve_index_capped"]

_XI, _A = np.polynomial.hermite_e.hermegauss(INDEX_NODES)
_A = _A / _A.sum()
#: pages whose interval is within this (relative) of M are at the revisit bound
_AT_BOUND = 1.0 - 1e-12


def _spend_kernel():
    """The kernel of the index allocation (compiled, or loaded from numba's cache, on first use)."""
    from ._index_allocation_kernels import spend_kernel

    return spend_kernel


class CappedIndexIntervals(NamedTuple):
    """The stationary schedule of the index policy under per-host caps (see :func:`capped_index_intervals`)."""

    #: I_i, shape (N,), in the time unit of the rates.
    intervals: np.ndarray
    #: λ, the price per crawl of the budget (0 if every host is held at its cap).
    price: float
    #: η_h >= 0, shape (H,): host h's pages are priced at λ + η_h (0 unless at its cap; inf
    #: for a host whose cap is below its pages' crawls at the revisit bound).
    host_prices: np.ndarray
    #: shape (H,): whether host h is held at its cap.
    at_cap: np.ndarray
    #: shape (H,): the distinct host labels, in the order of ``host_prices`` and ``at_cap``.
    hosts: np.ndarray
    #: free-host rounds (allocations without caps) plus Newton steps on the hosts' prices.
    steps: int
    #: 1/I_i, shape (N,): crawls per unit time, as computed (not the reciprocal of the
    #: reciprocal: where no cap binds, bit for bit those of :func:`index_crawl_intervals`
    #: followed by :func:`revisit_bound_rates`).
    rates: np.ndarray = np.zeros(0)


def revisit_bound_rates(rates, bound, budget, cap):
    """Pages at the revisit bound M = ``cap`` crawl at 1/M; the others are scaled to spend the rest of ``budget``.

    A page whose index saturates below the price drops to the bound at one price, so the
    spend jumps there: the rest of the budget goes to the other pages in proportion to
    their rates (if every page is at the bound, the budget is shared equally).

    Parameters
    ----------
    rates : ndarray of float64, shape (N,)
        Crawl rates per unit time, the pages at the bound already at 1/M.
    bound : ndarray of bool, shape (N,)
        The pages at the bound.
    budget : float
        B, crawls per unit time over all pages.
    cap : float
        M, the longest interval (in the unit of time of ``budget``).

    Returns
    -------
    ndarray of float64, shape (N,)
        A new array, or ``rates`` itself when the bound leaves nothing to share.

    Examples
    --------
    >>> revisit_bound_rates(np.array([0.25, 1.0, 2.0]), np.array([True, False, False]), 4.0, 4.0).tolist()
    [0.25, 1.25, 2.5]
    """
    left, rest = budget - bound.sum() / cap, rates[~bound].sum()
    if rest > 0 and left > 0:
        return np.where(bound, rates, rates * (left / rest))
    if rest == 0:
        return np.full(rates.size, budget / rates.size)
    return rates


def _free_round(d, s, w, idx, left, cap, interval_range):
    """Rates of the pages ``idx`` sharing ``left`` at one price (the allocation without caps)."""
    found = index_crawl_intervals(d[idx], s[idx], left, weights=w[idx], max_interval=cap, interval_range=interval_range)
    with np.errstate(divide="ignore"):
        rates = 1.0 / found.intervals
    bound = found.intervals >= cap * _AT_BOUND
    return revisit_bound_rates(rates, bound, left, cap), found


class _Pages:
    """The per-page arrays of the kernel (``spend_kernel``) over the pages searched."""

    def __init__(self, d, s, w, u0, cap, interval_range):
        t_min, t_max = interval_range
        self.dead = (d == 0.0) | (w == 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):  # dead pages: replaced below
            m, b0 = np.log(d), np.log(d) - np.log(w)
        self.m = np.where(self.dead, 0.0, m)
        self.b0 = np.where(self.dead, 0.0, b0)
        self.s = np.ascontiguousarray(s)
        self.ulo = float(np.log(t_min))  # the bounds of u − m = log t
        self.utop = float(min(np.log(cap), np.log(t_max)))
        self.u = np.where(self.dead, 0.0, u0)
        self.k1 = np.zeros(d.size)
        self.k2 = np.zeros(d.size)
        self.state = np.zeros(d.size, dtype=np.int8)
        self.inv_cap, self.t_min = 1.0 / cap, t_min

    def solve(self, z, shift, b, skip):
        """Every page not skipped solved at the log price z + b_i (last roots moved by ``shift``)."""
        return _spend_kernel()(
            z,
            shift,
            self.m,
            self.s,
            b,
            skip,
            self.ulo,
            self.utop,
            self.inv_cap,
            _XI,
            _A,
            1.0,
            self.u,
            self.k1,
            self.k2,
            self.state,
        )

    def rates(self, pages=None):
        """1/I of every page (or of ``pages``) at its last root (1/t_min, 1/M at the bounds and for dead pages)."""
        if pages is None:
            pages = slice(None)
        inv = np.exp(self.m[pages] - self.u[pages])
        state = self.state[pages]
        inv[state == 1] = 1.0 / self.t_min
        inv[(state == 2) | self.dead[pages]] = self.inv_cap
        return inv


def _newton(z, phi, spend, dspend, lo, hi, expand):
    """One safeguarded Newton step on log S(e^z) = log target per group (arrays): the new z and expand."""
    over = phi > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        newton = z - phi * spend / dspend
    blind = ~((dspend < 0) & np.isfinite(phi))  # every page at a bound: no slope
    zn = np.where(blind, z + np.where(over, expand, -expand), newton)
    expand = np.where(blind, 2.0 * expand, expand)
    outside = ~((lo < zn) & (zn < hi))
    both = np.isfinite(lo) & np.isfinite(hi)
    with np.errstate(invalid="ignore"):  # -inf + inf where a bracket is open (not taken)
        zn = np.where(outside & both, 0.5 * (lo + hi), zn)
    zn = np.where(outside & ~both, z + np.where(over, expand, -expand), zn)
    expand = np.where(outside & ~both, 2.0 * expand, expand)
    return zn, expand


def _converged(phi, z, lo, hi):
    return (np.abs(phi) <= 2e-15) | (hi - lo <= 8.9e-16 * np.maximum(1.0, np.abs(z)))


def _search(pg, hc, caps, held, over, left, z_free):
    """The free pages' log price and every held host's, from the first round's roots.

    ``pg`` (:class:`_Pages`) holds the pages of the hosts not held from the start, ``hc`` their
    hosts; ``held`` the hosts held before the first round, ``over`` those over their caps
    after it, at the log price ``z_free``. Newton steps on every price at once (each step: one
    kernel call on the free pages at their common price, moved by the step's Taylor series, and
    one on the pages of the held hosts not yet converged, each at its host's price); when all
    have converged, the free hosts over their caps join the held ones (at the free price, their
    lower end) and the steps go on, until none is over. Returns (log λ, log μ (H,), held, steps).
    """
    n_hosts = caps.size
    inv_cap = pg.inv_cap
    live = ~pg.dead
    n_dead = np.bincount(hc, weights=pg.dead, minlength=n_hosts)
    z_host = np.zeros(n_hosts)
    lo_h, hi_h = np.full(n_hosts, -np.inf), np.full(n_hosts, np.inf)
    exp_h = np.ones(n_hosts)
    todo_h = np.zeros(n_hosts, dtype=bool)
    lo_f, hi_f, exp_f = -np.inf, np.inf, np.ones(1)
    shift = 0.0
    steps = 0
    known = None  # the free pages' spend and slope at z_free, when their roots are known
    for steps in range(1, 1000):  # noqa: B007 (the count is returned)
        if over is not None:  # hosts join at the free price, where they spend more than their caps
            held = held | over
            z_host[over], lo_h[over], hi_h[over] = z_free, z_free, np.inf
            todo_h |= over
            left -= caps[over].sum()
            lo_f, hi_f, exp_f = -np.inf, z_free, np.ones(1)  # the free price falls
            shift, over = 0.0, None
            page_held = held[hc]
            free_live = live & ~page_held
            target_f = left - np.sum(pg.dead & ~page_held) * inv_cap
            todo_f = bool(free_live.any())
        if todo_f:
            if known is None:
                s_f, ds_f, _ = pg.solve(z_free, shift, pg.b0, ~free_live)
            else:  # the pages left free keep their roots: no new solve at the same price
                (s_f, ds_f), known = known, None
            phi_f = np.log(s_f) - np.log(target_f) if s_f > 0 else -np.inf
            if phi_f > 0:
                lo_f = z_free
            else:
                hi_f = z_free
            todo_f = not bool(_converged(np.array([phi_f]), np.array([z_free]), np.array([lo_f]), np.array([hi_f]))[0])
        if todo_h.any():
            skip = pg.dead | ~todo_h[hc]
            pg.solve(0.0, 0.0, pg.b0 + z_host[hc], skip)
            on = np.flatnonzero(~skip)  # the live pages of the hosts searched
            inv = pg.rates(on)
            k1, hon = pg.k1[on], hc[on]
            spend_h = np.bincount(hon, weights=inv, minlength=n_hosts)
            slope = np.where((pg.state[on] == 0) & (k1 > 0), -inv / np.where(k1 > 0, k1, 1.0), 0.0)
            dspend_h = np.bincount(hon, weights=slope, minlength=n_hosts)
            with np.errstate(divide="ignore"):
                phi_h = np.log(spend_h) - np.log(caps - n_dead * inv_cap)
            lo_h = np.where(todo_h & (phi_h > 0), z_host, lo_h)
            hi_h = np.where(todo_h & ~(phi_h > 0), z_host, hi_h)
            todo_h &= ~_converged(phi_h, z_host, lo_h, hi_h)
            zn, exp_h = _newton(z_host, phi_h, spend_h, dspend_h, lo_h, hi_h, exp_h)
            z_host = np.where(todo_h, zn, z_host)
        if todo_f:
            zn, exp_f = _newton(
                np.array([z_free]),
                np.array([phi_f]),
                np.array([s_f]),
                np.array([ds_f]),
                np.array([lo_f]),
                np.array([hi_f]),
                exp_f,
            )
            shift = float(zn[0]) - z_free
            z_free = float(zn[0])
        if todo_f or todo_h.any():
            continue
        # every price converged: the free hosts over their caps join the held ones
        inv = pg.rates()
        spend = np.bincount(hc, weights=np.where(page_held, 0.0, inv), minlength=n_hosts)
        over = (spend > caps) & ~held
        if not over.any():
            break
        stay = free_live & ~over[hc]  # the free pages after the join, at their roots
        k1 = np.where(pg.k1 > 0, pg.k1, 1.0)
        slope = np.where(stay & (pg.state == 0) & (pg.k1 > 0), -inv / k1, 0.0)
        known = (float(inv[stay].sum()), float(slope.sum()))
    return z_free, z_host, held, left, steps


def solve_index_capped(d, s, w, codes, caps, budget, cap, interval_range):
    """Rates (N,), λ, η (H,), at cap (H,) and steps of the index allocation under caps.

    Validated input: ``d`` (medians, >= 0), ``s`` (log sd), ``w`` (weights), float64 of
    shape (N,), N > 0; ``codes`` and ``caps`` as :func:`~._host_caps.check_hosts` and
    :func:`~._host_caps.check_host_budgets` give them; ``cap`` M; ``interval_range``
    (t_min, t_max). Where no cap binds the rates are bit for bit those of one call of
    :func:`index_crawl_intervals` followed by :func:`revisit_bound_rates`.
    """
    n_hosts = caps.size
    inv_cap = 1.0 / cap
    count = np.bincount(codes, minlength=n_hosts).astype(np.float64)
    tight = count * inv_cap >= caps  # the cap is below the pages' crawls at the bound: equal split
    held = tight.copy()
    log_mu = np.where(tight, np.inf, np.nan)
    rates = np.where(tight[codes], (caps / count)[codes], 0.0)
    price, steps = 0.0, 0
    idx = np.flatnonzero(~tight[codes])
    if idx.size:
        left = budget - caps[tight].sum()
        r, found = _free_round(d, s, w, idx, left, cap, interval_range)
        steps = found.steps
        hc = codes[idx]
        over = (np.bincount(hc, weights=r, minlength=n_hosts) > caps) & ~held
        if not over.any():
            rates[idx] = r
            price = found.price
        else:
            with np.errstate(divide="ignore"):
                u0 = np.log(found.intervals) + np.log(d[idx])
            pg = _Pages(d[idx], s[idx], w[idx], u0, cap, interval_range)
            z_free, z_host, held, left, k = _search(pg, hc, caps, held, over, left, float(np.log(found.price)))
            steps += k
            r = pg.rates()
            bound = (pg.state == 2) | pg.dead
            page_held = held[hc]
            # the revisit bound leaves the free pages what the pages at M do not spend of theirs
            free = ~page_held
            if free.any():
                r[free] = revisit_bound_rates(r[free], bound[free], left, cap)
                price = float(np.exp(z_free)) if (free & ~pg.dead).any() else 0.0
            # and each host at its cap c_h − (its pages at M)/M (up to rounding, or across a jump)
            left_h = caps - np.bincount(hc, weights=bound & page_held, minlength=n_hosts) * inv_cap
            rest_h = np.bincount(hc, weights=np.where(bound | free, 0.0, r), minlength=n_hosts)
            scale = np.where(rest_h > 0, left_h / np.where(rest_h > 0, rest_h, 1.0), 1.0)
            r = np.where(page_held & ~bound, r * scale[hc], r)
            flat = page_held & (rest_h == 0)[hc]  # every page at the bound below the cap: equal split
            r = np.where(flat, (caps / count)[hc], r)
            rates[idx] = r
            searched = held & ~tight
            log_mu[searched] = z_host[searched]
    # a host over its cap by rounding (the scaling above, a price resolved to its last bit) is
    # brought back to it: the cap is a hard limit
    spend = np.bincount(codes, weights=rates, minlength=n_hosts)
    with np.errstate(divide="ignore", invalid="ignore"):
        rates = rates * np.minimum(1.0, caps / spend)[codes]
    with np.errstate(over="ignore", invalid="ignore"):
        eta = np.where(held, np.exp(log_mu) - price, 0.0)
    eta = np.where(held & np.isnan(eta), np.inf, np.maximum(eta, 0.0))
    return rates, price, eta, held, steps


def capped_index_intervals(
    rate,
    log_sd,
    budget,
    *,
    hosts,
    host_budgets,
    weights=None,
    max_interval=np.inf,
    interval_range=(1e-4, 1e5),
) -> CappedIndexIntervals:
    r"""Each page's crawl interval under the freshness index policy with a budget and per-host caps.

    The allocation of :func:`~changerate_bayes.scheduling.index_crawl_intervals` (page i
    crawled every I_i where its index w_i E[ν_Δ(I_i)] reaches its price) where host h's
    pages spend at most c_h crawls per time unit: page i on host h is priced at λ + η_h,
    η_h >= 0 and 0 unless the host is at its cap (Kolobov et al. 2019). Vectorised over pages
    and hosts: the allocation without caps, then Newton steps on the free price and every
    capped host's price at once, hosts over their caps joining the capped set round after
    round.

    Parameters
    ----------
    rate, log_sd, weights, interval_range
        As :func:`~changerate_bayes.scheduling.index_crawl_intervals` (shape (N,)).
    budget : float
        B > 0, crawls per time unit over all pages.
    hosts : array_like of hashable labels, shape (N,)
        The host of each page (strings, integers, ...; not None or NaN).
    host_budgets : float or mapping label -> float
        c_h > 0, finite, crawls per time unit (per day for rates per day; 17,280 for a
        5 s delay between fetches): one number for every host, or a mapping (hosts
        missing from it are uncapped; labels without pages are ignored).
    max_interval : float, default inf
        M > 0: no interval exceeds it, except on a host whose cap is below n_h/M (n_h its
        pages): there the cap wins, and each page is crawled every n_h/c_h.

    Returns
    -------
    CappedIndexIntervals
        ``intervals`` (shape (N,)), ``price`` λ, ``host_prices`` η_h (inf for a host held
        below its pages' crawls at M), ``at_cap`` and ``hosts`` (the distinct labels, H of
        them; sorted when they can be), ``steps``. No host's Σ 1/I_i exceeds c_h; Σ_i 1/I_i = B to within 1e-12 relative unless every host is at its
        cap (Σ_h c_h < B: the rest of the budget is not spent, λ = 0). Pages at M (or
        beyond, as above) are held there; the other pages' rates are scaled to spend what
        is left in their host at cap, or among the free hosts, as
        :func:`~changerate_bayes.crawllog.allocate_crawls` does without caps.
        Where no cap binds, the intervals are those of ``index_crawl_intervals``.

    Raises
    ------
    ValueError
        As :func:`~changerate_bayes.scheduling.index_crawl_intervals`; if ``hosts`` has
        the wrong shape or holds None or NaN; if a cap is <= 0, NaN or infinite.
    TypeError
        For non-numeric input, a cap that is not a number, ``host_budgets`` given as a sequence.

    Notes
    -----
    The conditions, why saturating the hosts over their caps round after round is exact
    (each host's spend is non-increasing in its price) and the search of the hosts'
    prices are in the module notes of :mod:`changerate_bayes.scheduling._index_host_caps`.

    References
    ----------
    A. Kolobov, E. Lubetzky, Y. Peres, E. Horvitz, "Optimal freshness crawl under
    politeness constraints", SIGIR 2019 (the per-host multipliers η_h). J. Cho and
    H. Garcia-Molina, "Effective page refresh policies for web crawlers", ACM TODS 28(4),
    2003, Section 4 (the condition w ν(I) = λ).

    Examples
    --------
    Three equal pages, two on host "a" capped at 1 crawl per day, budget 3 per day: "a"
    gets its cap (interval 2 days each), "b" the rest (interval 1/2 day):

    >>> from changerate_bayes.scheduling import capped_index_intervals
    >>> res = capped_index_intervals([1.0, 1.0, 1.0], [0.0, 0.0, 0.0], 3.0,
    ...                              hosts=["a", "a", "b"], host_budgets={"a": 1.0})
    >>> res.intervals.round(12).tolist(), res.at_cap.tolist()
    ([2.0, 2.0, 0.5], [True, False])
    >>> round(res.price, 12), round(float(res.price + res.host_prices[0]), 12)  # ν_1(1/2), ν_1(2)
    (0.090204010431, 0.59399415029)
    """
    d, s, w, budget, cap, t_min, t_max = _check_index_args(rate, log_sd, weights, budget, max_interval, interval_range)
    codes, labels = check_hosts(hosts, d.shape)
    caps = check_host_budgets(host_budgets, labels)
    if d.size == 0:
        return CappedIndexIntervals(
            np.zeros(0), float("nan"), np.zeros(0), np.zeros(0, dtype=bool), labels, 0, np.zeros(0)
        )
    rates, price, eta, held, steps = solve_index_capped(d, s, w, codes, caps, budget, cap, (t_min, t_max))
    with np.errstate(divide="ignore"):
        intervals = 1.0 / rates
    return CappedIndexIntervals(intervals, float(price), eta, held, labels, steps, rates)
