"""Optimal crawl rates for known change rates (paper Section 5; Azar et al.; Kolobov et al.)."""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import as_float_array, check_choice, check_positive_scalar

__all__ = ["optimal_crawl_rates", "crawl_objective"]

_OBJECTIVES = ("binary_freshness", "harmonic_staleness")


def _check_rates_weights(change_rates, weights, *, crawl_rates=None):
    delta = as_float_array(change_rates, name="change_rates", nonnegative=True)
    w = as_float_array(weights, name="weights", nonnegative=True)
    try:
        w = np.broadcast_to(w, delta.shape)
    except ValueError:
        raise ValueError(
            f"`weights` must be a scalar or have the shape of `change_rates` {delta.shape}; got {w.shape}"
        ) from None
    if crawl_rates is None:
        return delta, w
    p = as_float_array(crawl_rates, name="crawl_rates", nonnegative=True)
    if p.shape != delta.shape:
        raise ValueError(f"`crawl_rates` must have the shape of `change_rates` {delta.shape}; got {p.shape}")
    return delta, w, p


def _check_budget(budget) -> float:
    if isinstance(budget, np.ndarray) and budget.ndim == 0:
        budget = budget.item()
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
        raise TypeError(f"`budget` must be a real number; got {type(budget).__name__}")
    return check_positive_scalar(budget, name="budget")


def optimal_crawl_rates(change_rates, weights, budget, *, objective="binary_freshness") -> np.ndarray:
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

    Returns
    -------
    ndarray of float64, same shape as ``change_rates``
        The optimal crawl rates p_i >= 0, crawls per unit time; Σ p_i = B.

    Raises
    ------
    ValueError
        If a rate or weight is negative, NaN or infinite, if the shapes differ, if
        ``budget`` <= 0 or is not finite, or for an unknown ``objective``.
    TypeError
        If an argument is not numeric.

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
    s = (B + Σ_{i<=m} Δ_i) / Σ_{i<=m} \sqrt{w_i Δ_i} in closed form. Cost: one sort,
    O(N log N). A page whose Δ_i is too large for its weight gets p_i = 0: p_i is
    non-decreasing in w_i but *not* monotone in Δ_i (it rises, then falls to 0).

    *Harmonic staleness.* Stationarity w_i Δ_i / (p_i (p_i + Δ_i)) = λ gives the
    positive root p_i(s) = 2 w_i Δ_i s / (Δ_i + \sqrt{Δ_i^2 + 4 w_i Δ_i s}) with
    s = 1/λ (every page with w_i Δ_i > 0 is crawled); Σ p_i(s) = B is solved by
    safeguarded Newton steps on log Σ p_i(e^t) (slope between 1/2 and 1) to machine
    precision, O(N) per step. Here p_i is non-decreasing in both w_i and Δ_i.

    Pages with Δ_i = 0 (never change: fresh after one crawl) or w_i = 0 do not affect
    the objective and get p_i = 0; the whole budget goes to the others. If no page has
    w_i Δ_i > 0, every allocation is optimal and the budget is split equally.

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
    """
    delta, w = _check_rates_weights(change_rates, weights)
    budget = _check_budget(budget)
    objective = check_choice(objective, name="objective", choices=_OBJECTIVES)
    shape = delta.shape
    d = delta.ravel()
    ww = np.ascontiguousarray(w).ravel()
    out = np.zeros(d.shape)
    active = (d > 0) & (ww > 0)
    if not active.any():
        out[:] = budget / d.size
        return out.reshape(shape)
    if active.all():
        da, wa = d, ww
    else:
        da, wa = d[active], ww[active]
    if objective == "binary_freshness":
        pa = _binary_freshness(da, wa, budget)
    else:
        pa = _harmonic_staleness(da, wa, budget)
    if active.all():
        out = pa
    else:
        out[active] = pa
    return out.reshape(shape)


def _binary_freshness(d: np.ndarray, w: np.ndarray, budget: float) -> np.ndarray:
    """Exact water-filling for max Σ w p/(p+Δ), Σ p = B; all Δ, w > 0."""
    return _binary_freshness_rows(d[None, :], w[None, :], np.array([budget]))[0]


def _binary_freshness_rows(d: np.ndarray, w: np.ndarray, budget: np.ndarray) -> np.ndarray:
    """Row-wise exact water-filling: independent problems in the rows of (R, N) arrays.

    Entries with w Δ = 0 get 0; a row where every entry has w Δ = 0 is split equally.
    """
    valid = (d > 0) & (w > 0)
    all_valid = bool(valid.all())
    if all_valid:
        key, root, dv = w / d, np.sqrt(w * d), d  # breakpoints λ_i
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            key = np.where(valid, w / np.where(valid, d, 1.0), -1.0)
        root = np.sqrt(np.where(valid, w * d, 0.0))
        dv = np.where(valid, d, 0.0)
    order = np.argsort(key, axis=1)[:, ::-1]  # descending breakpoints, invalid entries last
    if d.shape[0] == 1:  # plain fancy indexing is faster than take_along_axis
        o = order[0]
        ks, s_cum, d_cum = key[:, o], np.cumsum(root[:, o], axis=1), np.cumsum(dv[:, o], axis=1)
    else:
        ks = np.take_along_axis(key, order, axis=1)
        s_cum = np.cumsum(np.take_along_axis(root, order, axis=1), axis=1)
        d_cum = np.cumsum(np.take_along_axis(dv, order, axis=1), axis=1)
    # F_j = f(λ_j) = Σ_{i<j} (sqrt(w_i Δ_i / λ_j) - Δ_i) is non-decreasing; F_1 = 0 < B.
    f_break = np.zeros(d.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        f_break[:, 1:] = np.where(ks[:, 1:] > 0, s_cum[:, :-1] / np.sqrt(ks[:, 1:]) - d_cum[:, :-1], np.inf)
    b = budget[:, None]
    m = np.count_nonzero(f_break < b, axis=1)  # the active set is the first m entries
    last = (m - 1)[:, None]
    s_m = np.take_along_axis(s_cum, last, axis=1)
    d_m = np.take_along_axis(d_cum, last, axis=1)
    k_m = np.take_along_axis(ks, last, axis=1)
    empty = s_m[:, 0] <= 0  # no entry with w Δ > 0 in the row
    s_m = np.where(empty[:, None], 1.0, s_m)
    scale = (b + d_m) / s_m  # s = λ^{-1/2}
    p = scale * root - dv
    p[(key < k_m) | (p < 0.0)] = 0.0
    if not all_valid:
        p[~valid] = 0.0
    if empty.any():
        p[empty] = (budget[empty] / d.shape[1])[:, None]
    return p


def _harmonic_p(d, w, s):
    wds = w * d * s
    return 2.0 * wds / (d + np.sqrt(d * d + 4.0 * wds))


def _harmonic_staleness(d: np.ndarray, w: np.ndarray, budget: float) -> np.ndarray:
    """Newton on t = log s for Σ p_i(e^t) = B; all Δ, w > 0."""
    wd = w * d
    # p_i(s) <= sqrt(w_i Δ_i s) and p_i(s) <= w_i s: both give Σ p <= B, a lower end.
    # Σ p(s) grows at least like sqrt(s), so 4 ** j steps up find an upper end.
    lo = max(2.0 * np.log(budget / np.sqrt(wd).sum()), np.log(budget / w.sum()))
    hi = np.inf
    t = lo
    for _ in range(400):
        s = np.exp(t)
        p = _harmonic_p(d, w, s)
        total = p.sum()
        g = np.log(total / budget)
        if g > 0:
            hi = t
        else:
            lo = t
        if abs(g) <= 4e-16 or hi - lo <= 1e-15 * max(1.0, abs(t)):
            break
        slope = s * (wd / (2.0 * p + d)).sum() / total  # d log Σp / d log s, in [1/2, 1]
        t_new = t - g / slope
        if not lo < t_new < hi:
            t_new = 0.5 * (lo + hi) if np.isfinite(hi) else lo + np.log(4.0)
        t = t_new
    return p


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
