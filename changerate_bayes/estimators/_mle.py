"""The maximum-likelihood estimator of Cho & Garcia-Molina (paper eq. 15)."""

from __future__ import annotations

import numpy as np

from ._rootest import RootEstimator, root_final, root_path
from ._rootpath import MLE_KIND

__all__ = ["MLEEstimator"]


def mle_path(history) -> np.ndarray:
    """Δ̂_MLE after each crawl, shape ``history.shape``."""
    return root_path(history, MLE_KIND)


def mle_final(history) -> np.ndarray:
    """The root after each page's last crawl, shape (n_pages,) (one exact solve per page)."""
    return root_final(history, MLE_KIND)


class MLEEstimator(RootEstimator):
    """The maximum-likelihood change-rate estimator (Cho & Garcia-Molina), streaming.

    Keeps the whole history (O(k) memory): the likelihood equation changes with every
    crawl. Updates are nevertheless cheap: the first 128 crawls are solved exactly from
    a predictor (O(k) each), later ones tracked with a certified Taylor expansion around
    an anchor, re-solved from scratch only when the root drifts far.

    Parameters
    ----------
    crawl_rate : float or array_like of shape (n_pages,), optional
        Not used by the estimate (the intervals carry the information); accepted so
        that every estimator takes the same keywords.
    n_pages : int, optional
        None for one page, or the number of pages updated together.

    Attributes
    ----------
    n_crawls_ : int
        k, crawls seen so far.
    solver_ : object
        The running root state (history, anchor, Taylor coefficients).

    Notes
    -----
    Δ̂ solves Σ_{j≤k} I_j τ_j / (e^{Δτ_j} − 1) = Σ_{j≤k} (1 − I_j) τ_j (paper eq. 15),
    the score equation of the interval-censored likelihood Π (1 − e^{−Δτ_j})^{I_j}
    e^{−Δτ_j (1 − I_j)}. The left side decreases from +∞ to 0, so the root is unique when
    some crawls saw a change and some did not. While no crawl has seen a change the
    likelihood is largest at Δ = 0 and the estimate is exactly 0.0; while every crawl
    has, it increases without bound and the estimate is ``inf``. No clamp is applied.
    Before any crawl the likelihood is flat and ``rate`` is NaN.
    Roots are accurate to a relative error of ~1e-13 or better for any finite positive
    intervals, from 1e-300 to 1e300 (the three regimes of ``_rootpath``).

    References
    ----------
    J. Cho and H. Garcia-Molina, "Estimating frequency of change", ACM TOIT 3(3), 2003;
    Avrachenkov, Patil & Thoppe, "Online algorithms for estimating change rates of web
    pages", eq. (15).

    Examples
    --------
    >>> from changerate_bayes import MLEEstimator
    >>> est = MLEEstimator()
    >>> est.update(1, interval=0.5)
    >>> est.rate
    inf
    >>> est.update(0, interval=0.5)  # 0.5/(e^{0.5Δ} − 1) = 0.5, so Δ = 2 log 2
    >>> round(est.rate, 12)
    1.38629436112
    """

    method = "mle"
    _kind = MLE_KIND
