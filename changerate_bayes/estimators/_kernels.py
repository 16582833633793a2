"""Compiled loops of the estimators: the SA / SAM recursions over CSR segments, the fused
streaming updates (input check and update in one pass over memory) and the per-page
Kolmogorov distance of the Poisson-crawling check.

Imported lazily (the first estimate that needs a kernel imports numba); every kernel is
compiled on first use with ``cache=True`` (the machine code is kept on disk), never at
import time.

The arithmetic of each step is the same expression, in the same order, as the numpy
formulas of ``_sa`` / ``_sam`` / ``_crawlcheck``, so the results are the same numbers.

The SA and SAM recursions are linear in (y, p, y_0), so a caller may run them on
(y, p, y_0)·2^-e and multiply the output by ``up`` = 2^e: multiplying by a power of two
is exact, so the numbers are the same, but a crawl rate near the float64 limit (e.g.
1.7e308) no longer overflows the state (see ``range_scale``). One guard runs only when
a state value is not finite (SAM's race to infinity): the trajectory is frozen at ±inf
from then on, with the sign of the overflow (or of the last finite iterate when the
overflow produced NaN).
"""

from __future__ import annotations

import numba as nb
import numpy as np

_JIT = dict(cache=True, nogil=True)


@nb.njit(inline="always", **_JIT)
def _freeze_sign(bad, last):
    s = np.sign(last) if np.isnan(bad) else np.sign(bad)
    return np.inf if s >= 0 else -np.inf


@nb.njit(inline="always", **_JIT)
def _sa_step(y, c, e, p):
    return y + e * (c * (y + p) - y)


@nb.njit(inline="always", **_JIT)
def _sam_step(z, zp, c, e, zeta, p):
    return z + e * (c * (z + p) - z) + zeta * (z - zp)


# --------------------------------------------------------------------------- batch paths
@nb.njit(**_JIT)
def sa_segments(changed, offsets, p, etas, initial, up, out, final, diverged):
    """SA over each CSR segment; writes the path into ``out[i, :len_i]`` (if ``out.shape[1]``)
    and the last value into ``final[i]``. ``p`` has length 1 (shared) or n_pages."""
    n = offsets.size - 1
    write = out.shape[1] > 0
    shared = p.size == 1
    for i in range(n):
        pi = p[0] if shared else p[i]
        y = initial
        bad = False
        lo = offsets[i]
        for j in range(offsets[i + 1] - lo):
            if not bad:
                new = _sa_step(y, np.float64(changed[lo + j]), etas[j], pi)
                if not np.isfinite(new):
                    new = _freeze_sign(new, y)
                    bad = True
                y = new
            if write:
                out[i, j] = y * up
        final[i] = y * up
        diverged[i] = bad


@nb.njit(**_JIT)
def sam_segments(changed, offsets, p, etas, zetas, initial, up, out, final, diverged):
    """SAM over each CSR segment (as :func:`sa_segments`), frozen at ±inf after an overflow."""
    n = offsets.size - 1
    write = out.shape[1] > 0
    shared = p.size == 1
    for i in range(n):
        pi = p[0] if shared else p[i]
        z = initial
        zp = initial
        bad = False
        lo = offsets[i]
        for j in range(offsets[i + 1] - lo):
            if not bad:
                new = _sam_step(z, zp, np.float64(changed[lo + j]), etas[j], zetas[j], pi)
                if not np.isfinite(new):
                    new = _freeze_sign(new, z)
                    bad = True
                zp = z
                z = new
            if write:
                out[i, j] = z * up
        final[i] = z * up
        diverged[i] = bad


# --------------------------------------------------------------------------- streaming
@nb.njit(inline="always", **_JIT)
def _bad01(c):
    return not (c == 0 or c == 1)


@nb.njit(**_JIT)
def first_bad_changed(changed, mask):
    """Index of the first (masked) entry that is not 0 or 1, or −1."""
    use_mask = mask.size > 0
    for i in range(changed.size):
        if use_mask and not mask[i]:
            continue
        if _bad01(changed[i]):
            return i
    return -1


@nb.njit(**_JIT)
def count_update(changed, changes):
    """Î += I for every page, after checking every I is 0 or 1 (−1, or the bad index)."""
    n = changed.size
    for i in range(n):
        if _bad01(changed[i]):
            return i
    for i in range(n):
        changes[i] += np.float64(changed[i])
    return -1


@nb.njit(**_JIT)
def count_update_masked(changed, mask, changes, counts):
    """Î += I and k += 1 on the masked pages only."""
    bad = first_bad_changed(changed, mask)
    if bad >= 0:
        return bad
    for i in range(changed.size):
        if mask[i]:
            changes[i] += np.float64(changed[i])
            counts[i] += 1
    return -1


@nb.njit(**_JIT)
def sa_update(changed, y, p, e):
    """One SA step for every page with the shared stepsize ``e``, in place.

    Returns (bad index or −1, number of pages whose estimate left the float64 range)."""
    n = changed.size
    for i in range(n):
        if _bad01(changed[i]):
            return i, 0
    shared = p.size == 1
    n_bad = 0
    for i in range(n):
        yi = y[i]
        if not np.isfinite(yi):  # frozen
            continue
        new = _sa_step(yi, np.float64(changed[i]), e, p[0] if shared else p[i])
        if not np.isfinite(new):
            new = _freeze_sign(new, yi)
            n_bad += 1
        y[i] = new
    return -1, n_bad


@nb.njit(**_JIT)
def sa_update_masked(changed, mask, y, counts, p, etas):
    """One SA step on the masked pages, each with its own stepsize ``etas[k_i]``."""
    bad = first_bad_changed(changed, mask)
    if bad >= 0:
        return bad, 0
    shared = p.size == 1
    n_bad = 0
    for i in range(changed.size):
        if not mask[i]:
            continue
        k = counts[i]
        counts[i] = k + 1
        yi = y[i]
        if not np.isfinite(yi):
            continue
        new = _sa_step(yi, np.float64(changed[i]), etas[k], p[0] if shared else p[i])
        if not np.isfinite(new):
            new = _freeze_sign(new, yi)
            n_bad += 1
        y[i] = new
    return -1, n_bad


@nb.njit(**_JIT)
def sam_update(changed, z, zp, diverged, p, e, zeta):
    """One SAM step for every page: z_{k+1} is written over z_{k−1} (the caller swaps the
    two buffers). Returns (bad index or −1, number of pages that newly diverged)."""
    n = changed.size
    for i in range(n):
        if _bad01(changed[i]):
            return i, 0
    shared = p.size == 1
    n_bad = 0
    for i in range(n):
        zi = z[i]
        if diverged[i]:
            zp[i] = zi
            continue
        new = _sam_step(zi, zp[i], np.float64(changed[i]), e, zeta, p[0] if shared else p[i])
        if not np.isfinite(new):
            new = _freeze_sign(new, zi)
            diverged[i] = True
            n_bad += 1
        zp[i] = new
    return -1, n_bad


@nb.njit(**_JIT)
def sam_update_masked(changed, mask, z, zp, diverged, counts, p, etas, zetas):
    """One SAM step on the masked pages (in place, each with its own k)."""
    bad = first_bad_changed(changed, mask)
    if bad >= 0:
        return bad, 0
    shared = p.size == 1
    n_bad = 0
    for i in range(changed.size):
        if not mask[i]:
            continue
        k = counts[i]
        counts[i] = k + 1
        zi = z[i]
        if diverged[i]:
            zp[i] = zi
            continue
        new = _sam_step(zi, zp[i], np.float64(changed[i]), etas[k], zetas[k], p[0] if shared else p[i])
        if not np.isfinite(new):
            new = _freeze_sign(new, zi)
            diverged[i] = True
            n_bad += 1
        zp[i] = zi
        z[i] = new
    return -1, n_bad


# --------------------------------------------------------------------------- Poisson check
@nb.njit(**_JIT)
def exp_cell_distance(tau, offsets, p, edges, table, scale, per_page, pooled):
    """Per-page Kolmogorov distance of z = p τ from Exp(1) at the 1/64-quantiles.

    ``edges[i]`` (i = 1..63) is the smallest float z in cell i of
    ``floor(64 (1 − e^{−z}))``; ``table[floor(z·scale)]`` is the cell of the left end of
    each lookup bin, and one bin holds at most one edge, so a cell is one lookup and one
    comparison. ``pooled`` (64,) receives the counts summed over pages.
    """
    n = offsets.size - 1
    m = edges.size  # 64: edges[0] = 0 unused
    top = table.size - 1
    last = edges[m - 1]
    shared = p.size == 1
    counts = np.zeros(m, dtype=np.int64)
    for i in range(n):
        pi = p[0] if shared else p[i]
        for c in range(m):
            counts[c] = 0
        lo, hi = offsets[i], offsets[i + 1]
        for j in range(lo, hi):
            z = tau[j] * pi
            if z >= last:
                cell = m - 1
            else:
                b = int(z * scale)
                if b > top:
                    b = top
                cell = table[b]
                if cell + 1 < m and z >= edges[cell + 1]:
                    cell += 1
            counts[cell] += 1
        k = hi - lo
        acc = 0
        dist = 0.0
        for c in range(m - 1):
            acc += counts[c]
            pooled[c] += counts[c]
            d = abs(acc / k - (c + 1) / m)
            if d > dist:
                dist = d
        pooled[m - 1] += counts[m - 1]
        per_page[i] = dist
