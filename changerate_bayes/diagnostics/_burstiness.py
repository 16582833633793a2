"""Burstiness: coefficient of variation of the gaps and the Goh-Barabási coefficient.

For exponential gaps CV = 1 and B = (CV - 1)/(CV + 1) = 0; bursty traces have CV > 1
(B > 0), regular ones CV < 1 (B < 0). B is a monotone function of CV, so both have the
same test: the null distribution of the sample CV of exponential gaps does not depend
on the rate, and is simulated (``scipy.stats.monte_carlo_test``).

References
----------
Goh, K.-I. and Barabási, A.-L. (2008), Burstiness and memory in complex systems,
*EPL* 81, 48002.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import stats

from ._exponential import MIN_GAPS, NULL_SIZE, subsize_pvalue
from ._result import DiagnosticResult, insufficient, verdict_words

__all__ = ["gap_cv", "burstiness_coefficient", "burstiness_results", "window_spacings", "window_burstiness_results"]


def gap_cv(gaps: np.ndarray, axis: int = -1) -> np.ndarray:
    """Sample coefficient of variation std/mean of the gaps (``ddof=1``), vectorised."""
    g = np.asarray(gaps, dtype=np.float64)
    return np.std(g, axis=axis, ddof=1) / np.mean(g, axis=axis)


def burstiness_coefficient(cv):
    """Goh-Barabási B = (σ - μ)/(σ + μ) = (CV - 1)/(CV + 1), in [-1, 1]."""
    cv = np.asarray(cv, dtype=np.float64)
    return (cv - 1.0) / (cv + 1.0)


def burstiness_results(gaps: np.ndarray, *, n_resamples: int, rng, alpha: float = 0.05):
    """The ``gap_cv`` and ``burstiness`` results (one shared Monte Carlo p-value)."""
    if gaps.size < MIN_GAPS or not np.mean(gaps) > 0:
        why = f"{gaps.size} gap(s); the test needs at least {MIN_GAPS} with a positive mean"
        return insufficient("gap_cv", why), insufficient("burstiness", why)
    if gaps.size > NULL_SIZE:  # √m (CV - 1) has a limiting null law: simulate it at NULL_SIZE gaps
        cv = float(gap_cv(gaps))
        p = subsize_pvalue(
            np.sqrt(gaps.size) * (cv - 1.0),
            lambda b: np.sqrt(NULL_SIZE) * (gap_cv(rng.standard_exponential((b, NULL_SIZE))) - 1.0),
            n_resamples=n_resamples,
            alternative="two-sided",
        )
        null = f"Monte Carlo at {NULL_SIZE} exponential gaps, √m (CV - 1) compared"
    else:
        res = stats.monte_carlo_test(
            gaps,
            lambda size: rng.standard_exponential(size),
            gap_cv,
            vectorized=True,
            n_resamples=n_resamples,
            alternative="two-sided",
            axis=-1,
        )
        cv, p = float(res.statistic), float(min(1.0, res.pvalue))
        null = "Monte Carlo, exponential gaps"
    b = float(burstiness_coefficient(cv))
    kind = "bursty (gaps more variable than exponential)" if cv > 1 else "more regular than Poisson"
    det = {"n_gaps": int(gaps.size), "n_resamples": int(n_resamples), "null": null}
    r_cv = DiagnosticResult(
        "gap_cv",
        cv,
        p,
        f"gap CV = {cv:.3g} (1 for Poisson); "
        + verdict_words(p, alpha, reject=f"the trace is {kind}", keep="gap variability as for Poisson"),
        details=det,
    )
    r_b = DiagnosticResult(
        "burstiness",
        b,
        p,
        f"Goh-Barabási B = {b:.3g} (0 for Poisson, 1 = maximally bursty); same test as gap_cv; "
        + verdict_words(p, alpha, reject=f"the trace is {kind}", keep="not bursty"),
        details=det,
    )
    return r_cv, r_b


def window_spacings(times: np.ndarray, start: float, end: float) -> np.ndarray:
    """The n + 1 spacings of n sorted event times in the observation window [start, end], both ends included.

    Examples
    --------
    >>> window_spacings(np.array([1.0, 2.0]), 0.0, 10.0)
    array([1., 1., 8.])
    """
    t = np.clip(np.asarray(times, dtype=np.float64), start, end)  # a jittered time may pass an end
    return np.diff(np.concatenate(([start], t, [end])))


def window_burstiness_results(times: np.ndarray, window, *, n_resamples: int, rng, alpha: float = 0.05):
    """The ``gap_cv`` and ``burstiness`` results of events observed over ``window = (start, end)``.

    Given n events, a Poisson process puts them i.i.d. uniform on the window; their n + 1
    spacings (both ends included) divided by the window's length are distributed as
    E_i / Σ E_j with E i.i.d. exponential, and the CV is scale-free: the null of the CV
    is exactly that of n + 1 exponential gaps (:func:`burstiness_results`). Unlike the
    gaps between the first and the last event, the spacings see a quiet stretch before
    the first event or after the last: a burst followed by silence is bursty, not regular.
    """
    start, end = window
    found = burstiness_results(window_spacings(times, start, end), n_resamples=n_resamples, rng=rng, alpha=alpha)
    extra = {"window": [float(start), float(end)]}
    return tuple(
        dataclasses.replace(
            r,
            details={
                **r.details,
                **extra,
                "null": r.details.get("null", "") + "; spacings from the window's start to its end (ends included)",
            },
        )
        for r in found
    )
