"""Compiled per-page kernels of the exact grid summary (numba, both cores).

:func:`summary_pages` computes, for the pages it is given, what
:func:`changerate_bayes.posterior_summary` needs of each page's adapted grids (the
algorithm of :func:`._grid.fit_grid`, with the per-page building blocks of
:mod:`._grid_kernels`): the log normalising constants Z_0, Z_1 (and Z_2) of
e^{ju} × posterior, the quantiles of the density's grid (cumulative Simpson CDF,
log-linear inverse CDF, as :func:`._grid.inverse_cdf`) and the grid's central moment
E[(Δ/E[Δ] − 1)²]. Each page is computed alone, so the numbers do not depend on the
threads, and they are within a few ulps of the NumPy reference (``._grid``), which the
tests check.

:func:`page_keys` gives what a page's summary depends on (besides its prior
coefficients): its number of changed crawls, S0 = Σ(1 − I)τ summed as the kernel sums
it, and a hash of its sorted changed intervals; :func:`same_changed` confirms that two
pages have the same sorted changed intervals bit for bit. Pages equal in all of these
get bit-identical summaries, so one computation serves them all.

Compiled on first use (``cache=True``); importing this module compiles nothing.
Status codes per page as :mod:`._grid_kernels`: 0 ok, 1 no bracket for the mode, 2
mode did not converge, 3 tails not within the float64 range.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from ._grid_kernels import _cell, _fit, _fit_buffers, _gather, _simpson_cdf, _start

__all__ = ["summary_pages", "page_keys", "same_changed", "TILE"]

#: pages per parallel work item
TILE = 16

_OPTS = dict(cache=True, nogil=True, error_model="numpy")


@nb.njit(**_OPTS)
def _quantiles(mode, scale, s, logd, work, cdf, probs, out, row):
    """The quantiles ``probs`` of the fitted grid into out[row] (as GridPosterior.quantile)."""
    size = s.size
    _simpson_cdf(work[:size], cdf)
    step = s[1] - s[0]
    for k in range(probs.size):
        p = probs[k]
        j, phi = _cell(cdf, size, p, 0)
        b = logd[j + 1] - logd[j]
        b = 0.0 if b != b else b
        rising = b > 0.0
        psi = 1.0 - phi if rising else phi
        nb_ = min(max(-abs(b), -700.0), -1e-300)
        t = math.log1p(psi * math.expm1(nb_)) / nb_
        t = 1.0 if t != t else t
        t = min(max(t, 0.0), 1.0)
        t = 1.0 - t if rising else t
        out[row, k] = math.exp(mode + scale * math.sinh(s[0] + (j + t) * step))


@nb.njit(parallel=True, **_OPTS)
def summary_pages(
    changed,
    tau,
    offsets,
    pages,
    A0,
    A1,
    A2,
    B,
    C,
    M,
    E,
    L,
    lin,
    probs,
    with_sd,
    log_z0,
    log_z1,
    log_z2,
    central,
    quant,
    status,
    bad_mode,
):
    """The grid summary's parts of pages ``pages`` into row r of the outputs (r = 0..len(pages)−1).

    Page i = pages[r] gets the grids with shape A0[i] (the posterior: log_z0, the
    quantiles ``probs`` into quant[r], and with ``with_sd`` the central moment
    E[(Δ/E[Δ] − 1)²] on it, E[Δ] = e^{log_z1 − log_z0}), A1[i] (log_z1) and with
    ``with_sd`` A2[i] (log_z2). ``changed``, ``tau`` and ``offsets`` are the flat (CSR)
    history. Tiles of :data:`TILE` rows run in parallel, each with its own work buffers.
    """
    n = pages.size
    n_tiles = (n + TILE - 1) // TILE
    max_len = 1
    for r in range(n):
        i = pages[r]
        max_len = max(max_len, offsets[i + 1] - offsets[i])
    size = lin.size
    for tile in nb.prange(n_tiles):
        buf, qb, hb, s, logd, cdf, work, fbuf, ibuf = _fit_buffers(size, max_len)
        ub = np.empty(size)
        eub = np.empty(size)
        for r in range(tile * TILE, min(tile * TILE + TILE, n)):
            i = pages[r]
            m, t0 = _gather(changed, tau, offsets[i], offsets[i + 1], buf)
            start = _start(buf, m, t0)
            # the grids of e^{ju} × posterior: j = 1 (log_z1), 2 with with_sd (log_z2), then 0
            # (log_z0, the posterior itself, whose grid the quantiles read); stop at a failure
            for q in range(3):
                if q == 1 and not with_sd:
                    continue
                shape = A1[i] if q == 0 else (A2[i] if q == 1 else A0[i])
                st, mode, scale, lz, _, _, _ = _fit(
                    buf,
                    m,
                    t0,
                    start,
                    shape,
                    B[i],
                    C[i],
                    M[i],
                    E[i],
                    L[i],
                    lin,
                    s,
                    ub,
                    eub,
                    logd,
                    work,
                    fbuf,
                    ibuf,
                    qb,
                    hb,
                )
                if q == 0:
                    log_z1[r] = lz
                elif q == 1:
                    log_z2[r] = lz
                else:
                    log_z0[r] = lz
                if st != 0:
                    break
            status[r] = st
            if st != 0:
                bad_mode[r] = mode
                continue
            if with_sd:  # E[(Δ/E[Δ] − 1)²] on the density's grid (GridPosterior._trapezoid)
                log_mean = log_z1[r] - lz
                acc = 0.0
                for g in range(size):
                    d = math.expm1(ub[g] - log_mean)
                    acc += d * d * math.exp(logd[g]) * (0.5 if (g == 0 or g == size - 1) else 1.0)
                central[r] = acc * (s[1] - s[0])
            _quantiles(mode, scale, s, logd, work, cdf, probs, quant, r)


@nb.njit(parallel=True, **_OPTS)
def page_keys(changed, tau, offsets, n_changed, t0, key):
    """Per page: the number of changed crawls, S0 (summed as :func:`summary_pages` sums it)
    and a 64-bit FNV-1a hash of the bits of its sorted changed intervals."""
    n = offsets.size - 1
    max_len = 1
    for i in range(n):
        max_len = max(max_len, offsets[i + 1] - offsets[i])
    n_tiles = (n + 255) // 256
    for tile in nb.prange(n_tiles):
        buf = np.empty(max_len)
        bits = buf.view(np.uint64)
        for i in range(tile * 256, min(tile * 256 + 256, n)):
            m, s0 = _gather(changed, tau, offsets[i], offsets[i + 1], buf)
            h = np.uint64(14695981039346656037)
            for j in range(m):
                h = (h ^ bits[j]) * np.uint64(1099511628211)
            n_changed[i] = m
            t0[i] = s0
            key[i] = h


@nb.njit(**_OPTS)
def same_changed(changed, tau, offsets, pages, reps):
    """Whether page pages[r] has bit for bit the sorted changed intervals of page reps[r], for each r."""
    max_len = 1
    for i in range(offsets.size - 1):
        max_len = max(max_len, offsets[i + 1] - offsets[i])
    a = np.empty(max_len)
    b = np.empty(max_len)
    ab = a.view(np.uint64)
    bb = b.view(np.uint64)
    out = np.ones(pages.size, dtype=np.bool_)
    for r in range(pages.size):
        ma, _ = _gather(changed, tau, offsets[pages[r]], offsets[pages[r] + 1], a)
        mb, _ = _gather(changed, tau, offsets[reps[r]], offsets[reps[r] + 1], b)
        if ma != mb:
            out[r] = False
            continue
        for j in range(ma):
            if ab[j] != bb[j]:
                out[r] = False
                break
    return out
