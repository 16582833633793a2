r"""Index policies: crawl the pages with the largest freshness index, and a clairvoyant reference.

The index ν (:func:`changerate_bayes.scheduling.freshness_index`, and
:func:`~changerate_bayes.scheduling.predictive_freshness_index` of a learner's predictive F) is
the page's Whittle index: crawl when w ν(elapsed) reaches the price λ of a crawl.

The price. A budget of B crawls per day is spent by the replay engine's token rule (at
most ⌊B t⌋ crawls by time t): at every step the policy crawls the ``allowed`` pages of
largest index, so λ is the index of the last page crawled: a price that spends the
budget exactly, found by a top-k selection instead of a bisection.

The pace. Spending B crawls every day spends as much while the collection holds a handful
of pages as while it holds hundreds. With ``pace="pages"`` the policy spends its crawls in
proportion to the pages in the crawl instead, b crawls per page-day, b = B·(t_K − t_0) /
Σ_i T_i (the same total, B per day over the replay, spread over the page-days that use it;
T_i are the windows, the pages' entries into and exits from the crawl, never their change
times): at most ⌊b Σ_{j<=k} n_j dt⌋ crawls by step k, n_j the pages crawlable at step j,
and never more than the budget's own ⌊B t⌋. It is how a crawler whose interval is set per
page (Nutch, StormCrawler) spends: each page in the crawl costs its own fetches, so the
spend follows the collection's size.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._validation import check_at_least
from ..scheduling import capped_crawl_rates, freshness_index, index_kernels, predictive_freshness_index
from ._learners import KnownRates

__all__ = ["freshness_index", "predictive_freshness_index", "IndexPolicy", "HindsightIndexPolicy", "ClairvoyantPolicy"]

_NEVER = np.iinfo(np.int64).max // 4


class IndexPolicy:
    r"""Crawl the pages with the largest freshness index w ν(elapsed), within a budget.

    At every step at which the budget allows crawls (the engine's token rule: at most
    ⌊B t⌋ crawls by time t), the ``allowed`` pages with the largest index
    w_i ν_i(t − last crawl_i) are crawled (a top-k selection; ties in any order), so
    the price λ that spends the budget is the index of the last page taken (see the
    module notes for ν). The forms:

    * ``"mean"``: ν of the learner's predictive, ``learner.freshness_index`` when the
      learner has it in closed form, else :func:`predictive_freshness_index` of
      ``learner.prob_change_within``;
    * ``"thompson"``: the Poisson index of one draw Δ ~ ``learner.sample(rng)`` per page,
      redrawn every ``ctx.epoch_steps`` steps.

    No page starves. A page whose copy is older than M = ``max_interval_factor`` × N/B
    days (N the pages of the replay, N/B the round-robin interval) is overdue, and
    overdue pages are crawled before any other, the oldest first. Each token after a page
    becomes overdue goes to a page crawled before it, each of those at most once, so every
    page is crawled again at most M + (N + 1)/B + 2·dt days after its last crawl (or
    after its window opened): :attr:`max_revisit_days`.

    Per-host caps. When the replay has host caps (``ctx.host_codes``, ``ctx.host_caps``),
    the price of a crawl on host h is λ + η_h, η_h the multiplier of its cap (Kolobov et
    al. 2019): crawl when w ν ≥ λ + η_h, i.e. a page on host h is indexed as if its
    weight were w·λ/(λ + η_h). The multipliers are those of the capped optimum
    (:func:`~changerate_bayes.scheduling.capped_crawl_rates`) of the current rates (the
    learner's ``rate``, or the Thompson draw) over the crawlable pages at the budget (b
    times those pages with ``pace="pages"``), re-solved every ``ctx.epoch_steps`` steps;
    λ is then the stationary price, not the top-k price the budget sets at a step, so
    only the ratio λ/(λ + η_h) is used. Where λ = 0 (every host that matters at its cap)
    the weights are kept. The engine's host queues enforce the caps whatever the index
    does; the weights only steer the budget to hosts with room. After a crawl waited in a
    queue, the page's age counts from its fetch.

    Parameters
    ----------
    learner : callable
        ``learner(n_pages)`` returns a learner (``update``, and ``freshness_index`` or
        ``prob_change_within`` for the mean form, ``sample`` for the Thompson form): see
        :mod:`changerate_bayes.replay._learners`.
    name : str
    form : {"mean", "thompson"}, default "mean"
    max_interval_factor : float, default 4.0
        M in multiples of the round-robin interval N/B (1/b with ``pace="pages"``); >= 1.
    pace : {"collection", "pages"}, default "collection"
        ``"collection"``: every crawl the budget allows is spent at once (at most ⌊B t⌋
        by time t). ``"pages"``: at most ⌊b Σ_{j<=k} n_j dt⌋ by step k as well, b crawls per
        page-day and n_j the pages crawlable at step j (see the module notes); unused crawls
        are kept. The starvation bound then reads M + (N + 1)/min(B, b n_min) + 2·dt, n_min
        the fewest pages crawlable at a step at which any page is (the crawls allowed grow by
        at least min(B, b n_min) a day, and the argument above is unchanged).

    Raises
    ------
    ValueError
        For an unknown ``form`` or ``pace``, or ``max_interval_factor`` < 1 or non-finite.
    """

    budgeted = True
    oracle = False

    def __init__(
        self, learner, *, name: str, form: str = "mean", max_interval_factor: float = 4.0, pace: str = "collection"
    ):
        if form not in ("mean", "thompson"):
            raise ValueError(f"`form` must be 'mean' or 'thompson'; got {form!r}")
        if pace not in ("collection", "pages"):
            raise ValueError(f"`pace` must be 'collection' or 'pages'; got {pace!r}")
        factor = check_at_least(max_interval_factor, name="max_interval_factor", minimum=1)
        self.make_learner: Callable[[int], Any] = learner
        self.name: str = name
        self.form: str = form
        self.max_interval_factor: float = factor
        self.pace: str = pace

    def reset(self, ctx) -> None:
        self.ctx = ctx
        n = ctx.n_pages
        self.learner = self.make_learner(n)
        self.last = np.asarray(ctx.start, dtype=np.float64).copy()  # days: the copy of the window start
        self.spent = 0
        self.theta: np.ndarray | None = None
        self.next_draw = 1
        self.host_factor: np.ndarray | None = None
        self.next_factor = 1
        self.paced = None
        if self.pace == "pages":
            # n_j, the pages crawlable at each step j = 0 .. K, from the windows' first and last steps
            ns = ctx.n_steps
            delta = np.zeros(ns + 2)
            ok = ctx.last_step >= ctx.first_step
            np.add.at(delta, np.clip(ctx.first_step[ok], 0, ns + 1), 1.0)
            np.add.at(delta, np.clip(ctx.last_step[ok] + 1, 0, ns + 1), -1.0)
            counts = np.cumsum(delta)[: ns + 1]
            page_steps = np.cumsum(counts)
            self.page_rate = ctx.budget * ns / page_steps[-1] if page_steps[-1] > 0 else 0.0  # b, per page-day
            self.paced = self.page_rate * ctx.dt * page_steps  # crawls allowed by step k
            busy = counts[counts > 0]
            self.min_active = int(busy.min()) if busy.size else 1
            self.max_interval = self.max_interval_factor / self.page_rate if self.page_rate > 0 else math.inf
        else:
            self.max_interval = self.max_interval_factor * n / ctx.budget

    @property
    def max_revisit_days(self) -> float:
        """The stated bound on any page's time between two crawls, days: M + (N + 1)/B + 2·dt,
        or M + (N + 1)/min(B, b n_min) + 2·dt with ``pace="pages"``."""
        ctx = self.ctx
        rate = ctx.budget if self.paced is None else min(ctx.budget, self.page_rate * self.min_active)
        return self.max_interval + (ctx.n_pages + 1) / rate + 2.0 * ctx.dt

    def _index(self, k, elapsed) -> np.ndarray:
        if self.form == "thompson":
            if self.theta is None or k >= self.next_draw:
                self.theta = np.clip(
                    np.nan_to_num(np.asarray(self.learner.sample(self.ctx.rng), dtype=np.float64), nan=0.0, posinf=1e6),
                    0.0,
                    1e6,
                )
                e = self.ctx.epoch_steps
                self.next_draw = (k // e + 1) * e
            nu = np.empty(elapsed.size)
            index_kernels().poisson_index(self.theta, elapsed, nu)
        elif hasattr(self.learner, "freshness_index"):
            nu = np.asarray(self.learner.freshness_index(elapsed), dtype=np.float64)
        else:
            nu = predictive_freshness_index(self.learner.prob_change_within, elapsed)
        nu = self.ctx.weights * nu
        if self.ctx.host_codes is not None:
            nu *= self._host_factor(k)
        bad = ~np.isfinite(nu)
        if bad.any():
            nu[bad] = 0.0
        return nu

    def _host_factor(self, k) -> np.ndarray:
        """Per page, λ/(λ + η_h) of the capped optimum of the current rates (module notes),
        re-solved every ``ctx.epoch_steps`` steps; 1 where λ = 0."""
        ctx = self.ctx
        if self.host_factor is None or k >= self.next_factor:
            rates = self.theta if self.form == "thompson" and self.theta is not None else self.learner.rate
            rates = np.clip(np.nan_to_num(np.asarray(rates, dtype=np.float64), nan=0.0, posinf=1e6), 0.0, 1e6)
            a = np.flatnonzero(ctx.active(k))
            factor = np.ones(ctx.n_pages)
            if a.size:
                budget = ctx.budget if self.paced is None else min(ctx.budget, self.page_rate * a.size)
                res = capped_crawl_rates(
                    rates[a],
                    ctx.weights[a],
                    budget,
                    hosts=ctx.host_codes[a],
                    host_budgets=ctx.host_budgets,
                )
                if res.price > 0:
                    eta = np.zeros(np.asarray(ctx.host_caps).size)
                    eta[np.asarray(res.hosts, dtype=np.int64)] = res.host_prices
                    factor = res.price / (res.price + eta[ctx.host_codes])
            self.host_factor = factor
            e = ctx.epoch_steps
            self.next_factor = (k // e + 1) * e
        return self.host_factor

    def next_step(self, k: int) -> int:
        ctx = self.ctx
        token = int(np.ceil((self.spent + 1) / (ctx.budget * ctx.dt) - 1e-9))  # the step of the next crawl left
        k = max(k, token)
        if self.paced is not None:  # and the first step whose paced allowance covers one more crawl
            k = max(k, int(np.searchsorted(self.paced, self.spent + 1 - 1e-9, side="left")))
        if k <= ctx.n_steps and not ctx.active(k).any():
            k = max(k, ctx.next_activity_change(k))
        return k

    def _paced_take(self, k: int, active, allowed) -> tuple[np.ndarray, int]:
        """The active pages and how many of them to crawl at step ``k``: ``allowed``, within the pace."""
        a = np.flatnonzero(active)
        if self.paced is not None:
            allowed = min(int(allowed), math.floor(self.paced[min(k, self.paced.size - 1)] + 1e-9) - self.spent)
        return a, min(int(allowed), a.size)

    def select(self, k, t, active, allowed) -> np.ndarray:
        mask = np.zeros(self.ctx.n_pages, dtype=bool)
        a, take = self._paced_take(k, active, allowed)
        if take <= 0:
            return mask
        elapsed = np.maximum(t - self.last, 0.0)
        nu = self._index(k, elapsed)[a]
        el = elapsed[a]
        overdue = el >= self.max_interval * (1.0 - 1e-12)
        n_over = int(overdue.sum())
        if n_over >= take:  # overdue pages only, the oldest first
            od = np.flatnonzero(overdue)
            chosen = a[od[np.argsort(-el[od], kind="stable")[:take]]]
        else:  # every overdue page, then the largest indices
            rest = np.flatnonzero(~overdue)
            m = take - n_over
            top = rest[np.argpartition(-nu[rest], m - 1)[:m]] if m < rest.size else rest
            chosen = np.concatenate([a[overdue], a[top]])
        mask[chosen] = True
        self.last[chosen] = t
        self.spent += take
        return mask

    def observe(self, k, t, changed, interval, mask) -> None:
        if self.ctx.host_codes is not None:  # fetched now, after waiting in a host queue
            self.last[np.asarray(mask, dtype=bool)] = t
        self.learner.update(changed, interval, mask)


class HindsightIndexPolicy(IndexPolicy):
    r"""A hindsight reference: :class:`IndexPolicy` over each page's true rate Δ_i = n_i/T_i.

    The index is the Poisson freshness index w_i (1 − e^{−Δ_i t}(1 + Δ_i t))/Δ_i
    (:func:`freshness_index`) of the page's change count n_i over its window T_i, known in
    advance and never revised (:class:`~changerate_bayes.replay.KnownRates`); the budget,
    the pace and the starvation rule are those of :class:`IndexPolicy`. It is what the
    static-posterior index policies would do if their posteriors had converged to the
    hindsight rates, at the same pace: the reference for them (the rate-allocating
    ``OraclePolicy`` spends its budget every day, unpaced). It is given the true rates by the
    engine (``oracle = True``), never a learner.

    Parameters
    ----------
    name : str
    pace : {"collection", "pages"}, default "collection"
        As in :class:`IndexPolicy`.
    max_interval_factor : float, default 4.0
        As in :class:`IndexPolicy`.

    Raises
    ------
    ValueError
        From the constructor as :class:`IndexPolicy`; from ``reset`` when the context has no
        true rates (``ctx.true_rates`` None) or not one per page.
    """

    oracle = True

    def __init__(self, *, name: str, pace: str = "collection", max_interval_factor: float = 4.0):
        super().__init__(None, name=name, form="mean", max_interval_factor=max_interval_factor, pace=pace)

    def reset(self, ctx) -> None:
        rates = ctx.true_rates
        if rates is None:
            raise ValueError(
                f"policy {self.name!r} is a hindsight reference and needs each page's true rate "
                "(`ctx.true_rates`, n_i/T_i per day, given by the replay engine to policies with "
                "`oracle = True`); got None"
            )
        if np.shape(rates) != (ctx.n_pages,):
            raise ValueError(
                f"`ctx.true_rates` must have one rate per page, shape ({ctx.n_pages},); got shape {np.shape(rates)}"
            )
        self.make_learner = lambda n: KnownRates(rates)
        super().reset(ctx)


class ClairvoyantPolicy:
    """A reference that knows every change time and spends the same budget: near an upper limit.

    At every step with crawls left (the engine's token rule: at most ⌊B t⌋ crawls by time
    t; unused crawls are kept for later), it crawls only stale pages (a change since their
    last crawl: crawling a fresh page gains nothing), and among them the ones that gain
    the most fresh time, i.e. whose next change (or window end) is furthest away: the gain
    of a crawl at t is min(next change after t, window end) − t. When tokens are short,
    serving the larger gain first is never worse for two waiting pages (an exchange
    argument: both gains fall at the same rate while they wait, and the smaller one ends
    first). It is greedy, not an optimum over all schedules (it does not hold a crawl back
    for a later, larger gain), so a learning policy could in principle beat it by a little;
    it is given the change times by the engine (``clairvoyant = True``), never a learner.
    """

    budgeted = True
    oracle = True
    clairvoyant = True

    def __init__(self, name: str = "clairvoyant"):
        self.name = name

    def reset(self, ctx) -> None:
        self.ctx = ctx
        n = ctx.n_pages
        ch = ctx.changes
        self.change_ms, self.offsets = ch["change_ms"], ch["offsets"]
        self.end_ms, self.dt_ms = ch["end_ms"], ch["dt_ms"]
        counts = np.diff(self.offsets)
        shift = np.int64(1) << np.int64(40)
        self.shift = shift
        self.key = np.repeat(np.arange(n, dtype=np.int64) * shift, counts) + self.change_ms
        self.spent = 0
        self.stale_ms = self._first_change_after(np.arange(n, dtype=np.int64), np.asarray(ch["start_ms"]))

    def _first_change_after(self, idx, t_ms) -> np.ndarray:
        pos = np.searchsorted(self.key, idx * self.shift + t_ms, side="right")
        ok = pos < self.offsets[idx + 1]
        if not self.change_ms.size:
            return np.full(idx.size, _NEVER, dtype=np.int64)
        return np.where(ok, self.change_ms[np.minimum(pos, self.change_ms.size - 1)], _NEVER)

    def next_step(self, k: int) -> int:
        ctx = self.ctx
        token = int(np.ceil((self.spent + 1) / (ctx.budget * ctx.dt) - 1e-9))
        # the first step at which each page is stale and crawlable
        stale_step = np.maximum(-(-self.stale_ms // self.dt_ms), ctx.first_step)
        stale_step = np.maximum(stale_step, k)
        ok = stale_step <= ctx.last_step
        if not ok.any():
            return ctx.n_steps + 1
        return max(k, token, int(stale_step[ok].min()))

    def select(self, k, t, active, allowed) -> np.ndarray:
        mask = np.zeros(self.ctx.n_pages, dtype=bool)
        t_ms = k * self.dt_ms
        cand = np.flatnonzero(active & (self.stale_ms <= t_ms))
        take = min(int(allowed), cand.size)
        if take <= 0:
            return mask
        nxt = self._first_change_after(cand, np.full(cand.size, t_ms, dtype=np.int64))
        gain = np.minimum(nxt, self.end_ms[cand]) - t_ms
        chosen = cand[np.argsort(-gain, kind="stable")[:take]]
        mask[chosen] = True
        self.stale_ms[chosen] = self._first_change_after(chosen, np.full(chosen.size, t_ms, dtype=np.int64))
        self.spent += take
        return mask

    def observe(self, k, t, changed, interval, mask) -> None:
        if self.ctx.host_codes is not None:  # fetched now, after waiting in a host queue
            idx = np.flatnonzero(mask)
            self.stale_ms[idx] = self._first_change_after(idx, np.full(idx.size, k * self.dt_ms, dtype=np.int64))
