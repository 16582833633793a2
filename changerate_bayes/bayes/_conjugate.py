"""Closed-form posterior under Poisson crawling with τ marginalised.

With crawls a Poisson process of rate p independent of the changes, the indicators
are i.i.d. Bernoulli(μ), μ = Δ/(Δ + p) (paper eq. 4). A Beta(a, b) prior on μ, i.e.
Δ/p ~ BetaPrime(a, b), gives the posterior Δ/p ~ BetaPrime(a + Î_k, b + k − Î_k).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import stats

__all__ = [
    "conjugate_parameters",
    "conjugate_mean",
    "conjugate_posterior_draws",
    "conjugate_quantile",
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


#: pages per block of the conjugate draws (one generator each)
BLOCK_PAGES = 8192
#: threads drawing blocks at once (the compiled kernel releases the GIL)
THREADS = os.cpu_count() or 1


def conjugate_posterior_draws(
    a, b, n_changed, n_crawls, crawl_rate, *, n_draws: int, rng: np.random.Generator
) -> np.ndarray:
    """Draws of Δ = p · G_α/G_β for every page, shape (n_draws, n_pages) (C order).

    G_α ~ Gamma(α) and G_β ~ Gamma(β) independent, α = a + Î_k, β = b + k − Î_k, so
    Δ/p ~ BetaPrime(α, β) exactly (the law of ``scipy.stats.betaprime(α, β, scale=p)``).

    Algorithm (compiled, :mod:`._gamma_kernels`): gamma variates by Marsaglia & Tsang
    (2000, ACM TOMS 26(3):363-372, "A simple method for generating gamma variables"),
    with their boost Gamma(α) = Gamma(α + 1) · U^{1/α} for α < 1; their normals by the
    ziggurat of Marsaglia & Tsang (2000, J. Statistical Software 5(8)) with 256 layers
    and Marsaglia's tail; every rejection step is carried out, so the variates are
    exact (no truncation, no approximation beyond floating point). The random words
    are NumPy's SFC64 generator, written out in the kernel.

    Blocks: block j of :data:`BLOCK_PAGES` pages (written straight into the output,
    no temporary larger than a block's constants) reads the stream of
    ``numpy.random.SFC64(SeedSequence(s).spawn(n_blocks)[j])`` with s drawn once from
    ``rng``, draw by draw (rows), page by page; the blocks run on :data:`THREADS`
    threads. The draws depend on ``rng`` only, not on the number of threads.
    """
    from . import _gamma_kernels as kernels  # compiled (or loaded from numba's cache) on first use

    post_a, post_b = conjugate_parameters(a, b, n_changed, n_crawls)
    n = post_a.size
    rate = np.broadcast_to(np.asarray(crawl_rate, dtype=np.float64), (n,))
    n_blocks = max(1, -(-n // BLOCK_PAGES))
    seeds = np.random.SeedSequence(int(rng.integers(0, 2**63))).spawn(n_blocks)
    out = np.empty((n_draws, n))

    def fill(j):
        lo, hi = j * BLOCK_PAGES, min(n, (j + 1) * BLOCK_PAGES)
        p = np.ascontiguousarray(rate[lo:hi])
        kernels.ratio_block(
            kernels.sfc64_state(seeds[j]),
            *kernels.shape_constants(post_a[lo:hi]),
            *kernels.shape_constants(post_b[lo:hi]),
            p,
            np.log(p),
            out,
            lo,
        )

    if THREADS > 1 and n_blocks > 1:
        with ThreadPoolExecutor(max_workers=THREADS) as pool:
            list(pool.map(fill, range(n_blocks)))
    else:
        for j in range(n_blocks):
            fill(j)
    return out


def conjugate_quantile(a, b, n_changed, n_crawls, crawl_rate, probs) -> np.ndarray:
    """Posterior quantiles of Δ (probabilities broadcast against the pages)."""
    post_a, post_b = conjugate_parameters(a, b, n_changed, n_crawls)
    return stats.betaprime(post_a, post_b, scale=crawl_rate).ppf(probs)
