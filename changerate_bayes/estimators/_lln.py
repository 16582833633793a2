"""The LLN estimator x_k = p Î_k / (k + α_k − Î_k) (paper eq. 1, Theorem 1)."""

from __future__ import annotations

import numbers

import numpy as np

from ._base import ChangeCountEstimator, scaled_ratio
from ._segments import count_final, count_path

__all__ = ["LLNEstimator"]

_NAMED = ("log", "sqrt")


def lln_params(alpha=1.0) -> dict:
    """Check ``alpha``: a float > 0, ``"log"``, ``"sqrt"`` or a callable k -> α_k > 0."""
    if isinstance(alpha, str):
        if alpha not in _NAMED:
            raise ValueError(f"`alpha` must be a float > 0, one of {_NAMED} or a callable; got {alpha!r}")
    elif callable(alpha):
        pass
    elif isinstance(alpha, numbers.Real) and not isinstance(alpha, bool):
        a = float(alpha)
        if not (np.isfinite(a) and a > 0):
            raise ValueError(f"`alpha` must be a finite number > 0; got {a}")
        alpha = a
    else:
        raise TypeError(f"`alpha` must be a float > 0, one of {_NAMED} or a callable; got {type(alpha).__name__}")
    return {"alpha": alpha}


def alpha_sequence(alpha, k: np.ndarray) -> np.ndarray:
    """α_k for the crawl counts ``k`` (int array, k >= 1).

    ``"log"`` is α_k = log(k + 1), not log k: log 1 = 0 would make α_1 = 0 and x_1 = p/0
    when the first crawl sees a change; log(k + 1) is > 0 for every k >= 1 and equals
    log k + O(1/k), so Theorem 1's conditions and rate are the same as for log k.
    ``"sqrt"`` is α_k = √k.
    """
    kf = k.astype(np.float64)
    if isinstance(alpha, float):
        return np.full(kf.shape, alpha)
    if alpha == "log":
        return np.log1p(kf)
    if alpha == "sqrt":
        return np.sqrt(kf)
    out = np.asarray(alpha(k.copy()))
    if out.dtype == bool or out.dtype.kind not in "iuf":
        raise TypeError(f"`alpha` must return numbers; got dtype {out.dtype}")
    try:
        out = np.broadcast_to(out.astype(np.float64), kf.shape)
    except ValueError:
        raise ValueError(
            f"`alpha(k)` must return an array broadcastable to {kf.shape}; got shape {out.shape}"
        ) from None
    bad = ~(np.isfinite(out) & (out > 0))
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise ValueError(f"`alpha(k)` must be finite and > 0; got {out.ravel()[i]} at k={int(k.ravel()[i])}")
    return out


def lln_estimate(alpha):
    """x_k = p Î_k / (k + α_k − Î_k) as a function of (p, Î_k, k), k an int array."""
    return lambda p, ones, k: scaled_ratio(p, ones, k + alpha_sequence(alpha, k) - ones)


def lln_path(history, *, alpha=1.0) -> np.ndarray:
    """x_k for every prefix k, shape ``history.shape`` (NaN-padded (n_pages, n_crawls) if ragged;
    a callable ``alpha`` then receives the flat array of every crawl's k)."""
    return count_path(history, lln_estimate(alpha), method="lln")


def lln_final(history, *, alpha=1.0) -> np.ndarray:
    """x_k after each page's last crawl, shape (n_pages,) (α_k at each page's own k)."""
    return count_final(history, lln_estimate(alpha), method="lln")


class LLNEstimator(ChangeCountEstimator):
    """The law-of-large-numbers change-rate estimator of Avrachenkov et al., streaming.

    Parameters
    ----------
    {crawl_rate}
    alpha : float, {"log", "sqrt"} or callable, default 1.0
        The sequence α_k > 0: a constant; ``"log"``: α_k = log(k + 1) (log k would be 0
        at k = 1); ``"sqrt"``: α_k = √k; or a callable taking an int array of crawl
        counts k >= 1 and returning α_k > 0 of the same shape.
    {n_pages}

    Attributes
    ----------
    {n_crawls_}
    changes_ : float or ndarray
        Î_k = Σ_{j≤k} I_j.

    Notes
    -----
    x_k = p Î_k / (k + α_k − Î_k) (paper eq. 1). α_k > 0 keeps x_k finite when every
    crawl saw a change. If α_k/k → 0 then x_k → Δ a.s.; if also log(k/α_k)/k → 0 then
    E|x_k − Δ| = O(max{k^{-1/2}, α_k/k}) (Theorem 1). Before any crawl, ``rate`` is the
    formula at k = 0, x_0 = 0/α_0 = 0.0 for a constant α (the posterior mean of
    :class:`BayesianEstimator` with the matching improper prior is the same 0); it is
    NaN for ``"log"`` and ``"sqrt"`` (α_0 = 0, so 0/0) and for a callable (α_k is defined
    for k >= 1 only). The state is (k, Î_k): O(1) memory, and estimators over disjoint
    crawls merge exactly (:meth:`merge`).

    The estimator is built on E[I] = Δ/(Δ + p), which holds for Poisson crawling at rate
    p: intervals exponential with mean 1/p (paper eq. 4). With crawls on a fixed
    schedule it tends to p(e^{Δ/p} − 1), not Δ. This object does not see the intervals;
    :func:`estimate_path` checks them and warns.

    References
    ----------
    Avrachenkov, Patil & Thoppe, "Online algorithms for estimating change rates of web
    pages", eq. (1) and Theorem 1.

    Examples
    --------
    >>> from changerate_bayes import LLNEstimator
    >>> est = LLNEstimator(crawl_rate=3.0)
    >>> for i in [1, 0, 1, 1]:
    ...     est.update(i)
    >>> est.rate  # 3 * 3 / (4 + 1 - 3)
    4.5
    """

    method = "lln"

    def __init__(self, *, crawl_rate=None, alpha=1.0, n_pages=None):
        self.alpha = lln_params(alpha)["alpha"]
        super().__init__(crawl_rate=crawl_rate, n_pages=n_pages)

    def path_params(self) -> dict:
        return {"alpha": self.alpha}

    def _rate(self):
        # x_0 = p·0/(0 + α_0): 0 for a constant α; α_0 = 0 for "log" and "sqrt" (0/0),
        # and a callable α is only defined for k >= 1
        at_zero = 0.0 if isinstance(self.alpha, float) else np.nan
        if self.counts_ is None:
            if self.n_crawls_ == 0:
                return np.full(self._shape, at_zero)
            k = np.array([self.n_crawls_])
            a = alpha_sequence(self.alpha, k)[0]
            return scaled_ratio(self._p(), self.changes_, k[0] + a - self.changes_)
        k = self.counts_
        seen = k > 0
        a = np.zeros(k.shape)
        if seen.any():
            a[seen] = alpha_sequence(self.alpha, k[seen])
        with np.errstate(invalid="ignore", divide="ignore"):
            x = scaled_ratio(self._p(), self.changes_, k + a - self.changes_)
        return np.where(seen, x, at_zero)
