r"""Change signals in the replay: the signal table, and the policies that read it.

A signal (a sitemap entry, a feed item, a ping, a raw-byte change) says "this page may
have changed at time s". The replay feeds every policy that has a ``receive_signals``
method the signals as they arrive: a signal at time s is visible from the first step
t_k >= s on (step k), before the policy chooses its crawls at that step, so a crawl at
t_k counts it in the interval it ends (a signal at a crawl's time belongs to that
interval, as in :class:`~changerate_bayes.signals.SignalData`). The other policies never
see them.

The signal-aware index (:class:`SignalIndexPolicy`). Changes are Poisson(Δ per day),
each signalled with probability q, false signals Poisson(ν per day). After a crawl, with
n signals in the t days since,

    P(unchanged | t, n) = e^{−(1−q)Δt} (ν/(qΔ + ν))^n = e^{−Δ t_eff},
    t_eff = (1 − q) t + n J,   J = log((qΔ + ν)/ν) / Δ

(J = +inf when ν = 0 < q): the page is as likely unchanged as a page without signals
after t_eff days. Its index is the index of the existing learner (the posterior of Δ
from the crawls, :class:`~changerate_bayes.replay.GridLearner`, as ``paced_index_mean``)
evaluated at t_eff instead of t, with the point estimates (posterior means) of Δ, q and
ν in t_eff only. Where q̂ = 0 (no signal information) t_eff = t exactly. The derivation
is in :doc:`/signals`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from ..io import plain
from ..signals import SignalData, SignalPrior, pooled_signal_prior, signal_posterior
from ._index import HindsightIndexPolicy, IndexPolicy
from ._learners import GridLearner, OldestFirst
from ._pages import MS_PER_DAY, ReplayPages, _check_page_times, _parse_times

__all__ = [
    "signal_times",
    "effective_elapsed",
    "hindsight_signal_parameters",
    "SignalIndexPolicy",
    "SignalFirstPolicy",
    "HindsightSignalIndexPolicy",
]

#: t_eff is capped here (days): the tabulated indices are flat beyond 1e4 days.
_T_EFF_MAX = 1e7


def signal_times(signals, pages: ReplayPages, *, per_page_windows: bool = True):
    """Check a table of signals against the replayed pages; (page index, time in ms) sorted by time.

    Parameters
    ----------
    signals : pandas.DataFrame
        Columns ``page``, ``timestamp``: one row per signal, times of the same kind as the
        change times (datetimes / ISO-8601 strings, or numbers in days), in any order.
    pages : ReplayPages
        The replayed pages (from :func:`~changerate_bayes.replay.pages_from_table`).
    per_page_windows : bool, default True
        Whether the windows were given per page (a table): then a signal outside its page's
        window [start, end] is an error, as a change is; with one (start, end) window for
        all pages (False) signals outside it are left out, as changes are. A signal at a
        window's start is in the initial copy and left out either way.

    Returns
    -------
    (page, time_ms) : two ndarrays of int64, shape (S,)
        Page positions in ``pages`` and times in ms since the epoch of ``pages`` (as its
        ``start_ms``), sorted by time (then page).

    Raises
    ------
    TypeError
        If ``signals`` is not a DataFrame.
    ValueError
        Naming ``signals`` and its column or row: a missing column, an unparsable or
        non-finite time, a number among datetimes, a page that is not replayed (with
        the count of such rows; all of them: no matching page), the same (page,
        timestamp) twice, or a signal outside its page's window.
    """
    _check_page_times(signals, "signals")
    if not len(signals):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    labels = [f"row {x!r} of `signals`" for x in signals.index]
    page = signals["page"].astype(str).to_numpy()
    pidx = pd.Index(pages.names).get_indexer(page).astype(np.int64)
    unknown = pidx < 0
    if unknown.all():
        raise ValueError(
            f"`signals` column 'page': none of its {len(signals)} rows names a replayed page "
            f"(first: {page[0]!r}); the pages are those of the windows"
        )
    if unknown.any():
        i = int(np.flatnonzero(unknown)[0])
        raise ValueError(
            f"{labels[i]}, column 'page': page {page[i]!r} is not among the replayed pages "
            f"({int(unknown.sum())} such rows)"
        )
    ts = signals["timestamp"].to_numpy()
    t_ms = _parse_times(ts, what="column 'timestamp'", labels=labels, datetimes=pages.origin is not None)
    order = np.lexsort((t_ms, pidx))
    ps, ts_sorted = pidx[order], t_ms[order]
    twice = (ps[1:] == ps[:-1]) & (ts_sorted[1:] == ts_sorted[:-1])
    if twice.any():
        i = int(order[int(np.flatnonzero(twice)[0]) + 1])
        raise ValueError(
            f"{labels[i]}: page {page[i]!r} has two signals at timestamp {plain(ts[i])!r} "
            f"({int(twice.sum())} repeated (page, timestamp) pairs)"
        )
    lo, hi = pages.start_ms[pidx], pages.end_ms[pidx]
    outside = (t_ms < lo) | (t_ms > hi)
    if per_page_windows and outside.any():
        i = int(np.flatnonzero(outside)[0])
        when = "before its window's start" if t_ms[i] < lo[i] else "after its window's end"
        raise ValueError(
            f"{labels[i]}, column 'timestamp': {plain(ts[i])!r} of page {page[i]!r} is {when} "
            f"({int(outside.sum())} signals outside their windows)"
        )
    keep = (t_ms > lo) & (t_ms <= hi)  # a signal at the start is in the initial copy
    pidx, t_ms = pidx[keep], t_ms[keep]
    order = np.lexsort((pidx, t_ms))
    return pidx[order], t_ms[order]


def effective_elapsed(elapsed, n, change_rate, recall, false_rate) -> np.ndarray:
    r"""The effective elapsed time t_eff = (1 − q) t + n J of the signal-aware index, days.

    Parameters
    ----------
    elapsed : array_like of float, shape (N,)
        t >= 0, days since each page's last crawl.
    n : array_like of int, shape (N,)
        Signals since then.
    change_rate, recall, false_rate : array_like of float, shape (N,)
        Point estimates of Δ (per day, >= 0), q in [0, 1] and ν (per day, >= 0).

    Returns
    -------
    ndarray of float64, shape (N,)
        t_eff with e^{−Δ t_eff} = e^{−(1−q)Δt} (ν/(qΔ + ν))^n, J = log((qΔ + ν)/ν)/Δ
        (q/ν in the limit Δ → 0; +inf when ν = 0 < q, capped at 1e7 days); t_eff = t
        exactly where q = 0 and n = 0, and wherever q = 0 (then J = 0).

    Examples
    --------
    >>> from changerate_bayes.replay import effective_elapsed
    >>> effective_elapsed([10.0, 10.0, 10.0], [0, 1, 2], 0.5, 0.5, 0.25).round(4).tolist()  # J = 2 log 2
    [5.0, 6.3863, 7.7726]
    """
    t = np.asarray(elapsed, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    delta, q, nu = (np.asarray(x, dtype=np.float64) for x in (change_rate, recall, false_rate))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(nu > 0, q * delta / nu, np.where(q * delta > 0, np.inf, 0.0))  # qΔ/ν
        jump = np.where(delta > 0, np.log1p(ratio) / delta, np.where(nu > 0, q / nu, np.where(q > 0, np.inf, 0.0)))
        extra = np.where(n > 0, n * jump, 0.0)
    out = np.minimum((1.0 - q) * t + extra, _T_EFF_MAX)
    return np.where(q > 0, out, t)


class _SignalCounts:
    """Per page: signals since the last crawl, the time of the first of them, and whether any
    signal was ever seen; and the crawls' (page, τ, I, n) for a fit."""

    def __init__(self, n: int):
        self.n_since = np.zeros(n, dtype=np.int64)
        self.first = np.full(n, np.inf)  # days: the first signal since the last crawl
        self.ever = np.zeros(n, dtype=bool)
        self.total = np.zeros(n, dtype=np.int64)  # every signal so far
        self.at_crawl = np.zeros(n, dtype=np.int64)
        self.chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def receive(self, page, t) -> None:
        n = self.n_since.size
        counts = np.bincount(page, minlength=n)
        self.n_since += counts
        self.total += counts
        np.minimum.at(self.first, page, t)
        self.ever[page] = True

    def crawled(self, mask) -> None:
        self.at_crawl[mask] = self.n_since[mask]
        self.n_since[mask] = 0
        self.first[mask] = np.inf

    def record(self, changed, interval, mask) -> None:
        idx = np.flatnonzero(mask)
        if idx.size:
            self.chunks.append(
                (
                    idx,
                    np.asarray(interval)[idx].copy(),
                    np.asarray(changed)[idx].astype(np.int8),
                    self.at_crawl[idx].copy(),
                )
            )

    def data(self, tail_time) -> tuple[SignalData, np.ndarray] | None:
        """SignalData of the pages crawled at least once (and their positions), or None."""
        if not self.chunks:
            return None
        page = np.concatenate([c[0] for c in self.chunks])
        tau = np.concatenate([c[1] for c in self.chunks])
        changed = np.concatenate([c[2] for c in self.chunks])
        sig = np.concatenate([c[3] for c in self.chunks])
        keep = tau > 0  # a crawl in the step of its window's start: no interval to learn from
        page, tau, changed, sig = page[keep], tau[keep], changed[keep], sig[keep]
        if not page.size:
            return None
        order = np.argsort(page, kind="stable")  # crawl order within each page
        lengths = np.bincount(page, minlength=self.n_since.size)
        seen = np.flatnonzero(lengths > 0)
        tail = np.maximum(np.asarray(tail_time, dtype=np.float64)[seen], 0.0)
        m = np.where(tail > 0, self.n_since[seen], 0)
        data = SignalData.from_segments(
            tau[order], changed[order], sig[order], lengths=lengths[seen], tail_time=tail, tail_signals=m
        )
        return data, seen


class _SignalRateGrid(GridLearner):
    """The crawl posterior of Δ on the grid times a per-page factor (log rows ``extra``): the
    likelihood of the page's signal count, set by :class:`SignalIndexPolicy`."""

    def __init__(self, n_pages: int):
        super().__init__(n_pages)
        self.extra = np.zeros((n_pages, self.grid.size))

    def set_extra(self, idx, rows) -> None:
        self.extra[idx] = rows
        self._dirty[idx] = True

    def _loglik_rows(self, idx) -> np.ndarray:
        return super()._loglik_rows(idx) + self.extra[idx]


class SignalIndexPolicy(IndexPolicy):
    r"""The signal-aware freshness index: the index of the crawl posterior at t_eff, paced.

    At each step the policy crawls the pages of largest w ν(t_eff), ν the mean-form index of
    the posterior of Δ from the crawls (:class:`~changerate_bayes.replay.GridLearner`, as
    ``paced_index_mean``) and t_eff = (1 − q̂) t + n Ĵ the effective elapsed time
    (:func:`effective_elapsed`, module notes): n the signals since the page's last crawl,
    Ĵ = log((q̂Δ̂ + ν̂)/ν̂)/Δ̂. The budget, the pace (``pace="pages"``: the same crawls per
    step as the other paced policies, so a burst of signals moves crawls between pages,
    never adds any) and the starvation rule (on the real elapsed time t) are those of
    :class:`IndexPolicy`.

    Learning (Δ̂, q̂, ν̂). Every ``ctx.epoch_steps`` steps the policy fits the model of
    :mod:`changerate_bayes.signals` to what it has seen: per crawl of its own, the
    interval τ, the indicator I and the signals n in it, and per page the signals since its
    last crawl (the tail). The fit is pooled over the pages: the prior is
    :func:`~changerate_bayes.signals.pooled_signal_prior` of those data (empirical Bayes,
    refitted as the data grow: ``prior_growth``) and the estimates are the posterior means from a short Gibbs run of
    :func:`~changerate_bayes.signals.signal_posterior` (``draws`` after ``tune``, one chain,
    ``ctx.rng``). q̂ = 0, the plain index, for a page never signalled so far and for every
    page until a fit is possible (two pages crawled, a signal and a change seen): with no
    signal at all the policy is ``paced_index_mean`` exactly.

    Parameters
    ----------
    name : str, default "paced_index_signals"
    pace : {"collection", "pages"}, default "pages"
    max_interval_factor : float, default 4.0
        As in :class:`IndexPolicy`.
    draws, tune : int, default 40, 30
        Gibbs draws kept and discarded at each fit.
    prior_growth : float, default 1.25
        The pooled prior (an EM fit and moments, the costly part) is refitted when the
        crawls seen have grown by this factor since its last fit; the posterior is refitted
        every epoch under the latest prior.
    signal_rate_bound : bool, default False
        Whether the posterior of Δ the index reads also weighs each page's whole signal
        stream, which is seen without crawls: its S signals in the E days since its window
        opened, Poisson((q̂Δ + ν̂)E), multiply the crawl posterior on the grid (refreshed at
        every fit, with that fit's q̂ and ν̂; a page never signalled, or with q̂ = 0, is left
        as it is). Where q̂ is near 1 and ν̂ small, few signals bound Δ from above, which the
        few crawls of a small budget cannot. It is a composite likelihood: the signalled
        changes are counted in the crawls' outcomes and in S, so the posterior is somewhat
        narrower than the joint one. False (default): the crawl posterior only.

    Raises
    ------
    ValueError
        As :class:`IndexPolicy`, and for ``draws`` < 1, ``tune`` < 0 or ``prior_growth``
        < 1 or not finite.
    TypeError
        If ``signal_rate_bound`` is not a bool.

    References
    ----------
    Busa-Fekete et al., "A Scalable Crawling Algorithm Utilizing Noisy Change-Indicating
    Signals" (WWW 2025), the setting; the index rule is derived in :doc:`/signals`.
    """

    def __init__(
        self,
        *,
        name: str = "paced_index_signals",
        pace: str = "pages",
        max_interval_factor: float = 4.0,
        draws: int = 40,
        tune: int = 30,
        prior_growth: float = 1.25,
        signal_rate_bound: bool = False,
    ):
        learner = _SignalRateGrid if signal_rate_bound else GridLearner
        super().__init__(learner, name=name, form="mean", max_interval_factor=max_interval_factor, pace=pace)
        if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
            raise ValueError(f"`draws` must be an integer >= 1; got {draws!r}")
        if isinstance(tune, bool) or not isinstance(tune, int) or tune < 0:
            raise ValueError(f"`tune` must be an integer >= 0; got {tune!r}")
        if not (isinstance(prior_growth, (int, float)) and math.isfinite(prior_growth) and prior_growth >= 1):
            raise ValueError(f"`prior_growth` must be a finite number >= 1; got {prior_growth!r}")
        self.draws, self.tune, self.prior_growth = draws, tune, float(prior_growth)
        if not isinstance(signal_rate_bound, bool):
            raise TypeError(f"`signal_rate_bound` must be a bool; got {signal_rate_bound!r}")
        self.signal_rate_bound = signal_rate_bound

    def reset(self, ctx) -> None:
        super().reset(ctx)
        n = ctx.n_pages
        self.signals = _SignalCounts(n)
        self.change_rate = np.zeros(n)
        self.recall = np.zeros(n)
        self.false_rate = np.zeros(n)
        self.next_fit = ctx.epoch_steps
        self.fits = 0
        self.prior: SignalPrior | None = None
        self.prior_crawls = 0

    def receive_signals(self, k: int, page, t) -> None:
        """Take the signals that arrived by step ``k``: pages (int64) and times (days since t0)."""
        self.signals.receive(np.asarray(page, dtype=np.int64), np.asarray(t, dtype=np.float64))

    def _fit(self, t: float) -> None:
        # the tail: from each page's last crawl to now, or to the last step of its window
        got = self.signals.data(np.minimum(t, self.ctx.last_step * self.ctx.dt) - self.last)
        if got is None:
            return
        data, seen = got
        tot = data.totals()
        if data.n_pages < 2 or tot["signals"].sum() + data.tail_signals.sum() == 0 or tot["changes_seen"].sum() == 0:
            return
        crawls = int(data.intervals.size)
        if self.prior is None or crawls >= self.prior_growth * self.prior_crawls:
            with warnings.catch_warnings():  # the EM inside: its last iterate serves for moments
                warnings.simplefilter("ignore", RuntimeWarning)
                try:
                    self.prior = pooled_signal_prior(data)
                except ValueError:
                    return
            self.prior_crawls = crawls
        post = signal_posterior(data, prior=self.prior, draws=self.draws, tune=self.tune, chains=1, rng=self.ctx.rng)
        s = post.signalled.mean(axis=(0, 1))
        u = post.unsignalled.mean(axis=(0, 1))
        self.change_rate[seen] = s + u
        self.recall[seen] = post.draws("recall").mean(axis=(0, 1))
        self.false_rate[seen] = post.false_rate.mean(axis=(0, 1))
        self.fits += 1
        if self.signal_rate_bound:
            # every signal of the page so far: Poisson((q̂Δ + ν̂) E), E its time in the crawl
            exposure = np.maximum(np.minimum(t, self.ctx.last_step * self.ctx.dt) - self.ctx.start, 0.0)[seen]
            q = np.where(self.signals.ever[seen], self.recall[seen], 0.0)  # as in t_eff
            nu = self.false_rate[seen]
            lam = q[:, None] * self.learner.grid[None, :] + nu[:, None]
            with np.errstate(divide="ignore", invalid="ignore"):
                rows = np.where(lam > 0, self.signals.total[seen, None] * np.log(lam), 0.0) - lam * exposure[:, None]
            self.learner.set_extra(seen, np.where(q[:, None] > 0, rows, 0.0))

    def _index(self, k, elapsed) -> np.ndarray:
        if k >= self.next_fit:
            self._fit(k * self.ctx.dt)
            e = self.ctx.epoch_steps
            self.next_fit = (k // e + 1) * e
        q = np.where(self.signals.ever, self.recall, 0.0)
        if q.any():
            elapsed = effective_elapsed(elapsed, self.signals.n_since, self.change_rate, q, self.false_rate)
        return super()._index(k, elapsed)

    def select(self, k, t, active, allowed) -> np.ndarray:
        mask = super().select(k, t, active, allowed)
        self.signals.crawled(mask)
        return mask

    def observe(self, k, t, changed, interval, mask) -> None:
        self.signals.record(changed, interval, mask)
        super().observe(k, t, changed, interval, mask)


class SignalFirstPolicy(IndexPolicy):
    """Crawl on every signal: a reference that trusts each signal, paced to the same budget.

    At each step the crawls the pace allows (as :class:`IndexPolicy` with ``pace="pages"``)
    go first to the pages with a signal since their last crawl, the oldest first signal
    first; the budget left goes round robin (the oldest copies first). No learning, no
    starvation rule (the round robin serves every page without signals).

    Parameters
    ----------
    name : str, default "paced_on_signal"
    pace : {"collection", "pages"}, default "pages"
    """

    def __init__(self, *, name: str = "paced_on_signal", pace: str = "pages"):
        super().__init__(OldestFirst, name=name, form="mean", pace=pace)

    def reset(self, ctx) -> None:
        super().reset(ctx)
        self.signals = _SignalCounts(ctx.n_pages)

    def receive_signals(self, k: int, page, t) -> None:
        """Take the signals that arrived by step ``k``: pages (int64) and times (days since t0)."""
        self.signals.receive(np.asarray(page, dtype=np.int64), np.asarray(t, dtype=np.float64))

    def select(self, k, t, active, allowed) -> np.ndarray:
        mask = np.zeros(self.ctx.n_pages, dtype=bool)
        a, take = self._paced_take(k, active, allowed)
        if take <= 0:
            return mask
        elapsed = np.maximum(t - self.last[a], 0.0)
        waiting = np.maximum(t - self.signals.first[a], 0.0)  # inf - t: no signal
        key = np.where(self.signals.n_since[a] > 0, _T_EFF_MAX + waiting, elapsed)
        top = np.argpartition(-key, take - 1)[:take] if take < a.size else np.arange(a.size)
        chosen = a[top]
        mask[chosen] = True
        self.last[chosen] = t
        self.spent += take
        self.signals.crawled(mask)
        return mask


def hindsight_signal_parameters(
    change_page, change_ms, signal_page, signal_ms, window_days
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Each page's (Δ, q, ν) counted in hindsight from all its changes and signals.

    A change is signalled when its page has a signal at the same instant (on crawl data:
    a run whose text changed and whose raw bytes changed too); a signal is false when its
    page has no change at that instant. Per page i, with n_i changes, m_i of them
    signalled, f_i false signals and a window of T_i days:

        Δ_i = n_i / T_i,   q_i = m_i / n_i (0 when n_i = 0),   ν_i = f_i / T_i.

    Δ_i is the hindsight-static oracle's rate (the replay's ``true_rates``); q_i and ν_i
    are the maximum-likelihood estimates of the model of :mod:`changerate_bayes.signals`
    had every change and signal time been seen.

    Parameters
    ----------
    change_page, change_ms : array_like of int, shape (C,)
        Page position (0 .. N − 1) and time (ms, any common origin) of every change.
    signal_page, signal_ms : array_like of int, shape (S,)
        The same for every signal (no (page, time) twice).
    window_days : array_like of float, shape (N,)
        T_i > 0 or 0 (an empty window: Δ_i = ν_i = 0), days.

    Returns
    -------
    (change_rate, recall, false_rate) : three ndarrays of float64, shape (N,)
        Δ_i and ν_i per day, q_i in [0, 1].

    Raises
    ------
    ValueError
        If a page position is outside 0 .. N − 1, a window is negative or not finite, or
        the arrays of a pair differ in length.

    Examples
    --------
    >>> from changerate_bayes.replay import hindsight_signal_parameters
    >>> d, q, nu = hindsight_signal_parameters([0, 0], [10, 20], [0, 0, 1], [20, 30, 5], [2.0, 4.0])
    >>> d.tolist(), q.tolist(), nu.tolist()  # page 0: changes 10, 20; signals 20 (true), 30 (false)
    ([1.0, 0.0], [0.5, 0.0], [0.5, 0.25])
    """
    T = np.asarray(window_days, dtype=np.float64)
    n = T.size
    if T.ndim != 1 or not np.isfinite(T).all() or (T < 0).any():
        raise ValueError("`window_days` must be a 1-d array of finite numbers >= 0 (days)")
    pairs = []
    for what, page, ms in (("change", change_page, change_ms), ("signal", signal_page, signal_ms)):
        page, ms = np.asarray(page, dtype=np.int64).ravel(), np.asarray(ms, dtype=np.int64).ravel()
        if page.size != ms.size:
            raise ValueError(f"`{what}_page` and `{what}_ms` must have the same length; got {page.size} and {ms.size}")
        if page.size and (page.min() < 0 or page.max() >= n):
            raise ValueError(f"`{what}_page` must hold page positions 0 .. {n - 1} (one window each)")
        pairs.append((page, ms))
    (cp, cm), (sp, sm) = pairs
    shift = np.int64(1) << np.int64(40)
    ck, sk = cp * shift + cm, sp * shift + sm
    signalled = np.isin(ck, sk)
    false = ~np.isin(sk, ck)
    changes = np.bincount(cp, minlength=n).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(T > 0, changes / T, 0.0)
        recall = np.where(changes > 0, np.bincount(cp[signalled], minlength=n) / changes, 0.0)
        false_rate = np.where(T > 0, np.bincount(sp[false], minlength=n) / T, 0.0)
    return rate, recall, false_rate


class HindsightSignalIndexPolicy(HindsightIndexPolicy):
    r"""A hindsight reference: the signal-aware index with each page's (Δ, q, ν) known.

    The rule of :class:`SignalIndexPolicy` (crawl the pages of largest w ν(t_eff), t_eff =
    (1 − q) t + n J from the signals since the last crawl, paced), with the parameters
    counted from the whole replay (:func:`hindsight_signal_parameters`: Δ_i = n_i/T_i as
    the paced hindsight-static oracle ``paced_oracle``, q_i the share of the page's
    changes with a signal at the same instant, ν_i its other signals per day) and the
    Poisson index of Δ_i (:class:`HindsightIndexPolicy`), never revised. It shows what
    the t_eff rule reaches with perfect parameters: the ceiling of the learner
    :class:`SignalIndexPolicy` (not of every use of the signals: the rule itself is an
    approximation, see :doc:`/signals`). Without signals, or where q_i = 0, it is
    ``paced_oracle`` exactly. The engine gives it the change and signal times
    (``hindsight_signals = True``).

    Parameters
    ----------
    name : str, default "paced_hindsight_signals"
    pace : {"collection", "pages"}, default "pages"
    max_interval_factor : float, default 4.0
        As in :class:`IndexPolicy`.

    Raises
    ------
    ValueError
        As :class:`HindsightIndexPolicy`.
    """

    hindsight_signals = True

    def __init__(self, *, name: str = "paced_hindsight_signals", pace: str = "pages", max_interval_factor: float = 4.0):
        super().__init__(name=name, pace=pace, max_interval_factor=max_interval_factor)

    def reset(self, ctx) -> None:
        super().reset(ctx)
        n = ctx.n_pages
        self.signals = _SignalCounts(n)
        self.change_rate = np.asarray(ctx.true_rates, dtype=np.float64)
        self.recall = np.zeros(n)
        self.false_rate = np.zeros(n)
        if ctx.signals is not None and ctx.changes is not None:
            ch = ctx.changes
            change_page = np.repeat(np.arange(n, dtype=np.int64), np.diff(ch["offsets"]))
            window = (np.asarray(ch["end_ms"]) - np.asarray(ch["start_ms"])) / MS_PER_DAY
            _, self.recall, self.false_rate = hindsight_signal_parameters(
                change_page, ch["change_ms"], ctx.signals[0], ctx.signals[1], window
            )

    def receive_signals(self, k: int, page, t) -> None:
        """Take the signals that arrived by step ``k``: pages (int64) and times (days since t0)."""
        self.signals.receive(np.asarray(page, dtype=np.int64), np.asarray(t, dtype=np.float64))

    def _index(self, k, elapsed) -> np.ndarray:
        if self.recall.any():
            elapsed = effective_elapsed(elapsed, self.signals.n_since, self.change_rate, self.recall, self.false_rate)
        return super()._index(k, elapsed)

    def select(self, k, t, active, allowed) -> np.ndarray:
        mask = super().select(k, t, active, allowed)
        self.signals.crawled(mask)
        return mask


def signal_days(time_ms: np.ndarray, t0: int) -> np.ndarray:
    """Signal times in days since t0 (ms -> days)."""
    return (np.asarray(time_ms, dtype=np.int64) - t0) / MS_PER_DAY
