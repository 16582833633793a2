"""Event times made ready for the tests: parsing, scale, ties, quantisation, jitter, crawl grid."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._event_times import as_event_times
from .._rng import as_generator
from .._validation import check_positive_scalar
from ._grid import CrawlGrid, crawl_grid

__all__ = ["PreparedEvents", "prepare_events", "decimal_resolution", "time_scale"]

# jitter when the recording resolution is at least this fraction of the mean gap
_QUANTISED = 1e-3
_EPOCH_MONDAY_HOURS = 96.0  # 1970-01-05 00:00 UTC, the first Monday after the epoch


@dataclass(frozen=True)
class PreparedEvents:
    """Event times ready for testing (internal).

    ``times`` are sorted floats (hours for datetimes) after any jitter, in units of
    ``scale`` input units (see :func:`time_scale`); ``raw`` the same without jitter;
    ``given`` the times as given (hours for datetimes). For crawl detections ``times``
    are the nominal crawl times ``raw[0] + slot * c`` of ``grid``.
    ``hours_since_monday`` is the absolute clock (UTC hours since the Monday
    1970-01-05 00:00) of ``times == 0`` for datetime input, else None. Resolution and
    crawl interval are in the same (scaled) unit as ``times``.
    """

    times: np.ndarray
    raw: np.ndarray
    given: np.ndarray
    scale: float
    unit: str
    origin: np.datetime64 | None
    hours_since_monday: float | None
    n_ties: int
    resolution: float
    jittered: str | None  # None or "within resolution"
    gap_tests_valid: bool
    crawl_interval: float | None
    grid: CrawlGrid | None
    degenerate: str | None  # why no test can run (all times equal), else None
    notes: tuple[str, ...]
    caveats: tuple[str, ...] = ()  # the notes that change how results read: warned about

    @property
    def gaps(self) -> np.ndarray:
        return np.diff(self.times)

    @property
    def rate_unit(self) -> str:
        return "per hour" if self.unit == "hours" else "per input time unit"


def time_scale(values: np.ndarray) -> float:
    """A power of two S by which float times are divided before testing: 1.0 unless the
    mean gap is outside [1e-100, 1e100] or a time exceeds 1e200 in magnitude, where
    squares of gaps (variances) would overflow or underflow; then S is the power of two
    nearest the mean gap. Dividing by a power of two is exact, and every test is
    invariant to the time unit, so only reported rates, spans and quantiles change unit.

    Raises
    ------
    ValueError
        If the span t_n - t_1 exceeds the largest float (it cannot be represented).

    Examples
    --------
    >>> time_scale(np.array([0.0, 1.0, 3.0])), time_scale(np.array([0.0, 2.0**400, 2.0**401]))
    (1.0, 2.5822498780869086e+120)
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2:
        return 1.0
    half_span = x[-1] / 2 - x[0] / 2  # finite even when the span is not
    if half_span > np.finfo(np.float64).max / 2:
        raise ValueError(
            f"`event_times` span from {x[0]:g} to {x[-1]:g} exceeds the float range; express the times in a larger unit"
        )
    mean_gap = 2 * half_span / (x.size - 1)
    big = max(abs(x[0]), abs(x[-1]))
    if (mean_gap == 0 or 1e-100 <= mean_gap <= 1e100) and big <= 1e200:
        return 1.0
    ref = mean_gap if mean_gap > 0 else big
    return float(2.0 ** np.round(np.log2(ref)))


def decimal_resolution(values: np.ndarray, max_decimals: int = 6) -> float:
    """Recording precision of float times: 10**-d for the smallest d <= ``max_decimals``
    with every value a multiple of 10**-d (1.0 for whole numbers), else 0.0 (none).

    Examples
    --------
    >>> decimal_resolution(np.array([0.5, 1.25, 3.0]))
    0.01
    >>> decimal_resolution(np.array([0.1234567891, 2.0])), decimal_resolution(np.array([1e-200, 3e-200]))
    (0.0, 0.0)
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return 0.0
    for d in range(max_decimals + 1):
        scaled = x * 10.0**d
        whole = np.round(scaled)
        # every value a multiple of 10**-d, and none below it rounded to zero (1e-200 is not a whole number)
        if np.all(np.abs(scaled - whole) <= 1e-9 * np.maximum(1.0, np.abs(scaled))) and np.all((x == 0) | (whole != 0)):
            return 10.0**-d
    return 0.0


def prepare_events(event_times, *, resolution=None, crawl_interval=None, rng=None, name="event_times"):
    """Parse, rescale extreme float times, count ties, detect quantisation, jitter where
    needed, and place crawl detections on their grid.

    Jitter: a time recorded on a grid of step r stands for an unknown time in a cell
    of width r; under a homogeneous Poisson process the positions inside the cells
    are i.i.d. uniform given the counts, so adding U(0, r) to every time gives back a
    Poisson process exactly: gap tests on jittered times are valid, on rounded times
    they are not. Crawl detections are not jittered: a detection says only that at
    least one change fell in its crawl interval, so they are tested as a 0/1 sequence
    on the crawl grid (see ``_grid``).
    """
    et = as_event_times(event_times, name=name)
    given = et.values
    scale = time_scale(given) if et.unit != "hours" else 1.0
    raw = given / scale
    gen = as_generator(rng)
    notes: list[str] = []
    caveats: list[str] = []
    gaps = np.diff(raw)
    n_ties = int(np.sum(gaps == 0))
    mean_gap = float(raw[-1] - raw[0]) / max(raw.size - 1, 1) if raw.size > 1 else 0.0
    unit_word = "h" if et.unit == "hours" else "time units"
    if scale != 1.0:
        notes.append(
            f"times were divided by {scale:.6g} (a power of two, exact) for the computations; rates, "
            "spans and quantiles are reported in the input unit"
        )

    if crawl_interval is not None:
        crawl_interval = check_positive_scalar(crawl_interval, name="crawl_interval") / scale
    resolution_given = resolution is not None
    if resolution_given:
        resolution = float(check_positive_scalar(resolution, name="resolution")) / scale
    elif crawl_interval is not None:
        resolution = crawl_interval
    elif et.resolution is not None:
        resolution = et.resolution
    else:
        resolution = decimal_resolution(given) / scale

    times = raw
    jittered = None
    gap_tests_valid = True
    grid = None
    degenerate = None
    if raw.size >= 2 and raw[-1] == raw[0]:
        degenerate = f"all {raw.size} events at the same time (zero span)"
        gap_tests_valid = False
        caveats.append(f"{degenerate}: there is no rate and no spacing to test; every test reports insufficient data")
        notes.append(caveats[-1])
    elif crawl_interval is not None and raw.size:
        grid = crawl_grid(raw, crawl_interval)
        times = raw[0] + grid.slots * crawl_interval
        gap_tests_valid = False
        notes.append(
            f"crawl detections: tested as detections of independent crawls every {crawl_interval * scale:.4g} "
            f"{unit_word} ({grid.n_crawls} crawls from the first to the last detection, q̂ = "
            f"{grid.detection_probability:.3g} per crawl); gaps are whole numbers of crawl intervals, "
            "geometric under H0"
            if grid.n_crawls
            else "crawl detections"
        )
        if raw.size > 1 and grid.n_off_grid > 0.05 * raw.size:
            caveats.append(
                f"the detections do not sit on a regular crawl grid of step {crawl_interval * scale:.4g}: "
                f"{grid.n_off_grid} of {raw.size} are more than c/4 off their crawl's nominal time "
                f"({grid.n_shifted} of them followed the previous detection by less than c/2 and were moved to the "
                "next crawl); the crawl tests assume a regular schedule, so a rejection may reflect the schedule "
                "as well as the changes"
            )
            notes.append(caveats[-1])
        if n_ties:
            notes.append(f"{n_ties} tied detection time(s): each moved to the next free crawl")
    elif resolution > 0 and raw.size and (n_ties > 0 or (mean_gap > 0 and resolution >= _QUANTISED * mean_gap)):
        times = np.sort(raw + gen.uniform(0.0, resolution, raw.size))
        jittered = "within resolution"
        why = f"{n_ties} tied time(s)" if n_ties else "times quantised"
        source = (
            "given"
            if resolution_given
            else "the timestamp precision"
            if et.resolution is not None
            else "inferred from the decimals"
        )
        notes.append(
            f"{why} at resolution {resolution * scale:.4g} {unit_word} ({source}): each time was jittered "
            "uniformly within its resolution cell, which restores a Poisson process exactly under H0; gap tests "
            "use the jittered times"
        )
        if n_ties and not resolution_given:
            caveats.append(
                f"{n_ties} zero gap(s) (tied times): the gap tests use times jittered within the resolution "
                f"{resolution * scale:.4g} {unit_word} ({source}); pass `resolution` if the times were recorded "
                "more coarsely"
            )
    elif n_ties > 0:
        gap_tests_valid = False
        caveats.append(
            f"{n_ties} zero gap(s) (tied times) and the recording resolution is unknown: the exponential "
            "gap tests do not apply (pass `resolution` to jitter within it); count-based tests use all "
            "events"
        )
        notes.append(caveats[-1])

    hours_since_monday = None
    if et.origin is not None:
        origin_h = et.origin.astype("datetime64[us]").astype(np.int64) / 3.6e9
        hours_since_monday = float(origin_h - _EPOCH_MONDAY_HOURS)
    return PreparedEvents(
        times=times,
        raw=raw,
        given=given,
        scale=scale,
        unit=et.unit,
        origin=et.origin,
        hours_since_monday=hours_since_monday,
        n_ties=n_ties,
        resolution=float(resolution),
        jittered=jittered,
        gap_tests_valid=gap_tests_valid,
        crawl_interval=crawl_interval,
        grid=grid,
        degenerate=degenerate,
        notes=tuple(notes),
        caveats=tuple(caveats),
    )
