"""Event times made ready for the tests: parsing, ties, quantisation and jitter."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._rng import as_generator
from .._times import as_event_times
from .._validation import check_positive_scalar

__all__ = ["PreparedEvents", "prepare_events", "decimal_resolution"]

# jitter when the recording resolution is at least this fraction of the mean gap
_QUANTISED = 1e-3
_EPOCH_MONDAY_HOURS = 96.0  # 1970-01-05 00:00 UTC, the first Monday after the epoch


@dataclass(frozen=True)
class PreparedEvents:
    """Event times ready for testing (internal).

    ``times`` are sorted floats (hours for datetimes) after any jitter; ``raw`` as
    given. ``hours_since_monday`` is the absolute clock (UTC hours since the Monday
    1970-01-05 00:00) of ``times == 0`` for datetime input, else None.
    """

    times: np.ndarray
    raw: np.ndarray
    unit: str
    origin: np.datetime64 | None
    hours_since_monday: float | None
    n_ties: int
    resolution: float
    jittered: str | None  # None, "within resolution" or "within crawl interval"
    gap_tests_valid: bool
    crawl_interval: float | None
    notes: tuple[str, ...]
    caveats: tuple[str, ...] = ()  # the notes that change how results read: warned about

    @property
    def gaps(self) -> np.ndarray:
        return np.diff(self.times)

    @property
    def rate_unit(self) -> str:
        return "per hour" if self.unit == "hours" else "per input time unit"


def decimal_resolution(values: np.ndarray, max_decimals: int = 6) -> float:
    """Recording precision of float times: 10**-d for the smallest d <= ``max_decimals``
    with every value a multiple of 10**-d (1.0 for whole numbers), else 0.0 (none).

    Examples
    --------
    >>> decimal_resolution(np.array([0.5, 1.25, 3.0]))
    0.01
    >>> decimal_resolution(np.array([0.1234567891, 2.0]))
    0.0
    """
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0:
        return 0.0
    for d in range(max_decimals + 1):
        scaled = x * 10.0**d
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
            return 10.0**-d
    return 0.0


def prepare_events(event_times, *, resolution=None, crawl_interval=None, rng=None, name="event_times"):
    """Parse, count ties, detect quantisation and jitter where needed.

    Jitter: a time recorded on a grid of step r stands for an unknown time in a cell
    of width r; under a homogeneous Poisson process the positions inside the cells
    are i.i.d. uniform given the counts, so adding U(0, r) to every time (U(-c, 0)
    for a crawl detection, which follows the change) gives back a Poisson process
    exactly: gap tests on jittered times are valid, on rounded times they are not.
    """
    et = as_event_times(event_times, name=name)
    raw = et.values
    gen = as_generator(rng)
    notes: list[str] = []
    caveats: list[str] = []
    gaps = np.diff(raw)
    n_ties = int(np.sum(gaps == 0))
    mean_gap = float(raw[-1] - raw[0]) / max(raw.size - 1, 1) if raw.size > 1 else 0.0

    if crawl_interval is not None:
        crawl_interval = check_positive_scalar(crawl_interval, name="crawl_interval")
    if resolution is not None:
        resolution = float(check_positive_scalar(resolution, name="resolution"))
    elif crawl_interval is not None:
        resolution = crawl_interval
    elif et.resolution is not None:
        resolution = et.resolution
    else:
        resolution = decimal_resolution(raw)

    times = raw
    jittered = None
    gap_tests_valid = True
    if crawl_interval is not None and raw.size:
        times = np.sort(raw - gen.uniform(0.0, crawl_interval, raw.size))
        jittered = "within crawl interval"
        notes.append(
            f"crawl detections: each time was moved to a uniform point of the crawl interval "
            f"({crawl_interval:.4g}) before it, where the change happened"
        )
        if mean_gap > 0 and crawl_interval / mean_gap > 0.05:
            caveats.append(
                f"the crawl interval is {crawl_interval / mean_gap:.2f} of the mean gap: changes that fall in "
                "the same crawl interval merge into one detection, so gap tests are approximate; "
                "crawl_calibration is the exact test for crawl data"
            )
            notes.append(caveats[-1])
    elif resolution > 0 and raw.size and (n_ties > 0 or (mean_gap > 0 and resolution >= _QUANTISED * mean_gap)):
        times = np.sort(raw + gen.uniform(0.0, resolution, raw.size))
        jittered = "within resolution"
        why = f"{n_ties} tied time(s)" if n_ties else "times quantised"
        notes.append(
            f"{why} at resolution {resolution:.4g} {'h' if et.unit == 'hours' else 'time units'}: "
            "each time was jittered uniformly within its resolution cell, which restores a Poisson "
            "process exactly under H0; gap tests use the jittered times"
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
        unit=et.unit,
        origin=et.origin,
        hours_since_monday=hours_since_monday,
        n_ties=n_ties,
        resolution=float(resolution),
        jittered=jittered,
        gap_tests_valid=gap_tests_valid,
        crawl_interval=crawl_interval,
        notes=tuple(notes),
        caveats=tuple(caveats),
    )

