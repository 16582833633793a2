"""Small pure helpers shared by the estimator studies: error curves, slopes, bootstrap CIs."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import zeta
from scipy.stats import norm

__all__ = [
    "bootstrap_weights",
    "fisher_information",
    "finite_or_none",
    "folded_normal_mean",
    "loglog_slope",
    "mae_curve",
    "recursion_moments",
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


def recursion_moments(change_rate, crawl_rate, etas, zetas, n_crawls, initial=0.0):
    """Exact mean and variance of the SA / SAM error e_k = z_k − Δ after each crawl.

    With μ = Δ/(Δ+p) and a = 1 − μ, the SAM recursion (paper eq. 3; SA is ζ_k = 0) reads
    e_{k+1} = (1 − η_k a + ζ_k) e_k − ζ_k e_{k−1} + η_k ξ_{k+1} (e_k + Δ + p), with
    ξ = I − μ independent of the past, mean 0 and variance μ(1 − μ). The noise is linear
    in e_k, so the mean and the second moments of (e_k, e_{k−1}) follow a closed linear
    recursion: exact for every k, no linearisation. Vectorised over settings.

    Parameters
    ----------
    change_rate, crawl_rate : float
        Δ and p.
    etas, zetas : ndarray, shape (n_crawls, n_settings)
        η_k and ζ_k for k = 0, ..., n_crawls − 1 (ζ_0 = 0).
    n_crawls : int
    initial : float
        z_0 = z_{−1}.

    Returns
    -------
    mean, var : ndarray, shape (n_crawls, n_settings)
        E e_k and Var e_k after k = 1, ..., n_crawls crawls.
    """
    mu = change_rate / (change_rate + crawl_rate)
    a, c, q = 1.0 - mu, change_rate + crawl_rate, mu * (1.0 - mu)
    shape = etas.shape[1:]
    m0 = np.full(shape, initial - change_rate)
    m1 = m0.copy()
    s00, s01, s11 = m0 * m0, m0 * m1, m1 * m1
    mean, var = np.empty((n_crawls,) + shape), np.empty((n_crawls,) + shape)
    for k in range(n_crawls):
        eta, zet = etas[k], zetas[k]
        alpha = 1.0 - eta * a + zet
        noise = eta * eta * q * (s00 + 2.0 * c * m0 + c * c)
        s00, s01, s11 = (
            alpha * alpha * s00 - 2.0 * alpha * zet * s01 + zet * zet * s11 + noise,
            alpha * s00 - zet * s01,
            s00,
        )
        m0, m1 = alpha * m0 - zet * m1, m0
        mean[k], var[k] = m0, s00 - m0 * m0
    return mean, var


def folded_normal_mean(mean, var):
    """E|X| for X ~ N(mean, var): the mean absolute error of an asymptotically normal error."""
    sd = np.sqrt(np.maximum(var, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, mean / sd, np.inf * np.sign(mean))
        out = sd * np.sqrt(2.0 / math.pi) * np.exp(-0.5 * z * z) + mean * (1.0 - 2.0 * norm.cdf(-z))
    return np.where(sd > 0, out, np.abs(mean))
