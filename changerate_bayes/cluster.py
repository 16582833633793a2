"""The per-page table on a Dask cluster: each page's visits in one task, the pandas engine's code per task.

Log files that already partition the pages are read and reduced by one task per group
of files; other log files are read one per task and their rows moved between workers
by page; a Dask DataFrame is shuffled by page. Every task runs single-threaded
(:mod:`changerate_bayes._cluster_tasks`).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ._cluster_tasks import read_reduce_group, task_settings
from .io import Audit
from .io._compressed import DECOMPRESSION_ERRORS, decompression_error
from .io._frame import read_frame
from .io._tabular import _plan, check_columns
from .io._times import check_kinds, merge_kinds
from .pages import allocate_crawls, concat_part_tables, page_table

__all__ = ["ClusterEstimates", "estimate_files_dask", "estimate_pages_dask", "per_page_partitions"]


@dataclass(frozen=True)
class ClusterEstimates:
    """What :func:`estimate_pages_dask` returns.

    Attributes
    ----------
    table : pandas.DataFrame
        The per-page table of :func:`changerate_bayes.estimate_pages`, pages in order of
        first appearance in the log.
    audit : Audit
        The audit of the whole log (the partitions' audits summed).
    n_partitions : int
        Partitions the visits were shuffled into (or, unshuffled, the groups of files).
    shuffled : bool
        Whether the visits were moved between workers to bring each page's visits
        together (False when the input was already partitioned by page).
    """

    table: pd.DataFrame
    audit: Audit
    n_partitions: int
    shuffled: bool = True


def _partition(pdf: pd.DataFrame, columns, change_from, methods, prior, level, posterior_method, source,
               with_posterior=False):
    """One partition (every visit of its pages): its page table, audit, pages' first rows, time kinds
    and, ``with_posterior``, the compact history that determines each page's posterior.

    Naive and time-zone-aware times are not refused here but returned (the first row of
    each kind per time column), since they may sit in different partitions: the caller
    checks them over the whole log, as the pandas engine does.
    """
    with task_settings():
        return _partition_body(pdf, columns, change_from, methods, prior, level, posterior_method, source,
                               with_posterior)


def _partition_body(pdf, columns, change_from, methods, prior, level, posterior_method, source, with_posterior):
    pdf = pdf.sort_values("_row", kind="stable")
    rows = pdf["_row"].to_numpy()
    kinds: dict = {}
    log = read_frame(pdf.drop(columns="_row"), columns=columns, change_from=change_from, source=source,
                     rows=rows, empty_ok=True, time_kinds=kinds)
    if log.history is None:
        return None, log.audit, None, kinds, None
    table = page_table(log, methods=methods, prior=prior, level=level, posterior_method=posterior_method)
    page_col = (columns or {}).get("page", "page")
    first_row = pdf.groupby(page_col, sort=False)["_row"].min()
    compact = None
    if with_posterior:
        from .bayes import posterior_history

        compact = posterior_history(log.history)
    return table, log.audit, first_row.reindex(table["page"]).to_numpy(), kinds, compact


def per_page_partitions(visits, *, columns=None, change_from="auto", methods=(), prior=None, level=0.9,
                        posterior_method="grid", npartitions=None, source="<dask dataframe>", client=None,
                        with_posterior=False):
    """The shuffle and per-partition pass of :func:`estimate_pages_dask`, without the allocation.

    Returns ``(table, audit, n_partitions, histories)``: the page table (pages in order of
    first appearance), the summed audit, the number of partitions and, ``with_posterior``,
    the list of the partitions' :func:`changerate_bayes.crawl_schedule.posterior_history`
    (else None). Arguments and errors as :func:`estimate_pages_dask`.
    """
    import dask
    import dask.dataframe as dd

    from .io import CrawlLogError

    if not isinstance(visits, dd.DataFrame):
        raise TypeError(f"`visits` must be a dask.dataframe.DataFrame; got {type(visits).__name__}")
    mapping = check_columns(columns)
    plan, kind = _plan([str(c) for c in visits.columns], mapping, source=source, change_from=change_from)
    keep = list(plan.values()) + (["not_modified"] if "not_modified" in visits.columns else [])
    df = visits[keep]
    df = df.assign(_row=1)
    df = df.assign(_row=df["_row"].cumsum())
    n = npartitions or visits.npartitions
    shuffled = df.shuffle(on=plan["page"], npartitions=n)
    parts = shuffled.to_delayed()
    task = dask.delayed(_partition)
    jobs = [task(p, mapping or None, kind, tuple(methods), prior, level, posterior_method, source, with_posterior)
            for p in parts]
    try:
        results = client.compute(jobs, sync=True) if client is not None else dask.compute(*jobs)
    except DECOMPRESSION_ERRORS as exc:  # a truncated or corrupt .gz/.bz2/.xz/.zst read by the workers
        raise decompression_error(source, exc) from None
    kinds: dict = {}
    for _, _, _, k, _ in results:
        merge_kinds(kinds, k)
    state: dict = {}
    for column in (plan["fetch_time"], plan.get("last_modified")):  # the pandas engine's order
        if column in kinds:
            check_kinds(state, kinds[column], source=source, column=column, line_word="row")
    tables = [(t, r) for t, _, r, _, _ in results if t is not None]
    audit = Audit.combine([a for _, a, _, _, _ in results], sources=(source,))
    if audit.rows_read == 0:
        raise CrawlLogError(f"{source}: no visits: the frame has no rows")
    if not tables:
        raise CrawlLogError(f"{source}: no page has two usable visits, so there is nothing to estimate\n"
                            + audit.format())
    table = concat_part_tables([t for t, _ in tables], [r for _, r in tables])
    histories = [h for t, _, _, _, h in results if t is not None] if with_posterior else None
    return table, audit, len(parts), histories


def estimate_pages_dask(visits, *, columns=None, change_from="auto", methods=(), prior=None, budget=None,
                        level=0.9, posterior_method="grid", npartitions=None, source="<dask dataframe>",
                        client=None) -> ClusterEstimates:
    """:func:`changerate_bayes.estimate_pages` of a crawl log held in a Dask DataFrame.

    Every row gets its global row number (a cumulative sum over the partitions, so the
    audit's out-of-order count and the duplicate rule see the log's order), the visits
    are shuffled on the page column so that each page lives in exactly one partition,
    and each partition runs the pandas engine's code: :func:`changerate_bayes.io.read_frame`
    and the per-page estimates. Only the small per-page tables come back; the crawl
    allocation (which couples all pages through the budget) runs on them at the end.
    Per-page results therefore equal the pandas engine's (to rounding, 1e-12).

    Parameters
    ----------
    visits : dask.dataframe.DataFrame
        One row per visit, in log order, with the columns of
        :func:`changerate_bayes.io.read_csv` (mappable with ``columns``).
    columns, change_from
        As :func:`changerate_bayes.io.read_csv`.
    methods, prior, budget, level, posterior_method
        As :func:`changerate_bayes.estimate_pages` (``budget`` in crawls per day).
    npartitions : int, optional
        Partitions after the shuffle (default: those of ``visits``).
    source : str
        Name used in error messages.
    client : distributed.Client, optional
        Where to compute (default: the current Dask scheduler, e.g. the last Client
        created).

    Returns
    -------
    ClusterEstimates
        The table, the summed audit and the number of partitions.

    Raises
    ------
    TypeError
        If ``visits`` is not a Dask DataFrame.
    CrawlLogError (a ValueError)
        As the pandas engine: a missing column (before any computation), a bad value
        in a partition (naming the log row), naive and time-zone-aware times anywhere
        in the log (checked over all partitions, naming the same rows as
        :func:`changerate_bayes.io.read_frame`), a compressed file that cannot be
        decompressed, no rows, or no page with two usable visits.
    """
    table, audit, n_parts, _ = per_page_partitions(
        visits, columns=columns, change_from=change_from, methods=methods, prior=prior, level=level,
        posterior_method=posterior_method, npartitions=npartitions, source=source, client=client)
    return ClusterEstimates(table=allocate_crawls(table, budget), audit=audit, n_partitions=n_parts)


def _read_piece(path, fmt, file_index, mapping, change_from, chunk_rows, page_key):
    from .io._pieces import compact_file

    with task_settings():
        return compact_file(path, fmt, file_index=file_index, columns=mapping, change_from=change_from,
                            chunk_rows=chunk_rows, page_key=page_key)


def _read_reduce_group(*args):
    return read_reduce_group(*args)


def _piece_meta(piece):
    from .io._pieces import page_hashes

    if piece.v is None:
        return piece.kind, piece.digest_column, False, page_hashes(piece.labels), 0, (piece.source, "", {})
    from .io._buckets import _NAMES

    has = piece.v.has_digest
    present = tuple(getattr(piece.v, n) is not None for n in _NAMES) if piece.v.page.size else None
    return (piece.kind, piece.digest_column, bool(has is None or has.any()), page_hashes(piece.labels),
            piece.v.page.size, (piece.source, piece.line_word, piece.time_kinds), present)


def _split(piece, n):
    from .io._pieces import split_piece

    return split_piece(piece, n)


def _pick(parts, b):
    return parts[b]


def _pages_of(pieces, kind, sources, methods, prior, level, posterior_method):
    """The table, audit and pages' first log positions of the pieces' pages (all their rows)."""
    from .io._pieces import merge_pieces
    from .io._semantics import build_log

    with task_settings():
        v, labels, first_key, extra = merge_pieces(pieces)
        if v is None:
            return None, None, None
        log = build_log(v, labels, change_from=kind, sources=sources, empty_ok=True, audit_extra=extra)
        if log.history is None:
            return None, log.audit, None
        table = page_table(log, methods=methods, prior=prior, level=level, posterior_method=posterior_method)
    where = pd.Index(labels).get_indexer(table["page"])
    return table, log.audit, first_key[where]


def estimate_files_dask(paths, *, format="auto", columns=None, change_from="auto", partitioned="auto",
                        page_key="url", methods=(), prior=None, budget=None, level=0.9,
                        posterior_method="grid", npartitions=None, chunk_rows=None, client=None) -> ClusterEstimates:
    """:func:`changerate_bayes.estimate_pages` of log files read on a Dask cluster, one file per task.

    Each page's rows must meet in one task:

    - if the files are already partitioned by page, no row moves: hive-style folders
      ``page_bucket=K/`` are one group per ``K``, otherwise each file is a group (e.g.
      one file per host). One task per group reads its files and reduces them (for CSV
      and Parquet with the bucket reducer of :func:`changerate_bayes.estimate_log`), and
      sends back only its pages' rows of the table, its audit, and what the checks over
      all the files need (each file's change rule, naive/aware times and rows, whether
      some digest is set, and a 64-bit hash of each page label). The grouping is kept
      when no page occurs in two groups;
    - otherwise (or with ``partitioned=False``) each file is read by one task into
      compact columns, its rows are split by a hash of the page into ``npartitions``
      parts, and part ``b`` of every file goes to task ``b`` (a shuffle). With
      ``partitioned="auto"`` the group tasks run first, and are cancelled as soon as two
      of them report a common page: files that share pages are then read twice (pass
      ``partitioned=False`` when they are known to, e.g. Common Crawl's monthly indexes).

    Values are checked where they are read (errors name the file, line or record, and
    field). Each task runs the pandas engine's change rules and estimates on its pages;
    the crawl allocation runs on the gathered table at the end. Table (pages in order
    of first appearance in the files, in the order given) and audit equal those of the
    pandas engine on the same files. Tasks are recomputed from the files if a worker
    dies. Each task runs single-threaded (numba and pyarrow use one thread), so start
    workers with one thread per core (``dask worker --nworkers N --nthreads 1``); see
    :mod:`changerate_bayes._cluster_tasks`.

    Parameters
    ----------
    paths : path or list of paths
        Log files or folders (see :func:`changerate_bayes.io.log_files`); files are in log order.
    format : {"auto", "csv", "parquet", "cdx", "warc"}, default "auto"
        As :func:`changerate_bayes.io.read_log` (all files of one format, or CDX and
        WARC files mixed).
    columns, change_from
        For CSV and Parquet, as :func:`changerate_bayes.io.read_csv`.
    partitioned : {"auto", True, False}, default "auto"
        "auto" uses the files' grouping when it partitions the pages, else shuffles;
        True requires it (an error otherwise); False always shuffles.
    page_key : {"url", "surt"}, default "url"
        For CDX, as :func:`changerate_bayes.io.read_cdx`.
    methods, prior, budget, level, posterior_method
        As :func:`changerate_bayes.estimate_pages` (``budget`` in crawls per day).
    npartitions : int, optional
        Parts of a shuffle (default: the number of files, at least 2).
    chunk_rows : int, optional
        Rows parsed at a time in each task (default the readers' default).
    client : distributed.Client, optional
        Where to compute (default: the current client).

    Returns
    -------
    ClusterEstimates

    Raises
    ------
    ValueError
        For a client that cannot be found, or a bad ``format``, ``partitioned`` or
        ``page_key``.
    CrawlLogError (a ValueError)
        Any reader's error (naming the file, line or record, and field); files whose
        changes would be decided differently; a digest column empty in every file;
        ``partitioned=True`` with a page in two groups; no page with two usable visits.
    """
    from .io import CrawlLogError, detect_format, log_files
    from .io._cdx import _check_page_key
    from .io._formats import refuse_surt_for_warc

    if partitioned not in ("auto", True, False):
        raise ValueError(f"`partitioned` must be 'auto', True or False; got {partitioned!r}")
    _check_page_key(page_key)
    mapping = check_columns(columns)
    files, buckets = log_files(paths)
    if format not in ("auto", "csv", "parquet", "cdx", "warc"):
        raise ValueError(f"`format` must be one of ['auto', 'csv', 'parquet', 'cdx', 'warc']; got {format!r}")
    fmts = [detect_format(f) for f in files] if format == "auto" else [format] * len(files)
    refuse_surt_for_warc(files, format, page_key)
    if len(set(fmts)) > 1 and set(fmts) != {"cdx", "warc"}:
        raise CrawlLogError(f"{files[0]}: the files have different formats {sorted(set(fmts))} (only CDX and WARC "
                            "mix); pass `format`")
    if "ota" in fmts:
        raise CrawlLogError(f"{files[fmts.index('ota')]}: an Open Terms Archive log: use estimate_pages_dask")
    if client is None:
        from distributed import get_client

        client = get_client()
    sources = tuple(str(f) for f in files)
    group_of = buckets if all(b is not None for b in buckets) else list(range(len(files)))
    groups = list(dict.fromkeys(group_of))
    members = [[i for i, g in enumerate(group_of) if g == grp] for grp in groups]
    args = (tuple(methods), prior, level, posterior_method)
    table = audit = None
    if partitioned is not False:
        table, audit = _unshuffled(client, files, fmts, members, mapping, change_from, chunk_rows, page_key, sources,
                                   args, required=partitioned is True,
                                   what="page_bucket folders" if group_of is buckets else "files")
    disjoint = table is not None
    if not disjoint:
        table, audit, n_parts = _shuffled(client, files, fmts, mapping, change_from, chunk_rows, page_key, sources,
                                          args, npartitions)
    import warnings

    from ._validation import StatisticalWarning

    for msg in table.attrs["warnings"]:  # as estimate_pages does; pooled statistics are per task here
        warnings.warn(msg, StatisticalWarning, stacklevel=2)
    return ClusterEstimates(table=allocate_crawls(table, budget), audit=audit,
                            n_partitions=len(groups) if disjoint else n_parts, shuffled=not disjoint)


def _check_files(sources, files_meta, any_digest, *, tabular) -> str:
    """The checks over all the files that no single task can make (the readers' errors); the change kind.

    ``files_meta`` holds, file by file in log order, (change kind, digest column, rows,
    (source, line word, naive/aware times)[, the compact columns present, CSV and Parquet
    only]); ``any_digest`` whether some group or file has
    a row with a digest; ``tabular`` whether the files are CSV or Parquet (whose reader
    words the no-visit error differently).
    """
    from .io import CrawlLogError
    from .io._pieces import check_time_kinds

    change_kinds = {m[0] for m in files_meta}
    if len(change_kinds) > 1:
        raise CrawlLogError(f"{', '.join(sources)}: changes would be decided by {sorted(change_kinds)} in different "
                            "files; give the files the same columns")
    kind = change_kinds.pop()
    if tabular:  # the pandas engine reads all files into one set of columns, so it refuses files that differ
        from .io._buckets import different_columns_message

        present = [m[4] for m in files_meta if len(m) > 4 and m[4] is not None]
        for p in present[1:]:
            if p != present[0]:
                raise CrawlLogError(different_columns_message(p, present[0]))
    if not any(m[2] for m in files_meta):
        raise CrawlLogError(f"{', '.join(sources)}: no visits" + (": the file(s) hold no data rows" if tabular
                                                                  else " in the files"))
    check_time_kinds([m[3] for m in files_meta])
    if kind == "digest" and not any_digest:
        raise CrawlLogError(f"{', '.join(sources)}: line 1, column {files_meta[0][1]!r}: the digest column is entirely "
                            "empty; map another column with `columns=` or choose `change_from`")
    return kind


def _assemble(sources, parts):
    """The page table and audit of the parts' (table, audit, first keys); the no-page error."""
    from .io import CrawlLogError

    parts = [(t, a, r) for t, a, r in parts if a is not None]
    audit = Audit.combine([a for _, a, _ in parts], sources=sources)
    tables = [(t, r) for t, _, r in parts if t is not None]
    if not tables:
        raise CrawlLogError(f"{', '.join(sources)}: no page has two usable visits, so there is nothing to estimate\n"
                            + audit.format())
    return concat_part_tables([t for t, _ in tables], [r for _, r in tables]), audit


def _unshuffled(client, files, fmts, members, mapping, change_from, chunk_rows, page_key, sources, args, *, required,
                what):
    """Each group of files read and reduced by one task: (table, audit), or (None, None) if two groups share a page.

    The tasks return the hashes of their pages; as soon as one page is seen in two
    groups the tasks still running are cancelled (``required``: an error instead).
    """
    from distributed import as_completed

    from .io import CrawlLogError

    jobs = [client.submit(_read_reduce_group, [str(files[i]) for i in m], m, [fmts[i] for i in m], mapping,
                          change_from, chunk_rows, page_key, sources, *args) for m in members]
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
        return None, None
    results = [got[j.key] for j in jobs] if len(got) == len(jobs) else _gather_in_order(client, jobs)
    meta = sorted((i, f) for m, r in zip(members, results) for i, f in zip(m, r["files"]))
    _check_files(sources, [f for _, f in meta], any(r["any_digest"] is not False for r in results),
                 tabular=fmts[0] in ("csv", "parquet"))
    if shared:
        raise CrawlLogError(f"{', '.join(sources)}: `partitioned=True` but some page occurs in two groups of files "
                            f"({what}); pass partitioned='auto' or False to shuffle")
    return _assemble(sources, [(r["table"], r["audit"], r["first_key"]) for r in results])


def _gather_in_order(client, jobs):
    """The jobs' results; if some failed, the error of the first in list order (the files' order)."""
    from distributed import wait

    wait(jobs)
    for job in jobs:
        if job.status == "error":
            job.result()  # raises the task's exception
    return client.gather(jobs)


def _shuffled(client, files, fmts, mapping, change_from, chunk_rows, page_key, sources, args, npartitions):
    """Each file read by one task, its rows split by page hash and moved: (table, audit, parts)."""
    pieces = [client.submit(_read_piece, str(f), fmt, i, mapping, change_from, chunk_rows, page_key)
              for i, (f, fmt) in enumerate(zip(files, fmts))]
    meta = _gather_in_order(client, client.map(_piece_meta, pieces))
    kind = _check_files(sources, [(m[0], m[1], m[4], m[5], m[6] if len(m) > 6 else None) for m in meta], any(m[2] for m in meta),
                        tabular=fmts[0] in ("csv", "parquet"))
    n = npartitions or max(len(files), 2)
    splits = [client.submit(_split, p, n) for p in pieces]
    jobs = [client.submit(_pages_of, [client.submit(_pick, s, b) for s in splits], kind, sources, *args)
            for b in range(n)]
    results = client.gather(jobs)
    del pieces
    table, audit = _assemble(sources, results)
    return table, audit, n

