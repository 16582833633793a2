"""What runs inside the Dask engine's tasks: their thread and memory settings, and one group of files read and reduced.

A Dask worker is meant to run one task per core (``dask worker --nworkers N --nthreads 1``,
``LocalCluster(n_workers=N, threads_per_worker=1)``). Each task of
:mod:`changerate_bayes.crawllog.dask_engine` runs inside :func:`task_settings`:

- numba's parallel kernels (the grid posterior) use one thread in the task's thread
  (``numba.set_num_threads(1)``, local to that thread), and pyarrow's CPU pool one
  thread (``pyarrow.set_cpu_count(1)``, which also makes the Parquet reader decode in
  the task's thread instead of reading ahead on a second one) while a task runs:
  otherwise a 1-worker run already uses every core and 2 workers oversubscribe them;
- glibc's malloc keeps arrays of up to 32 MiB in its heap (mallopt ``M_MMAP_THRESHOLD``
  32 MiB, ``M_TRIM_THRESHOLD`` 64 MiB: the values glibc's adaptive threshold reaches in
  any process that has freed such arrays), set by the first task of a worker process
  that was started with ``MALLOC_TRIM_THRESHOLD_`` set, as Dask's nanny does (64 KiB).
  That setting also turns off glibc's adaptive mmap threshold, so every array above
  128 KiB is a fresh ``mmap`` whose pages are zeroed and faulted in, then unmapped:
  measured on the per-page reduction of 2·10^6 visits, 1.75× the CPU time (half of it
  in the kernel). The setting stays for the life of the process (restoring it and
  trimming the heap after each task, so that every task faulted its heap in again,
  measured 14.6 against 12.3 CPU seconds for 10^7 visits on one worker, under load);
  freed memory beyond 64 MiB at the top of the heap still goes back to the system.

:func:`read_reduce_group` is the task of a group of files that holds all the visits of
its pages (a ``page_bucket=K/`` folder, one file per host): the files are read and
reduced in the same task, with the single-machine bucket reducer of
:func:`changerate_bayes.crawllog.estimate_log` for CSV and Parquet, and only the per-page table,
the audit and what the client needs for its checks over all the files come back.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
from pathlib import Path

import numba
import numpy as np
import pandas as pd
import pyarrow as pa

from ..bayes import posterior_history
from ..history import CrawlHistory
from ..io import (
    DEFAULT_CHUNK_ROWS,
    FILE_STRIDE,
    Audit,
    PageBuckets,
    TabularScan,
    bucket_count,
    build_log,
    check_chunk_rows,
    compact_file,
    csv_rows_estimate,
    merge_pieces,
    page_hashes,
    parquet_rows,
    reduce_buckets,
    scan_csv,
    scan_parquet,
)
from .fetch_schedule import with_last_attempt
from .signal_log import part_signals
from .table import concat_part_tables, page_table

__all__ = ["read_reduce_group", "task_settings"]

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
_HEAP_MMAP, _HEAP_TRIM = 32 * 2**20, 64 * 2**20  # the largest values glibc's adaptive threshold reaches
_lock = threading.Lock()
_running = 0
_saved_cpu = None
_heap_set = False


def _libc():
    if not sys.platform.startswith("linux") or "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "mallopt") else None
    except OSError:  # not glibc (e.g. musl)
        return None


def _heap_for_arrays() -> None:
    """Once per process: glibc's malloc keeps arrays up to 32 MiB in its heap (module docstring)."""
    global _heap_set
    if _heap_set:
        return
    _heap_set = True
    libc = _libc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, _HEAP_MMAP)
        libc.mallopt(_M_TRIM_THRESHOLD, _HEAP_TRIM)


@contextlib.contextmanager
def task_settings():
    """Run the body as one task of a worker with one thread per core (module docstring).

    Thread-safe: pyarrow's thread count is set when the first of the worker's running
    tasks starts and restored when the last one ends; malloc's thresholds are set once.
    """
    global _running, _saved_cpu

    with _lock:
        if _running == 0:
            _saved_cpu = pa.cpu_count()
            pa.set_cpu_count(1)
            _heap_for_arrays()
        _running += 1
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(threads)
        with _lock:
            _running -= 1
            if _running == 0:
                pa.set_cpu_count(_saved_cpu)


class _KindChanged(Exception):
    """A file of the group decides changes differently from the group's first file (the client says so)."""


def _keyed_scan(files, store, stride):
    """A tabular scan that also records where each page was first seen (file index * stride + row)."""

    class Scan(TabularScan):
        def __init__(self):
            super().__init__(files, store)
            self.first_key = []  # per page code, in code order
            self.base = 0  # key of the current file's first row
            self.row = 0  # rows of the current file scanned so far
            self.first_kind = None

        def add(self, part):
            if self.first_kind is None:
                self.first_kind = self.kind
            elif self.kind != self.first_kind:
                raise _KindChanged
            n = part.page.size
            if n:
                new = part.page >= len(self.first_key)
                if new.any():  # new codes are consecutive, in order of first appearance
                    _, at = np.unique(part.page[new], return_index=True)
                    self.first_key.extend((self.base + self.row + np.flatnonzero(new)[at]).tolist())
                super().add(part)
            self.row += n

    return Scan()


def _tabular_group(files, indexes, fmt, mapping, change_from, chunk_rows, stride):
    """Scan CSV or Parquet files into page buckets: (scan, per-file facts) or (None, facts) if kinds differ."""
    chunk_rows = DEFAULT_CHUNK_ROWS if chunk_rows is None else check_chunk_rows(chunk_rows)
    files = [Path(f) for f in files]
    rows = parquet_rows(files) if fmt == "parquet" else csv_rows_estimate(files)
    store = PageBuckets(bucket_count(rows))
    scan = _keyed_scan(files, store, stride)
    scan.state = {"defer": True}  # naive/aware times recorded per file, checked over all files by the client
    facts = []
    for path, index in zip(files, indexes):
        scan.files, scan.kind, scan.base, scan.row = [path], None, index * stride, 0
        scan.state["kinds"] = {}
        before = store.rows
        try:
            if fmt == "parquet":
                scan_parquet(scan, mapping=mapping, change_from=change_from, chunk_rows=chunk_rows)
            else:
                scan_csv(scan, mapping=mapping, change_from=change_from, chunk_rows=chunk_rows)
        except _KindChanged:
            store.close()
            return None, facts + [(scan.kind, None, 0, (str(path), "", {}))]
        digest_col = scan.plans[-1].get("digest")
        facts.append(
            (
                scan.kind,
                digest_col,
                store.rows - before,
                (str(path), "row" if fmt == "parquet" else "line", scan.state["kinds"]),
                store.present if store.rows > before else None,
            )
        )
    scan.files = list(files)
    return scan, facts


def read_reduce_group(
    files,
    indexes,
    fmts,
    mapping,
    change_from,
    chunk_rows,
    page_key,
    sources,
    methods,
    prior,
    level,
    posterior_method,
    with_posterior=False,
    signals=None,
):
    """Read one group of files and reduce its pages to their rows of the page table.

    Returns
    -------
    dict
        ``table`` (pages in order of first appearance in the group; None when no page
        has two usable visits or the files' change rules differ), ``audit`` (None
        likewise when not reduced), ``first_key`` (per table row, file index * 2**40 + row
        in the file of the page's first visit), ``files`` (per file: change kind,
        digest column, rows, and (source, line word, naive/aware times)), ``any_digest`` (some row of
        the group has a digest; None without a digest column) and ``hashes`` (uint64
        hash of each page label); ``histories``, with ``with_posterior`` the
        :func:`~changerate_bayes.bayes.posterior_history` of the table's pages, part by
        part (else empty); ``signal_parts``, with ``signals`` (page labels and UTC ns of the
        log's signals) the :func:`~changerate_bayes.crawllog.signal_log.part_signals` of
        the table's pages, part by part (else empty).
    """
    with task_settings():  # page_table gathers the estimators' warnings in attrs
        out = {"table": None, "audit": None, "first_key": None, "histories": [], "signal_parts": []}
        if fmts[0] in ("csv", "parquet"):  # then all files have that format
            scan, facts = _tabular_group(files, indexes, fmts[0], mapping, change_from, chunk_rows, FILE_STRIDE)
            out["files"] = facts
            if scan is None:
                out["hashes"], out["any_digest"] = np.zeros(0, "u8"), None
            else:
                with scan.store as store:
                    labels = np.asarray(scan.labels, dtype=object)
                    out["hashes"] = page_hashes(labels)
                    out["any_digest"] = store.any_digest()
                    first_key = np.asarray(scan.first_key, dtype=np.int64)
                    audits, tables, codes = [], [], []
                    if store.rows:
                        for c, part in reduce_buckets(store, change_from=scan.kind, sources=sources):
                            audits.append(part.audit)
                            if part.history is not None:
                                tables.append(
                                    page_table(
                                        part,
                                        methods=methods,
                                        prior=prior,
                                        level=level,
                                        posterior_method=posterior_method,
                                    )
                                )
                                if with_posterior:  # a schedule: from each page's last fetch attempt
                                    tables[-1] = with_last_attempt(tables[-1], part)
                                codes.append(c)
                                if signals is not None:  # the bucket's pages' signals per crawl interval
                                    out["signal_parts"].append(part_signals(part, *signals, pages=labels[c]))
                                if with_posterior:  # its pages are named by their codes
                                    h = posterior_history(part.history)
                                    out["histories"].append(
                                        CrawlHistory.from_segments(
                                            h.flat_changed,
                                            h.flat_intervals,
                                            lengths=h.lengths,
                                            crawl_rate=h.crawl_rate,
                                            page_ids=labels[c],
                                        )
                                    )
                if audits:
                    out["audit"] = Audit.combine(audits, sources=sources)
                if tables:
                    table = concat_part_tables(tables, codes)
                    code = np.sort(np.concatenate(codes), kind="stable")
                    table["page"] = labels[code]
                    out["table"], out["first_key"] = table, first_key[code]
        else:
            pieces = [
                compact_file(
                    f,
                    k,
                    file_index=i,
                    columns=mapping,
                    change_from=change_from,
                    chunk_rows=chunk_rows,
                    page_key=page_key,
                )
                for f, k, i in zip(files, fmts, indexes)
            ]
            out["files"] = [
                (
                    p.kind,
                    p.digest_column,
                    0 if p.v is None else p.v.page.size,
                    (p.source, p.line_word, p.time_kinds) if p.v is not None else (p.source, "", {}),
                )
                for p in pieces
            ]
            out["any_digest"] = any(
                p.v is not None and (p.v.has_digest is None or p.v.has_digest.any()) for p in pieces
            )
            out["hashes"] = np.unique(page_hashes(np.concatenate([p.labels for p in pieces])))
            if len({p.kind for p in pieces}) == 1:
                v, labels, first_key, extra = merge_pieces(pieces)
                del pieces
                if v is not None:
                    log = build_log(
                        v, labels, change_from=out["files"][0][0], sources=sources, empty_ok=True, audit_extra=extra
                    )
                    out["audit"] = log.audit
                    if log.history is not None:
                        table = page_table(
                            log, methods=methods, prior=prior, level=level, posterior_method=posterior_method
                        )
                        if with_posterior:  # a schedule: from each page's last fetch attempt
                            table = with_last_attempt(table, log)
                        out["table"] = table
                        if with_posterior:
                            out["histories"].append(posterior_history(log.history))
                        if signals is not None:
                            out["signal_parts"].append(part_signals(log, *signals))
                        out["first_key"] = first_key[pd.Index(labels).get_indexer(table["page"])]
    return out
