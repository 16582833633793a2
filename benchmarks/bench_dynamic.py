"""Dynamic posterior: 10^5 pages × 100 crawls on a 200-point lattice of log Δ.

Goal: <= 10 s on 2 cores for the forward filter with one volatility. Wall time depends on
how busy the machine is; CPU time / 2 is the wall time on 2 idle cores. Also shown: the
forward-backward smoother, the streaming filter (one ``update`` per crawl), and the
average over five volatilities. The cost per page and crawl is O(G · (2B + 1)), B the
half-width of the random-walk kernel in lattice nodes (≈ 6σ√τ/h + 3), so it is printed.

Run: ``uv run --locked python benchmarks/bench_dynamic.py [n_pages]``.
"""

import sys
import time

import numpy as np
from _result import result  # noqa: E402  (the RESULT line read by run_all.py)

from changerate_bayes import DynamicRateFilter, dynamic_posterior

GOAL_SECONDS = 10.0


def main(n_pages: int = 100_000, n_crawls: int = 100, grid_size: int = 200) -> None:
    rng = np.random.default_rng(1)
    tau = rng.exponential(1.0, (n_pages, n_crawls))  # hours, Poisson crawls at 1 per hour
    u = np.log(0.3) + np.cumsum(0.03 * np.sqrt(tau) * rng.standard_normal((n_pages, n_crawls)), axis=1)
    changed = rng.random((n_pages, n_crawls)) < -np.expm1(-np.exp(u) * tau)
    grid = np.geomspace(1e-4, 1e2, grid_size)
    h = np.log(grid[1] / grid[0])
    dynamic_posterior((changed[:8], tau[:8]), sigma=(0.0, 0.03), grid=grid)  # compile (cached on disk)
    f = DynamicRateFilter(8, sigma=0.03, grid=grid)
    f.update(changed[:8, 0], tau[:8, 0])
    f.predict_change_probability(tau[:8, 0])
    print(
        f"{n_pages} pages x {n_crawls} crawls, {grid_size}-node lattice (spacing {h:.4f} in log Δ), "
        "Poisson crawls at 1 per hour"
    )
    cases = [
        ("forward filter, sigma = 0.03 per sqrt(h)", 0.03, False),
        ("forward-backward smoother, sigma = 0.03", 0.03, True),
        ("forward filter, sigma = 0.1 per sqrt(h)", 0.1, False),
        ("forward filter, 5 volatilities (0, 0.01, 0.03, 0.1, 0.3)", (0.0, 0.01, 0.03, 0.1, 0.3), False),
    ]
    for label, sig, smooth in cases:
        t0, c0 = time.perf_counter(), time.process_time()
        dynamic_posterior((changed, tau), sigma=sig, grid=grid, smooth=smooth)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        b = 6 * np.max(np.atleast_1d(sig)) * 1.0 / h + 3
        goal = (
            f"   goal <= {GOAL_SECONDS:g} s: {'met' if dt <= GOAL_SECONDS else 'NOT met'}"
            if label.startswith("forward filter, sigma = 0.03")
            else ""
        )
        print(
            f"{label:62s} {dt:7.2f} s wall, {cpu:7.2f} s CPU  ({cpu / (n_pages * n_crawls) * 1e6:.2f} CPU-µs "
            "per page-crawl, "
            f"kernel half-width ≈ {b:.0f} nodes at τ = 1 h){goal}",
            flush=True,
        )
        size = f"{n_pages} pages × {n_crawls} crawls, {grid_size}-node lattice"
        if goal:
            result(
                f"dynamic posterior, {label}, {size}: ≤ {GOAL_SECONDS:g} s",
                f"{dt:.1f} s ({cpu:.1f} s CPU)",
                dt <= GOAL_SECONDS,
                value=dt,
                unit="s",
            )
        else:
            result(f"dynamic posterior, {label}, {size}", f"{dt:.1f} s ({cpu:.1f} s CPU)", None, value=dt, unit="s")
    f = DynamicRateFilter(n_pages, sigma=0.03, grid=grid)
    t0, c0 = time.perf_counter(), time.process_time()
    for j in range(n_crawls):
        f.update(changed[:, j], tau[:, j])
    p = f.predict_change_probability(np.ones(n_pages))
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(
        f"{'streaming DynamicRateFilter.update, sigma = 0.03':62s} {dt:7.2f} s wall, {cpu:7.2f} s CPU  "
        "(+ one predictive, mean "
        f"P(I=1 | 1 h) = {p.mean():.3f})"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
