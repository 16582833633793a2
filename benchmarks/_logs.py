"""The synthetic crawl log of the ingest benchmarks (``bench_ingest.py``, ``bench_dask.py``).

Parquet files of page URL, fetch time, HTTP status and content digest: Poisson crawls
every 6 h on average, lognormal change rates, 1% failed visits, 1% duplicate rows, 0.1%
adjacent rows swapped; the pages of the files are disjoint.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

__all__ = ["make_log"]


def make_log(folder: Path, n_visits: int, n_pages: int, n_files: int = 10, seed: int = 0) -> list[Path]:
    """Write the synthetic log as ``n_files`` Parquet files, one file's rows at a time."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    per_page = n_visits // n_pages
    rates = rng.lognormal(np.log(0.02), 1.5, n_pages)  # changes per hour
    labels = pa.array([f"https://example.org/p{i}" for i in range(n_pages)])
    paths = []
    pages_per_file = n_pages // n_files
    t0 = np.datetime64("2024-01-01T00:00:00", "s").astype(np.int64)
    for f in range(n_files):
        ids = np.arange(f * pages_per_file, (f + 1) * pages_per_file if f < n_files - 1 else n_pages)
        m = ids.size * per_page
        page = np.repeat(ids, per_page)
        gaps = rng.exponential(6 * 3600.0, m)  # Poisson crawls every 6 h on average
        t = np.cumsum(gaps).reshape(ids.size, per_page)
        t = t - t[:, :1] + rng.uniform(0, 86400, (ids.size, 1))
        t = (t.ravel() * 1e6).astype(np.int64) + t0 * 1_000_000  # µs
        dt = np.diff(t, prepend=t[:1]).astype(np.float64) / 3.6e9
        dt[np.arange(0, m, per_page)] = 0.0
        version = rng.poisson(np.repeat(rates[ids], per_page) * dt).reshape(ids.size, per_page).cumsum(axis=1).ravel()
        status = np.where(rng.random(m) < 0.01, 503, 200).astype(np.int16)
        order = np.arange(m)
        i = np.flatnonzero(rng.random(m - 1) < 0.001)  # a few adjacent rows out of order
        order[i], order[i + 1] = order[i + 1], order[i].copy()
        dup = np.flatnonzero(rng.random(m) < 0.01)  # 1% of rows repeated right after themselves
        order = order[np.sort(np.concatenate([np.arange(m), dup]), kind="stable")]
        table = pa.table(
            {
                "page": pc.take(labels, pa.array(page[order])),
                "fetch_time": pa.array(t[order], type=pa.timestamp("us", tz="UTC")),
                "status": pa.array(status[order]),
                "digest": pc.cast(pa.array(version[order] * 7919 + page[order]), pa.string()),
            }
        )
        path = folder / f"log-{f:02d}.parquet"
        pq.write_table(table, path, row_group_size=250_000)
        paths.append(path)
        del table
    return paths
