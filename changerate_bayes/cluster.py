"""The per-page table on a Dask cluster: visits shuffled by page, the same vectorised code per partition."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .io import Audit
from .io._compressed import DECOMPRESSION_ERRORS, decompression_error
from .io._frame import read_frame
from .io._times import check_kinds, merge_kinds
from .io._tabular import _plan, check_columns
from .pages import allocate_crawls, merge_notes, one_note_per_check, page_table

__all__ = ["ClusterEstimates", "estimate_pages_dask", "per_page_partitions"]


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
        Partitions the visits were shuffled into.
    """

    table: pd.DataFrame
    audit: Audit
    n_partitions: int


def _partition(pdf: pd.DataFrame, columns, change_from, methods, prior, level, posterior_method, source,
               with_posterior=False):
    """One partition (every visit of its pages): its page table, audit, pages' first rows, time kinds
    and, ``with_posterior``, the compact history that determines each page's posterior.

    Naive and time-zone-aware times are not refused here but returned (the first row of
    each kind per time column), since they may sit in different partitions: the caller
    checks them over the whole log, as the pandas engine does.
    """
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
        from .crawl_schedule import posterior_history

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
    table = pd.concat([t for t, _ in tables], ignore_index=True)
    first = np.concatenate([r for _, r in tables])
    table = table.iloc[np.argsort(first, kind="stable")].reset_index(drop=True)
    table.attrs.update(tables[0][0].attrs)
    table.attrs["warnings"] = one_note_per_check(merge_notes(w for t, _ in tables for w in t.attrs["warnings"]))
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
