"""The moment-matching estimator of Upadhyay et al. (paper Section 3.4)."""

from __future__ import annotations

import numpy as np

from ._rootest import RootEstimator, root_final, root_path
from ._rootpath import MM_KIND

__all__ = ["MomentMatchingEstimator"]


def mm_path(history) -> np.ndarray:
    """Δ̂_MM after each crawl, shape ``history.shape``."""
    return root_path(history, MM_KIND)


def mm_final(history) -> np.ndarray:
    """The root after each page's last crawl, shape (n_pages,) (one exact solve per page)."""
    return root_final(history, MM_KIND)


class MomentMatchingEstimator(RootEstimator):
    """The moment-matching change-rate estimator (Upadhyay et al.), streaming.

    Keeps the whole history (O(k) memory); updates track the root like
    :class:`MLEEstimator`.

    Parameters
    ----------
    crawl_rate : float or array_like of shape (n_pages,), optional
        Not used by the estimate; accepted so that every estimator takes the same keywords.
    n_pages : int, optional
        None for one page, or the number of pages updated together.

    Attributes
    ----------
    n_crawls_ : int
        k, crawls seen so far.
    solver_ : object
        The running root state.

    Notes
    -----
    Δ̂ solves Σ_{j≤k} (1 − I_j) = Σ_{j≤k} e^{−Δτ_j}: the number of crawls that saw no
    change matches its expectation given the intervals. It is computed as
    Σ_{I=1} e^{−Δτ} = Σ_{I=0} (1 − e^{−Δτ}) (no cancellation). The estimate is exactly
    0.0 while no crawl has seen a change (the root is Δ = 0) and ``inf`` while every
    crawl has; no clamp is applied. Before any crawl both sides are 0 for every Δ and
    ``rate`` is NaN.

    References
    ----------
    U. Upadhyay, R. Busa-Fekete, W. Kotłowski, D. Pál and B. Szörényi, "Learning to
    crawl", AAAI 2020, Section 4; Avrachenkov, Patil & Thoppe, Section 3.4.

    Examples
    --------
    >>> from changerate_bayes import MomentMatchingEstimator
    >>> est = MomentMatchingEstimator()
    >>> est.update(0, interval=1.0)
    >>> est.rate
    0.0
    >>> est.update(1, interval=1.0)  # 1 = 2 e^{−Δ}, so Δ = log 2
    >>> round(est.rate, 12)
    0.69314718056
    """

    method = "mm"
    _kind = MM_KIND
