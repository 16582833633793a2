"""``poisson_gof``: every check of the homogeneous-Poisson assumption on one trace."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .._event_times import as_event_times
from .._rng import as_generator
from .._validation import StatisticalWarning, check_positive_int, check_positive_scalar
from ._burstiness import burstiness_results, window_burstiness_results
from ._counts import dispersion_result, seasonality_result
from ._crawl import calibration_result
from ._exponential import anderson_test, bootstrap_test, lilliefors_test
from ._grid import CrawlGrid, grid_results
from ._prep import prepare_events
from ._qq import QQData, exponential_qq
from ._result import DiagnosticResult, insufficient, not_applicable
from ._segments import Segments, fit_segments, segments_dispersion_result, time_rescaling_result
from ._trend import laplace_result, mil_hdbk_189_result

__all__ = ["PoissonGOFResult", "poisson_gof", "TEST_NAMES", "GAP_TESTS", "CRAWL_TESTS"]

#: Keys of ``PoissonGOFResult.tests``, in report order.
TEST_NAMES = (
    "ks_lilliefors",
    "anderson_darling",
    "ks_bootstrap",
    "ad_bootstrap",
    "cvm_bootstrap",
    "geometric_gaps",
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

#: Tests that read the gaps of exact event times as exponential (invalid for tied times
#: of unknown resolution, and for crawl detections, whose gaps are whole crawl intervals).
GAP_TESTS = (
    "ks_lilliefors",
    "anderson_darling",
    "ks_bootstrap",
    "ad_bootstrap",
    "cvm_bootstrap",
    "gap_cv",
    "burstiness",
    "time_rescaling",
)

_EXACT_ONLY = ("ks_lilliefors", "anderson_darling", "ks_bootstrap", "ad_bootstrap", "cvm_bootstrap", "time_rescaling")

#: Tests that run on crawl detections (``crawl_interval`` given), in their crawl-grid
#: form with an exact null (hour and day of week need datetimes): all but those of exact times.
CRAWL_TESTS = tuple(t for t in TEST_NAMES if t not in _EXACT_ONLY)

_CRAWL_NA = (
    "crawl detections: the gaps are whole numbers of crawl intervals (geometric under a Poisson "
    "change process), not exponential; geometric_gaps tests them"
)

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
        than two distinct times. For crawl detections this is the rate of detections;
        the change rate is ``crawl_grid.change_rate``.
    rate_unit : str
        ``"per hour"`` or ``"per input time unit"``.
    span : float
        t_n - t_1 in the same unit.
    qq : QQData
        Gaps against the fitted exponential (geometric for crawl detections), with a
        simulation envelope.
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
        How times were jittered before the gap tests: None or ``"within resolution"``
        (crawl detections are never jittered: they are tested on the crawl grid).
    notes : tuple of str
        Caveats in words (ties, quantisation, crawl data).
    origin : numpy.datetime64 or None
        UTC time of the first event (datetime input), the zero of the hour axis.
    times : ndarray, shape (n,)
        The event times as given (hours since ``origin`` for datetimes), unjittered.
    crawl_grid : CrawlGrid or None
        For crawl detections: each detection's crawl slot, the detection probability
        q̂ = (n - 1)/N per crawl and the change rate -log(1 - q̂)/c, per hour for
        datetimes, per input time unit for floats.
    degenerate : str or None
        Why no test could run on these times (e.g. all equal), else None.
    window : (float, float) or None
        The observation window given, in the unit of ``times`` (hours since ``origin``
        for datetimes), or None.
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
    times: np.ndarray | None = None
    crawl_grid: CrawlGrid | None = None
    degenerate: str | None = None
    window: tuple[float, float] | None = None

    def rejected(self, alpha: float = 0.05) -> tuple[str, ...]:
        """Tests rejecting at family-wise level ``alpha`` (Holm's step-down correction
        over the tests that ran, ``burstiness`` excluded as a repeat of ``gap_cv``)."""
        names = [k for k, r in self.tests.items() if r.ran and k not in _FAMILY_EXCLUDES]
        reject = holm_reject(np.array([self.tests[k].pvalue for k in names]), alpha)
        return tuple(k for k, r in zip(names, reject) if r)

    def summary(self, alpha: float = 0.05) -> str:
        """A verdict in words: is the trace a homogeneous Poisson process?"""
        ran = [k for k, r in self.tests.items() if r.ran and k not in _FAMILY_EXCLUDES]
        crawl = self.crawl_grid is not None
        what = "detections" if crawl else "events"
        ties = f" ({self.n_ties} tied)" if self.n_ties else ""
        if self.degenerate is not None:
            return f"{self.n_events} events{ties}: {self.degenerate}; no test can run (insufficient data)."
        if not ran:
            q_hat = None if self.crawl_grid is None else self.crawl_grid.detection_probability
            if crawl and self.n_events >= 10 and q_hat is not None and q_hat >= 1:
                return (
                    f"{self.n_events} {what}{ties}: every crawl from the first to the last detection saw a "
                    "change (q̂ = 1), so the change rate is not identified and no test can run; crawl more often."
                )
            return f"{self.n_events} {what}{ties}: too few for any test."
        rej = self.rejected(alpha)
        head = f"{self.n_events} {what}{ties}"
        if self.rate is not None:
            head += f", {'detection ' if crawl else ''}rate {self.rate:.4g} {self.rate_unit}"
        grid = self.crawl_grid
        if grid is not None and grid.change_rate is not None and np.isfinite(grid.change_rate):
            q_hat = grid.detection_probability
            assert q_hat is not None  # the change rate is known only with q̂
            head += (
                f" (one crawl in {1 / q_hat:.3g} detects a change: change rate {grid.change_rate:.4g} {self.rate_unit})"
            )
        head += ". "
        if not rej:
            return head + (
                f"No test rejects the homogeneous Poisson model at family-wise level {alpha:g} "
                f"(Holm over {len(ran)} tests)."
            )
        parts = []
        t = self.tests
        if {"ks_lilliefors", "anderson_darling", "ks_bootstrap", "ad_bootstrap", "cvm_bootstrap"} & set(rej):
            parts.append("gaps not exponential")
        if "geometric_gaps" in rej:
            parts.append("gaps between detections not geometric")
        if "gap_cv" in rej:
            cv, cv0 = t["gap_cv"].statistic, t["gap_cv"].details.get("expected", 1.0)
            parts.append(
                f"bursty (gap CV {cv:.2f} against {cv0:.2f} for Poisson, B = {t['burstiness'].statistic:.2f})"
                if cv > cv0
                else f"too regular (gap CV {cv:.2f} against {cv0:.2f} for Poisson)"
            )
        if {"laplace_trend", "mil_hdbk_189"} & set(rej):
            z = t["laplace_trend"].statistic
            parts.append("rate trends " + ("up" if z is not None and z > 0 else "down") + " over time")
        if "dispersion_index" in rej:
            parts.append(f"window counts over-dispersed (index {t['dispersion_index'].statistic:.3g})")
        for k, words in (
            ("hour_of_day", "rate varies with the hour of day"),
            ("day_of_week", "rate varies with the day of week"),
        ):
            if k in rej:
                parts.append(words)
        if {"segments_dispersion", "time_rescaling"} & set(rej):
            assert self.segments is not None  # both tests run only on fitted segments
            parts.append(f"not Poisson even within the {self.segments.n_segments} constant-rate segments")
        elif self.segments is not None and self.segments.n_segments > 1:
            parts.append(f"a piecewise-constant rate with {self.segments.n_segments} segments fits")
        if "crawl_calibration" in rej:
            parts.append("crawl detections miscalibrated against 1 - exp(-Δτ)")
        return head + (
            f"The homogeneous Poisson model is rejected by {len(rej)} of {len(ran)} tests "
            f"(Holm, family-wise {alpha:g}): " + "; ".join(parts) + "."
        )

    def to_dict(self) -> dict:
        """JSON-able summary: n_events, rate, the crawl grid (crawl detections), and per test
        {statistic, pvalue, status, reading}."""
        return {
            "n_events": self.n_events,
            "rate": self.rate,
            "rate_unit": self.rate_unit,
            "n_ties": self.n_ties,
            "jittered": self.jittered,
            "n_segments": None if self.segments is None else self.segments.n_segments,
            "degenerate": self.degenerate,
            "crawl_grid": None
            if self.crawl_grid is None
            else {
                "crawl_interval": self.crawl_grid.crawl_interval,
                "n_crawls": self.crawl_grid.n_crawls,
                "detection_probability": self.crawl_grid.detection_probability,
                "change_rate": self.crawl_grid.change_rate,
                "n_off_grid": self.crawl_grid.n_off_grid,
                "n_shifted": self.crawl_grid.n_shifted,
            },
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
    window=None,
) -> PoissonGOFResult:
    """Test whether event times are a homogeneous Poisson process.

    Parameters
    ----------
    event_times : array_like, shape (n,)
        Sorted event times: floats in any time unit, or datetimes (numpy
        ``datetime64``, ``datetime`` objects, ISO-8601 strings), which become hours
        since the first event (rates per hour). Ties are allowed. Times with UTC
        offsets are exact instants and may carry different offsets (one zone across a
        daylight-saving change); naive times are taken as UTC but may not be mixed
        with aware ones. Float times of extreme magnitude are rescaled internally by a
        power of two (exact); results are reported in the input unit.
    resolution : float, optional
        Recording precision of the times (same unit: hours for datetimes). Default:
        detected: the timestamp precision for datetimes (1 s for whole seconds), the
        decimal precision for floats (0.01 for times with two decimals), else
        unknown. Tied or quantised times are jittered uniformly within it before the
        gap tests.
    crawl_interval : float, optional
        For crawl detections (times at which a crawl on a regular schedule of this
        step saw a change; crawls that saw none are not recorded). The detections are
        then tested as a 0/1 sequence of independent crawls, the exact model of
        Poisson changes seen by regular crawls (see Notes), and ``crawl_calibration``
        runs.
    n_windows : int, optional
        Windows for the dispersion index (default about 5 events per window,
        between 2 and 100).
    n_resamples : int, default 999
        Monte Carlo samples for the bootstrap, CV, time-rescaling and crawl-grid
        p-values.
    p0 : float, default 0.05
        False-alarm probability per change point of the Bayesian-blocks segmentation.
    alpha : float, default 0.05
        Level used in the plain-words readings.
    rng : int, numpy.random.Generator or None
        Seed for the jitter, the Monte Carlo p-values and the Q-Q envelope.
    window : (start, end), optional
        The observation window, in the trace's time unit (floats for float times,
        datetimes or ISO-8601 strings for datetimes); it must hold every event.
        Without it the tests see only the span from the first to the last event, so a
        burst followed (or preceded) by a long quiet stretch looks regular: 36 changes
        every 2 h then 17 quiet days are 35 equal gaps. With it, ``gap_cv`` and
        ``burstiness`` take the n + 1 spacings of the n events in the window, both
        ends included; given n, Poisson events are i.i.d. uniform on the window, and
        the spacings divided by their sum are those of n + 1 i.i.d. exponential
        gaps, so the scale-free CV has exactly the null of n + 1 exponential gaps
        (Cox and Lewis 1966, ch. 2). Exact event times only (not with ``crawl_interval``).

    Returns
    -------
    PoissonGOFResult
        ``tests`` holds one result per name in :data:`TEST_NAMES`. Exact event times:
        ``ks_lilliefors`` (statsmodels Lilliefors, table p-value in [0.001, 0.99]),
        ``anderson_darling`` (Stephens' table, p in [0.01, 0.15]), ``ks_bootstrap``,
        ``ad_bootstrap``, ``cvm_bootstrap`` (``scipy.stats.goodness_of_fit``),
        ``laplace_trend``, ``mil_hdbk_189``, ``dispersion_index``, ``hour_of_day``,
        ``day_of_week`` (UTC; datetimes only), ``gap_cv``, ``burstiness`` (Goh-Barabási
        B, same p-value as ``gap_cv``), ``segments_dispersion`` and ``time_rescaling``:
        11 tests for floats, 13 for datetimes (``burstiness`` is not counted: it
        repeats ``gap_cv``). Crawl detections: ``geometric_gaps``, the crawl-grid forms
        of ``laplace_trend``, ``mil_hdbk_189``, ``dispersion_index``, ``hour_of_day``,
        ``day_of_week``, ``gap_cv``/``burstiness`` and ``segments_dispersion``, and
        ``crawl_calibration``: 7 tests for floats, 9 for datetimes (:data:`CRAWL_TESTS`);
        the exponential gap tests and ``time_rescaling`` are "not applicable" (the
        gaps are whole crawl intervals). Tests short of data say "insufficient data".

    Raises
    ------
    ValueError
        For NaN/NaT/None, unparsable, unsorted times or naive times mixed with aware
        ones (naming the row), nested or ragged ``event_times``, a span beyond the
        float range, a ``window`` that is not two times of the trace's kind with
        start < end holding every event (or given with ``crawl_interval``), or a
        non-positive ``resolution``, ``crawl_interval``,
        ``n_windows``, ``n_resamples``, ``p0`` or ``alpha`` outside (0, 1).
    TypeError
        For ``event_times`` that is not a sequence (a string, number, mapping or set)
        or holds values that are neither numbers nor datetimes.

    Warns
    -----
    StatisticalWarning
        When all times are equal (nothing can be tested); when times are tied and the
        resolution was not given (the gap tests then jitter within the detected
        resolution, or do not apply if it is unknown); when crawl detections do not
        sit on a regular grid of step ``crawl_interval``.

    Notes
    -----
    Gap tests use the gaps t_{i+1} - t_i, i.i.d. Exp(Δ) under H0, with Δ estimated
    by 1 / mean gap: plain KS with that plug-in rate would be far too conservative, so
    the p-values come from tables for the estimated-parameter case or from a
    parametric bootstrap. Count and trend tests condition on t_1 and t_n, given which
    the inner events are i.i.d. uniform on (t_1, t_n). Tests that cannot run return
    "insufficient data" (no p-value) instead of failing; a trace whose times are all
    equal is degenerate and no test runs. ``summary()`` combines the tests with
    Holm's correction.

    Cost: O(n_resamples · n log n) up to 10^4 events; above, the Bayesian-blocks
    segmentation runs on at most 4000 groups of consecutive times (change points only
    between groups: ``segments.group_size``) and the Monte Carlo nulls of the bootstrap,
    gap-CV and time-rescaling tests are simulated at 10^4 gaps with the statistics on
    their asymptotic scale (said in each test's ``details["null"]``), so the cost grows
    as O(n log n) (times for 10^4 to 10^6 events: ``benchmarks/bench_poisson_gof_scaling.py``).

    Crawl detections are not exact change times: a detection says that at least one
    change fell in its crawl interval of length c. Under Poisson changes the crawls
    detect independently with probability q = 1 - exp(-Δc), so the gaps between
    detections are whole numbers of crawl intervals, geometric, and the exponential
    gap tests have the wrong size unless c is tiny against the mean gap. The crawl
    tests condition on the first and last detections and on their number, given which
    the detection slots are a uniformly random subset of the crawls in between: Monte
    Carlo p-values from that exact null, or chi-square and normal approximations with
    its exact moments (``changerate_bayes.diagnostics._grid``).

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

    times, n, scale = prep.times, prep.times.size, prep.scale
    bounds = _window(window, prep, crawl_interval)
    span = float(prep.raw[-1] - prep.raw[0]) if n else 0.0
    rate = (n - 1) / span if n > 1 and span > 0 else None
    grid = prep.grid

    tests: dict[str, DiagnosticResult] = {}
    segments = fit_segments(times, p0=p0) if n >= 2 and times[-1] > times[0] else None
    qq = exponential_qq(np.zeros(0))
    if prep.degenerate is not None:
        tests = {k: insufficient(k, prep.degenerate) for k in TEST_NAMES}
    elif grid is not None:
        grid_tests, qq = grid_results(
            grid,
            clock0_hours=prep.hours_since_monday,
            segments=segments,
            origin=float(times[0]),
            n_windows=n_windows,
            n_resamples=n_resamples,
            rng=gen,
            alpha=alpha,
        )
        tests.update(grid_tests)
        tests.update({k: not_applicable(k, _CRAWL_NA) for k in _EXACT_ONLY})
        tests["crawl_calibration"] = calibration_result(
            prep.raw, prep.crawl_interval, rng=gen, alpha=alpha, time_scale=scale
        )
    else:
        tests.update(
            _exact_time_tests(
                prep, segments, n_windows=n_windows, n_resamples=n_resamples, rng=gen, alpha=alpha, window=bounds
            )
        )
        if prep.gap_tests_valid:
            qq = exponential_qq(prep.gaps, rng=gen)
        tests["crawl_calibration"] = calibration_result(prep.raw, None, rng=gen, alpha=alpha)
        tests["geometric_gaps"] = not_applicable(
            "geometric_gaps",
            "exact event times, not crawl detections (no `crawl_interval`): the exponential gap tests apply",
        )
    if scale != 1.0:  # report in the input unit
        qq = dataclasses.replace(
            qq,
            theoretical=qq.theoretical * scale,
            observed=qq.observed * scale,
            lower=qq.lower * scale,
            upper=qq.upper * scale,
        )
        if segments is not None:
            segments = Segments(segments.edges * scale, segments.counts, segments.rates / scale, segments.p0)
        if grid is not None:
            grid = dataclasses.replace(grid, crawl_interval=grid.crawl_interval * scale)
    return PoissonGOFResult(
        n_events=int(n),
        rate=None if rate is None else float(rate) / scale,
        rate_unit=prep.rate_unit,
        span=span * scale,
        qq=qq,
        tests=MappingProxyType({k: tests[k] for k in TEST_NAMES}),
        segments=segments,
        n_ties=prep.n_ties,
        resolution=prep.resolution * scale,
        jittered=prep.jittered,
        notes=prep.notes,
        origin=prep.origin,
        times=prep.given,
        crawl_grid=grid,
        degenerate=prep.degenerate,
        window=None if bounds is None else (float(bounds[0] * scale), float(bounds[1] * scale)),
    )


def _window(window, prep, crawl_interval):
    """The observation window ``(start, end)`` in the internal unit of ``prep.times``, or None."""
    if window is None:
        return None
    if crawl_interval is not None:
        raise ValueError("`window` applies to exact event times, not to crawl detections (`crawl_interval`)")
    if isinstance(window, (str, bytes)) or not hasattr(window, "__len__") or len(window) != 2:
        raise ValueError(f"`window` must be (start, end); got {window!r}")
    datetimes = prep.origin is not None
    try:
        if datetimes:
            w = as_event_times(list(window), name="window", require_sorted=False)
            if w.origin is None:
                raise ValueError("the events are datetimes")
            shift = (w.origin - prep.origin) / np.timedelta64(1, "h")
            start, end = (float(v + shift) for v in w.values)
        else:
            start, end = (float(v) for v in window)
            if any(isinstance(v, bool) for v in window):
                raise ValueError("not numbers")
    except (TypeError, ValueError) as exc:
        kind = "datetimes (or ISO-8601 strings)" if datetimes else "numbers in the unit of the times"
        raise ValueError(f"`window` must be two {kind}; got {window!r} ({exc})") from None
    if not (np.isfinite(start) and np.isfinite(end) and start < end):
        raise ValueError(f"`window` must have start < end, both finite; got {window!r}")
    given = prep.given
    if given.size and not (start <= given[0] and given[-1] <= end):
        raise ValueError(
            f"`window` {window!r} must hold every event: the events run from {given[0]:.6g} to {given[-1]:.6g}"
            + (" hours after the first event" if datetimes else "")
        )
    return start / prep.scale, end / prep.scale


def _exact_time_tests(
    prep, segments, *, n_windows, n_resamples, rng, alpha, window=None
) -> dict[str, DiagnosticResult]:
    """The tests of exact event times (everything but the crawl tests); with an observation ``window``
    (internal unit) the gap CV takes the spacings from the window's start to its end."""
    times, n = prep.times, prep.times.size
    gaps = prep.gaps
    tests: dict[str, DiagnosticResult] = {}
    if prep.gap_tests_valid:
        tests["ks_lilliefors"] = lilliefors_test(gaps, alpha=alpha)
        tests["anderson_darling"] = anderson_test(gaps, alpha=alpha)
        for s in ("ks", "ad", "cvm"):
            r = bootstrap_test(gaps, s, n_resamples=n_resamples, rng=rng, alpha=alpha)
            tests[r.name] = r
        if window is None:
            tests["gap_cv"], tests["burstiness"] = burstiness_results(
                gaps, n_resamples=n_resamples, rng=rng, alpha=alpha
            )
        else:
            tests["gap_cv"], tests["burstiness"] = window_burstiness_results(
                times, window, n_resamples=n_resamples, rng=rng, alpha=alpha
            )
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
    if segments is None:
        span = float(times[-1] - times[0]) if n else 0.0
        for k in ("segments_dispersion", "time_rescaling"):
            tests[k] = insufficient(k, f"{n} event(s) spanning {span * prep.scale:g}: nothing to segment")
    else:
        tests["segments_dispersion"] = segments_dispersion_result(times, segments, alpha=alpha)
        if prep.gap_tests_valid:
            tests["time_rescaling"] = time_rescaling_result(
                times, segments, n_resamples=n_resamples, rng=rng, alpha=alpha
            )
    return tests
