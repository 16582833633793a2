"""``poisson_gof``: every check of the homogeneous-Poisson assumption on one trace."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

import numpy as np

from .._rng import as_generator
from .._validation import StatisticalWarning, check_positive_int, check_positive_scalar
from ._burstiness import burstiness_results
from ._counts import dispersion_result, seasonality_result
from ._crawl import calibration_result
from ._exponential import anderson_test, bootstrap_test, lilliefors_test
from ._prep import prepare_events
from ._qq import QQData, exponential_qq
from ._result import DiagnosticResult, insufficient, not_applicable
from ._segments import Segments, fit_segments, segments_dispersion_result, time_rescaling_result
from ._trend import laplace_result, mil_hdbk_189_result

__all__ = ["PoissonGOFResult", "poisson_gof", "TEST_NAMES", "GAP_TESTS"]

#: Keys of ``PoissonGOFResult.tests``, in report order.
TEST_NAMES = (
    "ks_lilliefors",
    "anderson_darling",
    "ks_bootstrap",
    "ad_bootstrap",
    "cvm_bootstrap",
    "laplace_trend",
    "mil_hdbk_189",
    "dispersion_index",
    "hour_of_day",
    "day_of_week",
    "gap_cv",
    "burstiness",
    "segments_dispersion",
    "time_rescaling",
    "crawl_calibration",
)

#: Tests that read the gaps (invalid for tied times of unknown resolution).
GAP_TESTS = ("ks_lilliefors", "anderson_darling", "ks_bootstrap", "ad_bootstrap", "cvm_bootstrap",
             "gap_cv", "burstiness", "time_rescaling")

# "burstiness" repeats the gap_cv test (B is a monotone function of CV): left out of the
# multiple-testing family so that it is not counted twice.
_FAMILY_EXCLUDES = ("burstiness",)


@dataclass(frozen=True)
class PoissonGOFResult:
    """Checks of the homogeneous-Poisson assumption on one event trace.

    Attributes
    ----------
    n_events : int
        Number of events, ties included.
    rate : float or None
        (n - 1) / (t_n - t_1): events per hour for datetime input, per input time
        unit for floats (the MLE of a Poisson rate from the gaps). None with fewer
        than two distinct times.
    rate_unit : str
        ``"per hour"`` or ``"per input time unit"``.
    span : float
        t_n - t_1 in the same unit.
    qq : QQData
        Gaps against the fitted exponential, with a simulation envelope.
    tests : Mapping[str, DiagnosticResult]
        One entry per name in :data:`TEST_NAMES` (tests that could not run have
        ``status`` "insufficient data" or "not applicable" and no p-value).
    segments : Segments or None
        The Bayesian-blocks piecewise-constant rate (None with fewer than 2 events).
    n_ties : int
        Zero gaps in the input (tied times); never dropped.
    resolution : float
        Recording precision used (0.0 if unknown), same unit as ``rate``'s inverse.
    jittered : str or None
        How times were jittered before the gap tests: None, ``"within resolution"``
        or ``"within crawl interval"``.
    notes : tuple of str
        Caveats in words (ties, quantisation, crawl data).
    origin : numpy.datetime64 or None
        UTC time of the first event (datetime input), the zero of the hour axis.
    times : ndarray, shape (n,)
        The event times as given (hours since ``origin`` for datetimes), unjittered.
    """

    n_events: int
    rate: float | None
    rate_unit: str
    span: float
    qq: QQData
    tests: Mapping[str, DiagnosticResult]
    segments: Segments | None
    n_ties: int
    resolution: float
    jittered: str | None
    notes: tuple[str, ...]
    origin: np.datetime64 | None = None
    times: np.ndarray = None

    def rejected(self, alpha: float = 0.05) -> tuple[str, ...]:
        """Tests rejecting at family-wise level ``alpha`` (Holm's step-down correction
        over the tests that ran, ``burstiness`` excluded as a repeat of ``gap_cv``)."""
        names = [k for k, r in self.tests.items() if r.ran and k not in _FAMILY_EXCLUDES]
        reject = holm_reject(np.array([self.tests[k].pvalue for k in names]), alpha)
        return tuple(k for k, r in zip(names, reject) if r)

    def summary(self, alpha: float = 0.05) -> str:
        """A verdict in words: is the trace a homogeneous Poisson process?"""
        ran = [k for k, r in self.tests.items() if r.ran and k not in _FAMILY_EXCLUDES]
        if not ran:
            return f"{self.n_events} events: too few for any test."
        rej = self.rejected(alpha)
        head = (f"{self.n_events} events, rate {self.rate:.4g} {self.rate_unit}. "
                if self.rate is not None else f"{self.n_events} events. ")
        if not rej:
            return head + (f"No test rejects the homogeneous Poisson model at family-wise level {alpha:g} "
                           f"(Holm over {len(ran)} tests).")
        parts = []
        t = self.tests
        if {"ks_lilliefors", "anderson_darling", "ks_bootstrap", "ad_bootstrap", "cvm_bootstrap"} & set(rej):
            parts.append("gaps not exponential")
        if "gap_cv" in rej:
            parts.append(f"bursty (gap CV {t['gap_cv'].statistic:.2f}, B = {t['burstiness'].statistic:.2f})"
                         if t["gap_cv"].statistic > 1 else f"too regular (gap CV {t['gap_cv'].statistic:.2f})")
        if {"laplace_trend", "mil_hdbk_189"} & set(rej):
            z = t["laplace_trend"].statistic
            parts.append("rate trends " + ("up" if z is not None and z > 0 else "down") + " over time")
        if "dispersion_index" in rej:
            parts.append(f"window counts over-dispersed (index {t['dispersion_index'].statistic:.3g})")
        for k, what in (("hour_of_day", "rate varies with the hour of day"),
                        ("day_of_week", "rate varies with the day of week")):
            if k in rej:
                parts.append(what)
        if {"segments_dispersion", "time_rescaling"} & set(rej):
            parts.append(f"not Poisson even within the {self.segments.n_segments} constant-rate segments")
        elif self.segments is not None and self.segments.n_segments > 1:
            parts.append(f"a piecewise-constant rate with {self.segments.n_segments} segments fits")
        if "crawl_calibration" in rej:
            parts.append("crawl detections miscalibrated against 1 - exp(-Δτ)")
        return head + (f"The homogeneous Poisson model is rejected by {len(rej)} of {len(ran)} tests "
                       f"(Holm, family-wise {alpha:g}): " + "; ".join(parts) + ".")

    def to_dict(self) -> dict:
        """JSON-able summary: n_events, rate, and per test {statistic, pvalue, status, reading}."""
        return {
            "n_events": self.n_events,
            "rate": self.rate,
            "rate_unit": self.rate_unit,
            "n_ties": self.n_ties,
            "jittered": self.jittered,
            "n_segments": None if self.segments is None else self.segments.n_segments,
            "tests": {k: r.to_dict() for k, r in self.tests.items()},
        }


def holm_reject(pvalues: np.ndarray, alpha: float) -> np.ndarray:
    """Holm's step-down rejections: sorted p_(i) rejected while p_(j) (m - j + 1) <= alpha
    for all j <= i: the same rejections as
    ``statsmodels.stats.multitest.multipletests(method="holm")`` (tested), which runs
    ``gc.collect()`` on every call."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out = np.zeros(m, dtype=bool)
    out[order] = adjusted <= alpha
    return out


def poisson_gof(
    event_times,
    *,
    resolution: float | None = None,
    crawl_interval: float | None = None,
    n_windows: int | None = None,
    n_resamples: int = 999,
    p0: float = 0.05,
    alpha: float = 0.05,
    rng=None,
) -> PoissonGOFResult:
    """Test whether event times are a homogeneous Poisson process.

    Parameters
    ----------
    event_times : array_like, shape (n,)
        Sorted event times: floats in any time unit, or datetimes (numpy
        ``datetime64``, ``datetime`` objects, ISO-8601 strings), which become hours
        since the first event (rates per hour). Ties are allowed.
    resolution : float, optional
        Recording precision of the times (same unit: hours for datetimes). Default:
        detected: the timestamp precision for datetimes (1 s for whole seconds), the
        decimal precision for floats (0.01 for times with two decimals), else
        unknown. Tied or quantised times are jittered uniformly within it before the
        gap tests.
    crawl_interval : float, optional
        For crawl detections (times at which a crawl on a grid of this step saw a
        change): enables ``crawl_calibration`` and jitters each time within the crawl
        interval before it.
    n_windows : int, optional
        Windows for the dispersion index (default about 5 events per window,
        between 2 and 100).
    n_resamples : int, default 999
        Monte Carlo samples for the bootstrap, CV and time-rescaling p-values.
    p0 : float, default 0.05
        False-alarm probability per change point of the Bayesian-blocks segmentation.
    alpha : float, default 0.05
        Level used in the plain-words readings.
    rng : int, numpy.random.Generator or None
        Seed for the jitter, the Monte Carlo p-values and the Q-Q envelope.

    Returns
    -------
    PoissonGOFResult
        ``tests`` holds, by name: ``ks_lilliefors`` (statsmodels Lilliefors, table
        p-value in [0.001, 0.99]), ``anderson_darling`` (Stephens' table, p in
        [0.01, 0.15]), ``ks_bootstrap``, ``ad_bootstrap``, ``cvm_bootstrap``
        (``scipy.stats.goodness_of_fit``), ``laplace_trend``, ``mil_hdbk_189``,
        ``dispersion_index``, ``hour_of_day``, ``day_of_week`` (UTC; datetimes only),
        ``gap_cv``, ``burstiness`` (Goh-Barabási B, same p-value as ``gap_cv``),
        ``segments_dispersion``, ``time_rescaling`` and ``crawl_calibration``
        (crawl detections only).

    Raises
    ------
    ValueError
        For NaN/NaT/None, unparsable, unsorted times or mixed time zones (naming the
        row), or a non-positive ``resolution``, ``crawl_interval``, ``n_windows``,
        ``n_resamples``, ``p0`` or ``alpha`` outside (0, 1).
    TypeError
        For times that are neither numbers nor datetimes.

    Warns
    -----
    StatisticalWarning
        When tied times of unknown resolution make the gap tests inapplicable, or when
        a crawl interval is a sizeable fraction of the mean gap (gap tests approximate).

    Notes
    -----
    Gap tests use the gaps t_{i+1} - t_i, i.i.d. Exp(Δ) under H0, with Δ estimated
    by 1 / mean gap: plain KS with that plug-in rate would be far too conservative, so
    the p-values come from tables for the estimated-parameter case or from a
    parametric bootstrap. Count and trend tests condition on t_1 and t_n, given which
    the inner events are i.i.d. uniform on (t_1, t_n). Tests that cannot run return
    "insufficient data" (no p-value) instead of failing. ``summary()`` combines the
    tests with Holm's correction.

    References
    ----------
    Paper (online_change_rate_estimators), Section 4.1 (Experiment 1): the Q-Q check
    of exponential gaps on a Wikipedia trace. Lilliefors, H. W. (1969), JASA 64,
    387-389. Stephens, M. A. (1974), JASA 69, 730-737. Cox and Lewis (1966), The
    Statistical Analysis of Series of Events. Scargle, J. D. et al. (2013), ApJ 764, 167
    (Bayesian blocks). Brown, E. N. et al. (2002), Neural Computation 14, 325-346.

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes.diagnostics import poisson_gof
    >>> t = np.cumsum(np.random.default_rng(3).exponential(2.0, 300))
    >>> res = poisson_gof(t, n_resamples=199, rng=0)
    >>> res.n_events, round(res.rate, 2)
    (300, 0.43)
    >>> res.tests["ks_lilliefors"].pvalue > 0.05, res.rejected()
    (True, ())
    """
    if resolution is not None:
        check_positive_scalar(resolution, name="resolution")
    if crawl_interval is not None:
        check_positive_scalar(crawl_interval, name="crawl_interval")
    if n_windows is not None:
        check_positive_int(n_windows, name="n_windows", minimum=2)
    n_resamples = check_positive_int(n_resamples, name="n_resamples", minimum=19)
    for nm, v in (("p0", p0), ("alpha", alpha)):
        check_positive_scalar(v, name=nm)
        if not v < 1:
            raise ValueError(f"`{nm}` must be in (0, 1); got {v}")
    gen = as_generator(rng)
    prep = prepare_events(event_times, resolution=resolution, crawl_interval=crawl_interval, rng=gen)
    for caveat in prep.caveats:
        warnings.warn(caveat, StatisticalWarning, stacklevel=2)

    times, n = prep.times, prep.times.size
    span = float(prep.raw[-1] - prep.raw[0]) if n else 0.0
    gaps = prep.gaps
    rate = (n - 1) / float(prep.raw[-1] - prep.raw[0]) if n > 1 and prep.raw[-1] > prep.raw[0] else None

    tests: dict[str, DiagnosticResult] = {}
    if prep.gap_tests_valid:
        tests["ks_lilliefors"] = lilliefors_test(gaps, alpha=alpha)
        tests["anderson_darling"] = anderson_test(gaps, alpha=alpha)
        for s in ("ks", "ad", "cvm"):
            r = bootstrap_test(gaps, s, n_resamples=n_resamples, rng=gen, alpha=alpha)
            tests[r.name] = r
        tests["gap_cv"], tests["burstiness"] = burstiness_results(gaps, n_resamples=n_resamples, rng=gen,
                                                                  alpha=alpha)
    else:
        why = f"{prep.n_ties} tied time(s) of unknown resolution (pass `resolution`)"
        tests.update({k: not_applicable(k, why) for k in GAP_TESTS})
    tests["laplace_trend"] = laplace_result(times, alpha=alpha)
    if not prep.gap_tests_valid and n > 2 and np.any(times[1:-1] == times[0]):
        tests["mil_hdbk_189"] = not_applicable("mil_hdbk_189", "inner events tied with the first event")
    else:
        tests["mil_hdbk_189"] = mil_hdbk_189_result(times, alpha=alpha)
    tests["dispersion_index"] = dispersion_result(times, n_windows=n_windows, alpha=alpha)
    tests["hour_of_day"] = seasonality_result(times, prep.hours_since_monday, "hour_of_day", alpha=alpha)
    tests["day_of_week"] = seasonality_result(times, prep.hours_since_monday, "day_of_week", alpha=alpha)
    segments = fit_segments(times, p0=p0) if n >= 2 and times[-1] > times[0] else None
    if segments is None:
        for k in ("segments_dispersion", "time_rescaling"):
            tests[k] = insufficient(k, f"{n} event(s) spanning {span:g}: nothing to segment")
    else:
        tests["segments_dispersion"] = segments_dispersion_result(times, segments, alpha=alpha)
        if prep.gap_tests_valid:
            tests["time_rescaling"] = time_rescaling_result(times, segments, n_resamples=n_resamples, rng=gen,
                                                            alpha=alpha)
    tests["crawl_calibration"] = calibration_result(prep.raw, prep.crawl_interval, rng=gen, alpha=alpha)
    qq = exponential_qq(gaps, rng=gen) if prep.gap_tests_valid else exponential_qq(np.zeros(0))
    return PoissonGOFResult(
        n_events=int(n),
        rate=None if rate is None else float(rate),
        rate_unit=prep.rate_unit,
        span=span,
        qq=qq,
        tests=MappingProxyType({k: tests[k] for k in TEST_NAMES}),
        segments=segments,
        n_ties=prep.n_ties,
        resolution=prep.resolution,
        jittered=prep.jittered,
        notes=prep.notes,
        origin=prep.origin,
        times=prep.raw,
    )
