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
from numba.cpython.unsafe.numbers import trailing_zeros as _trailing_zeros

from .._vecmath import INV_LN2 as _INV_LN2
from .._vecmath import ROUND as _ROUND
from .._vecmath import ROUND_BITS as _ROUND_BITS
from .._vecmath import bits_f64 as _bits_f64
from .._vecmath import exp_split
from .._vecmath import f64_bits as _f64_bits

_JIT = dict(cache=True, nogil=True, error_model="numpy")  # IEEE division: inf/NaN, handled below
_JIT_MLE = dict(_JIT, fastmath={"contract"})  # the MLE roots: fused multiply-adds (one rounding each)


@nb.njit(inline="always", **_JIT)
def _freeze_sign(bad, last):
    s = np.sign(last) if np.isnan(bad) else np.sign(bad)
    return np.inf if s >= 0 else -np.inf


@nb.njit(inline="always", **_JIT)
def _frozen_if_bad(new, last):
    """(``new``, False) while it is finite, else (±inf with the sign of the overflow, True)."""
    ok = np.isfinite(new)
    return (new if ok else _freeze_sign(new, last)), not ok


@nb.njit(inline="always", **_JIT)
def _sa_step(y, c, e, p):
    return y + e * (c * (y + p) - y)


@nb.njit(inline="always", **_JIT)
def _sam_step(z, zp, c, e, zeta, p):
    return z + e * (c * (z + p) - z) + zeta * (z - zp)


# --------------------------------------------------------------------------- batch paths
@nb.njit(**_JIT)
def sa_segments(changed, offsets, p, etas, initial, up, out, final, diverged):
    """SA over each CSR segment: :func:`sam_segments` without the momentum term (the
    compiled loop keeps z_{k−1} but never reads it, so the steps are SA's)."""
    sam_segments(changed, offsets, p, etas, None, initial, up, out, final, diverged)


@nb.njit(**_JIT)
def sam_segments(changed, offsets, p, etas, zetas, initial, up, out, final, diverged):
    """SAM over each CSR segment; writes the path into ``out[i, :len_i]`` (if ``out.shape[1]``)
    and the last value into ``final[i]``, frozen at ±inf after an overflow. ``p`` has length
    1 (shared) or n_pages; ``zetas`` None: no momentum term (SA)."""
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
                c = np.float64(changed[lo + j])
                if zetas is None:
                    new, bad = _frozen_if_bad(_sa_step(z, c, etas[j], pi), z)
                else:
                    new, bad = _frozen_if_bad(_sam_step(z, zp, c, etas[j], zetas[j], pi), z)
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


@nb.njit(inline="always", **_JIT)
def _first_bad_all(changed):
    """−1 if every entry is 0 or 1 (checked in one branch-free pass), else the first that is not."""
    if _all01(changed):
        return -1
    return first_bad_changed(changed, np.zeros(0, dtype=np.bool_))


@nb.njit(inline="always", **_JIT)
def _next_count(counts, i):
    """k_i, the crawls of page i so far, and k_i += 1."""
    k = counts[i]
    counts[i] = k + 1
    return k


@nb.njit(**_JIT)
def count_update(changed, changes):
    """Î += I for every page, after checking every I is 0 or 1 (−1, or the bad index)."""
    bad = _first_bad_all(changed)
    if bad >= 0:
        return bad
    for i in range(changed.size):
        changes[i] += np.float64(changed[i])
    return -1


@nb.njit(**_JIT)
def count_update_masked(changed, mask, changes, counts):
    """Î += I and k += 1 on the masked pages only (their I checked by the caller:
    ``first_bad_changed``)."""
    for i in range(changed.size):
        if mask[i]:
            changes[i] += np.float64(changed[i])
            counts[i] += 1


@nb.njit(inline="always", **_JIT)
def _sa_page(y, i, c, e, p):
    """One SA step of page i in place, unless its estimate is already ±inf (frozen: kept);
    True if the estimate left the float64 range."""
    yi = y[i]
    if not np.isfinite(yi):
        return False
    y[i], b = _frozen_if_bad(_sa_step(yi, c, e, p), yi)
    return b


@nb.njit(**_JIT)
def sa_update(changed, y, p, e, frozen):
    """One SA step for every page with the shared stepsize ``e``, in place (``frozen``: some
    estimate may already be ±inf, and is then kept).

    Returns (bad index or −1, number of pages whose estimate left the float64 range)."""
    n = changed.size
    bad = _first_bad_all(changed)
    if bad >= 0:
        return bad, 0
    shared = p.size == 1
    if not frozen:  # no estimate has left the float64 range: no frozen value to keep
        n_bad = 0
        for i in range(n):
            yi = y[i]
            y[i], b = _frozen_if_bad(_sa_step(yi, np.float64(changed[i]), e, p[0] if shared else p[i]), yi)
            n_bad += b
        return -1, n_bad
    n_bad = 0
    for i in range(n):
        n_bad += _sa_page(y, i, np.float64(changed[i]), e, p[0] if shared else p[i])
    return -1, n_bad


@nb.njit(**_JIT)
def sa_update_masked(changed, mask, y, counts, p, etas):
    """One SA step on the masked pages (their I checked by the caller: ``first_bad_changed``),
    each with its own stepsize ``etas[k_i]``; returns the number of pages whose estimate left
    the float64 range."""
    shared = p.size == 1
    n_bad = 0
    for i in range(changed.size):
        if mask[i]:
            e = etas[_next_count(counts, i)]
            n_bad += _sa_page(y, i, np.float64(changed[i]), e, p[0] if shared else p[i])
    return n_bad


@nb.njit(**_JIT)
def sam_update(changed, z, zp, diverged, p, e, zeta):
    """One SAM step for every page: z_{k+1} is written over z_{k−1} (the caller swaps the
    two buffers). Returns (bad index or −1, number of pages that newly diverged)."""
    bad = _first_bad_all(changed)
    if bad >= 0:
        return bad, 0
    shared = p.size == 1
    n_bad = 0
    for i in range(changed.size):
        zi = z[i]
        if diverged[i]:
            zp[i] = zi
            continue
        zp[i], b = _frozen_if_bad(_sam_step(zi, zp[i], np.float64(changed[i]), e, zeta, p[0] if shared else p[i]), zi)
        diverged[i] = b
        n_bad += b
    return -1, n_bad


@nb.njit(**_JIT)
def sam_update_masked(changed, mask, z, zp, diverged, counts, p, etas, zetas):
    """One SAM step on the masked pages (in place, each with its own k; their I checked by the
    caller: ``first_bad_changed``); returns the number of pages that newly diverged."""
    shared = p.size == 1
    n_bad = 0
    for i in range(changed.size):
        if not mask[i]:
            continue
        k = _next_count(counts, i)
        zi = z[i]
        if diverged[i]:
            zp[i] = zi
            continue
        new, b = _frozen_if_bad(
            _sam_step(zi, zp[i], np.float64(changed[i]), etas[k], zetas[k], p[0] if shared else p[i]), zi
        )
        diverged[i] = b
        n_bad += b
        zp[i] = zi
        z[i] = new
    return n_bad


# --------------------------------------------------------------------------- Poisson check
#: pages with fewer crawls than this visit only their occupied cells (a 64-bit mask); the
#: measured crossover (single thread, 2 × 10^7 crawls): equal at 32 crawls, the full scan
#: 11% faster at 48 and 16% at 64
_SHORT_PAGE = 32


@nb.njit(parallel=True, **_JIT)
def exp_cell_distance(tau, offsets, p, edges, table, scale, per_page, pooled):
    """Per-page Kolmogorov distance of z = p τ from Exp(1) at the 1/64-quantiles.

    ``edges[i]`` (i = 1..63) is the smallest float z in cell i of
    ``floor(64 (1 − e^{−z}))`` and ``edges[64]`` = inf; ``table[floor(z·scale)]`` is the
    cell of the left end of each lookup bin, and one bin holds at most one edge, so a cell
    is one lookup and one comparison (no branch: z is first capped at ``edges[63]``).
    ``scale`` is a power of two, so z·scale = τ·(p·scale) and edges·scale are exact and
    the comparison is made on the scaled values. ``pooled`` (64,) receives the counts
    summed over pages. Blocks of pages run in parallel, each with its own counts.

    The distance max_c |acc_c/k − (c+1)/64| (acc_c the crawls in cells <= c, c = 0..62) is
    computed as max_c |64·acc_c − (c+1)·k| / (64 k), exact in integers with one rounding.
    Between occupied cells acc_c is constant, so 64·acc_c − (c+1)·k is largest at an
    occupied cell and (c+1)·k − 64·acc_c just below one: a page with fewer than
    ``_SHORT_PAGE`` crawls marks its occupied cells in a 64-bit mask and visits only
    those (at cell 63 the first value is 64k − 64k = 0, the end of the range c <= 62).
    """
    n = offsets.size - 1
    m = edges.size - 1  # 64 cells
    scaled_edges = edges * scale
    last = scaled_edges[m - 1]
    shared = p.size == 1
    n_blocks = max(1, min(n, 64))
    block_counts = np.zeros((n_blocks, m), dtype=np.int64)
    one = np.uint64(1)
    for blk in nb.prange(n_blocks):
        counts = np.zeros(m, dtype=np.int64)
        mine = block_counts[blk]
        for i in range(blk * n // n_blocks, (blk + 1) * n // n_blocks):
            ps = (p[0] if shared else p[i]) * scale
            lo, hi = offsets[i], offsets[i + 1]
            k = hi - lo
            worst = 0
            acc = 0
            if k < _SHORT_PAGE:
                occupied = np.uint64(0)
                for j in range(lo, hi):
                    z = min(tau[j] * ps, last)
                    c = np.int64(table[int(z)])
                    c += z >= scaled_edges[c + 1]
                    counts[c] += 1
                    occupied |= one << np.uint64(c)
                while occupied:
                    c = _trailing_zeros(occupied)
                    occupied &= occupied - one
                    worst = max(worst, c * k - m * acc)  # (c' + 1) k − 64 acc at c' = c − 1
                    nc = counts[c]
                    counts[c] = 0
                    mine[c] += nc
                    acc += nc
                    worst = max(worst, m * acc - (c + 1) * k)
            else:
                for j in range(lo, hi):
                    z = min(tau[j] * ps, last)
                    c = np.int64(table[int(z)])
                    c += z >= scaled_edges[c + 1]
                    counts[c] += 1
                for c in range(m - 1):  # one pass: the prefix sums, their distance, and the reset
                    nc = counts[c]
                    counts[c] = 0
                    mine[c] += nc
                    acc += nc
                    worst = max(worst, abs(m * acc - (c + 1) * k))
                mine[m - 1] += counts[m - 1]
                counts[m - 1] = 0
            per_page[i] = worst / (m * k)
    for blk in range(n_blocks):
        for c in range(m):
            pooled[c] += block_counts[blk, c]


# --------------------------------------------------------------------------- MLE roots
# Constants of the certified Taylor tracking, as in ``_rootkinds`` / ``_rootpath``.
_RHO = 0.08
_RHO_MAX = 0.2  # the compiled MLE path certifies roots up to this far from the anchor (with the bound there)
# s of the complete-monotonicity bound |[t^n] x w(x(1 + t))| <= x w(x(1 − s))/s^n (Bernstein: for w
# completely monotone and 0 < h < x, |w^(n)(x)| h^n/n! <= w(x − h); here h = s x). ``_rootkinds`` uses
# s = 1/2; s = 7/8 bounds the tail on |t| <= R ~ 0.14 as tightly as s = 1/2 does on R ~ 0.095 (the
# factor w(x/8)/w(x/2), about 4 at x ~ 1, is far smaller than the gain ((7/8)/(1/2))^(N+1) ~ 4e4),
# so roots stay certified to 1e-13 about 1.5x farther from their anchor: half as many re-anchors
_SPREAD = 0.875
_BOUND_SCALE = 1.0 - _SPREAD  # a crawl's bound is x w(x(1 − s)) = x w(x/8)
_MAX_X = 800.0
_MIN_X = 1e-300
_LOCAL_MAX_X = 700.0
_NEWTON_TOL = 1e-9
_EPS = 2.220446049250313e-16


_SHORT_RUN = 4  # runs of at most this many crawls are summed in one scalar loop
_CHUNK = 64  # crawls per block of the blocked loops (scratch of the kernels)


@nb.njit(**_JIT_MLE)
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


@nb.njit(inline="always", **_JIT_MLE)
def _em1(x):
    """e^x − 1 for 0 <= x <= 709, to 2 ulp, in arithmetic only (no libm call), so a loop over
    it vectorises.

    x = n ln 2 + r with n = round(x/ln 2) and |r| <= ln(2)/2; e^r − 1 is its Taylor
    polynomial of degree 13 (truncation below 2e-17 relative) and e^x − 1 = 2^n (e^r − 1) +
    (2^n − 1), both terms exact to an ulp (2^n − 1 is exact for n <= 52). 2^n is built from
    its bits (``_f64_bits`` / ``_bits_f64``: bitcasts).
    """
    s, r = exp_split(x)
    return s * _expm1_estrin(r) + (s - 1.0)


@nb.njit(inline="always", **_JIT_MLE)
def _expm1_estrin(r):
    """e^r − 1 for |r| <= ln(2)/2: the degree-13 Taylor polynomial of ``_vecmath.expm1_reduced``,
    r + r²·p(r), with p (degree 11) in Estrin's scheme (4 multiply-adds deep instead of 12:
    the exact phase's passes are short, so their latency counts)."""
    r2 = r * r
    r4 = r2 * r2
    s0 = (0.5 + r * (1.0 / 6.0)) + r2 * (1.0 / 24.0 + r * (1.0 / 120.0))
    s1 = (1.0 / 720.0 + r * (1.0 / 5040.0)) + r2 * (1.0 / 40320.0 + r * (1.0 / 362880.0))
    s2 = (1.0 / 3628800.0 + r * (1.0 / 39916800.0)) + r2 * (1.0 / 479001600.0 + r * (1.0 / 6227020800.0))
    return r + r2 * ((s0 + r4 * s1) + (r4 * r4) * s2)


@nb.njit(inline="always", **_JIT_MLE)
def _add_local_terms(x, u, h0, h1, h2, h3):
    """One crawl's terms of the local sums (``_local_sums``) added to (h0, h1, h2, h3)."""
    a = u * (x + u)
    su = x + 2.0 * u
    return h0 + u, h1 + (u - a), h2 + a * (su - 2.0), h3 + a * (3.0 * su - x * x - 6.0 * a)


@nb.njit(inline="always", **_JIT_MLE)
def _local_u(x, changed, j):
    """u = x/(e^x − 1) of crawl j, 0 if it did not change (``changed`` None: it changed)."""
    if changed is None:
        return x / _em1(x)
    return x / _em1(x) * np.float64(changed[j] != 0)


@nb.njit(inline="always", **_JIT_MLE)
def _local_sums(changed, tau, lo, hi, d, target, h, xs, us):
    """H and its first three derivatives in t at Δ = d(1 + t), t = 0 (the scale-free H of
    ``_rootkinds``: x u' = u(1 − x − u), x² u'' = u(x + u)(x + 2u − 2),
    x³ u‴ = u(x + u)(3(x + 2u) − x² − 6u(x + u))), in blocks of ``_CHUNK`` crawls: u of a
    block in one branch-free loop that vectorises (unchanged crawls give u = 0; a run of at most
    ``_SHORT_RUN`` crawls in one scalar loop), then the
    sums in crawl order. ``xs`` and ``us`` (_CHUNK,) are scratch. ``changed`` None: every
    crawl lo..hi−1 changed (no factor of 0/1 is applied)."""
    h0 = -d * target
    h1 = h0
    h2 = 0.0
    h3 = 0.0
    for c0 in range(lo, hi, _CHUNK):
        m = min(_CHUNK, hi - c0)
        if m <= _SHORT_RUN:  # a short run: one scalar loop (the blocked loops' set-up costs more)
            for b in range(m):
                x = min(max(d * tau[c0 + b], _MIN_X), _LOCAL_MAX_X)
                u = _local_u(x, changed, c0 + b)
                h0, h1, h2, h3 = _add_local_terms(x, u, h0, h1, h2, h3)
            continue
        for b in range(m):
            x = min(max(d * tau[c0 + b], _MIN_X), _LOCAL_MAX_X)
            xs[b] = x
            us[b] = _local_u(x, changed, c0 + b)
        for b in range(m):
            x = xs[b]
            u = us[b]
            h0, h1, h2, h3 = _add_local_terms(x, u, h0, h1, h2, h3)
    h[0] = h0
    h[1] = h1
    h[2] = h2
    h[3] = h3


@nb.njit(inline="always", **_JIT_MLE)
def _local_sums_changed(ct, m, d, target, h, xs, us):
    """``_local_sums`` over a prefix whose m changed crawls' intervals are ``ct[:m]`` (m <= its
    size): the same sums, in the same order, without the unchanged crawls (whose terms are
    exact zeros there), so the same numbers with about a third less work."""
    _local_sums(None, ct, 0, m, d, target, h, xs, us)


_REVERT_LOCAL = 1e-3  # a local model's first Newton step below this: series reversion (error O(e^5)) and one step
_REVERT_EXACT = 1e-5  # ... and below this, the reversion alone (its error, ~100 e^5 <= 1e-23, is below rounding)


@nb.njit(inline="always", **_JIT_MLE)
def _cubic_step(h):
    """The root near t = 0 of h0 + h1 t + h2 t²/2 + h3 t³/6 (three Newton steps from 0,
    |t| <= 1/2; when the first step is below ``_REVERT_LOCAL``, the series reversion to
    fourth order and one Newton step, the step left out when the first step is below
    ``_REVERT_EXACT``) and the tail bound of ``_rootsolve.local_error`` (inf if not accepted)."""
    inv = 1.0 / h[1]
    e = -h[0] * inv
    a = 0.5 * h[2] * inv
    b = h[3] * inv * (1.0 / 6.0)
    if abs(e) <= _REVERT_LOCAL:  # series reversion to fourth order, then one Newton step
        t = e * (1.0 + e * (-a + e * ((2.0 * a * a - b) + e * (5.0 * a * (b - a * a)))))
        if abs(e) > _REVERT_EXACT:
            q = h[0] + t * (h[1] + t * (h[2] / 2.0 + t * h[3] / 6.0))
            dq = h[1] + t * (h[2] + t * h[3] / 2.0)
            t = t - q / dq
    else:
        t = 0.0
        for _ in range(3):
            q = h[0] + t * (h[1] + t * (h[2] / 2.0 + t * h[3] / 6.0))
            dq = h[1] + t * (h[2] + t * h[3] / 2.0)
            t = min(max(t - q / dq, -0.5), 0.5)
    k = max(1.0, max(abs(a), np.sqrt(abs(b))))
    kt = k * abs(t)
    err = abs(t) * kt**3 / (1.0 - kt) if kt < 0.5 else np.inf
    if not np.isfinite(err):
        err = np.inf
    return t, err


@nb.njit(inline="always", **_JIT_MLE)
def _move_local_model(h, t):
    """``h`` (H's derivatives in t at a point) moved to the accepted root t: H there is 0,
    and its derivatives are those of the cubic model, rescaled to the root's units."""
    one = 1.0 + t
    h1 = (h[1] + t * (h[2] + t * h[3] / 2.0)) * one
    h2 = (h[2] + t * h[3]) * one * one
    h3 = h[3] * one * one * one
    h[0] = 0.0
    h[1] = h1
    h[2] = h2
    h[3] = h3


@nb.njit(inline="always", **_JIT_MLE)
def mle_local(changed, tau, lo, hi, target, n1, point, h, local_tol, xs, us, passes=3):
    """The MLE root over crawls lo..hi−1 from a good starting point: local cubic models of
    H at the point (one O(k) pass each), accepted once the model's tail bound is below
    ``local_tol``. On return ``h`` holds H's derivatives at the root (in its units), for the
    next crawl's predictor. Returns NaN if ``passes`` passes do not converge."""
    for _ in range(passes):
        if not (point > 0.0 and np.isfinite(point)):
            return np.nan
        _local_sums(changed, tau, lo, hi, point, target, h, xs, us)
        t, err = _cubic_step(h)
        new = point * (1.0 + t)
        if err <= local_tol:
            _move_local_model(h, t)
            return new
        point = new
    return np.nan


@nb.njit(inline="always", **_JIT_MLE)
def mle_local_changed(ct, m, target, point, h, local_tol, xs, us, passes=3):
    """``mle_local`` with the sums of ``_local_sums_changed`` (the prefix's m changed crawls'
    intervals in ``ct``): the same numbers."""
    return mle_local(None, ct, 0, m, target, float(m), point, h, local_tol, xs, us, passes)


@nb.njit(inline="always", **_JIT_MLE)
def _first_guess(changed, tau, lo, hi, target, n1):
    """A start for the first finite root: the root when every changed crawl has the mean
    changed interval τ̄, ln(1 + n1 τ̄/T)/τ̄ (exact for equal intervals)."""
    s = 0.0
    for j in range(lo, hi):
        s += tau[j] * np.float64(changed[j] != 0)
    mean = s / n1
    return np.log1p(n1 * mean / target) / mean


_REVERT = 0.02  # the predictor's first step below this: the cubic's root by series reversion (error O(e^4))


@nb.njit(inline="always", **_JIT_MLE)
def _em1_rough(x):
    """e^x − 1 for 0 <= x <= 709 to ~1e-9 relative, with a short dependency chain (ln 2
    reduction, degree-8 polynomial in Estrin's scheme): for the predictor only."""
    tb = x * _INV_LN2 + _ROUND
    n = tb - _ROUND
    s = _bits_f64((_f64_bits(tb) - _ROUND_BITS + 1023) << 52)
    r = x - n * 0.6931471805599453
    r2 = r * r
    lo = (0.5 + r * (1.0 / 6.0)) + r2 * (1.0 / 24.0 + r * (1.0 / 120.0))
    hi = (1.0 / 720.0 + r * (1.0 / 5040.0)) + r2 * (1.0 / 40320.0)
    return s * (r + r2 * (lo + (r2 * r2) * hi)) + (s - 1.0)


@nb.njit(inline="always", **_JIT_MLE)
def _predict(root, h, changed_new, tau_new):
    """The root after one more crawl (O(1)): the root near t = 0 of the cubic model of the
    previous prefix's H at its root plus the new crawl's term (its cubic Taylor polynomial
    at x = root·τ for a changed crawl, exact −x(1 + t) for an unchanged one), by series
    reversion when the first step is below ``_REVERT``, else three clamped Newton steps
    from 0. Only a start for ``mle_local``: a changed crawl's u is from ``_em1_rough``."""
    x = root * tau_new
    if changed_new:
        xc = min(max(x, _MIN_X), _LOCAL_MAX_X)
        u = xc / _em1_rough(xc)
        a = u * (xc + u)
        su = xc + 2.0 * u
        v0 = u
        c1 = h[1] + (u - a)
        c2 = 0.5 * (h[2] + a * (su - 2.0))
        c3 = (h[3] + a * (3.0 * su - xc * xc - 6.0 * a)) * (1.0 / 6.0)
    else:
        v0 = -x
        c1 = h[1] - x
        c2 = 0.5 * h[2]
        c3 = h[3] * (1.0 / 6.0)
    inv = 1.0 / c1
    e = -v0 * inv
    if abs(e) <= _REVERT:  # the series reversion of the cubic to third order (one division)
        a = c2 * inv
        tt = e * (1.0 + e * (-a + e * (2.0 * a * a - c3 * inv)))
    else:
        tt = 0.0
        for _ in range(3):
            m = v0 + tt * (c1 + tt * (c2 + tt * c3))
            dm = c1 + tt * (2.0 * c2 + tt * (3.0 * c3))
            tt = min(max(tt - m / dm, -0.5), 1.0)
    if not np.isfinite(tt):
        tt = 0.0
    return root * (1.0 + tt)


_FIRST_BLOCK = 16  # the first block after a (re-)anchor; each next one twice as long, up to _SERIES_BLOCK
_SERIES_BLOCK = 32  # crawls whose Taylor series are computed together (the loops run across crawls)
_HALLEY_TOL = 1e-6  # a Halley step this small leaves an error ~C·1e-18 in t (C ~ 1-10): taken, and the root accepted
_TRACK_ITER = 8
_REACH = 0.25  # Halley iterates are followed this far from the anchor (the series converges for |t| < 7/8)


@nb.njit(**_JIT_MLE)
def _series_block18(xs, m, g, bound):
    """``_series_block`` at order 18, the recurrence written out per crawl: one loop over
    the crawls whose body holds the 19 coefficients in registers, so that it vectorises
    across crawls (4 lanes) with no inner loops.

    For n >= 1, Σ_{i<=n} g_i g_{n−i} = 2 g_0 g_n + R_n with R_n = Σ_{0<i<n} g_i g_{n−i}
    (no g_n), so g_{n+1} = −(c g_n + R_n)/(n + 1) with c = x + 2 g_0: one multiply-add on
    the chain from g_n to g_{n+1}; R_n adds its newest products last. ``g`` is (19, 32)
    (row n at offset 32·n of its flat view: constant offsets, so the vectoriser needs no
    alias checks between the rows); ``xs`` and ``bound`` have 32 entries, and the crawls
    are taken in whole vectors of 4 (lanes m.. of ``xs`` are set to 1 and their output
    is not used).
    """
    gf = g.reshape(g.size)  # rows _SERIES_BLOCK apart: constant offsets, no alias checks between them
    m4 = (m + 3) & -4  # whole vectors of 4 crawls (the free lanes take x = 1, unused)
    for b in range(m, m4):
        xs[b] = 1.0
    for b in range(m4):
        x = min(max(xs[b], _MIN_X), _MAX_X)
        xs[b] = x
        half = _em1(0.5 * x)
        g0 = x / (half * (half + 2.0))
        bound[b] = x / _em1(_BOUND_SCALE * x)
        c = x + 2.0 * g0
        gf[0 + b] = g0
        g1 = -((x + g0) * g0)
        gf[32 + b] = g1
        g2 = -0.5 * (c * g1)
        gf[64 + b] = g2
        g3 = -0.3333333333333333 * (c * g2 + (g1 * g1))
        gf[96 + b] = g3
        g4 = -0.25 * (c * g3 + (2.0 * g1 * g2))
        gf[128 + b] = g4
        g5 = -0.2 * (c * g4 + (g2 * g2 + 2.0 * g1 * g3))
        gf[160 + b] = g5
        g6 = -0.16666666666666666 * (c * g5 + (2.0 * (g2 * g3 + g1 * g4)))
        gf[192 + b] = g6
        g7 = -0.14285714285714285 * (c * g6 + (g3 * g3 + 2.0 * (g2 * g4 + g1 * g5)))
        gf[224 + b] = g7
        g8 = -0.125 * (c * g7 + (2.0 * (g3 * g4 + g2 * g5 + g1 * g6)))
        gf[256 + b] = g8
        g9 = -0.1111111111111111 * (c * g8 + (g4 * g4 + 2.0 * (g3 * g5 + g2 * g6 + g1 * g7)))
        gf[288 + b] = g9
        g10 = -0.1 * (c * g9 + (2.0 * (g4 * g5 + g3 * g6 + g2 * g7 + g1 * g8)))
        gf[320 + b] = g10
        g11 = -0.09090909090909091 * (c * g10 + (g5 * g5 + 2.0 * (g4 * g6 + g3 * g7 + g2 * g8 + g1 * g9)))
        gf[352 + b] = g11
        g12 = -0.08333333333333333 * (c * g11 + (2.0 * (g5 * g6 + g4 * g7 + g3 * g8 + g2 * g9 + g1 * g10)))
        gf[384 + b] = g12
        g13 = -0.07692307692307693 * (c * g12 + (g6 * g6 + 2.0 * (g5 * g7 + g4 * g8 + g3 * g9 + g2 * g10 + g1 * g11)))
        gf[416 + b] = g13
        g14 = -0.07142857142857142 * (c * g13 + (2.0 * (g6 * g7 + g5 * g8 + g4 * g9 + g3 * g10 + g2 * g11 + g1 * g12)))
        gf[448 + b] = g14
        g15 = -0.06666666666666667 * (
            c * g14 + (g7 * g7 + 2.0 * (g6 * g8 + g5 * g9 + g4 * g10 + g3 * g11 + g2 * g12 + g1 * g13))
        )
        gf[480 + b] = g15
        g16 = -0.0625 * (c * g15 + (2.0 * (g7 * g8 + g6 * g9 + g5 * g10 + g4 * g11 + g3 * g12 + g2 * g13 + g1 * g14)))
        gf[512 + b] = g16
        g17 = -0.058823529411764705 * (
            c * g16 + (g8 * g8 + 2.0 * (g7 * g9 + g6 * g10 + g5 * g11 + g4 * g12 + g3 * g13 + g2 * g14 + g1 * g15))
        )
        gf[544 + b] = g17
        g18 = -0.05555555555555555 * (
            c * g17 + (2.0 * (g8 * g9 + g7 * g10 + g6 * g11 + g5 * g12 + g4 * g13 + g3 * g14 + g2 * g15 + g1 * g16))
        )
        gf[576 + b] = g18


@nb.njit(**_JIT_MLE)
def _series_block(xs, m, order, g, bound, acc):
    """The Taylor series of m changed crawls around the anchor, in the scaled variable.

    With x_b = Δ_a τ_b (clamped to [MIN_X, MAX_X], in place) and t = (Δ − Δ_a)/Δ_a,
    ``g[n, b]`` = [t^n] x_b w(x_b(1 + t)), w(x) = 1/(e^x − 1) (Δ_a times the crawl's
    Taylor coefficients of τ/(e^{Δτ} − 1)), and ``bound[b]`` = x_b w(x_b(1 − s)), which times
    (ρ/s)^(N+1)/(1 − ρ/s) bounds the crawl's truncation error on |t| <= ρ (complete
    monotonicity, s = ``_SPREAD`` = 7/8).

    From w' = −w − w²: g_0 = u(x) = x/(e^x − 1) and (n + 1) g_{n+1} = −(x g_n + Σ_{i<=n}
    g_i g_{n−i}). Every term has the sign (−1)^(n+1) (w is completely monotone), so
    nothing cancels, and |g_n| <= max(1, x^n/n!) u: nothing overflows. Two e^y − 1 per crawl
    (e^x − 1 = h(h + 2) with h = e^{x/2} − 1, and e^{x/8} − 1 for the bound); the O(N²) recurrence
    runs across the crawls (vectorised loops); at order 18 written out (``_series_block18``).
    """
    if order == 18 and g.shape[1] == 32 and xs.size >= 32:
        _series_block18(xs, m, g, bound)
    else:
        _series_block_any(xs, m, order, g, bound, acc)


@nb.njit(**_JIT_MLE)
def _series_block_any(xs, m, order, g, bound, acc):
    """``_series_block`` at any order: the recurrence in loops across the crawls."""
    for b in range(m):
        x = min(max(xs[b], _MIN_X), _MAX_X)
        xs[b] = x
        half = _em1(0.5 * x)
        g[0, b] = x / (half * (half + 2.0))
        bound[b] = x / _em1(_BOUND_SCALE * x)
    for n in range(order):
        for b in range(m):
            acc[b] = 0.0
        for i in range((n + 1) // 2):
            for b in range(m):
                acc[b] += g[i, b] * g[n - i, b]
        step = -1.0 / (n + 1.0)
        if n % 2 == 0:
            mid = n // 2
            for b in range(m):
                g[n + 1, b] = step * (xs[b] * g[n, b] + (2.0 * acc[b] + g[mid, b] * g[mid, b]))
        else:
            for b in range(m):
                g[n + 1, b] = step * (xs[b] * g[n, b] + 2.0 * acc[b])


@nb.njit(**_JIT_MLE)
def _expand(changed, tau, lo, hi, end, anchor, order, coef, xs, g, bound, acc, ahead):
    """coef[n] = Σ over the changed crawls lo..hi−1 of their scaled series (``_series_block``),
    summed crawl after crawl. The last block's free lanes take the series of up to ``ahead``
    next changed crawls (hi..end−1, not summed), at no extra block: they are left in
    ``g[:, used:have]``. Returns (Σ x w(x(1 − s)), the truncation bound before its factor; used;
    have)."""
    for n in range(order + 1):
        coef[n] = 0.0
    err = 0.0
    m = 0
    cap = xs.size
    for i in range(lo, hi):
        if changed[i] != 0:
            xs[m] = anchor * tau[i]
            m += 1
        if m > 0 and (m == cap or i == hi - 1):
            have = m
            if i == hi - 1:
                limit = min(cap, m + ahead)
                q = hi
                while q < end and have < limit:
                    if changed[q] != 0:
                        xs[have] = anchor * tau[q]
                        have += 1
                    q += 1
            _series_block(xs, have, order, g, bound, acc)
            for b in range(m):
                err += bound[b]
                for n in range(order + 1):
                    coef[n] += g[n, b]
            if i == hi - 1:
                return err, m, have
            m = 0
    return err, 0, 0


@nb.njit(inline="always", **_JIT_MLE)
def _horner2(coef, order, t):
    """Σ coef_n t^n and its first two derivatives (one pass)."""
    p = coef[order]
    p1 = 0.0
    p2 = 0.0
    for n in range(order - 1, -1, -1):
        p2 = p2 * t + p1
        p1 = p1 * t + p
        p = p * t + coef[n]
    return p, p1, 2.0 * p2


@nb.njit(**_JIT_MLE)
def _track_root(coef, order, level, t):
    """The root of Q(t) = Σ coef_n t^n − level by Halley's method from t, within |t| <= REACH.

    Returns (t*, Q'(t*), converged); stops once a step is below ``_HALLEY_TOL`` (the error
    left is ~K·1e-18, K = O(|Q''/Q'|² + |Q'''/Q'|) ~ 1–10: below the rounding of the root).
    The series is certified on |t| <= RHO
    only; a root found between RHO and REACH (where the series still converges, |t| < 7/8)
    is a good new anchor. Not converged (the last iterate, clipped to ±REACH) when an
    iterate leaves [−REACH, REACH], Q' >= 0, or after ``_TRACK_ITER`` steps.
    """
    for _ in range(_TRACK_ITER):
        q, d1, d2 = _horner2(coef, order, t)
        q -= level
        if not d1 < 0.0:
            return t, d1, False
        den = 2.0 * d1 * d1 - q * d2
        step = -2.0 * q * d1 / den if den > 0.0 else -q / d1
        new = t + step
        if not abs(new) <= _REACH:
            return min(max(new, -_REACH), _REACH) if new == new else t, d1, False
        if abs(step) <= _HALLEY_TOL:
            return new, d1 + d2 * step, True
        t = new
    return t, 0.0, False


@nb.njit(inline="always", **_JIT_MLE)
def _certified(t, dq, err, certify, order):
    """F changes sign within 2E/|Q'| of t inside a disk on which E bounds the truncation,
    and 2E/|Q'| is below ``certify``.

    ``err`` is E on the disk |t| <= RHO. Past RHO, the bound on the disk of radius
    R = |t| + certify (which then holds the sign change) is used instead:
    E(R) = E(RHO)·(R/RHO)^(N+1)·(1 − RHO/s)/(1 − R/s), s = 7/8, for R <= ``_RHO_MAX``.
    """
    a = abs(dq)
    if 2.0 * err <= certify * a and abs(t) + 2.0 * err / a <= _RHO:
        return True
    r = abs(t) + certify
    if not (r > _RHO and r <= _RHO_MAX):
        return False
    q = r / _RHO
    p = 1.0  # q^(order + 1) by repeated squaring
    e = order + 1
    while e > 0:
        if e & 1:
            p *= q
        q *= q
        e >>= 1
    bound = err * p * (1.0 - _RHO / _SPREAD) / (1.0 - r / _SPREAD)
    return 2.0 * bound <= certify * a


@nb.njit(**_JIT_MLE)
def _mle_exact_phase(changed, tau, lo, hi, k_exact, out, row, write, hloc, lx, lu, ct, stats):
    """The exact phase of ``_mle_page``: the roots of the prefixes of crawls lo..hi−1 until the
    first finite root past ``k_exact`` crawls (the anchor of the series), each solved exactly
    (a predictor from the previous root's cubic model, then ``mle_local``; a page's first
    finite root from ``_first_guess``; ``mle_exact`` when those fail). A function of its own,
    so that the local sums are inlined here and not into the tracking loop.

    The changed crawls' intervals are gathered in ``ct`` as they come, and the prefixes'
    sums run over them alone (``mle_local_changed``) while they fit.

    Returns (j, n1, n0, T, root): the last crawl done (``hi − lo`` when the page ended first)
    and the counts, unchanged time and root after it."""
    n1 = 0.0
    n0 = 0.0
    target = 0.0
    root = np.nan
    has_local = False
    m1 = 0
    cap = ct.size
    for j in range(hi - lo):
        gi = lo + j
        c = changed[gi] != 0
        if c:
            n1 += 1.0
            if m1 < cap:
                ct[m1] = tau[gi]
            m1 += 1
        else:
            n0 += 1.0
            target += tau[gi]
        if n1 == 0.0:
            root = 0.0
            has_local = False
        elif n0 == 0.0:
            root = np.inf
            has_local = False
        else:
            if has_local:
                point = _predict(root, hloc, c, tau[gi])
                if m1 <= cap:
                    new = mle_local_changed(ct, m1, target, point, hloc, 1e-15, lx, lu)
                else:
                    new = mle_local(changed, tau, lo, gi + 1, target, n1, point, hloc, 1e-15, lx, lu)
            else:  # the first finite root (or the first after a 0.0 / inf run)
                point = _first_guess(changed, tau, lo, gi + 1, target, n1)
                if m1 <= cap:
                    new = mle_local_changed(ct, m1, target, point, hloc, 1e-15, lx, lu, 6)
                else:
                    new = mle_local(changed, tau, lo, gi + 1, target, n1, point, hloc, 1e-15, lx, lu, 6)
            if not np.isfinite(new):
                new = mle_exact(changed, tau, lo, gi + 1, target, n1, root)
                _local_sums(changed, tau, lo, gi + 1, new, target, hloc, lx, lu)
                hloc[0] = 0.0
                stats[0] += 1
            root = new
            has_local = True
        if write:
            out[row, j] = root
        if has_local and j + 1 > k_exact:
            return j, n1, n0, target, root
    return hi - lo, n1, n0, target, root


@nb.njit(**_JIT_MLE)
def _mle_local_call(changed, tau, lo, hi, target, n1, point, h, local_tol, xs, us):
    """``mle_local`` as a call (the tracking loop's rare exact solves: kept out of its body)."""
    return mle_local(changed, tau, lo, hi, target, n1, point, h, local_tol, xs, us)


@nb.njit(inline="always", **_JIT_MLE)
def _mle_scratch(order):
    """The buffers of one thread's ``_mle_page`` calls: the series' coefficients (order + 1,),
    a block of changed crawls' x = Δ_a τ, their series (order + 1, _SERIES_BLOCK), truncation
    bounds and accumulator (``_expand``); H's derivatives (4,) and the local sums' x and u
    (_CHUNK,) of ``mle_local``; the changed crawls' intervals (_CHUNK,) of the exact phase."""
    return (
        np.zeros(order + 1),
        np.empty(_SERIES_BLOCK),
        np.empty((order + 1, _SERIES_BLOCK)),
        np.empty(_SERIES_BLOCK),
        np.empty(_SERIES_BLOCK),
        np.zeros(4),
        np.empty(_CHUNK),
        np.empty(_CHUNK),
        np.empty(_CHUNK),
    )


@nb.njit(**_JIT_MLE)
def _mle_page(changed, tau, lo, hi, order, k_exact, certify, tail, out, row, write, scratch, stats):
    """The MLE after every crawl of one page (crawls lo..hi−1); returns the last root.
    ``scratch``: the buffers of :func:`_mle_scratch`.

    The first ``k_exact`` prefixes are solved exactly (``_mle_exact_phase``: a predictor from
    the previous root's cubic model, then ``mle_local``; ``mle_exact`` when that fails). Later prefixes are
    tracked with the Taylor series of Δ_a·F(Δ_a(1 + t)) = Σ_n coef_n t^n − Δ_a T around an
    anchor Δ_a (``_series_block``: the new crawl's series is added, in blocks of crawls
    computed together), whose root in t is found by Halley's method from the previous one
    (two O(N) passes for most crawls). A root t* is accepted when it is certified: with E
    the truncation bound on |t| <= ρ, 2E <= ``certify``·|Q'(t*)| and |t*| + 2E/|Q'(t*)| <=
    ρ, so that F changes sign within 2E/|Q'| of t* inside the disk (F is decreasing: its
    root is unique); past ρ, the same with the bound on the disk |t| <= |t*| + certify
    (``_certified``). Otherwise the prefix is solved exactly and the series is re-anchored
    at its root (O(k)).
    """
    coef, xs, g, bound, acc, hloc, lx, lu, ct = scratch
    j0, n1, n0, target, root = _mle_exact_phase(changed, tau, lo, hi, k_exact, out, row, write, hloc, lx, lu, ct, stats)
    if j0 >= hi - lo:
        return root
    # anchor the series at the exact root of crawls lo..lo + j0 (n1 > 0 and n0 > 0 from here on)
    anchor = root
    t = 0.0
    cap = xs.size
    err, b_used, b_have = _expand(
        changed, tau, lo, lo + j0 + 1, hi, anchor, order, coef, xs, g, bound, acc, _FIRST_BLOCK
    )  # series of the next changed crawls: g[:, b_used:b_have]
    err *= tail
    b_want = _FIRST_BLOCK
    stats[1] += 1
    for j in range(j0 + 1, hi - lo):
        gi = lo + j
        c = changed[gi] != 0
        if c:
            n1 += 1.0
            if b_used == b_have:  # the series of the next changed crawls, at this anchor
                m = 0
                for i in range(gi, hi):
                    if changed[i] != 0:
                        xs[m] = anchor * tau[i]
                        m += 1
                        if m == b_want:
                            break
                _series_block(xs, m, order, g, bound, acc)
                b_used = 0
                b_have = m
                b_want = min(2 * b_want, cap)  # blocks grow while the anchor holds
            for n in range(order + 1):
                coef[n] += g[n, b_used]
            err += bound[b_used] * tail
            b_used += 1
        else:
            n0 += 1.0
            target += tau[gi]
        solved = False
        tn, dq, conv = _track_root(coef, order, anchor * target, t)
        if conv and _certified(tn, dq, err, certify, order):
            solved = True
        elif not conv or abs(tn) + 2.0 * err / abs(dq) > _RHO:
            # the root left the disk: re-anchor at Halley's estimate of it (the series
            # converges there) and solve on the new series
            anchor = anchor * (1.0 + tn)
            err, b_used, b_have = _expand(
                changed, tau, lo, gi + 1, hi, anchor, order, coef, xs, g, bound, acc, _FIRST_BLOCK
            )
            err *= tail
            b_want = _FIRST_BLOCK
            stats[1] += 1
            tn, dq, conv = _track_root(coef, order, anchor * target, 0.0)
            solved = conv and _certified(tn, dq, err, certify, order)
        t = tn
        if solved:
            root = anchor * (1.0 + tn)
        else:  # the root left the disk (or the bound is loose): solve from its edge
            root = _mle_local_call(changed, tau, lo, gi + 1, target, n1, anchor * (1.0 + t), hloc, 1e-15, lx, lu)
            if not np.isfinite(root):
                root = mle_exact(changed, tau, lo, gi + 1, target, n1, anchor * (1.0 + t))
                stats[0] += 1
        if write:
            out[row, j] = root
    return root


@nb.njit(parallel=True, **_JIT_MLE)
def mle_segments(changed, tau, offsets, pages, order, k_exact, certify, out, final, stats):
    """The MLE after every crawl (``out[r, j]``, if ``out.shape[1]``) of each page ``pages[r]``
    of the CSR history, and after its last crawl (``final[r]``), pages in parallel.

    The first ``k_exact`` crawls of a page are solved exactly (``mle_exact``, warm-started
    from the previous root); later ones are tracked with the certified Taylor series of
    order ``order`` around an anchor (O(order) per crawl for the root, the crawl's series
    in O(order²) vectorised across crawls), re-solved exactly and re-anchored when the
    certificate fails. ``stats`` (2,) receives the exact solves and the re-anchors.
    """
    write = out.shape[1] > 0
    n = pages.size
    n_chunks = min(n, 64)
    ratio = _RHO / _SPREAD
    tail = ratio ** (order + 1) / (1.0 - ratio)
    exact = np.zeros(n_chunks, dtype=np.int64)
    anchors = np.zeros(n_chunks, dtype=np.int64)
    for ch in nb.prange(n_chunks):
        scratch = _mle_scratch(order)
        st = np.zeros(2, dtype=np.int64)
        for r in range(ch * n // n_chunks, (ch + 1) * n // n_chunks):
            i = pages[r]
            final[r] = _mle_page(
                changed, tau, offsets[i], offsets[i + 1], order, k_exact, certify, tail, out, r, write, scratch, st
            )
        exact[ch] = st[0]
        anchors[ch] = st[1]
    stats[0] += exact.sum()
    stats[1] += anchors.sum()


@nb.njit(parallel=True, **_JIT_MLE)
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


@nb.njit(**_JIT)
def _mm_balance(tau, lo, hi, n0, d):
    """H(Δ) = Σ_j e^{−Δτ_j} − n0 at Δ = d and its derivative −Σ τ_j e^{−Δτ_j}.

    Summed in the split form of ``_MMKind.log_balance``: Σ_{x >= ln 2} e^{−x} +
    Σ_{x < ln 2} (e^{−x} − 1) + (#{x < ln 2} − n0), every term at most 1/2 and the integer
    part exact, so H keeps its accuracy relative to |H'| whatever the magnitudes.
    """
    big = 0.0
    small = 0.0
    count = 0.0
    slope = 0.0
    for j in range(lo, hi):
        x = d * tau[j]
        e = np.exp(-x)
        if x < 0.6931471805599453:
            small += np.expm1(-x)
            count += 1.0
        else:
            big += e
        slope -= tau[j] * e
    return (big + small) + (count - n0), slope


@nb.njit(parallel=True, **_JIT)
def mm_final_segments(changed, tau, offsets, pages, final):
    """The moment-matching root over all crawls of each page ``pages[r]`` (one solve per page).

    Δ solves H(Δ) = Σ_j e^{−Δτ_j} − n0 = 0 (H decreases from n1 at 0 to −n0). Safeguarded
    Newton in Δ inside the bracket of ``_MMKind.log_bracket`` (at Δ <= min(ln 2/A,
    n1/(2 n0 B)) H >= 0, at Δ >= max(ln 2/b, ln(2 n1/n0)/a) H <= 0; a, A (b, B) the
    shortest and longest interval of the crawls that saw a change (no change)); a step
    that leaves the bracket is replaced by its geometric midpoint. Starts from the root
    for equal intervals, ln(k/n0)/τ̄. Stops once a Newton step is below 1e-9 relative
    (taken: by quadratic convergence the error left is ~1e-18), or the bracket is a few
    ulp wide. Pages with n1 = 0 (n0 = 0) give 0.0 (``inf``).
    """
    for r in nb.prange(pages.size):
        i = pages[r]
        lo, hi = offsets[i], offsets[i + 1]
        n1 = 0.0
        n0 = 0.0
        total = 0.0
        a1, b1 = np.inf, 0.0
        a0, b0 = np.inf, 0.0
        for j in range(lo, hi):
            t = tau[j]
            total += t
            if changed[j] != 0:
                n1 += 1.0
                a1 = min(a1, t)
                b1 = max(b1, t)
            else:
                n0 += 1.0
                a0 = min(a0, t)
                b0 = max(b0, t)
        if n1 == 0.0:
            final[r] = 0.0
            continue
        if n0 == 0.0:
            final[r] = np.inf
            continue
        a = min(0.6931471805599453 / b1, n1 / (2.0 * n0 * b0))
        b = 0.6931471805599453 / a0
        ratio = 2.0 * n1 / n0
        if ratio > 1.0:
            b = max(b, np.log(ratio) / a1)
        k = n0 + n1
        d = np.log(k / n0) / (total / k)
        if not (d > a and d < b):
            d = np.sqrt(a * b)
        for _ in range(400):
            h, dh = _mm_balance(tau, lo, hi, n0, d)
            if h == 0.0:
                break
            if h > 0.0:
                a = d
            else:
                b = d
            new = d - h / dh
            if abs(new - d) <= _NEWTON_TOL * d and new > a and new < b:
                d = new
                break
            if not (new > a and new < b):
                new = np.sqrt(a * b)
            if b - a <= 4.0 * _EPS * b:
                d = new
                break
            d = new
        final[r] = d
