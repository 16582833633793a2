"""Crawling sources of ephemeral content: index policy, greedy baselines, exact DP.

Model of Avrachenkov & Borkar (see :mod:`._whittle`): N sources, crawl epochs every
T, at most M sources crawled per epoch (all costs C_i = 1 here).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from .._rng import as_generator
from .._validation import as_float_array, check_choice, check_positive_int, check_positive_scalar
from ._whittle import _extended_index

__all__ = [
    "EphemeralSources",
    "EphemeralSimulation",
    "EphemeralDPSolution",
    "simulate_ephemeral_crawling",
    "solve_ephemeral_dp",
    "schedule_period",
]

_POLICIES = ("whittle", "greedy", "static", "optimal")


@dataclass(frozen=True)
class EphemeralSources:
    """Sources of ephemeral content (Avrachenkov & Borkar, Section 2).

    Parameters
    ----------
    arrival_rate : array_like, shape (N,)
        Λ_i > 0, new items per unit time (Poisson).
    mean_utility : array_like, shape (N,)
        ξ̄_i > 0, mean initial utility of an item (utilities are exponential).
    decay_rate : array_like, shape (N,)
        μ_i > 0 per unit time: an item's utility decays as exp(-μ_i t).
    period : float, default 1.0
        T > 0, time between crawl epochs.

    Attributes
    ----------
    alpha : ndarray, shape (N,)
        α_i = exp(-μ_i T).
    inflow : ndarray, shape (N,)
        u_i = Λ_i ξ̄_i (1 - e^{-μ_i T})/μ_i, the expected utility at the end of a
        period of the items that arrived during it.

    Examples
    --------
    >>> from changerate_bayes.scheduling import EphemeralSources
    >>> s = EphemeralSources([10.0], [1.0], [np.log(2.0)])
    >>> float(s.alpha[0]), round(float(s.inflow[0]), 4)  # 10 (1 - 1/2)/ln 2
    (0.5, 7.2135)
    """

    arrival_rate: np.ndarray
    mean_utility: np.ndarray
    decay_rate: np.ndarray
    period: float = 1.0
    alpha: np.ndarray = field(init=False, repr=False)
    inflow: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        lam = as_float_array(self.arrival_rate, name="arrival_rate", positive=True, ndim=(1,))
        xi = as_float_array(self.mean_utility, name="mean_utility", positive=True, ndim=(1,))
        mu = as_float_array(self.decay_rate, name="decay_rate", positive=True, ndim=(1,))
        if not lam.shape == xi.shape == mu.shape:
            raise ValueError(
                "`arrival_rate`, `mean_utility` and `decay_rate` must have the same shape (N,); "
                f"got {lam.shape}, {xi.shape}, {mu.shape}"
            )
        t = check_positive_scalar(self.period, name="period")
        object.__setattr__(self, "arrival_rate", lam)
        object.__setattr__(self, "mean_utility", xi)
        object.__setattr__(self, "decay_rate", mu)
        object.__setattr__(self, "period", t)
        object.__setattr__(self, "alpha", np.exp(-mu * t))
        object.__setattr__(self, "inflow", lam * xi * (-np.expm1(-mu * t)) / mu)

    @property
    def n_sources(self) -> int:
        """N, the number of sources."""
        return int(self.alpha.size)

    def sample_inflow(self, n_periods: int, rng=None) -> np.ndarray:
        """Random utility U_i(t) that each period adds (stochastic model, paper Section 6).

        Items arrive as a Poisson(Λ_i T) number at uniform times s in the period, with
        exponential utilities of mean ξ̄_i, and count ξ e^{-μ_i (T - s)} at its end;
        E[U_i] = u_i.

        Returns
        -------
        ndarray, shape (n_periods, N)
        """
        n_periods = check_positive_int(n_periods, name="n_periods")
        gen = as_generator(rng)
        shape = (n_periods, self.n_sources)
        counts = gen.poisson(self.arrival_rate * self.period, size=shape)
        cell = np.repeat(np.arange(counts.size), counts.ravel())
        src = cell % self.n_sources
        age = gen.random(cell.size) * self.period  # time from arrival to the period's end
        value = gen.standard_exponential(cell.size) * self.mean_utility[src] * np.exp(-self.decay_rate[src] * age)
        return np.bincount(cell, weights=value, minlength=counts.size).reshape(shape)


@dataclass(frozen=True)
class EphemeralDPSolution:
    """Exact optimum of the N-source problem by relative value iteration.

    Attributes
    ----------
    average_reward : float
        β*, the optimal long-run average reward per period.
    action_sets : tuple of tuple of int
        The allowed crawl sets (all subsets of size M).
    policy : ndarray of int, shape (L_1+1, ..., L_N+1)
        Index into ``action_sets`` of an optimal action for each vector of ages
        (periods since the source's last crawl, capped at ``max_age``).
    max_age : ndarray of int, shape (N,)
        Age caps L_i, chosen so that α_i^{L_i} <= ``truncation``.
    iterations : int
    """

    average_reward: float
    action_sets: tuple
    policy: np.ndarray
    max_age: np.ndarray
    iterations: int


def _check_sources(sources):
    if not isinstance(sources, EphemeralSources):
        raise TypeError(f"`sources` must be an EphemeralSources; got {type(sources).__name__}")
    return sources


def _check_active(n_active, n_sources):
    n_active = check_positive_int(n_active, name="n_active")
    if n_active > n_sources:
        raise ValueError(f"`n_active` must be <= the number of sources {n_sources}; got {n_active}")
    return n_active


def solve_ephemeral_dp(sources, n_active=1, *, truncation=1e-10, tol=1e-11, max_iter=200_000):
    """Exact optimal crawl schedule for a few sources by dynamic programming.

    The deterministic model: source i's state after n passive periods since its last
    crawl is x_{i,n} = u_i (1 - α_i^{n+1})/(1 - α_i), so the vector of ages is a finite
    state (ages capped at L_i, where α_i^{L_i} <= ``truncation``; the reward lost to the
    cap is below u_i* α_i^{L_i} per crawl). Exactly M sources are crawled per period.
    Solved by relative value iteration with the aperiodicity transform (τ = 1/2).

    Parameters
    ----------
    sources : EphemeralSources
        N sources; the state space has Π (L_i + 1) points, so keep N <= 3 or 4.
    n_active : int, default 1
        M, sources crawled per period.
    truncation : float, default 1e-10
    tol : float, default 1e-11
        Stop when the relative values change by less than ``tol`` (sup norm, relative
        to the largest inflow).
    max_iter : int, default 200000

    Returns
    -------
    EphemeralDPSolution

    Raises
    ------
    ValueError
        If M > N, the state space exceeds 5 million points, or value iteration does not
        converge.

    Examples
    --------
    >>> from changerate_bayes.scheduling import EphemeralSources, solve_ephemeral_dp
    >>> src = EphemeralSources([1.0, 1.0], [1.0, 1.0], [1.0, 1.0])
    >>> sol = solve_ephemeral_dp(src, 1)  # two equal sources: alternate, x_1 each time
    >>> round(sol.average_reward, 8) == round(float(src.inflow[0] * (1 + src.alpha[0])), 8)
    True
    """
    src = _check_sources(sources)
    m_act = _check_active(n_active, src.n_sources)
    a, u = src.alpha, src.inflow
    cap = np.maximum(np.ceil(np.log(truncation) / np.log(a)).astype(int), 1)
    shape = tuple(int(c) + 1 for c in cap)
    if np.prod(shape, dtype=float) > 5e6:
        raise ValueError(f"the DP state space {shape} has more than 5 million points; use fewer sources")
    n = src.n_sources
    ages = np.indices(shape).reshape(n, -1)  # (N, S)
    value = u[:, None] * (1.0 - a[:, None] ** (ages + 1)) / (1.0 - a[:, None])  # x_{i, n_i}
    passive_next = np.minimum(ages + 1, cap[:, None])
    sets = tuple(itertools.combinations(range(n), m_act))
    rewards, nexts = [], []
    for subset in sets:  # a handful of actions
        crawled = np.zeros(n, bool)
        crawled[list(subset)] = True
        rewards.append(value[crawled].sum(axis=0))
        nxt_ages = np.where(crawled[:, None], 0, passive_next)
        nexts.append(np.ravel_multi_index(tuple(nxt_ages), shape))
    rewards = np.array(rewards)
    nexts = np.array(nexts)
    h = np.zeros(ages.shape[1])
    scale = tol * float(np.max(u))
    tau = 0.5
    for it in range(1, max_iter + 1):  # noqa: B007 (the count is returned)
        q = rewards + h[nexts]
        th = tau * q.max(axis=0) + (1.0 - tau) * h
        gain = th[0] - h[0]
        h_new = th - th[0]
        delta = np.max(np.abs(h_new - h))
        h = h_new
        if delta < scale:
            break
    else:
        raise ValueError(f"relative value iteration did not converge in {max_iter} iterations")
    q = rewards + h[nexts]
    policy = q.argmax(axis=0).reshape(shape)
    return EphemeralDPSolution(float(gain / tau), sets, policy, cap, it)


@dataclass(frozen=True)
class EphemeralSimulation:
    """A simulated crawl schedule.

    Attributes
    ----------
    policy : str
    states : ndarray, shape (n_periods, N)
        X_i(t) at each decision epoch, before crawling.
    crawled : ndarray of bool, shape (n_periods, N)
    rewards : ndarray, shape (n_periods,)
        Utility collected per period.
    average_reward : float
        Mean reward over periods ``burn_in`` .. end; for deterministic arrivals over
        the last whole number of periods of the schedule when its tail is periodic.
    burn_in : int
    """

    policy: str
    states: np.ndarray
    crawled: np.ndarray
    rewards: np.ndarray
    average_reward: float
    burn_in: int


def simulate_ephemeral_crawling(
    sources,
    n_active=1,
    *,
    policy="whittle",
    n_periods=2000,
    burn_in=None,
    stochastic=False,
    dp=None,
    rng=None,
):
    """Simulate a crawl policy on sources of ephemeral content.

    Each period the policy crawls ``n_active`` sources: a crawled source yields its state
    X_i as reward and restarts from the period's inflow; the others keep α_i X_i plus
    the inflow. Sources start just crawled (X_i = u_i, or a random first inflow).

    Parameters
    ----------
    sources : EphemeralSources
    n_active : int, default 1
        M, sources crawled per period.
    policy : {"whittle", "greedy", "static", "optimal"}, default "whittle"
        ``"whittle"``: the M largest Whittle indices (:func:`whittle_index`; with
        random arrivals a state can leave [u, u*]: below u the formula continues
        exactly, above u* the index is continued by x, see the report). ``"greedy"``:
        the M largest current states (largest immediate reward). ``"static"``: always
        the M sources with the largest inflow u_i. ``"optimal"``: the DP policy
        ``dp`` acting on the ages (periods since each source's last crawl).
        Ties go to the lower source index.
    n_periods : int, default 2000
    burn_in : int, optional
        Periods left out of ``average_reward`` (default: half).
    stochastic : bool, default False
        Random Poisson arrivals (:meth:`EphemeralSources.sample_inflow`) instead of
        their mean.
    dp : EphemeralDPSolution, optional
        Required for ``policy="optimal"``.
    rng : int, numpy.random.Generator or None
        Used only when ``stochastic``.

    Returns
    -------
    EphemeralSimulation

    Raises
    ------
    ValueError
        Unknown policy, M > N, ``burn_in`` >= ``n_periods``, or ``"optimal"`` without
        a matching ``dp``.

    Examples
    --------
    >>> from changerate_bayes.scheduling import EphemeralSources, simulate_ephemeral_crawling
    >>> src = EphemeralSources([1.0, 1.0], [1.0, 1.0], [1.0, 1.0])
    >>> sim = simulate_ephemeral_crawling(src, 1, policy="whittle", n_periods=100)
    >>> sim.crawled[-4:].argmax(axis=1).tolist()  # alternates
    [0, 1, 0, 1]
    """
    src = _check_sources(sources)
    m_act = _check_active(n_active, src.n_sources)
    policy = check_choice(policy, name="policy", choices=_POLICIES)
    n_periods = check_positive_int(n_periods, name="n_periods", minimum=2)
    burn_in = n_periods // 2 if burn_in is None else check_positive_int(burn_in, name="burn_in", minimum=0)
    if burn_in >= n_periods:
        raise ValueError(f"`burn_in` must be < n_periods = {n_periods}; got {burn_in}")
    if policy == "optimal":
        if not isinstance(dp, EphemeralDPSolution) or dp.max_age.size != src.n_sources:
            raise ValueError("`dp` must be the EphemeralDPSolution of these sources for policy='optimal'")
        if len(dp.action_sets[0]) != m_act:
            raise ValueError(f"`dp` was solved for M = {len(dp.action_sets[0])}, not n_active = {m_act}")
    a, u = src.alpha, src.inflow
    n = src.n_sources
    inflow = src.sample_inflow(n_periods + 1, rng) if stochastic else np.broadcast_to(u, (n_periods + 1, n))
    x = inflow[0].copy()
    ages = np.zeros(n, dtype=int)
    states = np.empty((n_periods, n))
    crawled = np.zeros((n_periods, n), dtype=bool)
    order_static = np.argsort(-u, kind="stable")[:m_act]
    ones = np.ones(n)
    for t in range(n_periods):  # a loop over periods; each step is vectorised over sources
        states[t] = x
        if policy == "whittle":
            pick = np.argsort(-_extended_index(x, a, u, ones), kind="stable")[:m_act]
        elif policy == "greedy":
            pick = np.argsort(-x, kind="stable")[:m_act]
        elif policy == "static":
            pick = order_static
        else:
            act = dp.policy[tuple(np.minimum(ages, dp.max_age))]
            pick = list(dp.action_sets[act])
        crawled[t, pick] = True
        x = np.where(crawled[t], 0.0, a * x) + inflow[t + 1]
        ages = np.where(crawled[t], 0, ages + 1)
    rewards = np.sum(states * crawled, axis=1)
    tail = rewards[burn_in:]
    if not stochastic:  # average over whole periods of the (eventually periodic) schedule
        period = schedule_period(crawled[burn_in:])
        if period is not None:
            tail = tail[len(tail) % period :]
    return EphemeralSimulation(policy, states, crawled, rewards, float(tail.mean()), burn_in)


def schedule_period(crawled, *, max_period=None) -> int | None:
    """Smallest period of a crawl schedule (rows = periods, columns = sources).

    Parameters
    ----------
    crawled : array_like of bool, shape (n_periods, N)
        The tail of a schedule (drop the transient first).
    max_period : int, optional
        Largest period tried (default n_periods // 2).

    Returns
    -------
    int or None
        The smallest P with crawled[t] == crawled[t + P] for every t, or None.

    Examples
    --------
    >>> from changerate_bayes.scheduling import schedule_period
    >>> schedule_period([[1, 0], [0, 1]] * 5)
    2
    """
    c = np.asarray(crawled, dtype=bool)
    if c.ndim != 2:
        raise ValueError(f"`crawled` must have shape (n_periods, N); got {c.shape}")
    top = c.shape[0] // 2 if max_period is None else int(max_period)
    for p in range(1, top + 1):  # a loop over candidate periods
        if np.array_equal(c[p:], c[:-p]):
            return p
    return None
