"""Exact draws of each page's Δ given the population hyperparameters.

Given θ the pages are independent and page i's posterior is
π(u | data_i, θ) ∝ L_i(e^u) π(u | θ), u = log Δ. It is drawn by rejection from the
population: propose u ~ π(· | θ), accept with probability L_i(e^u) / sup L_i (exact; the
expected number of proposals is sup L_i / p(data_i | θ), about 1.5-3 for 1-5 crawls).
Pairs (draw, page) still pending after ``MAX_ROUNDS`` proposals (a page whose
likelihood is sharp against a wide population) are drawn from the same conditional by
the exact 1-D grid of ``_grid`` (``grid_draws`` with the population as the prior).

Work runs over blocks of pages (all hyperparameter draws at once within a block) and
rejection rounds, never over single pages or draws.
"""

from __future__ import annotations

import numpy as np

from ._grid import grid_draws
from ._likelihood import ExactLikelihood, log_likelihood
from ._population import grid_coefficients, sample_log_rate

__all__ = ["conditional_draws", "MAX_ROUNDS"]

MAX_ROUNDS = 64
#: log of the smallest positive normal double (≈ 2.2e-308): the floor of a drawn Δ
LOG_TINY = float(np.log(np.finfo(np.float64).tiny))
#: draws × pages × crawls per block (bounds the work arrays to ~40 MB)
BLOCK_ELEMENTS = 1 << 22


def conditional_draws(changed, intervals, log_sup, population: str, loc, spread, rng: np.random.Generator):
    """One Δ per page for each hyperparameter draw.

    Parameters
    ----------
    changed, intervals : ndarray, shape (n_pages, k)
    log_sup : ndarray, shape (n_pages,)
        log sup_Δ L_i (``LikelihoodTable.log_max``).
    population : {"lognormal", "gamma"}
    loc, spread : ndarray, shape (n_draws,)
        Hyperparameter draws (m, s or log μ, a).
    rng : numpy.random.Generator

    Returns
    -------
    draws : ndarray, shape (n_draws, n_pages)
        Δ per unit time, in [e^LOG_TINY, e^700] (≈ [2.2e-308, 1e304]): a draw beyond
        the range of doubles is returned at its end, never as 0 or ∞.
    n_grid : int
        How many (draw, page) pairs fell back to the grid.
    """
    loc, spread = np.asarray(loc, float), np.asarray(spread, float)
    n_draws = loc.size
    n_pages, k = changed.shape
    out = np.empty((n_draws, n_pages))
    block = max(1, BLOCK_ELEMENTS // (n_draws * k))
    n_grid = 0
    for start in range(0, n_pages, block):
        pages = np.arange(start, min(start + block, n_pages))
        u, pending = np.empty((n_draws, pages.size)), np.ones((n_draws, pages.size), dtype=bool)
        for _ in range(MAX_ROUNDS):
            d, j = np.nonzero(pending)
            if not d.size:
                break
            prop = np.minimum(sample_log_rate(population, loc[d], spread[d], rng), 700.0)
            p = pages[j]
            ll = log_likelihood(np.exp(prop), changed[p], intervals[p])
            ok = np.log(rng.random(d.size)) < ll - log_sup[p]
            u[d[ok], j[ok]] = prop[ok]
            pending[d[ok], j[ok]] = False
        d, j = np.nonzero(pending)
        if d.size:
            p = pages[j]
            lik = ExactLikelihood(changed[p], intervals[p])
            coef = grid_coefficients(population, loc[d], spread[d])
            draws, _ = grid_draws(lik, coef, n_draws=1, rng=rng)
            u[d, j] = np.log(np.maximum(draws[:, 0], np.finfo(np.float64).tiny))
            n_grid += d.size
        # a gamma population with shape << 1 puts mass below the smallest double: such
        # draws are returned as LOG_TINY's rate (finite log, never an exact 0)
        out[:, pages] = np.exp(np.maximum(u, LOG_TINY))
    return out, n_grid
