"""The per-page table and the schedule on a Dask cluster: each page's visits in one task, the pandas engine's code per task.

Log files that already partition the pages are read and reduced by one task per group
of files; other log files are read one per task and their rows moved between workers
by page; a Dask DataFrame is shuffled by page. Every task runs single-threaded
(:mod:`changerate_bayes.crawllog._dask_tasks`). The schedules
(:func:`~changerate_bayes.crawllog.schedule` with ``engine="dask"``) also send back each page's
:func:`~changerate_bayes.bayes.posterior_history` from the same tasks, so every file is
read once.

Dask and distributed are imported inside the functions that use them: they are optional
dependencies, and ``import changerate_bayes.crawllog`` does not load them.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .._upstream import quiet_dask_logs
from ..bayes import posterior_history
from ..history import CrawlHistory
from ..io import (
    COMPACT_COLUMNS,
    DECOMPRESSION_ERRORS,
    Audit,
    CrawlLogError,
    build_log,
    check_columns,
    check_complete,
    check_field_counts,
    check_kinds,
    check_page_key,
    check_time_kinds,
    column_plan,
    compact_file,
    decompression_error,
    detect_format,
    different_columns_message,
    log_files,
    merge_kinds,
    merge_pieces,
    mixed_formats_error,
    page_hashes,
    read_frame,
    refuse_surt_for_warc,
    signal_flags,
    split_piece,
)
from ._dask_tasks import read_reduce_group, task_settings
from .fetch_schedule import MAX_INTERVAL_H, _check_max_interval, crawl_schedule, with_last_attempt
from .signal_log import part_signals, signal_table
from .table import LogEstimates, LogOptions, concat_part_tables, page_table, warn_table_notes

__all__ = [
    "ClusterEstimates",
    "DASK_FORMATS",
    "dask_client",
    "dask_frame",
    "estimate_files_dask",
    "estimate_pages_dask",
    "per_page_partitions",
    "schedule_files_dask",
    "schedule_pages_dask",
]

#: The result of the Dask engine: :class:`~changerate_bayes.crawllog.LogEstimates`
#: (``engine="dask"``; ``n_partitions`` and ``shuffled`` as before).
ClusterEstimates = LogEstimates

#: The name of a Dask DataFrame in messages.
_FRAME = "<dask dataframe>"
#: The estimation options of the deprecated entry points (:attr:`LogOptions.estimation` and ``budget``).
_ESTIMATION = ("methods", "prior", "budget", "level", "posterior_method")
_SCHEDULING = ("budget", "prior", "level")
#: Each deprecated entry point: (the call to use instead, its :class:`LogOptions`, the engine's own
#: arguments with their defaults).
_DEPRECATED: dict[str, tuple[str, tuple[str, ...], dict[str, Any]]] = {
    "estimate_pages_dask": (
        "estimate(visits",
        ("columns", "change_from", *_ESTIMATION),
        dict(npartitions=None, source=_FRAME, client=None),
    ),
    "estimate_files_dask": (
        "estimate(paths",
        ("format", "columns", "change_from", "page_key", *_ESTIMATION),
        dict(partitioned="auto", npartitions=None, chunk_rows=None, client=None),
    ),
    "schedule_pages_dask": (
        "schedule(visits",
        ("columns", "change_from", *_SCHEDULING, "hosts", "host_budgets"),
        dict(max_interval_h=MAX_INTERVAL_H, npartitions=None, source=_FRAME, client=None),
    ),
    "schedule_files_dask": (
        "schedule(paths",
        ("format", "columns", "change_from", "page_key", *_SCHEDULING),
        dict(max_interval_h=MAX_INTERVAL_H, chunk_rows=None, client=None),
    ),
}


def _deprecated(name: str, options: dict):
    """The keyword arguments ``options`` of the deprecated entry point ``name``, after its warning
    naming the call to use instead (:data:`_DEPRECATED`): its :class:`LogOptions`, and the
    engine's own arguments (with their defaults).

    Raises
    ------
    TypeError
        For a keyword argument that ``name`` never took.
    """
    call, option_names, engine_defaults = _DEPRECATED[name]
    unknown = sorted(set(options) - set(option_names) - set(engine_defaults))
    if unknown:
        raise TypeError(f"{name}() got an unexpected keyword argument {unknown[0]!r}")
    warnings.warn(f"{name} is deprecated; use crawllog.{call}, engine='dask', ...)", DeprecationWarning, stacklevel=3)
    engine = {k: options.get(k, default) for k, default in engine_defaults.items()}
    return LogOptions.of({k: v for k, v in options.items() if k not in engine}), engine


def _partition(
    pdf: pd.DataFrame,
    columns,
    change_from,
    methods,
    prior,
    level,
    posterior_method,
    source,
    with_posterior=False,
    signals=None,
):
    """One partition (every visit of its pages): its page table, audit, pages' first rows, time kinds
    and, ``with_posterior``, the compact history that determines each page's posterior; with
    ``signals`` (page labels and UTC ns) its pages' signals per crawl interval
    (:func:`~changerate_bayes.crawllog.signal_log.part_signals`; else None).

    Naive and time-zone-aware times are not refused here but returned (the first row of
    each kind per time column), since they may sit in different partitions: the caller
    checks them over the whole log, as the pandas engine does.
    """
    with task_settings():
        return _partition_body(
            pdf, columns, change_from, methods, prior, level, posterior_method, source, with_posterior, signals
        )


def _partition_body(
    pdf, columns, change_from, methods, prior, level, posterior_method, source, with_posterior, signals=None
):
    pdf = pdf.sort_values("_row", kind="stable")
    rows = pdf["_row"].to_numpy()
    kinds: dict = {}
    log = read_frame(
        pdf.drop(columns="_row"),
        columns=columns,
        change_from=change_from,
        source=source,
        rows=rows,
        empty_ok=True,
        time_kinds=kinds,
    )
    if log.history is None:
        return None, log.audit, None, kinds, None, None
    table = page_table(log, methods=methods, prior=prior, level=level, posterior_method=posterior_method)
    if with_posterior:  # a schedule: from each page's last fetch attempt
        table = with_last_attempt(table, log)
    page_col = (columns or {}).get("page", "page")
    visits = pdf
    if "signal" in pdf.columns:  # a page's place in the table: its first visit, not a signal row before it
        visits = pdf[~signal_flags(pdf["signal"], source=source, column="signal", lines=rows, line_word="row")]
    first_row = visits.groupby(page_col, sort=False)["_row"].min()
    compact = posterior_history(log.history) if with_posterior else None
    sig = None if signals is None else part_signals(log, *signals)
    return table, log.audit, first_row.reindex(table["page"]).to_numpy(), kinds, compact, sig


def per_page_partitions(
    visits,
    *,
    columns=None,
    change_from="auto",
    methods=(),
    prior=None,
    level=0.9,
    posterior_method="grid",
    npartitions=None,
    source=_FRAME,
    client=None,
    with_posterior=False,
    signals=None,
    signal_parts: list | None = None,
):
    """The shuffle and per-partition pass of :func:`_estimate_frame`, without the allocation.

    Returns ``(table, audit, n_partitions, histories)``: the page table (pages in order of
    first appearance), the summed audit, the number of partitions and, ``with_posterior``,
    the list of the partitions' :func:`changerate_bayes.bayes.posterior_history`
    (else None). With ``signals`` (page labels and UTC ns) each partition's
    :func:`~changerate_bayes.crawllog.signal_log.part_signals` is appended to
    ``signal_parts``. Arguments and errors as :func:`_estimate_frame`.
    """
    import dask  # optional dependency, heavy: imported when the Dask engine runs
    import dask.dataframe as dd

    if not isinstance(visits, dd.DataFrame):
        raise TypeError(f"`visits` must be a dask.dataframe.DataFrame; got {type(visits).__name__}")
    mapping = check_columns(columns)
    plan, kind = column_plan([str(c) for c in visits.columns], mapping, source=source, change_from=change_from)
    keep = list(plan.values()) + [
        c for c in ("not_modified", "signal") if c in visits.columns and c not in plan.values()
    ]
    df = visits[keep]
    df = df.assign(_row=1)
    df = df.assign(_row=df["_row"].cumsum())
    n = npartitions or visits.npartitions
    shuffled = df.shuffle(on=plan["page"], npartitions=n)
    parts = shuffled.to_delayed()
    task = dask.delayed(_partition)
    shared = None if signals is None else dask.delayed(signals, traverse=False)  # one node for every task
    jobs = [
        task(p, mapping or None, kind, tuple(methods), prior, level, posterior_method, source, with_posterior, shared)
        for p in parts
    ]
    try:
        results = client.compute(jobs, sync=True) if client is not None else dask.compute(*jobs)
    except DECOMPRESSION_ERRORS as exc:  # a truncated or corrupt .gz/.bz2/.xz/.zst read by the workers
        raise decompression_error(source, exc) from None
    kinds: dict = {}
    for _, _, _, k, _, _ in results:
        merge_kinds(kinds, k)
    state: dict = {}
    for column in (plan["fetch_time"], plan.get("last_modified")):  # the pandas engine's order
        if column in kinds:
            check_kinds(state, kinds[column], source=source, column=column, line_word="row")
    tables = [(t, r) for t, _, r, _, _, _ in results if t is not None]
    audit = Audit.combine([a for _, a, _, _, _, _ in results], sources=(source,))
    if audit.rows_read == 0:
        raise CrawlLogError(f"{source}: no visits: the frame has no rows")
    if not tables:
        raise CrawlLogError(
            f"{source}: no page has two usable visits, so there is nothing to estimate\n" + audit.format()
        )
    table = concat_part_tables([t for t, _ in tables], [r for _, r in tables])
    histories = [h for t, _, _, _, h, _ in results if t is not None] if with_posterior else None
    if signal_parts is not None:
        signal_parts.extend(g for t, _, _, _, _, g in results if t is not None and g is not None)
    return table, audit, len(parts), histories


def estimate_pages_dask(visits, **options) -> ClusterEstimates:
    """Deprecated: the per-page table of a crawl log held in a Dask DataFrame.

    Use :func:`changerate_bayes.crawllog.estimate` ``(visits, engine="dask", ...)``. The
    keyword arguments are as before: ``columns``, ``change_from``, ``methods``, ``prior``,
    ``budget``, ``level``, ``posterior_method`` and ``client`` as
    :func:`~changerate_bayes.crawllog.estimate`, ``npartitions`` (partitions after the
    shuffle, default those of ``visits``) and ``source`` (the name in error messages).

    Returns
    -------
    ClusterEstimates
        The table, the summed audit and the number of partitions.
    """
    opts, engine = _deprecated("estimate_pages_dask", options)
    res, _ = _estimate_frame(visits, opts, **engine)
    return res


def _estimate_frame(visits, opts: LogOptions, *, with_posterior=False, signals=None, signal_parts=None, **frame):
    """The per-page table of the visits in the Dask DataFrame ``visits`` with the options ``opts``
    (its allocation within their host caps; ``frame``: ``npartitions``, the partitions after the
    shuffle, default those of ``visits``; ``source``, the name in messages; ``client``, default the
    current Dask scheduler) and, ``with_posterior``, the partitions'
    :func:`~changerate_bayes.bayes.posterior_history`.

    Every row gets its global row number (a cumulative sum over the partitions, so the
    audit's out-of-order count and the duplicate rule see the log's order), the visits
    are shuffled on the page column so that each page lives in exactly one partition,
    and each partition runs the pandas engine's code: :func:`changerate_bayes.io.read_frame`
    and the per-page estimates. Only the small per-page tables come back; the crawl
    allocation (which couples all pages through the budget) runs on them at the end.
    Per-page results therefore equal the pandas engine's (to rounding, 1e-12).

    Raises TypeError if ``visits`` is not a Dask DataFrame, and CrawlLogError as the pandas
    engine: a missing column (before any computation), a bad value in a partition (naming
    the log row), naive and time-zone-aware times anywhere in the log (checked over all
    partitions), a compressed file that cannot be decompressed, no rows, or no page with
    two usable visits."""
    table, audit, n_parts, histories = per_page_partitions(
        visits,
        columns=opts.columns,
        change_from=opts.change_from,
        with_posterior=with_posterior,
        signals=signals,
        signal_parts=signal_parts,
        **opts.estimation,
        **frame,
    )
    res = LogEstimates(table=opts.allocate(table), audit=audit, engine="dask", n_parts=n_parts, shuffled=True)
    return res, histories


def _read_piece(path, fmt, file_index, mapping, change_from, chunk_rows, page_key):
    with task_settings():
        return compact_file(
            path,
            fmt,
            file_index=file_index,
            columns=mapping,
            change_from=change_from,
            chunk_rows=chunk_rows,
            page_key=page_key,
        )


def _read_reduce_group(*args):
    return read_reduce_group(*args)


def _piece_meta(piece):
    if piece.v is None:
        return piece.kind, piece.digest_column, False, page_hashes(piece.labels), 0, (piece.source, "", {})
    has = piece.v.has_digest
    present = tuple(getattr(piece.v, n) is not None for n in COMPACT_COLUMNS) if piece.v.page.size else None
    return (
        piece.kind,
        piece.digest_column,
        bool(has is None or has.any()),
        page_hashes(piece.labels),
        piece.v.page.size,
        (piece.source, piece.line_word, piece.time_kinds),
        present,
    )


def _split(piece, n):
    return split_piece(piece, n)


def _pick(parts, b):
    return parts[b]


def _pages_of(pieces, kind, sources, methods, prior, level, posterior_method, with_posterior=False, signals=None):
    """The table, audit, pages' first log positions and (``with_posterior``) the
    :func:`~changerate_bayes.bayes.posterior_history` of the pieces' pages (all their rows)."""
    with task_settings():
        v, labels, first_key, extra = merge_pieces(pieces)
        if v is None:
            return None, None, None, None, None
        log = build_log(v, labels, change_from=kind, sources=sources, empty_ok=True, audit_extra=extra)
        if log.history is None:
            return None, log.audit, None, None, None
        table = page_table(log, methods=methods, prior=prior, level=level, posterior_method=posterior_method)
        if with_posterior:  # a schedule: from each page's last fetch attempt
            table = with_last_attempt(table, log)
        history = posterior_history(log.history) if with_posterior else None
        sig = None if signals is None else part_signals(log, *signals)
    where = pd.Index(labels).get_indexer(table["page"])
    return table, log.audit, first_key[where], history, sig


def estimate_files_dask(paths, **options) -> ClusterEstimates:
    """Deprecated: the per-page table of log files read on a Dask cluster, one file per task.

    Use :func:`changerate_bayes.crawllog.estimate` ``(paths, engine="dask", ...)``. The
    keyword arguments are as before: ``format``, ``columns``, ``change_from``,
    ``page_key``, ``methods``, ``prior``, ``budget``, ``level``, ``posterior_method`` and
    ``client`` as :func:`~changerate_bayes.crawllog.estimate`, and ``partitioned``,
    ``npartitions``, ``chunk_rows`` as :func:`_estimate_files`.

    Returns
    -------
    ClusterEstimates
        The table (its warnings issued), the summed audit and the number of parts.
    """
    opts, engine = _deprecated("estimate_files_dask", options)
    files, buckets = log_files(paths)
    res, _ = _estimate_files(files, buckets, opts, **engine)
    warn_table_notes(res.table)
    return res


def _estimate_files(
    files,
    buckets,
    opts: LogOptions,
    *,
    partitioned="auto",
    npartitions=None,
    chunk_rows=None,
    client=None,
    with_posterior=False,
    signals=None,
    signal_parts: list | None = None,
):
    """The per-page table of the log files ``files`` (and their ``buckets``, from
    :func:`changerate_bayes.io.log_files`) read on a Dask cluster, one file per task, with the
    options ``opts`` (its allocation within their host caps), without issuing the table's
    warnings; with ``with_posterior`` also the list of the tasks'
    :func:`~changerate_bayes.bayes.posterior_history`.

    Each page's rows must meet in one task:

    - if the files are already partitioned by page, no row moves: hive-style folders
      ``page_bucket=K/`` are one group per ``K``, otherwise each file is a group (e.g.
      one file per host). One task per group reads its files and reduces them, and
      sends back only its pages' rows of the table, its audit, and what the checks over
      all the files need (each file's change rule, naive/aware times and rows, whether
      some digest is set, and a 64-bit hash of each page label). The grouping is kept
      when no page occurs in two groups;
    - otherwise (or with ``partitioned=False``) each file is read by one task into
      compact columns, its rows are split by a hash of the page into ``npartitions``
      parts (default the number of files, at least 2), and part ``b`` of every file goes
      to task ``b`` (a shuffle). With ``partitioned="auto"`` the group tasks run first,
      and are cancelled as soon as two of them report a common page (``partitioned=True``
      makes that an error).

    Values are checked where they are read (errors name the file, line or record, and
    field); ``chunk_rows`` rows are parsed at a time in each task. Table (pages in order
    of first appearance in the files, in the order given) and audit equal those of the
    pandas engine on the same files. Each task runs single-threaded (numba and pyarrow use
    one thread), so start workers with one thread per core (``dask worker --nworkers N
    --nthreads 1``); see :mod:`changerate_bayes.crawllog._dask_tasks`."""
    format, change_from, page_key = opts.format, opts.change_from, opts.page_key
    if partitioned not in ("auto", True, False):
        raise ValueError(f"`partitioned` must be 'auto', True or False; got {partitioned!r}")
    check_page_key(page_key)
    mapping = check_columns(opts.columns)
    if format not in ("auto", "csv", "parquet", "cdx", "warc"):
        raise ValueError(f"`format` must be one of ['auto', 'csv', 'parquet', 'cdx', 'warc']; got {format!r}")
    fmts = [detect_format(f) for f in files] if format == "auto" else [format] * len(files)
    refuse_surt_for_warc(files, format, page_key)
    if len(set(fmts)) > 1 and set(fmts) != {"cdx", "warc"}:
        raise mixed_formats_error(files, fmts)
    if "ota" in fmts:
        raise CrawlLogError(f"{files[fmts.index('ota')]}: an Open Terms Archive log: use estimate_pages_dask")
    if client is None:
        from distributed import get_client  # optional dependency, heavy: imported when the Dask engine runs

        client = get_client()
    sources = tuple(str(f) for f in files)
    group_of = buckets if all(b is not None for b in buckets) else list(range(len(files)))
    groups = list(dict.fromkeys(group_of))
    members = [[i for i, g in enumerate(group_of) if g == grp] for grp in groups]
    if signals is not None:  # sent to the workers once
        signals = client.scatter(signals, broadcast=True, hash=False)
    args = (tuple(opts.methods), opts.prior, opts.level, opts.posterior_method, with_posterior, signals)
    table = audit = histories = None
    parts: list = []
    if partitioned is not False:
        table, audit, histories, parts = _unshuffled(
            client,
            files,
            fmts,
            members,
            mapping,
            change_from,
            chunk_rows,
            page_key,
            sources,
            args,
            required=partitioned is True,
            what="page_bucket folders" if group_of is buckets else "files",
        )
    disjoint = table is not None
    if not disjoint:
        table, audit, n_parts, histories, parts = _shuffled(
            client, files, fmts, mapping, change_from, chunk_rows, page_key, sources, args, npartitions
        )
    if signal_parts is not None:
        signal_parts.extend(parts)
    res = LogEstimates(
        table=opts.allocate(table),
        audit=audit,
        engine="dask",
        n_parts=len(groups) if disjoint else n_parts,
        shuffled=not disjoint,
    )
    return res, histories


def _check_files(sources, files_meta, any_digest, *, tabular) -> str:
    """The checks over all the files that no single task can make (the readers' errors); the change kind.

    ``files_meta`` holds, file by file in log order, (change kind, digest column, rows,
    (source, line word, naive/aware times)[, the compact columns present, CSV and Parquet
    only]); ``any_digest`` whether some group or file has
    a row with a digest; ``tabular`` whether the files are CSV or Parquet (whose reader
    words the no-visit error differently).
    """
    change_kinds = {m[0] for m in files_meta}
    if len(change_kinds) > 1:
        raise CrawlLogError(
            f"{', '.join(sources)}: changes would be decided by {sorted(change_kinds)} in different "
            "files; give the files the same columns"
        )
    kind = change_kinds.pop()
    if tabular:  # the pandas engine reads all files into one set of columns, so it refuses files that differ
        present = [m[4] for m in files_meta if len(m) > 4 and m[4] is not None]
        for p in present[1:]:
            if p != present[0]:
                raise CrawlLogError(different_columns_message(p, present[0]))
    if not any(m[2] for m in files_meta):
        raise CrawlLogError(
            f"{', '.join(sources)}: no visits" + (": the file(s) hold no data rows" if tabular else " in the files")
        )
    check_time_kinds([m[3] for m in files_meta])
    if kind == "digest" and not any_digest:
        raise CrawlLogError(
            f"{', '.join(sources)}: line 1, column {files_meta[0][1]!r}: the digest column is entirely "
            "empty; map another column with `columns=` or choose `change_from`"
        )
    return kind


def _assemble(sources, parts):
    """The page table and audit of the parts' (table, audit, first keys); the no-page error."""
    parts = [(t, a, r) for t, a, r in parts if a is not None]
    audit = Audit.combine([a for _, a, _ in parts], sources=sources)
    tables = [(t, r) for t, _, r in parts if t is not None]
    if not tables:
        raise CrawlLogError(
            f"{', '.join(sources)}: no page has two usable visits, so there is nothing to estimate\n" + audit.format()
        )
    return concat_part_tables([t for t, _ in tables], [r for _, r in tables]), audit


def _unshuffled(
    client, files, fmts, members, mapping, change_from, chunk_rows, page_key, sources, args, *, required, what
):
    """Each group of files read and reduced by one task: (table, audit, posterior histories or None, the
    groups' signal parts), or (None, None, None, []) if two groups share a page.

    The tasks return the hashes of their pages; as soon as one page is seen in two
    groups the tasks still running are cancelled (``required``: an error instead).
    """
    from distributed import as_completed  # optional dependency, heavy: imported when the Dask engine runs

    jobs = [
        client.submit(
            _read_reduce_group,
            [str(files[i]) for i in m],
            m,
            [fmts[i] for i in m],
            mapping,
            change_from,
            chunk_rows,
            page_key,
            sources,
            *args,
        )
        for m in members
    ]
    seen: set = set()
    n_seen = 0
    shared = False
    got = {}
    for job in as_completed(jobs):
        if job.status == "error":  # raised below, for the first group in file order
            continue
        got[job.key] = job.result()
        hashes = got[job.key]["hashes"]
        seen.update(hashes.tolist())
        n_seen += hashes.size
        if len(seen) < n_seen:
            shared = True
            break
    if shared and not required:
        client.cancel(jobs)
        return None, None, None, []
    results = [got[j.key] for j in jobs] if len(got) == len(jobs) else _gather_in_order(client, jobs)
    meta = sorted((i, f) for m, r in zip(members, results) for i, f in zip(m, r["files"]))
    _check_files(
        sources,
        [f for _, f in meta],
        any(r["any_digest"] is not False for r in results),
        tabular=fmts[0] in ("csv", "parquet"),
    )
    if shared:
        raise CrawlLogError(
            f"{', '.join(sources)}: `partitioned=True` but some page occurs in two groups of files "
            f"({what}); pass partitioned='auto' or False to shuffle"
        )
    table, audit = _assemble(sources, [(r["table"], r["audit"], r["first_key"]) for r in results])
    histories = [h for r in results for h in r["histories"]] if args[4] else None
    return table, audit, histories, [g for r in results for g in r["signal_parts"]]


def _gather_in_order(client, jobs):
    """The jobs' results; if some failed, the error of the first in list order (the files' order)."""
    from distributed import wait  # optional dependency, heavy: imported when the Dask engine runs

    wait(jobs)
    for job in jobs:
        if job.status == "error":
            job.result()  # raises the task's exception
    return client.gather(jobs)


def _shuffled(client, files, fmts, mapping, change_from, chunk_rows, page_key, sources, args, npartitions):
    """Each file read by one task, its rows split by page hash and moved: (table, audit, parts, posterior
    histories or None, the parts' signal parts)."""
    pieces = [
        client.submit(_read_piece, str(f), fmt, i, mapping, change_from, chunk_rows, page_key)
        for i, (f, fmt) in enumerate(zip(files, fmts))
    ]
    meta = _gather_in_order(client, client.map(_piece_meta, pieces))
    kind = _check_files(
        sources,
        [(m[0], m[1], m[4], m[5], m[6] if len(m) > 6 else None) for m in meta],
        any(m[2] for m in meta),
        tabular=fmts[0] in ("csv", "parquet"),
    )
    n = npartitions or max(len(files), 2)
    splits = [client.submit(_split, p, n) for p in pieces]
    jobs = [
        client.submit(_pages_of, [client.submit(_pick, s, b) for s in splits], kind, sources, *args) for b in range(n)
    ]
    results = client.gather(jobs)
    del pieces
    table, audit = _assemble(sources, [r[:3] for r in results])
    histories = [r[3] for r in results if r[0] is not None] if args[4] else None
    return table, audit, n, histories, [r[4] for r in results if r[0] is not None and r[4] is not None]


def _concat_histories(histories) -> CrawlHistory:
    """One ragged history of the pages of ``histories``, one after the other."""
    rates = [h.crawl_rate for h in histories]
    return CrawlHistory.from_segments(
        np.concatenate([h.flat_changed for h in histories]),
        np.concatenate([h.flat_intervals for h in histories]),
        lengths=np.concatenate([h.lengths for h in histories]),
        crawl_rate=None
        if any(r is None for r in rates)
        else np.concatenate(
            [np.broadcast_to(np.asarray(r, dtype=np.float64), (h.lengths.size,)) for r, h in zip(rates, histories)]
        ),
        page_ids=np.concatenate([np.asarray(h.page_ids, dtype=object) for h in histories]),
    )


def _reorder(history: CrawlHistory, order: np.ndarray) -> CrawlHistory:
    """The pages ``order`` of a ragged history (a permutation), as a new history."""
    lengths = history.lengths[order]
    starts = history.offsets[:-1][order]
    idx = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths) + np.arange(lengths.sum())
    rate = history.crawl_rate
    if rate is not None:
        rate = np.broadcast_to(np.asarray(rate, dtype=np.float64), (history.lengths.size,))[order]
    tau = history.flat_intervals
    assert tau is not None  # a crawl log's history has its intervals
    return CrawlHistory.from_segments(
        history.flat_changed[idx],
        tau[idx],
        lengths=lengths,
        crawl_rate=rate,
        page_ids=np.asarray(history.page_ids, dtype=object)[order],
    )


def schedule_pages_dask(visits, **options):
    """Deprecated: the crawl schedule of a crawl log held in a Dask DataFrame.

    Use :func:`changerate_bayes.crawllog.schedule` ``(visits, engine="dask", ...)``. The
    keyword arguments are as before: ``columns``, ``change_from``, ``budget``, ``prior``,
    ``level``, ``max_interval_h``, ``hosts``, ``host_budgets`` and ``client`` as
    :func:`~changerate_bayes.crawllog.schedule`, ``npartitions`` and ``source`` as
    :func:`estimate_pages_dask`.

    Returns
    -------
    (pandas.DataFrame, Audit)
        The schedule (:func:`~changerate_bayes.crawllog.schedule`'s ``schedule``) and the audit.
    """
    opts, engine = _deprecated("schedule_pages_dask", options)
    return _schedule_frame(visits, opts, **engine)


def _schedule_frame(visits, opts: LogOptions, *, max_interval_h, signals=None, signal_parts=None, **frame):
    """The schedule and audit of the visits in the Dask DataFrame ``visits`` with the options ``opts``
    (``frame`` as :func:`_estimate_frame`): each partition also sends back its pages'
    :func:`posterior_history` (about one entry per change), so that the predictive probabilities
    are computed at the end, once the allocation has fixed every interval, from the same posterior
    as the pandas engine: the schedule is the pandas engine's."""
    _check_max_interval(max_interval_h)
    res, histories = _estimate_frame(
        visits, opts, with_posterior=True, signals=signals, signal_parts=signal_parts, **frame
    )
    return _schedule_of(res.table, histories, max_interval_h=max_interval_h, prior=opts.prior), res.audit


def schedule_files_dask(paths, **options):
    """Deprecated: the crawl schedule of log files read on a Dask cluster, one file per task.

    Use :func:`changerate_bayes.crawllog.schedule` ``(paths, engine="dask", ...)``. The
    keyword arguments are as before: ``format``, ``columns``, ``change_from``,
    ``page_key``, ``budget``, ``prior``, ``level``, ``max_interval_h`` and ``client`` as
    :func:`~changerate_bayes.crawllog.schedule`, ``chunk_rows`` as :func:`estimate_files_dask`.

    Returns
    -------
    (pandas.DataFrame, Audit)
        The schedule (:func:`~changerate_bayes.crawllog.schedule`'s ``schedule``) and the audit.
    """
    opts, engine = _deprecated("schedule_files_dask", options)
    files, buckets = log_files(paths)
    return _schedule_files(files, buckets, opts, **engine)


def _schedule_files(
    files, buckets, opts: LogOptions, *, max_interval_h, chunk_rows=None, client=None, signals=None, signal_parts=None
):
    """The schedule and audit of the listed ``files`` and their ``buckets`` with the options ``opts``
    (the table of :func:`_estimate_files`, its allocation within their host caps): the same
    tasks that compute the table's rows send back their pages' compact histories, so every
    file is read once; the schedule is the pandas engine's."""
    _check_max_interval(max_interval_h)
    res, histories = _estimate_files(
        files,
        buckets,
        opts,
        chunk_rows=chunk_rows,
        client=client,
        with_posterior=True,
        signals=signals,
        signal_parts=signal_parts,
    )
    return _schedule_of(res.table, histories, max_interval_h=max_interval_h, prior=opts.prior), res.audit


def _schedule_of(table, histories, *, max_interval_h, prior):
    """:func:`crawl_schedule` of ``table`` with its pages' posterior histories, gathered part by part."""
    history = _concat_histories(histories)
    where = {p: i for i, p in enumerate(history.page_ids)}
    history = _reorder(history, np.array([where[p] for p in table["page"]], dtype=np.int64))
    return crawl_schedule(table, history, max_interval_h=max_interval_h, prior=prior)


def frame_signal_rows(visits, columns) -> pd.DataFrame:
    """The signal rows (``signal`` 1) of the Dask DataFrame ``visits``, found by the workers, as
    :func:`changerate_bayes.io.read_signals` returns them; rows are numbered among these rows
    (the name in messages: ``<dask dataframe signal rows>``)."""
    page_col, time_col = (columns or {}).get("page", "page"), (columns or {}).get("fetch_time", "fetch_time")
    sub = visits[[page_col, time_col, "signal"]]

    def pick(pdf):
        lines = np.arange(1, len(pdf) + 1, dtype=np.int64)
        flags = signal_flags(pdf["signal"], source="<dask dataframe>", column="signal", lines=lines, line_word="row")
        return pdf.loc[flags, [page_col, time_col]]

    rows = sub.map_partitions(pick, meta=sub._meta[[page_col, time_col]]).compute()
    lines = np.arange(1, len(rows) + 1, dtype=np.int64)
    return signal_table(rows, lines, source="<dask dataframe signal rows>", page_col=page_col, time_col=time_col)


#: The log formats the Dask engine reads (``"auto"``: CDX and WARC files together).
DASK_FORMATS = ("csv", "parquet", "ota", "cdx", "warc", "auto")


def dask_frame(files, fmt: str, *, ota_changed=None):
    """How the Dask engine reads the log files ``files`` of format ``fmt``.

    Returns None when each file is read by one task (CDX, CDXJ, WARC, and several CSV
    or Parquet files: :func:`_estimate_files`), else the visits as a Dask DataFrame
    (one CSV or Parquet file read in blocks, or OTA logs: :func:`_estimate_frame`),
    with the column mapping and change rule to read it with.

    Raises
    ------
    ValueError
        For a format the Dask engine does not read, a compressed file that cannot be
        decompressed, or a CSV row with more or fewer fields than its header (naming
        the file and line, as the pandas engine does).
    """
    import dask.dataframe as dd  # optional dependency, heavy: imported when the Dask engine runs

    if fmt not in DASK_FORMATS:
        raise ValueError(f"`engine` 'dask' reads CSV, Parquet, OTA, CDX and WARC logs; got format {fmt!r}")
    # one task per file (no shuffle when the files partition the pages); one CSV or Parquet file in blocks
    by_file = fmt in ("cdx", "warc", "auto") or (fmt in ("csv", "parquet") and len(files) > 1)
    for path in files:
        check_complete(path)  # a cut zstd file would read as fewer rows
        if fmt in ("csv", "ota") and not by_file:  # as the pandas reader (which reads each file of by_file)
            check_field_counts(path, src=str(path))
    if by_file:
        return None
    try:  # dask reads the head of the first file here, to learn the columns
        if fmt == "parquet":
            return dd.read_parquet([str(f) for f in files])
        gz = any(str(p).endswith((".gz", ".bz2", ".xz", ".zst")) for p in files)
        return dd.read_csv([str(f) for f in files], dtype=str, keep_default_na=False, blocksize=None if gz else "64MB")
    except DECOMPRESSION_ERRORS as exc:
        raise decompression_error(files[0], exc, files[0]) from None


@contextlib.contextmanager
def dask_client(client=None):
    """A Dask client: ``client`` itself (a ``distributed.Client``), a client of the scheduler
    at the address ``client`` (closed on exit), or, for None, the current client if there is
    one, else a local cluster of 2 single-threaded worker processes (closed on exit). Dask's
    harmless log lines are silenced meanwhile."""
    from distributed import Client, LocalCluster, get_client  # optional dependency, heavy: the Dask engine only

    with quiet_dask_logs():
        if client is not None and not isinstance(client, str):
            yield client
            return
        cluster = own = None
        try:
            if client is None:
                try:
                    yield get_client()
                    return
                except ValueError:  # no current client
                    pass
                # a task's error reaches the caller as its one-line message; the workers' own log of it
                # ("Compute Failed" with the traceback) would print that error a second time, as a traceback.
                # The dashboard on a free port: dashboard_address=None still tries Dask's default 8787, and
                # warns (twice) whenever another cluster on the machine holds it
                with _sigint_ignored():  # the worker processes start with Ctrl-C ignored: see _sigint_ignored
                    cluster = LocalCluster(
                        n_workers=2,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=":0",
                        silence_logs=logging.CRITICAL,
                    )
                own = Client(cluster)
            else:
                own = Client(client)
            yield own
        finally:
            if own is not None:
                own.close()
            if cluster is not None:
                cluster.close()


@contextlib.contextmanager
def _sigint_ignored():
    """Ignore SIGINT meanwhile (in the main thread only; elsewhere nothing is done).

    A process started meanwhile inherits the ignored signal, and Python keeps it ignored:
    the local cluster's worker processes never see Ctrl-C, which a terminal sends to the
    whole process group, so that they do not each print a KeyboardInterrupt traceback while
    this process stops, closing the cluster (which stops them). A Ctrl-C pressed while the
    cluster starts (a few seconds) is ignored; the next one stops the command.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
