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

import types
from collections.abc import Callable
from typing import Any

import numpy as np

from ..bursts import BurstParameters
from ..dynamic import DynamicRateFilter
from ..scheduling import optimal_crawl_rates
from ._index import ClairvoyantPolicy, HindsightIndexPolicy, IndexPolicy
from ._learners import DynamicLearner, GridLearner, LLNLearner, OldestFirst, burst_learner

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
    "NUTCH_VERSIONS",
    "NUTCH_UNKNOWN",
    "NUTCH_MODIFIED",
    "NUTCH_NOTMODIFIED",
    "STORMCRAWLER_DEFAULTS",
]

_SECOND = 1.0 / 86400.0
_MINUTE = 60.0 * _SECOND
_NEVER = np.iinfo(np.int64).max // 4

#: conf/nutch-default.xml of Nutch 1.22 (days): db.fetch.schedule.adaptive.{inc_rate, dec_rate,
#: min_interval (60 s), max_interval (365 d), sync_delta, sync_delta_rate}, db.fetch.interval.max
#: (90 d, whole seconds) and db.fetch.interval.default (30 d).
NUTCH_DEFAULTS = dict(
    inc_rate=0.4,
    dec_rate=0.2,
    min_interval=60 * _SECOND,
    max_interval=365.0,
    max_fetch_interval=90.0,
    sync_delta=True,
    sync_delta_rate=0.3,
    initial_interval=30.0,
)

#: StormCrawler 3.x AdaptiveScheduler defaults (days; it counts whole minutes):
#: scheduler.adaptive.fetchInterval.rate.{incr, decr}, fetchInterval.min (60 min), .max
#: (14 d), and the DefaultScheduler's fetchInterval.default (1 d).
STORMCRAWLER_DEFAULTS = dict(
    inc_rate=0.5, dec_rate=0.5, min_interval=60 * _MINUTE, max_interval=14.0, initial_interval=1.0
)


_KERNELS: list[types.ModuleType] = []


def _kernels():
    """The compiled credit grid and schedules (numba: compiled, or loaded from its cache, on first use)."""
    if not _KERNELS:
        from . import _kernels as k  # numba kernels: imported on first use, never compiled at import

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
        due = _kernels().rate_select(
            int(k), int(allowed), self.due, self.c0, self.p, self.m, int(self.k_alloc), float(self.ctx.dt)
        )
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
    if not all(isinstance(x, np.ndarray) and x.flags.c_contiguous and x.shape == (policy.ctx.n_pages,) for x in state):
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
    true Δ (static rates, re-split when pages enter or leave); with per-host caps in the
    context, the capped optimum. ``kind="proportional"``:
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
            return planned_rates(self.ctx, delta, a, b)
        tot = delta.sum()
        return b * delta / tot if tot > 0 else np.full(a.size, b / a.size)


def planned_rates(ctx, delta, a, budget) -> np.ndarray:
    """:func:`optimal_crawl_rates` of ``delta`` for the pages ``a`` (int index) and ``budget``;
    with per-host caps in ``ctx``, the capped optimum (the pages' hosts at their caps)."""
    if ctx.host_codes is None:
        return optimal_crawl_rates(delta, ctx.weights[a], budget)
    return optimal_crawl_rates(delta, ctx.weights[a], budget, hosts=ctx.host_codes[a], host_budgets=ctx.host_budgets)


def _finite_rates(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    return np.clip(np.nan_to_num(x, nan=0.0, posinf=1e6), 0.0, 1e6)


class PlugInPolicy(RatePolicy):
    """Plug-in: every epoch, :func:`optimal_crawl_rates` of the learner's current ``rate``
    (with per-host caps in the context, the capped optimum).

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
        return planned_rates(self.ctx, est, a, self.ctx.budget)

    def _learn(self, changed, interval, mask) -> None:
        self.learner.update(changed, interval, mask)


class ThompsonPolicy(PlugInPolicy):
    """Thompson sampling: every epoch, the optimal rates of one draw ``learner.sample(rng)`` per page."""

    def __init__(self, learner, *, name: str, exploration: float = 0.0):
        super().__init__(learner, name=name, exploration=exploration)

    def _estimate(self):
        return self.learner.sample(self.ctx.rng)


# ----------------------------------------------------------------- crawlers' own schedules
#: FetchSchedule.STATUS_UNKNOWN, STATUS_MODIFIED, STATUS_NOTMODIFIED: the state of a Nutch fetch
NUTCH_UNKNOWN, NUTCH_MODIFIED, NUTCH_NOTMODIFIED = 0, 1, 2
#: Nutch releases whose AdaptiveFetchSchedule :func:`nutch_update` reproduces
NUTCH_VERSIONS = ("1.22", "1.21")


def _check_version(version) -> bool:
    if version not in NUTCH_VERSIONS:
        raise ValueError(f"`version` must be one of {NUTCH_VERSIONS}; got {version!r}")
    return version == "1.22"


def _nutch_units(n, *, inc_rate, dec_rate, min_interval, max_interval, max_fetch_interval, sync_delta, sync_delta_rate):
    """Nutch's settings (days) per page in its own units: float seconds for the adaptive
    bounds, whole seconds for db.fetch.interval.max (an int property)."""

    def arr(x):
        return np.broadcast_to(np.asarray(x, dtype=np.float64), (n,)).copy()

    if not isinstance(sync_delta, (bool, np.bool_)):
        raise TypeError(f"`sync_delta` must be a bool; got {type(sync_delta).__name__}")
    return dict(
        inc_rate=arr(inc_rate),
        dec_rate=arr(dec_rate),
        min_interval_s=arr(min_interval) * 86400.0,
        max_interval_s=arr(max_interval) * 86400.0,
        max_fetch_interval_s=np.rint(arr(max_fetch_interval) * 86400.0).astype(np.int64),
        sync_delta=bool(sync_delta),
        sync_delta_rate=arr(sync_delta_rate),
    )


def _nutch_settings(par: dict, v122: bool) -> tuple:
    """The Nutch kernels' ``settings`` tuple from :func:`_nutch_units` (see ``_kernels._nutch_fetch``)."""
    keys = ("inc_rate", "dec_rate", "min_interval_s", "max_interval_s", "max_fetch_interval_s", "sync_delta")
    return (*(par[key] for key in keys), par["sync_delta_rate"], v122)


def _ms(days) -> np.ndarray:
    return np.rint(np.asarray(days, dtype=np.float64) * 86_400_000.0).astype(np.int64)


def nutch_update(
    interval,
    modified,
    t,
    state,
    *,
    inc_rate,
    dec_rate,
    min_interval,
    max_interval,
    max_fetch_interval,
    sync_delta,
    sync_delta_rate,
    version="1.22",
):
    """One successful fetch in Apache Nutch's CrawlDb update (arrays over pages, days).

    Reproduces, from the sources of Nutch releases 1.22 and 1.21,
    ``AdaptiveFetchSchedule.setFetchSchedule`` followed by ``CrawlDbReducer``'s call of
    ``AbstractFetchSchedule.forceRefetch``:

    1. interval ← interval·(1 − dec_rate) if the fetch is MODIFIED (and the modified time
       becomes t: Nutch dates a change by the fetch that detected it); interval·(1 +
       inc_rate) if NOTMODIFIED; unchanged if UNKNOWN (no stored signature to compare: the
       first fetch, or the first one after a reset). A missing modified time counts as t.
    2. With ``sync_delta``: δ = t − modified; if δ > interval then interval ← δ; the
       reference time is t − offset, offset = sync_delta_rate·δ. Release 1.22 (the fix of
       NUTCH-1564) sets the offset to 0 when it exceeds ``max_interval``, so the next fetch
       is never in the past; release 1.21 keeps it, and a page unchanged for long gets a
       next fetch time before t (``version="1.21"``).
    3. interval is clipped to [min_interval, max_interval] and stored in whole seconds
       (Nutch keeps it as an int); next fetch = reference time + interval.
    4. If the stored interval exceeds ``max_fetch_interval`` (db.fetch.interval.max),
       forceRefetch: interval ← 0.9·max_fetch_interval, signature and modified time
       cleared (the next fetch is UNKNOWN and δ starts again); the next fetch time stays.

    Java's arithmetic is kept: float rates and a float interval, millisecond times,
    ``Math.round``.

    Parameters
    ----------
    interval : array (N,)
        Stored fetch intervals, days (rounded to whole seconds).
    modified : array (N,)
        Stored modified times, days; NaN for none.
    t : float or array (N,)
        Fetch times, days (rounded to milliseconds).
    state : int array (N,)
        :data:`NUTCH_UNKNOWN` (0), :data:`NUTCH_MODIFIED` (1) or :data:`NUTCH_NOTMODIFIED` (2).
    inc_rate, dec_rate, sync_delta_rate : float or array (N,)
    min_interval, max_interval, max_fetch_interval : float or array (N,)
        Days (nutch-default.xml: 60 s, 365 d, 90 d; see :data:`NUTCH_DEFAULTS`).
    sync_delta : bool
    version : {"1.22", "1.21"}

    Returns
    -------
    (interval, next_fetch, modified, reset) : arrays (N,)
        Days (``modified`` NaN where cleared); ``reset`` True where forceRefetch ran.

    Raises
    ------
    ValueError
        For an unknown ``version`` or a ``state`` outside {0, 1, 2}.
    TypeError
        If ``sync_delta`` is not a bool.

    References
    ----------
    Apache Nutch 1.22 and 1.21, ``src/java/org/apache/nutch/crawl/AdaptiveFetchSchedule.java``,
    ``AbstractFetchSchedule.java``, ``CrawlDbReducer.java``, ``conf/nutch-default.xml``;
    issue NUTCH-1564 (fixed in 1.22).

    Examples
    --------
    Nutch's ``TestAdaptiveFetchSchedule``: an interval of 100 s becomes 140 s after an
    unchanged fetch; an 80-day interval unchanged for 10 days grows to 112 d > 90 d, so
    forceRefetch sets it to 81 d and clears the modified time:

    >>> import numpy as np
    >>> from changerate_bayes.replay import NUTCH_DEFAULTS, NUTCH_NOTMODIFIED, nutch_update
    >>> par = {k: v for k, v in NUTCH_DEFAULTS.items() if k != "initial_interval"}
    >>> iv, nxt, mod, reset = nutch_update(np.array([100 / 86400, 80.0]), np.array([np.nan, 90.0]), 100.0,
    ...                                    np.array([NUTCH_NOTMODIFIED, NUTCH_NOTMODIFIED]), **par)
    >>> (iv * 86400).tolist(), mod.tolist(), reset.tolist()
    ([140.0, 6998400.0], [nan, nan], [False, True])
    """
    v122 = _check_version(version)
    interval = np.atleast_1d(np.asarray(interval, dtype=np.float64))
    n = interval.size
    state = np.broadcast_to(np.asarray(state), (n,))
    if state.size and (not np.issubdtype(state.dtype, np.integer) or state.min() < 0 or state.max() > 2):
        raise ValueError(f"`state` must hold 0 (UNKNOWN), 1 (MODIFIED) or 2 (NOTMODIFIED); got {np.unique(state)}")
    par = _nutch_units(
        n,
        inc_rate=inc_rate,
        dec_rate=dec_rate,
        min_interval=min_interval,
        max_interval=max_interval,
        max_fetch_interval=max_fetch_interval,
        sync_delta=sync_delta,
        sync_delta_rate=sync_delta_rate,
    )
    k = _kernels()
    modified = np.broadcast_to(np.asarray(modified, dtype=np.float64), (n,))
    mod_ms = np.where(np.isnan(modified), k.NO_TIME, _ms(np.nan_to_num(modified)))
    iv_s = np.rint(interval * 86400.0).astype(np.int64)
    t_ms = np.broadcast_to(_ms(t), (n,)).copy()
    next_ms = np.empty(n, dtype=np.int64)
    reset = np.empty(n, dtype=bool)
    k.nutch_fetch(t_ms, state.astype(np.int64), iv_s, mod_ms, _nutch_settings(par, v122), next_ms, reset)
    mod = np.where(mod_ms == k.NO_TIME, np.nan, mod_ms / 86_400_000.0)
    return iv_s / 86400.0, next_ms / 86_400_000.0, mod, reset


def stormcrawler_update(interval, t, changed, *, inc_rate, dec_rate, min_interval, max_interval):
    """One fetch under StormCrawler's AdaptiveScheduler (arrays over pages, days).

    Reproduces ``AdaptiveScheduler.schedule`` of Apache StormCrawler 3.x
    (``org.apache.stormcrawler.persistence``) for a FETCHED page whose signature could be
    compared: the interval is an int number of minutes; on a change (signature differs)
    interval ← (int)((1 − dec_rate)·interval + dec_rate·min), which approaches the minimum
    without passing it; without one interval ← (int)(interval·(1 + inc_rate)), capped at
    the max. Java float arithmetic, truncated to whole minutes, so from the 60-minute
    minimum an increase rate below 1/60 never lengthens the interval. Next fetch = t +
    interval.

    Parameters
    ----------
    interval : array (N,)
        Days (rounded to whole minutes).
    t : float or array (N,)
        Fetch times, days.
    changed : bool array (N,)
    inc_rate, dec_rate : float or array (N,)
    min_interval, max_interval : float or array (N,)
        Days, rounded to whole minutes (defaults 60 min and 14 d; :data:`STORMCRAWLER_DEFAULTS`).

    Returns
    -------
    (interval, next_fetch) : arrays (N,), days

    References
    ----------
    Apache StormCrawler 3.x, ``core/src/main/java/org/apache/stormcrawler/persistence/AdaptiveScheduler.java``.

    Examples
    --------
    From the 60-minute minimum, unchanged: (int)(60·1.01) = 60 and (int)(60·1.5) = 90;
    one day, changed: (int)(0.5·1440 + 0.5·60) = 750 minutes:

    >>> import numpy as np
    >>> from changerate_bayes.replay import STORMCRAWLER_DEFAULTS, stormcrawler_update
    >>> par = {k: v for k, v in STORMCRAWLER_DEFAULTS.items() if k not in ("initial_interval", "inc_rate")}
    >>> iv, nxt = stormcrawler_update(np.array([60, 60, 1440]) / 1440, 0.0, np.array([False, False, True]),
    ...                               inc_rate=np.array([0.01, 0.5, 0.5]), **par)
    >>> np.rint(iv * 1440).tolist()
    [60.0, 90.0, 750.0]
    """
    interval = np.atleast_1d(np.asarray(interval, dtype=np.float64))
    n = interval.size
    par = _storm_units(n, inc_rate=inc_rate, dec_rate=dec_rate, min_interval=min_interval, max_interval=max_interval)
    iv = np.rint(interval * 1440.0).astype(np.int64)
    changed = np.broadcast_to(np.asarray(changed, dtype=bool), (n,))
    t_ms = np.broadcast_to(_ms(t), (n,))
    next_ms = np.empty(n, dtype=np.int64)
    idx = np.arange(n, dtype=np.int64)
    for tv in np.unique(t_ms):  # the kernel takes one fetch time: a loop over distinct times
        _storm_fetch(idx[t_ms == tv], int(tv), changed, iv, next_ms, par)
    return iv / 1440.0, next_ms / 86_400_000.0


def _storm_units(n, *, inc_rate, dec_rate, min_interval, max_interval):
    def arr(x):
        return np.broadcast_to(np.asarray(x, dtype=np.float64), (n,)).copy()

    return dict(
        inc_rate=arr(inc_rate),
        dec_rate=arr(dec_rate),
        min_interval_min=np.rint(arr(min_interval) * 1440.0).astype(np.int64),
        max_interval_min=np.rint(arr(max_interval) * 1440.0).astype(np.int64),
    )


def _storm_settings(par: dict) -> tuple:
    """The StormCrawler kernel's ``settings`` tuple from :func:`_storm_units`."""
    return par["inc_rate"], par["dec_rate"], par["min_interval_min"], par["max_interval_min"]


def _storm_fetch(i, t_ms: int, changed, interval_min, next_ms, par: dict) -> None:
    """The AdaptiveScheduler's update of pages ``i`` fetched at ``t_ms`` (outside a replay: no
    windows, the due steps are not kept); ``interval_min`` and ``next_ms`` in place."""
    n = interval_min.size
    _kernels().stormcrawler_observe(
        i,
        t_ms,
        changed,
        interval_min,
        next_ms,
        _storm_settings(par),
        (np.empty(n, dtype=np.int64), 1, np.zeros(n, dtype=np.int64), np.full(n, _NEVER, dtype=np.int64), 0),
    )


def _schedule_settings(crawler: str, defaults: dict, settings: dict) -> dict:
    """``defaults`` overridden by ``settings``; a key not in ``defaults`` raises ValueError."""
    unknown = set(settings) - set(defaults)
    if unknown:
        raise ValueError(f"unknown {crawler} setting(s) {sorted(unknown)}; valid: {sorted(defaults)}")
    return {**defaults, **settings}


class _SchedulePolicy:
    """A crawler's own per-page schedule: a page is fetched at the first step at or after its
    due time (one replay step is one crawl cycle). State in the crawler's units: ``next_ms``
    (next fetch, int64 ms since t0); :attr:`next_fetch` reads it in days."""

    budgeted = False
    oracle = False
    next_ms: np.ndarray  # set by each crawler's reset
    settings: dict  # set by each crawler's __init__
    _update: Callable[[np.ndarray, Any, np.ndarray], None]  # each crawler's rule: (pages, t, changed)
    #: each crawler's ``_update`` + ``_set_due`` compiled: (step, pages, changed)
    _observe_compiled: Callable[[Any, np.ndarray, np.ndarray], None]

    @property
    def next_fetch(self) -> np.ndarray:
        """Next fetch times, days since t0."""
        return self.next_ms / 86_400_000.0

    def reset(self, ctx) -> None:
        self.ctx = ctx
        self.dt_ms = int(round(ctx.dt * 86_400_000.0))
        self.start_ms = _ms(ctx.start)
        self.due = np.zeros(ctx.n_pages, dtype=np.int64)

    def _reset_params(self, units: Callable[..., dict]) -> np.ndarray:
        """Set ``params``, the settings per page in the crawler's units (``units``); returns the
        initial intervals (N,), days."""
        n = self.ctx.n_pages
        par = dict(self.settings)
        initial = np.broadcast_to(np.asarray(par.pop("initial_interval"), dtype=np.float64), (n,))
        self.params = units(n, **par)
        return initial

    def _compiled_pages(self, changed, mask):
        """The pages crawled (``mask``) and ``changed`` as the crawler's ``_observe_compiled``
        takes them, or None where it would not do what ``_update`` + ``_set_due`` do: no
        class defines one, a subclass replaces the rule it compiles (the ``_update`` or
        ``_set_due`` of the class that defines it), or arguments the Python path raises on (a
        ``changed`` not shaped like the pages, a mask longer than the pages)."""
        cls = type(self)
        owner = next((c for c in cls.__mro__ if "_observe_compiled" in vars(c)), None)
        if owner is None or cls._update is not owner._update or cls._set_due is not owner._set_due:
            return None
        i, changed = np.flatnonzero(mask), np.asarray(changed, dtype=bool)
        if changed.shape != self.due.shape or (i.size and i[-1] >= self.due.size):
            return None
        return i, changed

    def _window(self, k) -> tuple:
        """The kernels' ``window`` after a fetch at step ``k`` (see ``_kernels._set_due``)."""
        return self.due, self.dt_ms, self.ctx.first_step, self.ctx.last_step, int(k) + 1

    def _set_due(self, i, k_min=0) -> None:
        """Due step of pages ``i``: the first step at or after the next fetch, >= k_min, in the window."""
        ctx = self.ctx
        due = np.maximum(-(-self.next_ms[i] // self.dt_ms), np.maximum(ctx.first_step[i], k_min))
        self.due[i] = np.where(due <= ctx.last_step[i], due, _NEVER)

    def next_step(self, k: int) -> int:
        return max(int(self.due.min()), k)

    def select(self, k, t, active, allowed) -> np.ndarray:
        # ``active``: a page due is always in its window; with host queues, a page waiting in
        # its host's queue (still due) is not crawlable and is not ordered again
        return (self.due <= k) & active

    def observe(self, k, t, changed, interval, mask) -> None:
        pages = self._compiled_pages(changed, mask)
        if pages is not None:
            self._observe_compiled(k, *pages)  # the same update as ``_update`` + ``_set_due``, compiled
            return
        i = np.flatnonzero(mask)  # (raises on bad arguments, as indexing does)
        self._update(i, t, np.asarray(changed, dtype=bool)[i])
        self._set_due(i, k + 1)  # at most one fetch per step


class NutchPolicy(_SchedulePolicy):
    """Apache Nutch's AdaptiveFetchSchedule, fetch cycle by fetch cycle (see :func:`nutch_update`).

    Keyword arguments override :data:`NUTCH_DEFAULTS` (nutch-default.xml, days);
    ``inc_rate`` may be an array of one rate per page. One replay step is one
    generate-fetch-update cycle. The first fetch is the window start (UNKNOWN: no
    signature yet; interval db.fetch.interval.default = 30 d). After each fetch the
    CrawlDb update of :func:`nutch_update` runs (with forceRefetch past
    db.fetch.interval.max), and the Generator's ``shouldFetch`` is applied at the next
    cycle: a page whose next fetch time is more than db.fetch.interval.max ahead is fetched
    then. With the defaults a page that never changes is fetched every 81 and 89.1 days in
    turn (the reset and the UNKNOWN fetch after it).

    Parameters
    ----------
    name : str, default "nutch"
    version : {"1.22", "1.21"}, default "1.22"
        The Nutch release whose sync_delta offset rule is used (see :func:`nutch_update`).
    **settings
        Keys of :data:`NUTCH_DEFAULTS`.

    State: ``interval_s`` (int64 s), ``modified_ms`` (int64 ms, ``NO_TIME`` for none),
    ``has_signature`` (bool), ``next_ms``.
    """

    def __init__(self, name: str = "nutch", *, version: str = "1.22", **settings):
        self.settings = _schedule_settings("Nutch", NUTCH_DEFAULTS, settings)
        self._v122 = _check_version(version)
        self.name = name
        self.version = version

    @property
    def interval(self) -> np.ndarray:
        """Stored fetch intervals, days."""
        return self.interval_s / 86400.0

    def reset(self, ctx) -> None:
        super().reset(ctx)
        n = ctx.n_pages
        initial = self._reset_params(_nutch_units)
        # the first fetch, at the window start: UNKNOWN, so the interval stays the default, the
        # modified time becomes the fetch time, and the signature is stored
        self.interval_s = np.rint(initial * 86400.0).astype(np.int64)
        self.modified_ms = self.start_ms.copy()
        self.has_signature = np.ones(n, dtype=bool)
        self.next_ms = self.start_ms + self.interval_s * 1000
        self._set_due(np.arange(n))

    def _update(self, i, t, changed) -> None:
        k = _kernels()
        state = np.where(~self.has_signature[i], NUTCH_UNKNOWN, np.where(changed, NUTCH_MODIFIED, NUTCH_NOTMODIFIED))
        par = {key: (v[i] if isinstance(v, np.ndarray) else v) for key, v in self.params.items()}
        iv, mod = self.interval_s[i].copy(), self.modified_ms[i].copy()
        nxt, reset = np.empty(i.size, dtype=np.int64), np.empty(i.size, dtype=bool)
        k.nutch_fetch(
            np.full(i.size, _ms(t), dtype=np.int64),
            state.astype(np.int64),
            iv,
            mod,
            _nutch_settings(par, self._v122),
            nxt,
            reset,
        )
        self.interval_s[i], self.modified_ms[i], self.next_ms[i] = iv, mod, nxt
        self.has_signature[i] = ~reset

    def _set_due(self, i, k_min=0) -> None:
        super()._set_due(i, k_min)
        if k_min > 0:  # Generator.shouldFetch at the next cycle
            far = self.next_ms[i] - k_min * self.dt_ms > self.params["max_fetch_interval_s"][i] * 1000
            ok = far & (k_min <= self.ctx.last_step[i])
            self.due[i[ok]] = k_min

    def _observe_compiled(self, k, i, changed) -> None:
        _kernels().nutch_observe(
            i,
            int(k) * self.dt_ms,
            changed,
            self.interval_s,
            self.modified_ms,
            self.next_ms,
            self.has_signature,
            _nutch_settings(self.params, self._v122),
            self._window(k),
        )


class StormCrawlerPolicy(_SchedulePolicy):
    """StormCrawler's AdaptiveScheduler with its defaults (see :func:`stormcrawler_update`).

    Keyword arguments override :data:`STORMCRAWLER_DEFAULTS` (days); ``inc_rate`` may be
    an array of one rate per page. The first fetch is the window start (no old signature
    to compare: the DefaultScheduler's 1-day interval); the next one is a day later. State:
    ``interval_min`` (int64 minutes) and ``next_ms``.
    """

    def __init__(self, name: str = "stormcrawler", **settings):
        self.settings = _schedule_settings("StormCrawler", STORMCRAWLER_DEFAULTS, settings)
        self.name = name

    @property
    def interval(self) -> np.ndarray:
        """Fetch intervals, days."""
        return self.interval_min / 1440.0

    def reset(self, ctx) -> None:
        super().reset(ctx)
        initial = self._reset_params(_storm_units)
        self.interval_min = np.rint(initial * 1440.0).astype(np.int64)
        self.next_ms = self.start_ms + self.interval_min * 60_000
        self._set_due(np.arange(ctx.n_pages))

    def _update(self, i, t, changed) -> None:
        iv = self.interval_min.copy()
        nxt = self.next_ms.copy()
        ch = np.zeros(iv.size, dtype=bool)
        ch[i] = changed
        _storm_fetch(np.asarray(i, dtype=np.int64), int(_ms(t)), ch, iv, nxt, self.params)
        self.interval_min[i], self.next_ms[i] = iv[i], nxt[i]

    def _observe_compiled(self, k, i, changed) -> None:
        _kernels().stormcrawler_observe(
            i,
            int(k) * self.dt_ms,
            changed,
            self.interval_min,
            self.next_ms,
            _storm_settings(self.params),
            self._window(k),
        )


#: Volatilities (per √day) averaged by the dynamic learners, and their lattice size: fewer
#: than the dynamic posterior's defaults, so that a replay step stays cheap.
DYNAMIC_SIGMAS = (0.0, 0.03, 0.1, 0.3)
DYNAMIC_GRID = 96


def _dynamic_learner(n_pages: int):
    """The dynamic posterior (log-rate random walk, volatility averaged) as a learner."""
    return DynamicRateFilter(n_pages=n_pages, sigma=DYNAMIC_SIGMAS, grid=DYNAMIC_GRID)


def _dynamic_index_learner(n_pages: int):
    """The dynamic posterior as a learner with the index policy's reads."""
    return DynamicLearner(n_pages, sigma=DYNAMIC_SIGMAS, grid=DYNAMIC_GRID)


#: The burst learner's rates per day (quiet 1/30, busy 2, a burst a month lasting about a day): the
#: shape of the Open Terms Archive documents' changes (half the gaps between changes under a day, a
#: mean gap of 11 days); each page's speed is learned from its crawls over BURST_SCALES.
BURST_SHAPE = dict(quiet_rate=1.0 / 30.0, busy_rate=2.0, to_busy=1.0 / 30.0, to_quiet=1.0)
BURST_SCALES = tuple(float(x) for x in np.round(10.0 ** np.linspace(-2.0, 1.0, 7), 6))


def _burst_learner(n_pages: int):
    """The burst model's exact filter (quiet/busy MMPP, rates per day) averaged over per-page scales."""
    return burst_learner(n_pages, params=BurstParameters(**BURST_SHAPE), scales=BURST_SCALES)


#: Exploration share of the plug-in policies.
PLUG_IN_EXPLORATION = 0.05

#: Named policies: name -> factory of a fresh policy (keyword overrides for the schedules).
POLICIES = {
    "uniform": lambda **kw: UniformPolicy(**kw),
    "nutch": lambda **kw: NutchPolicy(**kw),
    "nutch_nosync": lambda **kw: NutchPolicy(**{"name": "nutch_nosync", "sync_delta": False, **kw}),
    "stormcrawler": lambda **kw: StormCrawlerPolicy(**kw),
    "lln": lambda: PlugInPolicy(LLNLearner, name="lln", exploration=PLUG_IN_EXPLORATION),
    "mle": lambda: PlugInPolicy(lambda n: GridLearner(n, estimate="mle"), name="mle", exploration=PLUG_IN_EXPLORATION),
    "posterior_mean": lambda: PlugInPolicy(GridLearner, name="posterior_mean", exploration=PLUG_IN_EXPLORATION),
    "thompson": lambda: ThompsonPolicy(GridLearner, name="thompson"),
    "dynamic_mean": lambda: PlugInPolicy(_dynamic_learner, name="dynamic_mean", exploration=PLUG_IN_EXPLORATION),
    "dynamic_thompson": lambda: ThompsonPolicy(_dynamic_learner, name="dynamic_thompson"),
    "index_mean": lambda: IndexPolicy(GridLearner, name="index_mean", form="mean"),
    "index_thompson": lambda: IndexPolicy(GridLearner, name="index_thompson", form="thompson"),
    "paced_uniform": lambda: IndexPolicy(OldestFirst, name="paced_uniform", pace="pages"),
    "paced_index_mean": lambda: IndexPolicy(GridLearner, name="paced_index_mean", form="mean", pace="pages"),
    "paced_index_thompson": lambda: IndexPolicy(
        GridLearner, name="paced_index_thompson", form="thompson", pace="pages"
    ),
    "dynamic_index_mean": lambda: IndexPolicy(_dynamic_index_learner, name="dynamic_index_mean", form="mean"),
    "dynamic_index_thompson": lambda: IndexPolicy(
        _dynamic_index_learner, name="dynamic_index_thompson", form="thompson"
    ),
    "burst_index_mean": lambda: IndexPolicy(_burst_learner, name="burst_index_mean", form="mean"),
    "burst_index_thompson": lambda: IndexPolicy(_burst_learner, name="burst_index_thompson", form="thompson"),
    "clairvoyant": lambda: ClairvoyantPolicy(),
    "oracle": lambda: OraclePolicy("optimal"),
    "index_oracle": lambda: HindsightIndexPolicy(name="index_oracle"),
    "paced_oracle": lambda: HindsightIndexPolicy(name="paced_oracle", pace="pages"),
    "oracle_proportional": lambda: OraclePolicy("proportional"),
}
