"""The crawl-log product: a crawl log in, the per-page table, its crawl allocation and a schedule out.

One module per stage, each importing only the ones before it:

- :mod:`~changerate_bayes.crawllog.allocate`: :func:`allocate_crawls`, the crawl allocation
  of a page table within a budget;
- :mod:`~changerate_bayes.crawllog.table`: :func:`page_table` and :func:`estimate_pages`,
  one row per page (:func:`recommend_rate` chooses its rate, :func:`rate_bounds` flags the
  rates the data bound on one side only), and :class:`LogEstimates`;
- :mod:`~changerate_bayes.crawllog.fetch_schedule`: :func:`schedule_pages` (the next fetch of
  every page) and the writers :func:`write_schedule`, :func:`nutch_seed_lines`;
- :mod:`~changerate_bayes.crawllog.out_of_core`: :func:`estimate_log`, CSV and Parquet
  logs reduced bucket by bucket, in memory bounded by the pages;
- :mod:`~changerate_bayes.crawllog.dask_engine`: the same on a Dask cluster;
- :mod:`~changerate_bayes.crawllog.report`: the HTML report of a log.

One entry point per job, whatever the engine: :func:`estimate` and :func:`schedule`.

The engine (``engine=None``) is chosen by the input:

- a :class:`~changerate_bayes.io.CrawlLog`, a :class:`~changerate_bayes.CrawlHistory`
  (``estimate`` only) or a pandas DataFrame of visits: ``"pandas"``;
- a Dask DataFrame, or paths with a ``client`` (a ``distributed.Client`` or a scheduler
  address): ``"dask"``;
- paths (files or folders) of CSV or Parquet logs (the format ``format`` names, or the
  one all the files' names tell: :func:`changerate_bayes.io.common_format`):
  ``"buckets"`` for :func:`estimate` (unless ``keep_log`` asks for the visits),
  ``"pandas"`` for :func:`schedule`;
- paths of other formats (CDX, WARC, Open Terms Archive): ``"pandas"``.

Every engine gives the same table and schedule (the pages' rows depend on their own
visits only).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from ..history import CrawlHistory
from ..io import CrawlLog, as_paths, common_format, log_files, log_signal_rows, read_frame, read_log
from ..scheduling import check_host_budgets
from . import dask_engine
from .allocate import MAX_INTERVAL_FACTOR, RECOMMENDED_POLICY, allocate_crawls, url_hosts
from .fetch_schedule import (
    MAX_INTERVAL_H,
    SCHEDULE_COLUMNS,
    SCHEDULE_FORMATS,
    LogSchedule,
    crawl_schedule,
    nutch_seed_lines,
    schedule_pages,
    space_host_fetches,
    write_schedule,
)
from .out_of_core import DEFAULT_MEMORY_BYTES, _estimate_log, estimate_log
from .signal_log import (
    SIGNAL_COLUMNS,
    SIGNAL_DRAWS,
    SIGNAL_SCHEDULE_COLUMNS,
    LogSignals,
    _signal_means,
    effective_delay,
    expected_fetch_interval,
    log_signals,
    part_signals,
    signal_columns,
    signal_input,
    signal_schedule,
    unique_signals,
    with_signal_columns,
)
from .table import (
    IDENTIFIED_MIN,
    PAGE_COLUMNS,
    RATE_COLUMNS,
    LogEstimates,
    LogOptions,
    estimate_pages,
    page_table,
    rate_bounds,
    recommend_rate,
    warn_table_notes,
)

__all__ = [
    "ENGINES",
    "IDENTIFIED_MIN",
    "MAX_INTERVAL_FACTOR",
    "MAX_INTERVAL_H",
    "PAGE_COLUMNS",
    "RATE_COLUMNS",
    "RECOMMENDED_POLICY",
    "SCHEDULE_COLUMNS",
    "SCHEDULE_FORMATS",
    "SIGNAL_COLUMNS",
    "SIGNAL_DRAWS",
    "SIGNAL_SCHEDULE_COLUMNS",
    "DEFAULT_MEMORY_BYTES",
    "LogEstimates",
    "LogSchedule",
    "LogSignals",
    "allocate_crawls",
    "crawl_schedule",
    "effective_delay",
    "estimate",
    "estimate_log",
    "estimate_pages",
    "expected_fetch_interval",
    "log_signals",
    "nutch_seed_lines",
    "page_table",
    "rate_bounds",
    "recommend_rate",
    "schedule",
    "schedule_pages",
    "signal_columns",
    "signal_schedule",
    "space_host_fetches",
    "url_hosts",
    "write_schedule",
]

#: The engines of :func:`estimate` (:func:`schedule` runs on "pandas" and "dask").
ENGINES = ("pandas", "buckets", "dask")
#: Pages whose visits the Dask engine keeps for a report's diagnostics, the busiest first.
_BUSIEST = 6


def _is_dask_frame(source) -> bool:
    return type(source).__module__.split(".")[0] in ("dask", "dask_expr")


def _choose_engine(source, engine, client, *, fmt, keep_log, job) -> str:
    """The engine ``engine`` or, for None, the one the input calls for (module docstring)."""
    allowed = ENGINES if job == "estimate" else ("pandas", "dask")
    if engine is not None and engine not in allowed:
        raise ValueError(f"`engine` must be None or one of {list(allowed)}; got {engine!r}")
    in_memory = isinstance(source, (CrawlLog, CrawlHistory, pd.DataFrame))
    if in_memory and engine not in (None, "pandas"):
        raise ValueError(
            f"`engine` {engine!r} reads log files or a Dask DataFrame; a {type(source).__name__} "
            "is estimated by the pandas engine"
        )
    if _is_dask_frame(source) and engine not in (None, "dask"):
        raise ValueError(f"a Dask DataFrame is read by the Dask engine; got `engine` {engine!r}")
    if engine is not None:
        return engine
    if in_memory:
        return "pandas"
    if _is_dask_frame(source) or client is not None:
        return "dask"
    return "buckets" if job == "estimate" and fmt in ("csv", "parquet") and not keep_log else "pandas"


def _check_source_options(fmt, *, columns, ota_changed) -> None:
    if ota_changed is not None and fmt != "ota":
        raise ValueError(
            f"`ota_changed` applies to Open Terms Archive logs (a CSV whose header holds "
            f"changed_filtered and changed_raw); these logs are {fmt!r}"
        )
    if columns and fmt not in ("csv", "parquet", "auto"):
        raise ValueError(f"`columns` maps the columns of CSV and Parquet logs; these logs are {fmt!r}")


def _log_of(source, opts):
    """The CrawlLog of an in-memory source or of log files (the pandas engine's reading) with the
    options ``opts``."""
    if isinstance(source, (CrawlLog, CrawlHistory)):
        return source
    if isinstance(source, pd.DataFrame):
        return read_frame(source, columns=opts.columns, change_from=opts.change_from)
    return read_log(
        source,
        format=opts.format,
        ota_changed=opts.ota_changed or "filtered",
        columns=opts.columns,
        change_from=opts.change_from,
        page_key=opts.page_key,
    )


def _files_of(source, format):
    """The files of a log given as paths, and its one format (:func:`changerate_bayes.io.common_format`)."""
    files, buckets = log_files(source)
    as_paths(files)  # each an existing file, none given twice
    return files, buckets, common_format(files) if format == "auto" else format


def _prepared(source, opts, engine, client, *, keep_log, job):
    """The input of :func:`estimate` and :func:`schedule`: (engine, files and buckets of a log given
    as paths or None, ``opts`` with the log's format)."""
    files = buckets = None
    if not isinstance(source, (CrawlLog, CrawlHistory, pd.DataFrame)) and not _is_dask_frame(source):
        files, buckets, fmt = _files_of(source, opts.format)
        _check_source_options(fmt, columns=opts.columns, ota_changed=opts.ota_changed)
        opts = dataclasses.replace(opts, format=fmt)
    engine = _choose_engine(source, engine, client, fmt=opts.format, keep_log=keep_log, job=job)
    return engine, files, buckets, opts


def _dask_input(source, files, opts):
    """The Dask engine's input: (Dask DataFrame, or None to read the ``files`` one per task; the
    options to read the frame with; its name in messages)."""
    if files is None:
        return source, opts, "<dask dataframe>"
    ddf = dask_engine.dask_frame(files, opts.format)
    if opts.format == "ota":
        columns = {"changed": f"changed_{opts.ota_changed or 'filtered'}", **(opts.columns or {})}
        opts = dataclasses.replace(opts, columns=columns, change_from="changed")
    return ddf, opts, ", ".join(map(str, files))


def _signals_of(signals, source, files, opts, engine):
    """The job's signals (:func:`~changerate_bayes.crawllog.signal_log.signal_input`; a Dask DataFrame's
    signal rows found by its workers), or None."""
    if isinstance(source, CrawlHistory) and signals is not None:
        raise TypeError("`signals` need the log's visit times: give log files, a CrawlLog or a data frame of visits")
    frame_rows = (isinstance(source, pd.DataFrame) or _is_dask_frame(source)) and "signal" in source.columns
    if signals is None and not frame_rows:  # only the log files' own signal rows, if any (most logs have none)
        rows = None if files is None else log_signal_rows(files, opts.format, columns=opts.columns)
        return rows if rows is not None and len(rows) else None
    sig = signal_input(
        signals,
        source=source if isinstance(source, pd.DataFrame) else None,
        files=files,
        fmt=opts.format,
        columns=opts.columns,
    )
    if _is_dask_frame(source) and "signal" in source.columns:
        rows = dask_engine.frame_signal_rows(source, opts.columns)
        if len(rows):  # a signal column without a signal: a log without signals
            sig = rows if sig is None else _concat_signals(sig, rows)
    return sig


def _concat_signals(a, b):
    out = pd.concat([a, b], ignore_index=True)
    out.attrs["sources"] = (*a.attrs["sources"], *b.attrs["sources"])
    return out


def _with_signals(res, sig, parts, *, level, rng):
    """``res`` with its table's signal columns and its ``signal_audit`` (unchanged without signals)."""
    if sig is None:
        return res
    matched = log_signals(res.table, parts, sig)
    columns = signal_columns(matched, level=level, rng=rng)
    return dataclasses.replace(
        res, table=with_signal_columns(res.table, columns, matched.audit), signal_audit=matched.audit
    )


def _signal_schedule(table, parts, sig, *, level, rng):
    """The schedule ``table`` moved by its pages' signals (:func:`signal_schedule`), and their match."""
    pages = pd.DataFrame({"page": table["url"], "last_visit": table["last_fetch"]})
    matched = log_signals(pages, parts, sig)
    columns = _signal_means(matched, rng=rng)  # the schedule reads posterior means only
    return signal_schedule(table, columns, now=matched.log_end), matched


def estimate(
    source,
    *,
    engine=None,
    format="auto",
    columns=None,
    change_from="auto",
    ota_changed=None,
    page_key="url",
    methods=(),
    prior=None,
    budget=None,
    level=0.9,
    posterior_method="grid",
    keep_log=False,
    client=None,
    memory_bytes=DEFAULT_MEMORY_BYTES,
    hosts=None,
    host_budgets=None,
    signals=None,
    rng=None,
) -> LogEstimates:
    """The per-page table of a crawl log (rates, intervals, crawl allocation) on any engine.

    Parameters
    ----------
    source : path, list of paths, CrawlLog, CrawlHistory, pandas.DataFrame or dask DataFrame
        Log files or folders (read as one log; a folder stands for every file under it),
        a log already read, or the visits as a data frame (columns of
        :func:`changerate_bayes.io.read_csv`).
    engine : {"pandas", "buckets", "dask"}, optional
        Default: chosen by ``source`` (see :mod:`changerate_bayes.crawllog`).
    format : {"auto", "csv", "parquet", "cdx", "warc", "ota"}, default "auto"
        The log format of files; "auto" decides from the file names (and first bytes),
        which all files must share (:func:`changerate_bayes.io.common_format`).
    columns, change_from
        As :func:`changerate_bayes.io.read_csv` (CSV and Parquet logs, data frames).
    ota_changed : {"filtered", "raw"}, optional
        Open Terms Archive logs: which change column is I_k (default "filtered").
    page_key : {"url", "surt"}, default "url"
        CDX logs, as :func:`changerate_bayes.io.read_cdx`.
    methods, prior, budget, level, posterior_method
        As :func:`estimate_pages` (``budget`` in crawls per day).
    keep_log : bool, default False
        Keep the visits in ``result.log`` (for a report's diagnostics): the pandas
        engine keeps the whole log, the Dask engine reading a data frame the visits of
        the 6 busiest pages (most changes, then highest rate); the default engine of CSV
        and Parquet files is then "pandas".
    client : distributed.Client or str, optional
        The Dask engine's client, or a scheduler address (default: the current client,
        else a local cluster of 2 workers, closed when done).
    memory_bytes : float, default 256 MiB
        The buckets engine's rows held in memory (:func:`estimate_log`).
    hosts : "url" or mapping page -> host, optional
        The host of each page for ``host_budgets`` (default: the host name of its URL), as
        :func:`allocate_crawls`.
    host_budgets : float or mapping host -> float, optional
        Per-host politeness caps in crawls per day (one for every host, or per host): the
        allocation keeps every host within its cap (:func:`allocate_crawls`; the table
        gains ``host`` and ``host_at_cap``). Default: no caps.
    signals : path, list of paths or pandas.DataFrame, optional
        Change-indicating signals: files with the columns ``page``, ``signal_time`` and
        optionally ``source`` (CSV or Parquet, :func:`changerate_bayes.io.read_signals`), or
        a data frame with the columns ``page`` and ``signal_time``. The log's own rows whose
        ``signal`` column is 1 (CSV, Parquet, a data frame) are signals too, read with
        these. With signals the table gains the columns :data:`SIGNAL_COLUMNS`
        (:func:`signal_columns`: each page's signal recall and precision with their
        ``level`` intervals, Gibbs sampling under the pooled prior) and the result a
        ``signal_audit``; the buckets engine counts each bucket's signals as it reduces
        it. Without any signal nothing changes.
    rng : int or numpy.random.Generator, optional
        Seed of the signals' Gibbs sampler (used only with signals).

    Returns
    -------
    LogEstimates
        ``table``, ``audit``, ``engine``, the engine's facts and, with signals,
        ``signal_audit``.

    Raises
    ------
    TypeError, ValueError
        For a bad argument (naming it), an engine that does not read ``source``, or what
        the readers and :func:`estimate_pages` raise (CrawlLogError naming the file, line
        and column).

    Examples
    --------
    >>> import pandas as pd
    >>> from changerate_bayes.crawllog import estimate
    >>> visits = pd.DataFrame({"page": ["a"] * 4, "changed": [0, 1, 0, 0],
    ...                        "fetch_time": pd.date_range("2024-01-01", periods=4, freq="6h", tz="UTC")})
    >>> res = estimate(visits, budget=2.0)
    >>> res.engine, res.table["n_changes"].tolist()
    ('pandas', [1])
    """

    opts = LogOptions.of(locals())
    if host_budgets is not None:
        check_host_budgets(host_budgets, np.empty(0, dtype=object))  # before reading the log
    engine, files, buckets, opts = _prepared(source, opts, engine, client, keep_log=keep_log, job="estimate")
    fmt = None if files is None else opts.format
    sig = _signals_of(signals, source, files, opts, engine)
    pairs = None if sig is None else unique_signals(sig)
    if engine == "buckets":
        parts: list = []
        res = _estimate_log(files, opts, memory_bytes=memory_bytes, signals=pairs, signal_parts=parts)
        res = _with_signals(res, sig, parts, level=level, rng=rng)
        warn_table_notes(res.table)
        return dataclasses.replace(res, format=fmt)
    if engine == "pandas":
        log = _log_of(source if files is None else files, opts)
        table = opts.page_table(log)
        warn_table_notes(table)
        audit = log.audit if isinstance(log, CrawlLog) else None
        res = LogEstimates(table=table, audit=audit, engine="pandas", log=log if keep_log else None, format=fmt)
        if pairs is None:
            return res
        if not isinstance(log, CrawlLog):
            raise TypeError(
                "`signals` need the log's visit times: give log files, a CrawlLog or a data frame of visits"
            )
        return _with_signals(res, sig, [part_signals(log, *pairs)], level=level, rng=rng)
    ddf, frame_opts, name = _dask_input(source, files, opts)
    parts = []
    with dask_engine.dask_client(client) as dask:
        if ddf is None:
            res, _ = dask_engine._estimate_files(files, buckets, opts, client=dask, signals=pairs, signal_parts=parts)
            res = _with_signals(res, sig, parts, level=level, rng=rng)
            warn_table_notes(res.table)
            return dataclasses.replace(res, format=fmt)
        res, _ = dask_engine._estimate_frame(
            ddf,
            frame_opts,
            npartitions=max(ddf.npartitions, 2),
            source=name,
            client=dask,
            signals=pairs,
            signal_parts=parts,
        )
        res = _with_signals(res, sig, parts, level=level, rng=rng)
        if not keep_log:
            return dataclasses.replace(res, format=fmt)
        top = res.table.sort_values(["n_changes", "rate_per_day"], ascending=False).head(_BUSIEST)["page"]
        page_col = (frame_opts.columns or {}).get("page", "page")
        sub = ddf[ddf[page_col].isin(list(top))].compute()
        log = read_frame(sub.reset_index(drop=True), columns=frame_opts.columns, change_from=frame_opts.change_from)
    return dataclasses.replace(res, log=log, format=fmt)


def schedule(
    source,
    *,
    engine=None,
    format="auto",
    columns=None,
    change_from="auto",
    ota_changed=None,
    page_key="url",
    budget=None,
    prior=None,
    level=0.9,
    max_interval_h=MAX_INTERVAL_H,
    client=None,
    hosts=None,
    host_budgets=None,
    signals=None,
    rng=None,
) -> LogSchedule:
    """The crawl schedule of a crawl log (every page's next fetch) on any engine.

    Parameters
    ----------
    source : path, list of paths, CrawlLog, pandas.DataFrame or dask DataFrame
        As :func:`estimate`.
    engine : {"pandas", "dask"}, optional
        Default: chosen by ``source`` (see :mod:`changerate_bayes.crawllog`).
    format, columns, change_from, ota_changed, page_key, client
        As :func:`estimate`.
    budget, prior, level, max_interval_h, hosts, host_budgets
        As :func:`schedule_pages` (``host_budgets``: per-host caps in crawls per day,
        :func:`allocate_crawls`).
    signals : path, list of paths or pandas.DataFrame, optional
        Change-indicating signals, as :func:`estimate` (the log's own ``signal`` rows
        too). With signals each page's next fetch follows the signal-aware index
        (:func:`signal_schedule`): last fetch + (I − n·J)/(1 − q̂), I the allocation's
        interval, n the signals since the page's last visit, J = log((q̂Δ̂ + ν̂)/ν̂)/Δ̂, due at
        the log's end if that is past; the schedule gains :data:`SIGNAL_SCHEDULE_COLUMNS`
        (``fetch_trigger``: ``"on_signal"``, ``"index"`` or ``"both"``) and its ``attrs`` the
        counts and ``crawls_per_day_with_signals``, the expected crawl rate (the budget
        counts index crawls).
    rng : int or numpy.random.Generator, optional
        Seed of the signals' Gibbs sampler (used only with signals).

    Returns
    -------
    LogSchedule
        ``schedule`` (as :func:`crawl_schedule`; the same on every engine), ``audit``,
        ``engine`` and, with signals, ``signal_audit``.

    Raises
    ------
    TypeError, ValueError
        As :func:`estimate` and :func:`crawl_schedule`.

    Examples
    --------
    >>> import pandas as pd
    >>> from changerate_bayes.crawllog import schedule
    >>> visits = pd.DataFrame({"page": ["a"] * 4, "changed": [0, 1, 0, 0],
    ...                        "fetch_time": pd.date_range("2024-01-01", periods=4, freq="6h", tz="UTC")})
    >>> schedule(visits, budget=2.0).schedule["interval_h"].tolist()
    [12.0]
    """

    opts = LogOptions.of(locals())
    if isinstance(source, CrawlHistory):
        raise TypeError(
            "`source` must be log files, a CrawlLog or a data frame of visits: a schedule needs the "
            "log's fetch times, which a CrawlHistory does not hold"
        )
    engine, files, buckets, opts = _prepared(source, opts, engine, client, keep_log=False, job="schedule")
    sig = _signals_of(signals, source, files, opts, engine)
    if engine == "pandas":
        log = _log_of(source if files is None else files, opts)
        table = schedule_pages(
            log,
            budget=budget,
            prior=prior,
            level=level,
            max_interval_h=max_interval_h,
            hosts=hosts,
            host_budgets=host_budgets,
        )
        if sig is None:
            return LogSchedule(schedule=table, audit=log.audit, engine="pandas")
        table, matched = _signal_schedule(table, [part_signals(log, *unique_signals(sig))], sig, level=level, rng=rng)
        return LogSchedule(schedule=table, audit=log.audit, engine="pandas", signal_audit=matched.audit)
    ddf, frame_opts, name = _dask_input(source, files, opts)
    pairs = None if sig is None else unique_signals(sig)
    parts: list = []
    with dask_engine.dask_client(client) as dask:
        if ddf is None:  # one task per file
            table, audit = dask_engine._schedule_files(
                files, buckets, opts, max_interval_h=max_interval_h, client=dask, signals=pairs, signal_parts=parts
            )
        else:
            table, audit = dask_engine._schedule_frame(
                ddf,
                frame_opts,
                max_interval_h=max_interval_h,
                npartitions=max(ddf.npartitions, 2),
                source=name,
                client=dask,
                signals=pairs,
                signal_parts=parts,
            )
    if sig is None:
        return LogSchedule(schedule=table, audit=audit, engine="dask")
    table, matched = _signal_schedule(table, parts, sig, level=level, rng=rng)
    return LogSchedule(schedule=table, audit=audit, engine="dask", signal_audit=matched.audit)
