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
from ._likelihood import ExactLikelihood, _log1mexp_neg
from ._population import grid_coefficients, sample_log_rate
from ._sufficient import changed_padded, take_pages

__all__ = ["conditional_draws", "conditional_draws_of", "MAX_ROUNDS"]

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
    changed = np.asarray(changed)
    lik = ExactLikelihood(changed, np.asarray(intervals, dtype=np.float64))
    return conditional_draws_of(lik, changed.shape[1], log_sup, population, loc, spread, rng)


def conditional_draws_of(
    lik: ExactLikelihood, n_crawls: int, log_sup, population: str, loc, spread, rng: np.random.Generator
):
    """:func:`conditional_draws` from the pages' sufficient statistics (pages of any length).

    ``lik`` holds S0 and the changed intervals of every page; ``n_crawls`` (the largest
    number of crawls of a page) sets the block size. The likelihood of each proposal
    needs S0 and the page's changed intervals only.
    """
    loc, spread = np.asarray(loc, float), np.asarray(spread, float)
    n_draws = loc.size
    n_pages, k = lik.n_pages, n_crawls
    tau1, mask1 = changed_padded(lik)
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
            ll = _sparse_log_likelihood(np.exp(prop), lik.t0[p], tau1[p], mask1[p])
            ok = np.log(rng.random(d.size)) < ll - log_sup[p]
            u[d[ok], j[ok]] = prop[ok]
            pending[d[ok], j[ok]] = False
        d, j = np.nonzero(pending)
        if d.size:
            p = pages[j]
            coef = grid_coefficients(population, loc[d], spread[d])
            draws, _ = grid_draws(take_pages(lik, p), coef, n_draws=1, rng=rng)
            u[d, j] = np.log(np.maximum(draws[:, 0], np.finfo(np.float64).tiny))
            n_grid += d.size
        # a gamma population with shape << 1 puts mass below the smallest double: such
        # draws are returned as LOG_TINY's rate (finite log, never an exact 0)
        out[:, pages] = np.exp(np.maximum(u, LOG_TINY))
    return out, n_grid


def _sparse_log_likelihood(rate, t0, tau1, mask1):
    """log L at Δ = ``rate`` (m,) for m pages given S0 (m,) and padded changed τ's (m, w)."""
    x = rate[:, None] * tau1
    with np.errstate(over="ignore", invalid="ignore"):
        terms = np.where(mask1, _log1mexp_neg(np.where(mask1, x, 1.0)), 0.0)
        return terms.sum(axis=1) - np.where(t0 > 0, rate * t0, 0.0)
