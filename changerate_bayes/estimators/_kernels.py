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

_JIT = dict(cache=True, nogil=True, error_model="numpy")  # IEEE division: inf/NaN, handled below


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
def _all01(changed):
    """Whether every entry is 0 or 1 (a branch-free pass that vectorises)."""
    bad = 0
    for i in range(changed.size):
        c = changed[i]
        bad += not (c == 0 or c == 1)
    return bad == 0


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
    if not _all01(changed):
        return first_bad_changed(changed, np.zeros(0, dtype=np.bool_))
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
def sa_update(changed, y, p, e, frozen):
    """One SA step for every page with the shared stepsize ``e``, in place (``frozen``: some
    estimate may already be ±inf, and is then kept).

    Returns (bad index or −1, number of pages whose estimate left the float64 range)."""
    n = changed.size
    if not _all01(changed):
        return first_bad_changed(changed, np.zeros(0, dtype=np.bool_)), 0
    shared = p.size == 1
    if not frozen:  # no estimate has left the float64 range: no frozen value to keep
        n_bad = 0
        for i in range(n):
            yi = y[i]
            new = _sa_step(yi, np.float64(changed[i]), e, p[0] if shared else p[i])
            ok = np.isfinite(new)
            y[i] = new if ok else _freeze_sign(new, yi)
            n_bad += not ok
        return -1, n_bad
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
    if not _all01(changed):
        return first_bad_changed(changed, np.zeros(0, dtype=np.bool_)), 0
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
@nb.njit(parallel=True, **_JIT)
def exp_cell_distance(tau, offsets, p, edges, table, scale, per_page, pooled):
    """Per-page Kolmogorov distance of z = p τ from Exp(1) at the 1/64-quantiles.

    ``edges[i]`` (i = 1..63) is the smallest float z in cell i of
    ``floor(64 (1 − e^{−z}))`` and ``edges[64]`` = inf; ``table[floor(z·scale)]`` is the
    cell of the left end of each lookup bin, and one bin holds at most one edge, so a cell
    is one lookup and one comparison (no branch: z is first capped at ``edges[63]``).
    ``pooled`` (64,) receives the counts summed over pages. Blocks of pages run in
    parallel, each with its own counts.

    The distance max_c |acc_c/k − (c+1)/64| (acc_c the crawls in cells <= c) is computed as
    max_c |64·acc_c − (c+1)·k| / (64 k), exact in integers with one rounding.
    """
    n = offsets.size - 1
    m = edges.size - 1  # 64 cells
    last = edges[m - 1]
    shared = p.size == 1
    n_blocks = max(1, min(n, 64))
    block_counts = np.zeros((n_blocks, m), dtype=np.int64)
    for blk in nb.prange(n_blocks):
        counts = np.zeros(m, dtype=np.int64)
        mine = block_counts[blk]
        for i in range(blk * n // n_blocks, (blk + 1) * n // n_blocks):
            pi = p[0] if shared else p[i]
            lo, hi = offsets[i], offsets[i + 1]
            for j in range(lo, hi):
                z = min(tau[j] * pi, last)
                c = table[int(z * scale)]
                c += z >= edges[c + 1]
                counts[c] += 1
                mine[c] += 1
            k = hi - lo
            acc = 0
            worst = 0
            for c in range(m - 1):  # one pass: the prefix sums, their distance, and the reset
                acc += counts[c]
                counts[c] = 0
                worst = max(worst, abs(m * acc - (c + 1) * k))
            counts[m - 1] = 0
            per_page[i] = worst / (m * k)
    for blk in range(n_blocks):
        for c in range(m):
            pooled[c] += block_counts[blk, c]


# --------------------------------------------------------------------------- MLE roots
# Constants of the certified Taylor tracking, as in ``_rootkinds`` / ``_rootpath``.
_RHO = 0.08
_SPREAD = 0.5
_MAX_X = 800.0
_MIN_X = 1e-300
_LOCAL_MAX_X = 700.0
_NEWTON_TOL = 1e-9
_EPS = 2.220446049250313e-16


@nb.njit(inline="always", **_JIT)
def _w(x):
    """1/(e^x − 1) for x in [MIN_X, MAX_X]."""
    return np.exp(-x) / -np.expm1(-x)


@nb.njit(**_JIT)
def mle_exact(changed, tau, lo, hi, target, n1, guess):
    """The MLE root over crawls lo..hi−1 (some changed, some not; ``target`` = Σ_{I=0} τ > 0).

    Safeguarded Newton on the scale-free H(Δ) = Σ_{I=1} u(Δτ) − ΔT (u(x) = x/(e^x − 1)),
    which decreases from H(0) = n1 to H(n1/T) <= 0, in the variable t = Δ/d − 1 at the
    current point d: a Newton step that leaves the bracket is replaced by bisection. Stops
    once a Newton step is below 1e-9 relative (taken: the error left is ~1e-18).
    """
    a = 0.0
    b = n1 / target
    d = guess if (guess > a and guess < b) else 0.5 * b
    for _ in range(400):
        h = -d * target
        dh = h
        for j in range(lo, hi):
            if changed[j] != 0:
                x = min(max(d * tau[j], _MIN_X), _LOCAL_MAX_X)
                u = x / np.expm1(x)
                h += u
                dh += u * (1.0 - x - u)
        if h == 0.0:
            return d
        if h > 0.0:
            a = d
        else:
            b = d
        new = d * (1.0 - h / dh)
        if abs(new - d) <= _NEWTON_TOL * d and new > a and new < b:
            return new
        if not (new > a and new < b):
            new = 0.5 * (a + b) if a == 0.0 else np.sqrt(a * b)
        if b - a <= 4.0 * _EPS * b:
            return new
        d = new
    return d


@nb.njit(**_JIT)
def _local_sums(changed, tau, lo, hi, d, target, h):
    """H and its first three derivatives in t at Δ = d(1 + t), t = 0 (the scale-free H of
    ``_rootkinds``: x u' = u(1 − x − u), x² u'' = u(x + u)(x + 2u − 2),
    x³ u‴ = u(x + u)(3(x + 2u) − x² − 6u(x + u)))."""
    h0 = -d * target
    h1 = h0
    h2 = 0.0
    h3 = 0.0
    for j in range(lo, hi):
        if changed[j] != 0:
            x = min(max(d * tau[j], _MIN_X), _LOCAL_MAX_X)
            u = x / np.expm1(x)
            a = u * (x + u)
            su = x + 2.0 * u
            h0 += u
            h1 += u - a
            h2 += a * (su - 2.0)
            h3 += a * (3.0 * su - x * x - 6.0 * a)
    h[0] = h0
    h[1] = h1
    h[2] = h2
    h[3] = h3


@nb.njit(**_JIT)
def _cubic_step(h):
    """The root near t = 0 of h0 + h1 t + h2 t²/2 + h3 t³/6 (three Newton steps from 0,
    |t| <= 1/2) and the tail bound of ``_rootsolve.local_error`` (inf if not accepted)."""
    t = 0.0
    for _ in range(3):
        q = h[0] + t * (h[1] + t * (h[2] / 2.0 + t * h[3] / 6.0))
        dq = h[1] + t * (h[2] + t * h[3] / 2.0)
        t = min(max(t - q / dq, -0.5), 0.5)
    k = max(1.0, max(abs(h[2] / (2.0 * h[1])), np.sqrt(abs(h[3] / (6.0 * h[1])))))
    kt = k * abs(t)
    err = abs(t) * kt**3 / (1.0 - kt) if kt < 0.5 else np.inf
    if not np.isfinite(err):
        err = np.inf
    return t, err


@nb.njit(**_JIT)
def mle_local(changed, tau, lo, hi, target, n1, point, h, local_tol):
    """The MLE root over crawls lo..hi−1 from a good starting point: local cubic models of
    H at the point (one O(k) pass each), accepted once the model's tail bound is below
    ``local_tol``. On return ``h`` holds H's derivatives at the root (in its units), for the
    next crawl's predictor. Returns NaN if three passes do not converge."""
    for _ in range(3):
        if not (point > 0.0 and np.isfinite(point)):
            return np.nan
        _local_sums(changed, tau, lo, hi, point, target, h)
        t, err = _cubic_step(h)
        new = point * (1.0 + t)
        if err <= local_tol:
            one = 1.0 + t
            h1 = (h[1] + t * (h[2] + t * h[3] / 2.0)) * one
            h2 = (h[2] + t * h[3]) * one * one
            h3 = h[3] * one * one * one
            h[0] = 0.0
            h[1] = h1
            h[2] = h2
            h[3] = h3
            return new
        point = new
    return np.nan


@nb.njit(**_JIT)
def _predict(root, h, changed_new, tau_new):
    """The root after one more crawl, from the cubic model of the previous prefix's H at its
    root plus the new crawl's exact term (two Newton steps, O(1))."""
    x = root * tau_new
    tt = 0.0
    for _ in range(2):
        one = 1.0 + tt
        if changed_new:
            xc = min(max(x * one, _MIN_X), _LOCAL_MAX_X)
            u = xc / np.expm1(xc)
            v0 = u
            v1 = u * (1.0 - xc - u) / one
        else:
            v0 = -x * one
            v1 = -x
        m = tt * (h[1] + tt * (h[2] / 2.0 + tt * h[3] / 6.0)) + v0
        dm = h[1] + tt * (h[2] + tt * h[3] / 2.0) + v1
        tt = min(max(tt - m / dm, -0.5), 1.0)
    if not np.isfinite(tt):
        tt = 0.0
    return root * (1.0 + tt)


@nb.njit(**_JIT)
def _add_coefficients(x, tau, weights, order, tail, coef, xp, up, acc):
    """coef[n] += τ · x^n w^{(n)}(x)/n! (the Taylor coefficients of τ w(x(1 + t)) in t), and
    returns the crawl's truncation bound on |t| <= RHO (complete monotonicity)."""
    xc = min(max(x, _MIN_X), _MAX_X)
    e = np.exp(-xc)
    w = e / -np.expm1(-xc)
    u = xc * w
    xp[0] = 1.0
    up[0] = 1.0
    for n in range(1, order + 1):
        xp[n] = xp[n - 1] * xc
        up[n] = up[n - 1] * u
    # acc[n] = Σ_k M[n,k] x^{n−k} u^k, summed over k in order (k outer, so that the n are
    # independent and vectorise); ``weights`` holds M transposed: weights[k, n] = M[n, k]
    for n in range(order + 1):
        acc[n] = weights[0, n] * xp[n]
    for k in range(1, order + 1):
        uk = up[k]
        for n in range(k, order + 1):
            acc[n] += weights[k, n] * xp[n - k] * uk
    scale = tau * w
    for n in range(order + 1):
        coef[n] += acc[n] * scale
    # the bound τ w(x/2) (ρ/s)^(N+1)/(1 − ρ/s) with s = 1/2: w(x/2) = w(x)(1 + e^{x/2})
    # = w + w/√(e^{−x}), no second exponential (for x/2 in [MIN_X, 700])
    xs = x * (1.0 - _SPREAD)
    if xs >= _MIN_X and xs <= 700.0 and xc == x:
        ws = w + w / np.sqrt(e)
    else:
        ws = _w(min(max(xs, _MIN_X), _MAX_X))
    return tau * ws * tail


@nb.njit(inline="always", **_JIT)
def _horner(coef, order, target, t):
    q = coef[order]
    dq = 0.0
    for n in range(order - 1, -1, -1):
        dq = dq * t + q
        q = q * t + coef[n]
    return q - target, dq


@nb.njit(**_JIT)
def _mle_page(changed, tau, lo, hi, weights, order, k_exact, certify, out, row, write, coef, xp, up, acc, stats):
    """The MLE after every crawl of one page (crawls lo..hi−1); returns the last root."""
    n1 = 0.0
    n0 = 0.0
    target = 0.0
    root = np.nan
    anchored = False
    anchor = 1.0
    err = 0.0
    t = 0.0
    has_local = False
    hloc = np.zeros(4)
    ratio = _RHO / _SPREAD
    tail = ratio ** (order + 1) / (1.0 - ratio)
    for j in range(hi - lo):
        g = lo + j
        c = changed[g] != 0
        if c:
            n1 += 1.0
        else:
            n0 += 1.0
            target += tau[g]
        if n1 == 0.0:
            root = 0.0
            has_local = False
        elif n0 == 0.0:
            root = np.inf
            has_local = False
        else:
            solved = False
            if anchored:
                if c:
                    err += _add_coefficients(anchor * tau[g], tau[g], weights, order, tail, coef, xp, up, acc)
                ok = False
                q_lo, _ = _horner(coef, order, target, -_RHO)
                q_hi, _ = _horner(coef, order, target, _RHO)
                if q_lo > err and q_hi < -err:
                    dq = 0.0
                    for _ in range(60):
                        q, dq = _horner(coef, order, target, t)
                        t_new = min(max(t - q / dq, -_RHO), _RHO)
                        if abs(t_new - t) <= 1e-16:
                            t = t_new
                            ok = True
                            break
                        t = t_new
                    # Q' at the last iterate (within 1e-16 of the root): the root's error in t
                    ok = ok and 2.0 * err <= certify * abs(dq)
                if ok:
                    root = anchor * (1.0 + t)
                    solved = True
            if not solved:
                if anchored:  # the root left the disk (or the bound is loose): solve from its edge
                    root = mle_local(changed, tau, lo, g + 1, target, n1, anchor * (1.0 + t), hloc, 1e-15)
                    if not np.isfinite(root):
                        root = mle_exact(changed, tau, lo, g + 1, target, n1, anchor * (1.0 + t))
                        stats[0] += 1
                    has_local = False
                else:
                    new = np.nan
                    if has_local:
                        new = mle_local(changed, tau, lo, g + 1, target, n1,
                                        _predict(root, hloc, c, tau[g]), hloc, 1e-15)
                    if not np.isfinite(new):
                        new = mle_exact(changed, tau, lo, g + 1, target, n1, root)
                        _local_sums(changed, tau, lo, g + 1, new, target, hloc)
                        hloc[0] = 0.0
                        stats[0] += 1
                    root = new
                    has_local = True
                if j + 1 > k_exact:  # (re-)anchor the series at the exact root
                    anchored = True
                    anchor = root
                    t = 0.0
                    err = 0.0
                    for n in range(order + 1):
                        coef[n] = 0.0
                    for i in range(lo, g + 1):
                        if changed[i] != 0:
                            err += _add_coefficients(anchor * tau[i], tau[i], weights, order, tail, coef, xp, up, acc)
                    stats[1] += 1
        if write:
            out[row, j] = root
    return root


@nb.njit(parallel=True, **_JIT)
def mle_segments(changed, tau, offsets, pages, weights, k_exact, certify, out, final, stats):
    """The MLE after every crawl (``out[r, j]``, if ``out.shape[1]``) of each page ``pages[r]``
    of the CSR history, and after its last crawl (``final[r]``), pages in parallel.

    The first ``k_exact`` crawls of a page are solved exactly (``mle_exact``, warm-started
    from the previous root); later ones are tracked with the certified Taylor series around
    an anchor (O(order²) per crawl), re-solved exactly and re-anchored when the
    certificate fails. ``stats`` (2,) receives the exact solves and the re-anchors.
    """
    order = weights.shape[0] - 1
    write = out.shape[1] > 0
    n = pages.size
    n_chunks = min(n, 64)
    exact = np.zeros(n_chunks, dtype=np.int64)
    anchors = np.zeros(n_chunks, dtype=np.int64)
    for ch in nb.prange(n_chunks):
        coef = np.zeros(order + 1)
        xp = np.empty(order + 1)
        up = np.empty(order + 1)
        acc = np.empty(order + 1)
        st = np.zeros(2, dtype=np.int64)
        for r in range(ch * n // n_chunks, (ch + 1) * n // n_chunks):
            i = pages[r]
            final[r] = _mle_page(changed, tau, offsets[i], offsets[i + 1], weights, order, k_exact, certify,
                                 out, r, write, coef, xp, up, acc, st)
        exact[ch] = st[0]
        anchors[ch] = st[1]
    stats[0] += exact.sum()
    stats[1] += anchors.sum()


@nb.njit(parallel=True, **_JIT)
def mle_final_segments(changed, tau, offsets, pages, final):
    """The MLE over all crawls of each page ``pages[r]`` (one exact solve per page)."""
    for r in nb.prange(pages.size):
        i = pages[r]
        lo, hi = offsets[i], offsets[i + 1]
        n1 = 0.0
        target = 0.0
        for j in range(lo, hi):
            if changed[j] != 0:
                n1 += 1.0
            else:
                target += tau[j]
        if n1 == 0.0:
            final[r] = 0.0
        elif n1 == hi - lo:
            final[r] = np.inf
        else:
            final[r] = mle_exact(changed, tau, lo, hi, target, n1, np.nan)
