"""Grid posterior draws for many pages: compiled kernels over blocks of pages.

:func:`grid_posterior_draws` gives the same draws as ``_grid.grid_draws`` (the same
uniforms from ``rng`` in the same order, the same algorithm per page, to rounding) at a
fraction of the time and memory: the kernels (:mod:`._grid_kernels`) read each page's
crawls from the flat (CSR) history, so the only large array is the output.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["grid_posterior_draws", "BLOCK_PAGES"]

#: pages per block of uniforms (BLOCK_PAGES × n_draws doubles at a time)
BLOCK_PAGES = 1 << 14


def grid_posterior_draws(
    changed, tau, offsets, coef: dict, *, n_draws: int, rng: np.random.Generator, size: int, shift=None
) -> np.ndarray:
    """Independent draws of Δ for every page, shape (n_draws, n_pages) (C order).

    Parameters
    ----------
    changed, tau : ndarray, shape (n_visits,)
        The flat history (``CrawlHistory.flat_changed`` and ``flat_intervals``).
    offsets : ndarray of int64, shape (n_pages + 1,)
        CSR offsets: page i's crawls are ``changed[offsets[i]:offsets[i + 1]]``.
    coef : dict of ndarray, shape (n_pages,)
        Prior coefficients (``PriorCoefficients.as_arrays``), in the time unit of the
        intervals scaled by e^{shift}.
    n_draws : int
    rng : numpy.random.Generator
        Page i's draws invert ``rng.random((n_pages, n_draws))[i]``, drawn block by block.
    size : int
        Quadrature nodes per page.
    shift : ndarray, shape (n_pages,), optional
        log of the time scale per page: draws are e^{u − shift}.

    Raises
    ------
    FloatingPointError
        If a page's mode has no bracket or does not converge.
    ValueError
        If a page's posterior is too flat in log Δ for float64 quadrature.
    """
    import numba  # numba: heavy; the package imports without it

    # numba kernels: loaded on first use, nothing compiled at import
    from ._grid_kernels import CHUNK_TILES, grid_draws_block

    changed = np.ascontiguousarray(changed, dtype=np.int8)
    tau = np.ascontiguousarray(tau, dtype=np.float64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    n = offsets.size - 1
    a = {k: np.ascontiguousarray(coef[k], dtype=np.float64) for k in "ABCMEL"}
    shift = np.zeros(n) if shift is None else np.ascontiguousarray(shift, dtype=np.float64)
    lin = np.linspace(0.0, 1.0, size)
    out = np.empty((n_draws, n))
    status = np.zeros(n, dtype=np.int32)
    bad_mode = np.zeros(n)
    starts = range(0, n, BLOCK_PAGES)
    # the next block's uniforms are drawn on a second thread (NumPy releases the GIL while
    # it fills) while the kernel works on this block: the same numbers in the same order,
    # into two buffers used in turn (no new array, hence no fresh pages to fault in, a block)
    buffers = [np.empty((min(BLOCK_PAGES, n), n_draws)) for _ in range(2 if n > BLOCK_PAGES else 1)]

    def draw(k, rows):
        return rng.random((rows, n_draws), out=buffers[k % len(buffers)][:rows])

    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = pool.submit(draw, 0, min(BLOCK_PAGES, n))
        for k, lo in enumerate(starts):
            hi = min(lo + BLOCK_PAGES, n)
            uniforms = ahead.result()
            if hi < n:
                ahead = pool.submit(draw, k + 1, min(hi + BLOCK_PAGES, n) - hi)
            with numba.parallel_chunksize(CHUNK_TILES):
                grid_draws_block(
                    changed,
                    tau,
                    offsets,
                    lo,
                    hi,
                    a["A"],
                    a["B"],
                    a["C"],
                    a["M"],
                    a["E"],
                    a["L"],
                    shift,
                    lin,
                    uniforms,
                    out,
                    status,
                    bad_mode,
                )
            _raise_for_status(status[lo:hi], bad_mode[lo:hi], lo)
    return out


def _raise_for_status(status, bad_mode, offset):
    bad = np.flatnonzero(status)
    if not bad.size:
        return
    i = int(bad[0])
    page, code = offset + i, int(status[i])
    if code == 1:
        raise FloatingPointError(f"grid posterior: no bracket for the mode of log Δ of page {page}")
    if code == 2:
        raise FloatingPointError(f"grid posterior: the mode of log Δ of page {page} did not converge")
    raise ValueError(
        f"the posterior of page {page} is too flat in log Δ for float64 quadrature "
        f"(mode {bad_mode[i]:.4g}, no end of its tails in range): use a less vague prior"
    )
