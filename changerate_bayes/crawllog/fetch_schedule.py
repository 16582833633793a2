"""A crawl schedule a crawler can load: per URL the next fetch time, its interval, the rate, P(changed).

:func:`schedule_pages` turns a crawl log into one row per page: the crawl interval of
the allocation (:func:`changerate_bayes.crawllog.allocate_crawls`), bounded by a revisit
limit so that no page is left without a next fetch; the next fetch time (the last fetch
plus that interval); the page's recommended change rate; and the posterior predictive
probability that the page will have changed by then
(:func:`changerate_bayes.bayes.change_probability`). :func:`write_schedule` writes it as
CSV, Parquet or a Nutch seed list (:func:`nutch_seed_lines`). :func:`space_host_fetches` moves
each host's next fetches at least a delay apart, as a crawler's host queue fetches them. The Dask engine's schedules
are in :mod:`changerate_bayes.crawllog.dask_engine`.
"""

from __future__ import annotations

import numbers
import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..bayes import change_probability, posterior_history
from ..history import CrawlHistory
from ..io import CrawlLog
from .allocate import allocate_crawls
from .table import page_table

__all__ = [
    "MAX_INTERVAL_H",
    "SCHEDULE_COLUMNS",
    "SCHEDULE_FORMATS",
    "LogSchedule",
    "crawl_schedule",
    "nutch_seed_lines",
    "schedule_pages",
    "space_host_fetches",
    "write_schedule",
]

#: Default revisit limit, hours: Nutch's ``db.fetch.interval.max`` default (7,776,000 s = 90 days,
#: conf/nutch-default.xml). A page the allocation does not crawl, or crawls less often, is
#: scheduled at this interval.
MAX_INTERVAL_H = 90 * 24.0
#: Columns of a schedule, in order.
SCHEDULE_COLUMNS = (
    "url",
    "last_fetch",
    "last_attempt",
    "next_fetch",
    "interval_h",
    "interval_source",
    "rate_per_day",
    "rate_method",
    "p_changed",
)
#: Output formats of :func:`write_schedule`.
SCHEDULE_FORMATS = ("csv", "parquet", "nutch-seeds")
_SECONDS_PER_HOUR = 3600
_SECONDS_PER_DAY = 86400
#: Nutch parses the interval with ``Integer.parseInt``: at most 2^31 − 1 seconds.
_NUTCH_MAX_SECONDS = 2**31 - 1
_NUTCH_KEY = "nutch.fetchInterval.fixed"


@dataclass(frozen=True)
class LogSchedule:
    """The crawl schedule of a log with its audit: what :func:`changerate_bayes.crawllog.schedule` returns.

    Attributes
    ----------
    schedule : pandas.DataFrame
        One row per page, columns :data:`SCHEDULE_COLUMNS` (:func:`crawl_schedule`).
    audit : changerate_bayes.io.Audit
        The audit of the whole log.
    engine : {"pandas", "dask"}
        The engine that computed it.
    signal_audit : changerate_bayes.io.SignalAudit, optional
        With signals: what was done with each; None without.
    """

    schedule: pd.DataFrame
    audit: object
    engine: str = "pandas"
    signal_audit: object = None


def _check_history(history) -> CrawlHistory:
    if not isinstance(history, CrawlHistory):
        raise TypeError(f"`history` must be a CrawlHistory; got {type(history).__name__}")
    return history  # its intervals are checked by change_probability


def _check_max_interval(max_interval_h) -> float:
    if isinstance(max_interval_h, bool) or not isinstance(max_interval_h, numbers.Real):
        raise TypeError(f"`max_interval_h` must be a number of hours; got {type(max_interval_h).__name__}")
    value = float(max_interval_h)
    if not (np.isfinite(value) and value * _SECONDS_PER_HOUR >= 1.0):
        raise ValueError(f"`max_interval_h` must be finite and at least one second (1/3600 h); got {value}")
    return value


def crawl_schedule(
    table: pd.DataFrame, history: CrawlHistory, *, max_interval_h=MAX_INTERVAL_H, prior=None
) -> pd.DataFrame:
    """The schedule of pages whose crawl allocation is in ``table``.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`changerate_bayes.estimate_pages` (or :func:`~changerate_bayes.crawllog.allocate_crawls`
        of a page table): columns ``page``, ``last_visit`` (UTC), ``rate_per_day``,
        ``rate_method`` and ``crawl_interval_h``; optionally ``last_attempt`` (UTC, each page's
        last fetch attempt, whatever its outcome; default ``last_visit``).
    history : CrawlHistory
        The same pages in the same order (``page_ids`` equal to ``table["page"]`` when
        it has labels), intervals in hours: the log's history, or its
        :func:`~changerate_bayes.bayes.posterior_history`.
    max_interval_h : float, default :data:`MAX_INTERVAL_H` (2,160 h = 90 days)
        Revisit limit: a page whose allocated interval is longer, infinite or missing
        (the allocation does not crawl it) is scheduled at this interval instead and
        marked ``interval_source = "max_interval"``; except a page of a host held at its
        cap (``host_at_cap``) with a finite interval, which keeps it: the cap wins.
    prior : optional
        The prior of the table's posterior (default ``BetaPrimePrior(1, 2)``).

    Returns
    -------
    pandas.DataFrame
        One row per page, columns :data:`SCHEDULE_COLUMNS`: ``url``; ``last_fetch`` (UTC, the
        page's last successful visit, the last the estimate rests on); ``last_attempt`` (UTC,
        the page's last fetch attempt in the log, from the table's ``last_attempt`` column
        where it has one, never before ``last_fetch``: a later 404 or redirect, say);
        ``next_fetch`` (UTC; last_attempt + interval, so never before any fetch of the page
        in the log); ``interval_h``, the interval in
        hours, rounded to whole seconds (at least one); ``interval_source``
        (``"allocation"``; ``"revisit_bound"`` where the table's ``at_revisit_bound`` says
        the allocation holds the page at its own bound, its longest interval;
        ``"host_cap"`` where the table's ``host_at_cap`` says the page's host is held at its
        cap (its interval kept, even beyond ``max_interval_h``);
        ``"max_interval"`` where this function's limit applies; ``"min_interval"`` where
        the allocated interval, below half a second, is raised to the shortest interval,
        one second); ``rate_per_day`` and ``rate_method``
        (the table's recommended rate, changes per day); ``p_changed``, P(the page has
        changed by ``next_fetch``) from :func:`~changerate_bayes.bayes.change_probability`; then,
        where ``table`` has them (an allocation within per-host caps), ``host`` and
        ``host_at_cap``. ``attrs`` holds
        ``budget_per_day`` (the allocation's), ``max_interval_h``, ``n_max_interval``
        (pages at the revisit limit), ``n_revisit_bound``, ``n_min_interval``, ``n_host_cap``
        (pages marked ``"host_cap"``), ``n_host_cap_beyond_max`` (of them, those beyond
        ``max_interval_h``), ``policy`` (the
        allocation's), ``revisit_bound_h`` (the allocation's own longest interval, 4·N/B,
        its ``attrs["max_interval_h"]``; the longest interval is the shorter of it and
        ``max_interval_h``), ``n_pages`` and ``crawls_per_day`` (what the schedule spends:
        Σ 24 / interval_h, above the budget by the pages held at the limit).

    Raises
    ------
    TypeError
        If ``table`` is not a DataFrame or ``history`` not a CrawlHistory.
    ValueError
        If a column is missing, ``table`` and ``history`` do not hold the same pages in
        the same order, a page has no last visit time (a bare history), an allocated
        interval is negative, ``max_interval_h`` is not finite and >= 1 s, the table's
        ``attrs["budget_per_day"]`` is above N × 86,400 crawls per day (N pages, each
        fetched at most once a second: a budget the schedule cannot spend), or a next
        fetch would fall after 2262-04-11 (the end of int64 nanoseconds).
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"`table` must be a pandas DataFrame; got {type(table).__name__}")
    missing = [
        c for c in ("page", "last_visit", "rate_per_day", "rate_method", "crawl_interval_h") if c not in table.columns
    ]
    if missing:
        raise ValueError(f"`table` lacks the column(s) {missing}: give it the output of estimate_pages")
    history = _check_history(history)
    limit = _check_max_interval(max_interval_h)
    if history.lengths.size != len(table):
        raise ValueError(f"`history` has {history.lengths.size} pages but `table` has {len(table)} rows")
    if history.page_ids is not None and not np.array_equal(
        np.asarray(history.page_ids, dtype=object), table["page"].to_numpy(dtype=object)
    ):
        raise ValueError("`history` and `table` must hold the same pages in the same order")
    last = pd.to_datetime(table["last_visit"], utc=True)
    if last.isna().any():
        i = int(np.flatnonzero(last.isna().to_numpy())[0])
        raise ValueError(
            f"`table` row {i} (page {table['page'].iloc[i]!r}) has no last visit time: a schedule "
            "needs the log's fetch times"
        )
    attempt = last
    if "last_attempt" in table.columns:  # a later failed fetch, redirect or dropped row of the page
        given = pd.to_datetime(table["last_attempt"], utc=True)
        attempt = pd.Series(np.where(given.isna() | (given < last), last, given), index=last.index)
        attempt = pd.to_datetime(attempt, utc=True)
    allocated = table["crawl_interval_h"].to_numpy(dtype=np.float64)
    if (allocated < 0).any():
        i = int(np.flatnonzero(allocated < 0)[0])
        raise ValueError(f"`table` column 'crawl_interval_h' must be >= 0; got {allocated[i]} at row {i}")
    budget = table.attrs.get("budget_per_day")
    most = len(table) * _SECONDS_PER_DAY  # every page once a second, the shortest interval a schedule holds
    if budget is not None and not (float(budget) <= most):
        raise ValueError(
            f"`budget` {float(budget):g} crawls per day is more than a schedule of {len(table)} pages can "
            f"spend: at most {most:,} crawls per day (one fetch per second per page, the shortest interval); "
            "give at most that"
        )
    at_cap = (
        table["host_at_cap"].to_numpy(dtype=bool)
        if "host_at_cap" in table.columns
        else np.zeros(len(table), dtype=bool)
    )  # a host held at its cap: the crawler enforces the cap, so its interval stands
    beyond = at_cap & np.isfinite(allocated) & (allocated > limit)
    bounded = ~(allocated <= limit) & ~beyond  # infinite, NaN or beyond the limit
    at_bound = (
        table["at_revisit_bound"].to_numpy(dtype=bool)
        if "at_revisit_bound" in table.columns
        else np.zeros(len(table), dtype=bool)
    )  # held at the allocation's own bound
    hours = np.where(bounded, limit, allocated)
    raw = np.rint(hours * _SECONDS_PER_HOUR)
    shortest = ~bounded & (raw < 1.0)  # raised to the shortest interval a schedule holds, one second
    seconds = np.maximum(raw, 1.0).astype(np.int64)
    interval_h = seconds / _SECONDS_PER_HOUR
    room = (pd.Timestamp.max.tz_localize("UTC") - attempt).dt.total_seconds().to_numpy()
    late = seconds > np.floor(room)  # the next fetch would overflow int64 nanoseconds
    if late.any():
        i = int(np.flatnonzero(late)[0])
        if beyond[i]:
            raise ValueError(
                f"page {table['page'].iloc[i]!r}: its host's cap gives it an interval of {interval_h[i]:g} h, and its "
                f"next fetch, {attempt.iloc[i]:%Y-%m-%dT%H:%M:%SZ} + {interval_h[i]:g} h, is after "
                f"{pd.Timestamp.max:%Y-%m-%d}, the last time a schedule can hold (int64 nanoseconds); give its "
                "host a larger cap (`host_budgets`)"
            )
        raise ValueError(
            f"page {table['page'].iloc[i]!r}: its next fetch, {attempt.iloc[i]:%Y-%m-%dT%H:%M:%SZ} + "
            f"{interval_h[i]:g} h, is after {pd.Timestamp.max:%Y-%m-%d}, the last time a schedule can "
            "hold (int64 nanoseconds); lower `max_interval_h`"
        )
    out = pd.DataFrame(
        {
            "url": table["page"].to_numpy(),
            "last_fetch": last.to_numpy(),
            "last_attempt": attempt.to_numpy(),
            "next_fetch": (attempt + pd.to_timedelta(seconds, unit="s")).to_numpy(),
            "interval_h": interval_h,
            "interval_source": np.select(
                [bounded, shortest, at_bound, at_cap],
                ["max_interval", "min_interval", "revisit_bound", "host_cap"],
                "allocation",
            ).astype(object),
            "rate_per_day": table["rate_per_day"].to_numpy(dtype=np.float64),
            "rate_method": table["rate_method"].to_numpy(dtype=object),
            "p_changed": change_probability(history, interval_h, prior=prior),
        }
    )
    for column in ("host", "host_at_cap"):  # an allocation within per-host caps says which host is at its cap
        if column in table.columns:
            out[column] = table[column].to_numpy()
    out["last_fetch"] = pd.to_datetime(out["last_fetch"], utc=True)
    out["last_attempt"] = pd.to_datetime(out["last_attempt"], utc=True)
    out["next_fetch"] = pd.to_datetime(out["next_fetch"], utc=True)
    out.attrs.update(
        budget_per_day=table.attrs.get("budget_per_day"),
        max_interval_h=limit,
        n_max_interval=int(bounded.sum()),
        n_revisit_bound=int((at_bound & ~bounded & ~shortest).sum()),
        n_min_interval=int(shortest.sum()),
        n_host_cap=int((at_cap & ~bounded & ~shortest & ~at_bound).sum()),
        n_host_cap_beyond_max=int(beyond.sum()),
        crawls_per_day=float(np.sum(24.0 / interval_h)),
        rates="changes per day",
        rate_rule=table.attrs.get("rate_rule"),
        policy=table.attrs.get("policy"),
        revisit_bound_h=table.attrs.get("max_interval_h"),
        n_pages=len(table),
    )
    return out


def schedule_pages(
    log, *, budget=None, prior=None, level=0.9, max_interval_h=MAX_INTERVAL_H, hosts=None, host_budgets=None
) -> pd.DataFrame:
    """The crawl schedule of a crawl log: :func:`crawl_schedule` of its :func:`~changerate_bayes.estimate_pages`.

    Parameters
    ----------
    log : CrawlLog
        From :func:`changerate_bayes.io.read_log` (intervals in hours, UTC fetch times).
    budget : float, optional
        Crawls per day shared by :func:`changerate_bayes.crawllog.allocate_crawls`; default:
        the crawls per day the log shows.
    prior, level
        As :func:`changerate_bayes.estimate_pages`.
    max_interval_h : float, default :data:`MAX_INTERVAL_H`
        The revisit limit of :func:`crawl_schedule`.
    hosts, host_budgets
        Per-host politeness caps (crawls per day) of the allocation, as
        :func:`changerate_bayes.crawllog.allocate_crawls`; default: none.

    Returns
    -------
    pandas.DataFrame
        As :func:`crawl_schedule`.

    Raises
    ------
    TypeError, ValueError
        As :func:`changerate_bayes.estimate_pages` and :func:`crawl_schedule`.

    Examples
    --------
    >>> import pandas as pd
    >>> from changerate_bayes.io import read_frame
    >>> from changerate_bayes.crawllog import schedule_pages
    >>> visits = pd.DataFrame({"page": ["a"] * 4, "changed": [0, 1, 0, 0],
    ...                        "fetch_time": pd.date_range("2024-01-01", periods=4, freq="6h", tz="UTC")})
    >>> s = schedule_pages(read_frame(visits), budget=2.0)
    >>> s[["url", "next_fetch", "interval_h", "interval_source"]].values.tolist()
    [['a', Timestamp('2024-01-02 06:00:00+0000', tz='UTC'), 12.0, 'allocation']]
    """
    if not isinstance(log, CrawlLog):
        raise TypeError(f"`log` must be a CrawlLog (from changerate_bayes.io.read_log); got {type(log).__name__}")
    table = with_last_attempt(
        allocate_crawls(page_table(log, prior=prior, level=level), budget, hosts=hosts, host_budgets=host_budgets),
        log,
    )
    return crawl_schedule(table, posterior_history(log.history), max_interval_h=max_interval_h, prior=prior)


def _delays_ns(delay_s, labels: np.ndarray) -> np.ndarray:
    """Per host (``labels``, the distinct hosts) the delay in nanoseconds, rounded up to whole
    microseconds (0: no delay for that host); ValueError/TypeError naming ``delay_s``."""
    per_host = isinstance(delay_s, (Mapping, pd.Series))
    given = pd.Series(dict(delay_s) if isinstance(delay_s, Mapping) else delay_s if per_host else [delay_s])
    if given.size and (pd.api.types.is_bool_dtype(given.dtype) or not pd.api.types.is_numeric_dtype(given.dtype)):
        odd = given.map(lambda v: isinstance(v, bool) or not isinstance(v, numbers.Real)).to_numpy(dtype=bool)
        kind = type(given[odd].iloc[0]).__name__ if odd.any() else str(given.dtype)
        raise TypeError(f"`delay_s` must be a number of seconds (or one per host); got {kind}")
    seconds = given.to_numpy(dtype=np.float64)
    bad = ~(np.isfinite(seconds) & (seconds > 0) & (seconds <= _SECONDS_PER_DAY * 36600))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        where = f" of host {given.index[i]!r}" if per_host else ""
        raise ValueError(f"`delay_s`{where} must be finite, > 0 and at most a century of seconds; got {seconds[i]:g}")
    ns = np.ceil(np.round(seconds * 1e6, 3)).astype(np.int64) * 1000  # 0.29 s: 290,000 µs, not 290,001
    if not per_host:
        return np.full(labels.size, ns[0])
    return pd.Series(ns, index=given.index).reindex(pd.Index(labels, dtype=object)).fillna(0).to_numpy(np.int64)


def space_host_fetches(schedule: pd.DataFrame, hosts, delay_s) -> pd.DataFrame:
    """The schedule with each host's next fetches at least ``delay_s`` apart (a crawler's host queue).

    A crawler fetches one host's URLs one at a time, ``delay_s`` apart (Nutch's
    ``fetcher.server.delay``, default 5 s; robots.txt ``Crawl-delay``): fetches due closer
    together wait in its queue. This function writes the times the crawler can keep. Within
    each host the next fetches, in the order of their due times ``t_1 <= t_2 <= ...``, move
    to ``s_1 = t_1`` and ``s_k = max(t_k, s_(k-1) + d)``; in closed form
    ``s_k = k·d + max_(j<=k) (t_j - j·d)``, a cumulative maximum per host (no loop over
    hosts). No fetch moves earlier, and a host whose fetches already lie ``d`` apart keeps
    them. The intervals (``interval_h``, what a Nutch seed list carries), the rates and
    ``p_changed`` (at the allocated interval) stay as they are.

    Parameters
    ----------
    schedule : pandas.DataFrame
        From :func:`crawl_schedule`: columns ``url`` and ``next_fetch`` (UTC).
    hosts : array_like of str, shape (n_rows,)
        The host of each row (e.g. the URL's host name). A missing host (None, NaN or
        empty) is an error.
    delay_s : float or mapping of str to float
        Seconds between two fetches of one host: one number for every host, or per host
        (a dict or a pandas Series indexed by host; the hosts it lacks are not spaced).
        Rounded up to whole microseconds. Finite and > 0.

    Returns
    -------
    pandas.DataFrame
        A copy of ``schedule`` with ``next_fetch`` spaced, the column ``host`` (``hosts``;
        replacing one the schedule has) and last ``host_delay_s`` (seconds the row's next
        fetch moved, 0.0 where it did not).
        ``attrs`` gains ``n_host_delayed`` (rows moved), ``max_host_delay_s`` (the
        largest move, seconds; 0.0 if none) and ``n_hosts``.

    Raises
    ------
    TypeError
        If ``schedule`` is not a DataFrame with columns ``url`` and ``next_fetch``, or a
        delay is not a number.
    ValueError
        If ``hosts`` does not have one entry per row or has a missing host (naming the
        row and its URL), a delay is not finite and > 0, or a spaced fetch would fall
        after 2262-04-11 (the end of int64 nanoseconds).

    Examples
    --------
    >>> import pandas as pd
    >>> s = pd.DataFrame({"url": ["a/1", "a/2", "a/3", "b/1"],
    ...                   "next_fetch": pd.to_datetime(["2024-01-01 00:00:00", "2024-01-01 00:00:02",
    ...                                                 "2024-01-01 00:00:30", "2024-01-01 00:00:00"], utc=True)})
    >>> out = space_host_fetches(s, ["a", "a", "a", "b"], 5.0)
    >>> out["next_fetch"].dt.strftime("%H:%M:%S").tolist(), out["host_delay_s"].tolist()
    (['00:00:00', '00:00:05', '00:00:30', '00:00:00'], [0.0, 3.0, 0.0, 0.0])
    >>> out.attrs["n_host_delayed"], out.attrs["max_host_delay_s"]
    (1, 3.0)
    """
    if not isinstance(schedule, pd.DataFrame) or not {"url", "next_fetch"} <= set(schedule.columns):
        raise TypeError("`schedule` must be a DataFrame with columns 'url' and 'next_fetch' (from crawl_schedule)")
    host = pd.Series(np.asarray(hosts, dtype=object).reshape(-1), dtype=object)
    if host.size != len(schedule):
        raise ValueError(f"`hosts` has {host.size} entries but `schedule` has {len(schedule)} rows")
    missing = host.isna().to_numpy() | (host.astype(str).str.strip() == "").to_numpy()
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise ValueError(
            f"`hosts` row {i} (url {schedule['url'].iloc[i]!r}) has no host: every row needs one to be spaced"
        )
    codes, labels = pd.factorize(host.astype(str), sort=False)
    delay = _delays_ns(delay_s, np.asarray(labels, dtype=object))[codes]
    due = pd.to_datetime(schedule["next_fetch"], utc=True).to_numpy(dtype="datetime64[ns]").view(np.int64)
    order = np.lexsort((due, codes))  # by host, then by due time
    c, t, d = codes[order], due[order], delay[order]
    first = np.ones(c.size, dtype=bool)  # the first row of each host (none in an empty schedule)
    first[1:] = c[1:] != c[:-1]
    group = np.cumsum(first) - 1
    k = np.arange(c.size) - np.flatnonzero(first)[group]  # rank within the host
    reach = t[first][group].astype(np.float64) + k.astype(np.float64) * d.astype(np.float64)  # s_k >= t_1 + k·d
    late = reach > float(pd.Timestamp.max.value) - 1e6
    if late.any():
        i = int(order[np.flatnonzero(late)[0]])
        raise ValueError(
            f"page {schedule['url'].iloc[i]!r}: its host's fetches, `delay_s` apart, reach past "
            f"{pd.Timestamp.max:%Y-%m-%d}, the last time a schedule can hold (int64 nanoseconds)"
        )
    kd = k * d
    spaced = pd.Series(t - kd).groupby(c).cummax().to_numpy() + kd
    moved = np.empty_like(due)
    moved[order] = spaced - t
    out = schedule.copy()
    out["next_fetch"] = pd.to_datetime(due + moved, utc=True)
    out["host"] = host.to_numpy()
    out["host_delay_s"] = moved / 1e9
    out.attrs.update(
        n_host_delayed=int((moved > 0).sum()),
        max_host_delay_s=float(moved.max() / 1e9) if moved.size else 0.0,
        n_hosts=int(labels.size),
    )
    return out


def with_last_attempt(table: pd.DataFrame, log) -> pd.DataFrame:
    """``table`` (a page table of ``log``, same pages in the same order) with the column ``last_attempt``
    (UTC): each page's last fetch attempt in the log (``log.last_attempt``), which :func:`crawl_schedule`
    schedules from. Unchanged when the log does not say."""
    if getattr(log, "last_attempt", None) is None:
        return table
    table["last_attempt"] = pd.to_datetime(log.last_attempt, utc=True)
    return table


def nutch_seed_lines(schedule: pd.DataFrame) -> str:
    """The schedule as a Nutch seed list: ``url<TAB>nutch.fetchInterval.fixed=<seconds>`` per line.

    Apache Nutch's injector (``org.apache.nutch.crawl.Injector``, release 1.22) reads seed
    files with Hadoop's ``KeyValueTextInputFormat``: the URL is the text before the first
    TAB, and the rest is metadata, ``name=value`` pairs separated by TABs. The reserved
    name ``nutch.fetchInterval.fixed`` takes an integer number of seconds
    (``Integer.parseInt``), sets the page's fetch interval and stores it as the fixed
    interval that ``AdaptiveFetchSchedule`` does not change. The seed list carries the
    intervals, not the next fetch times: Nutch fetches a *new* URL at injection time and
    then every interval. A URL the CrawlDb already holds (every page of a log) keeps its
    record unless the injector runs with ``-update`` (the record keeps its status and
    scheduled fetch time and takes the new interval, from its next fetch on) or
    ``-overwrite`` (the record is replaced: fetched again at once, its history lost); so
    load a schedule with ``bin/nutch inject <crawldb> <seed folder> -update``.

    Parameters
    ----------
    schedule : pandas.DataFrame
        From :func:`crawl_schedule` (columns ``url`` and ``interval_h``).

    Returns
    -------
    str
        One line per page, in the schedule's order, each ending in ``\\n``.

    Raises
    ------
    ValueError
        For a URL that Nutch would not read back as it is (empty, containing a TAB, CR or
        LF, starting with ``#``, which Nutch skips as a comment, or starting or ending
        with a space or control character, which the injector trims with
        ``String.trim``, so that ``" u"``, ``"u "`` and ``"u"`` would all be ``u``), naming
        the row and the URL; or an interval that
        is not a whole number of seconds in 1..2^31 − 1.

    Examples
    --------
    >>> import pandas as pd
    >>> s = pd.DataFrame({"url": ["https://a.example/"], "interval_h": [1.5]})
    >>> nutch_seed_lines(s)
    'https://a.example/\\tnutch.fetchInterval.fixed=5400\\n'
    """
    if not isinstance(schedule, pd.DataFrame) or not {"url", "interval_h"} <= set(schedule.columns):
        raise TypeError("`schedule` must be a DataFrame with columns 'url' and 'interval_h' (from crawl_schedule)")
    urls = schedule["url"].astype(str).to_numpy()
    seconds = schedule["interval_h"].to_numpy(dtype=np.float64) * _SECONDS_PER_HOUR
    whole = np.rint(seconds)
    bad = ~(np.isfinite(seconds) & (np.abs(seconds - whole) <= 1e-6) & (whole >= 1) & (whole <= _NUTCH_MAX_SECONDS))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"`schedule` row {i} (url {urls[i]!r}): interval_h {schedule['interval_h'].iloc[i]!r} is "
            f"not a whole number of seconds in 1..{_NUTCH_MAX_SECONDS} (Nutch reads an int)"
        )
    for i, url in enumerate(urls):
        if not url.strip() or "\t" in url or "\n" in url or "\r" in url or url.strip().startswith("#"):
            raise ValueError(
                f"`schedule` row {i}: url {url!r} cannot be a Nutch seed (empty, a TAB or line break "
                "in it, or a leading '#', which Nutch skips as a comment)"
            )
        if _java_trim(url) != url:
            raise ValueError(
                f"`schedule` row {i}: url {url!r} cannot be a Nutch seed: it starts or ends with a space "
                "or control character, which Nutch's injector trims, so it would inject another URL "
                "(and merge it with any page spelled without them)"
            )
    return "".join(f"{u}\t{_NUTCH_KEY}={int(s)}\n" for u, s in zip(urls, whole))


def _java_trim(text: str) -> str:
    """``text`` as Java's ``String.trim`` leaves it: every character <= U+0020 removed at either end."""
    return text.strip("".join(map(chr, range(0x21))))


def _time_format(schedule: pd.DataFrame) -> str:
    times = pd.concat([schedule[c] for c in ("last_fetch", "last_attempt", "next_fetch") if c in schedule.columns])
    whole = (times.dt.microsecond == 0).all() and (times.dt.nanosecond == 0).all()
    return "%Y-%m-%dT%H:%M:%SZ" if whole else "%Y-%m-%dT%H:%M:%S.%fZ"


def _new_file_mode(path: Path) -> int:
    """The mode of the file being replaced, else the umask's mode of a new file (not mkstemp's 0600)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask: read from /proc where the system gives it (no change of the
    process-wide setting under other threads), else set and restored."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def write_schedule(schedule: pd.DataFrame, out, *, format: str | None = None) -> Path:
    """Write a schedule atomically (a temporary file in the same folder, then a rename).

    Parameters
    ----------
    schedule : pandas.DataFrame
        From :func:`crawl_schedule`.
    out : str or os.PathLike
        The file; a symbolic link is written through (its target is replaced). A new file
        gets the mode the umask gives, a replaced one keeps its mode.
    format : {"csv", "parquet", "nutch-seeds"}, optional
        Default: from the extension (``.csv`` or ``.parquet``). CSV times are ISO 8601
        UTC (``2024-01-01T06:00:00Z``); Parquet keeps timestamps; ``"nutch-seeds"`` is
        :func:`nutch_seed_lines`.

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    ValueError
        For an unknown format, no format and an extension other than .csv/.parquet, or
        what :func:`nutch_seed_lines` raises; nothing is written then.
    """
    path = Path(os.path.realpath(out))
    if format is None:
        format = {".csv": "csv", ".parquet": "parquet"}.get(path.suffix)
        if format is None:
            raise ValueError(f"`format` is needed for {str(out)!r}: the extension is neither .csv nor .parquet")
    if format not in SCHEDULE_FORMATS:
        raise ValueError(f"`format` must be one of {list(SCHEDULE_FORMATS)}; got {format!r}")
    text = nutch_seed_lines(schedule) if format == "nutch-seeds" else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if format == "nutch-seeds":
                assert text is not None  # made above for this format
                fh.write(text.encode("utf-8"))
            elif format == "csv":
                fh.write(
                    schedule.to_csv(index=False, date_format=_time_format(schedule), lineterminator="\n").encode(
                        "utf-8"
                    )
                )
            else:
                schedule.to_parquet(fh, index=False)
        os.chmod(tmp, _new_file_mode(path))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path
