"""Cost of ``poisson_gof`` on long traces: 10^4, 10^5 and 10^6 exact event times.

Goal: 10^5 events in at most 10 s and 10^6 in at most 60 s (2 cores). Above
``EXACT_BLOCKS_MAX`` distinct times the Bayesian-blocks segmentation runs on groups of
consecutive times, and above ``NULL_SIZE`` gaps the Monte Carlo nulls are simulated at
that size, so the cost grows as O(n log n).

Run: ``python benchmarks/bench_poisson_gof_scaling.py [n ...]``; prints each time beside
its goal, the number of segments and of rejecting tests (the trace has a rate change
halfway, so the homogeneous model should be rejected and two segments found).
"""

import sys
import time

import numpy as np
from _result import result  # noqa: E402  (the RESULT line read by run_all.py)

from changerate_bayes.diagnostics import poisson_gof

GOALS = {10**4: None, 10**5: 10.0, 10**6: 60.0}


def trace(n: int, seed: int = 0) -> np.ndarray:
    """n event times: rate 1 for the first half of the events, rate 2 after."""
    g = np.random.default_rng(seed)
    gaps = np.concatenate([g.exponential(1.0, n // 2), g.exponential(0.5, n - n // 2)])
    return np.cumsum(gaps)


def main(sizes):
    poisson_gof(trace(200), n_resamples=99, rng=0)  # imports and first calls out of the timing
    for n in sizes:
        t = trace(n)
        t0 = time.perf_counter()
        res = poisson_gof(t, rng=1)
        sec = time.perf_counter() - t0
        goal = GOALS.get(n)
        verdict = "" if goal is None else (f"goal <= {goal:.0f} s: " + ("met" if sec <= goal else "NOT met"))
        print(
            f"n = {n:>8}: {sec:6.1f} s  {verdict:22s} segments {res.segments.n_segments} "
            f"(group size {res.segments.group_size}), {len(res.rejected())} tests reject",
            flush=True,
        )
        result(
            f"poisson_gof on {n:.0e} events" + ("" if goal is None else f": ≤ {goal:.0f} s"),
            f"{sec:.1f} s",
            None if goal is None else sec <= goal,
            value=sec,
            unit="s",
        )


if __name__ == "__main__":
    main([int(float(a)) for a in sys.argv[1:]] or sorted(GOALS))
