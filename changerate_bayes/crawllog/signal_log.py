"""Change-indicating signals in the crawl-log product: counted per crawl interval, learned per page, used in a schedule.

A log's signals (a signals file, or the log's own rows with ``signal`` 1;
:mod:`changerate_bayes.io._signals`) are matched with every page's usable visits:

- :func:`log_signals` checks them against the page table and counts them
  (:class:`~changerate_bayes.io.SignalAudit`), and builds the pages'
  :class:`~changerate_bayes.signals.SignalData`, one entry per crawl that saw a change plus
  one for the rest of the page's crawled time (an exact compression: the likelihood of
  the crawls that saw no change depends only on their total time and total signals), and
  the tail from the page's last visit to the log's end;
- :func:`signal_columns` learns every page's recall q, precision qΔ/(qΔ + ν), change rate
  Δ and false-signal rate ν (:func:`~changerate_bayes.signals.signal_posterior` under
  :func:`~changerate_bayes.signals.pooled_signal_prior`), the columns
  :data:`SIGNAL_COLUMNS` of :func:`changerate_bayes.crawllog.estimate`;
- :func:`signal_schedule` moves each page's next fetch by the signal-aware rule (the
  effective clock, :func:`effective_delay`) and says what triggers it.

Every engine sends its pages' compact signal data (:func:`part_signals`) to the same
assembly, so the table and schedule with signals are the same on every engine.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..io import (
    SIGNAL_DROP_REASONS,
    CrawlLog,
    CrawlLogError,
    SignalAudit,
    log_signal_rows,
    read_signals,
    signal_flags,
    signal_frame,
)
from ..signals import SignalData, pooled_signal_prior, signal_posterior

__all__ = [
    "PRIOR_PAGES",
    "SIGNAL_COLUMNS",
    "SIGNAL_SCHEDULE_COLUMNS",
    "SIGNAL_DRAWS",
    "LogSignals",
    "effective_delay",
    "expected_fetch_interval",
    "log_signals",
    "signal_columns",
    "signal_schedule",
]

#: Columns :func:`changerate_bayes.crawllog.estimate` adds with signals, in order.
SIGNAL_COLUMNS = (
    "n_signals",
    "signals_since_last_visit",
    "signal_recall",
    "signal_recall_lower",
    "signal_recall_upper",
    "signal_precision",
    "signal_precision_lower",
    "signal_precision_upper",
    "signal_change_rate_per_day",
    "signal_false_rate_per_day",
)
#: Columns :func:`changerate_bayes.crawllog.schedule` adds with signals, in order.
SIGNAL_SCHEDULE_COLUMNS = (
    "signals_since_last_visit",
    "signal_recall",
    "signal_jump_h",
    "index_next_fetch",
    "fetch_trigger",
)
#: Gibbs sampling of :func:`signal_columns`: draws kept and discarded per chain, chains.
SIGNAL_DRAWS = {"draws": 200, "tune": 100, "chains": 2}
#: Gibbs sampling for the schedule, which reads posterior means only (:func:`_signal_means`):
#: half the steps of :data:`SIGNAL_DRAWS`. On 3,000 pages of ``benchmarks/bench_signal_log.py``
#: the means' Monte Carlo error (root mean square, against 2 × 4,000 draws) is 0.16 posterior
#: standard deviations for the recall and 0.13 for Δ and ν (0.12, 0.09, 0.10 with
#: SIGNAL_DRAWS; 50 steps of tuning did as well as 100): it adds about 1% to the means'
#: total error √(1 + 0.16²).
_SCHEDULE_DRAWS = {"draws": 100, "tune": 50, "chains": 2}
_NS_PER_HOUR = 3.6e12
_NS_PER_DAY = 86_400e9
_HOURS_PER_DAY = 24.0
#: The pooled prior is fitted on at most this many pages, drawn at random (seeded) from a larger log.
PRIOR_PAGES = 20_000
#: Pages per Gibbs run: the draws of one run take chains x draws x pages x 24 bytes.
_CHUNK_BYTES = 4e8


@dataclass(frozen=True)
class _Part:
    """One part's pages' signals (internal): what a part of any engine sends back."""

    pages: np.ndarray  # object labels, the part's pages
    before: np.ndarray  # int64 per page: signals at or before its first visit
    chg_page: np.ndarray  # int64 index into ``pages`` of each crawl that saw a change
    chg_tau: np.ndarray  # float64 hours
    chg_n: np.ndarray  # int64 signals in that interval
    rest_tau: np.ndarray  # float64 hours per page: the crawls that saw no change
    rest_n: np.ndarray  # int64 signals in them
    tail_page: np.ndarray  # int64 index into ``pages`` of each signal after the page's last visit
    tail_time: np.ndarray  # int64 UTC ns


def _visit_times(log: CrawlLog) -> tuple[np.ndarray, np.ndarray]:
    """Each page's usable visit times (page index, UTC ns), from its first visit and intervals.

    The intervals are ns differences / 3.6e12 (hours), so the times are exact to a few ns;
    where every first and last visit is a whole microsecond (logs at that resolution or
    coarser) they are rounded to it, and so are exact.
    """
    h = log.history
    lengths = np.asarray(h.lengths, dtype=np.int64)
    visits = lengths + 1
    page = np.repeat(np.arange(lengths.size), visits)
    starts = np.concatenate(([0], np.cumsum(visits)[:-1])).astype(np.int64)
    step = np.zeros(page.size, dtype=np.int64)
    later = np.ones(page.size, dtype=bool)
    later[starts] = False
    step[later] = np.rint(np.asarray(h.flat_intervals) * _NS_PER_HOUR).astype(np.int64)
    cum = np.cumsum(step)
    cum -= np.repeat(cum[starts], visits)
    first = np.asarray(log.first_visit).astype("datetime64[ns]").view(np.int64)
    last = np.asarray(log.last_visit).astype("datetime64[ns]").view(np.int64)
    times = first[page] + cum
    if ((first % 1000) == 0).all() and ((last % 1000) == 0).all():
        times = (times + 500) // 1000 * 1000
    times[starts + lengths] = last  # the last visit exactly
    return page, times


def part_signals(log: CrawlLog, sig_pages: np.ndarray, sig_times: np.ndarray, *, pages=None) -> _Part:
    """The signals of ``log``'s pages counted per crawl interval (a part of any engine).

    ``sig_pages`` (labels) and ``sig_times`` (UTC ns) are the log's signals without
    duplicates; those of other pages are ignored. ``pages``: the labels of the log's pages
    where its history names them by codes (a bucket). A signal at a crawl's time belongs to
    the interval that crawl ends; one at or before the page's first visit is counted in
    ``before``; one after its last visit goes to the tail.
    """
    pages = np.asarray(log.page_ids if pages is None else pages, dtype=object)
    n_pages = pages.size
    h = log.history
    lengths = np.asarray(h.lengths, dtype=np.int64)
    code = pd.Index(pages).get_indexer(pd.Index(sig_pages, dtype=object))
    mine = code >= 0
    sp, st = code[mine].astype(np.int64), np.asarray(sig_times, dtype=np.int64)[mine]
    vp, vt = _visit_times(log)
    # visits and signals sorted together by (page, time, signal before visit): a signal's
    # rank among its page's visits is the number of them strictly before it
    kind = np.concatenate([np.ones(vp.size, np.int8), np.zeros(sp.size, np.int8)])
    allp, allt = np.concatenate([vp, sp]), np.concatenate([vt, st])
    order = np.lexsort((kind, allt, allp))
    is_visit = kind[order] == 1
    visits_before = np.cumsum(is_visit) - is_visit
    first_row = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))
    page_sorted = allp[order][~is_visit]
    time_sorted = allt[order][~is_visit]
    before = visits_before[~is_visit] - first_row[page_sorted]  # the page's visits before the signal
    early = before == 0
    tail = before == lengths[page_sorted] + 1
    inside = ~early & ~tail
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    flat = offsets[page_sorted[inside]] + before[inside] - 1
    counts = np.bincount(flat, minlength=int(offsets[-1])).astype(np.int64)
    changed = np.asarray(h.flat_changed) > 0
    tau = np.asarray(h.flat_intervals, dtype=np.float64)
    ipage = np.repeat(np.arange(n_pages), lengths)
    return _Part(
        pages=pages,
        before=np.bincount(page_sorted[early], minlength=n_pages).astype(np.int64),
        chg_page=ipage[changed].astype(np.int64),
        chg_tau=tau[changed],
        chg_n=counts[changed],
        rest_tau=np.bincount(ipage[~changed], weights=tau[~changed], minlength=n_pages),
        rest_n=np.bincount(ipage[~changed], weights=counts[~changed], minlength=n_pages).astype(np.int64),
        tail_page=page_sorted[tail].astype(np.int64),
        tail_time=time_sorted[tail],
    )


@dataclass(frozen=True)
class LogSignals:
    """A log's signals matched with its page table: what :func:`log_signals` returns.

    Attributes
    ----------
    data : SignalData
        The table's pages in its order (intervals in days; one entry per crawl that saw
        a change, then one for the crawls that saw none), with the tail from each page's
        last visit to the log's end.
    n_signals : ndarray of int64, shape (n_pages,)
        Kept signals per page.
    since_last_visit : ndarray of int64, shape (n_pages,)
        Of them, those after the page's last visit (at or before the log's end).
    audit : SignalAudit
        Signals read, kept and dropped by reason.
    log_end : pandas.Timestamp
        The log's end (UTC): its latest usable visit.
    """

    data: SignalData
    n_signals: np.ndarray
    since_last_visit: np.ndarray
    audit: SignalAudit
    log_end: pd.Timestamp


def signal_table(rows: pd.DataFrame, lines: np.ndarray, *, source: str, page_col: str, time_col: str) -> pd.DataFrame:
    """The signal rows ``rows`` of a data frame in memory, as :func:`changerate_bayes.io.read_signals`
    returns them: columns ``page``, ``signal_time`` (UTC) and ``line`` (``lines``, the rows'
    numbers in ``source``, the name in messages and in ``attrs["sources"]``).

    Raises
    ------
    CrawlLogError
        For a missing page or an unparsable or missing time, naming the row and column.
    """
    pages, ns = signal_frame(
        rows, source=source, page_col=page_col, time_col=time_col, lines=lines, line_word="row", state={}
    )
    out = pd.DataFrame({"page": pages, "signal_time": pd.to_datetime(ns, utc=True), "line": lines})
    out.attrs["sources"] = (source,)
    return out


def signal_input(signals, *, source, files, fmt, columns) -> pd.DataFrame | None:
    """The signals of a job: those of ``signals`` (paths, or a data frame with columns ``page`` and
    ``signal_time``) and the log's own signal rows (``source``'s ``signal`` column), together;
    None when there are none of either (nothing changes then; a ``signal`` column whose every
    value is 0 is no signal)."""
    parts = []
    if signals is not None:
        if isinstance(signals, pd.DataFrame):
            missing = [c for c in ("page", "signal_time") if c not in signals.columns]
            if missing:
                raise ValueError(
                    f"`signals` lacks the column(s) {missing}: give one row per signal with columns page and "
                    f"signal_time; it has {list(signals.columns)}"
                )
            lines = np.arange(1, len(signals) + 1, dtype=np.int64)
            parts.append(signal_table(signals, lines, source="<signals>", page_col="page", time_col="signal_time"))
        else:
            parts.append(read_signals(signals))
    if isinstance(source, pd.DataFrame) and "signal" in source.columns:
        lines = np.arange(1, len(source) + 1, dtype=np.int64)
        flags = signal_flags(source["signal"], source="<dataframe>", column="signal", lines=lines, line_word="row")
        page_col, time_col = (columns or {}).get("page", "page"), (columns or {}).get("fetch_time", "fetch_time")
        frame = signal_table(source[flags], lines[flags], source="<dataframe>", page_col=page_col, time_col=time_col)
        if len(frame):  # a signal column without a signal: a log without signals
            parts.append(frame)
    elif files is not None:
        rows = log_signal_rows(files, fmt, columns=columns)
        if rows is not None and len(rows):
            parts.append(rows)
    if not parts:
        return None
    out = pd.concat(parts, ignore_index=True)
    out.attrs["sources"] = tuple(s for p in parts for s in p.attrs["sources"])
    return out


def unique_signals(signals: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(page labels, UTC ns) of ``signals`` with each (page, time) once: what the parts count."""
    ns = signals["signal_time"].to_numpy(dtype="datetime64[ns]").view(np.int64)
    pages = signals["page"].to_numpy(dtype=object)
    dup = pd.DataFrame({"p": pages, "t": ns}).duplicated().to_numpy()
    return pages[~dup], ns[~dup]


def log_signals(table: pd.DataFrame, parts, signals: pd.DataFrame) -> LogSignals:
    """Match the signals with the page table: the checks, the audit and the pages' signal data.

    Parameters
    ----------
    table : pandas.DataFrame
        The page table (columns ``page``, ``first_visit``, ``last_visit``), in its order.
    parts : list
        :func:`part_signals` of every part of the log (each page in one part).
    signals : pandas.DataFrame
        All the signals read (:func:`signal_input`), duplicates included.

    Returns
    -------
    LogSignals

    Raises
    ------
    CrawlLogError
        When no signal is on a page of the table (naming the signals' files).

    Notes
    -----
    Counted and dropped, in this order (:data:`~changerate_bayes.io.SIGNAL_DROP_REASONS`):
    signals of pages without a row in the table; repeats of a (page, time); signals at or
    before the page's first usable visit (nothing to compare them with); signals after the
    log's end, its latest usable visit (the log cannot have seen what they announce). A
    signal after the page's last visit and up to the log's end is kept: it is in the
    page's tail (it counts towards the signals since the last crawl of a schedule).
    """
    ids = table["page"].to_numpy(dtype=object)
    index = pd.Index(ids)
    n_pages = ids.size
    raw_pages = signals["page"].to_numpy(dtype=object)
    raw_ns = signals["signal_time"].to_numpy(dtype="datetime64[ns]").view(np.int64)
    known = index.get_indexer(pd.Index(raw_pages, dtype=object)) >= 0
    dup = pd.DataFrame({"p": raw_pages, "t": raw_ns}).duplicated().to_numpy()
    sources = signals.attrs.get("sources", ("<signals>",))
    if not known.any():
        shown = ", ".join(map(repr, pd.unique(raw_pages)[:3]))
        raise CrawlLogError(
            f"{', '.join(sources)}: none of the {raw_pages.size} signals is on a page of the log's table "
            f"(e.g. pages {shown or 'none'}); the signals must name pages as the log does (its page column)"
        )
    if "file" in signals.columns:  # several signals files: each must name pages of the log
        files = signals["file"].to_numpy(dtype=object)
        hits = pd.Series(known).groupby(files, sort=False).any()
        if not hits.all():
            name = str(hits.index[~hits.to_numpy()][0])
            mine = raw_pages[files == name]
            shown = ", ".join(map(repr, pd.unique(mine)[:3]))
            raise CrawlLogError(
                f"{name}: none of its {mine.size} signals is on a page of the log's table (e.g. pages "
                f"{shown or 'none'}); the signals must name pages as the log does (its page column)"
            )
    last = table["last_visit"].to_numpy(dtype="datetime64[ns]").view(np.int64)
    end = int(last.max())
    n_chg = np.zeros(n_pages, np.int64)
    before = np.zeros(n_pages, np.int64)
    rest_tau = np.zeros(n_pages)
    rest_n = np.zeros(n_pages, np.int64)
    chg: tuple[list, list, list] = ([], [], [])
    tails: tuple[list, list] = ([], [])
    for part in parts:  # the parts of the log (buckets, partitions), not its pages
        where = index.get_indexer(pd.Index(part.pages, dtype=object))
        before[where] += part.before
        rest_tau[where] += part.rest_tau
        rest_n[where] += part.rest_n
        chg[0].append(where[part.chg_page])
        chg[1].append(part.chg_tau)
        chg[2].append(part.chg_n)
        tails[0].append(where[part.tail_page])
        tails[1].append(part.tail_time)
    chg_page = np.concatenate(chg[0]).astype(np.int64)
    order = np.argsort(chg_page, kind="stable")  # each page's changed crawls in order
    chg_page, chg_tau, chg_n = chg_page[order], np.concatenate(chg[1])[order], np.concatenate(chg[2])[order]
    tail_page, tail_time = np.concatenate(tails[0]).astype(np.int64), np.concatenate(tails[1])
    late = tail_time > end
    tail_page = tail_page[~late]
    tail_n = np.bincount(tail_page, minlength=n_pages).astype(np.int64)
    n_chg = np.bincount(chg_page, minlength=n_pages).astype(np.int64)
    has_rest = rest_tau > 0
    lengths = n_chg + has_rest
    ends = np.cumsum(lengths)
    starts = ends - lengths
    size = int(ends[-1]) if n_pages else 0
    tau, changed, counts = np.empty(size), np.zeros(size, np.int8), np.zeros(size, np.int64)
    rank = np.arange(chg_page.size) - np.repeat(np.cumsum(n_chg) - n_chg, n_chg)
    at = starts[chg_page] + rank
    tau[at], changed[at], counts[at] = chg_tau, 1, chg_n
    tau[ends[has_rest] - 1], counts[ends[has_rest] - 1] = rest_tau[has_rest], rest_n[has_rest]
    data = SignalData.from_segments(
        tau / _HOURS_PER_DAY,
        changed,
        counts,
        lengths=lengths,
        tail_time=(end - last) / _NS_PER_DAY,
        tail_signals=tail_n,
        page_ids=ids,
    )
    per_page = np.bincount(chg_page, weights=chg_n, minlength=n_pages).astype(np.int64) + rest_n + tail_n
    dropped = {
        "unknown_page": int((~known).sum()),
        "duplicate": int((known & dup).sum()),
        "before_first_visit": int(before.sum()),
        "after_end": int(late.sum()),
    }
    audit = SignalAudit(
        sources=tuple(sources),
        signals_read=int(raw_pages.size),
        signals_kept=int(per_page.sum()),
        dropped=tuple((r, dropped[r]) for r in SIGNAL_DROP_REASONS),
        after_last_visit=int(tail_n.sum()),
        pages_with_signals=int((per_page > 0).sum()),
        log_end=f"{pd.Timestamp(end, tz='UTC'):%Y-%m-%dT%H:%M:%SZ}",
    )
    assert audit.signals_kept + audit.dropped_total == audit.signals_read  # every signal accounted for once
    return LogSignals(data, per_page, tail_n, audit, pd.Timestamp(end, tz="UTC"))


def _take(data: SignalData, pages: np.ndarray) -> SignalData:
    """The pages ``pages`` (indices, increasing) of ``data``."""
    lengths = data.lengths[pages]
    rows = np.repeat(data.offsets[:-1][pages], lengths) + (
        np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    )
    return SignalData.from_segments(
        data.intervals[rows],
        data.changed[rows],
        data.signals[rows],
        lengths=lengths,
        tail_time=data.tail_time[pages],
        tail_signals=data.tail_signals[pages],
    )


def _subset(data: SignalData, lo: int, hi: int) -> SignalData:
    a, b = int(data.offsets[lo]), int(data.offsets[hi])
    return SignalData.from_segments(
        data.intervals[a:b],
        data.changed[a:b],
        data.signals[a:b],
        lengths=data.lengths[lo:hi],
        tail_time=data.tail_time[lo:hi],
        tail_signals=data.tail_signals[lo:hi],
    )


def _posteriors(signals: LogSignals, rng, settings: dict):
    """The pooled prior, then :func:`signal_posterior` on groups of pages in order (a generator)."""
    from .._rng import as_generator

    gen = as_generator(rng)
    data = signals.data
    fit_on = data
    if data.n_pages > PRIOR_PAGES:  # the population's moments from a sample of pages: EM on all would cost minutes
        fit_on = _take(data, np.sort(gen.choice(data.n_pages, PRIOR_PAGES, replace=False)))
    try:
        prior = pooled_signal_prior(fit_on)
    except ValueError as exc:
        raise ValueError(f"the signals' recall and precision cannot be learned: {exc}") from None
    n = data.n_pages
    chunk = max(1, int(_CHUNK_BYTES // (settings["chains"] * settings["draws"] * 24)))
    for lo in range(0, n, chunk):  # groups of pages, to bound the draws held (not a loop over pages)
        hi = min(n, lo + chunk)
        yield signal_posterior(_subset(data, lo, hi), prior=prior, rng=gen, **settings)


def _signal_means(signals: LogSignals, *, rng=None) -> pd.DataFrame:
    """The columns of :func:`signal_columns` that :func:`signal_schedule` reads: posterior means only.

    ``n_signals``, ``signals_since_last_visit``, ``signal_recall``, ``signal_precision``,
    ``signal_change_rate_per_day`` and ``signal_false_rate_per_day`` as there, from
    :data:`_SCHEDULE_DRAWS` (fewer draws: a mean needs no tail quantile).
    """
    means = []
    for post in _posteriors(signals, rng, _SCHEDULE_DRAWS):
        means.append([post.draws(q).mean(axis=(0, 1)) for q in ("recall", "precision", "change_rate", "false_rate")])
    recall, precision, change, false = (np.concatenate(m) for m in zip(*means, strict=True))
    return pd.DataFrame(
        {
            "n_signals": signals.n_signals,
            "signals_since_last_visit": signals.since_last_visit,
            "signal_recall": recall,
            "signal_precision": precision,
            "signal_change_rate_per_day": change,
            "signal_false_rate_per_day": false,
        }
    )


def signal_columns(signals: LogSignals, *, level: float = 0.9, rng=None, draws=None) -> pd.DataFrame:
    """Every page's signal recall, precision, change and false-signal rates, with intervals.

    Parameters
    ----------
    signals : LogSignals
        From :func:`log_signals`.
    level : float, default 0.9
        Probability of the equal-tailed credible intervals.
    rng : int or numpy.random.Generator, optional
        Seed of the Gibbs sampler.
    draws : dict, optional
        ``draws``, ``tune`` and ``chains`` of
        :func:`~changerate_bayes.signals.signal_posterior` (default :data:`SIGNAL_DRAWS`).

    Returns
    -------
    pandas.DataFrame
        The columns :data:`SIGNAL_COLUMNS`, one row per page of ``signals.data``:
        ``n_signals`` (kept signals), ``signals_since_last_visit``; the posterior mean and
        equal-tailed ``level`` interval of the recall q (``signal_recall``,
        ``signal_recall_lower``, ``signal_recall_upper``) and of the precision
        qΔ/(qΔ + ν), the share of the page's signals that are changes
        (``signal_precision``…); the posterior means of Δ and ν under the signal model
        (``signal_change_rate_per_day``, ``signal_false_rate_per_day``, per day).

    Raises
    ------
    ValueError
        If fewer than 2 pages, or no page saw a signal or a change (the pooled prior,
        :func:`~changerate_bayes.signals.pooled_signal_prior`).

    Notes
    -----
    The prior is fitted to all pages once (empirical Bayes; on a log of more than
    :data:`PRIOR_PAGES` pages, to that many drawn at random with ``rng``: its five
    parameters are moments of the population, which a sample of 20,000 pages fixes to a few
    percent, while the EM behind it costs about 1 s per 1,300 pages); given it the pages are
    independent, so the Gibbs sampler runs on groups of pages whose draws fit in about
    400 MB, one after the other, with one generator: the result depends on the seed and on
    the pages' order only, not on the engine. The cost grows with the crawls that saw a
    change: on 10^5 simulated pages of 30 daily crawls (8.8·10^5 compressed intervals,
    1.6·10^6 signals) the whole ``estimate`` took 37 s against 1.3 s without signals on the
    shared 2-core machine at load 1.4 (the sampler and its summaries 26 s of it, the prior
    on 20,000 pages 6.5 s; ``benchmarks/bench_signal_log.py``).
    """
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < level < 1:
        raise ValueError(f"`level` must be a number in (0, 1); got {level!r}")
    parts = [_posterior_columns(post, level) for post in _posteriors(signals, rng, {**SIGNAL_DRAWS, **(draws or {})})]
    return pd.DataFrame(
        {
            "n_signals": signals.n_signals,
            "signals_since_last_visit": signals.since_last_visit,
            **{name: np.concatenate([p[name] for p in parts]) for name in SIGNAL_COLUMNS[2:]},
        }
    )


def _posterior_columns(post, level: float) -> dict[str, np.ndarray]:
    """The posterior columns of :func:`signal_columns` of one group of pages.

    As :meth:`~changerate_bayes.signals.SignalPosterior.summary`, for the quantities read
    only: the quantiles of the recall and the precision, the means of Δ and ν.
    """
    n = post.signalled.shape[-1]
    out = {}
    for name, column in (("recall", "signal_recall"), ("precision", "signal_precision")):
        x = post.draws(name).reshape(-1, n)
        lo, hi = np.quantile(x, [(1 - level) / 2, (1 + level) / 2], axis=0)
        out[column], out[f"{column}_lower"], out[f"{column}_upper"] = x.mean(axis=0), lo, hi
    out["signal_change_rate_per_day"] = post.draws("change_rate").reshape(-1, n).mean(axis=0)
    out["signal_false_rate_per_day"] = post.draws("false_rate").reshape(-1, n).mean(axis=0)
    return out


def with_signal_columns(table: pd.DataFrame, columns: pd.DataFrame, audit: SignalAudit) -> pd.DataFrame:
    """``table`` with the signal columns appended (same pages, same order) and the audit in ``attrs``."""
    out = table.copy()
    for c in SIGNAL_COLUMNS:
        out[c] = columns[c].to_numpy()
    out.attrs.update(table.attrs)
    out.attrs["signal_audit"] = audit.as_dict()
    return out


def jump_hours(recall, change_rate, false_rate) -> np.ndarray:
    """J = log((qΔ + ν)/ν)/Δ in hours (Δ, ν per day): the effective time one signal adds.

    +inf where ν = 0 and qΔ > 0 (a signal is then a sure change); 0 where q = 0.
    """
    q = np.asarray(recall, dtype=np.float64)
    d = np.asarray(change_rate, dtype=np.float64)
    nu = np.asarray(false_rate, dtype=np.float64)
    s = q * d
    with np.errstate(divide="ignore", invalid="ignore"):
        j = np.where(s > 0, np.where(nu > 0, np.log1p(s / np.where(nu > 0, nu, 1.0)) / d, np.inf), 0.0)
    return j * _HOURS_PER_DAY


def effective_delay(interval_h, n, recall, jump_h) -> np.ndarray:
    """Hours from the last fetch to the next under the signal-aware index: (I − n·J)/(1 − q).

    The page is due when its effective elapsed time t_eff = (1 − q) t + n·J reaches its
    interval I; with ``n`` signals since the last fetch that is at t = (I − n·J)/(1 − q),
    which is <= 0 (due now) once n·J >= I.

    Parameters
    ----------
    interval_h : array_like of float, shape (n_pages,)
        I, hours (the allocation's interval).
    n : array_like of int, shape (n_pages,)
        Signals since the last fetch.
    recall : array_like of float, shape (n_pages,)
        q̂ in [0, 1).
    jump_h : array_like of float, shape (n_pages,)
        J, hours (:func:`jump_hours`; +inf allowed).

    Returns
    -------
    ndarray of float64, shape (n_pages,)
        Hours; -inf where n·J is infinite.

    Examples
    --------
    >>> effective_delay([24.0], [1], [0.5], [6.0]).tolist()  # (24 - 6) / (1 - 0.5)
    [36.0]
    """
    interval = np.asarray(interval_h, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    q = np.asarray(recall, dtype=np.float64)
    j = np.asarray(jump_h, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        used = np.where(n > 0, n * j, 0.0)  # 0 signals add nothing, even with J = inf
    return (interval - used) / (1.0 - q)


def expected_fetch_interval(interval_h, recall, signal_rate_per_h, jump_h, *, nodes: int = 256) -> np.ndarray:
    """E[hours from a fetch to the next] under Poisson signals, the signal-aware rule.

    From a fetch, the page is due at T = min{t : (1 − q) t + N(t)·J >= I}, N a Poisson
    process of rate λ = qΔ + ν (the signals). T <= T_max = I/(1 − q), and
    P(T > t) = P(N(t) <= m(t) − 1) with m(t) = max(ceil((I − (1 − q) t)/J), 1) the signals
    still needed; E[T] = ∫_0^{T_max} P(T > t) dt, by the midpoint rule on ``nodes``
    points (scipy.stats.poisson.cdf), vectorised over pages.

    Parameters
    ----------
    interval_h, recall, jump_h : array_like of float, shape (n_pages,)
        I (hours), q̂ in [0, 1), J (hours, +inf allowed).
    signal_rate_per_h : array_like of float, shape (n_pages,)
        λ = q̂Δ̂ + ν̂, signals per hour.
    nodes : int, default 256
        Quadrature points per page (the error is below T_max/nodes hours).

    Returns
    -------
    ndarray of float64, shape (n_pages,)
        E[T], hours: the page's expected crawl rate is 1/E[T] (renewal).

    Examples
    --------
    >>> import numpy as np
    >>> t = expected_fetch_interval([24.0], [0.0], [0.1], [np.inf])  # E[min(24, Exp(0.1))]
    >>> bool(abs(t[0] - (1 - np.exp(-2.4)) / 0.1) < 24 / 256)
    True
    """
    from scipy.stats import poisson

    interval = np.asarray(interval_h, dtype=np.float64)[:, None]
    q = np.asarray(recall, dtype=np.float64)[:, None]
    lam = np.asarray(signal_rate_per_h, dtype=np.float64)[:, None]
    j = np.asarray(jump_h, dtype=np.float64)[:, None]
    t_max = interval / (1.0 - q)
    t = t_max * (np.arange(nodes) + 0.5) / nodes
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(np.isinf(j), 1.0, np.maximum(np.ceil((interval - (1.0 - q) * t) / np.where(j > 0, j, 1.0)), 1))
        survive = np.where(j > 0, poisson.cdf(need - 1, lam * t), 1.0)
    return (survive.mean(axis=1) * t_max[:, 0]).astype(np.float64)


def signal_schedule(schedule: pd.DataFrame, columns: pd.DataFrame, *, now) -> pd.DataFrame:
    """The schedule with each page's next fetch moved by its signals (the signal-aware index).

    Parameters
    ----------
    schedule : pandas.DataFrame
        From :func:`~changerate_bayes.crawllog.crawl_schedule` (columns ``last_attempt``,
        ``next_fetch``, ``interval_h``), one row per page.
    columns : pandas.DataFrame
        :func:`signal_columns` of the same pages in the same order.
    now : pandas.Timestamp
        The log's end (UTC): a page whose signal-aware next fetch is earlier is due then.

    Returns
    -------
    pandas.DataFrame
        A copy with ``next_fetch`` moved on the pages with signal information and the
        columns :data:`SIGNAL_SCHEDULE_COLUMNS`: ``signals_since_last_visit`` (n),
        ``signal_recall`` (q̂ used: 0 on a page with no signal ever), ``signal_jump_h`` (J,
        hours), ``index_next_fetch`` (the next fetch without signals), ``fetch_trigger``
        (``"index"``: no signal information, q̂ = 0 or no signal ever, the next fetch
        unchanged; ``"on_signal"``: one signal alone makes the page due, J >= I;
        ``"both"``: otherwise). ``attrs`` gains ``n_on_signal``, ``n_index``,
        ``n_both``, ``n_due_now`` (pages whose next fetch is at or before ``now``: the signalled pages
        moved to it and the pages already past their interval), ``crawls_per_day_with_signals``
        (Σ 24/E[T], the expected crawl rate under the model's Poisson signals,
        :func:`expected_fetch_interval`) and ``signal_rule``.

    Notes
    -----
    The rule (shared with the replay): with n signals since the last fetch, the page is due
    when t_eff = (1 − q̂) t + n·J reaches the allocation's interval I, at
    last fetch + (I − n·J)/(1 − q̂) (:func:`effective_delay`), with J = log((q̂Δ̂ + ν̂)/ν̂)/Δ̂ from
    the posterior means; due at ``now`` if that is past. The last fetch is the schedule's
    ``last_attempt`` (as without signals); n counts the signals after the last usable
    visit. The delay never exceeds the longer of I and the schedule's revisit limit
    (``attrs["max_interval_h"]``). Without signals a page waits I/(1 − q̂), longer than
    I, and each signal brings its fetch J/(1 − q̂) closer: the budget of the allocation
    counts index crawls (one per I), and the expected rate with signals is
    ``crawls_per_day_with_signals``.
    """
    out = schedule.copy()
    q = columns["signal_recall"].to_numpy(dtype=np.float64)
    n_ever = columns["n_signals"].to_numpy(dtype=np.int64)
    n = columns["signals_since_last_visit"].to_numpy(dtype=np.int64)
    delta = columns["signal_change_rate_per_day"].to_numpy(dtype=np.float64)
    nu = columns["signal_false_rate_per_day"].to_numpy(dtype=np.float64)
    informed = (n_ever > 0) & (q > 0)
    q = np.where(informed, q, 0.0)
    jump = np.where(informed, jump_hours(q, delta, nu), 0.0)
    interval = out["interval_h"].to_numpy(dtype=np.float64)
    limit = max(float(schedule.attrs.get("max_interval_h") or 0.0), 0.0)
    delay = np.minimum(effective_delay(interval, n, q, jump), np.maximum(interval, limit))
    seconds = np.where(informed, np.rint(np.maximum(delay, -1e12) * 3600.0), 0).astype(np.int64)
    anchor = pd.to_datetime(out["last_attempt"], utc=True)
    moved = anchor + pd.to_timedelta(seconds, unit="s")
    now = pd.Timestamp(now)
    due_now = informed & (moved < now).to_numpy()
    index_next = pd.to_datetime(out["next_fetch"], utc=True)
    nxt = np.where(informed, np.where(due_now, now.to_datetime64(), moved.to_numpy()), index_next.to_numpy())
    trigger = np.where(~informed, "index", np.where(jump >= interval, "on_signal", "both")).astype(object)
    out["next_fetch"] = pd.to_datetime(nxt, utc=True)
    out["signals_since_last_visit"] = n
    out["signal_recall"] = q
    out["signal_jump_h"] = jump
    out["index_next_fetch"] = index_next.to_numpy()
    out["index_next_fetch"] = pd.to_datetime(out["index_next_fetch"], utc=True)
    out["fetch_trigger"] = trigger
    rate = np.where(informed, (q * delta + nu) / _HOURS_PER_DAY, 0.0)
    mean_t = interval.copy()
    if informed.any():
        mean_t[informed] = expected_fetch_interval(interval[informed], q[informed], rate[informed], jump[informed])
    out.attrs.update(schedule.attrs)
    out.attrs.update(
        n_on_signal=int((trigger == "on_signal").sum()),
        n_index=int((trigger == "index").sum()),
        n_both=int((trigger == "both").sum()),
        n_due_now=int((out["next_fetch"] <= now).sum()),
        crawls_per_day_with_signals=float(np.sum(_HOURS_PER_DAY / mean_t)),
        signal_rule=(
            "next_fetch = last_attempt + (interval_h - signals_since_last_visit * signal_jump_h) / (1 - signal_recall), due at the "
            "log's end if that is past; the budget counts index crawls (one per interval_h); "
            "crawls_per_day_with_signals is the expected rate under Poisson signals"
        ),
    )
    return out
