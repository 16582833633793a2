"""Tests on counts: dispersion of window counts, hour-of-day and day-of-week seasonality.

Counts are unaffected by ties or by the rounding of times within a window, so these
tests stay valid for quantised data. All condition on the first and last events:
under a homogeneous Poisson process the inner events are then i.i.d. uniform on
(t_1, t_n), so the counts in any fixed partition of (t_1, t_n) are multinomial with
probabilities proportional to exposure (Pearson's chi-square, no parameter fitted).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from ._result import DiagnosticResult, insufficient, not_applicable, verdict_words

__all__ = [
    "default_n_windows",
    "dispersion_statistic",
    "dispersion_result",
    "seasonal_exposure",
    "seasonality_statistic",
    "seasonality_result",
    "seasonal_labels",
    "seasonal_reading",
    "cochran_ok",
]

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_PERIODS = {"hour_of_day": (24.0, 24), "day_of_week": (168.0, 7)}


def default_n_windows(n_inner: int) -> int:
    """Number of equal windows for the dispersion test: about 5 events per window
    (Cochran's rule), between 2 and 100. With 18 events, 3 windows give a size of
    0.057 at α = 0.05 where 2 windows, with their lumpier statistic, give 0.031."""
    return int(np.clip(n_inner // 5, 2, 100))


def _row_counts(bins: np.ndarray, n_bins: int) -> np.ndarray:
    """Counts of integer ``bins`` (shape (..., m)) per row, shape (..., n_bins)."""
    lead = bins.shape[:-1]
    flat = bins.reshape(-1, bins.shape[-1])
    offs = (np.arange(flat.shape[0]) * n_bins)[:, None]
    counts = np.bincount((flat + offs).ravel(), minlength=flat.shape[0] * n_bins)
    return counts.reshape(*lead, n_bins)


def dispersion_statistic(times: np.ndarray, n_windows: int):
    """Dispersion index of inner-event counts in ``n_windows`` equal windows of (t_1, t_n).

    Parameters
    ----------
    times : ndarray, shape (..., n)
        Sorted event times, one dataset per row.
    n_windows : int
        K >= 2.

    Returns
    -------
    index, chi2, pvalue : ndarray of shape (...)
        index = sample variance / mean of the counts = chi2 / (K - 1); chi2 is
        Pearson's statistic, chi-square with K - 1 df under H0; the p-value is the
        upper tail (the alternative is clustering, index > 1: the lower tail of a
        discrete count statistic with few windows is too lumpy to test).
    counts : ndarray, shape (..., K)
    """
    t = np.asarray(times, dtype=np.float64)
    m = t.shape[-1] - 2
    u = (t[..., 1:-1] - t[..., :1]) / (t[..., -1:] - t[..., :1])
    bins = np.minimum((u * n_windows).astype(np.int64), n_windows - 1)
    counts = _row_counts(bins, n_windows)
    expected = m / n_windows
    chi2 = np.sum((counts - expected) ** 2, axis=-1) / expected
    df = n_windows - 1
    return chi2 / df, chi2, stats.chi2.sf(chi2, df), counts


def dispersion_result(times: np.ndarray, *, n_windows: int | None = None, alpha: float = 0.05) -> DiagnosticResult:
    """Dispersion-index test on one sorted trace."""
    m = times.size - 2
    if m < 10 or times[-1] <= times[0]:
        return insufficient("dispersion_index", f"{max(m, 0)} inner event(s); the test needs 10")
    k = default_n_windows(m) if n_windows is None else int(n_windows)
    if k < 2 or m / k < 5:
        return insufficient("dispersion_index", f"{m} inner events in {k} windows: fewer than 5 expected per window")
    index, chi2, p, _ = dispersion_statistic(times, k)
    index, chi2, p = float(index), float(chi2), float(p)
    return DiagnosticResult(
        "dispersion_index",
        index,
        p,
        f"variance/mean of counts in {k} windows = {index:.3g} (1 under Poisson); "
        + verdict_words(p, alpha, reject="counts are clustered (over-dispersed)", keep="counts are not over-dispersed"),
        details={"n_windows": k, "chi2": chi2, "df": k - 1, "window_length": float((times[-1] - times[0]) / k)},
    )


def seasonal_exposure(a: np.ndarray, b: np.ndarray, period: float, n_bins: int) -> np.ndarray:
    """Time spent in each phase bin of a cycle between clock times ``a`` and ``b``.

    Parameters
    ----------
    a, b : array_like, shape (...)
        Start and end, in hours on a clock whose zero is a cycle start (hours since
        Monday 00:00 UTC for day-of-week).
    period : float
        Cycle length in hours (24 or 168).
    n_bins : int
        Equal bins per cycle.

    Returns
    -------
    ndarray, shape (..., n_bins)
        Hours of (a, b) falling in each bin.

    Examples
    --------
    >>> seasonal_exposure(0.0, 36.0, 24.0, 2).tolist()   # 1.5 days: two mornings, one afternoon
    [24.0, 12.0]
    """
    w = period / n_bins
    lo = np.arange(n_bins) * w

    def cum(x):  # time in [0, x] spent in each bin, counted from a cycle start
        x = np.asarray(x, dtype=np.float64)[..., None]
        cycles = np.floor(x / period)
        phase = x - cycles * period  # not np.mod: keeps phase and cycles consistent at round-off
        return cycles * w + np.clip(phase - lo, 0.0, w)

    return cum(b) - cum(a)


def seasonality_statistic(clock: np.ndarray, kind: str):
    """Pearson chi-square of inner-event phase counts against exposure.

    Parameters
    ----------
    clock : ndarray, shape (..., n)
        Sorted event times in hours since Monday 1970-01-05 00:00 UTC.
    kind : {"hour_of_day", "day_of_week"}

    Returns
    -------
    chi2, pvalue : ndarray of shape (...)
    counts, expected : ndarray of shape (..., n_bins)
    """
    period, n_bins = _PERIODS[kind]
    c = np.asarray(clock, dtype=np.float64)
    inner = c[..., 1:-1]
    m = inner.shape[-1]
    bins = np.minimum((np.mod(inner, period) / (period / n_bins)).astype(np.int64), n_bins - 1)
    counts = _row_counts(bins, n_bins)
    expo = seasonal_exposure(c[..., 0], c[..., -1], period, n_bins)
    expected = m * expo / expo.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        chi2 = np.sum(np.where(expected > 0, (counts - expected) ** 2 / expected, 0.0), axis=-1)
    df = n_bins - 1
    return chi2, stats.chi2.sf(chi2, df), counts, expected


def cochran_ok(expected: np.ndarray) -> np.ndarray:
    """Cochran's rule for the chi-square approximation: every expected count >= 1 and
    at most 20% of them below 5 (vectorised over rows)."""
    e = np.asarray(expected)
    return (e.min(axis=-1) >= 1.0) & (np.mean(e < 5.0, axis=-1) <= 0.2)


def seasonal_labels(kind: str) -> list[str]:
    """The bins' names of an ``"hour_of_day"`` ("00h" .. "23h") or ``"day_of_week"`` ("Mon" .. "Sun") test."""
    return [f"{h:02d}h" for h in range(24)] if kind == "hour_of_day" else list(_DAYS)


def seasonal_reading(
    kind: str, chi2: float, df, p: float, ratio: np.ndarray, alpha: float, *, rate: str = "rate", against: str = ""
) -> str:
    """The reading of an hour-of-day or day-of-week chi-square test: the statistic, and the
    busiest and quietest bins by ``ratio`` (observed over expected count, NaN for a bin no
    crawl falls in) when the test rejects."""
    labels = seasonal_labels(kind)
    hi, lo = int(np.nanargmax(ratio)), int(np.nanargmin(ratio))
    what = "hour of day (UTC)" if kind == "hour_of_day" else "day of week (UTC)"
    return f"chi² = {chi2:.4g} on {df} df over the {what}{against}; " + verdict_words(
        p,
        alpha,
        reject=f"the {rate} depends on the {what}: busiest {labels[hi]} ({ratio[hi]:.2f}× average), "
        f"quietest {labels[lo]} ({ratio[lo]:.2f}×)",
        keep=f"no detectable {what} pattern",
    )


def seasonality_result(
    prep_times: np.ndarray, hours_since_monday: float | None, kind: str, *, alpha: float = 0.05
) -> DiagnosticResult:
    """Hour-of-day or day-of-week test on one sorted trace of datetimes (UTC clock)."""
    if hours_since_monday is None:
        return not_applicable(kind, "needs datetimes (a clock), got plain numbers")
    m = prep_times.size - 2
    if m < 1 or prep_times[-1] <= prep_times[0]:
        return insufficient(kind, f"{max(m, 0)} inner events")
    clock = prep_times + hours_since_monday
    chi2, p, counts, expected = seasonality_statistic(clock, kind)
    if not cochran_ok(expected):
        return insufficient(
            kind,
            f"{m} inner events give expected counts down to {expected.min():.2g} per bin "
            "(the chi-square approximation needs >= 1 everywhere and >= 5 in 80% of the bins)",
        )
    chi2, p = float(chi2), float(p)
    period, n_bins = _PERIODS[kind]
    return DiagnosticResult(
        kind,
        chi2,
        p,
        seasonal_reading(kind, chi2, n_bins - 1, p, counts / expected, alpha),
        details={
            "df": n_bins - 1,
            "labels": seasonal_labels(kind),
            "counts": counts.tolist(),
            "expected": [float(e) for e in expected],
        },
    )
