"""The Poisson-crawl check inside ``estimate_path``: its share of the LLN path's time.

At ``--pages`` × ``--crawls`` (default 10^6 × 20, Poisson crawls with intervals), times

* ``estimate_path(h, "lln")`` (formula + the check),
* the formula alone (``_lln.lln_path``),
* the check alone (``_crawlcheck.warn_if_not_poisson``),
* the previous check (kept here as the reference: z = p τ as an (n_pages, k) array, cells
  by ``floor(64 (1 − e^{−z}))``, an (n_pages, 64) count array by ``np.bincount``),

interleaved, best of ``--repeats``, and prints the check's share beside the goal (≤ 25% of
the path's time). Also checks that the new distances equal the previous ones exactly, and
times ``final_estimates`` for every method on a ragged history of the same number of
crawls (informational).

Run: ``uv run --locked python benchmarks/bench_estimate_path.py [--pages 1000000] [--crawls 20]``
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from _result import load_note, result
from _timing import best_of

from changerate_bayes import CrawlHistory, StatisticalWarning, estimate_path, final_estimates, simulate_history
from changerate_bayes.estimators import N_EDGES, lln_path, poisson_distance_segments, warn_if_not_poisson

GOAL = 0.25


def previous_distance(history):
    """The previous implementation of the check's distances (rectangular histories)."""
    tau = np.atleast_2d(history.intervals)
    p = np.asarray(history.crawl_rate, dtype=np.float64)
    z = tau * (p[:, None] if p.ndim == 1 else p)
    n_pages, k = z.shape
    cells = np.minimum(np.floor(-np.expm1(-z) * N_EDGES), N_EDGES - 1).astype(np.int64)
    counts = np.bincount((cells + N_EDGES * np.arange(n_pages)[:, None]).ravel(), minlength=n_pages * N_EDGES)
    counts = counts.reshape(n_pages, N_EDGES)
    levels = np.arange(1, N_EDGES) / N_EDGES
    per_page = np.abs(np.cumsum(counts, axis=1)[:, :-1] / k - levels).max(axis=1)
    pooled = float(np.abs(np.cumsum(counts.sum(axis=0))[:-1] / (n_pages * k) - levels).max())
    return per_page, pooled


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", type=int, default=10**6)
    ap.add_argument("--crawls", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    n, k = args.pages, args.crawls
    h = simulate_history(2.0, 3.0, k, n_pages=n, rng=1)
    per_page, pooled = poisson_distance_segments(h)  # compiles the kernel
    ref_page, ref_pool = previous_distance(h)
    diff = max(float(np.max(np.abs(per_page - ref_page))), abs(pooled - ref_pool))
    result(
        "Poisson-crawl check: same distances as the previous implementation to 1e-12",
        f"max difference {diff:.1e}",
        diff <= 1e-12,
        value=diff,
    )

    def check():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StatisticalWarning)
            warn_if_not_poisson(h, "lln", stacklevel=1)

    times = {"path": [], "formula": [], "check": [], "previous check": []}
    for _ in range(args.repeats):
        for name, fn in (
            ("path", lambda: estimate_path(h, "lln")),
            ("formula", lambda: lln_path(h)),
            ("check", check),
            ("previous check", lambda: previous_distance(h)),
        ):
            times[name].append(best_of(fn, 1)[0])
    t = {name: min(v) for name, v in times.items()}
    print(f"LLN path, {n:.0e} pages x {k} crawls, best of {args.repeats}; {load_note()}")
    for name, v in t.items():
        print(f"  {name:15s}: {v:7.3f} s")
    share = t["check"] / t["path"]
    print(
        f"  the check is {share:.1%} of estimate_path's time ({t['check'] / t['formula']:.1%} of the formula's); "
        f"the previous check took {t['previous check'] / t['formula']:.0%} of the formula's time"
    )
    result(
        f"Poisson-crawl check at {n:.0e} x {k}: <= {GOAL:.0%} of the LLN path's time",
        f"{share:.1%} ({t['check']:.3f} s of {t['path']:.3f} s; previous check {t['previous check']:.3f} s)",
        share <= GOAL,
        value=share,
        note=load_note(),
    )

    # ragged: final_estimates of every method at the same number of crawls (informational)
    rng = np.random.default_rng(2)
    lengths = rng.integers(1, 2 * k, n // 10)
    m = int(lengths.sum())
    ragged = CrawlHistory.from_segments(
        (rng.random(m) < 0.4).astype(np.int8), rng.exponential(1 / 3.0, m), lengths=lengths, crawl_rate=3.0
    )
    print(f"final_estimates on a ragged history of {lengths.size:.0e} pages (1 to {2 * k - 1} crawls, {m:.1e} crawls):")
    for method in ("naive", "lln", "regular", "sa", "sam", "mle", "mm"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StatisticalWarning)
            final_estimates(ragged, method)
            tf = best_of(lambda: final_estimates(ragged, method), 2)[0]
            tp = best_of(lambda: estimate_path(ragged, method), 1)[0]
        print(f"  {method:8s}: final_estimates {tf:7.3f} s   estimate_path {tp:7.3f} s")
        result(
            f"final_estimates({method!r}) on {lengths.size:.0e} ragged pages ({m:.1e} crawls)",
            f"{tf:.3f} s (estimate_path {tp:.3f} s)",
            None,
            value=tf,
            unit="s",
        )


if __name__ == "__main__":
    main()
