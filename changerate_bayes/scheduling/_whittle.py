r"""Whittle index for crawling ephemeral content (Avrachenkov & Borkar).

One source, crawl epochs every T. State x = expected utility of the content not yet
crawled; passive (v = 0): reward 0 plus a subsidy Cλ, x <- αx + u; active (v = 1):
reward x, x <- u. Reachable states lie in [u, u*], u* = u/(1-α).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from .._validation import as_float_array, check_choice, check_positive_scalar, first_bad_index
from ._shapes import broadcast_together

__all__ = [
    "whittle_index",
    "whittle_index_numerical",
    "IndexabilityResult",
    "check_indexability",
]

_STATE_RTOL = 1e-12


def _check_params(alpha, inflow, cost):
    a = as_float_array(alpha, name="alpha")
    bad = ~((a > 0) & (a < 1))
    if bad.any():
        raise ValueError(f"`alpha` must be in (0, 1); got {a[bad].flat[0]} at index {first_bad_index(bad)}")
    u = as_float_array(inflow, name="inflow", positive=True)
    c = as_float_array(cost, name="cost", positive=True)
    return a, u, c


def _check_state(x, a, u):
    """Broadcast and check u <= x <= u/(1-α) (relative slack 1e-12 for round-off)."""
    x, a, u = broadcast_together(state=x, alpha=a, inflow=u)
    ustar = u / (1.0 - a)
    bad = (x < u * (1 - _STATE_RTOL)) | (x > ustar * (1 + _STATE_RTOL))
    if bad.any():
        i = np.argwhere(bad)[0]
        idx = tuple(int(j) for j in i)
        raise ValueError(
            "`state` must lie in [inflow, inflow/(1-alpha)] (the reachable states); "
            f"got {x[idx]} at index {first_bad_index(bad)} where the interval is [{u[idx]}, {ustar[idx]}]"
        )
    return np.clip(x, u, ustar), a, u, ustar


def _index_formula(x, a, u, ustar):
    """γ(x)·C for states in [u, u*] (any x <= u also works: η = 0 there)."""
    arg = 1.0 - (1.0 - a) * x / u  # in [0, α] on the state space
    top = arg <= 0.0
    safe = np.where(top, a, arg)
    eta = np.maximum(np.ceil(np.log(safe) / np.log(a)) - 1.0, 0.0)
    x_eta = u * (-np.expm1((eta + 1.0) * np.log(a))) / (1.0 - a)  # u(1-α^{η+1})/(1-α)
    val = x_eta - (eta + 1.0) * u * safe
    return np.where(top, ustar, val)


def whittle_index(state, *, alpha, inflow, cost=1.0):
    r"""Whittle index of a source of ephemeral content in state x.

    Parameters
    ----------
    state : float or array_like
        x, the expected utility of the source's uncrawled content at a crawl epoch
        (utility units); must lie in the reachable interval [u, u/(1-α)].
    alpha : float or array_like in (0, 1)
        α = exp(-μT): the fraction of utility content keeps over one crawl period.
    inflow : float or array_like, > 0
        u: expected utility, at the end of a period, of the content that arrived during
        it (u = Λ ξ̄ (1 - e^{-μT})/μ for Poisson(Λ) arrivals of mean utility ξ̄).
    cost : float or array_like, > 0, default 1.0
        C, the crawl cost in the constraint Σ C_i v_i <= M.

    Returns
    -------
    float or ndarray
        The index γ(x) (utility per unit cost, per period), broadcast over the inputs.

    Raises
    ------
    ValueError
        If α is not in (0, 1), ``inflow`` or ``cost`` <= 0, a value is NaN/inf, a
        state lies outside [u, u/(1-α)] or the shapes do not broadcast.

    Notes
    -----
    Derivation (the paper states the model; its formulas are lost in the text we have).
    With subsidy λ for passivity, the single-source problem is the average-reward DP
    V(x) + β = max{x + V(u), Cλ + V(αx + u)}. Started at u, passive states climb
    x_n = u(1-α^{n+1})/(1-α) towards u* = u/(1-α). A threshold policy that is passive
    n times and crawls at x_n earns, per cycle of n+1 periods,
    g_n(λ) = (nCλ + x_n)/(n+1). At λ = γ(x) the source is indifferent at x; as its
    successor αx + u lies above x, it is then crawled, so
    x - β = Cλ + (αx + u) - 2β, i.e. β = Cλ + u - (1-α)x, while β = g_η(λ) for the
    cycle whose crawl state is the first x_n >= x, η(x) = min{n >= 0 : x_n >= x} =
    ⌈log_α(1 - (1-α)x/u)⌉ - 1. Solving,

    .. math:: C\,γ(x) = x_{η} - (η + 1)\,\bigl(u - (1-α)x\bigr),
              \qquad x_η = u\,\frac{1-α^{η+1}}{1-α}.

    γ is continuous, piecewise linear and increasing from γ(u) = (1-α)u/C to
    γ(u*) = u*/C; on the grid, Cγ(x_n) = x_n - (n+1)uα^{n+1}. Increasing γ means
    the passive sets grow with λ: the problem is indexable. The stochastic model
    (random arrivals with mean u) has the same index (the paper's stochastic section).

    Checked against :func:`whittle_index_numerical` (the subsidy problem solved by
    policy search over plans or by relative value iteration, then root finding on λ;
    no use of the formula) and :func:`check_indexability`.

    References
    ----------
    K. Avrachenkov, V. S. Borkar, "Whittle index policy for crawling ephemeral
    content", IEEE Trans. Control Netw. Syst. 2018 (Theorem 1; eqs. (15)-(16)).

    Examples
    --------
    >>> from changerate_bayes.scheduling import whittle_index
    >>> whittle_index([1.0, 1.5, 2.0], alpha=0.5, inflow=1.0)  # (1-α)u, x_1 - 2uα², u*
    array([0.5, 1. , 2. ])
    """
    a, u, c = _check_params(alpha, inflow, cost)
    x = as_float_array(state, name="state")
    x, a, u, ustar = _check_state(x, a, u)
    out = _index_formula(x, a, u, ustar) / c
    return out[()] if out.ndim == 0 else out


def _extended_index(x, a, u, c):
    """Index used by the stochastic simulation for any state x >= 0.

    Below u the formula with η = 0 continues exactly ((1-α)x/C). Above u* (possible
    only with random arrivals) the indifference equation has no solution: crawling is
    strictly better at every subsidy. We continue with x/C (continuous at u*,
    increasing): a heuristic ranking, stated in the report.
    """
    ustar = u / (1.0 - a)
    below = _index_formula(np.minimum(x, ustar), a, u, ustar)
    return np.where(x > ustar, x, below) / c


# ----------------------------------------------------------------- numerical check
def _rvi_gap(x, lam, a, u, c, *, tol=1e-13, max_iter=200_000, tau=0.5):
    """Q_passive(x) - Q_active(x) by relative value iteration of the subsidy problem.

    ``x`` may be an array of states, solved together. Finite deterministic MDP: the
    passive chain from u (x_0..x_L) and from each x (y_0..y_L), L such that
    α^L < 1e-16 (the last state of a chain loops on itself when passive); active
    always leads to x_0 = u. Aperiodicity transform h <- τ T h + (1-τ) h, normalised
    at u; stop when the sup-norm change < tol (relative to max |h|).
    """
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    big_l = int(np.ceil(np.log(1e-16) / np.log(a))) + 2
    j = np.arange(big_l + 1)
    starts = np.concatenate([[u], x])  # chain 0 starts at u: the grid x_n
    states = (a**j * starts[:, None] + u * (1.0 - a**j) / (1.0 - a)).ravel()
    n = big_l + 1
    nxt = (np.arange(starts.size)[:, None] * n + np.minimum(j + 1, big_l)).ravel()
    subsidy = c * lam
    h = np.zeros(states.size)
    for _ in range(max_iter):
        th = tau * np.maximum(states + h[0], subsidy + h[nxt]) + (1.0 - tau) * h
        h_new = th - th[0]
        done = np.max(np.abs(h_new - h)) < tol * max(1.0, np.max(np.abs(h_new)))
        h = h_new
        if done:
            break
    else:  # pragma: no cover - the transformed chain is aperiodic and unichain
        raise RuntimeError("relative value iteration did not converge")
    first = np.arange(1, starts.size) * n  # y_0 = x of each chain
    return (subsidy + h[nxt[first]]) - (x + h[0])


def _policy_search_gap(x, lam, a, u, c):
    """Q_passive(x) - Q_active(x) by searching all plans of the deterministic problem.

    From u every plan is a sequence of cycles "passive n times, then crawl x_n" (or
    never crawl), so the optimal average reward is β = max(Cλ, max_n g_n) with
    g_n = (nCλ + x_n)/(n+1). Relative values (h(u) = 0) follow by searching the first
    crawl time m of the passive chain y_m from y: h(y) = max_m [m(Cλ - β) + y_m - β],
    or 0 for never crawling when β = Cλ. Chains are truncated where α^L < 1e-17.
    """
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))
    big_l = int(np.ceil(np.log(1e-17) / np.log(a))) + 2
    m = np.arange(big_l + 1)
    subsidy = c * lam
    grid = u * (1.0 - a ** (m + 1)) / (1.0 - a)
    beta = max(subsidy, float(np.max((m * subsidy + grid) / (m + 1))))
    y0 = a * x + u  # passive successor of x
    chain = a**m * y0[:, None] + u * (1.0 - a**m) / (1.0 - a)
    h_next = np.max(m * (subsidy - beta) + chain - beta, axis=1)
    if beta == subsidy:
        h_next = np.maximum(h_next, 0.0)
    return (subsidy - beta + h_next) - (x - beta)


_GAPS = {"policy_search": _policy_search_gap, "value_iteration": _rvi_gap}


def whittle_index_numerical(state, *, alpha, inflow, cost=1.0, method="policy_search", xtol=1e-13):
    r"""Whittle index by solving the subsidy problem numerically (no closed form).

    For each state x, the subsidy λ at which passive and active are equally good at x
    is found by Brent's method on λ; for each trial λ the average-reward subsidy
    problem is solved numerically. An independent check of :func:`whittle_index`.

    Parameters
    ----------
    state : float or array_like
        States x in [u, u/(1-α)] (a loop over states: keep it to a handful).
    alpha, inflow, cost : float
        α in (0, 1), u > 0, C > 0 (scalars).
    method : {"policy_search", "value_iteration"}, default "policy_search"
        How the subsidy problem is solved for each λ (see Notes). Value iteration
        needs about (cycle length)^2 sweeps: seconds per state for α >= 0.9.
    xtol : float, default 1e-13
        Absolute tolerance on λ.

    Returns
    -------
    float or ndarray
        The index at each state, shaped like ``state``.

    Raises
    ------
    ValueError
        As :func:`whittle_index`, or for an unknown ``method``.

    Notes
    -----
    ``"value_iteration"``: the states reachable from x are the passive chain of x and,
    after a crawl, the chain x_n from u; both are truncated where α^L < 1e-16 (the
    truncated state loops on itself). Relative value iteration with the aperiodicity
    transform h <- τ max_a(r_a + h(next_a)) + (1-τ)h, h(u) = 0, converges to the
    relative values. ``"policy_search"``: the dynamics are deterministic and every
    crawl resets to u, so every plan from u is a sequence of cycles; the optimal
    average reward is the best cycle average (or Cλ for never crawling) and the
    relative value of a state is the best over the time of its first crawl.
    Either way the sign of Q_passive(x) - Q_active(x) = Cλ + h(αx+u) - x - h(u)
    brackets the index, which lies in [(1-α)u/C, u*/C] (bracket widened by 1).

    Examples
    --------
    >>> from changerate_bayes.scheduling import whittle_index_numerical
    >>> round(float(whittle_index_numerical(1.5, alpha=0.5, inflow=1.0)), 10)
    1.0
    """
    a = check_positive_scalar(alpha, name="alpha")
    _check_params(a, inflow, cost)
    u = check_positive_scalar(inflow, name="inflow")
    c = check_positive_scalar(cost, name="cost")
    gap = _GAPS[check_choice(method, name="method", choices=tuple(_GAPS))]
    x = as_float_array(state, name="state")
    xs, _, _, _ = _check_state(x, np.float64(a), np.float64(u))
    lo, hi = (1.0 - a) * u / c - 1.0, u / (1.0 - a) / c + 1.0
    out = np.empty(xs.shape)
    for idx, xv in np.ndenumerate(xs):  # a handful of states: each is a root search
        out[idx] = optimize.brentq(lambda lam: float(gap(xv, lam, a, u, c)[0]), lo, hi, xtol=xtol, rtol=1e-15)
    return out[()] if out.ndim == 0 else out


@dataclass(frozen=True)
class IndexabilityResult:
    """Passive sets of the subsidy problem on a grid of subsidies and states.

    Attributes
    ----------
    subsidies : ndarray, shape (m,)
        λ values, increasing.
    states : ndarray, shape (n,)
        x values in [u, u*].
    passive : ndarray of bool, shape (m, n)
        ``passive[i, j]``: passivity is optimal at ``states[j]`` under ``subsidies[i]``
        (Q_passive - Q_active > ``margin``; ties within ``margin`` count as passive).
    indexable : bool
        Whether the passive sets are nested, B(λ_i) ⊆ B(λ_{i+1}), i.e. grow with λ.
    statistic : int
        Number of (i, j) violating the nesting (0 when indexable).
    """

    subsidies: np.ndarray
    states: np.ndarray
    passive: np.ndarray
    indexable: bool
    statistic: int


def check_indexability(*, alpha, inflow, cost=1.0, subsidies=None, states=None, margin=1e-10, method="policy_search"):
    """Check Whittle indexability numerically: passive sets must grow with the subsidy.

    Parameters
    ----------
    alpha, inflow, cost : float
        α in (0, 1), u > 0, C > 0.
    subsidies : array_like, optional
        λ grid; default 41 values spanning [(1-α)u/C - 0.1 u*, 1.1 u*/C].
    states : array_like, optional
        States in [u, u*]; default 41 equally spaced.
    margin : float, default 1e-10
        Ties abs(Q_passive - Q_active) <= margin count as passive.
    method : {"policy_search", "value_iteration"}, default "policy_search"
        How each subsidy problem is solved (see :func:`whittle_index_numerical`).

    Returns
    -------
    IndexabilityResult

    Examples
    --------
    >>> from changerate_bayes.scheduling import check_indexability
    >>> check_indexability(alpha=0.5, inflow=1.0, subsidies=[0.2, 0.9, 1.5], states=[1.0, 1.5, 1.9]).indexable
    True
    """
    a = check_positive_scalar(alpha, name="alpha")
    _check_params(a, inflow, cost)
    u = check_positive_scalar(inflow, name="inflow")
    c = check_positive_scalar(cost, name="cost")
    ustar = u / (1.0 - a)
    lam = (
        np.linspace((1 - a) * u / c - 0.1 * ustar, 1.1 * ustar / c, 41)
        if subsidies is None
        else as_float_array(subsidies, name="subsidies", ndim=(1,))
    )
    if np.any(np.diff(lam) <= 0):
        raise ValueError("`subsidies` must be strictly increasing")
    gap = _GAPS[check_choice(method, name="method", choices=tuple(_GAPS))]
    xs = np.linspace(u, ustar, 41) if states is None else as_float_array(states, name="states", ndim=(1,))
    xs, _, _, _ = _check_state(xs, np.float64(a), np.float64(u))
    passive = np.array([gap(xs, lv, a, u, c) >= -margin for lv in lam])
    violations = int(np.sum(passive[:-1] & ~passive[1:]))
    return IndexabilityResult(lam, xs, passive, violations == 0, violations)
