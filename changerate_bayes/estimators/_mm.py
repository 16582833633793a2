"""The moment-matching estimator of Upadhyay et al. (paper Section 3.4)."""

from __future__ import annotations

from ._rootest import RootEstimator
from ._rootpath import MM_KIND

__all__ = ["MomentMatchingEstimator"]


class MomentMatchingEstimator(RootEstimator):
    """The moment-matching change-rate estimator (Upadhyay et al.), streaming.

    Keeps the whole history (O(k) memory); updates track the root like
    :class:`MLEEstimator`.

    Parameters
    ----------
    crawl_rate : float or array_like of shape (n_pages,), optional
        Not used by the estimate; accepted so that every estimator takes the same keywords.
    {n_pages}

    Attributes
    ----------
    {n_crawls_}
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
