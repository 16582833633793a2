"""Pages whose change rate moves, crawled at Poisson times (for calibration studies)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._rng import as_generator
from .._validation import check_choice, check_positive_int, check_positive_scalar

__all__ = ["DriftingPages", "simulate_drifting_pages", "DRIFT_KINDS"]

DRIFT_KINDS = ("random_walk", "jumps", "daily")
#: sub-steps per crawl interval for the integral of a daily cycle's rate
_SUBSTEPS = 16


@dataclass(frozen=True)
class DriftingPages:
    """Crawls of simulated pages and their true rates.

    Attributes
    ----------
    changed : ndarray of int8, shape (n_pages, k)
    intervals : ndarray, shape (n_pages, k)
    true_rate : ndarray, shape (n_pages, k)
        Δ at each crawl time (per time unit).
    change_probability : ndarray, shape (n_pages, k)
        The true P(I_k = 1 | path of Δ) = 1 − exp(−∫ Δ dt over the interval).
    """

    changed: np.ndarray
    intervals: np.ndarray
    true_rate: np.ndarray
    change_probability: np.ndarray


def simulate_drifting_pages(
    kind: str,
    n_pages: int,
    n_crawls: int,
    *,
    crawl_rate: float = 0.5,
    log_rate_mean: float = np.log(0.5),
    log_rate_sd: float = 1.0,
    sigma: float = 0.1,
    segment_mean: float = 48.0,
    amplitude: float = 1.0,
    period: float = 24.0,
    rng=None,
) -> DriftingPages:
    """Simulate pages whose rate drifts, crawled at Poisson times.

    Parameters
    ----------
    kind : {"random_walk", "jumps", "daily"}
        ``"random_walk"``: log Δ at crawl k is log Δ at crawl k − 1 plus N(0, σ²τ_k),
        log Δ at the first crawl ~ N(``log_rate_mean``, ``log_rate_sd``), and the crawl
        sees a change with probability 1 − e^{−Δ_k τ_k} (the model of
        :class:`~changerate_bayes.DynamicRateFilter` exactly). ``"jumps"``: Δ is constant
        between jump times (a Poisson process of mean gap ``segment_mean``) and takes a
        fresh N(``log_rate_mean``, ``log_rate_sd``) value in log at each jump.
        ``"daily"``: log Δ(t) = m + ``amplitude`` sin(2πt/``period`` + φ), m ~ N(mean, sd)
        and φ uniform per page. For jumps and cycles, P(I_k = 1) = 1 − e^{−∫Δ dt}.
    n_pages, n_crawls : int
    crawl_rate : float, default 0.5
        Poisson crawl rate p (per time unit).
    sigma : float, default 0.1
        Volatility per √time unit (``"random_walk"``).
    rng : int, numpy.random.Generator or None

    Returns
    -------
    DriftingPages
    """
    kind = check_choice(kind, name="kind", choices=DRIFT_KINDS)
    n = check_positive_int(n_pages, name="n_pages")
    k = check_positive_int(n_crawls, name="n_crawls")
    p = check_positive_scalar(crawl_rate, name="crawl_rate")
    gen = as_generator(rng)
    tau = gen.exponential(1.0 / p, (n, k))
    t = np.cumsum(tau, axis=1)
    if kind == "random_walk":
        u0 = gen.normal(log_rate_mean, log_rate_sd, (n, 1))
        steps = sigma * np.sqrt(tau) * gen.standard_normal((n, k))
        steps[:, 0] = 0.0
        rate = np.exp(u0 + np.cumsum(steps, axis=1))
        prob = -np.expm1(-rate * tau)
    elif kind == "jumps":
        horizon = float(t.max())
        n_jumps = int(np.ceil(horizon / segment_mean * 2 + 10 * np.sqrt(horizon / segment_mean) + 10))
        jumps = np.cumsum(gen.exponential(segment_mean, (n, n_jumps)), axis=1)
        levels = np.exp(gen.normal(log_rate_mean, log_rate_sd, (n, n_jumps + 1)))
        # integral of the rate from 0 to each crawl time: cumulative hazard at the jump times
        seg_len = np.diff(np.concatenate([np.zeros((n, 1)), jumps], axis=1), axis=1)
        cum_at_jump = np.concatenate([np.zeros((n, 1)), np.cumsum(levels[:, :-1] * seg_len, axis=1)], axis=1)
        idx = _row_searchsorted(jumps, t)
        rows = np.arange(n)[:, None]
        start = np.where(idx > 0, jumps[rows, np.maximum(idx - 1, 0)], 0.0)
        rate = levels[rows, idx]
        hazard = cum_at_jump[rows, idx] + rate * (t - start)
        integral = np.diff(np.concatenate([np.zeros((n, 1)), hazard], axis=1), axis=1)
        prob = -np.expm1(-np.maximum(integral, 0.0))
    else:
        m = gen.normal(log_rate_mean, log_rate_sd, (n, 1))
        phase = gen.uniform(0.0, 2 * np.pi, (n, 1))
        t0 = t - tau
        frac = (np.arange(_SUBSTEPS + 1) / _SUBSTEPS)[None, None, :]
        grid_t = t0[..., None] + tau[..., None] * frac
        lam = np.exp(m[..., None] + amplitude * np.sin(2 * np.pi * grid_t / period + phase[..., None]))
        integral = np.trapezoid(lam, dx=1.0 / _SUBSTEPS, axis=2) * tau
        rate = lam[..., -1]
        prob = -np.expm1(-integral)
    changed = (gen.random((n, k)) < prob).astype(np.int8)
    return DriftingPages(changed, tau, rate, prob)


def _row_searchsorted(sorted_rows: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per row i, np.searchsorted(sorted_rows[i], values[i], side='right'), without a loop over rows."""
    n = sorted_rows.shape[0]
    shift = (np.arange(n) * (max(sorted_rows.max(), values.max()) + 1.0))[:, None]
    flat = (sorted_rows + shift).ravel()
    pos = np.searchsorted(flat, (values + shift).ravel(), side="right").reshape(values.shape)
    return pos - (np.arange(n) * sorted_rows.shape[1])[:, None]
