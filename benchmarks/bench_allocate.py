"""Benchmark: the crawl allocation of the commands (``allocate_crawls``, default policy and
budget) on 10^6 pages, against ``optimal_crawl_rates`` on the same pages.

The page table is synthetic, shaped like ``bench_ingest``'s log: posterior means log-normal
around 0.48 changes per day (log-sd 1.5), 90% credible intervals from 1.05x to 6x either
side of the mean (10% with a lower bound of 0: a point-mass posterior), crawls every 6 h on
average, so the default budget (the crawls the log shows, Σ 24 / mean interval) is above the
total change rate and the default policy "auto" is the freshness index (``index_mean``).

Timed, in the same process, after three calls of each on the same pages (printed: the first
loads the numba kernels from their cache and builds the two tables of the index, once per
process; over the next ones the C allocator settles on reusing the freed arrays instead of
asking the system for fresh, zeroed memory at each call): ``allocate_crawls(table)`` (the
whole call: checks, the posterior's log-normal, the schedule, the table copy) and
``optimal_crawl_rates(posterior_mean, 1, budget)`` (the plug-in water-filling at the same
budget), alternately, ``--repeats`` times each; the ratio of the medians is the result (a
ratio measured in one run is what holds on a shared machine). A command that allocates once
pays the first call's time (printed). Peak memory: ``tracemalloc``'s peak of one more ``allocate_crawls`` call (NumPy
and pandas allocate through it), in bytes per page.

Goal printed (``RESULT`` lines, see ``_result.py``): allocate_crawls within 3x of
optimal_crawl_rates at 10^6 pages; the peak memory per page for information.

Run: ``uv run --locked python benchmarks/bench_allocate.py [--pages 1000000] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd

from changerate_bayes.crawllog import allocate_crawls
from changerate_bayes.scheduling import optimal_crawl_rates

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _result import load_note, result  # noqa: E402

GOAL_RATIO = 3.0


def page_table(n_pages: int, seed: int = 0) -> pd.DataFrame:
    """A page table with the columns ``allocate_crawls`` reads (rates per day)."""
    rng = np.random.default_rng(seed)
    mean = rng.lognormal(np.log(0.02 * 24), 1.5, n_pages)
    spread = rng.uniform(1.05, 6.0, n_pages)
    lower = mean / spread
    lower[rng.random(n_pages) < 0.1] = 0.0
    table = pd.DataFrame(
        {
            "page": np.arange(n_pages),
            "mean_interval_h": rng.gamma(50.0, 6.0 / 50.0, n_pages),
            "posterior_mean": mean,
            "posterior_lower": lower,
            "posterior_upper": mean * spread,
        }
    )
    table.attrs["level"] = 0.9
    return table


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pages", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)

    table = page_table(args.pages)
    mean = table["posterior_mean"].to_numpy()
    print(f"{args.pages:.0e} pages; {load_note()}", flush=True)
    warm_alloc, warm_water = [], []
    for _ in range(3):  # the first loads the kernels and builds the tables of the index
        t0 = time.perf_counter()
        first = allocate_crawls(table)
        t1 = time.perf_counter()
        optimal_crawl_rates(mean, 1.0, first.attrs["budget_per_day"])
        warm_alloc.append(t1 - t0)
        warm_water.append(time.perf_counter() - t1)
    print(
        f"first three calls: allocate_crawls {' '.join(f'{t:.3f}' for t in warm_alloc)} s, "
        f"optimal_crawl_rates {' '.join(f'{t:.3f}' for t in warm_water)} s"
    )
    t_alloc, t_water = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        out = allocate_crawls(table)
        t_alloc.append(time.perf_counter() - t0)
        budget = out.attrs["budget_per_day"]
        t0 = time.perf_counter()
        optimal_crawl_rates(mean, 1.0, budget)
        t_water.append(time.perf_counter() - t0)
    note = load_note()
    a, w = statistics.median(t_alloc), statistics.median(t_water)
    spent = out["crawls_per_day"].sum() / budget - 1.0
    print(
        f"allocate_crawls (policy {out.attrs['policy']}, budget {budget:.4g}/day, "
        f"{out.attrs['n_at_revisit_bound']} pages at the revisit bound, spend - budget {spent:.1e} relative): "
        f"{' '.join(f'{t:.3f}' for t in t_alloc)} s",
        flush=True,
    )
    print(f"optimal_crawl_rates, same pages and budget: {' '.join(f'{t:.3f}' for t in t_water)} s; {note}")
    tracemalloc.start()
    allocate_crawls(table)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(
        f"allocate_crawls peak traced memory: {peak / 1e6:.0f} MB, {peak / args.pages:.0f} bytes a page "
        f"(the table itself: {table.memory_usage(deep=True).sum() / args.pages:.0f} bytes a page)"
    )

    size = f"{args.pages:.0e} pages"
    ratio = a / w
    result(
        f"allocate_crawls (default policy and budget) / optimal_crawl_rates, {size}: <= {GOAL_RATIO:g}x",
        f"{ratio:.1f}x ({a:.2f} s / {w:.3f} s, medians of {args.repeats})",
        ratio <= GOAL_RATIO,
        value=ratio,
        unit="x",
        note=note,
    )
    result(
        f"allocate_crawls peak traced memory, {size} (information)",
        f"{peak / args.pages:.0f} bytes a page",
        None,
        value=peak / args.pages,
        unit="bytes/page",
        note=note,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
