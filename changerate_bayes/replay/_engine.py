"""The replay engine: a policy crawls real change histories in time steps.

Time runs in steps of ``dt`` from the earliest window start t0: step k is the instant
t_k = t0 + k·dt. Page i is taken fresh at its window start s_i (its first crawl) and
scored until its window end e_i; it can be crawled at the steps with s_i < t_k <= e_i,
at most once per step. A crawl at t reveals only I = 1{a change in (last crawl, t]}
and τ = t − last crawl; the change times themselves stay inside the engine.

Everything inside a step is vectorised over pages. The engine asks the policy for the
next step at which it may act, so steps where nothing can happen are skipped (this
changes nothing in the result: it is the same as visiting them).

The per-crawl bookkeeping is compiled (numba, ``_kernels``), and for the built-in
credit-grid policies (:class:`~changerate_bayes.replay.RatePolicy` and its subclasses
that keep its stepping) the steps between two reallocations run in one compiled loop:
the same operations in the same order, so the same numbers. Any other policy object
goes through the Python loop, step by step, with the protocol of ``_policies``.

With per-host caps (``host_codes``, ``host_caps``), the crawls a policy orders at a step pass
through a queue per host (first in first out, a token bucket per host, see
:func:`run_replay`) and are fetched at the first steps with room, as a crawler's per-host
fetch queue does (Nutch: fetcher.server.delay, 5 s, at most 17,280 fetches a day per host;
StormCrawler: 1 s); the queues are compiled (``_kernels.host_*``) and run inside the
compiled steps too.

Scores are exact given the crawl times (no discretisation of the change times): per
crawl interval [a, b) with first change c after a, the copy is fresh for min(c, b) − a
and its age t − c (Cho & Garcia-Molina 2003) integrates to (b − c)²/2 when c < b.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ._pages import MS_PER_DAY, ReplayPages
from ._policies import compiled_steps as _compiled_steps

__all__ = ["ReplayContext", "ReplayResult", "run_replay"]

_PAGE_SHIFT = np.int64(1) << np.int64(40)  # > any time span in ms (35 years)
_EVENT_STEPS = 64  # the compiled steps keep the crawls of up to this many steps (all pages) for the learner


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
    changes : dict or None
        The change times themselves, given only to a policy with ``clairvoyant = True``:
        ``change_ms`` (int64 ms since t0, sorted by page then time), ``offsets`` (N + 1),
        ``start_ms`` and ``end_ms`` (windows, ms since t0) and ``dt_ms`` (the step).
    host_codes : ndarray of int64, shape (N,), or None
        With per-host caps, the host of each page (0 .. H − 1); None: no host queues.
    host_caps : ndarray of float, shape (H,), or None
        With per-host caps, c_h in crawls per day (inf: uncapped). The engine enforces them
        (see :func:`run_replay`); a policy may use them to plan (e.g. the capped optimum).
    signals : tuple of two ndarrays or None
        Every signal of the replay at once, (page, time in ms since t0), int64 sorted by
        time: given only to a hindsight reference with ``hindsight_signals = True`` (which
        is given ``changes`` too); None without signals.
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
    changes: dict | None = None
    host_codes: np.ndarray | None = None
    host_caps: np.ndarray | None = None
    signals: tuple[np.ndarray, np.ndarray] | None = None

    def active(self, k: int) -> np.ndarray:
        """Pages that can be crawled at step k, bool (N,)."""
        return (self.first_step <= k) & (k <= self.last_step)

    def next_activity_change(self, k: int) -> int:
        """The first step > k at which a page becomes or stops being crawlable (n_steps + 1 if none)."""
        events = self._activity_steps
        pos = int(np.searchsorted(events, k, side="right"))
        return int(events[pos]) if pos < events.size else self.n_steps + 1

    @functools.cached_property
    def host_budgets(self) -> dict | None:
        """The finite caps of ``host_caps`` as a mapping host code -> crawls per day (None
        without hosts): the ``host_budgets`` of
        :func:`~changerate_bayes.scheduling.optimal_crawl_rates` for pages with
        ``hosts=host_codes[...]`` (built once per replay)."""
        if self.host_codes is None or self.host_caps is None:
            return None
        caps = np.asarray(self.host_caps, dtype=np.float64)
        finite = np.flatnonzero(np.isfinite(caps))
        return dict(zip(finite.tolist(), caps[finite].tolist()))

    @functools.cached_property
    def _activity_steps(self) -> np.ndarray:
        """first_step and last_step + 1 of every page, sorted (int64)."""
        return np.sort(np.concatenate([self.first_step, self.last_step + 1]).astype(np.int64))


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

    def part(self, start: int, stop: int) -> ReplayResult:
        """The pages start .. stop - 1 (one copy of a tiled replay)."""
        s = slice(start, stop)
        return ReplayResult(
            self.policy,
            self.budget,
            self.span_days,
            self.window_days[s],
            self.fresh_days[s],
            self.age_area[s],
            self.crawls[s],
            self.detected[s],
            self.changes[s],
            self.weights[s],
        )


def _steps(pages: ReplayPages, dt_ms: int):
    t0 = int(pages.start_ms.min())
    n_steps = int(-(-(int(pages.end_ms.max()) - t0) // dt_ms))  # ceil
    first = (pages.start_ms - t0) // dt_ms + 1
    last = (pages.end_ms - t0) // dt_ms
    return t0, n_steps, first.astype(np.int64), last.astype(np.int64)


def _refuse_crawls(status: int, policy, step: int, size: int, allowed) -> None:
    """Raise RuntimeError for the nonzero ``status`` of the compiled crawls of ``size`` pages at ``step``:
    1, a page crawled outside its window; 2, more crawls than the ``allowed`` of the budget."""
    if status == 1:
        raise RuntimeError(f"policy {policy.name!r} crawled a page outside its window at step {step}")
    if status == 2:
        raise RuntimeError(
            f"policy {policy.name!r} overspent its budget at step {step}: {size} crawls, {allowed} allowed"
        )


class _HostQueues(NamedTuple):
    """The host queues' state, as the kernels take it (see ``_kernels``)."""

    host: np.ndarray
    queued: np.ndarray
    qn: np.ndarray
    qh: np.ndarray
    qf: np.ndarray
    nbusy: np.ndarray
    fetched: np.ndarray


def _host_queues(host_codes, host_caps, n: int, dt: float) -> _HostQueues:
    """The empty host queues (the kernels' state, see ``_kernels``), every bucket full."""
    caps = np.asarray(host_caps, dtype=np.float64)
    h = caps.size
    finite = np.isfinite(caps)
    alloc = np.where(finite, caps * dt, float(n + 1))  # an uncapped host: never short of tokens
    capacity = np.where(finite, np.maximum(1.0, np.ceil(alloc - 1e-9)), float(n + 1))
    qh = np.zeros((6, h), dtype=np.int64)
    qh[0:2] = -1
    qf = np.stack([capacity, alloc, capacity]).astype(np.float64)
    return _HostQueues(
        host=np.ascontiguousarray(host_codes, dtype=np.int64),
        queued=np.zeros(n, dtype=bool),
        qn=np.full(n, -1, dtype=np.int64),
        qh=qh,
        qf=np.ascontiguousarray(qf),
        nbusy=np.zeros(1, dtype=np.int64),
        fetched=np.zeros(n, dtype=np.int64),
    )


def run_replay(
    pages: ReplayPages,
    policy,
    *,
    budget=None,
    dt_ms: int = 3_600_000,
    epoch_steps: int = 24,
    rng=None,
    host_codes=None,
    host_caps=None,
    fetch_log: list | None = None,
    signals=None,
) -> ReplayResult:
    """Replay ``pages`` under ``policy`` (internal: arguments are trusted; see ``replay_policies``).

    ``budget`` (crawls per day) is enforced: a budgeted policy may have crawled at most
    floor(B·(t − t0)) pages by step time t, and the engine raises RuntimeError if a
    policy asks for more (a bug in the policy, not bad input).

    Host queues. With ``host_codes`` (int64 (N,), 0 .. H − 1) and ``host_caps`` (float
    (H,), c_h crawls per day, inf for an uncapped host), the pages a policy chooses at a
    step join their host's queue (first in, first out; in page order within a step) and
    are fetched when the host has room, as a crawler's per-host fetch queue does. Host h
    gains a_h = c_h·dt tokens per step into a bucket of capacity C_h = max(1, ⌈a_h⌉), full
    at the start: at step k it holds min(C_h, T_h + a_h·(k − u_h)), u_h its last fetch
    step and T_h what the bucket kept then, and it fetches the first
    ⌊tokens + 1e-9⌋ pages of its queue (the tokens of the fetches are spent). So a host
    is fetched at most C_h times in a step and at most C_h + a_h·(m − 1) times in any m
    steps (c_h per day in the long run, with a fraction carried over from step to step).
    The budget is charged when a page is chosen, not when it is fetched: a crawl held in
    a queue is not given back. A page waiting in its queue is not crawlable for the
    policy (``select`` gets ``active`` without the waiting pages); a policy that chooses
    it anyway (a schedule still due, a credit grid's next due step) is charged and the
    order merged with the waiting one. A waiting page whose window closes leaves its
    queue unfetched. ``observe`` is told the pages fetched at the step (I and τ from the
    fetch). Orders still waiting at the end are not fetched. Without ``host_codes``
    nothing of this runs.

    ``fetch_log``, a list: every step's fetches are appended to it as (step, pages)
    int64 arrays (for tests and diagnostics).

    ``signals``, (page, time_ms): int64 arrays sorted by time, ms on the clock of
    ``pages.start_ms`` (from :func:`~changerate_bayes.replay._signals.signal_times`). A
    signal at time s is visible from the first step k with t_k >= s: at each step the
    engine visits, before ``select``, a policy with a ``receive_signals(k, page, t)``
    method is given the signals of steps up to k not given yet (t in days since t0);
    other policies never see them. Not with host queues. None: nothing of this runs.
    """
    from . import _kernels as _k  # numba, compiled (or loaded from its cache) on first use

    rng = np.random.default_rng(rng)
    n = pages.n_pages
    dt = dt_ms / MS_PER_DAY
    t0, n_steps, first, last = _steps(pages, dt_ms)
    change, start, end = pages.change_ms - t0, pages.start_ms - t0, pages.end_ms - t0  # int64 ms since t0
    capped = host_codes is not None
    hindsight = getattr(policy, "hindsight_signals", False)
    ctx = ReplayContext(
        n_pages=n,
        dt=dt,
        n_steps=n_steps,
        first_step=first,
        last_step=last,
        start=start / MS_PER_DAY,
        weights=pages.weights,
        budget=None if not policy.budgeted else float(budget),
        epoch_steps=int(epoch_steps),
        rng=rng,
        true_rates=pages.true_rates if getattr(policy, "oracle", False) else None,
        changes=(
            dict(change_ms=change, offsets=pages.offsets, start_ms=start, end_ms=end, dt_ms=int(dt_ms))
            if getattr(policy, "clairvoyant", False) or hindsight
            else None
        ),
        host_codes=np.asarray(host_codes, dtype=np.int64) if capped else None,
        host_caps=np.asarray(host_caps, dtype=np.float64) if capped else None,
        signals=(
            (np.asarray(signals[0], dtype=np.int64), np.asarray(signals[1], dtype=np.int64) - t0)
            if hindsight and signals is not None
            else None
        ),
    )
    policy.reset(ctx)

    counts = pages.n_changes
    key = np.repeat(np.arange(n, dtype=np.int64) * _PAGE_SHIFT, counts) + change
    never = np.iinfo(np.int64).max // 4

    def first_change_after(idx, t_ms):
        pos = np.searchsorted(key, idx * _PAGE_SHIFT + t_ms, side="right")
        ok = pos < pages.offsets[idx + 1]
        return np.where(ok, change[np.minimum(pos, max(change.size - 1, 0))] if change.size else never, never)

    last_ms = start.copy()  # the time of each page's last crawl, moved on by the kernels
    stale_ms = first_change_after(np.arange(n, dtype=np.int64), last_ms)
    fresh = np.zeros(n)
    age = np.zeros(n)
    crawls = np.zeros(n, dtype=np.int64)
    detected = np.zeros(n, dtype=np.int64)
    # the scoring state the kernels update in place (see ``_kernels.crawl_pages``)
    score = (stale_ms, last_ms, fresh, age, crawls, detected, key, change, pages.offsets, _PAGE_SHIFT, never)
    spent = 0
    changed_full = np.zeros(n, dtype=bool)
    interval_full = np.zeros(n)
    k = 1
    active, active_until = ctx.active(1), ctx.next_activity_change(0)
    compiled, learn = _compiled_steps(policy) if policy.budgeted else (False, None)
    feed = signals is not None and hasattr(policy, "receive_signals")
    if feed:  # a policy that reads signals is given them at every step it acts: the Python loop
        compiled, learn = False, None
    record = learn is not None or fetch_log is not None
    if compiled and record:
        cap = max(n, min(_EVENT_STEPS * n, 1 << 18))
        ev_page, ev_changed, ev_tau = np.zeros(cap, dtype=np.int64), np.zeros(cap, dtype=bool), np.zeros(cap)
        ev_step = np.zeros(cap, dtype=np.int64)
    else:
        cap = 0
        ev_page, ev_changed, ev_tau = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool), np.zeros(0)
        ev_step = np.zeros(0, dtype=np.int64)
    if capped:
        q = _host_queues(host_codes, host_caps, n, dt)
    else:  # placeholders for the compiled loop's arguments
        q = _host_queues(np.zeros(0, dtype=np.int64), np.zeros(0), 0, dt)
    if feed:
        assert signals is not None and not capped  # refused by replay_policies
        sig_page = np.asarray(signals[0], dtype=np.int64)
        sig_rel = np.asarray(signals[1], dtype=np.int64) - t0
        sig_step = -(-sig_rel // dt_ms)  # the first step at or after each signal
        sig_days = sig_rel / MS_PER_DAY
        sig_next = 0
    while True:  # a loop over time steps; everything inside is vectorised over pages
        while compiled and k < min(policy.next_alloc, policy.next_change, active_until, n_steps + 1):
            # a built-in credit grid between reallocations: the same steps, compiled
            k, added, n_ev, status, step, allowed, size = _k.rate_steps(
                int(k),
                int(min(policy.next_alloc, policy.next_change, active_until)),
                n_steps,
                dt_ms,
                ctx.budget,
                dt,
                spent,
                int(policy.spent),
                (policy.due, policy.c0, policy.p, policy.m),
                int(policy.k_alloc),
                int(policy.next_alloc),
                int(policy.next_change),
                active,
                score,
                record,
                (ev_page, ev_changed, ev_tau, ev_step),
                cap,
                capped,
                q,
            )
            spent += added
            policy.spent += added
            if n_ev:
                if learn is not None:
                    learn(ev_page[:n_ev], ev_changed[:n_ev], ev_tau[:n_ev])
                if fetch_log is not None:
                    _log_events(fetch_log, ev_step[:n_ev], ev_page[:n_ev])
            if status:
                _refuse_crawls(status, policy, step, size, allowed)
            if n_ev + n <= cap or not n_ev:
                break  # stopped at a step the loop below handles (or past the end)
        k_policy = int(policy.next_step(k))
        k = min(k_policy, int(_k.host_next_release(k, q))) if capped else k_policy
        if k > n_steps:
            break
        t_ms = k * dt_ms
        if k >= active_until:
            active, active_until = ctx.active(k), ctx.next_activity_change(k)
        allowed = None
        if policy.budgeted:
            assert ctx.budget is not None  # set for every budgeted policy
            allowed = math.floor(ctx.budget * (t_ms / MS_PER_DAY) + 1e-9) - spent
        if capped:
            idx = np.zeros(0, dtype=np.int64)
            if k_policy <= k:
                mask = policy.select(k, t_ms / MS_PER_DAY, active & ~q.queued, allowed)
                idx = np.asanyarray(mask).ravel().nonzero()[0].astype(np.int64, copy=False)
                if idx.size:
                    if idx[-1] >= n:
                        active[idx]  # IndexError: a mask longer than the pages
                    if not active[idx].all():
                        _refuse_crawls(1, policy, k, idx.size, allowed)
                    if allowed is not None and idx.size > allowed:
                        _refuse_crawls(2, policy, k, idx.size, allowed)
                    _k.host_enqueue(idx, q)
                    spent += idx.size
            n_f = _k.host_release(k, active, q)
            idx = q.fetched[:n_f].copy()
            mask = np.zeros(n, dtype=bool)
            mask[idx] = True
        else:
            if feed:
                upto = int(np.searchsorted(sig_step, k, side="right"))
                if upto > sig_next:
                    policy.receive_signals(k, sig_page[sig_next:upto], sig_days[sig_next:upto])
                    sig_next = upto
            mask = policy.select(k, t_ms / MS_PER_DAY, active, allowed)
            idx = np.asanyarray(mask).ravel().nonzero()[0]  # np.flatnonzero(mask)
        if idx.size:
            if idx[-1] >= n:
                active[idx]  # IndexError: a mask longer than the pages
            # the checks (a page outside its window, then the budget) and the scoring, compiled
            status = _k.crawl_pages(
                idx.astype(np.int64, copy=False),
                t_ms,
                active,
                allowed is not None and not capped,
                0 if allowed is None else allowed,
                changed_full,
                interval_full,
                score,
            )
            if status:
                _refuse_crawls(status, policy, k, idx.size, allowed)
            if not capped:
                spent += idx.size
            if fetch_log is not None:
                fetch_log.append((np.full(idx.size, k, dtype=np.int64), idx.astype(np.int64)))
            policy.observe(k, t_ms / MS_PER_DAY, changed_full, interval_full, mask)
            _k.clear_pages(idx.astype(np.int64, copy=False), changed_full, interval_full)
        k += 1
    fresh += (np.minimum(stale_ms, end) - last_ms) / MS_PER_DAY
    late = np.where(stale_ms < end, (end - stale_ms) / MS_PER_DAY, 0.0)
    age += 0.5 * late * late
    return replay_result(policy, ctx, pages, fresh, age, crawls, detected)


def replay_result(policy, ctx: ReplayContext, pages: ReplayPages, fresh, age, crawls, detected) -> ReplayResult:
    """The result of replaying ``pages`` under ``policy`` from its per-page totals (fresh
    days, age area, crawls, crawls that saw a change); the windows, true changes and
    weights are the pages' own."""
    return ReplayResult(
        policy.name,
        ctx.budget,
        pages.span_days,
        pages.window_days,
        fresh,
        age,
        crawls,
        detected,
        pages.n_changes.copy(),
        pages.weights,
    )


def _log_events(log: list, step: np.ndarray, page: np.ndarray) -> None:
    """Append the compiled loop's fetches to ``log`` as (step, pages) per step."""
    cut = np.flatnonzero(np.diff(step)) + 1
    for s, p in zip(np.split(step.copy(), cut), np.split(page.copy(), cut)):  # a loop over steps
        log.append((s, p))
