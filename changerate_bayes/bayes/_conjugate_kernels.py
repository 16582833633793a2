"""Compiled draws of the conjugate posterior p · BetaPrime(α, β) = p · G_α / G_β (numba).

Pages are split into fixed blocks of :data:`BLOCK` pages; block b draws from numba's
generator seeded with ``seeds[b]``, so the draws depend on the seed only, not on the
number of threads. Blocks run in parallel (``numba.prange``). Compiled on first use
(``cache=True``); importing this module compiles nothing.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["conjugate_draws_blocks", "BLOCK"]

#: pages per block (one seed each)
BLOCK = 4096


@nb.njit(parallel=True, cache=True, nogil=True, error_model="numpy")
def conjugate_draws_blocks(post_a, post_b, rate, seeds, out):
    """out[d, i] = rate[i] · G_a / G_b with G_a ~ Gamma(post_a[i]), G_b ~ Gamma(post_b[i]).

    ``out`` has shape (n_draws, n_pages); page i's draws come from block i // BLOCK.
    Within a block, pages in order, and for each page its draws in order, each draw
    taking G_a then G_b.
    """
    n = post_a.size
    n_draws = out.shape[0]
    for b in nb.prange(seeds.size):
        np.random.seed(seeds[b])
        for i in range(b * BLOCK, min(n, (b + 1) * BLOCK)):
            a = post_a[i]
            c = post_b[i]
            p = rate[i]
            for d in range(n_draws):
                g1 = np.random.standard_gamma(a)
                g2 = np.random.standard_gamma(c)
                out[d, i] = g1 / g2 * p
