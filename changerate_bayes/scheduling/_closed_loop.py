"""Closing the loop: estimate change rates online while allocating the crawl budget.

N pages change as Poisson processes with unknown rates Δ_i; a crawler with budget B
(crawls per unit time) re-solves the binary-freshness problem every epoch with its
current estimates and crawls page i as a Poisson process of rate p_i during the next
epoch. It is scored by the time-averaged weighted freshness against an oracle that
knows Δ (paper Section 5; Azar et al. 2018).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .._rng import as_generator
from .._validation import as_float_array, check_choice, check_positive_int, check_positive_scalar
from ..estimators import estimate_path
from ..history import CrawlHistory
from ._optimal_rates import _binary_freshness_rows
from ._shapes import broadcast_weights

__all__ = ["CLOSED_LOOP_POLICIES", "ClosedLoopResult", "simulate_closed_loop"]

#: Policies understood by :func:`simulate_closed_loop`.
CLOSED_LOOP_POLICIES = ("oracle", "uniform", "lln", "sam", "posterior_mean", "thompson")
_LEARNERS = ("lln", "sam", "posterior_mean", "thompson")


@dataclass(frozen=True)
class ClosedLoopResult:
    """Output of :func:`simulate_closed_loop`.

    Attributes
    ----------
    policies : tuple of str
    epoch_end : ndarray, shape (n_epochs,)
        End time of each epoch (unit of 1/Δ).
    freshness : ndarray, shape (n_policies, n_replications, n_epochs)
        Weighted freshness Σ w_i fresh_i(t) / Σ w_i averaged over each epoch: its
        expectation over the change process given the simulated crawl times.
    oracle_freshness : ndarray, shape (n_replications,)
        F* = Σ w_i p*_i/(p*_i + Δ_i) / Σ w_i, the steady state of the oracle.
    regret : ndarray, shape (n_policies, n_replications, n_epochs)
        Cumulative regret Σ_{e' <= e} (F* - freshness_{e'}) × epoch_length (time units).
    estimate_within_2x : ndarray, shape (n_policies, n_replications, n_epochs)
        Weighted fraction of pages whose estimate Δ̂_i used at the start of the epoch
        (posterior mean for "thompson") is within a factor 2 of Δ_i; NaN for
        "oracle" and "uniform".
    crawled_fraction : ndarray, shape (n_policies, n_replications, n_epochs)
        Weighted fraction of pages with p_i > 0 in each epoch.
    """

    policies: tuple
    epoch_end: np.ndarray
    freshness: np.ndarray
    oracle_freshness: np.ndarray
    regret: np.ndarray
    estimate_within_2x: np.ndarray
    crawled_fraction: np.ndarray

    def summary(self, last: int | None = None) -> list[dict]:
        """Tidy per-policy summary: mean freshness over all (or the ``last``) epochs and final regret.

        Returns
        -------
        list of dict
            Keys ``policy``, ``freshness`` (mean over replications), ``freshness_se``
            (standard error over replications, None for one replication),
            ``oracle_freshness``, ``final_regret``, ``final_regret_se``.
        """
        sl = slice(None) if last is None else slice(-int(last), None)
        rows = []
        n_rep = self.freshness.shape[1]
        for j, name in enumerate(self.policies):
            f = self.freshness[j, :, sl].mean(axis=1)
            r = self.regret[j, :, -1]
            se = lambda v: float(v.std(ddof=1) / np.sqrt(n_rep)) if n_rep > 1 else None
            rows.append(
                {
                    "policy": name,
                    "freshness": float(f.mean()),
                    "freshness_se": se(f),
                    "oracle_freshness": float(self.oracle_freshness.mean()),
                    "final_regret": float(r.mean()),
                    "final_regret_se": se(r),
                }
            )
        return rows


def _expected_fresh_time(delta, length):
    """∫_0^L e^{-Δt} dt = (1 - e^{-ΔL})/Δ, and L where Δ = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        val = -np.expm1(-delta * length) / delta
    return np.where(delta > 0, val, length)


class _GridPosterior:
    """Per-page posterior of Δ on a fixed log grid under the exact interval-censored likelihood.

    log L(Δ) = Σ_j I_j log(1 - e^{-Δτ_j}) - Δ Σ_j (1 - I_j) τ_j holds for any crawl
    schedule (the τ_j are observed), so it stays valid when the crawl rate changes
    every epoch. The state is the changed-crawl part of log L on the grid plus the
    unchanged exposure Σ(1 - I)τ per page: O(G) memory per page, O(G) work per crawl
    that saw a change. Prior: log-normal (normal in log Δ).
    """

    def __init__(self, shape, *, median, sigma, size):
        self.log_grid = np.log(median) + sigma * np.linspace(-6.0, 6.0, size)
        self.grid = np.exp(self.log_grid)
        self.log_prior = -0.5 * ((self.log_grid - np.log(median)) / sigma) ** 2
        self.loglik_changed = np.zeros(shape + (size,))
        self.exposure = np.zeros(shape)
        self.step = self.log_grid[1] - self.log_grid[0]

    def update(self, flat_page, changed, tau):
        """Add crawls (flat page index into the (R, N) state, I, τ)."""
        unchanged = changed == 0
        np.add.at(self.exposure.reshape(-1), flat_page[unchanged], tau[unchanged])
        hit = ~unchanged
        if hit.any():
            contrib = np.log(-np.expm1(-tau[hit, None] * self.grid[None, :]))
            flat = self.loglik_changed.reshape(-1, self.grid.size)
            np.add.at(flat, flat_page[hit], contrib)

    def _weights(self):
        logp = self.log_prior + self.loglik_changed - self.exposure[..., None] * self.grid
        logp -= logp.max(axis=-1, keepdims=True)
        w = np.exp(logp)
        return w / w.sum(axis=-1, keepdims=True)

    def mean(self):
        return self._weights() @ self.grid

    def sample(self, uniforms, jitter):
        """One draw per page: inverse CDF on the grid, uniform jitter in log within a cell."""
        cdf = np.cumsum(self._weights(), axis=-1)
        idx = np.minimum((cdf < uniforms[..., None]).sum(axis=-1), self.grid.size - 1)
        return np.exp(self.log_grid[idx] + (jitter - 0.5) * self.step)


def _epoch_estimates(method, changed, n_valid, crawl_rate):
    """Per-page estimate from one epoch's crawls at a fixed crawl rate (package estimators).

    ``changed`` holds the epoch's within-epoch crawls sorted by page then time,
    ``n_valid`` their number per page; pages are grouped by their number of crawls so that each group
    is a rectangular CrawlHistory: a loop over distinct crawl counts, not pages.
    """
    out = np.zeros(n_valid.shape)
    flat_n = n_valid.reshape(-1)
    starts = np.concatenate([[0], np.cumsum(flat_n)[:-1]])
    for k in np.unique(flat_n[flat_n > 0]):
        pages = np.flatnonzero(flat_n == k)
        idx = starts[pages][:, None] + np.arange(k)
        hist = CrawlHistory(changed[idx], crawl_rate=crawl_rate.reshape(-1)[pages])
        out.reshape(-1)[pages] = estimate_path(hist, method)[:, -1]
    return out


def simulate_closed_loop(
    change_rates,
    weights,
    budget,
    *,
    policies=CLOSED_LOOP_POLICIES,
    n_epochs=30,
    epoch_length=1.0,
    exploration=0.0,
    prior_median=None,
    prior_sigma=2.0,
    grid_size=160,
    rng=None,
) -> ClosedLoopResult:
    r"""Simulate crawlers that learn change rates while allocating their budget.

    Every epoch each policy sets crawl rates p_i (Σ p_i = B) and crawls page i at the
    times of a Poisson process of rate p_i; a crawl at time t reports
    I = 1{the page changed since its previous crawl} and τ = t - (previous crawl).
    Pages start fresh at time 0 with nothing known.

    Parameters
    ----------
    change_rates : array_like, shape (n_pages,) or (n_replications, n_pages)
        True Δ_i >= 0 per unit time; each row is an independent crawler with its own
        pages (a Monte Carlo replication).
    weights : float or array_like, same shape
        w_i >= 0, known to the crawler.
    budget : float
        B > 0, crawls per unit time per crawler.
    policies : sequence of str, default all of :data:`CLOSED_LOOP_POLICIES`
        ``"oracle"``: :func:`optimal_crawl_rates` with the true Δ. ``"uniform"``:
        p_i = B/N. ``"lln"``, ``"sam"``: plug-in of the package's LLN / SAM
        estimators; ``"posterior_mean"``: plug-in of the posterior mean; ``"thompson"``:
        optimal rates for one posterior draw of every Δ_i per epoch.
    n_epochs : int, default 30
    epoch_length : float, default 1.0
        Time between reallocations (unit of 1/Δ).
    exploration : float in [0, 1), default 0.0
        Fraction of the budget the learning policies spread uniformly
        (p = (1 - ε) p_opt + ε B/N), so that no page is starved of data.
    prior_median, prior_sigma : float
        Log-normal prior of the posterior policies (median default B/N, the crawl
        rate per page; σ of log Δ default 2). Pages without data get Δ̂ = the prior
        median under the plug-in policies.
    grid_size : int, default 160
        Nodes of the per-page posterior grid (log Δ within ±6σ of the prior median).
    rng : int, numpy.random.Generator or None
        Source of randomness, normalised by :func:`changerate_bayes._rng.as_generator`.
        Replication r (row r) runs on child r of ``rng.spawn(R)``, and each policy on
        its own child of that: for an int seed s that is ``SeedSequence(s).spawn(R)[r]``,
        so a row's numbers depend on s and r only (not on R or on the other rows).

    Returns
    -------
    ClosedLoopResult

    Raises
    ------
    ValueError
        Negative / non-finite rates or weights, mismatched shapes, ``budget`` <= 0,
        ``exploration`` outside [0, 1), unknown or repeated policies.

    Notes
    -----
    *Which estimators stay valid when p changes every epoch.* The exact
    interval-censored likelihood Π (1 - e^{-Δτ_j})^{I_j} e^{-Δτ_j(1 - I_j)} uses the
    observed τ_j and holds under any crawl schedule, so the posterior policies use all
    crawls. The LLN and SAM estimators assume Poisson crawling at one known p
    (E[I] = Δ/(Δ+p), paper eq. 4): they are run afresh each epoch on the crawls whose
    interval lies inside the epoch (the first crawl of an epoch has an interval that
    started under an older rate and is left out) with that epoch's p, and the epoch
    estimates are combined by a crawl-count-weighted average (re-weighting). Within an
    epoch of length E the kept intervals are slightly shorter than Exp(p) (edge effect
    O(1/(pE))), and LLN's own bias is O(1/k) per epoch; neither vanishes with more
    epochs. Freshness is scored in expectation over the change process given the
    simulated crawl times, P(fresh at t) = e^{-Δ(t - last crawl)}, which is unbiased
    because changes after the last crawl are independent of everything observed.

    References
    ----------
    Paper Section 5 (eq. 16); Azar et al. (2018); W. R. Thompson (1933).

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes.scheduling import simulate_closed_loop
    >>> delta = np.random.default_rng(0).lognormal(0.0, 1.0, 200)
    >>> res = simulate_closed_loop(delta, 1.0, 100.0, policies=("oracle", "uniform"), n_epochs=5, rng=1)
    >>> res.freshness.shape
    (2, 1, 5)
    """
    delta = as_float_array(change_rates, name="change_rates", nonnegative=True, ndim=(1, 2))
    delta = delta[None, :] if delta.ndim == 1 else delta
    w = as_float_array(weights, name="weights", nonnegative=True)
    w = broadcast_weights(w, delta, requirement="broadcast to the shape of")
    if np.any(w.sum(axis=1) <= 0):
        raise ValueError("`weights` must not be all zero for a crawler")
    budget = check_positive_scalar(budget, name="budget")
    if isinstance(policies, str):
        policies = (policies,)
    policies = tuple(check_choice(p, name="policies", choices=CLOSED_LOOP_POLICIES) for p in policies)
    if len(set(policies)) != len(policies) or not policies:
        raise ValueError(f"`policies` must be distinct names from {CLOSED_LOOP_POLICIES}; got {policies}")
    n_epochs = check_positive_int(n_epochs, name="n_epochs")
    epoch_length = check_positive_scalar(epoch_length, name="epoch_length")
    if isinstance(exploration, bool) or not isinstance(exploration, numbers.Real):
        raise TypeError(f"`exploration` must be a real number; got {type(exploration).__name__}")
    exploration = float(exploration)
    if not 0.0 <= exploration < 1.0:
        raise ValueError(f"`exploration` must be in [0, 1); got {exploration}")
    n_rep, n_pages = delta.shape
    prior_median = (
        budget / n_pages if prior_median is None else check_positive_scalar(prior_median, name="prior_median")
    )
    prior_sigma = check_positive_scalar(prior_sigma, name="prior_sigma")
    grid_size = check_positive_int(grid_size, name="grid_size", minimum=8)

    budgets = np.full(n_rep, budget)
    p_oracle = _binary_freshness_rows(delta, w, budgets)
    wsum = w.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        fresh_oracle = np.where(p_oracle + delta > 0, p_oracle / (p_oracle + delta), 1.0)
    oracle_value = (w * fresh_oracle).sum(axis=1) / wsum

    gens = [g.spawn(len(policies)) for g in as_generator(rng).spawn(n_rep)]  # independent streams
    shape = (len(policies), n_rep, n_epochs)
    freshness = np.empty(shape)
    est_error = np.full(shape, np.nan)
    crawled = np.empty(shape)
    for j, name in enumerate(policies):  # a handful of policies
        rngs = [g[j] for g in gens]
        freshness[j], est_error[j], crawled[j] = _run_policy(
            name,
            delta,
            w,
            budgets,
            p_oracle,
            rngs,
            n_epochs=n_epochs,
            epoch_length=epoch_length,
            exploration=exploration,
            prior_median=prior_median,
            prior_sigma=prior_sigma,
            grid_size=grid_size,
        )
    regret = np.cumsum((oracle_value[None, :, None] - freshness) * epoch_length, axis=2)
    ends = epoch_length * np.arange(1, n_epochs + 1)
    return ClosedLoopResult(policies, ends, freshness, oracle_value, regret, est_error, crawled)


def _run_policy(
    name,
    delta,
    w,
    budgets,
    p_oracle,
    rngs,
    *,
    n_epochs,
    epoch_length,
    exploration,
    prior_median,
    prior_sigma,
    grid_size,
):
    n_rep, n_pages = delta.shape
    uniform = np.broadcast_to((budgets / n_pages)[:, None], delta.shape)
    last_crawl = np.zeros(delta.shape)  # the initial copy is taken at time 0
    post = _GridPosterior(delta.shape, median=prior_median, sigma=prior_sigma, size=grid_size)
    est_sum = np.zeros(delta.shape)  # Σ_e k_e Δ̂_e (LLN / SAM re-weighting)
    est_count = np.zeros(delta.shape)  # Σ_e k_e
    fresh = np.empty((n_rep, n_epochs))
    err = np.full((n_rep, n_epochs), np.nan)
    crawled = np.empty((n_rep, n_epochs))
    wsum = w.sum(axis=1)
    for e in range(n_epochs):  # a loop over epochs; everything inside is vectorised over pages
        t0, t1 = e * epoch_length, (e + 1) * epoch_length
        estimate = None
        if name == "oracle":
            p = p_oracle
        elif name == "uniform":
            p = uniform
        else:
            if name in ("lln", "sam"):
                with np.errstate(divide="ignore", invalid="ignore"):
                    estimate = np.where(est_count > 0, est_sum / est_count, prior_median)
                target = estimate
            else:
                estimate = post.mean()
                if name == "thompson":
                    draws = np.array([g.random((2, n_pages)) for g in rngs])  # (R, 2, N)
                    target = post.sample(draws[:, 0], draws[:, 1])
                else:
                    target = estimate
            p = _binary_freshness_rows(target, w, budgets)
            if exploration > 0:
                p = (1.0 - exploration) * p + exploration * uniform
            good = (estimate <= 2.0 * delta) & (delta <= 2.0 * estimate)
            err[:, e] = (w * good).sum(axis=1) / wsum
        crawled[:, e] = (w * (p > 0)).sum(axis=1) / wsum

        # ---- crawl times of the epoch: Poisson(p_i) processes, flat over (row, page)
        counts = np.array([g.poisson(p[r] * epoch_length) for r, g in enumerate(rngs)])
        n_tot = counts.sum(axis=1)
        times = np.concatenate([t0 + epoch_length * g.random(n_tot[r]) for r, g in enumerate(rngs)])
        u_change = np.concatenate([g.random(n_tot[r]) for r, g in enumerate(rngs)])
        flat_page = np.repeat(np.arange(delta.size), counts.reshape(-1))
        order = np.lexsort((times, flat_page))
        times, flat_page = times[order], flat_page[order]  # u_change stays i.i.d. uniform
        first = np.ones(times.size, dtype=bool)
        first[1:] = flat_page[1:] != flat_page[:-1]
        prev = np.empty(times.size)
        prev[first] = last_crawl.reshape(-1)[flat_page[first]]
        prev[~first] = times[:-1][~first[1:]]
        tau = times - prev
        d_flat = delta.reshape(-1)
        d_crawl = d_flat[flat_page]
        changed = (u_change < -np.expm1(-d_crawl * tau)).astype(np.int8)

        # ---- expected fresh time during [t0, t1] given the crawl times
        n_flat = counts.reshape(-1)
        has = n_flat > 0
        first_time = np.full(delta.size, t1)
        first_time[flat_page[first]] = times[first]
        last_time = last_crawl.reshape(-1).copy()
        is_last = np.empty(times.size, dtype=bool)  # last crawl of its page in this epoch
        is_last[:-1] = first[1:]
        is_last[-1:] = True  # no-op when the epoch has no crawl at all
        last_time[flat_page[is_last]] = times[is_last]
        ft = np.exp(-d_flat * (t0 - last_crawl.reshape(-1))) * _expected_fresh_time(d_flat, first_time - t0)
        inner = np.bincount(
            flat_page[~first], weights=_expected_fresh_time(d_crawl[~first], tau[~first]), minlength=delta.size
        )
        tail = np.where(has, _expected_fresh_time(d_flat, t1 - last_time), 0.0)
        fresh_page = ((ft + inner + tail) / epoch_length).reshape(delta.shape)
        fresh[:, e] = (w * fresh_page).sum(axis=1) / wsum
        last_crawl = last_time.reshape(delta.shape)

        # ---- learning
        if name in ("posterior_mean", "thompson"):
            post.update(flat_page, changed, tau)
        elif name in ("lln", "sam"):
            inside = ~first  # intervals that started in this epoch, under rate p
            n_valid = np.bincount(flat_page[inside], minlength=delta.size).reshape(delta.shape)
            est_e = _epoch_estimates(name, changed[inside], n_valid, p)
            ok = np.isfinite(est_e)  # SAM may overflow (reported as inf): no weight
            est_sum += np.where(ok, n_valid * np.maximum(np.where(ok, est_e, 0.0), 0.0), 0.0)
            est_count += np.where(ok, n_valid, 0)
    return fresh, err, crawled
