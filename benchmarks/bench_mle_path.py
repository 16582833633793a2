"""Speed of the MLE / MM trajectories: against brentq at every k, and against the number of pages.

Run: ``python benchmarks/bench_mle_path.py [--k 10000] [--seed 1] [--pages 1000 10000 100000]``

Part 1 prints, for one simulated page (Δ = 5, p = 3, Poisson crawls) and k crawls:

* ``brentq``: scipy.optimize.brentq on the full O(k) score sum at every k, bracket found
  afresh by doubling/halving from Δ = 1 (the "offline MLE" of the paper);
* ``brentq-warm``: the same, but bracketed from the previous root (warm start only:
  every evaluation is still O(k));
* ``path``: ``estimate_path(history, "mle")`` (warm start, bracketing from the previous
  root, Taylor sums updated in O(order) per crawl, re-anchored in O(k) only when the
  root drifts), and the speed-ups, with the largest relative difference between the
  path and brentq's roots over all k.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.optimize import brentq

from changerate_bayes import estimate_path, simulate_history

from _result import result
from changerate_bayes.estimators._rootpath import MLE_KIND, RootPath


def _score(changed, tau):
    unchanged_time = float(np.sum((1.0 - changed) * tau))

    def g(delta):
        x = delta * tau
        return float(np.sum(changed * tau * np.exp(-x) / -np.expm1(-x))) - unchanged_time

    return g


def brentq_path(changed, tau, *, warm: bool):
    """Re-solve eq. (15) with brentq for every prefix; returns (roots, evaluations)."""
    k = changed.size
    out = np.empty(k)
    n_eval = 0
    prev = np.nan
    ones = np.cumsum(changed)
    for j in range(k):
        if ones[j] == 0:
            out[j] = 0.0
            continue
        if ones[j] == j + 1:
            out[j] = np.inf
            continue
        g = _score(changed[: j + 1], tau[: j + 1])
        if warm and np.isfinite(prev) and prev > 0:
            # the new crawl moves the root right (I = 1) or left (I = 0) of the previous one
            lo = hi = prev
            step = 1.0 + 1.0 / np.sqrt(j + 1)
            if changed[j] == 1:
                while g(hi) > 0:
                    hi *= step
                    n_eval += 1
            else:
                while g(lo) < 0:
                    lo /= step
                    n_eval += 1
        else:
            lo = hi = 1.0
            while g(hi) > 0:
                hi *= 2.0
                n_eval += 1
            while g(lo) < 0:
                lo /= 2.0
                n_eval += 1
        root, info = brentq(g, lo, hi, xtol=1e-14, rtol=1e-15, full_output=True)
        n_eval += info.function_calls
        out[j] = prev = root
    return out, n_eval


def _best_of(fn, repeat):
    best, result = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--change-rate", type=float, default=5.0)
    parser.add_argument("--crawl-rate", type=float, default=3.0)
    parser.add_argument("--pages", type=int, nargs="*", default=[1_000, 10_000, 100_000],
                        help="page counts for part 2 (100 crawls each)")
    parser.add_argument("--page-crawls", type=int, default=100)
    args = parser.parse_args(argv)

    h = simulate_history(args.change_rate, args.crawl_rate, args.k, rng=args.seed)
    changed, tau = h.changed.astype(np.float64), h.intervals
    t_path, path = _best_of(lambda: estimate_path(h, "mle"), 3)
    solver = RootPath(MLE_KIND, 1)
    solver.extend(changed[None], tau[None])
    n_reanchor = solver.n_reanchor
    t_cold, (cold, n_cold) = _best_of(lambda: brentq_path(changed, tau, warm=False), 1)
    t_warm, (warm, n_warm) = _best_of(lambda: brentq_path(changed, tau, warm=True), 1)

    finite = np.isfinite(cold) & (cold > 0)
    same_limits = np.array_equal(path[~finite], cold[~finite])
    rel = np.max(np.abs(path[finite] - cold[finite]) / cold[finite])
    print(f"MLE trajectory, k = {args.k}, Δ = {args.change_rate:g}, p = {args.crawl_rate:g}, seed {args.seed}")
    print(f"  brentq at every k (cold bracket): {t_cold:9.3f} s   {n_cold:8d} O(k) evaluations")
    print(f"  brentq at every k (warm bracket): {t_warm:9.3f} s   {n_warm:8d} O(k) evaluations")
    print(f"  estimate_path(h, 'mle')         : {t_path:9.3f} s   {n_reanchor:8d} Taylor re-anchors (O(k) each)")
    print(f"  speed-up over cold brentq       : {t_cold / t_path:9.1f} x  (target >= 100 x)")
    print(f"  speed-up over warm brentq       : {t_warm / t_path:9.1f} x")
    print(f"  max relative difference to brentq over all k: {rel:.2e}; 0.0/inf limits identical: {same_limits}")
    print(f"  final estimate {path[-1]:.6f} (true Δ = {args.change_rate:g})")
    result(f"MLE path, one page, k = {args.k:,}: >= 200x faster than brentq at every k, same roots to 1e-9",
           f"{t_cold / t_path:.0f}x, max rel. diff {rel:.1e}", t_cold / t_path >= 200 and rel <= 1e-9 and same_limits,
           value=t_cold / t_path, unit="x")
    if args.pages:
        pages_scaling(args)


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def pages_scaling(args):
    """Part 2: time of ``estimate_path`` against the number of pages, ``args.page_crawls`` crawls each."""
    k = args.page_crawls
    print(f"\nestimate_path against the number of pages, {k} crawls each, Δ = {args.change_rate:g}, "
          f"p = {args.crawl_rate:g} (linear in pages: constant time per page)")
    print(f"  {'pages':>7}  {'method':>6}  {'wall s':>8}  {'cpu s':>8}  {'wall ms/page':>12}")
    for n in args.pages:
        h = simulate_history(args.change_rate, args.crawl_rate, k, n_pages=n, rng=args.seed)
        for method in ("mle", "mm", "lln"):
            wall, cpu, _ = _timed(lambda: estimate_path(h, method))
            print(f"  {n:7d}  {method:>6}  {wall:8.2f}  {cpu:8.2f}  {1e3 * wall / n:12.3f}", flush=True)
            if method == "mle" and n == 100_000 and k == 100:
                result("MLE path, 10^5 pages × 100 crawls: <= 8 s", f"{wall:.1f} s", wall <= 8.0, value=wall, unit="s")


if __name__ == "__main__":
    main()
