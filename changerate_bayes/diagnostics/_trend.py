"""Is the rate constant in time? Laplace and MIL-HDBK-189 trend tests.

Both condition on the first and last events, t_1 and t_n: under a homogeneous
Poisson process the m = n - 2 events between them are then i.i.d. uniform on
(t_1, t_n), whatever the rate, so no parameter is estimated.

References
----------
Cox, D. R. and Lewis, P. A. W. (1966), *The Statistical Analysis of Series of Events*,
Section 3.3 (Laplace test). MIL-HDBK-189 (1981), *Reliability Growth Management*
(the "military handbook" test); Lindqvist, B. H. and Doksum, K. A. (2003) compare both.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ._result import DiagnosticResult, insufficient, verdict_words

__all__ = ["laplace_statistic", "mil_hdbk_189_statistic", "laplace_result", "mil_hdbk_189_result", "MIN_INTERIOR"]

MIN_INTERIOR = 5


def laplace_statistic(times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Laplace z and two-sided p-value, vectorised over rows.

    Parameters
    ----------
    times : ndarray, shape (..., n), n >= 3
        Sorted event times, one dataset per row.

    Returns
    -------
    z, pvalue : ndarray of shape (...)

    Notes
    -----
    With u_i = (t_i - t_1) / (t_n - t_1) for the m = n - 2 inner events,
    z = (mean(u) - 1/2) sqrt(12 m), approximately N(0, 1) under a homogeneous
    Poisson process (a mean of m uniforms). z > 0: events crowd towards the end
    (the rate increases).
    """
    t = np.asarray(times, dtype=np.float64)
    m = t.shape[-1] - 2
    u = (t[..., 1:-1] - t[..., :1]) / (t[..., -1:] - t[..., :1])
    z = (u.mean(axis=-1) - 0.5) * np.sqrt(12.0 * m)
    return z, 2.0 * stats.norm.sf(np.abs(z))


def mil_hdbk_189_statistic(times: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """MIL-HDBK-189 statistic 2 Σ log((t_n - t_1)/(t_i - t_1)) and its two-sided p-value.

    Returns
    -------
    statistic, pvalue : ndarray of shape (...)
    df : int
        2 m, the chi-square degrees of freedom under H0 (m = n - 2 inner events).

    Notes
    -----
    Under H0, (t_i - t_1)/(t_n - t_1) are i.i.d. U(0, 1), so the statistic is
    chi-square with 2m degrees of freedom; small values mean an increasing rate.
    Inner events tied with t_1 give an infinite statistic (p = 0): jitter ties first.
    """
    t = np.asarray(times, dtype=np.float64)
    m = t.shape[-1] - 2
    span = t[..., -1:] - t[..., :1]
    with np.errstate(divide="ignore"):
        stat = 2.0 * np.sum(np.log(span) - np.log(t[..., 1:-1] - t[..., :1]), axis=-1)
    df = 2 * m
    p = np.minimum(1.0, 2.0 * np.minimum(stats.chi2.cdf(stat, df), stats.chi2.sf(stat, df)))
    return stat, p, df


def _direction(increasing: bool) -> str:
    return "increases" if increasing else "decreases"


def laplace_result(times: np.ndarray, *, alpha: float = 0.05) -> DiagnosticResult:
    """The Laplace trend test on one sorted trace."""
    m = times.size - 2
    if m < MIN_INTERIOR or times[-1] <= times[0]:
        return insufficient("laplace_trend", f"{max(m, 0)} inner event(s); the test needs {MIN_INTERIOR}")
    z_arr, p_arr = laplace_statistic(times)
    z, p = float(z_arr), float(p_arr)
    return DiagnosticResult(
        "laplace_trend",
        z,
        p,
        f"z = {z:.2f}; "
        + verdict_words(
            p,
            alpha,
            reject=f"the event rate {_direction(z > 0)} over the trace (trend)",
            keep="no linear trend in the event rate",
        ),
        details={"n_inner": m},
    )


def mil_hdbk_189_result(times: np.ndarray, *, alpha: float = 0.05) -> DiagnosticResult:
    """The MIL-HDBK-189 trend test on one sorted trace."""
    m = times.size - 2
    if m < MIN_INTERIOR or times[-1] <= times[0]:
        return insufficient("mil_hdbk_189", f"{max(m, 0)} inner event(s); the test needs {MIN_INTERIOR}")
    stat_arr, p_arr, df = mil_hdbk_189_statistic(times)
    stat, p = float(stat_arr), float(p_arr)
    return DiagnosticResult(
        "mil_hdbk_189",
        stat,
        p,
        f"2Σlog = {stat:.4g} on {df} df (mean {df}); "
        + verdict_words(
            p,
            alpha,
            reject=f"the event rate {_direction(stat < df)} over the trace (power-law trend)",
            keep="no power-law trend in the event rate",
        ),
        details={"df": df, "n_inner": m},
    )
