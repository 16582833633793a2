"""numba kernels of :mod:`._water_level` (imported, and compiled or loaded from numba's
cache, on first use only)."""

import math

import numba
import numpy as np


@numba.njit(cache=True)
def _swap(rr, ss, dd, i, j):
    """Swap entries i and j of each of the three arrays (one candidate's r, δ √r, δ)."""
    rr[i], rr[j] = rr[j], rr[i]
    ss[i], ss[j] = ss[j], ss[i]
    dd[i], dd[j] = dd[j], dd[i]


@numba.njit(cache=True)
def select_kernel(r, sq, delta):
    n = r.size
    rr, ss, dd = r.copy(), sq.copy(), delta.copy()
    lo, hi = 0, n  # the candidates left: rr[lo:hi]
    s_act = 0.0  # Σ δ √r over the pages known to be crawled
    d_act = 0.0  # Σ δ over them
    act_min = math.inf  # smallest breakpoint known to be crawled
    idle_max = 0.0  # largest breakpoint known to be idle
    state = np.uint64(0x9E3779B97F4A7C15)
    passes = 0
    limit = 4 * int(math.log2(n + 1)) + 64
    while hi - lo > 16:
        passes += 1
        if passes > limit:  # pivots far from the median every time: give up, the caller sorts
            return math.nan, math.nan, False
        state = state * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
        pivot = rr[lo + int((state >> np.uint64(33)) % np.uint64(hi - lo))]
        j = lo  # rr[lo:j] > pivot after this pass
        s_up = 0.0
        d_up = 0.0
        for i in range(lo, hi):
            if rr[i] > pivot:
                s_up += ss[i]
                d_up += dd[i]
                _swap(rr, ss, dd, i, j)
                j += 1
        f = (s_act + s_up) / math.sqrt(pivot) - (d_act + d_up)
        if f < 1.0:  # budget left at λ = pivot: every page with r >= pivot is crawled
            s_act += s_up
            d_act += d_up
            k = j
            for i in range(j, hi):
                if rr[i] == pivot:
                    s_act += ss[i]
                    d_act += dd[i]
                    _swap(rr, ss, dd, i, k)
                    k += 1
            act_min = min(act_min, pivot)
            lo = k
        else:  # the level is at or above the pivot: pages with r <= pivot are idle
            idle_max = max(idle_max, pivot)
            hi = j
    # the last few candidates: insertion sort (descending) and a scan
    for i in range(lo + 1, hi):
        x, y, z = rr[i], ss[i], dd[i]
        j = i - 1
        while j >= lo and rr[j] < x:
            rr[j + 1], ss[j + 1], dd[j + 1] = rr[j], ss[j], dd[j]
            j -= 1
        rr[j + 1], ss[j + 1], dd[j + 1] = x, y, z
    for i in range(lo, hi):
        f = s_act / math.sqrt(rr[i]) - d_act  # F at λ = rr[i], pages above it crawled
        if f < 1.0:
            s_act += ss[i]
            d_act += dd[i]
            act_min = min(act_min, rr[i])
        else:
            idle_max = max(idle_max, rr[i])
            break
    return act_min, idle_max, True


@numba.njit(cache=True)
def allocate_kernel(r, delta, act_min, idle_max, budget, out):
    # Neumaier-compensated sums of F = Σ δ e and G = Σ δ g over the crawled pages
    f = 0.0
    cf = 0.0
    g_sum = 0.0
    cg = 0.0
    for i in range(r.size):
        if r[i] >= act_min:
            g = math.sqrt(r[i] / act_min)
            e = (r[i] - act_min) / act_min / (1.0 + g)
            x = delta[i] * e
            s = f + x
            cf += (f - s) + x if abs(f) >= abs(x) else (x - s) + f
            f = s
            x = delta[i] * g
            s = g_sum + x
            cg += (g_sum - s) + x if abs(g_sum) >= abs(x) else (x - s) + g_sum
            g_sum = s
    f += cf
    g_sum += cg
    t = (1.0 - f) / g_sum
    if not (f <= 1.0 and (1.0 + t) * (1.0 + t) * idle_max <= act_min):
        return False
    for i in range(r.size):
        if r[i] >= act_min:
            g = math.sqrt(r[i] / act_min)
            e = (r[i] - act_min) / act_min / (1.0 + g)
            out[i] = budget * (delta[i] * (e + t * g))
        else:
            out[i] = 0.0
    return True
