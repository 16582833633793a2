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
from ..io import CrawlLog, as_paths, common_format, log_files, read_frame, read_log
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
from .out_of_core import DEFAULT_MEMORY_BYTES, estimate_log
from .table import (
    IDENTIFIED_MIN,
    PAGE_COLUMNS,
    RATE_COLUMNS,
    LogEstimates,
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
    "DEFAULT_MEMORY_BYTES",
    "LogEstimates",
    "LogSchedule",
    "allocate_crawls",
    "crawl_schedule",
    "estimate",
    "estimate_log",
    "estimate_pages",
    "nutch_seed_lines",
    "page_table",
    "rate_bounds",
    "recommend_rate",
    "schedule",
    "schedule_pages",
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


def _log_of(source, *, fmt, columns, change_from, ota_changed, page_key):
    """The CrawlLog of an in-memory source or of log files (the pandas engine's reading)."""
    if isinstance(source, (CrawlLog, CrawlHistory)):
        return source
    if isinstance(source, pd.DataFrame):
        return read_frame(source, columns=columns, change_from=change_from)
    return read_log(
        source,
        format=fmt,
        ota_changed=ota_changed or "filtered",
        columns=columns,
        change_from=change_from,
        page_key=page_key,
    )


def _files_of(source, format):
    """The files of a log given as paths, and its one format (:func:`changerate_bayes.io.common_format`)."""
    files, buckets = log_files(source)
    as_paths(files)  # each an existing file, none given twice
    return files, buckets, common_format(files) if format == "auto" else format


def _dask_input(files, fmt, columns, ota_changed):
    """(Dask DataFrame or None, columns, change rule) of the Dask engine for ``files``."""
    ddf = dask_engine.dask_frame(files, fmt)
    if fmt == "ota":
        return ddf, {"changed": f"changed_{ota_changed or 'filtered'}", **(columns or {})}, "changed"
    return ddf, columns, "auto"


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

    Returns
    -------
    LogEstimates
        ``table``, ``audit``, ``engine`` and the engine's facts.

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
    options = dict(
        engine=engine,
        format=format,
        columns=columns,
        change_from=change_from,
        ota_changed=ota_changed,
        page_key=page_key,
        methods=methods,
        prior=prior,
        budget=budget,
        level=level,
        posterior_method=posterior_method,
        keep_log=keep_log,
        client=client,
        memory_bytes=memory_bytes,
    )
    if host_budgets is None:
        return _estimate(source, **options)
    check_host_budgets(host_budgets, np.empty(0, dtype=object))  # before reading the log
    res = _estimate(source, **options)
    # the engines allocate without caps; the allocation under caps replaces it
    return dataclasses.replace(res, table=allocate_crawls(res.table, budget, hosts=hosts, host_budgets=host_budgets))


def _estimate(
    source,
    *,
    engine,
    format,
    columns,
    change_from,
    ota_changed,
    page_key,
    methods,
    prior,
    budget,
    level,
    posterior_method,
    keep_log,
    client,
    memory_bytes,
) -> LogEstimates:
    """:func:`estimate` without host caps."""
    fmt, files, buckets = format, None, None
    if not isinstance(source, (CrawlLog, CrawlHistory, pd.DataFrame)) and not _is_dask_frame(source):
        files, buckets, fmt = _files_of(source, format)
        _check_source_options(fmt, columns=columns, ota_changed=ota_changed)
    engine = _choose_engine(source, engine, client, fmt=fmt, keep_log=keep_log, job="estimate")
    if engine == "buckets":
        res = estimate_log(
            files,
            format=fmt,
            columns=columns,
            change_from=change_from,
            methods=methods,
            prior=prior,
            budget=budget,
            level=level,
            posterior_method=posterior_method,
            memory_bytes=memory_bytes,
        )
        return dataclasses.replace(res, format=fmt)
    if engine == "pandas":
        log = _log_of(
            source if files is None else files,
            fmt=fmt,
            columns=columns,
            change_from=change_from,
            ota_changed=ota_changed,
            page_key=page_key,
        )
        table = estimate_pages(
            log, methods=methods, prior=prior, budget=budget, level=level, posterior_method=posterior_method
        )
        audit = log.audit if isinstance(log, CrawlLog) else None
        return LogEstimates(
            table=table,
            audit=audit,
            engine="pandas",
            log=log if keep_log else None,
            format=None if files is None else fmt,
        )
    options = dict(methods=tuple(methods), prior=prior, budget=budget, level=level, posterior_method=posterior_method)
    ddf, change = source, change_from
    if files is not None:
        ddf, columns, change = _dask_input(files, fmt, columns, ota_changed)
    with dask_engine.dask_client(client) as dask:
        if ddf is None:
            res, _ = dask_engine._estimate_files(
                files,
                buckets,
                format=fmt,
                columns=columns,
                change_from=change_from,
                partitioned="auto",
                page_key=page_key,
                npartitions=None,
                chunk_rows=None,
                client=dask,
                **options,
            )
            warn_table_notes(res.table)
            return dataclasses.replace(res, format=fmt)
        source_name = ", ".join(map(str, files)) if files is not None else "<dask dataframe>"
        res = dask_engine.estimate_pages_dask(
            ddf,
            columns=columns,
            change_from=change,
            source=source_name,
            npartitions=max(ddf.npartitions, 2),
            client=dask,
            **options,
        )
        if not keep_log:
            return dataclasses.replace(res, format=None if files is None else fmt)
        top = res.table.sort_values(["n_changes", "rate_per_day"], ascending=False).head(_BUSIEST)["page"]
        page_col = (columns or {}).get("page", "page")
        sub = ddf[ddf[page_col].isin(list(top))].compute()
        log = read_frame(sub.reset_index(drop=True), columns=columns, change_from=change)
    return dataclasses.replace(res, log=log, format=None if files is None else fmt)


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

    Returns
    -------
    LogSchedule
        ``schedule`` (as :func:`crawl_schedule`; the same on every engine), ``audit`` and
        ``engine``.

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
    if isinstance(source, CrawlHistory):
        raise TypeError(
            "`source` must be log files, a CrawlLog or a data frame of visits: a schedule needs the "
            "log's fetch times, which a CrawlHistory does not hold"
        )
    fmt, files, buckets = format, None, None
    if not isinstance(source, (CrawlLog, pd.DataFrame)) and not _is_dask_frame(source):
        files, buckets, fmt = _files_of(source, format)
        _check_source_options(fmt, columns=columns, ota_changed=ota_changed)
    engine = _choose_engine(source, engine, client, fmt=fmt, keep_log=False, job="schedule")
    if engine == "pandas":
        log = _log_of(
            source if files is None else files,
            fmt=fmt,
            columns=columns,
            change_from=change_from,
            ota_changed=ota_changed,
            page_key=page_key,
        )
        table = schedule_pages(
            log,
            budget=budget,
            prior=prior,
            level=level,
            max_interval_h=max_interval_h,
            hosts=hosts,
            host_budgets=host_budgets,
        )
        return LogSchedule(schedule=table, audit=log.audit, engine="pandas")
    ddf, change = source, change_from
    if files is not None:
        ddf, columns, change = _dask_input(files, fmt, columns, ota_changed)
    with dask_engine.dask_client(client) as dask:
        if ddf is None:  # one task per file
            table, audit = dask_engine._schedule_files(
                files,
                buckets,
                format=fmt,
                columns=columns,
                change_from=change_from,
                page_key=page_key,
                budget=budget,
                prior=prior,
                level=level,
                max_interval_h=max_interval_h,
                client=dask,
                hosts=hosts,
                host_budgets=host_budgets,
            )
        else:
            source_name = ", ".join(map(str, files)) if files is not None else "<dask dataframe>"
            table, audit = dask_engine.schedule_pages_dask(
                ddf,
                columns=columns,
                change_from=change,
                budget=budget,
                prior=prior,
                level=level,
                max_interval_h=max_interval_h,
                source=source_name,
                npartitions=max(ddf.npartitions, 2),
                client=dask,
                hosts=hosts,
                host_budgets=host_budgets,
            )
    return LogSchedule(schedule=table, audit=audit, engine="dask")
