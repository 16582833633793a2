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
"""

from ._crawl import crawl_calibration
from ._gof import CRAWL_TESTS, GAP_TESTS, TEST_NAMES, PoissonGOFResult, poisson_gof
from ._grid import CrawlGrid
from ._history import IntervalCalibration, interval_calibration
from ._plots import RateSeries, plot_qq, plot_rate, rate_over_time
from ._qq import QQData, exponential_qq
from ._result import DiagnosticResult
from ._segments import Segments, segment_rates

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
    "crawl_calibration",
    "exponential_qq",
    "interval_calibration",
    "plot_qq",
    "plot_rate",
    "poisson_gof",
    "rate_over_time",
    "segment_rates",
]
