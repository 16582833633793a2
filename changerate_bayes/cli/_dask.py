"""The Dask engine of the commands that read crawl logs: the visits as a Dask DataFrame, and a client."""

from __future__ import annotations

import contextlib

__all__ = ["dask_client", "dask_visits"]


def dask_visits(args, fmt: str):
    """The logs ``args.logs`` (format ``fmt``) as a Dask DataFrame, with the column mapping and
    change rule to read them: ``(ddf, columns, change_from)``.

    Raises
    ------
    ValueError
        For a format the Dask engine does not read (naming ``--engine``), or a compressed
        file that cannot be decompressed (naming the file).
    """
    import dask.dataframe as dd

    if fmt not in ("csv", "parquet", "ota"):
        raise ValueError(f"--engine dask reads CSV, Parquet and OTA logs; got format {fmt!r} (use --engine pandas)")
    from changerate_bayes.io._compressed import DECOMPRESSION_ERRORS, check_complete, decompression_error

    for path in args.logs:
        check_complete(path)  # a cut zstd file would read as fewer rows
    try:  # dask reads the head of the first file here, to learn the columns
        if fmt == "parquet":
            ddf = dd.read_parquet(args.logs)
        else:
            gz = any(str(p).endswith((".gz", ".bz2", ".xz", ".zst")) for p in args.logs)
            ddf = dd.read_csv(args.logs, dtype=str, keep_default_na=False, blocksize=None if gz else "64MB")
    except DECOMPRESSION_ERRORS as exc:
        raise decompression_error(args.logs[0], exc, args.logs[0]) from None
    columns, change = (getattr(args, "column_map", None), "auto")
    if fmt == "ota":
        columns, change = {"changed": f"changed_{args.ota_changed}", **(columns or {})}, "changed"
    return ddf, columns, change


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
            cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster)
        try:
            yield client
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
