"""Compiled freshness indices (:mod:`._freshness_index`) and the replay's index tables (numba,
compiled on first use with ``cache=True``, never at import time)."""

from __future__ import annotations

import numba as nb
import numpy as np

_JIT = dict(cache=True, nogil=True, error_model="numpy")

#: Below this Δt the index uses its Taylor series (its cancellation error is then below 1e-12).
SERIES_BELOW = 1e-3


@nb.njit(inline="always", **_JIT)
def _phi(x):
    """(1 − e^{−x}(1 + x)) / x for x >= 0 (0 at x = 0)."""
    if x < SERIES_BELOW:
        return x * (0.5 - x * (1.0 / 3.0 - x * (0.125 - x / 30.0)))
    return (-np.expm1(-x) - x * np.exp(-x)) / x


@nb.njit(**_JIT)
def poisson_index(rate, elapsed, out):
    """out[i] = (1 − e^{−Δ_i t_i}(1 + Δ_i t_i)) / Δ_i = t_i φ(Δ_i t_i) (unit weight)."""
    for i in range(rate.size):
        t = elapsed[i]
        out[i] = t * _phi(rate[i] * t) if t > 0.0 else 0.0


@nb.njit(**_JIT)
def mixture_index(probs, rates, elapsed, out):
    """out[i] = Σ_g probs[i, g] (1 − e^{−Δ_g t_i}(1 + Δ_g t_i)) / Δ_g: the Poisson index
    averaged over a belief on the nodes ``rates`` (rows of ``probs`` sum to 1).

    Nodes of probability below 1e-14 are skipped (their share of the sum is below
    1e-14·t, as every term lies in [0, t]).
    """
    n, g = probs.shape
    for i in range(n):
        t = elapsed[i]
        s = 0.0
        if t > 0.0:
            for c in range(g):
                p = probs[i, c]
                if p > 1e-14:
                    s += p * _phi(rates[c] * t)
            s *= t
        out[i] = s


@nb.njit(inline="always", **_JIT)
def _table_terms(p, x):
    """One node's terms of the tables' sums, weight ``p`` at x = Δt >= 0:
    (p φ(x), p x e^{−x}), φ as in ``_phi``."""
    if x < 1e-2:  # series: truncation below 1e-9 relative
        return p * x * (0.5 - x * (1.0 / 3.0 - x * (0.125 - x / 30.0))), p * x * (1.0 - x * (1.0 - 0.5 * x))
    if x > 745.0:  # e^{−x} underflows
        return p / x, 0.0
    e = np.exp(-x)  # one exp (1 − e(1 + x) loses at most ~1e-12 relative for x >= 1e-2)
    return p * (1.0 - e * (1.0 + x)) / x, p * x * e


@nb.njit(inline="always", **_JIT)
def _tabulate(coef, rates, signed, rows, log_t0, h, ylog, slope):
    """The tables of ``mixture_table`` (``signed`` False: the nodes ``rates[0]`` for every row,
    nodes of weight <= 1e-14 left out) and ``signed_table`` (``signed`` True: the nodes
    ``rates[r]`` of row r, every nonzero coefficient)."""
    n_t = ylog.shape[1]
    g = rates.shape[1]
    for r in range(rows.size):
        i = rows[r]
        nodes = rates[r] if signed else rates[0]
        for j in range(n_t):
            t = np.exp(log_t0 + j * h)
            s = 0.0
            d = 0.0
            for c in range(g):
                p = coef[r, c]
                if (p != 0.0) if signed else (p > 1e-14):
                    ds, dd = _table_terms(p, nodes[c] * t)
                    s += ds
                    d += dd
            if s > 0.0:
                ylog[i, j] = np.log(t) + np.log(s)
                slope[i, j] = d / s
            elif signed:  # rounding at tiny t: ν ∝ t² there
                ylog[i, j] = np.log(t) + np.log(1e-300)
                slope[i, j] = 2.0
            else:
                ylog[i, j] = -np.inf
                slope[i, j] = 0.0


@nb.njit(**_JIT)
def mixture_table(probs, rates, rows, log_t0, h, ylog, slope):
    """Tabulate, for the pages ``rows`` (beliefs ``probs[r]`` of page ``rows[r]``), y = log ν(t)
    and its slope d y / d log t at t_j = exp(log_t0 + j h), j = 0 .. ylog.shape[1] − 1, for the mixture index of
    ``mixture_index``: ν = t Σ p φ(Δt), d log ν / d log t = Σ p x e^{−x} / Σ p φ(x), x = Δt."""
    _tabulate(probs, np.expand_dims(rates, 0), False, rows, log_t0, h, ylog, slope)


@nb.njit(**_JIT)
def table_index(ylog, slope, log_t0, h, elapsed, out):
    """ν(elapsed) from the table of ``mixture_table``: cubic Hermite in (log t, log ν)
    between nodes; below the first node log ν continues with the first node's slope (ν ∝ t²
    there); beyond the last node, the last value (ν is flat there)."""
    n, n_t = ylog.shape
    for i in range(n):
        t = elapsed[i]
        if not t > 0.0:
            out[i] = 0.0
            continue
        u = (np.log(t) - log_t0) / h
        if u <= 0.0:
            out[i] = np.exp(ylog[i, 0] + slope[i, 0] * u * h)
        elif u >= n_t - 1:
            out[i] = np.exp(ylog[i, n_t - 1])
        else:
            j = int(u)
            s = u - j
            s2 = s * s
            s3 = s2 * s
            y = (
                (2.0 * s3 - 3.0 * s2 + 1.0) * ylog[i, j]
                + (s3 - 2.0 * s2 + s) * h * slope[i, j]
                + (-2.0 * s3 + 3.0 * s2) * ylog[i, j + 1]
                + (s3 - s2) * h * slope[i, j + 1]
            )
            out[i] = np.exp(y)


@nb.njit(**_JIT)
def signed_table(coef, rates, rows, log_t0, h, ylog, slope):
    """``mixture_table`` with per-row nodes and signed coefficients: for page ``rows[r]``,
    ν(t) = t Σ_c coef[r, c] φ(rates[r, c] t) (a phase-type first-change time, whose
    survival Σ_c coef e^{−rate t} may have negative terms; ν itself is >= 0)."""
    _tabulate(coef, rates, True, rows, log_t0, h, ylog, slope)
