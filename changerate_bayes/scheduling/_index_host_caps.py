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

The hosts' prices. Once K is fixed, every host of K solves S_h(μ_h) = c_h by Newton steps
on z_h = log μ_h, all hosts at once: each step is one call of the compiled kernel of
:mod:`~changerate_bayes.scheduling._index_allocation` over the pages of the hosts not yet
converged, each page with its own shift b_i + z_h (the kernel solves K_i(u) = z + b_i),
starting from its last root; the spend and its derivative dS_h/dz_h = −Σ_{i∈h} (1/I_i)/K_i'
per host by ``np.bincount``. Each host keeps its own bracket (the round where it joined K
gives its lower end: S_h > c_h there), bisection when a step leaves it, until
|log S_h − log c_h| <= 2e-15 or the bracket is 4 ulp.

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

from .._validation import as_float_array
from ._host_caps import check_host_budgets, check_hosts
from ._index_allocation import INDEX_NODES, _check_scalar, index_crawl_intervals

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


def revisit_bound_rates(rates, bound, budget, cap):
    """Pages at the revisit bound M = ``cap`` crawl at 1/M; the others are scaled to spend the rest of ``budget``.

    ``rates`` (crawls per unit time) with the pages at the bound already at 1/M. If no page
    is off the bound, the budget is shared equally. Returns a new array (or ``rates`` itself
    when the bound leaves nothing to share).
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


def _host_prices(d, s, w, codes, pages, target, z_lo, u0, cap, interval_range):
    """Each host's log price z_h with Σ_{i∈h} 1/I_i(e^{z_h}) = target_h, all hosts at once.

    ``pages``: the pages of the hosts searched (any order), ``codes`` their hosts (0..H'-1),
    ``target`` (H',) the spend of each host's live pages, ``z_lo`` (H',) a log price where
    each host spends more than its target, ``u0`` each page's start (log I + log Δ).
    Returns (rates of ``pages``, at the bound, z, steps).
    """
    kernel = _spend_kernel()
    t_min, t_max = interval_range
    n_h = target.size
    dp, wp = d[pages], w[pages]
    dead = (dp == 0.0) | (wp == 0.0)
    with np.errstate(divide="ignore"):
        m = np.log(dp)
        b0 = m - np.log(wp)
    m = np.where(dead, 0.0, m)
    b0 = np.where(dead, 0.0, b0)
    sp = np.ascontiguousarray(s[pages])
    ulo = np.log(t_min) + m
    utop = min(np.log(cap), np.log(t_max)) + m
    u = np.where(dead, 0.0, u0)
    k1 = np.zeros(pages.size)
    k2 = np.zeros(pages.size)
    state = np.zeros(pages.size, dtype=np.int8)
    inv_cap = 1.0 / cap
    live = ~dead
    z = z_lo.copy()
    lo = z_lo.copy()  # S_h(e^lo) > target_h
    hi = np.full(n_h, np.inf)  # S_h(e^hi) <= target_h
    expand = np.ones(n_h)
    todo = np.ones(n_h, dtype=bool)
    log_target = np.log(target)
    inv = np.zeros(pages.size)
    steps = 0
    for steps in range(1, 400):  # noqa: B007 (the count is returned)
        skip = dead | ~todo[codes]
        b = b0 + z[codes]
        kernel(0.0, 0.0, m, sp, b, skip, ulo, utop, inv_cap, _XI, _A, 1.0, u, k1, k2, state)
        inv = np.exp(m - u)
        inv[state == 1] = 1.0 / t_min
        inv[(state == 2) | dead] = inv_cap
        spend = np.bincount(codes, weights=np.where(live, inv, 0.0), minlength=n_h)
        slope = np.where(live & (state == 0) & (k1 > 0), -inv / np.where(k1 > 0, k1, 1.0), 0.0)
        dspend = np.bincount(codes, weights=slope, minlength=n_h)
        with np.errstate(divide="ignore"):
            phi = np.log(spend) - log_target
        over = phi > 0
        lo = np.where(todo & over, z, lo)
        hi = np.where(todo & ~over, z, hi)
        done = (np.abs(phi) <= 2e-15) | (hi - lo <= 8.9e-16 * np.maximum(1.0, np.abs(z)))
        todo &= ~done
        if not todo.any():
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            newton = z - phi * spend / dspend
        blind = ~((dspend < 0) & np.isfinite(phi))  # every page at a bound: no slope
        zn = np.where(blind, z + np.where(over, expand, -expand), newton)
        expand = np.where(blind, 2.0 * expand, expand)
        outside = ~((lo < zn) & (zn < hi))
        both = np.isfinite(lo) & np.isfinite(hi)
        zn = np.where(outside & both, 0.5 * (lo + hi), zn)
        zn = np.where(outside & ~both, z + np.where(over, expand, -expand), zn)
        expand = np.where(outside & ~both, 2.0 * expand, expand)
        z = np.where(todo, zn, z)
    bound = (state == 2) | dead
    return inv, bound, z, steps


def solve_index_capped(d, s, w, codes, caps, budget, cap, interval_range):
    """Rates (N,), λ, η (H,), at cap (H,) and steps of the index allocation under caps.

    Validated input: ``d`` (medians, >= 0), ``s`` (log sd), ``w`` (weights), float64 of
    shape (N,), N > 0; ``codes`` and ``caps`` as :func:`~._host_caps.check_hosts` and
    :func:`~._host_caps.check_host_budgets` give them; ``cap`` M; ``interval_range``
    (t_min, t_max). Where no cap binds the rates are bit for bit those of one call of
    :func:`index_crawl_intervals` followed by :func:`revisit_bound_rates`.
    """
    n, n_hosts = d.size, caps.size
    inv_cap = 1.0 / cap
    count = np.bincount(codes, minlength=n_hosts).astype(np.float64)
    tight = count * inv_cap >= caps  # the cap is below the pages' crawls at the bound: equal split
    held = tight.copy()
    log_mu = np.where(tight, np.inf, np.nan)
    rates = np.zeros(n)
    u0 = np.zeros(n)
    steps = 0
    price = 0.0
    while True:
        idx = np.flatnonzero(~held[codes])
        if idx.size == 0:  # every host at its cap: the rest of the budget is not spent
            break
        left = budget - caps[held].sum()
        r, found = _free_round(d, s, w, idx, left, cap, interval_range)
        steps += 1
        spend = np.bincount(codes[idx], weights=r, minlength=n_hosts)
        over = (spend > caps) & ~held
        if not over.any():
            rates[idx] = r
            price = found.price
            break
        joined = over[codes[idx]]
        with np.errstate(divide="ignore"):
            u0[idx[joined]] = np.log(found.intervals[joined]) + np.log(d[idx[joined]])
        log_mu[over] = np.log(found.price)  # S_h > c_h there: the lower end of its price
        held |= over
    # hosts whose cap holds every page at or beyond the bound: each page c_h/n_h
    pages_t = np.flatnonzero(tight[codes])
    rates[pages_t] = (caps / count)[codes[pages_t]]
    search = held & ~tight
    if search.any():
        hs = np.flatnonzero(search)
        slot = np.full(n_hosts, -1, dtype=np.int64)
        slot[hs] = np.arange(hs.size)
        pages = np.flatnonzero(search[codes])
        sc = slot[codes[pages]]
        dead = (d[pages] == 0.0) | (w[pages] == 0.0)
        n_dead = np.bincount(sc, weights=dead, minlength=hs.size)
        target = caps[hs] - n_dead * inv_cap  # > 0: n_h/M < c_h
        r, bound, z, k = _host_prices(d, s, w, sc, pages, target, log_mu[hs], u0[pages], cap, interval_range)
        steps += k
        log_mu[hs] = z
        # at each host's price the bound leaves c_h − (pages at M)/M to the others (their spend, up to
        # rounding, or across a jump of S_h): scaled to it in each host
        left_h = caps[hs] - np.bincount(sc, weights=bound, minlength=hs.size) * inv_cap
        rest_h = np.bincount(sc, weights=np.where(bound, 0.0, r), minlength=hs.size)
        scale = np.where(rest_h > 0, left_h / np.where(rest_h > 0, rest_h, 1.0), 1.0)
        r = np.where(bound, r, r * scale[sc])
        flat = rest_h == 0  # every page at the bound below the cap (a jump of S_h): equal split
        r = np.where(flat[sc], (caps[hs] / count[hs])[sc], r)
        rates[pages] = r
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
    and hosts: a few allocations without caps (one per round of hosts joining the capped
    set), then one Newton search on every capped host's price at once.

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
        them; sorted when they can be), ``steps``. No host's Σ 1/I_i exceeds c_h (to within
        1e-12 relative); Σ_i 1/I_i = B to within 1e-12 relative unless every host is at its
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
    codes, labels = check_hosts(hosts, d.shape)
    caps = check_host_budgets(host_budgets, labels)
    if d.size == 0:
        return CappedIndexIntervals(np.zeros(0), float("nan"), np.zeros(0), np.zeros(0, dtype=bool), labels, 0)
    rates, price, eta, held, steps = solve_index_capped(d, s, w, codes, caps, budget, cap, (t_min, t_max))
    with np.errstate(divide="ignore"):
        intervals = 1.0 / rates
    return CappedIndexIntervals(intervals, float(price), eta, held, labels, steps)
