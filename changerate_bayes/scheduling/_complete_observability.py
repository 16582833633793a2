r"""Crawling pages whose every change is signalled (sitemap ``lastmod``, feeds, pings).

A page w with *complete change observability* announces each of its changes, which
arrive as a Poisson process of rate Δ_w per day. The crawler can then fetch it right at a
signalled change, and the policy of Kolobov, Peres, Lu & Horvitz (NeurIPS 2019,
Section 5) does so with probability p_w ∈ [0, 1] at each signal: the page costs
p_w Δ_w crawls per day in expectation. At a random time the number of changes since the
last crawl is geometric, P(n) = p_w (1 − p_w)^n, so

* its *harmonic staleness* (the expected harmonic number of the changes not yet fetched)
  is E[H(n)] = −ln p_w (the paper's Proposition 4), against −ln(ρ/(ρ + Δ)) for a page
  crawled blindly by a Poisson process of rate ρ (Proposition 1, eq. 4);
* its *binary freshness* (the probability that no change is pending) is p_w, against
  ρ/(ρ + Δ) blind (the supplement's eqs. 12-13, as staleness costs 1 − p and Δ/(ρ+Δ)).

With importance μ_w (``weights``) the costs are weighted and summed (eq. 8). This module
solves, exactly, the allocation of one crawl budget R per day over such pages
(:func:`complete_observability_crawl_probabilities`) and over a mix of such pages and
pages crawled blindly (:func:`split_crawl_budget`), through the single multiplier λ of
the budget (the marginal value of one more crawl per day), instead of the paper's
iterative saturation (Algorithm 2) and bounded scalar search over the split (Algorithm 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from .._validation import check_choice
from ._optimal_rates import _check_rates_weights, check_budget, optimal_crawl_rates

__all__ = ["complete_observability_crawl_probabilities", "split_crawl_budget", "CrawlBudgetSplit"]

_OBJECTIVES = ("harmonic_staleness", "binary_freshness")


@dataclass(frozen=True)
class CrawlBudgetSplit:
    """The optimal split of one crawl budget between signalled and blindly crawled pages.

    Attributes
    ----------
    crawl_rates : ndarray of float64, shape of ``change_rates``
        Crawls per day of every page: p_w Δ_w (expected; crawls at signalled changes) for a
        page with complete observability, the Poisson crawl rate ρ_i for the others.
    crawl_probabilities : ndarray of float64, shape (number of pages with ``complete``,)
        p_w ∈ [0, 1], the probability of crawling at each signalled change, for the pages
        where ``complete`` is True, in their order (aligned with ``change_rates[complete]``).
    complete_budget : float
        Σ p_w Δ_w, crawls per day spent on the pages with complete observability.
    incomplete_budget : float
        Σ ρ_i, crawls per day spent on the other pages.
    price : float
        λ >= 0, the multiplier of the budget: the objective gained per extra crawl per day,
        equal on both kinds of pages at the optimum. 0 when the budget is not all spent
        (every page that can use it is saturated) or nothing can be gained.
    objective : float
        The value of the allocation: the weighted harmonic staleness
        Σ_w −μ_w ln p_w + Σ_i −μ_i ln(ρ_i/(ρ_i + Δ_i)) (to minimise), or the weighted
        binary freshness Σ_w μ_w p_w + Σ_i μ_i ρ_i/(ρ_i + Δ_i) (to maximise).
    """

    crawl_rates: np.ndarray
    crawl_probabilities: np.ndarray
    complete_budget: float
    incomplete_budget: float
    price: float
    objective: float


_MIN_RELATIVE_BUDGET = 1e-290  # R / max Δ below it: p below the normal floats (1e-308)
_MIN_RELATIVE_RATE = 1e-300  # Δ / max Δ below it: the page's changes cost nothing (p = 1)


def _check_budget(budget) -> float:
    return check_budget(budget, unit=" (crawls per day)")


def _check_pages(change_rates, weights):
    delta, w = _check_rates_weights(change_rates, weights)
    return delta, np.ascontiguousarray(w)


def _check_mask(complete, shape) -> np.ndarray:
    mask = np.asarray(complete)
    if mask.dtype != bool:
        raise TypeError(f"`complete` must be a boolean array (True: every change is signalled); got dtype {mask.dtype}")
    if mask.shape != shape:
        raise ValueError(f"`complete` must have the shape of `change_rates` {shape}; got {mask.shape}")
    return mask


# --------------------------------------------------------------------------------------
# pages with complete observability only
# --------------------------------------------------------------------------------------


def _harmonic_complete(d: np.ndarray, w: np.ndarray, budget: float) -> tuple[np.ndarray, float]:
    """p = min(1, w/(λ Δ)) with Σ p Δ = R, for Δ, w > 0 (1-D); returns (p, λ).

    With the pages sorted by r = w/Δ (descending), D_k the Δ of the first k and M_k the
    w of the others, k pages saturate iff r_{k+1} (R − D_k) <= M_k: the left side minus
    the right is non-increasing in k while D_{k+1} < R, and holds at the last k with
    D_k < R, so the first such k is found by one vectorised scan. Then λ = M_k/(R − D_k).
    """
    if d.sum() <= budget:  # every change can be fetched
        return np.ones_like(d), 0.0
    r = w / d
    order = np.argsort(-r, kind="stable")
    rs, ds, ws = r[order], d[order], w[order]
    d_before = np.concatenate(([0.0], np.cumsum(ds)[:-1]))  # D_k, k = 0..n-1
    w_tail = np.cumsum(ws[::-1])[::-1]  # M_k = Σ_{i >= k} w (0-based: the pages from k on)
    room = budget - d_before
    ok = (room > 0) & (rs * room <= w_tail)
    k = int(np.argmax(ok)) if ok.any() else int(np.count_nonzero(room > 0)) - 1
    price = ws[k:].sum() / (budget - ds[:k].sum())
    with np.errstate(over="ignore"):  # r/λ beyond the floats: p = 1 all the same
        p_sorted = np.minimum(1.0, rs / price)
    p_sorted[:k] = 1.0
    p = np.empty_like(p_sorted)
    p[order] = p_sorted
    return p, float(price)


def complete_observability_crawl_probabilities(
    change_rates, weights, budget, *, objective="harmonic_staleness"
) -> np.ndarray:
    r"""Optimal crawl probabilities for pages that signal every change.

    Page w changes as a Poisson process of rate Δ_w per day and announces each change
    (sitemap ``lastmod``, a feed, a ping); the crawler fetches it at each announced change
    with probability p_w, i.e. p_w Δ_w crawls per day on average (Kolobov et al. 2019,
    Section 5). Chooses the p_w that solve, exactly,

    * ``"harmonic_staleness"``: minimise Σ −μ_w ln p_w (Proposition 4),
    * ``"binary_freshness"``: maximise Σ μ_w p_w (the fraction of time fresh),

    subject to Σ p_w Δ_w <= R and 0 <= p_w <= 1.

    Parameters
    ----------
    change_rates : array_like of float, any shape
        Δ_w >= 0, changes (= signals) per day.
    weights : float or array_like of float, same shape as ``change_rates``
        μ_w >= 0, the importance of page w.
    budget : float
        R > 0, crawls per day.
    objective : {"harmonic_staleness", "binary_freshness"}, default "harmonic_staleness"
        Note the default differs from :func:`optimal_crawl_rates`'; the paper's policy
        minimises the harmonic staleness.

    Returns
    -------
    ndarray of float64, shape of ``change_rates``
        p_w ∈ [0, 1]. Σ p_w Δ_w = R to within 1e-12 relative, unless R covers every change
        of the pages with μ_w > 0 (then those have p_w = 1 and the rest of the budget is
        not needed). A page with Δ_w = 0 never changes and costs nothing: p_w = 1. A page
        with μ_w = 0 and Δ_w > 0 gets p_w = 0. Any finite Δ_w, μ_w and R work (the
        problem is solved after rescaling Δ and R by the largest Δ_w, μ by the largest
        μ_w, by powers of 2); a Δ_w below 1e-300 times the largest costs nothing
        (p_w = 1), a μ_w below about 5e-324 times the largest counts as 0.

    Raises
    ------
    ValueError
        If a rate or weight is negative, NaN or infinite, if the shapes differ, if
        ``change_rates`` is empty, if ``budget`` <= 0 or is not finite, if ``budget`` is
        below 1e-290 times the largest Δ_w of a page with μ_w > 0 (the p_w would fall
        below the floating-point range), or for an unknown ``objective``.
    TypeError
        If ``budget`` is not a real number, or the arrays are not numeric.

    See Also
    --------
    split_crawl_budget : the same pages together with pages crawled blindly, one budget.

    Notes
    -----
    *Harmonic staleness.* The problem is convex; the KKT conditions with one multiplier
    λ > 0 for the budget give μ_w/(p_w Δ_w) = λ unless p_w = 1:

    .. math:: p_w = \min\bigl(1, μ_w / (λ Δ_w)\bigr),

    and λ solves Σ_w min(Δ_w, μ_w/λ) = R. With the pages sorted by μ_w/Δ_w (descending)
    the first k saturate, where k is the first index with
    (μ_{k+1}/Δ_{k+1}) (R − Σ_{i<=k} Δ_i) <= Σ_{i>k} μ_i, and λ = Σ_{i>k} μ_i / (R − Σ_{i<=k} Δ_i):
    one sort and one scan, O(N log N), no iteration. The paper's Algorithm 2 reaches the
    same point by saturating pages round after round (one O(N) pass per round).

    *Binary freshness.* The objective is linear in p: a fractional knapsack whose items
    have value μ_w per unit of p, weight Δ_w and capacity 1. The optimum fills the pages in
    decreasing order of μ_w/Δ_w (freshness per crawl per day) with p_w = 1 until the
    budget runs out; the page at the boundary gets the remainder (pages tied with it share
    it, in proportion to Δ_w, with one p), the others p_w = 0. Here λ is the boundary's
    μ_w/Δ_w. The answer is all-or-nothing: at most one value of μ/Δ has 0 < p < 1.

    References
    ----------
    A. Kolobov, Y. Peres, C. Lu, E. Horvitz, "Staying up to date with online content
    changes using reinforcement learning for scheduling", NeurIPS 2019: Section 5,
    Proposition 4, Algorithm 2; supplement eq. 13.

    Examples
    --------
    >>> from changerate_bayes.scheduling import complete_observability_crawl_probabilities
    >>> complete_observability_crawl_probabilities([1.0, 4.0], [1.0, 1.0], 2.0)  # λ = 1
    array([1.  , 0.25])
    >>> complete_observability_crawl_probabilities([2.0, 2.0], [1.0, 3.0], 2.0)  # λ = 2
    array([0.25, 0.75])
    >>> complete_observability_crawl_probabilities([1.0, 4.0], [1.0, 1.0], 2.0, objective="binary_freshness")
    array([1.  , 0.25])
    >>> complete_observability_crawl_probabilities([2.0, 2.0], [1.0, 3.0], 2.0, objective="binary_freshness")
    array([0., 1.])
    """
    delta, w = _check_pages(change_rates, weights)
    budget = _check_budget(budget)
    objective = check_choice(objective, name="objective", choices=_OBJECTIVES)
    d, ww = delta.ravel(), w.ravel()
    p = np.where(d > 0, 0.0, 1.0)
    active = (d > 0) & (ww > 0)
    if active.any():
        # p depends on Δ/R and on μ up to a factor: rescale both by powers of 2 (exact: the
        # same p to the last bit) to at most 1, so that no sum, ratio or price leaves the
        # floats. A Δ below 1e-300 of the largest is free (p = 1); a μ below the smallest
        # float (about 5e-324) times the largest becomes 0 (p = 0).
        d_max = d[active].max()
        d_exp, w_exp = np.frexp(d_max)[1], np.frexp(ww[active].max())[1]
        with np.errstate(over="ignore", under="ignore"):
            d_scaled, w_scaled = np.ldexp(d, -d_exp), np.ldexp(ww, -w_exp)
            scaled_budget = float(np.ldexp(budget, -d_exp))
        with np.errstate(under="ignore"):
            too_small = budget < _MIN_RELATIVE_BUDGET * d_max
            free = d < _MIN_RELATIVE_RATE * d_max
        if too_small:
            raise ValueError(
                f"`budget` must be at least {_MIN_RELATIVE_BUDGET:g} times the largest change rate "
                f"({d_max:g} per day), or the crawl probabilities fall below the floating-point range; "
                f"got {budget:g} crawls per day"
            )
        p[active & free] = 1.0
        active &= ~free & (w_scaled > 0)
        if active.any():
            if objective == "harmonic_staleness":
                p[active] = _harmonic_complete(d_scaled[active], w_scaled[active], scaled_budget)[0]
            else:
                p[active] = _binary_fill(d_scaled[active], w_scaled[active], scaled_budget, None, None)[0]
    return p.reshape(delta.shape)


# --------------------------------------------------------------------------------------
# both kinds of pages, one budget
# --------------------------------------------------------------------------------------


def _blind_binary_spend(di: np.ndarray, wi: np.ndarray, price: float) -> float:
    """Σ max(0, √(w Δ/λ) − Δ) = Σ Δ (r/λ − 1)/(√(r/λ) + 1) over r = w/Δ > λ (no cancellation)."""
    x = (wi / di) / price
    on = x > 1.0
    return float(np.sum(di[on] * (x[on] - 1.0) / (np.sqrt(x[on]) + 1.0)))


def _binary_fill(dc, wc, budget, di, wi):
    """Binary freshness: complete pages (dc, wc > 0) filled by μ/Δ, blind pages (di, wi > 0).

    Returns (p of the complete pages, rates of the blind pages or None, λ).

    With the distinct breakpoints u_1 > u_2 > ... of r = μ/Δ of the complete pages, the
    spend at λ = u_j ranges from low_j (the pages with r > u_j full, the blind pages at
    their rates I(u_j)) to high_j (plus the pages with r = u_j); both increase with j. The
    first j with high_j >= R is found by bisection (O(log N) passes over the pages): if
    low_j <= R, λ = u_j and the pages at u_j share the remainder; otherwise λ lies strictly
    between u_j and u_{j-1} and the blind pages get R − low_{j-1}'s full-page spend, solved
    exactly by :func:`optimal_crawl_rates`.
    """
    blind = di is not None and di.size > 0
    r = wc / dc
    order = np.argsort(-r, kind="stable")
    rs, ds = r[order], dc[order]
    cum = np.cumsum(ds)
    starts = np.flatnonzero(np.concatenate(([True], rs[1:] != rs[:-1])))
    ends = np.concatenate((starts[1:], [rs.size]))  # group j: sorted pages starts[j]..ends[j]-1
    d_low = np.where(starts > 0, cum[np.maximum(starts - 1, 0)], 0.0)  # Σ Δ of r > u_j
    d_high = cum[ends - 1]  # Σ Δ of r >= u_j

    def spend_blind(j: int) -> float:
        return _blind_binary_spend(di, wi, float(rs[starts[j]])) if blind else 0.0

    n_groups = starts.size
    lo, hi = 0, n_groups  # first j with high_j >= R lies in [lo, hi] (hi: none)
    while lo < hi:
        mid = (lo + hi) // 2
        if d_high[mid] + spend_blind(mid) >= budget:
            hi = mid
        else:
            lo = mid + 1
    j = lo
    p_sorted = np.zeros_like(rs)
    rates = None
    if j < n_groups:
        blind_j = spend_blind(j)
        rest = budget - d_low[j] - blind_j
        if rest >= 0.0:  # λ = u_j: the pages at the boundary share the rest
            price = float(rs[starts[j]])
            p_sorted[: starts[j]] = 1.0
            group_d = d_high[j] - d_low[j]
            p_sorted[starts[j] : ends[j]] = min(1.0, rest / group_d)
            if blind:
                x = (wi / di) / price
                rates = np.where(x > 1.0, di * (x - 1.0) / (np.sqrt(x) + 1.0), 0.0)
            return _unsort(p_sorted, order), rates, price
        p_sorted[: starts[j]] = 1.0
        left = budget - d_low[j]
    else:
        p_sorted[:] = 1.0
        left = budget - d_high[-1]
    if not blind or left <= 0.0:  # every complete page is full; nothing else to spend on
        return _unsort(p_sorted, order), (np.zeros_like(di) if blind else None), 0.0
    rates = optimal_crawl_rates(di, wi, left, objective="binary_freshness")
    return _unsort(p_sorted, order), rates, _binary_price(di, wi, rates)


def _unsort(values_sorted: np.ndarray, order: np.ndarray) -> np.ndarray:
    out = np.empty_like(values_sorted)
    out[order] = values_sorted
    return out


def _binary_price(di, wi, rates) -> float:
    """λ = μΔ/(ρ + Δ)² at the crawled blind page with the largest rate (0 if none)."""
    k = int(np.argmax(rates))
    if rates[k] <= 0:
        return 0.0
    total = rates[k] + di[k]
    return float((wi[k] / total) * (di[k] / total))  # no overflow of (ρ + Δ)²


def _harmonic_price(di, wi, rates) -> float:
    """λ = μΔ/(ρ(ρ + Δ)) at the blind page with the largest rate (0 if none)."""
    k = int(np.argmax(rates))
    if rates[k] <= 0:
        return 0.0
    return float((wi[k] / rates[k]) * (di[k] / (rates[k] + di[k])))


def _harmonic_split(dc, wc, di, wi, budget):
    """Harmonic staleness, both kinds of pages with Δ, μ > 0: (p, blind rates, λ).

    In units where R = 1 (δ = Δ/R) and with ω = μ/max μ, at s = 1/λ the spend is
    S(s) = Σ_w min(δ_w, ω_w s) + Σ_i δ_i φ(ω_i s/δ_i), φ(c) = 2c/(1 + √(1 + 4c)) (the
    positive root of ρ(ρ + δ) = ω δ s, without cancellation). log S is increasing in
    t = log s with slope in (0, 1]; log S(e^t) = 0 is solved by Brent's method
    (:func:`scipy.optimize.brentq`) to |Δt| <= 1e-15 + 4 ε |t|, i.e. the budget to about
    1e-14 relative. Bracket: every page spends at most ω s, so t_lo = −log Σ ω gives
    S <= 1; a blind page spends at least min(√(ω δ s/2), ω s/2), so
    s_hi = min_i max(2/(ω_i δ_i), 2/ω_i) gives S >= 1.
    """
    scale = max(float(wc.max()), float(wi.max()))
    oc, oi = wc / scale, wi / scale
    dcs, dis = dc / budget, di / budget
    log_di = np.log(dis)
    k_blind = np.log(oi) - log_di  # log(ω/δ)
    log2 = np.log(2.0)

    def blind_log_q(t: float) -> np.ndarray:
        x = k_blind + t  # log c
        big = x > 700.0
        root = np.sqrt(1.0 + 4.0 * np.exp(np.minimum(x, 700.0)))
        log_phi = log2 + x - np.log1p(root)
        if big.any():
            log_phi = np.where(big, 0.5 * x, log_phi)  # φ(c) = √c to double precision
        return log_di + log_phi

    def log_spend(t: float) -> float:
        s = np.exp(t)
        with np.errstate(over="ignore"):  # ω s beyond the floats: the page spends δ all the same
            full = np.minimum(dcs, oc * s).sum()
        return float(np.log(full + np.exp(blind_log_q(t)).sum()))

    t_lo = -float(np.log(oc.sum() + oi.sum()))
    t_hi = float(np.log(np.min(np.maximum(2.0 / (oi * dis), 2.0 / oi))))
    t_hi = max(t_hi, t_lo)
    f_lo, f_hi = log_spend(t_lo), log_spend(t_hi)
    if f_lo >= 0.0:
        t = t_lo
    elif f_hi <= 0.0:
        t = t_hi
    else:
        t = optimize.brentq(log_spend, t_lo, t_hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    s = np.exp(t)
    with np.errstate(over="ignore"):
        p = np.minimum(1.0, oc * s / dcs)
    rates = budget * np.exp(blind_log_q(t))
    return p, rates, float(scale / (budget * s))


def _objective_value(objective, dc, wc, p, di, wi, rates) -> float:
    if objective == "binary_freshness":
        fresh_c = np.where(dc > 0, p, 1.0)
        denom = rates + di
        fresh_i = np.divide(rates, denom, out=np.ones_like(denom), where=denom > 0)
        return float(np.sum(wc * fresh_c) + np.sum(wi * fresh_i))
    rel_c = (wc > 0) & (dc > 0)
    rel_i = (wi > 0) & (di > 0)
    if np.any(rel_c & (p == 0)) or np.any(rel_i & (rates == 0)):
        return float("inf")
    cost_c = -np.sum(wc[rel_c] * np.log(p[rel_c]))
    cost_i = np.sum(wi[rel_i] * np.log1p(di[rel_i] / rates[rel_i]))
    return float(cost_c + cost_i)


def split_crawl_budget(change_rates, weights, budget, complete, *, objective="harmonic_staleness") -> CrawlBudgetSplit:
    r"""Optimal split of one crawl budget between pages that signal their changes and the rest.

    The pages where ``complete`` is True announce every change (complete change
    observability) and are crawled at each announced change with probability p_w; the
    others are crawled blindly, by a Poisson process of rate ρ_i. One budget R of crawls
    per day is shared (Kolobov et al. 2019, Section 5, eq. 8):

    * ``"harmonic_staleness"``: minimise Σ_w −μ_w ln p_w + Σ_i −μ_i ln(ρ_i/(ρ_i + Δ_i));
    * ``"binary_freshness"``: maximise Σ_w μ_w p_w + Σ_i μ_i ρ_i/(ρ_i + Δ_i);

    subject to Σ_w p_w Δ_w + Σ_i ρ_i <= R, 0 <= p_w <= 1, ρ_i >= 0.

    Parameters
    ----------
    change_rates : array_like of float, any shape
        Δ >= 0, changes per day of every page.
    weights : float or array_like of float, same shape as ``change_rates``
        μ >= 0, the importance of each page.
    budget : float
        R > 0, crawls per day.
    complete : array_like of bool, same shape as ``change_rates``
        True for a page whose every change is signalled.
    objective : {"harmonic_staleness", "binary_freshness"}, default "harmonic_staleness"

    Returns
    -------
    CrawlBudgetSplit
        ``crawl_rates`` (crawls per day, every page), ``crawl_probabilities`` (the pages
        with ``complete``), ``complete_budget`` and ``incomplete_budget`` (the split),
        ``price`` λ and ``objective``. The whole budget is spent (to within 1e-12
        relative) unless every page that could use it is saturated (every signalled page
        at p = 1 and no blind page with μ Δ > 0). Without any page with ``complete``, the
        rates are exactly :func:`optimal_crawl_rates`'.

    Raises
    ------
    ValueError
        If a rate or weight is negative, NaN or infinite, if ``change_rates`` is empty, if
        the shapes differ, if ``budget`` <= 0 or is not finite, or for an unknown
        ``objective``.
    TypeError
        If ``complete`` is not boolean, ``budget`` is not a real number, or the arrays are
        not numeric.

    See Also
    --------
    complete_observability_crawl_probabilities : the signalled pages alone.
    optimal_crawl_rates : the blind pages alone.

    Notes
    -----
    *One multiplier.* The problem is separable and concave (convex for the cost), so the
    KKT conditions are necessary and sufficient, and both kinds of pages share the
    multiplier λ of the budget: at the optimum one more crawl per day is worth the same
    wherever it goes. For the harmonic staleness (the paper's Proposition 2, eq. 5, and
    the stationarity behind Algorithm 2)

    .. math::

        p_w(λ) = \min\bigl(1, μ_w/(λ Δ_w)\bigr), \qquad
        ρ_i(λ) = \tfrac12\bigl(-Δ_i + \sqrt{Δ_i^2 + 4 μ_i Δ_i/λ}\bigr),

    and λ solves the one equation Σ_w p_w(λ) Δ_w + Σ_i ρ_i(λ) = R (continuous,
    decreasing), solved by Brent's method on log λ to about 1e-14 relative. The paper's
    Algorithm 3 (LambdaCrawl) instead searches the split R_c ∈ [0, min(R, Σ Δ_w)] by
    bounded scalar minimisation with a tolerance of 0.005 R, solving both parts at each
    trial split; the optimum it approaches is the split R_c = Σ p_w(λ) Δ_w found here.

    For the binary freshness p_w(λ) = 1 if μ_w/Δ_w > λ and 0 if < λ (a fractional
    knapsack: the objective is linear in p), ρ_i(λ) = max(0, √(μ_i Δ_i/λ) − Δ_i). The spend
    then jumps at the breakpoints μ_w/Δ_w; λ is either a breakpoint (the pages there share
    what the others leave) or lies between two, where the blind pages receive exactly
    what the full signalled pages leave, allocated by :func:`optimal_crawl_rates`. The
    breakpoint is found by bisection over the sorted breakpoints, O(N log N) in all.

    Pages with μ = 0 or Δ = 0 do not affect the objective: blind ones get ρ = 0,
    signalled ones p = 0 (μ = 0) or p = 1 (Δ = 0, never signalled, free).

    References
    ----------
    A. Kolobov, Y. Peres, C. Lu, E. Horvitz, "Staying up to date with online content
    changes using reinforcement learning for scheduling", NeurIPS 2019: Section 5,
    Propositions 1, 2 and 4, eq. 8, Algorithms 1-3; supplement eqs. 12-13.

    Examples
    --------
    One signalled page (Δ = 1/day) and one crawled blindly (Δ = 2/day), equal weights,
    √5 crawls per day. At λ = 1/2 the blind page takes ρ = (−2 + √(4 + 16))/2 = √5 − 1 and
    the signalled page p = min(1, 1/(λ·1)) = 1:

    >>> from changerate_bayes.scheduling import split_crawl_budget
    >>> split = split_crawl_budget([1.0, 2.0], 1.0, 5**0.5, [True, False])
    >>> split.crawl_rates.round(6), split.crawl_probabilities, round(split.price, 12)
    (array([1.      , 1.236068]), array([1.]), 0.5)
    >>> split = split_crawl_budget([4.0, 1.0], 1.0, 1.5, [True, False])
    >>> round(split.complete_budget + split.incomplete_budget, 12)
    1.5
    """
    delta, w = _check_pages(change_rates, weights)
    mask = _check_mask(complete, delta.shape)
    budget = _check_budget(budget)
    objective = check_choice(objective, name="objective", choices=_OBJECTIVES)
    d, ww, m = delta.ravel(), w.ravel(), mask.ravel()
    dc, wc, di, wi = d[m], ww[m], d[~m], ww[~m]
    rates_i = np.zeros_like(di)
    p = np.where(dc > 0, 0.0, 1.0)
    price = 0.0
    if not m.any():
        rates_i = optimal_crawl_rates(di, wi, budget, objective=objective)
        active_i = (di > 0) & (wi > 0)
        if active_i.any():
            pick = _binary_price if objective == "binary_freshness" else _harmonic_price
            price = pick(di[active_i], wi[active_i], rates_i[active_i])
    else:
        ac = (dc > 0) & (wc > 0)
        ai = (di > 0) & (wi > 0)
        if ac.any() and ai.any():
            if objective == "harmonic_staleness":
                p_a, r_a, price = _harmonic_split(dc[ac], wc[ac], di[ai], wi[ai], budget)
            else:
                p_a, r_a, price = _binary_fill(dc[ac], wc[ac], budget, di[ai], wi[ai])
            p[ac], rates_i[ai] = p_a, r_a
        elif ac.any():
            solve = _harmonic_complete if objective == "harmonic_staleness" else _binary_complete
            p[ac], price = solve(dc[ac], wc[ac], budget)
        elif ai.any():
            rates_i[ai] = optimal_crawl_rates(di[ai], wi[ai], budget, objective=objective)
            pick = _binary_price if objective == "binary_freshness" else _harmonic_price
            price = pick(di[ai], wi[ai], rates_i[ai])
    if not (np.all(np.isfinite(rates_i)) and np.all(np.isfinite(p))):  # a safeguard
        raise FloatingPointError(f"split_crawl_budget ({objective}) produced non-finite values")
    rates = np.empty_like(d)
    rates[m] = p * dc
    rates[~m] = rates_i
    return CrawlBudgetSplit(
        crawl_rates=rates.reshape(delta.shape),
        crawl_probabilities=p,
        complete_budget=float(np.sum(p * dc)),
        incomplete_budget=float(np.sum(rates_i)),
        price=float(price),
        objective=_objective_value(objective, dc, wc, p, di, wi, rates_i),
    )


def _binary_complete(dc, wc, budget) -> tuple[np.ndarray, float]:
    p, _, price = _binary_fill(dc, wc, budget, None, None)
    return p, price
