"""Crawl logs at memory speed: Parquet -> per-page table, against pyarrow's read+sort floor.

A synthetic crawl log (Parquet, 10 files; page URL, fetch time, HTTP status, content
digest; Poisson crawls every 6 h on average, lognormal change rates, 1% failed visits,
1% duplicate rows, 0.1% adjacent rows swapped) is turned into the per-page table of
``changerate_bayes.estimate_pages`` (every estimator's final value, the exact posterior
mean and 90% interval, the crawl allocation) by

* ``estimate_log`` (the log reduced one bucket of pages at a time, memory bounded by
  the pages), and, at the throughput size only,
* ``estimate_pages(read_log(...))`` (the whole history in memory), whose table must be
  the same.

Both run as the ``estimate`` and ``schedule`` commands do by default: no budget given, so
the crawl allocation shares the crawls per day the log shows (here above the total change
rate: the freshness index's schedule, ``allocate_crawls``' default). ``estimate_log`` also
runs with a given budget of 10^5 crawls per day (``--budget``), below the total change
rate, where the allocation is round robin: the difference of the two is the cost of the
index's schedule. The two alternate, ``--repeats`` times each (each run its own process),
and the fastest run of each is shown (the least disturbed on a shared machine).

Each run is its own process, so that its peak resident memory (``ru_maxrss``) is its own.
In the same run, the floor: the time pyarrow needs to read the same columns of the same
files and sort them by (page, time) (``Table.sort_by``), and the ratio of
``estimate_log``'s time to it (a ratio measured in one run is what holds on a shared
machine).

Goals printed (``RESULT`` lines, see ``_result.py``): >= 10^6 visits/s end to end at
10^7 visits with the default budget (and, for information, with the given one); peak
memory <= 2 GB at 10^8 visits (default budget) (``--memory-visits``; the largest size
that fits the disk is used and stated when 10^8 does not); the ratio to the floor.

Run: ``uv run --locked python benchmarks/bench_ingest.py [--visits 10000000] [--pages 100000]
[--budget 100000] [--repeats 2] [--memory-visits 100000000] [--no-check]``.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).parent))
from _logs import make_log  # noqa: E402
from _result import load_note, result  # noqa: E402
from _timing import run_in_process  # noqa: E402

GB = 1e9
THROUGHPUT_GOAL = 1e6  # visits per second, end to end, at 10^7 visits
MEMORY_GOAL = 2 * GB  # peak resident bytes at 10^8 visits
PARQUET_BYTES_PER_ROW = 14  # about, for this log (for the disk check)
SPILL_BYTES_PER_ROW = 36  # compact rows written by estimate_log beyond its memory budget


# ----------------------------------------------------------------------------- engines
def _floor(paths, out, budget=None):
    """pyarrow reads the columns and sorts them by (page, time): the floor (``budget`` unused)."""
    t0 = time.perf_counter()
    table = pq.read_table(paths, columns=["page", "fetch_time", "status", "digest"])
    t_read = time.perf_counter() - t0
    table = table.sort_by([("page", "ascending"), ("fetch_time", "ascending")])
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"seconds": seconds, "read_seconds": t_read, "peak": peak, "rows": table.num_rows}))


def _stream(paths, out, budget=None):
    """estimate_log: bucket by bucket, memory bounded by the pages (``budget`` None: the default)."""
    # the package is imported here, not at the top: the floor's process must not carry it (its peak memory is its own)
    from changerate_bayes import estimate_log
    from changerate_bayes.estimators import METHODS

    t0 = time.perf_counter()
    res = estimate_log(paths, format="parquet", methods=METHODS, budget=budget)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if out:
        res.table.to_parquet(out)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak": peak,
                "rows": res.audit.rows_read,
                "pages": len(res.table),
                "policy": res.table.attrs["policy"],
                "budget": res.table.attrs["budget_per_day"],
                "buckets": res.n_buckets,
                "spilled": res.spilled_bytes,
                "audit": res.audit.as_dict(),
            }
        )
    )


def _whole(paths, out, budget=None):
    """read_log + estimate_pages: the whole history in memory."""
    # imported here, not at the top: the floor's process must not carry the package
    from changerate_bayes import estimate_pages
    from changerate_bayes.estimators import METHODS
    from changerate_bayes.io import read_log

    t0 = time.perf_counter()
    log = read_log(paths, format="parquet")
    t_read = time.perf_counter() - t0
    table = estimate_pages(log, methods=METHODS, budget=budget)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    table.to_parquet(out)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "read_seconds": t_read,
                "peak": peak,
                "rows": log.audit.rows_read,
                "audit": log.audit.as_dict(),
            }
        )
    )


def _run(engine, paths, out=None, budget=None):
    return run_in_process(
        "bench_ingest", f"_{engine}", [str(p) for p in paths], None if out is None else str(out), budget, what=engine
    )


def _same_tables(a_path, b_path) -> tuple[bool, str]:
    """Exactly equal, except MLE/MM roots to 1e-12 relative (their solvers stop at ~1e-15)."""
    import pandas as pd  # here, not at the top: the floor's process must not carry pandas either

    a, b = pd.read_parquet(a_path), pd.read_parquet(b_path)
    if list(a.columns) != list(b.columns) or a["page"].tolist() != b["page"].tolist():
        return False, "different pages or columns"
    worst = 0.0
    for c in a.columns:
        if c == "page":
            continue
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if not pd.api.types.is_numeric_dtype(a[c]):  # times and labels (rate_method, rate_bound): exactly
            if not (x == y).all():
                return False, f"{c} differs"
            continue
        x, y = x.astype(float), y.astype(float)
        if np.array_equal(x, y, equal_nan=True):
            continue
        fin = np.isfinite(x) & (x != 0)
        if not np.array_equal(np.isfinite(x), np.isfinite(y)) or not np.array_equal(x[~fin], y[~fin], equal_nan=True):
            return False, f"{c}: non-finite values differ"
        rel = float(np.max(np.abs(x[fin] - y[fin]) / np.abs(x[fin])))
        worst = max(worst, rel)
        if rel > 1e-12:
            return False, f"{c}: relative difference {rel:.2g}"
    return True, f"largest relative difference {worst:.2g}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--visits", type=int, default=10_000_000, help="throughput size (default 10^7)")
    ap.add_argument("--pages", type=int, default=100_000)
    ap.add_argument(
        "--repeats",
        type=int,
        default=2,
        help="runs of estimate_log with each budget, alternately (the fastest is shown)",
    )
    ap.add_argument(
        "--budget",
        type=float,
        default=1e5,
        help="the given budget, crawls per day (default 1e5, below the log's total change rate)",
    )
    ap.add_argument(
        "--memory-visits", type=int, default=100_000_000, help="size of the memory run (default 10^8; 0 skips it)"
    )
    ap.add_argument("--memory-pages", type=int, default=100_000)
    ap.add_argument("--no-check", action="store_true", help="skip the whole-log path and the table comparison")
    ap.add_argument("--folder", default=None, help="where the logs are written (default: a temporary folder)")
    ap.add_argument(
        "--no-dask-goals",
        action="store_true",
        help="skip bench_dask.py (Dask 1 -> 2 workers, Dask against pandas, Common Crawl shards)",
    )
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-ingest-", dir=args.folder) as d:
        folder = Path(d)
        t = time.perf_counter()
        paths = make_log(folder / "log", args.visits, args.pages)
        print(
            f"synthetic log: {args.visits:.0e} visits of {args.pages:.0e} pages (+1% duplicates) in {len(paths)} "
            f"Parquet files, written in {time.perf_counter() - t:.1f} s; {load_note()}",
            flush=True,
        )
        floor = _run("floor", paths)
        note_floor = load_note()
        runs = {"default": [], "given": []}
        for k in range(args.repeats):  # alternately, each its own process; the fastest of each kept
            runs["default"].append((_run("stream", paths, folder / "stream.parquet" if k == 0 else None), load_note()))
            runs["given"].append((_run("stream", paths, budget=args.budget), load_note()))
        (stream, note), (given, note_given) = (
            min(runs[key], key=lambda r: r[0]["seconds"]) for key in ("default", "given")
        )
        rows = stream["rows"]
        print(
            f"floor (pyarrow read + sort by page, time): {floor['seconds']:.1f} s (read {floor['read_seconds']:.1f} s), "
            f"peak {floor['peak'] / GB:.2f} GB; {note_floor}"
        )
        for run, what, when in ((stream, "default budget", note), (given, "given budget", note_given)):
            print(
                f"estimate_log, {what} ({run['budget']:.4g} crawls/day, allocation {run['policy']}): "
                f"{run['seconds']:.1f} s, {rows / run['seconds']:.3g} visits/s, {run['buckets']} buckets, "
                f"peak {run['peak'] / GB:.2f} GB; {run['seconds'] / floor['seconds']:.1f}x the floor; {when}",
                flush=True,
            )
        whole = same = None
        if not args.no_check:
            whole = _run("whole", paths, folder / "whole.parquet")
            same = _same_tables(folder / "whole.parquet", folder / "stream.parquet")
            same = (
                same[0] and whole["audit"] == stream["audit"],
                same[1] + ("" if whole["audit"] == stream["audit"] else "; the audits differ"),
            )
            print(
                f"read_log + estimate_pages: {whole['seconds']:.1f} s (read {whole['read_seconds']:.1f} s), "
                f"{rows / whole['seconds']:.3g} visits/s, peak {whole['peak'] / GB:.2f} GB; tables "
                f"{'agree' if same[0] else 'DIFFER'} ({same[1]}); {load_note()}",
                flush=True,
            )
        shutil.rmtree(folder / "log")

        big = None
        if args.memory_visits:
            n = args.memory_visits
            free = shutil.disk_usage(folder).free
            fits = int(0.8 * free / (PARQUET_BYTES_PER_ROW + SPILL_BYTES_PER_ROW))
            if fits < n:
                n = 10 ** int(math.log10(fits)) if fits >= 10 else 0
            if n:
                t = time.perf_counter()
                big_paths = make_log(folder / "big", n, args.memory_pages)
                print(
                    f"memory run: {n:.0e} visits of {args.memory_pages:.0e} pages written in "
                    f"{time.perf_counter() - t:.1f} s",
                    flush=True,
                )
                big = _run("stream", big_paths)
                big["visits"] = n
                big["note"] = load_note()
                print(
                    f"estimate_log at {n:.0e} visits: {big['seconds']:.1f} s, {big['rows'] / big['seconds']:.3g} "
                    f"visits/s, {big['buckets']} buckets, {big['spilled'] / GB:.1f} GB spilled to disk, "
                    f"peak {big['peak'] / GB:.2f} GB; {big['note']}",
                    flush=True,
                )

    size = f"{args.visits:.0e} visits of {args.pages:.0e} pages"
    vps = rows / stream["seconds"]
    result(
        f"end to end, Parquet -> per-page table (estimate_log, default budget), {size}: >= 1e6 visits/s",
        f"{vps:.3g} visits/s ({stream['seconds']:.1f} s, allocation {stream['policy']})",
        vps >= THROUGHPUT_GOAL,
        value=vps,
        unit="visits/s",
        note=note,
    )
    vps_given = rows / given["seconds"]
    result(
        f"end to end, Parquet -> per-page table (estimate_log, budget {args.budget:.3g}/day), {size} (information)",
        f"{vps_given:.3g} visits/s ({given['seconds']:.1f} s, allocation {given['policy']})",
        None,
        value=vps_given,
        unit="visits/s",
        note=note_given,
    )
    ratio = stream["seconds"] / floor["seconds"]
    result(
        f"estimate_log time / read+sort floor (pyarrow reads the columns, sorts by page and time), {size} "
        "(information)",
        f"{ratio:.1f}x ({stream['seconds']:.1f} s / {floor['seconds']:.1f} s)",
        None,
        value=ratio,
        unit="x",
        note=note,
    )
    if big is not None:
        tag = f"{big['visits']:.0e} visits of {args.memory_pages:.0e} pages"
        if big["visits"] < args.memory_visits:
            tag += f" (the largest size that fits the disk; {args.memory_visits:.0e} asked)"
        result(
            f"peak memory of estimate_log, {tag}: <= 2 GB",
            f"{big['peak'] / GB:.2f} GB",
            big["peak"] <= MEMORY_GOAL,
            value=big["peak"] / GB,
            unit="GB",
            note=big["note"],
        )
    if whole is not None:
        result(
            f"read_log + estimate_pages (whole history in memory), {size} (information)",
            f"{rows / whole['seconds']:.3g} visits/s, peak {whole['peak'] / GB:.2f} GB",
            None,
            value=rows / whole["seconds"],
            unit="visits/s",
            note=note,
        )
        result(
            "estimate_log's table and audit equal those of estimate_pages(read_log(...))",
            "equal" if same[0] else "differ",
            same[0],
            note=same[1],
        )
    if not args.no_dask_goals:  # Dask 1 -> 2 workers and Dask against pandas at 1e7 visits: bench_dask.py
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import bench_dask  # only when its goals are asked for (it starts Dask clusters)

        bench_dask.main(["--visits", str(args.visits), "--pages", str(args.pages)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
