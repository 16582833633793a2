"""The Naive estimator w_k = p Î_k / k (Cho & Garcia-Molina; paper Section 3.4)."""

from __future__ import annotations

import numpy as np

from ._base import ChangeCountEstimator, scaled_ratio
from ._segments import count_final, count_path

__all__ = ["NaiveEstimator"]


def naive_params(**params) -> dict:
    """Check the parameters of ``"naive"`` (it has none)."""
    if params:
        raise TypeError(f"method 'naive' takes no parameters; got {sorted(params)}")
    return {}


def naive_path(history) -> np.ndarray:
    """w_k = p Î_k / k for every prefix k of the history, shape ``history.shape``
    ((n_pages, n_crawls) with NaN after each page's last crawl if ragged)."""
    return count_path(history, scaled_ratio, method="naive")


def naive_final(history) -> np.ndarray:
    """w_k after each page's last crawl, shape (n_pages,) (``(1,)`` for one page)."""
    return count_final(history, scaled_ratio, method="naive")


class NaiveEstimator(ChangeCountEstimator):
    """The Naive change-rate estimator, streaming: the crawl rate times the change fraction.

    It ignores the changes missed between two crawls, so it is biased and not
    consistent: w_k → pΔ/(Δ + p) < Δ almost surely (paper Section 3.4).

    Parameters
    ----------
    {crawl_rate}
    {n_pages}

    {count_attributes}

    Notes
    -----
    w_k = p Î_k / k with Î_k = Σ_{j≤k} I_j. Before any crawl (k = 0) the fraction is 0/0
    and ``rate`` is NaN. The state is (k, Î_k): O(1) memory, and two estimators over
    disjoint crawls of the same page(s) merge exactly (:meth:`merge`).

    Its limit assumes Poisson crawling at rate p (intervals exponential with mean 1/p,
    paper eq. 4); this object does not see the intervals, :func:`estimate_path` checks
    them.

    References
    ----------
    Avrachenkov, Patil & Thoppe, "Online algorithms for estimating change rates of web
    pages", Section 3.4 (Naive estimator).

    Examples
    --------
    >>> from changerate_bayes import NaiveEstimator
    >>> est = NaiveEstimator(crawl_rate=3.0)
    >>> for i in [1, 0, 1, 1]:
    ...     est.update(i)
    >>> est.rate  # 3 * 3/4
    2.25
    """

    method = "naive"

    def _rate(self):
        if self.counts_ is None and self.n_crawls_ == 0:  # the change fraction 0/0 of no crawl is undefined
            return np.full(self._shape, np.nan)
        return scaled_ratio(self._p(), self.changes_, self._k())
