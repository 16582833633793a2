"""Benchmark: optimal_crawl_rates on 10^7 pages, and against scipy.optimize on a small N.

Run: ``python benchmarks/bench_optimal_rates.py [--pages 10000000] [--small 300]``.
Prints wall times (time.perf_counter, one run each, same process) and, on the small
problem, the speed ratio and the objective ratio against SLSQP from scipy.optimize
(freshness is maximised, harmonic staleness minimised). A last section times extreme
magnitudes (Δ, w, B across 1e-100..1e100; a budget 1e-12 of the smallest Δ) against
the same problem at ordinary magnitudes, and prints |Σp/B - 1|.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from changerate_bayes.scheduling import crawl_objective, optimal_crawl_rates
from validation.scheduling_rates import reference_crawl_rates


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000_000)
    parser.add_argument("--small", type=int, default=300)
    parser.add_argument("--edges", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    gen = np.random.default_rng(2024)

    print(f"# large problem: N = {args.pages:,} pages, Δ ~ Pareto(1.2) + 0.001, w ~ LogNormal(0, 2), B = N/2")
    delta = gen.pareto(1.2, args.pages) + 1e-3
    w = gen.lognormal(0.0, 2.0, args.pages)
    budget = args.pages / 2
    for objective in ("binary_freshness", "harmonic_staleness"):
        t0 = time.perf_counter()
        p = optimal_crawl_rates(delta, w, budget, objective=objective)
        dt = time.perf_counter() - t0
        print(f"{objective:20s} {dt:7.2f} s   |Σp/B - 1| = {abs(p.sum() / budget - 1):.1e}   "
              f"pages crawled: {np.count_nonzero(p) / p.size:.1%}")
    del delta, w, p

    n = args.small
    print(f"\n# small problem: N = {n}, same distributions, against scipy.optimize.minimize(method='SLSQP')")
    delta = gen.pareto(1.2, n) + 1e-3
    w = gen.lognormal(0.0, 2.0, n)
    budget = n / 2
    for objective in ("binary_freshness", "harmonic_staleness"):
        t0 = time.perf_counter()
        ours = optimal_crawl_rates(delta, w, budget, objective=objective)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref, _ = reference_crawl_rates(delta, w, budget, objective, ftol=1e-14)
        t_ref = time.perf_counter() - t0
        v_ours = crawl_objective(ours, delta, w, objective=objective)
        v_ref = crawl_objective(np.maximum(ref, 0), delta, w, objective=objective)
        print(f"{objective:20s} ours {t_ours * 1e3:8.2f} ms   SLSQP {t_ref * 1e3:9.1f} ms   "
              f"speed ratio {t_ref / t_ours:8.0f}x   objective ours/SLSQP - 1 = {v_ours / v_ref - 1:+.1e}   "
              f"max |p - p_SLSQP| / B = {np.max(np.abs(ours - ref)) / budget:.1e}")

    n = args.edges
    print(f"\n# numerical edges: N = {n:,}; time relative to the ordinary problem (same N)")
    ordinary = (gen.pareto(1.2, n) + 1e-3, gen.lognormal(0.0, 2.0, n), n / 2)
    cases = {
        "ordinary": ordinary,
        "Δ, w, B in 1e-100..1e100": (10.0 ** gen.uniform(-100, 100, n), 10.0 ** gen.uniform(-100, 100, n), 1e-20),
        "Δ and B × 1e300": (ordinary[0] * 1e300, ordinary[1], ordinary[2] * 1e300),
        "B = 1e-12 min Δ": (ordinary[0], ordinary[1], 1e-12 * ordinary[0].min()),
    }
    for objective in ("binary_freshness", "harmonic_staleness"):
        base = None
        for label, (delta, w, budget) in cases.items():
            t0 = time.perf_counter()
            p = optimal_crawl_rates(delta, w, budget, objective=objective)
            dt = time.perf_counter() - t0
            base = dt if base is None else base
            print(f"{objective:20s} {label:26s} {dt:6.2f} s  ({dt / base:4.1f}x)   |Σp/B - 1| = "
                  f"{abs(p.sum() / budget - 1):.1e}   finite: {bool(np.isfinite(p).all())}")


if __name__ == "__main__":
    main()
