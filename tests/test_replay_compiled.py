"""The compiled replay paths (engine scoring, credit grid, grid learner) against the code they
replaced, kept here verbatim as the reference: the same seed gives the same ReplayResult arrays
and the same ``replay_policies`` table, bit for bit, for every built-in policy, at budgets that
bind and that do not, with pages entering and leaving their windows; user policies and
misbehaving policies behave as before. Nutch's and StormCrawler's schedules changed their
rules since (they follow the crawlers' sources: ``tests/test_replay_baselines.py``); here
their compiled updates are checked against their Python path."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from changerate_bayes.replay import _engine as new_engine
from changerate_bayes.replay import _kernels as new_kernels
from changerate_bayes.replay import _learners as new_learners
from changerate_bayes.replay import _policies as new_policies
from changerate_bayes.replay import _replay as new_replay
from changerate_bayes.replay import pages_from_table
from changerate_bayes.replay._pages import MS_PER_DAY, ReplayPages
from changerate_bayes.scheduling import optimal_crawl_rates

# ----------------------------------------------------------------- the previous code (reference)
# ``_engine.py``, ``_learners.py`` and ``_policies.py`` as they were before the compiled
# paths, verbatim (imports gathered above).


# ---- _engine.py
_PAGE_SHIFT = np.int64(1) << np.int64(40)  # > any time span in ms (35 years)


@dataclass(frozen=True)
class ReplayContext:
    """What a policy is told when a replay starts (never the change times).

    Attributes
    ----------
    n_pages : int
    dt : float
        Step length in days.
    n_steps : int
        Steps K of the replay (t_K >= the latest window end).
    first_step, last_step : ndarray of int64, shape (N,)
        Page i can be crawled at steps first_step[i] .. last_step[i] (empty if last < first).
    start : ndarray, shape (N,)
        Window starts in days since t0 (the time of each page's first copy).
    weights : ndarray, shape (N,)
    budget : float or None
        Crawls per day for a budgeted policy; None for a policy with its own schedule.
    epoch_steps : int
        Steps between reallocations for the policies that allocate a budget.
    rng : numpy.random.Generator
    true_rates : ndarray or None
        Hindsight change rates n_i/T_i per day, given only to oracle policies.
    """

    n_pages: int
    dt: float
    n_steps: int
    first_step: np.ndarray
    last_step: np.ndarray
    start: np.ndarray
    weights: np.ndarray
    budget: float | None
    epoch_steps: int
    rng: np.random.Generator
    true_rates: np.ndarray | None = None

    def active(self, k: int) -> np.ndarray:
        """Pages that can be crawled at step k, bool (N,)."""
        return (self.first_step <= k) & (k <= self.last_step)

    def next_activity_change(self, k: int) -> int:
        """The first step > k at which a page becomes or stops being crawlable (n_steps + 1 if none)."""
        cand = np.concatenate([self.first_step[self.first_step > k], self.last_step[self.last_step + 1 > k] + 1])
        return int(cand.min()) if cand.size else self.n_steps + 1


@dataclass(frozen=True)
class ReplayResult:
    """Per-page totals of one replay (see :mod:`changerate_bayes.replay` for the metrics).

    Attributes
    ----------
    policy : str
    budget : float or None
        Crawls per day given to the policy (None: its own schedule).
    span_days : float
        From the earliest window start to the latest window end.
    window_days : ndarray, shape (N,)
        T_i.
    fresh_days : ndarray, shape (N,)
        Time page i's copy equalled the live page.
    age_area : ndarray, shape (N,)
        ∫ age dt over the window (days²); age = time since the first change the copy missed.
    crawls : ndarray of int, shape (N,)
        Crawls after the initial copy.
    detected : ndarray of int, shape (N,)
        Crawls that saw a change (I = 1).
    changes : ndarray of int, shape (N,)
        True changes in the window.
    weights : ndarray, shape (N,)
    """

    policy: str
    budget: float | None
    span_days: float
    window_days: np.ndarray
    fresh_days: np.ndarray
    age_area: np.ndarray
    crawls: np.ndarray
    detected: np.ndarray
    changes: np.ndarray
    weights: np.ndarray

    def part(self, start: int, stop: int) -> "ReplayResult":
        """The pages start .. stop - 1 (one copy of a tiled replay)."""
        s = slice(start, stop)
        return ReplayResult(self.policy, self.budget, self.span_days, self.window_days[s], self.fresh_days[s],
                            self.age_area[s], self.crawls[s], self.detected[s], self.changes[s], self.weights[s])


def _steps(pages: ReplayPages, dt_ms: int):
    t0 = int(pages.start_ms.min())
    n_steps = int(-(-(int(pages.end_ms.max()) - t0) // dt_ms))  # ceil
    first = (pages.start_ms - t0) // dt_ms + 1
    last = (pages.end_ms - t0) // dt_ms
    return t0, n_steps, first.astype(np.int64), last.astype(np.int64)


def run_replay(pages: ReplayPages, policy, *, budget=None, dt_ms: int = 3_600_000, epoch_steps: int = 24,
               rng=None) -> ReplayResult:
    """Replay ``pages`` under ``policy`` (internal: arguments are trusted; see ``replay_policies``).

    ``budget`` (crawls per day) is enforced: a budgeted policy may have crawled at most
    floor(B·(t − t0)) pages by step time t, and the engine raises RuntimeError if a
    policy asks for more (a bug in the policy, not bad input).
    """
    rng = np.random.default_rng(rng)
    n = pages.n_pages
    dt = dt_ms / MS_PER_DAY
    t0, n_steps, first, last = _steps(pages, dt_ms)
    ctx = ReplayContext(
        n_pages=n, dt=dt, n_steps=n_steps, first_step=first, last_step=last,
        start=(pages.start_ms - t0) / MS_PER_DAY, weights=pages.weights,
        budget=None if not policy.budgeted else float(budget), epoch_steps=int(epoch_steps), rng=rng,
        true_rates=pages.true_rates if getattr(policy, "oracle", False) else None,
    )
    policy.reset(ctx)

    counts = pages.n_changes
    key = np.repeat(np.arange(n, dtype=np.int64) * _PAGE_SHIFT, counts) + (pages.change_ms - t0)
    change = pages.change_ms - t0
    end = pages.end_ms - t0
    never = np.iinfo(np.int64).max // 4

    def first_change_after(idx, t_ms):
        pos = np.searchsorted(key, idx * _PAGE_SHIFT + t_ms, side="right")
        ok = pos < pages.offsets[idx + 1]
        return np.where(ok, change[np.minimum(pos, max(change.size - 1, 0))] if change.size else never, never)

    last_ms = pages.start_ms - t0
    stale_ms = first_change_after(np.arange(n, dtype=np.int64), last_ms)
    fresh = np.zeros(n)
    age = np.zeros(n)
    crawls = np.zeros(n, dtype=np.int64)
    detected = np.zeros(n, dtype=np.int64)
    spent = 0
    changed_full = np.zeros(n, dtype=bool)
    interval_full = np.zeros(n)
    k = 1
    active, active_until = ctx.active(1), ctx.next_activity_change(0)
    while True:  # a loop over time steps; everything inside is vectorised over pages
        k = int(policy.next_step(k))
        if k > n_steps:
            break
        t_ms = k * dt_ms
        if k >= active_until:
            active, active_until = ctx.active(k), ctx.next_activity_change(k)
        allowed = None
        if policy.budgeted:
            allowed = int(np.floor(ctx.budget * (t_ms / MS_PER_DAY) + 1e-9)) - spent
        mask = policy.select(k, t_ms / MS_PER_DAY, active, allowed)
        idx = np.flatnonzero(mask)
        if idx.size:
            if not active[idx].all():
                raise RuntimeError(f"policy {policy.name!r} crawled a page outside its window at step {k}")
            if allowed is not None and idx.size > allowed:
                raise RuntimeError(f"policy {policy.name!r} overspent its budget at step {k}: "
                                   f"{idx.size} crawls, {allowed} allowed")
            s, a = stale_ms[idx], last_ms[idx]
            ch = s <= t_ms
            fresh[idx] += (np.minimum(s, t_ms) - a) / MS_PER_DAY
            late = np.where(ch, (t_ms - s) / MS_PER_DAY, 0.0)
            age[idx] += 0.5 * late * late
            crawls[idx] += 1
            detected[idx] += ch
            changed_full[idx] = ch
            interval_full[idx] = (t_ms - a) / MS_PER_DAY
            last_ms[idx] = t_ms
            stale_ms[idx] = first_change_after(idx.astype(np.int64), np.int64(t_ms))
            spent += idx.size
            policy.observe(k, t_ms / MS_PER_DAY, changed_full, interval_full, mask)
            changed_full[idx] = False
            interval_full[idx] = 0.0
        k += 1
    fresh += (np.minimum(stale_ms, end) - last_ms) / MS_PER_DAY
    late = np.where(stale_ms < end, (end - stale_ms) / MS_PER_DAY, 0.0)
    age += 0.5 * late * late
    return ReplayResult(policy.name, ctx.budget, pages.span_days, pages.window_days, fresh, age, crawls, detected,
                        counts.copy(), pages.weights)


# ---- _learners.py
class LLNLearner:
    """The LLN estimator p̂ Î/(k + α − Î) with the crawl rate estimated as p̂ = k/Σ τ.

    Paper eq. (1) (Avrachenkov, Patil & Thoppe) assumes Poisson crawling at a known rate
    p; a replayed crawler's intervals are neither Poisson nor of one rate, so p is
    replaced by the page's empirical crawl rate. Before a page's first crawl, and while
    it has seen no change, the estimate is 0. ``sample`` returns ``rate`` (no belief to
    sample from).

    Parameters
    ----------
    n_pages : int
    alpha : float, default 1.0
        α > 0 keeps the estimate finite when every crawl saw a change.
    """

    def __init__(self, n_pages: int, *, alpha: float = 1.0):
        self.alpha = float(alpha)
        self.k = np.zeros(n_pages)
        self.ones = np.zeros(n_pages)
        self.tau = np.zeros(n_pages)

    def update(self, changed, interval, mask) -> None:
        m = np.asarray(mask, dtype=bool)
        self.k[m] += 1.0
        self.ones[m] += np.asarray(changed)[m]
        self.tau[m] += np.asarray(interval)[m]

    @property
    def rate(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(self.tau > 0, self.k / self.tau, 0.0)
        return p * self.ones / (self.k + self.alpha - self.ones)

    def sample(self, rng) -> np.ndarray:
        return self.rate


class GridLearner:
    """The exact interval-censored likelihood of Δ on a log grid, per page; MLE or posterior.

    log L(Δ) = Σ_j I_j log(1 − e^{−Δτ_j}) − Δ Σ_j (1 − I_j) τ_j holds for any crawl
    schedule (the τ_j are observed). The state is the first sum tabulated on G nodes
    uniform in log Δ plus the exposure Σ(1 − I)τ: O(G) per page, O(G) work per crawl
    that saw a change and O(1) per crawl that did not. Reads are cached and recomputed
    only for pages crawled since the last read.

    Parameters
    ----------
    n_pages : int
    estimate : {"mean", "mle"}, default "mean"
        ``rate`` is the posterior mean under a log-normal prior (median
        ``prior_median`` per day, σ = ``prior_sigma`` in log Δ), or the maximum of the
        likelihood on the grid refined by a parabola in log Δ (0 while no change has been
        seen; the top node while every crawl saw one).
    prior_median : float, default 1/30
        Per day: a page changing about monthly.
    prior_sigma : float, default 2.0
    grid_size : int, default 128
    width : float, default 4.5
        The grid spans log(median) ± width·σ (1/30 per day: about 1/(680 years) to 270 per day).

    Notes
    -----
    ``sample`` draws Δ from the posterior (inverse CDF on the grid, uniform within a
    cell in log Δ), whatever ``estimate`` is.
    """

    def __init__(self, n_pages: int, *, estimate: str = "mean", prior_median: float = 1.0 / 30.0,
                 prior_sigma: float = 2.0, grid_size: int = 128, width: float = 4.5):
        if estimate not in ("mean", "mle"):
            raise ValueError(f"`estimate` must be 'mean' or 'mle'; got {estimate!r}")
        self.estimate = estimate
        self.log_grid = np.log(prior_median) + prior_sigma * np.linspace(-width, width, grid_size)
        self.grid = np.exp(self.log_grid)
        self.step = self.log_grid[1] - self.log_grid[0]
        self.log_prior = -0.5 * ((self.log_grid - np.log(prior_median)) / prior_sigma) ** 2
        self.loglik_changed = np.zeros((n_pages, grid_size))
        self.exposure = np.zeros(n_pages)
        self.n_changed = np.zeros(n_pages)
        self.n_unchanged = np.zeros(n_pages)
        self._dirty = np.ones(n_pages, dtype=bool)
        self._mean = np.zeros(n_pages)
        self._mle = np.zeros(n_pages)
        self._cdf = np.zeros((n_pages, grid_size))

    def update(self, changed, interval, mask) -> None:
        m = np.asarray(mask, dtype=bool)
        c = np.asarray(changed, dtype=bool)
        tau = np.asarray(interval, dtype=np.float64)
        hit = np.flatnonzero(m & c)
        miss = m & ~c
        self.exposure[miss] += tau[miss]
        self.n_unchanged[miss] += 1
        if hit.size:
            self.loglik_changed[hit] += np.log(-np.expm1(-tau[hit, None] * self.grid[None, :]))
            self.n_changed[hit] += 1
        self._dirty |= m

    def _refresh(self) -> None:
        idx = np.flatnonzero(self._dirty)
        if not idx.size:
            return
        loglik = self.loglik_changed[idx] - self.exposure[idx, None] * self.grid[None, :]
        logp = loglik + self.log_prior
        logp -= logp.max(axis=1, keepdims=True)
        w = np.exp(logp)
        w /= w.sum(axis=1, keepdims=True)
        self._mean[idx] = w @ self.grid
        self._cdf[idx] = np.cumsum(w, axis=1)
        # MLE: grid argmax refined by a parabola through the neighbours (in log Δ)
        j = np.argmax(loglik, axis=1)
        jj = np.clip(j, 1, self.grid.size - 2)
        rows = np.arange(idx.size)
        y0, y1, y2 = loglik[rows, jj - 1], loglik[rows, jj], loglik[rows, jj + 1]
        denom = y0 - 2.0 * y1 + y2
        with np.errstate(invalid="ignore", divide="ignore"):
            shift = np.where(denom < 0, 0.5 * (y0 - y2) / denom, 0.0)
        shift = np.clip(shift, -1.0, 1.0)
        u = np.where((j > 0) & (j < self.grid.size - 1), self.log_grid[jj] + shift * self.step, self.log_grid[j])
        mle = np.exp(u)
        mle = np.where(self.n_changed[idx] == 0, 0.0, mle)
        self._mle[idx] = mle
        self._dirty[idx] = False

    @property
    def rate(self) -> np.ndarray:
        self._refresh()
        return (self._mean if self.estimate == "mean" else self._mle).copy()

    def sample(self, rng) -> np.ndarray:
        self._refresh()
        n = self._cdf.shape[0]
        u = rng.random(n)
        jitter = rng.random(n)
        idx = np.minimum((self._cdf < u[:, None]).sum(axis=1), self.grid.size - 1)
        return np.exp(self.log_grid[idx] + (jitter - 0.5) * self.step)


# ---- _policies.py
_SECOND = 1.0 / 86400.0
_MINUTE = 60.0 * _SECOND
_NEVER = np.iinfo(np.int64).max // 4

#: nutch-default.xml (days): db.fetch.schedule.adaptive.{inc_rate, dec_rate, min_interval,
#: max_interval, sync_delta, sync_delta_rate}, db.fetch.interval.max, db.fetch.interval.default.
NUTCH_DEFAULTS = dict(inc_rate=0.4, dec_rate=0.2, min_interval=60 * _SECOND, max_interval=365.0,
                      max_fetch_interval=90.0, sync_delta=True, sync_delta_rate=0.3, initial_interval=30.0)

#: StormCrawler AdaptiveScheduler defaults (days): scheduler.adaptive.fetchInterval.rate.{incr, decr},
#: .min (60 min), .max (14 d), fetchInterval.default (1 d).
STORMCRAWLER_DEFAULTS = dict(inc_rate=0.5, dec_rate=0.5, min_interval=60 * _MINUTE, max_interval=14.0,
                             initial_interval=1.0)


# ----------------------------------------------------------------- budgeted rate policies
class RatePolicy:
    """Base of the budgeted policies: a rate per page, crawled on a credit grid (see module)."""

    budgeted = True
    oracle = False
    #: True: the rates depend on nothing learned, so they are re-split only when pages enter or leave
    static = False

    def __init__(self, name: str, *, exploration: float = 0.0):
        if not 0.0 <= exploration < 1.0:
            raise ValueError(f"`exploration` must be in [0, 1); got {exploration}")
        self.name = name
        self.exploration = float(exploration)

    # subclasses: rates (Σ = B) for the active pages ``a`` (int index)
    def _rates(self, a: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _learn(self, changed, interval, mask) -> None:
        pass

    def reset(self, ctx) -> None:
        self.ctx = ctx
        n = ctx.n_pages
        self.p = np.zeros(n)
        self.c0 = np.zeros(n)  # credit at the last allocation
        self.m = np.zeros(n)  # crawls since the last allocation
        self.due = np.full(n, _NEVER)  # step at which the credit reaches 1
        self.k_alloc = 0
        self.active = np.zeros(n, dtype=bool)
        self.next_alloc = 1
        self.next_change = 1
        self.spent = 0

    def _credit(self, k) -> np.ndarray:
        return self.c0 + self.p * (self.ctx.dt * (k - self.k_alloc)) - self.m

    def _due_after(self, i, k) -> np.ndarray:
        """First step > k (>= k when ``k`` is the allocation step) with credit >= 1, pages ``i``."""
        r = self.p[i] * self.ctx.dt
        with np.errstate(divide="ignore", invalid="ignore"):
            steps = np.ceil((1.0 + self.m[i] - self.c0[i]) / r - 1e-9)
        steps = np.where(r > 0, steps, np.inf)
        return np.minimum(self.k_alloc + np.maximum(steps, 0.0), float(_NEVER)).astype(np.int64)

    def _allocate(self, k, active) -> None:
        credit = np.minimum(self._credit(k), 1.0)  # a late page does not bank more than one crawl
        entering = active & ~self.active
        if entering.any():
            credit[entering] = self.ctx.rng.random(int(entering.sum()))
        self.active = active
        p = np.zeros(self.ctx.n_pages)
        a = np.flatnonzero(active)
        if a.size:
            rates = self._rates(a)
            if self.exploration > 0:
                rates = (1.0 - self.exploration) * rates + self.exploration * self.ctx.budget / a.size
            p[a] = rates
        self.p = p
        self.c0 = np.where(active, credit, 0.0)
        self.m = np.zeros(self.ctx.n_pages)
        self.k_alloc = k
        self.due = self._due_after(np.arange(self.ctx.n_pages), k)
        e = self.ctx.epoch_steps
        self.next_alloc = _NEVER if self.static else (k // e + 1) * e
        self.next_change = self.ctx.next_activity_change(k)

    def next_step(self, k: int) -> int:
        ctx = self.ctx
        cand = min(self.next_alloc, self.next_change)
        fire = int(self.due.min())
        if fire < _NEVER:
            token_step = int(np.ceil((self.spent + 1) / (ctx.budget * ctx.dt) - 1e-9))  # a crawl left
            cand = min(cand, max(fire, token_step))
        return max(cand, k)

    def select(self, k, t, active, allowed) -> np.ndarray:
        if k >= self.next_alloc or k >= self.next_change:
            self._allocate(k, active)
        due = np.flatnonzero(self.due <= k)
        if due.size > allowed:  # the budget binds: most credit first
            credit = self._credit(k)[due]
            due = due[np.argsort(-credit, kind="stable")[: max(allowed, 0)]]
        mask = np.zeros(self.ctx.n_pages, dtype=bool)
        mask[due] = True
        self.m[due] += 1.0
        self.due[due] = np.maximum(self._due_after(due, k), k + 1)  # at most one crawl per step
        self.spent += due.size
        return mask

    def observe(self, k, t, changed, interval, mask) -> None:
        self._learn(changed, interval, mask)


class UniformPolicy(RatePolicy):
    """Round robin: p_i = B/N over the pages in their window."""

    static = True

    def __init__(self, name: str = "uniform"):
        super().__init__(name)

    def _rates(self, a):
        return np.full(a.size, self.ctx.budget / a.size)


class OraclePolicy(RatePolicy):
    """Hindsight references from each page's true change count over its window, Δ_i = n_i/T_i.

    ``kind="optimal"``: the binary-freshness allocation :func:`optimal_crawl_rates` of the
    true Δ (static rates, re-split when pages enter or leave). ``kind="proportional"``:
    p_i ∝ Δ_i, the allocation that spends the budget in proportion to the true rates
    (Cho & Garcia-Molina's "proportional" policy); uniform if no page changes.
    """

    oracle = True
    static = True

    def __init__(self, kind: str = "optimal", name: str | None = None):
        if kind not in ("optimal", "proportional"):
            raise ValueError(f"`kind` must be 'optimal' or 'proportional'; got {kind!r}")
        self.kind = kind
        super().__init__(name or ("oracle" if kind == "optimal" else "oracle_proportional"))

    def _rates(self, a):
        delta = self.ctx.true_rates[a]
        b = self.ctx.budget
        if self.kind == "optimal":
            return optimal_crawl_rates(delta, self.ctx.weights[a], b)
        tot = delta.sum()
        return b * delta / tot if tot > 0 else np.full(a.size, b / a.size)


def _finite_rates(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return np.clip(np.nan_to_num(x, nan=0.0, posinf=1e6), 0.0, 1e6)


class PlugInPolicy(RatePolicy):
    """Plug-in: every epoch, :func:`optimal_crawl_rates` of the learner's current ``rate``.

    Parameters
    ----------
    learner : callable
        ``learner(n_pages)`` returns a learner (``update(changed, interval, mask)``,
        ``rate``, ``sample(rng)``): see :mod:`changerate_bayes.replay._learners`.
    name : str
    exploration : float in [0, 1), default 0.05
        Share of the budget spread uniformly, so that a page estimated at Δ̂ = 0 is still
        crawled now and then.
    """

    def __init__(self, learner, *, name: str, exploration: float = 0.05):
        super().__init__(name, exploration=exploration)
        self.make_learner = learner

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.learner = self.make_learner(ctx.n_pages)

    def _estimate(self):
        return self.learner.rate

    def _rates(self, a):
        est = _finite_rates(self._estimate())[a]
        return optimal_crawl_rates(est, self.ctx.weights[a], self.ctx.budget)

    def _learn(self, changed, interval, mask) -> None:
        self.learner.update(changed, interval, mask)


class ThompsonPolicy(PlugInPolicy):
    """Thompson sampling: every epoch, the optimal rates of one draw ``learner.sample(rng)`` per page."""

    def __init__(self, learner, *, name: str, exploration: float = 0.0):
        super().__init__(learner, name=name, exploration=exploration)

    def _estimate(self):
        return self.learner.sample(self.ctx.rng)


# ----------------------------------------------------------------- crawlers' own schedules
def nutch_update(interval, modified, t, changed, *, inc_rate, dec_rate, min_interval, max_interval,
                 max_fetch_interval, sync_delta, sync_delta_rate):
    """One AdaptiveFetchSchedule update after a fetch at time ``t`` (arrays, days).

    The semantics of Apache Nutch's ``AdaptiveFetchSchedule.setFetchSchedule`` (documented
    in its Javadoc and nutch-default.xml), re-expressed:

    1. interval ← interval·(1 − dec_rate) if the fetch saw a change (and the modified time
       becomes t: with no Last-Modified header Nutch dates a change by the fetch that
       detected it), interval·(1 + inc_rate) if not;
    2. with ``sync_delta``: δ = t − modified (time since the last change seen); if δ >
       interval then interval ← δ; the reference time becomes t − sync_delta_rate·δ
       (else it is t);
    3. interval is clipped to [min_interval, min(max_interval, max_fetch_interval)]: the
       adaptive maximum (365 d) is capped by ``db.fetch.interval.max`` (90 d), beyond which
       Nutch forces a refetch anyway;
    4. next fetch = reference time + interval.

    After a long time without a change, δ·sync_delta_rate exceeds the clipped interval and
    the next fetch falls in the past: the page is fetched again in the very next cycle,
    and so on until it changes (the open Nutch bug NUTCH-1564). This is kept: it is what
    the defaults do.

    Returns
    -------
    (interval, next_fetch, modified) : arrays
    """
    changed = np.asarray(changed, dtype=bool)
    interval = np.where(changed, interval * (1.0 - dec_rate), interval * (1.0 + inc_rate))
    modified = np.where(changed, t, modified)
    ref = np.broadcast_to(np.asarray(t, dtype=np.float64), interval.shape)
    if sync_delta:
        delta = t - modified
        interval = np.maximum(interval, delta)
        ref = t - sync_delta_rate * delta
    interval = np.clip(interval, min_interval, np.minimum(max_interval, max_fetch_interval))
    return interval, ref + interval, modified


def stormcrawler_update(interval, t, changed, *, inc_rate, dec_rate, min_interval, max_interval):
    """One StormCrawler AdaptiveScheduler update after a fetch at time ``t`` (arrays, days).

    On a change (signature differs): interval ← (1 − dec_rate)·interval + dec_rate·min
    (it approaches the minimum without passing it); without one: interval ←
    (1 + inc_rate)·interval, capped at the max. Next fetch = t + interval. (StormCrawler
    rounds the interval down to whole minutes; the replay keeps it exact.)

    Returns
    -------
    (interval, next_fetch) : arrays
    """
    changed = np.asarray(changed, dtype=bool)
    interval = np.where(changed, (1.0 - dec_rate) * interval + dec_rate * min_interval,
                        np.minimum(interval * (1.0 + inc_rate), max_interval))
    return interval, t + interval


class _SchedulePolicy:
    """A crawler's own per-page schedule: a page is fetched at the first step at or after its due time."""

    budgeted = False
    oracle = False

    def reset(self, ctx) -> None:
        self.ctx = ctx
        n = ctx.n_pages
        self.params = {k: (np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)).copy()
                           if not isinstance(v, (bool, np.bool_)) else v) for k, v in self.settings.items()}
        self.interval = np.broadcast_to(self.params.pop("initial_interval"), (n,)).copy()
        self.next_fetch = ctx.start + self.interval
        self.modified = ctx.start.copy()
        self.due = np.zeros(n, dtype=np.int64)
        self._set_due(np.arange(n))

    def _set_due(self, i, k_min=0) -> None:
        ctx = self.ctx
        due = np.maximum(np.ceil(self.next_fetch[i] / ctx.dt - 1e-9), np.maximum(ctx.first_step[i], k_min))
        self.due[i] = np.where(due <= ctx.last_step[i], due, _NEVER).astype(np.int64)

    def next_step(self, k: int) -> int:
        return max(int(self.due.min()), k)

    def select(self, k, t, active, allowed) -> np.ndarray:
        return self.due <= k

    def observe(self, k, t, changed, interval, mask) -> None:
        i = np.flatnonzero(mask)
        self._update(i, t, changed[i])
        self._set_due(i, k + 1)  # at most one fetch per step


class NutchPolicy(_SchedulePolicy):
    """Apache Nutch's AdaptiveFetchSchedule with the defaults of nutch-default.xml (see :func:`nutch_update`).

    Keyword arguments override :data:`NUTCH_DEFAULTS` (days); ``inc_rate`` may be an array
    of one rate per page. The first fetch is the window start (interval
    db.fetch.interval.default = 30 d); a crawl cycle is one replay step.
    """

    def __init__(self, name: str = "nutch", **settings):
        unknown = set(settings) - set(NUTCH_DEFAULTS)
        if unknown:
            raise ValueError(f"unknown Nutch setting(s) {sorted(unknown)}; valid: {sorted(NUTCH_DEFAULTS)}")
        self.name = name
        self.settings = {**NUTCH_DEFAULTS, **settings}

    def _update(self, i, t, changed) -> None:
        par = {key: (v[i] if isinstance(v, np.ndarray) else v) for key, v in self.params.items()}
        self.interval[i], self.next_fetch[i], self.modified[i] = nutch_update(
            self.interval[i], self.modified[i], t, changed, **par)


class StormCrawlerPolicy(_SchedulePolicy):
    """StormCrawler's AdaptiveScheduler with its documented defaults (see :func:`stormcrawler_update`).

    Keyword arguments override :data:`STORMCRAWLER_DEFAULTS` (days); ``inc_rate`` may be
    an array of one rate per page. The first fetch is the window start; the next one is
    after the default interval of 1 day.
    """

    def __init__(self, name: str = "stormcrawler", **settings):
        unknown = set(settings) - set(STORMCRAWLER_DEFAULTS)
        if unknown:
            raise ValueError(f"unknown StormCrawler setting(s) {sorted(unknown)}; valid: {sorted(STORMCRAWLER_DEFAULTS)}")
        self.name = name
        self.settings = {**STORMCRAWLER_DEFAULTS, **settings}

    def _update(self, i, t, changed) -> None:
        par = {key: v[i] for key, v in self.params.items()}
        self.interval[i], self.next_fetch[i] = stormcrawler_update(self.interval[i], t, changed, **par)


#: Volatilities (per √day) averaged by the dynamic learners, and their lattice size: fewer
#: than the dynamic posterior's defaults, so that a replay step stays cheap.
DYNAMIC_SIGMAS = (0.0, 0.03, 0.1, 0.3)
DYNAMIC_GRID = 96


def _dynamic_learner(n_pages: int):
    """The dynamic posterior (log-rate random walk, volatility averaged) as a learner."""
    from changerate_bayes.dynamic import DynamicRateFilter

    return DynamicRateFilter(n_pages=n_pages, sigma=DYNAMIC_SIGMAS, grid=DYNAMIC_GRID)


#: Exploration share of the plug-in policies.
PLUG_IN_EXPLORATION = 0.05

#: Named policies: name -> factory of a fresh policy (keyword overrides for the schedules).
POLICIES = {
    "uniform": lambda **kw: UniformPolicy(**kw),
    "nutch": lambda **kw: NutchPolicy(**kw),
    "nutch_nosync": lambda **kw: NutchPolicy(**{"name": "nutch_nosync", "sync_delta": False, **kw}),
    "stormcrawler": lambda **kw: StormCrawlerPolicy(**kw),
    "lln": lambda: PlugInPolicy(LLNLearner, name="lln", exploration=PLUG_IN_EXPLORATION),
    "mle": lambda: PlugInPolicy(lambda n: GridLearner(n, estimate="mle"), name="mle",
                                exploration=PLUG_IN_EXPLORATION),
    "posterior_mean": lambda: PlugInPolicy(GridLearner, name="posterior_mean", exploration=PLUG_IN_EXPLORATION),
    "thompson": lambda: ThompsonPolicy(GridLearner, name="thompson"),
    "dynamic_mean": lambda: PlugInPolicy(_dynamic_learner, name="dynamic_mean", exploration=PLUG_IN_EXPLORATION),
    "dynamic_thompson": lambda: ThompsonPolicy(_dynamic_learner, name="dynamic_thompson"),
    "oracle": lambda: OraclePolicy("optimal"),
    "oracle_proportional": lambda: OraclePolicy("proportional"),
}


# ----------------------------------------------------------------- the comparisons
HOUR_MS = 3_600_000
FIELDS = ("window_days", "fresh_days", "age_area", "crawls", "detected", "changes", "weights")


def _staggered_pages(seed: int, n_pages: int = 24, days: float = 40.0, n_quiet: int = 3) -> ReplayPages:
    """Pages whose windows start and end at different times (some enter late, some leave
    early), log-normal change rates, ``n_quiet`` pages that never change."""
    rng = np.random.default_rng(seed)
    start = np.where(rng.random(n_pages) < 0.5, 0.0, rng.uniform(0.0, 0.6 * days, n_pages))
    end = np.where(rng.random(n_pages) < 0.5, days, start + rng.uniform(1.0, 0.4 * days, n_pages))
    rows = []
    for i in range(n_pages - n_quiet):
        rate = rng.lognormal(np.log(0.3), 1.2)
        t = np.sort(rng.uniform(start[i], end[i], rng.poisson(rate * (end[i] - start[i]))))
        rows += [(f"p{i}", x) for x in t]
    changes = pd.DataFrame(rows, columns=["page", "timestamp"])
    win = pd.DataFrame({"page": [f"p{i}" for i in range(n_pages)], "start": start, "end": end})
    return pages_from_table(changes, window=win)


def _assert_same_result(new, old):
    assert new.policy == old.policy and new.budget == old.budget and new.span_days == old.span_days
    for f in FIELDS:
        a, b = getattr(new, f), getattr(old, f)
        assert a.dtype == b.dtype and np.array_equal(a, b), f


SCHEDULES = ("nutch", "nutch_nosync", "stormcrawler")
# the policies the reference code has (the index policies and the clairvoyant came after it)
BUILTIN = [p for p in new_policies.POLICIES if not p.startswith("dynamic") and p not in SCHEDULES and p in POLICIES]
# (step in hours, steps per epoch, budget per day, seed, whether the budget binds at some step)
CASES = [(6, 4, 0.6, 1, True), (24, 1, 9.0, 2, False), (3, 8, 2.5, 3, True)]


class _CountBinding:
    """Wraps a reference RatePolicy: counts the steps where more pages are due than allowed."""

    def __init__(self, policy):
        self.policy, self.binds = policy, 0

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def select(self, k, t, active, allowed):
        if k >= self.policy.next_alloc or k >= self.policy.next_change:
            self.policy._allocate(k, active)
        self.binds += int((self.policy.due <= k).sum() > allowed)
        return self.policy.select(k, t, active, allowed)


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}h-epoch{c[1]}-B{c[2]}" for c in CASES])
def test_every_builtin_policy_replays_bit_for_bit_as_before(case):
    hours, epoch, budget, seed, binding = case
    pages = _staggered_pages(seed)
    binds = {}
    for name in BUILTIN:
        kw = dict(budget=budget, dt_ms=hours * HOUR_MS, epoch_steps=epoch, rng=seed)
        new = new_engine.run_replay(pages, new_policies.POLICIES[name](), **kw)
        ref_policy = POLICIES[name]()
        if ref_policy.budgeted:
            ref_policy = _CountBinding(ref_policy)
        old = run_replay(pages, ref_policy, **kw)
        _assert_same_result(new, old)
        binds[name] = getattr(ref_policy, "binds", None)
    # the budget-binding "most credit first" branch was exercised (or never, as expected)
    assert all((binds[p] > 0) == binding for p in ("uniform", "thompson", "oracle")), binds


def test_compiled_steps_hand_the_learner_its_crawls_in_small_batches_as_before(monkeypatch):
    """The compiled steps keep room for one step of crawls only: they stop and resume often."""
    monkeypatch.setattr(new_engine, "_EVENT_STEPS", 1)
    pages = _staggered_pages(12)
    for name in ["thompson", "lln", "mle"]:
        kw = dict(budget=4.0, dt_ms=6 * HOUR_MS, epoch_steps=40, rng=12)
        _assert_same_result(new_engine.run_replay(pages, new_policies.POLICIES[name](), **kw),
                            run_replay(pages, POLICIES[name](), **kw))


def _eager_subclass(base):
    class Eager(base):
        """A user RatePolicy whose allocation makes the pages outside their windows due at the next step."""

        def __init__(self):
            super().__init__("eager")

        def _rates(self, a):
            return np.full(a.size, self.ctx.budget / a.size)

        def _allocate(self, k, active):
            super()._allocate(k, active)
            self.due[~active] = k + 1

    return Eager()


def test_a_rate_policy_crawling_outside_the_windows_raises_as_before():
    pages = _staggered_pages(13)
    kw = dict(budget=50.0, dt_ms=6 * HOUR_MS, epoch_steps=4, rng=0)
    with pytest.raises(RuntimeError) as new:
        new_engine.run_replay(pages, _eager_subclass(new_policies.RatePolicy), **kw)
    with pytest.raises(RuntimeError) as old:
        run_replay(pages, _eager_subclass(RatePolicy), **kw)
    assert str(new.value) == str(old.value) and "outside its window at step 2" in str(new.value)


@pytest.mark.parametrize("name", ["dynamic_mean", "dynamic_thompson"])
def test_dynamic_policies_replay_bit_for_bit_as_before(name):
    pages = _staggered_pages(4, n_pages=10, days=20.0)
    kw = dict(budget=1.5, dt_ms=6 * HOUR_MS, epoch_steps=4, rng=4)
    _assert_same_result(new_engine.run_replay(pages, new_policies.POLICIES[name](), **kw),
                        run_replay(pages, POLICIES[name](), **kw))


def test_pages_that_never_change_replay_as_before():
    changes = pd.DataFrame({"page": pd.Series([], dtype=str), "timestamp": pd.Series([], dtype=float)})
    win = pd.DataFrame({"page": ["a", "b", "c"], "start": [0.0, 2.0, 5.0], "end": [10.0, 7.0, 10.0]})
    pages = pages_from_table(changes, window=win)
    assert pages.change_ms.size == 0
    for name in ["uniform", "thompson"]:
        kw = dict(budget=1.0, dt_ms=12 * HOUR_MS, epoch_steps=2, rng=0)
        _assert_same_result(new_engine.run_replay(pages, new_policies.POLICIES[name](), **kw),
                            run_replay(pages, POLICIES[name](), **kw))


def test_replay_policies_table_is_exactly_as_before(monkeypatch):
    pages = _staggered_pages(5, n_pages=16, days=30.0)
    rows = [(pages.names[i], t / MS_PER_DAY) for i in range(pages.n_pages)
            for t in pages.change_ms[pages.offsets[i]:pages.offsets[i + 1]]]
    changes = pd.DataFrame(rows, columns=["page", "timestamp"])
    win = pd.DataFrame({"page": list(pages.names), "start": pages.start_ms / MS_PER_DAY,
                        "end": pages.end_ms / MS_PER_DAY})
    kw = dict(window=win, budget=[0.5, 3.0], policies=["uniform", "thompson", "oracle", "lln", "nutch",
                                                        "stormcrawler", "nutch_tuned",
                                                        "stormcrawler_tuned"],
              step="4h", epoch="1D", n_boot=20, tune_iterations=3, rng=7)
    new = new_replay.replay_policies(changes, **kw)
    monkeypatch.setattr(new_replay, "run_replay", run_replay)
    # the previous engine and budgeted policies, today's schedules (their rules changed)
    monkeypatch.setattr(new_replay, "POLICIES", {**POLICIES, **{p: new_policies.POLICIES[p] for p in SCHEDULES}})
    old = new_replay.replay_policies(changes, **kw)
    pd.testing.assert_frame_equal(new, old, check_exact=True)


# ----------------------------------------------------------------- user policies
def _proportional_subclass(base):
    class Proportional(base):
        """A user RatePolicy: rates ∝ weight, learning nothing."""

        def __init__(self):
            super().__init__("proportional")

        def _rates(self, a):
            w = self.ctx.weights[a]
            return self.ctx.budget * w / w.sum()

    return Proportional()


def _python_path(base):
    """A user schedule subclass that changes nothing: it takes the Python ``_update`` path."""

    class Same(base):
        def _update(self, i, t, changed):
            super()._update(i, t, changed)

    return Same


@pytest.mark.parametrize("seed", [10, 11])
def test_schedules_compiled_update_equals_their_python_path(seed):
    pages = _staggered_pages(seed)
    n = pages.n_pages
    for hours in (1, 6):
        kw = dict(dt_ms=hours * HOUR_MS, rng=0)
        for cls, settings in [(new_policies.NutchPolicy, {}),
                              (new_policies.NutchPolicy, dict(sync_delta=False)),
                              (new_policies.NutchPolicy, dict(version="1.21", max_interval=2.0, initial_interval=1.0)),
                              (new_policies.NutchPolicy, dict(inc_rate=np.linspace(0.1, 3.0, n), max_fetch_interval=5.0)),
                              (new_policies.StormCrawlerPolicy, {}),
                              (new_policies.StormCrawlerPolicy, dict(inc_rate=np.linspace(0.1, 3.0, n), min_interval=0.3))]:
            fast = new_engine.run_replay(pages, cls(**settings), **kw)
            slow = new_engine.run_replay(pages, _python_path(cls)(**settings), **kw)
            _assert_same_result(fast, slow)
            assert fast.crawls.sum() > 0


class _RandomCrawler:
    """A user protocol object: crawls a random subset of the active pages, within the budget."""

    budgeted = True
    oracle = False
    name = "random"

    def reset(self, ctx):
        self.ctx, self.seen = ctx, []

    def next_step(self, k):
        return k

    def select(self, k, t, active, allowed):
        a = np.flatnonzero(active & (self.ctx.rng.random(self.ctx.n_pages) < 0.3))
        mask = np.zeros(self.ctx.n_pages, dtype=bool)
        mask[a[:allowed]] = True
        return mask

    def observe(self, k, t, changed, interval, mask):
        self.seen.append((k, t, changed.copy(), interval.copy(), mask.copy()))


def test_user_policies_replay_as_before():
    pages = _staggered_pages(6)
    weights = np.random.default_rng(6).uniform(0.5, 2.0, pages.n_pages)
    pages = ReplayPages(pages.names, pages.start_ms, pages.end_ms, pages.change_ms, pages.offsets, weights,
                        pages.origin)
    kw = dict(budget=1.2, dt_ms=6 * HOUR_MS, epoch_steps=4, rng=6)
    _assert_same_result(new_engine.run_replay(pages, _proportional_subclass(new_policies.RatePolicy), **kw),
                        run_replay(pages, _proportional_subclass(RatePolicy), **kw))
    a, b = _RandomCrawler(), _RandomCrawler()
    _assert_same_result(new_engine.run_replay(pages, a, **kw), run_replay(pages, b, **kw))
    assert len(a.seen) == len(b.seen) > 0
    for x, y in zip(a.seen, b.seen):
        assert x[:2] == y[:2] and all(np.array_equal(u, v) for u, v in zip(x[2:], y[2:]))


class _Misbehaving(_RandomCrawler):
    def __init__(self, fault):
        self.fault = fault

    def select(self, k, t, active, allowed):
        if self.fault == "outside":
            return ~active if (~active).any() else np.zeros(self.ctx.n_pages, dtype=bool)
        return active.copy()  # every active page, whatever the budget


@pytest.mark.parametrize("fault", ["outside", "overspend"])
def test_misbehaving_policies_raise_the_same_error(fault):
    pages = _staggered_pages(7)
    kw = dict(budget=0.5, dt_ms=6 * HOUR_MS, epoch_steps=4, rng=0)
    with pytest.raises(RuntimeError) as new:
        new_engine.run_replay(pages, _Misbehaving(fault), **kw)
    with pytest.raises(RuntimeError) as old:
        run_replay(pages, _Misbehaving(fault), **kw)
    assert str(new.value) == str(old.value)
    assert ("outside its window" if fault == "outside" else "overspent its budget") in str(new.value)


# ----------------------------------------------------------------- the grid learner alone
@pytest.mark.parametrize("estimate", ["mean", "mle"])
def test_grid_learner_reads_as_before_between_updates(estimate):
    n = 40
    rng = np.random.default_rng(8)
    new, old = new_learners.GridLearner(n, estimate=estimate), GridLearner(n, estimate=estimate)
    for step in range(60):  # pages hit several times between reads, reads of every kind
        mask = rng.random(n) < 0.3
        changed = rng.random(n) < 0.4
        tau = rng.exponential(2.0, n)
        new.update(changed, tau, mask)
        old.update(changed, tau, mask)
        if step % 7 == 3:
            assert np.array_equal(new.rate, old.rate)
        if step % 5 == 4:
            assert np.array_equal(new.sample(np.random.default_rng(step)), old.sample(np.random.default_rng(step)))
        if step % 11 == 10:
            assert np.array_equal(new.loglik_changed, old.loglik_changed)
    assert np.array_equal(new.loglik_changed, old.loglik_changed)
    for f in ("exposure", "n_changed", "n_unchanged"):
        assert np.array_equal(getattr(new, f), getattr(old, f)), f


def test_grid_learner_takes_scalars_and_lists_as_before():
    new, old = new_learners.GridLearner(3), GridLearner(3)
    calls = [(True, np.array([1.0, 2.0, 3.0]), [True, False, True]), ([0, 1, 1], np.array([0.5, 0.5, 4.0]), True)]
    for c, tau, m in calls:
        new.update(c, tau, m)
        old.update(c, tau, m)
    assert np.array_equal(new.loglik_changed, old.loglik_changed)
    assert np.array_equal(new.rate, old.rate)
    with pytest.raises(ValueError, match="shape"):
        new.update(np.zeros(4, bool), np.ones(4), np.ones(4, bool))


def test_count_below_counts_like_numpy_on_cumulative_weights():
    rng = np.random.default_rng(9)
    w = rng.exponential(1.0, (200, 16)) * (rng.random((200, 16)) < 0.7)  # zero weights: flat runs
    w[5] = np.nan  # a row that is NaN throughout
    w[6, 9:] = np.nan  # NaN from the middle on
    cdf = np.cumsum(w / np.nansum(w, axis=1, keepdims=True), axis=1)
    u = rng.random(200)
    u[:40] = cdf[np.arange(40), rng.integers(0, 16, 40)]  # u equal to an entry (ties)
    u[6] = 0.999
    got = new_kernels.count_below(cdf, u)
    assert np.array_equal(got, (cdf < u[:, None]).sum(axis=1))


def test_grid_learner_read_both_ways_is_as_before():
    """An MLE learner that is also sampled: every read of either kind as before."""
    n = 30
    rng = np.random.default_rng(11)
    new, old = new_learners.GridLearner(n, estimate="mle"), GridLearner(n, estimate="mle")
    for step in range(50):
        mask, changed, tau = rng.random(n) < 0.4, rng.random(n) < 0.5, rng.exponential(1.0, n)
        new.update(changed, tau, mask)
        old.update(changed, tau, mask)
        if step % 3 == 0:
            assert np.array_equal(new.rate, old.rate)
        if step % 4 == 1:
            assert np.array_equal(new.sample(np.random.default_rng(step)), old.sample(np.random.default_rng(step)))
    assert np.array_equal(new._mean, old._mean)
