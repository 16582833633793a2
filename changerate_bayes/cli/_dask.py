"""The Dask engine of the commands that read crawl logs: how the logs are read, and a client."""

from __future__ import annotations

import contextlib
import logging
from typing import NamedTuple

__all__ = ["DaskInput", "dask_client", "dask_visits"]

#: The log formats the Dask engine reads (``"auto"``: CDX and WARC files together).
DASK_FORMATS = ("csv", "parquet", "ota", "cdx", "warc", "auto")


class DaskInput(NamedTuple):
    """How the Dask engine reads a set of logs.

    ``files`` (a list of paths) when each file is read by one task (CDX, CDXJ, WARC, and
    several CSV or Parquet files), with ``ddf`` None; otherwise ``ddf``, the visits as a
    Dask DataFrame (one CSV or Parquet file read in blocks, or OTA logs), with ``files``
    None. ``columns`` and ``change_from`` are the column mapping and change rule to read
    them with.
    """

    ddf: object
    files: list | None
    columns: dict | None
    change_from: str


def dask_visits(args, fmt: str, files) -> DaskInput:
    """How the Dask engine reads the logs ``files`` (format ``fmt``, as the pandas engine resolved it).

    ``args`` holds ``column_map`` (the parsed ``--columns``) and ``ota_changed``.

    Raises
    ------
    ValueError
        For a format the Dask engine does not read (naming ``--engine``), a compressed
        file that cannot be decompressed, or a CSV row with more or fewer fields than its
        header (naming the file and line, as the pandas engine does).
    """
    import dask.dataframe as dd

    if fmt not in DASK_FORMATS:
        raise ValueError(f"--engine dask reads CSV, Parquet, OTA, CDX and WARC logs; got format {fmt!r}")
    # one task per file (no shuffle when the files partition the pages); one CSV or Parquet file in blocks
    by_file = fmt in ("cdx", "warc", "auto") or (fmt in ("csv", "parquet") and len(files) > 1)
    from changerate_bayes.io._compressed import DECOMPRESSION_ERRORS, check_complete, decompression_error
    from changerate_bayes.io._fields import check_field_counts

    for path in files:
        check_complete(path)  # a cut zstd file would read as fewer rows
        if fmt in ("csv", "ota") and not by_file:  # as the pandas reader (which reads each file of by_file)
            check_field_counts(path, src=str(path))
    columns, change = (getattr(args, "column_map", None), "auto")
    if fmt == "ota":
        columns, change = {"changed": f"changed_{args.ota_changed or 'filtered'}", **(columns or {})}, "changed"
    if by_file:
        return DaskInput(None, list(files), columns, change)
    try:  # dask reads the head of the first file here, to learn the columns
        if fmt == "parquet":
            ddf = dd.read_parquet([str(f) for f in files])
        else:
            gz = any(str(p).endswith((".gz", ".bz2", ".xz", ".zst")) for p in files)
            ddf = dd.read_csv([str(f) for f in files], dtype=str, keep_default_na=False,
                              blocksize=None if gz else "64MB")
    except DECOMPRESSION_ERRORS as exc:
        raise decompression_error(files[0], exc, files[0]) from None
    return DaskInput(ddf, None, columns, change)


@contextlib.contextmanager
def dask_client(args):
    """A client of ``args.scheduler``, or of a local cluster of 2 worker processes (closed on
    exit); Dask's harmless log lines silenced meanwhile."""
    from distributed import Client, LocalCluster

    from changerate_bayes._upstream import quiet_dask_logs

    with quiet_dask_logs():
        cluster = None
        if args.scheduler:
            client = Client(args.scheduler)
        else:
            # a task's error reaches the command as its one-line message; the workers' own log of it
            # ("Compute Failed" with the traceback) would print that error a second time, as a traceback
            # the dashboard on a free port: dashboard_address=None still tries Dask's default 8787, and
            # warns (twice) whenever another cluster on the machine holds it
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                   silence_logs=logging.CRITICAL)
            client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
