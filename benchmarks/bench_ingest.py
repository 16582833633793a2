"""Ingestion and per-page estimation throughput: pandas engine vs Dask on a local cluster.

A synthetic crawl log of 10^7 visits of 10^5 pages (Parquet, 10 files; page label,
fetch time, HTTP status, content digest; 1% failed visits, 1% duplicates, some rows
out of order) is read and turned into the per-page table of
``changerate_bayes.estimate_pages`` (all seven estimators' final values, the exact
posterior mean and 90% interval, the crawl allocation):

* pandas engine: ``read_log`` (chunked) + ``estimate_pages``, in one process;
* Dask: ``estimate_pages_dask`` on ``distributed.LocalCluster(n_workers=2)``.

Each engine runs in its own process so that its peak resident memory (``ru_maxrss``;
for Dask the scheduler-side client plus the peak of each worker) is its own. Prints
visits per second and peak memory for both, and whether the two tables agree to 1e-12.

Run: ``uv run --locked python benchmarks/bench_ingest.py [--visits 10000000] [--pages 100000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _result(goal, measured, meets, **extra):
    print("RESULT " + json.dumps({"goal": goal, "measured": measured, "meets": meets, **extra}, ensure_ascii=False),
          flush=True)


def _load() -> str:
    try:
        return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    except OSError:
        return f"{os.cpu_count()} cores"


def make_log(folder: Path, n_visits: int, n_pages: int, n_files: int = 10, seed: int = 0) -> list[Path]:
    """Write the synthetic log as ``n_files`` Parquet files, one chunk at a time."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    per_page = n_visits // n_pages
    rates = rng.lognormal(np.log(0.02), 1.5, n_pages)  # changes per hour
    paths = []
    pages_per_file = n_pages // n_files
    t0 = np.datetime64("2024-01-01T00:00:00", "s").astype(np.int64)
    for f in range(n_files):
        ids = np.arange(f * pages_per_file, (f + 1) * pages_per_file if f < n_files - 1 else n_pages)
        m = ids.size * per_page
        page = np.repeat(ids, per_page)
        gaps = rng.exponential(6 * 3600.0, m)  # Poisson crawls every 6 h on average
        gaps[np.arange(0, m, per_page)] = rng.uniform(0, 86400, ids.size)
        t = np.cumsum(gaps).reshape(ids.size, per_page)
        t = t - t[:, :1] + rng.uniform(0, 86400, (ids.size, 1))
        t = t.ravel().astype(np.int64) + t0
        # content version = number of Poisson changes so far
        lam = np.repeat(rates[ids], per_page) * np.diff(np.concatenate(([0], t - t0)).reshape(-1))[: m] / 3600.0
        lam[np.arange(0, m, per_page)] = 0.0
        version = rng.poisson(np.clip(lam, 0, None)).reshape(ids.size, per_page).cumsum(axis=1).ravel()
        status = np.where(rng.random(m) < 0.01, 503, 200)
        order = np.arange(m)
        swap = rng.random(m - 1) < 0.001  # a few adjacent rows out of order
        i = np.flatnonzero(swap)
        order[i], order[i + 1] = order[i + 1], order[i].copy()
        frame = pd.DataFrame({
            "page": pd.Series(page[order]).map("https://example.org/p{}".format),
            "fetch_time": pd.to_datetime(t[order], unit="s", utc=True),
            "status": status[order].astype(np.int16),
            "digest": pd.Series(version[order] * 7919 + page[order]).map("{:x}".format),
        })
        dup = rng.random(m) < 0.01
        frame = pd.concat([frame, frame[dup]]).sort_index(kind="stable").reset_index(drop=True)
        path = folder / f"log-{f:02d}.parquet"
        frame.to_parquet(path, index=False, row_group_size=250_000)
        paths.append(path)
    return paths


def _pandas_engine(paths, out):
    import resource

    from changerate_bayes import estimate_pages
    from changerate_bayes.io import read_log

    t0 = time.perf_counter()
    log = read_log(paths, format="parquet")
    t_read = time.perf_counter() - t0
    table = estimate_pages(log, budget=1e5)
    seconds = time.perf_counter() - t0
    table.to_parquet(out)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "read_seconds": t_read, "peak": peak, "rows": log.audit.rows_read}))


def _dask_engine(paths, out):
    import resource

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from changerate_bayes.cluster import estimate_pages_dask

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           memory_limit="3GiB")
    client = Client(cluster)
    try:
        t0 = time.perf_counter()
        ddf = dd.read_parquet([str(p) for p in paths])
        res = estimate_pages_dask(ddf, budget=1e5, npartitions=2 * len(paths), client=client)
        seconds = time.perf_counter() - t0
        workers = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        res.table.to_parquet(out)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(json.dumps({"seconds": seconds, "peak": peak, "worker_peaks": list(workers.values()),
                          "rows": res.audit.rows_read}))
    finally:
        client.close()
        cluster.close()


def _run(engine, paths, out):
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import bench_ingest as b; "
            f"b._{engine}_engine({[str(p) for p in paths]!r}, {str(out)!r})")
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{engine} engine failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--visits", type=int, default=10_000_000)
    ap.add_argument("--pages", type=int, default=100_000)
    ap.add_argument("--no-dask-goals", action="store_true",
                    help="skip bench_dask.py (Dask 1 -> 2 workers, Dask against pandas, Common Crawl shards)")
    args = ap.parse_args(argv)
    import numpy as np
    import pandas as pd

    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as d:
        folder = Path(d)
        t = time.perf_counter()
        paths = make_log(folder, args.visits, args.pages)
        print(f"synthetic log: {args.visits} visits of {args.pages} pages (+1% duplicates) in {len(paths)} "
              f"Parquet files, written in {time.perf_counter() - t:.1f} s; {_load()}")
        pan = _run("pandas", paths, folder / "pandas.parquet")
        dsk = _run("dask", paths, folder / "dask.parquet")
        a, b = pd.read_parquet(folder / "pandas.parquet"), pd.read_parquet(folder / "dask.parquet")
        num = [c for c in a.columns if c not in ("page", "first_visit", "last_visit")]
        same = (a["page"].tolist() == b["page"].tolist()
                and np.allclose(a[num].to_numpy(float), b[num].to_numpy(float), rtol=1e-12, atol=0, equal_nan=True))
    rows = pan["rows"]
    size = f"{args.visits:.0e} visits of {args.pages:.0e} pages"
    gb = 2.0 ** 30
    print(f"pandas engine: {pan['seconds']:.1f} s (read {pan['read_seconds']:.1f} s), "
          f"{rows / pan['seconds']:.3g} visits/s, peak RSS {pan['peak'] / gb:.2f} GiB")
    wpk = max(dsk["worker_peaks"])
    print(f"dask (2 local workers): {dsk['seconds']:.1f} s, {rows / dsk['seconds']:.3g} visits/s, "
          f"client peak {dsk['peak'] / gb:.2f} GiB, worker peaks {[round(w / gb, 2) for w in dsk['worker_peaks']]} GiB")
    note = _load()
    _result(f"pandas engine throughput, {size} (information)", f"{rows / pan['seconds']:.3g} visits/s", None,
            value=rows / pan["seconds"], unit="visits/s", note=note)
    _result(f"pandas engine peak memory, {size} (information)", f"{pan['peak'] / gb:.2f} GiB", None,
            value=pan["peak"] / gb, unit="GiB", note=note)
    _result(f"dask LocalCluster(2 workers) throughput, {size} (information)",
            f"{rows / dsk['seconds']:.3g} visits/s", None, value=rows / dsk["seconds"], unit="visits/s", note=note)
    _result(f"dask peak memory per worker, {size} (information)", f"{wpk / gb:.2f} GiB", None,
            value=wpk / gb, unit="GiB", note=f"client {dsk['peak'] / gb:.2f} GiB; {note}")
    _result("dask and pandas per-page tables agree to 1e-12", "agree" if same else "differ", bool(same))
    if not args.no_dask_goals:  # the Dask engine's goals, file by file, in their own script
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import bench_dask

        bench_dask.main(["--visits", str(args.visits), "--pages", str(args.pages)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
