"""Diagnostics of the homogeneous-Poisson assumption on event traces.

:func:`poisson_gof` runs every check on one trace (floats in any time unit, or
datetimes, which become hours): exponential gaps (Lilliefors, Anderson-Darling,
parametric-bootstrap KS/AD/CvM), trend (Laplace, MIL-HDBK-189), dispersion of window
counts, hour-of-day and day-of-week seasonality, burstiness (gap CV, Goh-Barabási B),
a Bayesian-blocks piecewise-constant rate with Poisson tests within its segments and
the time-rescaling theorem. Crawl detections (times at which regular crawls saw a
change) are tested as independent crawls on their grid instead, with exact nulls
(geometric gaps, uniform detection slots), plus the calibration of
P(I = 1 | τ) = 1 - exp(-Δτ). Ties and quantised times are handled by jitter within
the recording resolution; too few events give "insufficient data", not an error.

:func:`interval_calibration` tests a crawl history itself (pages of any length, any
crawl schedule with varied intervals): P(I = 1 | τ) = 1 - exp(-Δτ) by interval bins.

The statistics the checks are built from, vectorised over many traces, for the
validation studies: :func:`edf_statistics`, :func:`lilliefors_pvalues`,
:func:`laplace_statistic`, :func:`mil_hdbk_189_statistic`, :func:`dispersion_statistic`,
:func:`seasonality_statistic`, :func:`gap_cv`, :func:`fit_segments`,
:func:`segments_dispersion_result`, :func:`time_rescaling_result`, :func:`crawl_grid`,
:func:`grid_results`, :func:`fit_rate_grouped`, :func:`g_statistic`,
:func:`window_multiples`, :func:`cochran_ok` and :func:`default_n_windows`.
"""

from ._burstiness import gap_cv
from ._counts import cochran_ok, default_n_windows, dispersion_statistic, seasonality_statistic
from ._crawl import crawl_calibration, fit_rate_grouped, g_statistic, window_multiples
from ._exponential import edf_statistics, lilliefors_pvalues
from ._gof import CRAWL_TESTS, GAP_TESTS, TEST_NAMES, PoissonGOFResult, poisson_gof
from ._grid import CrawlGrid, crawl_grid, grid_results
from ._history import IntervalCalibration, interval_calibration
from ._plots import RateSeries, plot_qq, plot_rate, rate_over_time
from ._qq import QQData, exponential_qq
from ._result import DiagnosticResult
from ._segments import Segments, fit_segments, segment_rates, segments_dispersion_result, time_rescaling_result
from ._trend import laplace_statistic, mil_hdbk_189_statistic

__all__ = [
    "CRAWL_TESTS",
    "CrawlGrid",
    "DiagnosticResult",
    "GAP_TESTS",
    "IntervalCalibration",
    "PoissonGOFResult",
    "QQData",
    "RateSeries",
    "Segments",
    "TEST_NAMES",
    "cochran_ok",
    "crawl_calibration",
    "crawl_grid",
    "default_n_windows",
    "dispersion_statistic",
    "edf_statistics",
    "exponential_qq",
    "fit_rate_grouped",
    "fit_segments",
    "g_statistic",
    "gap_cv",
    "grid_results",
    "interval_calibration",
    "laplace_statistic",
    "lilliefors_pvalues",
    "mil_hdbk_189_statistic",
    "plot_qq",
    "plot_rate",
    "poisson_gof",
    "rate_over_time",
    "seasonality_statistic",
    "segment_rates",
    "segments_dispersion_result",
    "time_rescaling_result",
    "window_multiples",
]
