"""Compiled per-step bookkeeping of the replay: the engine's scoring of the pages crawled at a
step, the credit grid of the budgeted policies (due steps, the "most credit first" choice
when the budget binds), the crawlers' schedules, and the grid learner's counts and
posterior draws.

Imported lazily (the first replay imports numba); every kernel is compiled on first use
with ``cache=True`` (the machine code is kept on disk), never at import time.

The engine, credit-grid and learner kernels evaluate, page by page, the same float64
expression in the same order as the numpy formula they replace (``_engine.run_replay``, ``RatePolicy._due_after`` /
``select``, ``GridLearner.update`` / ``sample``), so the results are the same numbers.
The transcendental functions (log, expm1, exp) stay in numpy: only +, −, ×, ÷, ceil,
comparisons and integer counting are compiled here.

Nutch's and StormCrawler's schedules are computed here in the crawlers' own arithmetic (as
their Java sources do it: float32 rates and intervals, integer seconds or minutes, long
milliseconds); ``_policies.nutch_update`` and ``stormcrawler_update`` call these kernels.
"""

from __future__ import annotations

import numba as nb
import numpy as np

_JIT = dict(cache=True, nogil=True, error_model="numpy")

MS_PER_DAY = 86_400_000
NEVER = np.iinfo(np.int64).max // 4
NEVER_F = float(NEVER)
#: No time stored (Nutch's modified time 0)
NO_TIME = -(np.int64(1) << np.int64(62))


# ----------------------------------------------------------------------------- the engine
@nb.njit(inline="always", **_JIT)
def _search_right(key, v):
    """First position with key[pos] > v (``np.searchsorted(key, v, side="right")``)."""
    lo = 0
    hi = key.size
    while lo < hi:
        mid = (lo + hi) >> 1
        if key[mid] <= v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@nb.njit(inline="always", **_JIT)
def _score_crawl(i, t_ms, score):
    """Score one crawl of page ``i`` at ``t_ms`` (see ``crawl_pages``) and look up its next
    change; returns what the crawl reveals: (changed, interval in days)."""
    stale, last, fresh, age, crawls, detected, key, change, offsets, shift, never = score
    s = stale[i]
    a = last[i]
    ch = s <= t_ms
    fresh[i] += (min(s, t_ms) - a) / MS_PER_DAY
    late = (t_ms - s) / MS_PER_DAY if ch else 0.0
    age[i] += 0.5 * late * late
    crawls[i] += 1
    detected[i] += ch
    last[i] = t_ms
    pos = _search_right(key, i * shift + t_ms)
    if pos < offsets[i + 1] and change.size > 0:
        stale[i] = change[min(pos, change.size - 1)]
    else:
        stale[i] = never
    return ch, (t_ms - a) / MS_PER_DAY


@nb.njit(**_JIT)
def crawl_pages(idx, t_ms, active, budgeted, allowed, changed, interval, score):
    """Score the crawls of pages ``idx`` (in range) at time ``t_ms`` and look up their next change.

    First the engine's checks, before anything is changed: returns 1 if a page is not
    ``active``, else 2 if ``budgeted`` and more than ``allowed`` pages are crawled, else 0
    once the crawls are scored. ``score`` is the engine's scoring state, the tuple (stale,
    last, fresh, age, crawls, detected, key, change, offsets, shift, never). Per page i
    (int64 ms since t0): the copy taken at ``last[i]`` was fresh until min(stale[i], t) and
    aged (t − stale[i])²/2 when stale[i] <= t; ``changed[i]`` and ``interval[i]`` (days)
    are what the crawl reveals; then last[i] = t and stale[i] = the first change after t
    (``never`` if none), found in ``key`` = page·shift + change time.
    """
    for j in range(idx.size):
        if not active[idx[j]]:
            return 1
    if budgeted and idx.size > allowed:
        return 2
    for j in range(idx.size):
        i = idx[j]
        changed[i], interval[i] = _score_crawl(i, t_ms, score)
    return 0


@nb.njit(**_JIT)
def clear_pages(idx, changed, interval):
    """changed[idx] = False, interval[idx] = 0."""
    for j in range(idx.size):
        changed[idx[j]] = False
        interval[idx[j]] = 0.0


# ----------------------------------------------------------------------- the credit grid
@nb.njit(inline="always", **_JIT)
def _due_after_one(i, c0, p, m, k_alloc, dt):
    r = p[i] * dt
    if r > 0:
        steps = np.ceil((1.0 + m[i] - c0[i]) / r - 1e-9)
    else:
        steps = np.inf
    v = k_alloc + np.maximum(steps, 0.0)
    return np.int64(np.minimum(v, NEVER_F))


@nb.njit(**_JIT)
def due_after_all(c0, p, m, k_alloc, dt, out):
    """``RatePolicy._due_after`` of every page, into ``out`` (int64)."""
    for i in range(out.size):
        out[i] = _due_after_one(i, c0, p, m, k_alloc, dt)


@nb.njit(**_JIT)
def rate_select(k, allowed, due, c0, p, m, k_alloc, dt):
    """The pages crawled at step ``k`` by the credit grid, and their state moved on.

    The pages with due[i] <= k, in page order; when more than ``allowed`` of them are due,
    the ``allowed`` ones with the most credit c0 + p·(dt·(k − k_alloc)) − m, ties in page
    order (a stable sort). Each chosen page gets m[i] += 1 and its next due step (at least
    k + 1). Returns the chosen pages (int64, in the order chosen).
    """
    n = due.size
    cnt = 0
    for i in range(n):
        if due[i] <= k:
            cnt += 1
    sel = np.empty(cnt, dtype=np.int64)
    j = 0
    for i in range(n):
        if due[i] <= k:
            sel[j] = i
            j += 1
    if cnt > allowed:
        x = dt * (k - k_alloc)
        neg = np.empty(cnt)
        for j in range(cnt):
            i = sel[j]
            neg[j] = -(c0[i] + p[i] * x - m[i])
        order = np.argsort(neg, kind="mergesort")
        take = max(allowed, 0)
        chosen = np.empty(take, dtype=np.int64)
        for j in range(take):
            chosen[j] = sel[order[j]]
        sel = chosen
    for j in range(sel.size):
        i = sel[j]
        m[i] += 1.0
        d = _due_after_one(i, c0, p, m, k_alloc, dt)
        due[i] = max(d, k + 1)
    return sel


@nb.njit(inline="always", **_JIT)
def _select_checked(k, t_ms, budget, spent, grid, k_alloc, dt, active):
    """The credit grid's choice at step ``k`` (``rate_select`` with the allowance of a budget
    that has ``spent`` crawls) and the engine's checks on it. Returns (allowed, the chosen
    pages in page order, status): status 1 if a page is not ``active``, else 2 if more than
    ``allowed`` are chosen, else 0."""
    due, c0, p, m = grid
    allowed = np.int64(np.floor(budget * (t_ms / MS_PER_DAY) + 1e-9)) - spent
    idx = np.sort(rate_select(k, allowed, due, c0, p, m, k_alloc, dt))
    for j in range(idx.size):
        if not active[idx[j]]:
            return allowed, idx, 1
    if idx.size and idx.size > allowed:
        return allowed, idx, 2
    return allowed, idx, 0


@nb.njit(inline="always", **_JIT)
def _score_step(idx, k, t_ms, score, record, events, n_ev):
    """Score the crawls of pages ``idx`` at step ``k`` (``_score_crawl``, in that order); with
    ``record``, append each crawl's (page, I, τ days, step) to ``events`` from ``n_ev`` on.
    Returns the events' new count."""
    ev_page, ev_changed, ev_tau, ev_step = events
    for j in range(idx.size):
        i = idx[j]
        ch, tau_days = _score_crawl(i, t_ms, score)
        if record:
            ev_page[n_ev] = i
            ev_changed[n_ev] = ch
            ev_tau[n_ev] = tau_days
            ev_step[n_ev] = k
            n_ev += 1
    return n_ev


@nb.njit(**_JIT)
def rate_steps(
    k,
    k_stop,
    n_steps,
    dt_ms,
    budget,
    dt,
    spent,
    spent_policy,
    grid,
    k_alloc,
    next_alloc,
    next_change,
    active,
    score,
    record,
    events,
    ev_cap,
    capped,
    queues,
):
    """The engine's loop over the steps k, k + 1, ... of a built-in ``RatePolicy``, up to the
    first step the policy acts at that is >= ``k_stop`` (a reallocation or a page entering or
    leaving), compiled: ``next_step``, the budget, ``select``, the checks and the scoring as
    in ``run_replay``, step by step in the same order.

    ``grid`` is the policy's (due, c0, p, m) and ``score`` the engine's scoring state (see
    ``crawl_pages``). ``spent`` and ``spent_policy`` are the crawls so far as the engine and
    the policy count them (the same for a built-in policy). With ``record``, each crawl's
    (page, I, τ days, step) is appended, step by step and in page order within a step, to
    ``events`` = (page, I, τ, step) arrays (room for ``ev_cap``); the loop also stops before a
    step that might not fit. Returns (k, crawls added, events, status, step, allowed, crawls
    at step): k is where the engine's loop resumes; status 1 (a page outside its window) or 2
    (over the budget) stops at ``step`` with nothing scored there.

    With ``capped``, the chosen pages go through the host queues (``host_enqueue``,
    ``host_release``; ``queues`` their state, see below): the loop also visits the steps at
    which a queue releases a fetch, selects only at the policy's own steps, charges the
    budget with the pages chosen and scores the pages fetched.
    """
    due = grid[0]
    n = due.size
    added = 0
    n_ev = 0
    while True:
        # RatePolicy.next_step
        cand = min(next_alloc, next_change)
        fire = due.min()
        if fire < NEVER:
            token_f = np.ceil((spent_policy + added + 1) / (budget * dt) - 1e-9)
            if token_f >= NEVER_F:
                cand = min(cand, max(fire, NEVER))
            else:
                cand = min(cand, max(fire, np.int64(token_f)))
        kk = max(cand, k)
        if capped:
            kk = min(kk, host_next_release(k, queues))
        if kk >= k_stop or kk > n_steps or (record and n_ev + n > ev_cap):
            return k, added, n_ev, 0, kk, 0, 0
        if capped:
            k, added, n_ev, status, allowed, size = _rate_step_capped(
                kk,
                max(cand, k) <= kk,
                dt_ms,
                budget,
                dt,
                spent,
                added,
                grid,
                k_alloc,
                active,
                score,
                record,
                events,
                n_ev,
                queues,
            )
            if status:
                return k, added, n_ev, status, k, allowed, size
            k += 1
            continue
        k = kk
        t_ms = k * dt_ms
        allowed, idx, status = _select_checked(k, t_ms, budget, spent + added, grid, k_alloc, dt, active)
        if status:
            return k, added, n_ev, status, k, allowed, idx.size
        n_ev = _score_step(idx, k, t_ms, score, record, events, n_ev)
        added += idx.size
        k += 1


# ------------------------------------------------------------------------- host queues
# State of the per-host queues (see ``_engine``), the tuple ``queues`` = (host, queued, qn,
# qh, qf, nbusy, fetched): ``host`` (N,) the host of each page; ``queued`` (N,) whether a
# page waits in its host's queue; ``qn`` (N,) the next page in that queue (FIFO, a linked
# list); ``qh`` int64 (6, H): head, tail, length, step of the last fetch, whether busy, and
# in row 5 the list of busy hosts (``nbusy[0]`` of them); ``qf`` float64 (3, H): tokens
# after the last fetch, allowance per step a_h, capacity C_h; ``fetched`` a buffer of N.
@nb.njit(inline="always", **_JIT)
def _host_tokens(h, k, qh, qf):
    """Tokens of host h at step k: min(C_h, T_h + a_h·(k − u_h)), u_h its last fetch step."""
    v = qf[0, h] + qf[1, h] * (k - qh[3, h])
    c = qf[2, h]
    return v if v < c else c


@nb.njit(**_JIT)
def host_enqueue(idx, queues):
    """Append the pages ``idx`` (in that order) to their hosts' queues; a page already waiting
    stays where it is (the order is merged with the waiting one). Returns the pages added."""
    host, queued, qn, qh, qf, nbusy, fetched = queues
    added = 0
    for j in range(idx.size):
        i = idx[j]
        if queued[i]:
            continue
        h = host[i]
        queued[i] = True
        qn[i] = -1
        if qh[2, h] == 0:
            qh[0, h] = i
        else:
            qn[qh[1, h]] = i
        qh[1, h] = i
        qh[2, h] += 1
        added += 1
        if qh[4, h] == 0:
            qh[4, h] = 1
            qh[5, nbusy[0]] = h
            nbusy[0] += 1
    return added


@nb.njit(**_JIT)
def host_release(k, active, queues):
    """Fetch from every busy host's queue at step ``k``, first in first out, as many pages as its
    whole tokens allow, floor(tokens + 1e-9); a page whose window has closed (not ``active``)
    leaves the queue unfetched. The pages fetched go to ``fetched`` in page order; returns
    their number. A host that fetched f pages keeps T_h = tokens − f from step k on."""
    host, queued, qn, qh, qf, nbusy, out = queues
    n_out = 0
    keep = 0
    for b in range(nbusy[0]):
        h = qh[5, b]
        v = _host_tokens(h, k, qh, qf)
        allow = np.int64(np.floor(v + 1e-9))
        f = 0
        while qh[2, h] > 0 and f < allow:
            i = qh[0, h]
            qh[0, h] = qn[i]
            qh[2, h] -= 1
            queued[i] = False
            if active[i]:
                out[n_out] = i
                n_out += 1
                f += 1
        if f > 0:
            qf[0, h] = v - f
            qh[3, h] = k
        if qh[2, h] > 0:
            qh[5, keep] = h
            keep += 1
        else:
            qh[4, h] = 0
    nbusy[0] = keep
    if n_out > 1:
        out[:n_out] = np.sort(out[:n_out])
    return n_out


@nb.njit(**_JIT)
def host_next_release(k, queues):
    """The first step >= k at which some busy host has a whole token (NEVER if no host is busy)."""
    host, queued, qn, qh, qf, nbusy, fetched = queues
    best = NEVER
    for b in range(nbusy[0]):
        h = qh[5, b]
        if _host_tokens(h, k, qh, qf) + 1e-9 >= 1.0:
            return k
        j = qh[3, h] + np.int64(np.ceil((1.0 - 1e-9 - qf[0, h]) / qf[1, h]))
        if j < k + 1:
            j = k + 1
        while _host_tokens(h, j, qh, qf) + 1e-9 < 1.0:
            j += 1
        while j - 1 > k and _host_tokens(h, j - 1, qh, qf) + 1e-9 >= 1.0:
            j -= 1
        if j < best:
            best = j
    return best


@nb.njit(**_JIT)
def _rate_step_capped(
    k, select, dt_ms, budget, dt, spent, added, grid, k_alloc, active, score, record, events, n_ev, queues
):
    """One step of ``rate_steps`` through the host queues: the credit grid's choice (if
    ``select``), its checks and charge, the queues' release and the scoring of the fetches.
    Returns (k, added, n_ev, status, allowed, size)."""
    t_ms = k * dt_ms
    allowed = np.int64(0)
    if select:
        allowed, idx, status = _select_checked(k, t_ms, budget, spent + added, grid, k_alloc, dt, active)
        if status:
            return k, added, n_ev, status, allowed, idx.size
        host_enqueue(idx, queues)
        added += idx.size
    n_f = host_release(k, active, queues)
    n_ev = _score_step(queues[6][:n_f], k, t_ms, score, record, events, n_ev)
    return k, added, n_ev, 0, allowed, 0


@nb.njit(inline="always", **_JIT)
def _count_crawl(i, c, t, exposure, n_unchanged, n_changed, dirty, dirty_mle):
    """One crawl of page ``i`` (I = ``c``, τ = ``t``) in the grid learner's counts; True if it
    saw a change (its log-likelihood row is the caller's)."""
    dirty[i] = True
    dirty_mle[i] = True
    if c:
        n_changed[i] += 1
        return True
    exposure[i] += t
    n_unchanged[i] += 1
    return False


@nb.njit(**_JIT)
def grid_events(page, changed, tau, exposure, n_unchanged, n_changed, dirty, dirty_mle):
    """``GridLearner.update`` of crawl events in order (page, I, τ), without the log-likelihood
    rows: returns the positions of the events that saw a change."""
    cnt = 0
    for j in range(page.size):
        if changed[j]:
            cnt += 1
    hit = np.empty(cnt, dtype=np.int64)
    c = 0
    for j in range(page.size):
        if _count_crawl(page[j], changed[j], tau[j], exposure, n_unchanged, n_changed, dirty, dirty_mle):
            hit[c] = j
            c += 1
    return hit


@nb.njit(**_JIT)
def lln_events(page, changed, tau, k, ones, tau_sum):
    """``LLNLearner.update`` of crawl events in order (page, I, τ)."""
    for j in range(page.size):
        i = page[j]
        k[i] += 1.0
        ones[i] += 1.0 if changed[j] else 0.0
        tau_sum[i] += tau[j]


# -------------------------------------------------------------------- crawlers' schedules
@nb.njit(inline="always", **_JIT)
def _java_round(x):
    """Java's ``Math.round``: the nearest integer, halves up."""
    return np.int64(np.floor(x + 0.5))


@nb.njit(inline="always", **_JIT)
def _nutch_fetch(t_ms, state, interval_s, modified_ms, i, settings):
    """One fetch of entry ``i`` in Nutch's CrawlDb update: ``AdaptiveFetchSchedule.setFetchSchedule``
    then CrawlDbReducer's ``forceRefetch`` check (see ``_policies.nutch_update``).

    ``settings`` is the tuple (inc_rate, dec_rate, min_interval_s, max_interval_s,
    max_fetch_interval_s, sync_delta, sync_delta_rate, v122): arrays of one entry per page
    but the two flags. In Java's arithmetic: the interval is a float (float32) while it is adapted and an int
    (whole seconds, Math.round) once stored; times are long milliseconds; the rates are
    floats read from the configuration (``sync_delta_rate`` widened to double). A modified
    time ``NO_TIME`` is Nutch's 0 (none stored). Returns (stored interval s, next fetch ms,
    modified ms, reset).
    """
    inc_rate, dec_rate, min_interval_s, max_interval_s, max_fetch_interval_s, sync_delta, sync_delta_rate, v122 = (
        settings
    )
    one = np.float32(1.0)
    iv = np.float32(interval_s)
    if state == 1:  # STATUS_MODIFIED
        iv = iv * (one - np.float32(dec_rate[i]))
    elif state == 2:  # STATUS_NOTMODIFIED
        iv = iv * (one + np.float32(inc_rate[i]))
    mod = modified_ms
    if mod == NO_TIME:
        mod = t_ms
    if state == 1:
        mod = t_ms
    lo = np.float32(min_interval_s[i])
    hi = np.float32(max_interval_s[i])
    ref = t_ms
    if sync_delta:
        rate = np.float64(np.float32(sync_delta_rate[i]))
        delta = t_ms - mod
        if v122:
            if np.float32(delta) > iv * np.float32(1000.0):
                iv = np.float32(delta // 1000)
            offset = _java_round(delta * rate)
            hi_ms = np.int64(hi) * 1000
            if delta > 0 and offset > hi_ms:
                offset = (offset // delta) * hi_ms  # long division: 0 while the rate is < 1
            ref = t_ms - offset
        else:
            delta_s = delta // 1000
            if np.float32(delta_s) > iv:
                iv = np.float32(delta_s)
            ref = t_ms - _java_round(delta_s * rate * 1000.0)
    if iv < lo:
        iv = lo
    elif iv > hi:
        iv = hi
    stored = _java_round(np.float64(iv))
    nxt = ref + _java_round(np.float64(iv) * 1000.0)
    if state == 2:  # NOTMODIFIED: the reducer restores the stored modified time (none stays none)
        mod = modified_ms
    reset = False
    if stored > max_fetch_interval_s[i]:  # CrawlDbReducer -> forceRefetch(asap=false): the fetch time stays
        stored = _java_round(np.float64(np.float32(max_fetch_interval_s[i]) * np.float32(0.9)))
        mod = NO_TIME
        reset = True
    return stored, nxt, mod, reset


@nb.njit(**_JIT)
def nutch_fetch(t_ms, state, interval_s, modified_ms, settings, next_ms, reset):
    """``_nutch_fetch`` of every entry (arrays of one length; ``interval_s`` and ``modified_ms``
    are updated in place, ``next_ms`` and ``reset`` written)."""
    for i in range(interval_s.size):
        interval_s[i], next_ms[i], modified_ms[i], reset[i] = _nutch_fetch(
            t_ms[i], state[i], interval_s[i], modified_ms[i], i, settings
        )


@nb.njit(inline="always", **_JIT)
def _set_due(i, nxt, far, window):
    """The due step of page ``i`` after a fetch whose next fetch is at ``nxt`` ms: with
    ``window`` = (due, dt_ms, first, last, k_min), due[i] = k_min if ``far``, else the first
    step at or after nxt (>= first[i], >= k_min); NEVER if that is past last[i]."""
    due, dt_ms, first, last, k_min = window
    if far:
        d = k_min
    else:
        d = max(-((-nxt) // dt_ms), max(first[i], k_min))  # ceil(nxt / dt)
    due[i] = d if d <= last[i] else NEVER


@nb.njit(**_JIT)
def nutch_observe(idx, t_ms, changed, interval_s, modified_ms, next_ms, has_sig, settings, window):
    """``NutchPolicy.observe`` of the pages ``idx`` fetched at ``t_ms``: the fetch state (UNKNOWN
    without a stored signature, else MODIFIED / NOTMODIFIED), ``_nutch_fetch``, the signature
    kept unless reset, then the due step: k_min if the Generator at the next cycle
    (``shouldFetch``) finds the fetch time more than db.fetch.interval.max ahead, else the
    first step at or after the fetch time (>= k_min); ``window`` as in ``_set_due``."""
    dt_ms, k_min = window[1], window[4]
    t_next = k_min * dt_ms
    for j in range(idx.size):
        i = idx[j]
        if not has_sig[i]:
            state = 0
        elif changed[i]:
            state = 1
        else:
            state = 2
        iv, nxt, mod, reset = _nutch_fetch(t_ms, state, interval_s[i], modified_ms[i], i, settings)
        interval_s[i] = iv
        modified_ms[i] = mod
        has_sig[i] = not reset
        next_ms[i] = nxt
        _set_due(i, nxt, nxt - t_next > settings[4][i] * 1000, window)  # settings[4]: max_fetch_interval_s


@nb.njit(**_JIT)
def stormcrawler_observe(idx, t_ms, changed, interval_min, next_ms, settings, window):
    """``StormCrawlerPolicy.observe`` of the pages ``idx`` fetched at ``t_ms``: the
    AdaptiveScheduler's whole-minute interval (Java float arithmetic, truncated to int),
    the next fetch t + interval, then the due step (>= k_min; ``window`` as in ``_set_due``).
    ``settings`` is the tuple (inc_rate, dec_rate, min_interval_min, max_interval_min) of
    arrays (N,)."""
    inc_rate, dec_rate, min_interval_min, max_interval_min = settings
    one = np.float32(1.0)
    for j in range(idx.size):
        i = idx[j]
        iv = interval_min[i]
        if changed[i]:
            dec = np.float32(dec_rate[i])
            iv = np.int64((one - dec) * np.float32(iv) + dec * np.float32(min_interval_min[i]))
        else:
            iv = np.int64(np.float32(iv) * (one + np.float32(inc_rate[i])))
            if iv > max_interval_min[i]:
                iv = max_interval_min[i]
        interval_min[i] = iv
        nxt = t_ms + iv * 60_000
        next_ms[i] = nxt
        _set_due(i, nxt, False, window)


# ------------------------------------------------------------------------ the grid learner
@nb.njit(**_JIT)
def grid_counts(mask, changed, tau, exposure, n_unchanged, n_changed, dirty, dirty_mle):
    """``GridLearner.update`` without the log-likelihood rows: counts, exposure, dirty flags.

    Returns the crawled pages that saw a change (int64, page order), whose rows the caller
    updates.
    """
    n = mask.size
    cnt = 0
    for i in range(n):
        if mask[i] and changed[i]:
            cnt += 1
    hit = np.empty(cnt, dtype=np.int64)
    j = 0
    for i in range(n):
        if mask[i] and _count_crawl(i, changed[i], tau[i], exposure, n_unchanged, n_changed, dirty, dirty_mle):
            hit[j] = i
            j += 1
    return hit


@nb.njit(**_JIT)
def add_rows(rows, idx, terms):
    """rows[idx[j]] += terms[j] for j = 0, 1, ... in turn (a page listed twice gets both, in order)."""
    g = rows.shape[1]
    for j in range(idx.size):
        i = idx[j]
        for c in range(g):
            rows[i, c] += terms[j, c]


@nb.njit(**_JIT)
def count_below(cdf, u):
    """Per row i, how many entries of ``cdf[i]`` are < u[i]: (N, G), (N,) -> int64 (N,).

    The rows are cumulative sums of weights >= 0 (or NaN), so each is non-decreasing up to
    its first NaN and NaN from there: the entries < u form a prefix, whose length is found
    by bisection (the same count as ``(cdf < u[:, None]).sum(axis=1)``).
    """
    n, g = cdf.shape
    out = np.empty(n, dtype=np.int64)
    for i in range(n):
        ui = u[i]
        lo = 0
        hi = g
        while lo < hi:
            mid = (lo + hi) >> 1
            if cdf[i, mid] < ui:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
    return out
