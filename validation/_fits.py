"""Small pure helpers shared by the estimator studies: error curves, slopes, bootstrap CIs."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import zeta

__all__ = [
    "bootstrap_weights",
    "fisher_information",
    "finite_or_none",
    "loglog_slope",
    "mae_curve",
    "rmse_ratio",
]


def finite_or_none(x):
    """A JSON-able float: None for NaN/inf."""
    x = float(x)
    return x if math.isfinite(x) else None


def mae_curve(est: np.ndarray, truth: float) -> np.ndarray:
    """Mean absolute error over replications (axis 0); inf where any estimate is not finite."""
    with np.errstate(invalid="ignore"):
        err = np.abs(est - truth)
    return np.where(np.isfinite(err).all(axis=0), np.where(np.isfinite(err), err, 0).mean(axis=0), np.inf)


def bootstrap_weights(n_replications: int, n_boot: int, rng) -> np.ndarray:
    """Resampling weights (n_boot, R): multinomial counts / R (each row sums to 1)."""
    gen = np.random.default_rng(rng)
    return gen.multinomial(n_replications, np.full(n_replications, 1.0 / n_replications), size=n_boot) / n_replications


def loglog_slope(k: np.ndarray, err: np.ndarray):
    """OLS slope and intercept of log err on log k along the last axis (err may be batched)."""
    x = np.log(np.asarray(k, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(err)
    xc = x - x.mean()
    slope = (y * xc).sum(axis=-1) / (xc**2).sum()
    intercept = y.mean(axis=-1) - slope * x.mean()
    return slope, intercept


def fisher_information(change_rate: float, crawl_rate: float) -> float:
    """Fisher information about Δ of one crawl (I, τ) with τ ~ Exp(p), per unit Δ².

    For a given τ the crawl is Bernoulli(1 − e^{−Δτ}): information τ²/(e^{Δτ} − 1).
    Averaged over τ ~ Exp(p): p Σ_{n≥1} ∫ τ² e^{−(p + nΔ)τ} dτ = 2p Σ_{n≥1} (p + nΔ)^{−3}
    = (2p/Δ³) ζ(3, 1 + p/Δ) (Hurwitz zeta). The Cramér-Rao bound after k crawls is
    1/(k I(Δ)).
    """
    return 2.0 * crawl_rate / change_rate**3 * float(zeta(3.0, 1.0 + crawl_rate / change_rate))


def rmse_ratio(est_a: np.ndarray, est_b: np.ndarray, truth: float, weights: np.ndarray):
    """RMSE(a)/RMSE(b) over replications and its bootstrap 95% CI (paired resampling).

    ``est_a``, ``est_b``: (R,) estimates at one k. Returns (ratio, low, high); None
    entries when an estimate is infinite in some replication.
    """
    with np.errstate(invalid="ignore", over="ignore"):
        sa, sb = (est_a - truth) ** 2, (est_b - truth) ** 2
    if not (np.isfinite(sa).all() and np.isfinite(sb).all()):
        return None, None, None
    ratio = math.sqrt(sa.mean() / sb.mean())
    boot = np.sqrt((weights @ sa) / (weights @ sb))
    low, high = np.quantile(boot, [0.025, 0.975])
    return ratio, float(low), float(high)
