"""numba kernels of :mod:`._host_caps` (imported, and compiled or loaded from numba's
cache, on first use only): the water level of each capped host, one host after the other."""

import math

import numba
import numpy as np

from ._water_level_kernels import allocate_kernel, select_kernel

_TINY = np.finfo(np.float64).tiny
_LO, _HI = 1e-150, 1e150  # as _optimal_rates._SELECT_RANGE


@numba.njit(cache=True)
def _log_quotient(x, y):
    """log(x/y) for x, y > 0, through the quotient when it is a normal float."""
    z = x / y
    if z >= _TINY and z < math.inf:
        return math.log(z)
    return math.log(x) - math.log(y)


@numba.njit(cache=True)
def group_pages(codes, slot, n_slots):
    """Pages whose host has a slot >= 0, grouped by slot (counting sort, stable), and the
    start of each group: ``pages[starts[k]:starts[k+1]]`` are the pages of slot k."""
    counts = np.zeros(n_slots + 1, dtype=np.int64)
    for i in range(codes.size):
        k = slot[codes[i]]
        if k >= 0:
            counts[k + 1] += 1
    for k in range(n_slots):
        counts[k + 1] += counts[k]
    starts = counts.copy()
    pages = np.empty(counts[n_slots], dtype=np.int64)
    for i in range(codes.size):
        k = slot[codes[i]]
        if k >= 0:
            pages[counts[k]] = i
            counts[k] += 1
    return pages, starts


@numba.njit(cache=True)
def free_pages(codes, held, d, w):
    """The pages whose host is not ``held``, with their Δ, w and host, in one pass."""
    n = 0
    for i in range(codes.size):
        if not held[codes[i]]:
            n += 1
    idx = np.empty(n, dtype=np.int64)
    df = np.empty(n)
    wf = np.empty(n)
    cf = np.empty(n, dtype=codes.dtype)
    k = 0
    for i in range(codes.size):
        c = codes[i]
        if not held[c]:
            idx[k] = i
            df[k] = d[i]
            wf[k] = w[i]
            cf[k] = c
            k += 1
    return idx, df, wf, cf


@numba.njit(cache=True)
def gather(x, pages):
    out = np.empty(pages.size)
    for j in range(pages.size):
        out[j] = x[pages[j]]
    return out


@numba.njit(cache=True)
def scatter(out, pages, values):
    for j in range(pages.size):
        out[pages[j]] = values[j]


@numba.njit(cache=True)
def top_prices(p, d, w, starts, harmonic):
    """Per group, the log of the marginal value f'(p) at its largest rate (-inf if no rate is > 0)."""
    n = starts.size - 1
    out = np.full(n, -math.inf)
    for h in range(n):
        best = -1
        for i in range(starts[h], starts[h + 1]):
            if p[i] > 0.0 and d[i] > 0.0 and w[i] > 0.0 and (best < 0 or p[i] > p[best]):
                best = i
        if best >= 0:
            if harmonic:
                lg = math.log(w[best]) + math.log(d[best]) - math.log(p[best]) - math.log(p[best] + d[best])
            else:
                lg = math.log(w[best]) + math.log(d[best]) - 2.0 * math.log(p[best] + d[best])
            out[h] = lg
    return out


@numba.njit(cache=True)
def binary_hosts_kernel(d, w, starts, caps, out, failed):
    """Binary freshness per host: pages of host h are d[starts[h]:starts[h+1]], budget caps[h].

    Writes the rates into ``out``; sets ``failed[h]`` where the selection solver declined
    (magnitudes outside its float range or unlucky pivots): those hosts are solved again
    by the log-domain solver.
    """
    n_hosts = caps.size
    for h in range(n_hosts):
        s, e = starts[h], starts[h + 1]
        c = caps[h]
        n_act = 0
        for i in range(s, e):
            out[i] = 0.0
            if d[i] > 0.0 and w[i] > 0.0:
                n_act += 1
        if n_act == 0:
            continue
        idx = np.empty(n_act, dtype=np.int64)
        r = np.empty(n_act)
        delta = np.empty(n_act)
        sq = np.empty(n_act)
        k = 0
        r_lo, r_hi, d_lo, d_hi = math.inf, 0.0, math.inf, 0.0
        for i in range(s, e):
            if d[i] > 0.0 and w[i] > 0.0:
                idx[k] = i
                r[k] = w[i] / d[i]
                delta[k] = d[i] / c
                r_lo, r_hi = min(r_lo, r[k]), max(r_hi, r[k])
                d_lo, d_hi = min(d_lo, delta[k]), max(d_hi, delta[k])
                k += 1
        if n_act == 1:
            out[idx[0]] = c
            continue
        if not (r_lo >= _LO * _LO and r_hi <= _HI * _HI and d_lo >= _LO and d_hi * n_act <= _HI):
            failed[h] = True
            continue
        for j in range(n_act):
            sq[j] = math.sqrt(r[j]) * delta[j]
        act_min, idle_max, ok = select_kernel(r, sq, delta)
        if not ok:
            failed[h] = True
            continue
        q = np.empty(n_act)
        if not allocate_kernel(r, delta, act_min, idle_max, c, q):
            failed[h] = True
            continue
        for j in range(n_act):
            out[idx[j]] = q[j]


@numba.njit(cache=True)
def harmonic_hosts_kernel(d, w, starts, caps, out):
    """Harmonic staleness per host: Newton on t = log σ for log Σ q_i(e^t) = 0, as
    :func:`._optimal_rates._harmonic_staleness` does for one budget, host after host."""
    big = 700.0
    log2 = math.log(2.0)
    n_hosts = caps.size
    for h in range(n_hosts):
        s, e = starts[h], starts[h + 1]
        c = caps[h]
        n_act = 0
        w_max = 0.0
        for i in range(s, e):
            out[i] = 0.0
            if d[i] > 0.0 and w[i] > 0.0:
                n_act += 1
                w_max = max(w_max, w[i])
        if n_act == 0:
            continue
        idx = np.empty(n_act, dtype=np.int64)
        ld = np.empty(n_act)  # log δ = log(Δ/c)
        kk = np.empty(n_act)  # K = log(ω/δ), ω = w/max(w)
        log_q = np.empty(n_act)
        root = np.empty(n_act)
        k = 0
        for i in range(s, e):
            if d[i] > 0.0 and w[i] > 0.0:
                idx[k] = i
                ld[k] = _log_quotient(d[i], c)
                kk[k] = _log_quotient(w[i], w_max) - ld[k]
                k += 1
        if n_act == 1:
            out[idx[0]] = c
            continue
        # starting bracket: either bound q_i <= √(w_i δ_i σ), q_i <= w_i σ gives Σ q <= 1
        top1, top2 = -math.inf, -math.inf
        for j in range(n_act):
            top1 = max(top1, 0.5 * (kk[j] + 2.0 * ld[j]))
            top2 = max(top2, kk[j] + ld[j])
        s1, s2 = 0.0, 0.0
        for j in range(n_act):
            s1 += math.exp(0.5 * (kk[j] + 2.0 * ld[j]) - top1)
            s2 += math.exp(kk[j] + ld[j] - top2)
        lo = max(-2.0 * (top1 + math.log(s1)), -(top2 + math.log(s2)))
        hi = math.inf
        t = lo
        for _ in range(200):
            top = -math.inf
            for j in range(n_act):
                x = kk[j] + t
                rt = math.sqrt(1.0 + 4.0 * math.exp(min(x, big)))
                root[j] = rt
                if x > big:
                    log_q[j] = ld[j] + 0.5 * x
                else:
                    log_q[j] = ld[j] + log2 + x - math.log1p(rt)
                top = max(top, log_q[j])
            total = 0.0
            tilt = 0.0
            for j in range(n_act):
                q = math.exp(log_q[j] - top)
                total += q
                tilt += q / root[j]
            g = top + math.log(total)
            slope = 0.5 * (1.0 + tilt / total)
            if g > 0:
                hi = t
            else:
                lo = t
                hi = min(hi, t - 2.0 * g)
            if abs(g) <= 1e-14 or hi - lo <= 4e-16 * max(1.0, abs(t)):
                break
            t_new = t - g / slope
            if not (lo < t_new < hi):
                t_new = 0.5 * (lo + hi)
            t = t_new
        log_c = math.log(c)
        for j in range(n_act):
            v = math.exp(log_q[j])
            out[idx[j]] = c * v if v >= _TINY else math.exp(log_q[j] + log_c)
