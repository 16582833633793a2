"""Optimal crawl rates for known change rates (paper Section 5; Azar et al.; Kolobov et al.)."""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array, check_choice, check_positive_scalar, check_real
from ._host_caps import CappedCrawlRates, check_host_budgets, check_hosts, solve_capped
from ._shapes import broadcast_weights
from ._water_level import allocate, select_level

__all__ = ["optimal_crawl_rates", "capped_crawl_rates", "CappedCrawlRates", "crawl_objective"]

_OBJECTIVES = ("binary_freshness", "harmonic_staleness")


def _check_rates_weights(change_rates, weights, *, crawl_rates=None):
    delta = as_float_array(change_rates, name="change_rates", nonnegative=True)
    w = as_float_array(weights, name="weights", nonnegative=True)
    w = broadcast_weights(w, delta, requirement="be a scalar or have the shape of")
    if crawl_rates is None:
        return delta, w
    p = as_float_array(crawl_rates, name="crawl_rates", nonnegative=True)
    if p.shape != delta.shape:
        raise ValueError(f"`crawl_rates` must have the shape of `change_rates` {delta.shape}; got {p.shape}")
    return delta, w, p


def check_budget(budget, *, unit: str = "") -> float:
    """Return the crawl budget as a float > 0 (a 0-d array counts as a number); ``unit``
    (e.g. ``" (crawls per day)"``) follows "a real number" in the TypeError."""
    if isinstance(budget, np.ndarray) and budget.ndim == 0:
        budget = budget.item()
    check_real(budget, name="budget", what=f"a real number{unit}")
    return check_positive_scalar(budget, name="budget")


def _check_problem(
    change_rates, weights, budget, objective
) -> tuple[tuple[int, ...], np.ndarray, np.ndarray, float, str]:
    """The checked problem: the shape of ``change_rates``, the rates and weights as 1-D arrays, budget, objective."""
    delta, w = _check_rates_weights(change_rates, weights)
    budget = check_budget(budget)
    objective = check_choice(objective, name="objective", choices=_OBJECTIVES)
    return delta.shape, delta.ravel(), np.ascontiguousarray(w).ravel(), budget, objective


def optimal_crawl_rates(
    change_rates, weights, budget, *, objective="binary_freshness", hosts=None, host_budgets=None
) -> np.ndarray:
    r"""Crawl rates maximising weighted freshness for known change rates.

    Solves, exactly, the separable concave resource-allocation problem of the paper's
    Section 5 for pages whose changes are Poisson with rate Δ_i and whose crawls are
    Poisson with rate p_i:

    * ``"binary_freshness"`` (Azar et al. 2018): maximise Σ w_i p_i / (p_i + Δ_i),
      the long-run weighted fraction of time the local copies are fresh;
    * ``"harmonic_staleness"`` (Kolobov et al. 2019): minimise
      −Σ w_i ln(p_i / (p_i + Δ_i));

    both subject to Σ p_i <= B and p_i >= 0.

    Parameters
    ----------
    change_rates : array_like of float, any shape
        Δ_i >= 0, changes per unit time (e.g. per day).
    weights : float or array_like of float, same shape as ``change_rates``
        w_i >= 0, the importance of page i (e.g. its request rate).
    budget : float
        B > 0, total crawls per the same unit time.
    objective : {"binary_freshness", "harmonic_staleness"}, default "binary_freshness"
    hosts : array_like of hashable labels, same shape as ``change_rates``, optional
        The host of each page (strings, integers, ...; not None or NaN). Only used with
        ``host_budgets``.
    host_budgets : float or mapping label -> float, optional
        Politeness caps c_h > 0 on Σ_{i∈h} p_i, in the unit of ``budget`` (e.g. 17,280
        per day for a 5 s delay): one number for every host, or a mapping (hosts missing
        from it are uncapped; labels without pages are ignored). With caps, the optimum
        is :func:`capped_crawl_rates` (Kolobov et al. 2019); where no cap binds it is
        exactly the answer without caps.

    Returns
    -------
    ndarray of float64, same shape as ``change_rates``
        The optimal crawl rates p_i >= 0, crawls per unit time; without caps Σ p_i = B to within
        1e-12 relative, for any magnitudes of Δ, w and B (the whole budget is always
        spent). Pages with Δ_i = 0 or w_i = 0 get p_i = 0, unless *every* page has
        Δ_i = 0 or w_i = 0: then the objective does not depend on p, every allocation
        is optimal, and the budget is split equally, p_i = B/N (see Notes).

    Raises
    ------
    ValueError
        If a rate or weight is negative, NaN or infinite, if the shapes differ, if
        ``budget`` <= 0 or is not finite, or for an unknown ``objective``; if ``hosts``
        has the wrong shape or holds None/NaN, or a cap is <= 0, NaN or infinite; if
        ``host_budgets`` is given without ``hosts``.
    TypeError
        If an argument is not numeric (a cap, ``host_budgets`` given as a sequence).
    FloatingPointError
        If a rate came out NaN or infinite (a safeguard; not expected to happen).

    See Also
    --------
    capped_crawl_rates : the same optimum with per-host caps, and its multipliers.

    Notes
    -----
    *Binary freshness.* The objective is concave and increasing in p_i, so the budget
    is spent and the KKT conditions are necessary and sufficient. With multiplier λ > 0,
    stationarity w_i Δ_i / (p_i + Δ_i)^2 = λ for p_i > 0 and w_i/Δ_i <= λ for p_i = 0
    give

    .. math:: p_i(λ) = \max\bigl(0, \sqrt{w_i Δ_i / λ} - Δ_i\bigr),

    so page i is crawled iff its breakpoint w_i/Δ_i exceeds λ. Sorting the pages by
    breakpoint (descending), f(λ) = Σ p_i(λ) is continuous, decreasing and linear in
    s = λ^{-1/2} between consecutive breakpoints; its values at the breakpoints,
    F_j = s_j Σ_{i<j} \sqrt{w_i Δ_i} - Σ_{i<j} Δ_i, are non-decreasing in j. The
    active set is the first m pages with m = #{j : F_j < B}, and Σ p_i = B gives
    s = (B + Σ_{i<=m} Δ_i) / Σ_{i<=m} \sqrt{w_i Δ_i} in closed form. The level is found
    by selection over the breakpoints (quickselect carrying the partial sums), in
    expected O(N) time, not by a sort. A page whose Δ_i is too large for its weight gets p_i = 0: p_i is
    non-decreasing in w_i but *not* monotone in Δ_i (it rises, then falls to 0).

    *Harmonic staleness.* Stationarity w_i Δ_i / (p_i (p_i + Δ_i)) = λ gives the
    positive root p_i(s) = 2 w_i Δ_i s / (Δ_i + \sqrt{Δ_i^2 + 4 w_i Δ_i s}) with
    s = 1/λ (every page with w_i Δ_i > 0 is crawled); Σ p_i(s) = B is solved by
    safeguarded Newton steps on log Σ p_i(e^t) (slope between 1/2 and 1) to machine
    precision, O(N) per step. Here p_i is non-decreasing in both w_i and Δ_i.

    *Numerics.* Both solvers work with q_i = p_i/B, δ_i = Δ_i/B and w_i/max(w), and
    carry logarithms wherever a product could leave the floating-point range, so the
    result is scale-invariant up to rounding (multiplying Δ and B by c multiplies p by c;
    scaling w changes nothing) for magnitudes from about 1e-300 to 1e300. The closed form
    s √(w_i Δ_i) - Δ_i cancels catastrophically when B is small against the Δ_i
    (all of B may be lost in rounding); it is evaluated instead as
    p_i = Δ_i (expm1(h_i) + t e^{h_i}), h_i = ½ ln(λ_i/λ_m) >= 0 relative to the last
    active page m and t >= 0, a sum of non-negative terms, and the active set is
    confirmed (or corrected by a galloping search) with this exact evaluation.

    Pages with Δ_i = 0 (never change: fresh after one crawl) or w_i = 0 do not affect
    the objective and get p_i = 0; the whole budget goes to the others. If no page has
    w_i Δ_i > 0 (e.g. every Δ_i = 0), the objective is constant, every allocation is
    optimal, and the budget is split equally, p_i = B/N, so that it is still spent.

    References
    ----------
    Paper Section 5, eq. (16) and F(p), F̃(p). Y. Azar, E. Horvitz, E. Lubetzky,
    Y. Peres, D. Shahaf, "Tractable near-optimal policies for crawling", PNAS 2018.
    A. Kolobov, Y. Peres, C. Lu, E. Horvitz, "Staying up to date with online content
    changes using reinforcement learning for scheduling", NeurIPS 2019.

    Examples
    --------
    >>> from changerate_bayes.scheduling import optimal_crawl_rates
    >>> optimal_crawl_rates([1.0, 4.0], [1.0, 1.0], 4.0)  # w Δ/(p+Δ)^2 = 1/9 for both
    array([2., 2.])
    >>> optimal_crawl_rates([1.0, 100.0], 1.0, 1.0)  # the fast page is not worth crawling
    array([1., 0.])
    >>> optimal_crawl_rates([1.0, 2.0], 1.0, 5 ** 0.5, objective="harmonic_staleness").round(6)
    array([1.      , 1.236068])
    >>> optimal_crawl_rates([1e8, 2e8], 1.0, 1e-8)  # a budget tiny against Δ is still spent
    array([1.e-08, 0.e+00])
    >>> optimal_crawl_rates([0.0, 0.0, 0.0], 1.0, 3.0)  # nothing to gain: split equally
    array([1., 1., 1.])
    >>> optimal_crawl_rates([1.0, 1.0, 1.0], 1.0, 3.0, hosts=["a", "a", "b"], host_budgets={"a": 1.0})
    array([0.5, 0.5, 2. ])
    """
    if hosts is not None or host_budgets is not None:
        return capped_crawl_rates(
            change_rates, weights, budget, objective=objective, hosts=hosts, host_budgets=host_budgets
        ).rates
    shape, d, ww, budget, objective = _check_problem(change_rates, weights, budget, objective)
    return _uncapped_rates(d, ww, budget, objective).reshape(shape)


def _uncapped_rates(d: np.ndarray, ww: np.ndarray, budget: float, objective: str) -> np.ndarray:
    """The optimum without host caps for 1-D ``d``, ``ww`` (validated), a new array."""
    out = np.zeros(d.shape)
    active = (d > 0) & (ww > 0)
    if not active.any():
        out[:] = budget / d.size
        return out
    if active.all():
        da, wa = d, ww
    else:
        da, wa = d[active], ww[active]
    if objective == "binary_freshness":
        pa = _binary_freshness(da, wa, budget)
    else:
        pa = _harmonic_staleness(da, wa, budget)
    if not np.all(np.isfinite(pa)):  # cannot happen: the solvers work in logs
        raise FloatingPointError(f"optimal_crawl_rates ({objective}) produced non-finite rates")
    if active.all():
        out = pa
    else:
        out[active] = pa
    return out


def capped_crawl_rates(
    change_rates, weights, budget, *, objective="binary_freshness", hosts=None, host_budgets=None
) -> CappedCrawlRates:
    r"""Optimal crawl rates under a global budget and per-host politeness caps, with multipliers.

    Maximises the objective of :func:`optimal_crawl_rates` subject to Σ_i p_i <= B,
    Σ_{i∈h} p_i <= c_h for every host h, and p_i >= 0. A crawler that waits d seconds
    between fetches from one host (Nutch ``fetcher.server.delay`` = 5 s; a robots.txt
    ``Crawl-delay``) has c_h = 86,400/d fetches per day.

    Parameters
    ----------
    change_rates, weights, budget, objective
        As in :func:`optimal_crawl_rates`.
    hosts : array_like of hashable labels, same shape as ``change_rates``, optional
        The host of each page (strings, integers, ...; not None or NaN). None: one
        uncapped problem (``host_prices`` is then empty).
    host_budgets : float or mapping label -> float, optional
        c_h > 0, finite, in the unit of ``budget``: one number for every host, or a
        mapping (hosts missing from it are uncapped; labels without pages are ignored).
        None: no host is capped.

    Returns
    -------
    CappedCrawlRates
        ``rates`` (shape of ``change_rates``), ``price`` λ, ``host_prices`` η_h,
        ``at_cap`` and ``hosts`` (the distinct labels, H of them). Σ p_i = B to within
        1e-12 relative when some host with a page of w_i Δ_i > 0 has room; a host at its
        cap spends c_h to within 1e-12 relative. If every host that has such a page is
        capped and Σ_h c_h <= B, every such host is at its cap, the rest of the budget
        cannot be spent usefully and is left unspent (λ = 0). Where no cap binds, the
        rates are exactly those of :func:`optimal_crawl_rates` without caps.

    Raises
    ------
    ValueError
        As :func:`optimal_crawl_rates`; if ``hosts`` has the wrong shape or holds None
        or NaN; if a cap is <= 0, NaN or infinite; if ``host_budgets`` is given
        without ``hosts``.
    TypeError
        If a cap is not a real number, or ``host_budgets`` is a sequence.

    Notes
    -----
    *KKT conditions* (Kolobov et al. 2019, Section 4; the problem is concave and
    separable, so they are necessary and sufficient). With f_i the page objective, a
    multiplier λ >= 0 for the budget and η_h >= 0 for each cap, stationarity reads
    f_i'(p_i) = λ + η_h for p_i > 0 and f_i'(0) <= λ + η_h for p_i = 0, with
    complementary slackness λ (B - Σ p) = 0 and η_h (c_h - S_h) = 0. So page i on host h
    takes its *unconstrained* optimal rate at the price μ = λ + η_h:

    .. math::

        p_i(μ) = \max\bigl(0, \sqrt{w_i Δ_i/μ} - Δ_i\bigr) \quad \text{(binary freshness)},
        \qquad
        p_i(μ) = \tfrac12\bigl(-Δ_i + \sqrt{Δ_i^2 + 4 w_i Δ_i/μ}\bigr) \quad \text{(harmonic)}.

    Host h's spend S_h(μ) = Σ_{i∈h} p_i(μ) decreases in μ; with μ_h = S_h^{-1}(c_h) its
    price is max(λ, μ_h) (η_h = max(0, μ_h - λ)), and λ solves the budget equation
    G(λ) = Σ_h min(c_h, S_h(λ)) = B, G continuous and decreasing. If no host with a
    page of w_i Δ_i > 0 is uncapped and Σ_h c_h <= B, G(λ) < B for all λ > 0: λ = 0 and
    every such host is at its cap.

    *Method.* (i) The problem without caps is solved (:func:`optimal_crawl_rates`,
    O(N)); if no host's spend exceeds its cap, that is the answer, returned as is.
    (ii) Otherwise the set K of hosts at cap is grown: the pages of the hosts outside K
    are water-filled with the budget B - Σ_{h∈K} c_h, and every host whose spend then
    exceeds its cap joins K, until none does. While K holds only hosts at cap at the
    optimum, the price of the free pages only falls from one round to the next (the
    hosts that join spent more than the caps that replace them), so every host that
    joins is at its cap at the optimum too, and the rounds end at the exact KKT point.
    K starts from the hosts over their caps in (i), plus those that a first-order
    prediction of the falling price (from the rates of (i)) pushes over theirs; the
    guess is kept only if at the end every host in K is worth at least λ at its cap
    (μ_h >= λ, the KKT condition), else the rounds start again from the hosts of (i)
    alone. Each round is one O(N) solve without caps; there is at most one round per
    capped host, and few in practice (two or three solves in all on 10^7 pages of 10^5
    Zipf-sized hosts, ``benchmarks/bench_host_caps.py``). (iii) The pages of the hosts
    in K are grouped by one counting sort and each host is water-filled to spend
    exactly c_h by a compiled kernel (selection and compensated KKT allocation for
    binary freshness; safeguarded Newton in log σ for harmonic staleness), host after
    host in one O(N) pass, with the numerics of the solver without caps. λ and μ_h are
    read off, as f_i'(p_i), at the page with the largest rate among the free pages and
    in each host.

    References
    ----------
    A. Kolobov, E. Lubetzky, Y. Peres, E. Horvitz, "Optimal freshness crawl under
    politeness constraints", SIGIR 2019. Y. Azar, E. Horvitz, E. Lubetzky, Y. Peres,
    D. Shahaf, "Tractable near-optimal policies for crawling", PNAS 2018.

    Examples
    --------
    Three equal pages, two on host "a" capped at 1 crawl per day, budget 3 per day: "a"
    gets its cap, the rest goes to "b" (w Δ/(p + Δ)² = 1/9 there, 4/9 on "a"):

    >>> from changerate_bayes.scheduling import capped_crawl_rates
    >>> res = capped_crawl_rates([1.0, 1.0, 1.0], 1.0, 3.0, hosts=["a", "a", "b"],
    ...                          host_budgets={"a": 1.0})
    >>> res.rates
    array([0.5, 0.5, 2. ])
    >>> round(res.price, 12), res.host_prices.round(12).tolist(), res.at_cap.tolist(), res.hosts.tolist()
    (0.111111111111, [0.333333333333, 0.0], [True, False], ['a', 'b'])
    """
    shape, d, ww, budget, objective = _check_problem(change_rates, weights, budget, objective)
    if hosts is None:
        if host_budgets is not None:
            raise ValueError("`host_budgets` needs `hosts` (the host of each page)")
        codes, labels = np.zeros(d.size, dtype=np.int64), np.array([], dtype=object)
        caps = np.array([np.inf])
    else:
        codes, labels = check_hosts(hosts, shape)
        caps = check_host_budgets(host_budgets, labels)
    uncapped = lambda dd, wd, b: _uncapped_rates(dd, wd, b, objective)  # noqa: E731
    rates, price, eta, at_cap = solve_capped(d, ww, codes, caps, budget, objective, uncapped, _binary_freshness_rows)
    if not np.all(np.isfinite(rates)):  # cannot happen: the solvers work in logs
        raise FloatingPointError(f"capped_crawl_rates ({objective}) produced non-finite rates")
    if hosts is None:
        eta, at_cap = eta[:0], at_cap[:0]
    return CappedCrawlRates(
        rates=rates.reshape(shape),
        price=float(price),
        host_prices=eta,
        at_cap=np.asarray(at_cap, dtype=bool),
        hosts=labels,
    )


_TINY = np.finfo(np.float64).tiny


def _log_ratio(x: np.ndarray, y) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """x/y and log(x/y) for x, y > 0 (broadcasting), the log never over- or underflowing.

    Returns ``(ratio, log_ratio, normal)``. The quotient is rounded once and its log is
    accurate to a few ulps; where the quotient is not a normal float (``normal`` False;
    None when it is everywhere) the log is the difference of logs instead.
    """
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        ratio = np.divide(x, y)
        out = np.log(ratio)
        if ratio.size == 0 or (ratio.min() >= _TINY and ratio.max() < np.inf):
            return ratio, out, None
        normal = (ratio >= _TINY) & (ratio < np.inf)
        xb, yb = np.broadcast_arrays(x, y)
        out[~normal] = np.log(xb[~normal]) - np.log(yb[~normal])
    return ratio, out, normal


def _scaled_logs(d: np.ndarray, w: np.ndarray, budget: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log δ = log(Δ/B) and the log breakpoints L = log(ω/δ), ω = w/max(w), per row.

    ``d``, ``w`` are (R, N) with every entry > 0, ``budget`` is (R, 1). Scaling by B and
    max(w) first makes the result exactly invariant when (Δ, B) or w are multiplied by
    a power of two, and keeps every intermediate a normal float except at extreme
    dynamic ranges, where logs take over.
    """
    omega, log_omega, ok_w = _log_ratio(w, w.max(axis=1, keepdims=True))
    delta, log_delta, ok_d = _log_ratio(d, budget)
    _, key, ok_k = _log_ratio(omega, delta)
    if ok_w is not None or ok_d is not None or ok_k is not None:
        ok = np.ones(d.shape, dtype=bool)
        for part in (ok_w, ok_d, ok_k):
            if part is not None:
                ok &= part
        key[~ok] = log_omega[~ok] - log_delta[~ok]
    return log_delta, key


def _logsumexp_rows(x: np.ndarray) -> np.ndarray:
    """log Σ_j e^{x_ij} per row of a 2-D array; -inf for a row of -inf."""
    top = x.max(axis=1)
    shift = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore", under="ignore"):
        return shift + np.log(np.exp(x - shift[:, None]).sum(axis=1))


def _times_exp(scale: np.ndarray | float, log_x: np.ndarray) -> np.ndarray:
    """scale · e^{log_x}, also where e^{log_x} alone would underflow but the product does not."""
    with np.errstate(under="ignore"):
        out = scale * np.exp(log_x)
        if out.size and np.min(np.where(log_x > -np.inf, np.exp(log_x), 1.0)) < _TINY:
            low = (np.exp(log_x) < _TINY) & (log_x > -np.inf)
            out[low] = np.exp(log_x + np.log(scale))[low]
    return out


def _gather(a: np.ndarray, order: np.ndarray) -> np.ndarray:
    if a.shape[0] == 1:  # plain fancy indexing is faster than take_along_axis
        return a[:, order[0]]
    return np.take_along_axis(a, order, axis=1)


def _binary_freshness(d: np.ndarray, w: np.ndarray, budget: float) -> np.ndarray:
    """Exact water-filling for max Σ w p/(p+Δ), Σ p = B; all Δ, w > 0.

    The water level is found by selection (:func:`_binary_freshness_select`, O(N)); at
    magnitudes where that float evaluation could over- or underflow, or in the rare case
    where rounding misplaces the level, the sorted log-domain solver takes over.
    """
    p = _binary_freshness_select(d, w, budget)
    if p is None:
        p = _binary_freshness_rows(d[None, :], w[None, :], np.array([budget]))[0]
    return p


#: magnitudes of Δ/B (and of √(w/Δ)) for which the selection solver's float evaluation
#: can neither overflow nor underflow (products and sums of N terms stay normal)
_SELECT_RANGE = (1e-150, 1e150)


def _binary_freshness_select(d: np.ndarray, w: np.ndarray, budget: float) -> np.ndarray | None:
    """Water-filling for binary freshness by selection of the water level; None if out of range.

    Works with δ = Δ/B and the breakpoints r = w/Δ, so the result is exactly invariant
    when (Δ, B) or w are multiplied by a power of two.

    *Search.* Σ q_i(λ) at λ = r_j is F_j = r_j^{-1/2} Σ_{r_i > r_j} δ_i √r_i - Σ_{r_i > r_j} δ_i,
    non-increasing in λ; page j is crawled iff F_j < 1. Quickselect over the breakpoints
    (:func:`._water_level.select_level`, compiled): each pass splits the remaining
    candidates at a pivot breakpoint, evaluates F there from the sums over the pages
    already known to be crawled plus the candidates above it, and keeps the side that
    holds the level: expected O(N) in all, against O(N log N) for a sort.

    *Evaluation.* With the smallest crawled breakpoint r_m, g_i = √(r_i/r_m) >= 1 and
    e_i = g_i - 1 = (r_i - r_m)/(r_m (1 + g_i)) (no cancellation), the KKT allocation
    is q_i = δ_i (e_i + t g_i) with t = (1 - Σ δ_i e_i)/Σ δ_i g_i: non-negative terms,
    exact to a few ulps even when B is tiny against Δ. The active set found by the
    search is accepted only if t >= 0 and the next breakpoint r' satisfies
    (1 + t)^2 r' <= r_m (the KKT conditions); otherwise None is returned.
    """
    n = d.size
    if n == 1:
        return np.array([budget], dtype=np.float64)
    lo, hi = _SELECT_RANGE
    with np.errstate(all="ignore"):
        r = w / d  # breakpoints (up to the factor B/max(w))
        delta = d / budget
        if not (r.min() >= lo * lo and r.max() <= hi * hi and delta.min() >= lo and delta.max() * n <= hi):
            return None
        sq = np.sqrt(r)
        sq *= delta  # δ √r, proportional to √(w δ)

    act_min, idle_max, ok = select_level(r, sq, delta)
    if not ok:
        return None
    out = np.empty(n)
    return out if allocate(r, delta, act_min, idle_max, budget, out) else None


def _binary_freshness_rows(d: np.ndarray, w: np.ndarray, budget: np.ndarray) -> np.ndarray:
    """Row-wise exact water-filling: independent problems in the rows of (R, N) arrays.

    Entries with w Δ = 0 get 0; a row where every entry has w Δ = 0 is split equally.
    Scale-free: it works with q = p/B, log δ = log(Δ/B) and the log breakpoints
    L = log(w/Δ) + const, so no intermediate over- or underflows whatever the
    magnitudes, and each candidate active set is checked and evaluated without
    cancellation by :func:`_binary_freshness_probe`.
    """
    n_rows, n = d.shape
    budget = np.asarray(budget, dtype=np.float64)
    valid = (d > 0) & (w > 0)
    if valid.all():
        n_valid = np.full(n_rows, n)
        log_delta, key = _scaled_logs(d, w, budget[:, None])  # log δ, L = log(ω/δ)
    else:
        n_valid = np.count_nonzero(valid, axis=1)
        log_delta, key = _scaled_logs(np.where(valid, d, 1.0), np.where(valid, w, _TINY), budget[:, None])
        log_delta[~valid] = -np.inf
        key[~valid] = -np.inf
    # Where the breakpoints r = w/Δ are moderate floats, h = ½ ln(r_i/r_m) is accurate to
    # a few ulps; the difference of logs L_i - L_m only to ~ulp(|L|): use r when possible.
    with np.errstate(all="ignore"):
        ratio = w / d if valid.all() else np.where(valid, w / np.where(valid, d, 1.0), 0.0)
    valid_r = ratio[valid] if not valid.all() else ratio
    lo_r, hi_r = (valid_r.min(), valid_r.max()) if valid_r.size else (1.0, 1.0)
    if lo_r >= _TINY and hi_r < np.inf and np.log2(hi_r) - np.log2(lo_r) <= 1000.0:  # r_i/r_m normal
        order = np.argsort(ratio, axis=1)[:, ::-1]  # descending breakpoints, invalid entries last
        ratio_s = _gather(ratio, order)
    else:
        order = np.argsort(key, axis=1)[:, ::-1]
        ratio_s = None
    del ratio, valid_r
    key_s, ld_s = _gather(key, order), _gather(log_delta, order)

    m = _binary_freshness_active_guess(key_s, ld_s)
    m = np.clip(m, 1, np.maximum(n_valid, 1))
    log_q_best = np.full((n_rows, n), -np.inf)  # log(p/B) for m = lo; m = 1 gives page 1 all
    log_q_best[:, 0] = 0.0
    lo = np.ones(n_rows, dtype=np.int64)  # largest m known to satisfy F_m <= B
    up = n_valid + 1  # smallest m known to violate it
    step = np.ones(n_rows, dtype=np.int64)
    todo = np.flatnonzero(n_valid > 1)
    while todo.size:  # every pass shrinks the bracket (lo, up) of each row in `todo`
        c = m[todo]
        feasible, optimal, log_q = _binary_freshness_probe(
            key_s[todo], ld_s[todo], c, None if ratio_s is None else ratio_s[todo]
        )
        log_q_best[todo[feasible], : log_q.shape[1]] = log_q[feasible]
        log_q_best[todo[feasible], log_q.shape[1] :] = -np.inf
        lo[todo] = np.where(feasible, c, lo[todo])
        up[todo] = np.where(feasible, up[todo], c)
        nxt = np.where(feasible, c + step[todo], c - step[todo])  # gallop from the guess,
        step[todo] *= 2
        inside = (nxt > lo[todo]) & (nxt < up[todo])
        m[todo] = np.where(inside, nxt, (lo[todo] + up[todo]) // 2)  # then bisect
        todo = todo[~((feasible & optimal) | (up[todo] - lo[todo] <= 1))]
    p_sorted = _times_exp(budget[:, None], log_q_best)
    p = np.empty((n_rows, n))
    if n_rows == 1:
        p[0, order[0]] = p_sorted[0]
    else:
        np.put_along_axis(p, order, p_sorted, axis=1)
    empty = n_valid == 0
    if empty.any():
        p[empty] = (budget[empty] / n)[:, None]
    return p


def _binary_freshness_active_guess(key: np.ndarray, log_delta: np.ndarray) -> np.ndarray:
    """First guess of the size m of the active set: #{j : F_j <= B}, one O(N) pass.

    F_j/B = e^{-L_j/2} Σ_{i<j} δ_i e^{L_i/2} - Σ_{i<j} δ_i (pages sorted by L, descending).
    This subtracts two nearly equal sums when B is small against Σ Δ, so it can misplace
    m among pages whose F_j lies within rounding of B; the probes correct that.
    """
    n_rows, n = key.shape
    if n == 1:
        return np.ones(n_rows, dtype=np.int64)
    x = 0.5 * key
    x += log_delta  # log √(δ_i ω_i); -inf for invalid entries
    top_x, top_d = x.max(axis=1, keepdims=True), log_delta.max(axis=1, keepdims=True)
    span_x = np.max(top_x[:, 0] - np.min(x, axis=1, where=x > -np.inf, initial=np.inf, keepdims=False))
    span_d = np.max(top_d[:, 0] - np.min(log_delta, axis=1, where=log_delta > -np.inf, initial=np.inf))
    with np.errstate(invalid="ignore", over="ignore", under="ignore", divide="ignore"):
        if span_x < 700.0 and span_d < 700.0 and top_d.max() < 700.0:
            # F_j/B <= 1 with both sums scaled by their largest term: no over- or underflow
            np.subtract(x, top_x, out=x)
            np.exp(x, out=x)
            np.cumsum(x, axis=1, out=x)  # Σ_{i<=j} √(δ_i ω_i) e^{-top}
            lhs = np.multiply(key[:, 1:], -0.5)
            np.add(lhs, top_x, out=lhs)
            np.exp(lhs, out=lhs)
            np.multiply(lhs, x[:, :-1], out=lhs)
            rhs = np.subtract(log_delta, top_d)
            np.exp(rhs, out=rhs)
            np.cumsum(rhs, axis=1, out=rhs)
            np.multiply(rhs, np.exp(top_d), out=rhs)
            np.add(rhs, 1.0, out=rhs)
            below = lhs <= rhs[:, :-1]
        else:  # a dynamic range beyond the floats: accumulate in logs (slower)
            log_s = np.logaddexp.accumulate(x, axis=1)
            log_d = np.logaddexp.accumulate(log_delta, axis=1)
            below = log_s[:, :-1] - 0.5 * key[:, 1:] <= np.logaddexp(0.0, log_d[:, :-1])
    return 1 + np.count_nonzero(below, axis=1)


def _binary_freshness_probe(key: np.ndarray, log_delta: np.ndarray, m: np.ndarray, ratio=None):
    """Check the active set "first m pages" of each row and evaluate its allocation.

    With the pages sorted by breakpoint, page m as pivot, h_i = (L_i - L_m)/2 >= 0 and
    s = λ^{-1/2} = (1 + t) e^{-L_m/2}, the KKT allocation is

        q_i = p_i/B = δ_i (e^{h_i}(1 + t) - 1) = δ_i (expm1(h_i) + t e^{h_i}),

    a sum of non-negative terms: no cancellation, unlike s √(w_i Δ_i) - Δ_i when B is
    tiny against Δ. Σ q_i = 1 gives t = (1 - F)/G with F = Σ δ_i expm1(h_i) (F_m/B,
    the budget at page m's breakpoint) and G = Σ δ_i e^{h_i}. The active set is right
    iff t >= 0 (``feasible``: F <= 1, page m is crawled) and page m + 1 is not,
    log(1 + t) <= (L_m - L_{m+1})/2 (``optimal``). Everything is kept in logs. With
    ``ratio`` (the sorted breakpoints w/Δ, moderate floats) h is ½ ln(r_i/r_m), accurate
    to a few ulps even where the pages' breakpoints nearly tie.

    Returns ``feasible``, ``optimal`` (bool, (R,)) and log q, shape (R, max(m)).
    """
    n_rows, n = key.shape
    width = int(m.max())
    rows = np.arange(n_rows)
    nxt = np.minimum(m, n - 1)
    log_delta = log_delta[:, :width]
    with np.errstate(invalid="ignore", over="ignore", under="ignore", divide="ignore"):
        if ratio is None:
            pivot = key[rows, m - 1]
            gap = 0.5 * (pivot - np.where(m < n, key[rows, nxt], -np.inf))  # (L_m - L_{m+1})/2
            h = np.subtract(key[:, :width], pivot[:, None])
        else:
            pivot = ratio[rows, m - 1]
            gap = 0.5 * np.log(pivot / np.where(m < n, ratio[rows, nxt], 0.0))
            h = np.divide(ratio[:, :width], pivot[:, None])
            np.log(h, out=h)
        np.multiply(h, 0.5, out=h)
        np.maximum(h, 0.0, out=h)  # h_i >= 0
        log_m1 = np.negative(h)
        np.expm1(log_m1, out=log_m1)
        np.negative(log_m1, out=log_m1)
        np.log(log_m1, out=log_m1)  # log(1 - e^{-h}); -inf at h = 0
        log_g = np.add(log_delta, h)  # log δ_i e^{h_i}
        if n_rows > 1:
            log_g[np.arange(width)[None, :] >= m[:, None]] = -np.inf  # not in this row's set
        tmp = np.add(log_g, log_m1)
        np.exp(tmp, out=tmp)
        f = tmp.sum(axis=1)  # Σ δ_i expm1(h_i)
        top = log_g.max(axis=1, keepdims=True)
        np.subtract(log_g, top, out=tmp)
        np.exp(tmp, out=tmp)
        log_g_sum = top[:, 0] + np.log(tmp.sum(axis=1))  # log Σ δ_i e^{h_i}
        feasible = f <= 1.0
        log_t = np.log1p(-np.minimum(f, 1.0)) - log_g_sum
        optimal = np.logaddexp(0.0, log_t) <= gap
        np.logaddexp(log_m1, log_t[:, None], out=log_m1)
        np.add(log_m1, log_g, out=log_m1)  # log q_i = log δ_i + h_i + log(1 - e^{-h_i} + t)
    return feasible, optimal, log_m1


def _harmonic_staleness(d: np.ndarray, w: np.ndarray, budget: float) -> np.ndarray:
    """Newton on t = log σ for log Σ q_i(e^t) = 0; all Δ, w > 0.

    Scaled by δ = Δ/B and q = p/B, stationarity q_i (q_i + δ_i) = w_i δ_i σ gives
    q_i = δ_i φ(c_i) with c_i = w_i σ/δ_i and φ(c) = 2c/(1 + √(1 + 4c)); it is
    evaluated as log q_i = log δ_i + log φ(e^{K_i + t}), K_i = log(ω_i/δ_i) with
    ω = w/max(w) (a constant factor in w only shifts t), so nothing
    over- or underflows. d log q_i/dt = (1 + 1/√(1 + 4c_i))/2 lies in [1/2, 1].
    """
    log_delta, k = (a[0] for a in _scaled_logs(d[None, :], w[None, :], np.array([[budget]])))
    big = 700.0  # e^{big} is finite; beyond it φ(c) = √c (1 + O(c^{-1/2}))

    base = log_delta + np.log(2.0)
    x, root, log_q, q = (np.empty_like(k) for _ in range(4))  # buffers reused by every step

    def evaluate(t):
        np.add(k, t, out=x)
        np.minimum(x, big, out=root)
        np.exp(root, out=root)
        np.multiply(root, 4.0, out=root)
        np.add(root, 1.0, out=root)
        np.sqrt(root, out=root)  # √(1 + 4c)
        np.log1p(root, out=log_q)
        np.subtract(x, log_q, out=log_q)
        np.add(log_q, base, out=log_q)  # log δ + log φ(c)
        if x.max() > big:
            np.copyto(log_q, log_delta + 0.5 * x, where=x > big)
        top = log_q.max()
        np.subtract(log_q, top, out=q)
        np.exp(q, out=q)
        total = q.sum()
        g = top + np.log(total)
        np.divide(q, root, out=q)
        slope = 0.5 * (1.0 + q.sum() / total)
        return g, slope

    # q_i <= √(w_i δ_i σ) and q_i <= w_i σ: either bound gives Σ q <= 1 at t = lo; the
    # slope of g is >= 1/2, so g(lo + 2|g(lo)|) >= 0.
    lse = lambda v: float(_logsumexp_rows(v[None, :])[0])
    lo = max(-2.0 * lse(0.5 * (k + 2.0 * log_delta)), -lse(k + log_delta))
    hi = np.inf
    t = lo
    for _ in range(200):  # Newton converges in a handful of steps; bisection safeguards
        g, slope = evaluate(t)
        if g > 0:
            hi = t
        else:
            lo = t
            hi = min(hi, t - 2.0 * g)
        if abs(g) <= 1e-14 or hi - lo <= 4e-16 * max(1.0, abs(t)):  # Σ p = B (1 ± 1e-14)
            break
        t_new = t - g / slope
        if not lo < t_new < hi:
            t_new = 0.5 * (lo + hi)
        t = t_new
    return _times_exp(np.float64(budget), log_q)


def crawl_objective(crawl_rates, change_rates, weights, *, objective="binary_freshness") -> float:
    r"""Value of a crawl-rate allocation under the freshness objectives.

    Parameters
    ----------
    crawl_rates : array_like of float
        p_i >= 0, crawls per unit time.
    change_rates : array_like of float, same shape
        Δ_i >= 0, changes per the same unit time.
    weights : float or array_like of float, same shape
        w_i >= 0.
    objective : {"binary_freshness", "harmonic_staleness"}, default "binary_freshness"

    Returns
    -------
    float
        Σ w_i p_i/(p_i + Δ_i) (a page with Δ_i = 0 counts as fresh, one with p_i = 0
        < Δ_i as stale) for ``"binary_freshness"``; −Σ w_i ln(p_i/(p_i + Δ_i)) (inf if
        a page with w_i Δ_i > 0 is never crawled; 0 for pages with w_i Δ_i = 0) for
        ``"harmonic_staleness"``.

    Raises
    ------
    ValueError
        For negative or non-finite values or mismatched shapes; unknown ``objective``.

    Examples
    --------
    >>> from changerate_bayes.scheduling import crawl_objective
    >>> crawl_objective([2.0, 2.0], [1.0, 4.0], 1.0)  # 2/3 + 1/3
    1.0
    """
    delta, w, p = _check_rates_weights(change_rates, weights, crawl_rates=crawl_rates)
    objective = check_choice(objective, name="objective", choices=_OBJECTIVES)
    if objective == "binary_freshness":
        denom = p + delta
        fresh = np.divide(p, denom, out=np.ones_like(denom), where=denom > 0)
        return float(np.sum(w * fresh))
    relevant = (w > 0) & (delta > 0)
    if np.any(relevant & (p == 0)):
        return float("inf")
    pr, dr, wr = p[relevant], delta[relevant], w[relevant]
    return float(np.sum(wr * np.log1p(dr / pr)))
