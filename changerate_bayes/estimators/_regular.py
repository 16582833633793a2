"""Cho & Garcia-Molina's estimator for crawls on a fixed schedule (regular access)."""

from __future__ import annotations

import numpy as np

from ._base import ChangeCountEstimator
from ._segments import count_final, count_path

__all__ = ["RegularCrawlEstimator"]


def regular_params(**params) -> dict:
    """Check the parameters of ``"regular"`` (it has none)."""
    if params:
        raise TypeError(f"method 'regular' takes no parameters; got {sorted(params)}")
    return {}


def regular_estimate(p, changes, k):
    """−p log((k − Î_k + 1/2)/(k + 1/2)), elementwise (k may be 0), written so that it is +0.0."""
    return p * np.log((k + 0.5) / (k - changes + 0.5))


def regular_path(history) -> np.ndarray:
    """Δ̂_k for every prefix k, shape ``history.shape`` (NaN-padded (n_pages, n_crawls) if ragged)."""
    return count_path(history, regular_estimate, method="regular")


def regular_final(history) -> np.ndarray:
    """Δ̂_k after each page's last crawl, shape (n_pages,)."""
    return count_final(history, regular_estimate, method="regular")


class RegularCrawlEstimator(ChangeCountEstimator):
    """Cho & Garcia-Molina's change-rate estimator for crawls at fixed intervals 1/p, streaming.

    With every interval τ = 1/p, I_k ~ Bernoulli(1 − e^{−Δ/p}) independently, so
    Δ = −p log P(I = 0). Estimating P(I = 0) by (k − Î_k + 1/2)/(k + 1/2) instead of
    (k − Î_k)/k removes most of the bias of the logarithm and keeps the estimate finite
    when every crawl saw a change.

    Parameters
    ----------
    crawl_rate : float or array_like of shape (n_pages,)
        The crawl rate p > 0 (crawls per unit time, one crawl every 1/p); the rate is
        in the same unit. Required: a ValueError names it when missing.
    {n_pages}

    {count_attributes}

    Notes
    -----
    Δ̂_k = −p log((k − Î_k + 0.5)/(k + 0.5)): 0 while no crawl has seen a change (and
    before any crawl, k = 0), at most p log(2k + 1) when every crawl has. It assumes a
    fixed schedule: with Poisson crawls at rate p it tends to p log(1 + Δ/p) < Δ, so use
    the LLN, SA or SAM estimators there (or the MLE, which needs no schedule). The
    state is (k, Î_k): O(1) memory, and estimators over disjoint crawls merge exactly
    (:meth:`merge`). :func:`estimate_path` warns when a history's intervals are far
    enough from 1/p to bias the estimate by more than 1%.

    References
    ----------
    J. Cho and H. Garcia-Molina, "Estimating frequency of change", ACM Transactions on
    Internet Technology 3(3), 2003, Section 4 (regular access: the estimator
    r̂ = −log((X̄ + 0.5)/(n + 0.5)) of the frequency ratio r = Δ/p, X̄ the accesses that
    saw no change).

    Examples
    --------
    >>> from changerate_bayes import RegularCrawlEstimator
    >>> est = RegularCrawlEstimator(crawl_rate=2.0)
    >>> est.rate  # before any crawl: −2 log(0.5/0.5)
    0.0
    >>> for i in [1, 0, 1, 1]:
    ...     est.update(i)
    >>> round(est.rate, 12)  # −2 log(1.5/4.5) = 2 log 3
    2.197224577336
    """

    method = "regular"

    def _rate(self):
        return regular_estimate(self._p(), self.changes_, self._k())
