"""Burst model: one crawl step of the exact MMPP filter for 10^6 pages.

Goal: ``BurstFilter.update`` of 10^6 pages (one shared parameter set) in well under a
second: <= 0.5 s. Also shown: the per-page-scale filter (5 scales, 5 times the work),
the predictive ``prob_change_within`` of every page, and, as a yardstick measured in
the same run, the random-walk ``DynamicRateFilter.update`` of 10^4 pages (ratio per
page). Intervals are drawn across the two regimes of the 2 x 2 matrices (the
uniformisation series for small ντ and the spectral form beyond).

Run: ``uv run --locked python benchmarks/bench_bursts.py [n_pages]``.
"""

import sys
import time

import numpy as np
from _result import load_note, result  # noqa: E402  (the RESULT line read by run_all.py)

from changerate_bayes import BurstFilter, BurstParameters, DynamicRateFilter

GOAL_SECONDS = 0.5
STEPS = 5


def _best_of(fn, steps=STEPS):
    best = np.inf
    for j in range(steps):
        t0 = time.perf_counter()
        fn(j)
        best = min(best, time.perf_counter() - t0)
    return best


def main(n_pages: int = 1_000_000) -> None:
    rng = np.random.default_rng(1)
    params = BurstParameters(0.01, 1.0, 0.05, 0.5)  # per hour
    tau = rng.exponential(2.0, (STEPS, n_pages))  # hours
    changed = rng.random((STEPS, n_pages)) < 0.2
    mask = np.ones(n_pages, dtype=bool)
    small = BurstFilter(8, params=params, scales=(0.5, 2.0))  # compile (or load from numba's cache)
    small.update(changed[0, :8], tau[0, :8], mask[:8])
    small.prob_change_within(tau[0, :8])
    print(f"{n_pages} pages, intervals ~ Exp(mean 2 h), {params}; {load_note()}")

    f = BurstFilter(n_pages, params=params)
    dt = _best_of(lambda j: f.update(changed[j], tau[j], mask))
    ok = dt <= GOAL_SECONDS
    print(
        f"{'BurstFilter.update, shared parameters':52s} {dt:7.3f} s  ({dt / n_pages * 1e9:.0f} ns per page)  "
        f"goal <= {GOAL_SECONDS:g} s: {'met' if ok else 'NOT met'}",
        flush=True,
    )
    result(
        f"burst filter, one crawl step of {n_pages:,} pages: ≤ {GOAL_SECONDS:g} s",
        f"{dt:.3f} s",
        ok,
        value=dt,
        unit="s",
        note=load_note(),
    )
    dp = _best_of(lambda j: f.prob_change_within(tau[j]))
    print(f"{'BurstFilter.prob_change_within':52s} {dp:7.3f} s")
    result(f"burst filter, predictive of {n_pages:,} pages", f"{dp:.3f} s", None, value=dp, unit="s")

    g = BurstFilter(n_pages, params=params, scales=(0.1, 0.32, 1.0, 3.2, 10.0))
    ds = _best_of(lambda j: g.update(changed[j], tau[j], mask), steps=2)
    print(f"{'BurstFilter.update, 5 per-page scales':52s} {ds:7.3f} s")
    result(f"burst filter with 5 scales, one crawl step of {n_pages:,} pages", f"{ds:.3f} s", None, value=ds, unit="s")

    n_dyn = 10_000
    d = DynamicRateFilter(n_dyn, grid=np.geomspace(1e-4, 1e2, 200), typical_interval=2.0)
    d.update(changed[0, :n_dyn], tau[0, :n_dyn])
    dd = _best_of(lambda j: d.update(changed[j, :n_dyn], tau[j, :n_dyn]), steps=2)
    ratio = (dd / n_dyn) / (dt / n_pages)
    print(
        f"{'DynamicRateFilter.update (unit-free default), 10^4':52s} {dd:7.3f} s  "
        f"(per page {ratio:.0f} x the burst filter's)"
    )
    result(
        "random-walk filter per page ÷ burst filter per page, one crawl step (same run)",
        f"{ratio:.0f}x",
        None,
        value=ratio,
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
