"""Closed-form posterior under Poisson crawling with τ marginalised.

With crawls a Poisson process of rate p independent of the changes, the indicators
are i.i.d. Bernoulli(μ), μ = Δ/(Δ + p) (paper eq. 4). A Beta(a, b) prior on μ, i.e.
Δ/p ~ BetaPrime(a, b), gives the posterior Δ/p ~ BetaPrime(a + Î_k, b + k − Î_k).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["conjugate_parameters", "conjugate_mean", "conjugate_draws", "conjugate_quantile"]


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
        return np.where(denom > 0, crawl_rate * post_a / np.where(denom > 0, denom, 1.0), np.inf)


def conjugate_draws(a, b, n_changed, n_crawls, crawl_rate, size, rng) -> np.ndarray:
    """Draws of Δ of shape ``size`` (last axis = pages when the inputs are arrays)."""
    post_a, post_b = conjugate_parameters(a, b, n_changed, n_crawls)
    return stats.betaprime(post_a, post_b, scale=crawl_rate).rvs(size=size, random_state=rng)


def conjugate_quantile(a, b, n_changed, n_crawls, crawl_rate, probs) -> np.ndarray:
    """Posterior quantiles of Δ (probabilities broadcast against the pages)."""
    post_a, post_b = conjugate_parameters(a, b, n_changed, n_crawls)
    return stats.betaprime(post_a, post_b, scale=crawl_rate).ppf(probs)
