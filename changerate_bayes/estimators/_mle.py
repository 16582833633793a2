"""The maximum-likelihood estimator of Cho & Garcia-Molina (paper eq. 15)."""

from __future__ import annotations

from ._rootest import RootEstimator
from ._rootpath import MLE_KIND

__all__ = ["MLEEstimator"]


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
    {n_pages}

    Attributes
    ----------
    {n_crawls_}
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
