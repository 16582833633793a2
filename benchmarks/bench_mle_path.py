"""Speed of the MLE / MM trajectories: against brentq at every k, and against the number of pages.

Run: ``uv run --locked python benchmarks/bench_mle_path.py [--k 10000] [--seed 1] [--pages 1000 10000 100000]``

Goals (each printed as a ``RESULT`` line beside its measurement):

* one page, k = 10^4: ``estimate_path(h, "mle")`` >= 200x faster than re-solving every
  prefix with brentq (cold bracket), with the same roots to 1e-9 relative;
* cost per page-crawl flat within 2x from k = 16 to 10^4 (``--flat-crawls`` crawls in
  all at each k; the fastest of ``--flat-repeat`` runs at each k, their median printed too);
* 10^5 pages x 100 crawls in <= 8 s; the previous implementation (the numpy
  ``RootPath`` root tracking, which the MM path and pages with extreme intervals still
  use) is timed at ``--previous-pages`` x 100 in the same run for the ratio.

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
from _result import load_note, result
from _timing import best_of
from scipy.optimize import brentq

from changerate_bayes import estimate_path, simulate_history
from changerate_bayes.estimators import MLE_KIND, RootPath


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--change-rate", type=float, default=5.0)
    parser.add_argument("--crawl-rate", type=float, default=3.0)
    parser.add_argument("--pages", type=int, nargs="*", default=[], help="page counts for part 2 (100 crawls each)")
    parser.add_argument("--page-crawls", type=int, default=100)
    parser.add_argument("--flat-ks", type=int, nargs="*", default=[16, 128, 1000, 10_000])
    parser.add_argument("--flat-crawls", type=int, default=320_000)
    parser.add_argument("--flat-repeat", type=int, default=5, help="runs at each k (fastest and median)")
    parser.add_argument("--previous-pages", type=int, default=10_000)
    args = parser.parse_args(argv)
    print(load_note())

    h = simulate_history(args.change_rate, args.crawl_rate, args.k, rng=args.seed)
    changed, tau = h.changed.astype(np.float64), h.intervals
    estimate_path(h.head(200), "mle")  # compiles (or loads) the kernels
    t_path, path = best_of(lambda: estimate_path(h, "mle"), 3)
    solver = RootPath(MLE_KIND, 1)
    solver.extend(changed[None], tau[None])
    n_reanchor = solver.n_reanchor
    t_cold, (cold, n_cold) = best_of(lambda: brentq_path(changed, tau, warm=False), 1)
    t_warm, (warm, n_warm) = best_of(lambda: brentq_path(changed, tau, warm=True), 1)

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
    speed = t_cold / t_path
    result(
        f"MLE path, one page, k = {args.k}: >= 200x faster than brentq at every k",
        f"{speed:.0f}x ({t_path:.3f} s against {t_cold:.1f} s)",
        speed >= 200,
        value=speed,
        note=load_note(),
    )
    result(
        f"MLE path, k = {args.k}: the same roots as brentq to 1e-9 relative",
        f"max relative difference {rel:.1e}",
        rel <= 1e-9 and same_limits,
        value=float(rel),
    )
    flatness(args)
    goal_pages(args)
    if args.pages:
        pages_scaling(args)


def flatness(args):
    """Cost per page-crawl of the MLE path against the page length k (same crawls in all)."""
    print(f"\nMLE path: cost per page-crawl against k ({args.flat_crawls} crawls in all at each k)")
    costs, medians = {}, {}
    for k in args.flat_ks:
        n = max(1, args.flat_crawls // k)
        h = simulate_history(args.change_rate, args.crawl_rate, k, n_pages=n, rng=args.seed)
        walls = []
        for _ in range(args.flat_repeat):
            t0 = time.perf_counter()
            estimate_path(h, "mle")
            walls.append(time.perf_counter() - t0)
        costs[k] = min(walls) / (n * k)
        medians[k] = float(np.median(walls)) / (n * k)
        print(
            f"  k = {k:6d} ({n:6d} pages): {costs[k] * 1e9:8.0f} ns per page-crawl "
            f"(median of {args.flat_repeat}: {medians[k] * 1e9:.0f} ns)",
            flush=True,
        )
    spread = max(costs.values()) / min(costs.values())
    spread_median = max(medians.values()) / min(medians.values())
    detail = ", ".join(f"k={k}: {c * 1e9:.0f} ns" for k, c in costs.items())
    result(
        f"MLE path: cost per page-crawl flat within 2x from k = {min(costs)} to {max(costs)}",
        f"max/min {spread:.2f} of the fastest of {args.flat_repeat} runs ({detail}); of the medians "
        f"{spread_median:.2f}",
        spread <= 2.0,
        value=spread,
        note=load_note(),
    )


def goal_pages(args):
    """10^5 pages x 100 crawls, and the previous implementation at fewer pages for the ratio."""
    k, n = 100, 100_000
    h = simulate_history(args.change_rate, args.crawl_rate, k, n_pages=n, rng=args.seed)
    wall, _ = best_of(lambda: estimate_path(h, "mle"), 1)
    m = args.previous_pages
    small = simulate_history(args.change_rate, args.crawl_rate, k, n_pages=m, rng=args.seed)
    t_new, new = best_of(lambda: estimate_path(small, "mle"), 1)

    def previous():
        return RootPath(MLE_KIND, m).extend(small.changed.astype(np.float64), small.intervals)

    t_old, old = best_of(previous, 1)
    ok = np.isfinite(old) & (old > 0)
    rel = float(np.max(np.abs(new[ok] / old[ok] - 1.0)))
    print(
        f"\nMLE path, {n:.0e} pages x {k} crawls: {wall:.2f} s; at {m:.0e} pages: {t_new:.2f} s, the previous "
        f"implementation {t_old:.2f} s ({t_old / t_new:.1f}x slower; max relative difference {rel:.1e})"
    )
    result(
        f"MLE path, {n:.0e} pages x {k} crawls: <= 8 s",
        f"{wall:.2f} s (previous implementation: {t_old / t_new:.1f}x slower at {m:.0e} pages in this run)",
        wall <= 8.0,
        value=wall,
        unit="s",
        note=load_note(),
    )
    result(
        "MLE path: the same roots as the previous implementation to 1e-9 relative", f"{rel:.1e}", rel <= 1e-9, value=rel
    )


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def pages_scaling(args):
    """Part 2: time of ``estimate_path`` against the number of pages, ``args.page_crawls`` crawls each."""
    k = args.page_crawls
    print(
        f"\nestimate_path against the number of pages, {k} crawls each, Δ = {args.change_rate:g}, "
        f"p = {args.crawl_rate:g} (linear in pages: constant time per page)"
    )
    print(f"  {'pages':>7}  {'method':>6}  {'wall s':>8}  {'cpu s':>8}  {'wall ms/page':>12}")
    for n in args.pages:
        h = simulate_history(args.change_rate, args.crawl_rate, k, n_pages=n, rng=args.seed)
        for method in ("mle", "mm", "lln"):
            wall, cpu, _ = _timed(lambda: estimate_path(h, method))
            print(f"  {n:7d}  {method:>6}  {wall:8.2f}  {cpu:8.2f}  {1e3 * wall / n:12.3f}", flush=True)


if __name__ == "__main__":
    main()
