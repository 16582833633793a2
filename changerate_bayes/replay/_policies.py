"""Crawl policies for the replay: budgeted rate allocations and crawlers' adaptive schedules.

A policy is an object with ``name``, ``budgeted`` (True: it spends a budget of B crawls
per day; False: it follows its own schedule), ``oracle`` (True only for the hindsight
references, the only ones given the true rates) and the methods

* ``reset(ctx)`` with a :class:`~changerate_bayes.replay.ReplayContext`;
* ``next_step(k) -> int``: the first step >= k at which it may act;
* ``select(k, t, active, allowed) -> bool (N,)``: the pages to crawl at step k (time t
  in days since the start), a subset of ``active``, at most ``allowed`` of them;
* ``observe(k, t, changed, interval, mask)``: what those crawls saw.

Budgeted policies set a crawl rate p_i per page (Σ p_i = B over the pages in their
window) at every epoch and whenever a page enters or leaves its window, and crawl each
page on a regular grid of its rate: page i gains p_i·dt credit per step and is crawled
when its credit reaches 1 (a random phase in [0, 1) when it enters), so a page with
p_i = B/N is crawled round robin. The budget is a hard limit: when more pages are due
than crawls are left, the ones with the most credit go first.
"""

from __future__ import annotations

import numpy as np

from ..scheduling import optimal_crawl_rates
from ._learners import GridLearner, LLNLearner

__all__ = [
    "RatePolicy",
    "UniformPolicy",
    "OraclePolicy",
    "PlugInPolicy",
    "ThompsonPolicy",
    "NutchPolicy",
    "StormCrawlerPolicy",
    "nutch_update",
    "stormcrawler_update",
    "NUTCH_DEFAULTS",
    "STORMCRAWLER_DEFAULTS",
]

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


_KERNELS = []


def _kernels():
    """The compiled credit grid and schedules (numba: compiled, or loaded from its cache, on first use)."""
    if not _KERNELS:
        from . import _kernels as k

        _KERNELS.append(k)
    return _KERNELS[0]


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
        self.due = np.empty(self.ctx.n_pages, dtype=np.int64)
        _kernels().due_after_all(self.c0, self.p, self.m, int(k), float(self.ctx.dt), self.due)
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
        # the pages with due <= k (most credit first when the budget binds); their crawl count
        # and next due step (>= k + 1: at most one crawl per step), as ``_credit`` / ``_due_after``
        due = _kernels().rate_select(int(k), int(allowed), self.due, self.c0, self.p, self.m, int(self.k_alloc),
                                     float(self.ctx.dt))
        mask = np.zeros(self.ctx.n_pages, dtype=bool)
        mask[due] = True
        self.spent += due.size
        return mask

    def observe(self, k, t, changed, interval, mask) -> None:
        self._learn(changed, interval, mask)


def compiled_steps(policy):
    """Whether the engine may run ``policy``'s steps between reallocations compiled
    (:func:`~changerate_bayes.replay._kernels.rate_steps`), and how its crawls reach its learner.

    Returns (False, None) unless ``policy`` is a :class:`RatePolicy` that keeps the base
    class's stepping (``next_step``, ``select``, ``observe``, ``_credit``, ``_due_after``)
    and float64 / int64 state, and learns nothing or learns with a :class:`GridLearner` or
    :class:`LLNLearner`; then (True, None) or (True, ``learner._update_events``).
    """
    if not isinstance(policy, RatePolicy):
        return False, None
    cls = type(policy)
    for name in ("next_step", "select", "observe", "_credit", "_due_after"):
        if getattr(cls, name) is not getattr(RatePolicy, name):
            return False, None
    state = (policy.due, policy.c0, policy.p, policy.m)
    if not all(isinstance(x, np.ndarray) and x.flags.c_contiguous and x.shape == (policy.ctx.n_pages,)
               for x in state):
        return False, None
    if policy.due.dtype != np.int64 or any(x.dtype != np.float64 for x in state[1:]):
        return False, None
    if cls._learn is RatePolicy._learn:
        return True, None
    if cls._learn is PlugInPolicy._learn and type(getattr(policy, "learner", None)) in (GridLearner, LLNLearner):
        return True, policy.learner._update_events
    return False, None


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

    def observe(self, k, t, changed, interval, mask) -> None:
        par = self.params
        if (type(self)._update is not NutchPolicy._update or type(self)._set_due is not _SchedulePolicy._set_due
                or not isinstance(par["sync_delta"], (bool, np.bool_))):
            return super().observe(k, t, changed, interval, mask)
        i, changed = np.flatnonzero(mask), np.asarray(changed, dtype=bool)
        if changed.shape != self.interval.shape or (i.size and i[-1] >= self.interval.size):
            return super().observe(k, t, changed, interval, mask)  # (raises, as indexing would)
        # the same update as ``_update`` + ``_set_due``, compiled
        ctx = self.ctx
        _kernels().nutch_observe(
            i, float(t), changed, self.interval, self.next_fetch,
            self.modified, par["inc_rate"], par["dec_rate"], par["min_interval"], par["max_interval"],
            par["max_fetch_interval"], bool(par["sync_delta"]), par["sync_delta_rate"], self.due, float(ctx.dt),
            ctx.first_step, ctx.last_step, int(k) + 1)


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

    def observe(self, k, t, changed, interval, mask) -> None:
        if type(self)._update is not StormCrawlerPolicy._update or type(self)._set_due is not _SchedulePolicy._set_due:
            return super().observe(k, t, changed, interval, mask)
        i, changed = np.flatnonzero(mask), np.asarray(changed, dtype=bool)
        if changed.shape != self.interval.shape or (i.size and i[-1] >= self.interval.size):
            return super().observe(k, t, changed, interval, mask)  # (raises, as indexing would)
        # the same update as ``_update`` + ``_set_due``, compiled
        ctx, par = self.ctx, self.params
        _kernels().stormcrawler_observe(
            i, float(t), changed, self.interval, self.next_fetch,
            par["inc_rate"], par["dec_rate"], par["min_interval"], par["max_interval"], self.due, float(ctx.dt),
            ctx.first_step, ctx.last_step, int(k) + 1)


#: Volatilities (per √day) averaged by the dynamic learners, and their lattice size: fewer
#: than the dynamic posterior's defaults, so that a replay step stays cheap.
DYNAMIC_SIGMAS = (0.0, 0.03, 0.1, 0.3)
DYNAMIC_GRID = 96


def _dynamic_learner(n_pages: int):
    """The dynamic posterior (log-rate random walk, volatility averaged) as a learner."""
    from ..dynamic import DynamicRateFilter

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
