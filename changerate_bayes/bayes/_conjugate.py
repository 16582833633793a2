"""Closed-form posterior under Poisson crawling with τ marginalised.

With crawls a Poisson process of rate p independent of the changes, the indicators
are i.i.d. Bernoulli(μ), μ = Δ/(Δ + p) (paper eq. 4). A Beta(a, b) prior on μ, i.e.
Δ/p ~ BetaPrime(a, b), gives the posterior Δ/p ~ BetaPrime(a + Î_k, b + k − Î_k).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = [
    "conjugate_parameters", "conjugate_mean", "conjugate_draws", "conjugate_posterior_draws", "conjugate_quantile",
]


def conjugate_parameters(a: float, b: float, n_changed, n_crawls):
    """Posterior BetaPrime parameters (a + Î_k, b + k − Î_k)."""
    n_changed = np.asarray(n_changed, dtype=np.float64)
    return a + n_changed, b + np.asarray(n_crawls, dtype=np.float64) - n_changed


def conjugate_mean(a: float, b: float, n_changed, n_crawls, crawl_rate) -> np.ndarray:
    """Posterior mean of Δ: p (a + Î_k)/(b + k − Î_k − 1), ∞ when b + k − Î_k <= 1.

    With a = 0 and Î_k = 0 (improper posterior) this is 0, the limit a → 0+.
    """
    post_a, post_b = conjugate_parameters(a, b, n_changed, n_crawls)
    denom = post_b - 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        # p · (α/(β − 1)): no overflow of p·α when the mean itself is finite
        return np.where(denom > 0, crawl_rate * (post_a / np.where(denom > 0, denom, 1.0)), np.inf)


def conjugate_draws(a, b, n_changed, n_crawls, crawl_rate, size, rng) -> np.ndarray:
    """Draws of Δ of shape ``size`` (last axis = pages when the inputs are arrays)."""
    post_a, post_b = conjugate_parameters(a, b, n_changed, n_crawls)
    return stats.betaprime(post_a, post_b, scale=crawl_rate).rvs(size=size, random_state=rng)


def conjugate_posterior_draws(a, b, n_changed, n_crawls, crawl_rate, *, n_draws: int,
                              rng: np.random.Generator) -> np.ndarray:
    """Draws of Δ = p · G_α/G_β for every page, shape (n_draws, n_pages) (C order).

    The same distribution as :func:`conjugate_draws`, drawn by a compiled kernel over
    blocks of pages in parallel, without temporaries the size of the output. ``rng``
    gives one 32-bit seed per block of ``_conjugate_kernels.BLOCK`` pages, so the same
    ``rng`` gives the same draws whatever the number of threads.
    """
    from ._conjugate_kernels import BLOCK, conjugate_draws_blocks

    post_a, post_b = conjugate_parameters(a, b, n_changed, n_crawls)
    n = post_a.size
    rate = np.ascontiguousarray(np.broadcast_to(np.asarray(crawl_rate, dtype=np.float64), (n,)))
    seeds = rng.integers(0, 2**32, size=max(1, -(-n // BLOCK)), dtype=np.uint64).astype(np.uint32)
    out = np.empty((n_draws, n))
    conjugate_draws_blocks(np.ascontiguousarray(post_a), np.ascontiguousarray(post_b), rate, seeds, out)
    return out


def conjugate_quantile(a, b, n_changed, n_crawls, crawl_rate, probs) -> np.ndarray:
    """Posterior quantiles of Δ (probabilities broadcast against the pages)."""
    post_a, post_b = conjugate_parameters(a, b, n_changed, n_crawls)
    return stats.betaprime(post_a, post_b, scale=crawl_rate).ppf(probs)
