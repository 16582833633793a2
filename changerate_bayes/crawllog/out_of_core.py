"""The per-page table straight from crawl-log files, in memory bounded by the pages, not the visits."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from ..io import (
    BUCKET_ROWS,
    DEFAULT_CHUNK_ROWS,
    FORMATS,
    Audit,
    CrawlLogError,
    PageBuckets,
    TabularScan,
    as_paths,
    bucket_count,
    check_chunk_rows,
    check_columns,
    check_scan_rows,
    common_format,
    csv_rows_estimate,
    no_pages_error,
    parquet_rows,
    read_log,
    reduce_buckets,
    scan_csv,
    scan_parquet,
)
from .allocate import check_budget
from .signal_log import part_signals
from .table import LogEstimates, LogOptions, _check_methods, concat_part_tables, page_table, warn_table_notes

__all__ = ["estimate_log", "DEFAULT_MEMORY_BYTES"]

#: Bytes of compact rows held in memory before the buckets are appended to files.
DEFAULT_MEMORY_BYTES = 256 * 2**20


def _check_rows(value, name) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"`{name}` must be an int; got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"`{name}` must be >= 1; got {value}")
    return value


def estimate_log(
    paths,
    *,
    format="auto",
    columns=None,
    change_from="auto",
    methods=(),
    prior=None,
    budget=None,
    level=0.9,
    posterior_method="grid",
    memory_bytes=DEFAULT_MEMORY_BYTES,
    bucket_rows=None,
    chunk_rows=None,
    folder=None,
) -> LogEstimates:
    """:func:`changerate_bayes.estimate_pages` of CSV or Parquet crawl logs, bucket by bucket.

    The files are read in chunks; each chunk is reduced to compact columns (about 35
    bytes a row) and its rows scattered into buckets by page (every row of a page in the
    same bucket, in file order), held in memory up to ``memory_bytes`` and appended to
    temporary files beyond it. Each bucket in turn then gets the readers' change rules
    (:mod:`changerate_bayes.io`) and the per-page estimates; only its rows of the table
    are kept. The crawl allocation, which couples the pages through the budget, runs on
    the whole table at the end. Every page's row equals the one of
    ``estimate_pages(read_log(paths))`` (the rules and the estimates of a page depend on
    its own visits only), and so does the audit.

    Parameters
    ----------
    paths : path or list of paths
        One log or several read as one.
    format : {"auto", "csv", "parquet"}, default "auto"
        Other formats (CDX, WARC, OTA) go through :func:`changerate_bayes.io.read_log`
        and :func:`changerate_bayes.estimate_pages` (memory then grows with the visits).
    columns, change_from
        As :func:`changerate_bayes.io.read_csv`.
    methods, prior, budget, level, posterior_method
        As :func:`changerate_bayes.estimate_pages` (``budget`` in crawls per day).
    memory_bytes : float, default 256 MiB
        Compact rows held in memory before they go to temporary files.
    bucket_rows : int, optional
        Rows per bucket aimed at (default 2·10^6; the number of buckets comes from the
        Parquet footers' row counts, or from the CSV files' sizes).
    chunk_rows : int, optional
        Rows read at a time (default :data:`changerate_bayes.io.DEFAULT_CHUNK_ROWS`).
    folder : path, optional
        Where the temporary files go (default: the system's temporary folder); they
        are removed before the function returns, also on error.

    Returns
    -------
    LogEstimates
        The table, the audit, the number of buckets and the bytes spilled to disk.
        ``table.attrs["warnings"]`` holds the estimators' warnings, each check once (the
        crawling-model checks run per bucket, so their pooled statistics describe the
        pages of the first bucket that failed it, and the note says how many did).

    Raises
    ------
    CrawlLogError (a ValueError)
        As the readers: naming the file, line (row) and column of a bad value; or no
        page with two usable visits.
    TypeError, ValueError
        As :func:`changerate_bayes.estimate_pages` for the estimation arguments, or a
        ``memory_bytes`` < 0 or ``bucket_rows`` < 1.

    Notes
    -----
    Peak memory: the page labels and the table (O(pages)), ``memory_bytes`` of held
    rows, one chunk being read, and the work arrays of one bucket (about 200 bytes per
    row of the bucket, so ~0.4 GB at the default ``bucket_rows``).

    Examples
    --------
    >>> import os, tempfile
    >>> from changerate_bayes.crawllog import estimate_log
    >>> text = "page,fetch_time,digest\\n" + "".join(
    ...     f"{p},2024-01-{d:02d}T00:00Z,{p}{d // 3}\\n" for p in "ab" for d in range(1, 10))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "log.csv")
    ...     _ = open(path, "w").write(text)
    ...     res = estimate_log(path, methods=["naive"], budget=2.0)
    >>> res.table[["page", "n_crawls", "n_changes"]].values.tolist()
    [['a', 8, 3], ['b', 8, 3]]
    >>> res.audit.rows_read
    18
    """
    opts = LogOptions.of(locals())
    res = _estimate_log(
        as_paths(paths), opts, memory_bytes=memory_bytes, bucket_rows=bucket_rows, chunk_rows=chunk_rows, folder=folder
    )
    warn_table_notes(res.table)
    return res


def _estimate_log(
    files,
    opts: LogOptions,
    *,
    memory_bytes,
    bucket_rows=None,
    chunk_rows=None,
    folder=None,
    signals=None,
    signal_parts: list | None = None,
):
    """:func:`estimate_log` of the listed ``files`` with the options ``opts`` (its allocation within
    their host caps), without issuing the table's warnings. With ``signals`` (a pair: page labels and
    UTC ns, from :func:`~changerate_bayes.crawllog.signal_log.unique_signals`) every bucket's
    :func:`~changerate_bayes.crawllog.signal_log.part_signals` is appended to ``signal_parts``."""
    format, columns, change_from = opts.format, opts.columns, opts.change_from
    opts = dataclasses.replace(opts, methods=_check_methods(opts.methods), budget=check_budget(opts.budget))
    if not isinstance(format, str) or format not in FORMATS:
        raise CrawlLogError(f"{files[0]}: unknown format {format!r}; choose one of {list(FORMATS)}")
    if format == "auto":
        format = common_format(files)
    chunk_rows = check_chunk_rows(DEFAULT_CHUNK_ROWS if chunk_rows is None else chunk_rows)
    bucket_rows = _check_rows(BUCKET_ROWS if bucket_rows is None else bucket_rows, "bucket_rows")
    if isinstance(memory_bytes, bool) or not isinstance(memory_bytes, (int, float)) or not memory_bytes >= 0:
        raise ValueError(f"`memory_bytes` must be a number >= 0; got {memory_bytes!r}")
    if format not in ("csv", "parquet"):
        log = read_log(files, format=format, columns=columns, change_from=change_from, chunk_rows=chunk_rows)
        if signals is not None and signal_parts is not None:
            signal_parts.append(part_signals(log, *signals))
        return LogEstimates(table=opts.page_table(log), audit=log.audit, engine="pandas")
    mapping = check_columns(columns)
    rows = parquet_rows(files) if format == "parquet" else csv_rows_estimate(files)
    with PageBuckets(bucket_count(rows, bucket_rows), memory_bytes=memory_bytes, folder=folder) as store:
        scan = TabularScan(files, store)
        if format == "parquet":
            scan_parquet(scan, mapping=mapping, change_from=change_from, chunk_rows=chunk_rows)
        else:
            scan_csv(scan, mapping=mapping, change_from=change_from, chunk_rows=chunk_rows)
        check_scan_rows(scan)
        labels = np.asarray(scan.labels, dtype=object)
        audits, tables, codes = [], [], []
        with warnings.catch_warnings(record=True):  # page_table gathers them in attrs
            warnings.simplefilter("always")
            for c, part in reduce_buckets(store, change_from=scan.kind, sources=files):
                audits.append(part.audit)
                if part.history is None:
                    continue
                tables.append(page_table(part, **opts.estimation))
                codes.append(c)
                if signals is not None and signal_parts is not None:  # the bucket's pages' signals
                    signal_parts.append(part_signals(part, *signals, pages=labels[c]))
        n_buckets, spilled = store.n_buckets, store.spilled_bytes
    audit = Audit.combine(audits, sources=tuple(str(s) for s in files))
    if not tables:
        raise no_pages_error(audit)
    table = concat_part_tables(tables, codes)
    table["page"] = labels[np.sort(np.concatenate(codes), kind="stable")]
    return LogEstimates(
        table=opts.allocate(table),
        audit=audit,
        engine="buckets",
        n_parts=n_buckets,
        spilled_bytes=spilled,
    )
