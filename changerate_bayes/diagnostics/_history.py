"""Calibration of a crawl history: does P(I = 1 | τ) follow 1 − e^{−Δτ}? Pages of any length."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..estimators import final_estimates
from ..history import CrawlHistory

__all__ = ["IntervalCalibration", "interval_calibration"]


@dataclass(frozen=True)
class IntervalCalibration:
    """Per-page calibration test of detection probability against crawl interval.

    Attributes
    ----------
    rate : ndarray of float64, shape (n_pages,)
        Δ̂, the MLE of each page (per time unit of the intervals).
    statistic : ndarray of float64, shape (n_pages,)
        Pearson X² = Σ_b (O_b − E_b)² / V_b over the page's interval bins.
    df : int
        Degrees of freedom, ``n_bins − 1`` (one rate fitted).
    pvalue : ndarray of float64, shape (n_pages,)
        Upper χ²(df) tail of the statistic; NaN where ``status`` is not "ok".
    status : ndarray of str, shape (n_pages,)
        "ok" or "insufficient data" (fewer than 5 crawls per bin, fewer than 5 changed
        or 5 unchanged crawls, or every interval equal: nothing to compare).
    n_bins : int
    page_ids : ndarray or None
    """

    rate: np.ndarray
    statistic: np.ndarray
    df: int
    pvalue: np.ndarray
    status: np.ndarray
    n_bins: int
    page_ids: np.ndarray | None = None

    def rejected(self, alpha: float = 0.05) -> np.ndarray:
        """Boolean (n_pages,): tested pages whose p-value is below ``alpha``."""
        return (self.status == "ok") & (np.nan_to_num(self.pvalue, nan=1.0) < alpha)


def interval_calibration(history, *, n_bins: int = 5) -> IntervalCalibration:
    """Test, page by page, that a crawl of interval τ sees a change with probability 1 − e^{−Δτ}.

    The model under every estimator that uses the intervals (MLE, MM, exact
    posteriors): changes are Poisson with rate Δ, so given τ_k the indicator I_k is
    Bernoulli(1 − e^{−Δτ_k}) independently of other crawls. Each page's crawls are
    split into ``n_bins`` bins of equal size by increasing τ; with Δ̂ the page's MLE,
    bin b has O_b = Σ I_k, E_b = Σ (1 − e^{−Δ̂τ_k}) and V_b = Σ q_k(1 − q_k), and
    X² = Σ_b (O_b − E_b)²/V_b is referred to χ²(n_bins − 1). Works for any crawl
    schedule with varied intervals, and for ragged histories (pages of any length),
    vectorised over pages with segment sums.

    Parameters
    ----------
    history : CrawlHistory
        With intervals; rectangular or ragged.
    n_bins : int, default 5
        Interval bins per page, >= 2.

    Returns
    -------
    IntervalCalibration

    Raises
    ------
    TypeError
        If ``history`` is not a CrawlHistory or ``n_bins`` not an int.
    ValueError
        If the history has no intervals or ``n_bins`` < 2.

    References
    ----------
    J. Cho and H. Garcia-Molina, "Estimating frequency of change", ACM TOIT 3(3), 2003
    (the interval-censored Poisson model behind the MLE); paper Section 3.1.

    Examples
    --------
    >>> from changerate_bayes import simulate_history
    >>> from changerate_bayes.diagnostics import interval_calibration
    >>> h = simulate_history(0.5, 1.0, 400, n_pages=3, rng=1)
    >>> res = interval_calibration(h)
    >>> res.status.tolist(), res.df
    (['ok', 'ok', 'ok'], 4)
    """
    if not isinstance(history, CrawlHistory):
        raise TypeError(f"`history` must be a CrawlHistory; got {type(history).__name__}")
    if isinstance(n_bins, bool) or not isinstance(n_bins, numbers.Integral):
        raise TypeError(f"`n_bins` must be an int; got {type(n_bins).__name__}")
    if n_bins < 2:
        raise ValueError(f"`n_bins` must be >= 2; got {n_bins}")
    tau = history.flat_intervals
    if tau is None:
        raise ValueError("interval calibration needs the crawl intervals τ: pass `intervals` to CrawlHistory")
    n_bins = int(n_bins)
    changed = history.flat_changed.astype(np.float64)
    lengths = history.lengths
    n = lengths.size
    page = history.page_index()
    rate = np.atleast_1d(np.asarray(final_estimates(history, "mle"), dtype=np.float64))
    # rank of each crawl's τ within its page -> equal-count bins
    order = np.lexsort((tau, page))
    start = np.repeat(history.offsets[:-1], lengths)
    rank = np.empty(tau.size, dtype=np.int64)
    rank[order] = np.arange(tau.size) - start
    b = np.minimum(rank * n_bins // np.repeat(lengths, lengths), n_bins - 1)
    cell = page * n_bins + b
    finite = np.isfinite(rate) & (rate > 0)
    r = np.where(finite, rate, 1.0)
    q = -np.expm1(-np.repeat(r, lengths) * tau)
    size = n * n_bins
    obs = np.bincount(cell, weights=changed, minlength=size).reshape(n, n_bins)
    exp = np.bincount(cell, weights=q, minlength=size).reshape(n, n_bins)
    var = np.bincount(cell, weights=q * (1.0 - q), minlength=size).reshape(n, n_bins)
    counts = np.bincount(cell, minlength=size).reshape(n, n_bins)
    n_changed = np.add.reduceat(changed, history.offsets[:-1])
    tmin = np.minimum.reduceat(tau, history.offsets[:-1])
    tmax = np.maximum.reduceat(tau, history.offsets[:-1])
    ok = (
        finite
        & (counts.min(axis=1) >= 5)
        & (n_changed >= 5)
        & (lengths - n_changed >= 5)
        & (tmax > tmin)
        & (var.min(axis=1) > 0)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        x2 = np.where(ok, ((obs - exp) ** 2 / np.where(var > 0, var, 1.0)).sum(axis=1), np.nan)
    p = np.where(ok, stats.chi2.sf(np.where(ok, x2, 0.0), n_bins - 1), np.nan)
    status = np.where(ok, "ok", "insufficient data")
    return IntervalCalibration(
        rate=rate, statistic=x2, df=n_bins - 1, pvalue=p, status=status, n_bins=n_bins, page_ids=history.page_ids
    )
