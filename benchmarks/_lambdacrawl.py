"""The steps of the public LambdaCrawl code the benchmarks compare with, restated for comparison only.

Source: Kolobov, Peres, Lu & Horvitz (NeurIPS 2019), repository
https://github.com/microsoft/Optimal-Freshness-Crawl-Scheduling, file ``LambdaCrawlExps.py``
at commit 62bde09d89abd272d795cf24948d4f4dced0974f. The repository holds no LICENSE file
and its README names no licence, so no code is copied: the steps are rewritten with the
same loops over the pages in Python, the same bracket and stopping rule. Not part of the
package. Used by ``bench_optimal_rates.py`` and ``bench_complete_observability.py``.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["peer_bisection_decreasing", "peer_incomplete"]


def peer_bisection_decreasing(func, lo, hi, epsilon):
    """``BisectionSearchMonotoneDecr``: the root of a decreasing ``func`` in [lo, hi], stopped at half-width <= epsilon.

    One step is added to the peer's: it stops when no float lies between the ends (an
    absolute ``epsilon`` below the spacing of the floats near λ would otherwise never be
    reached); where the original stops, this stops at the same point.
    """
    mid = (lo + hi) / 2
    while (hi - lo) / 2 > epsilon:
        if mid in (lo, hi):  # added: no float left between the ends (the original would loop on)
            return mid
        value = func(mid)
        if value == 0:
            return mid
        if value > 0:
            lo = mid
        else:
            hi = mid
        mid = (lo + hi) / 2
    return mid


def peer_incomplete(importances, ch_rates, bandwidth, epsilon):
    """``LambdaCrawl_IncomplObs`` (Algorithm 1): the harmonic rates (−Δ + √(Δ² + 4 μ Δ/λ))/2, λ by bisection.

    ``epsilon`` is the bisection's absolute tolerance on λ; Python loops over the pages,
    as the peer's.
    """
    n = importances.shape[0]
    if bandwidth == 0 or n == 0:
        return np.zeros_like(importances, dtype=float)

    def excess(lam):
        total = 0.0
        for i in range(n):
            total += (-ch_rates[i] + math.sqrt(ch_rates[i] ** 2 + 4 * importances[i] * ch_rates[i] / lam)) / 2
        return total - bandwidth

    lo = n**2 * min(importances) * min(ch_rates) / (n * max(ch_rates) * bandwidth + bandwidth**2)
    hi = n**2 * max(importances) * max(ch_rates) / (n * min(ch_rates) * bandwidth + bandwidth**2)
    lam = peer_bisection_decreasing(excess, lo, hi, epsilon)
    rates = np.zeros_like(importances, dtype=float)
    for i in range(n):
        rates[i] = (-ch_rates[i] + math.sqrt(ch_rates[i] ** 2 + 4 * importances[i] * ch_rates[i] / lam)) / 2
    return rates
