"""Compiled kernels of the binary-freshness water-filling: selection of the water level.

Compiled by numba on first use (``cache=True``: once per machine), never at import.
"""

from __future__ import annotations

import numpy as np

__all__ = ["select_level", "allocate"]

_KERNELS: dict = {}


def _kernels() -> dict:
    """The numba kernels, compiled (or loaded from numba's cache) on first call."""
    if not _KERNELS:
        from . import _water_level_kernels as k  # numba kernels: loaded on first use, nothing compiled at import

        _KERNELS.update(select=k.select_kernel, allocate=k.allocate_kernel)
    return _KERNELS


def select_level(r: np.ndarray, sq: np.ndarray, delta: np.ndarray) -> tuple[float, float, bool]:
    """The smallest crawled and the largest idle breakpoint, by selection.

    ``r`` (breakpoints w/Δ), ``sq`` (δ √r) and ``delta`` (δ = Δ/B) are float64 arrays
    of one shape (N,), every entry > 0 (not modified). A page is crawled iff
    F(r_j) = r_j^{-1/2} Σ_{r_i > r_j} δ_i √r_i - Σ_{r_i > r_j} δ_i < 1. Randomised
    quickselect (fixed generator: the same answer on every run) over the breakpoints,
    carrying the sums over the pages found crawled: expected O(N). Returns
    ``(act_min, idle_max, ok)``; ``ok`` is False if the pivots were unlucky too often.
    """
    return _kernels()["select"](r, sq, delta)


def allocate(r, delta, act_min: float, idle_max: float, budget: float, out: np.ndarray) -> bool:
    """Write the KKT allocation p for the crawled set {r >= act_min} into ``out``.

    q_i = δ_i (e_i + t g_i) with g_i = √(r_i/act_min), e_i = g_i - 1 computed without
    cancellation and t = (1 - Σ δ e)/Σ δ g (compensated sums); p = B q. Returns False
    (``out`` not fully written) unless the set satisfies the KKT conditions: t >= 0
    and the largest idle breakpoint stays idle, (1 + t)^2 idle_max <= act_min.
    """
    return bool(_kernels()["allocate"](r, delta, float(act_min), float(idle_max), float(budget), out))
