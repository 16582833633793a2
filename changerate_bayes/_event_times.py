"""Parsing of event times: floats in any time unit, or datetimes.

Datetimes are converted to hours since the first event, so rates computed from them
are *per hour*. Floats are kept in the caller's unit.
"""

from __future__ import annotations

import datetime as _dt
import numbers
from collections.abc import Mapping, Set
from dataclasses import dataclass

import numpy as np

__all__ = ["EventTimes", "as_event_times", "parse_timestamps"]

_HOUR = np.timedelta64(3600, "s")


@dataclass(frozen=True)
class EventTimes:
    """Event times as floats, with where they came from.

    Attributes
    ----------
    values : ndarray of float, shape (n,)
        Times, sorted ascending (ties allowed). Hours since ``origin`` for datetimes,
        else the caller's own unit.
    unit : str
        ``"hours"`` for datetime input, ``"input units"`` for float input.
    origin : numpy.datetime64 or None
        The first event's UTC time (datetime input only).
    resolution : float or None
        Datetime input only: the recording precision of the timestamps in hours, the
        coarsest of 1 day, 1 hour, 1 minute, 1 s, 1 ms and 1 µs that divides every
        timestamp (1/3600 for whole seconds). None for float input.
    """

    values: np.ndarray
    unit: str
    origin: np.datetime64 | None = None
    resolution: float | None = None


def _row_error(name: str, row: int, what: str) -> ValueError:
    """ "`x` row 3: ..." for an argument name; "<phrase> 3: ..." for a label such as
    "trace file data.csv line" (so that a file's errors name its line)."""
    return ValueError(f"{_row_ref(name, row)}: {what}")


def _row_ref(name: str, row: int) -> str:
    return f"`{name}` row {row}" if name.isidentifier() else f"{name} {row}"


def _other_row(name: str, row: int) -> str:
    return f"row {row}" if name.isidentifier() else f"{name.rsplit(' ', 1)[-1]} {row}"


def parse_timestamps(items, *, name: str = "event_times", row_offset: int = 0) -> np.ndarray:
    """Parse ISO-8601 strings or datetime objects into UTC ``datetime64[us]``.

    A time with a UTC offset (``+02:00``, ``Z``, or an aware ``datetime`` in any zone) is
    an exact instant and is converted to UTC: rows may carry different offsets, as the
    times of one zone do across a daylight-saving change. A naive time (no offset) is
    taken as UTC. Naive and aware times together are refused: the zone of the naive ones
    is unknown, so their order and gaps against the aware ones are not defined.

    Raises
    ------
    ValueError
        For an unparsable value, NaT/None, or naive times mixed with aware ones, naming
        the row (``row_offset`` is added, e.g. to give a file's line number).
    """
    out = np.empty(len(items), dtype="datetime64[us]")
    first_offset = None
    first_row = None
    for i, item in enumerate(items):
        row = i + row_offset
        if isinstance(item, np.datetime64):
            if np.isnat(item):
                raise _row_error(name, row, "is NaT (missing time)")
            out[i] = item.astype("datetime64[us]")
            offset: _dt.timedelta | str | None = "naive"
        else:
            if item is None or (isinstance(item, float) and np.isnan(item)):
                raise _row_error(name, row, "is missing (None/NaN)")
            if isinstance(item, str):
                text = item.strip()
                try:
                    d = _dt.datetime.fromisoformat(text)
                except ValueError:
                    raise _row_error(name, row, f"cannot parse {str(item)!r} as an ISO-8601 timestamp") from None
            elif isinstance(item, _dt.datetime):
                d = item
                if str(d) == "NaT":  # pandas.NaT is a datetime subclass
                    raise _row_error(name, row, "is NaT (missing time)")
            else:
                raise _row_error(name, row, f"expected a timestamp, got {type(item).__name__}")
            if d.tzinfo is not None and d.utcoffset() is not None:
                offset = d.utcoffset()
                d = d.astimezone(_dt.UTC).replace(tzinfo=None)
            else:
                offset = "naive"
            out[i] = np.datetime64(d, "us")
        if first_offset is None:
            first_offset, first_row = offset, row
        elif (offset == "naive") != (first_offset == "naive"):
            assert first_row is not None  # set with first_offset
            raise _row_error(
                name,
                row,
                f"time zone {_fmt_offset(offset)} differs from {_fmt_offset(first_offset)} "
                f"at {_other_row(name, first_row)}: naive times (no UTC offset) mixed with time-zone-aware ones "
                "are ambiguous; give every time a UTC offset, or none",
            )
    return out


def _fmt_offset(offset) -> str:
    if offset == "naive":
        return "none (naive)"
    return f"UTC{'+' if offset >= _dt.timedelta(0) else '-'}{abs(offset)}"


_RESOLUTIONS_US = (86_400_000_000, 3_600_000_000, 60_000_000, 1_000_000, 1_000, 1)


def _resolution_hours(stamps: np.ndarray) -> float | None:
    """Coarsest of 1 day ... 1 µs dividing every ``datetime64[us]`` stamp, in hours."""
    if stamps.size == 0:
        return None
    ticks = stamps.astype(np.int64)
    for r in _RESOLUTIONS_US:
        if not np.any(ticks % r):
            return r / 3.6e9
    return 1 / 3.6e9  # pragma: no cover - every integer is a multiple of 1 µs


def _numbers_or_missing(arr: np.ndarray) -> bool:
    """True for an object array of real numbers in which some entries are missing."""
    kinds = [
        None
        if (v is None or (isinstance(v, float) and np.isnan(v)))
        else isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
        for v in arr
    ]
    return any(k is None for k in kinds) and all(k is not False for k in kinds)


#: integers up to 2**53 convert to float64 exactly
_EXACT_INT = 2**53


def _integer_offsets(arr: np.ndarray, *, name: str, require_sorted: bool) -> np.ndarray:
    """Integer times beyond 2**53 as float offsets from the first, subtracted exactly.

    Converting such times to float64 first would round neighbours to the same value;
    the differences are taken in integer arithmetic (modulo 2**64, exact for sorted
    times of one dtype, whose span is below 2**64) and only then converted.
    """
    if require_sorted:
        dec = arr[1:] < arr[:-1]
        if dec.any():
            i = int(np.flatnonzero(dec)[0]) + 1
            raise _row_error(name, i, f"is earlier than row {i - 1}; event times must be sorted ascending")
    u = arr.astype(np.uint64)  # two's complement: differences modulo 2**64 are exact
    first = u[0] if require_sorted else u[int(np.argmin(arr))]
    return (u - first).astype(np.float64)


def as_event_times(x, *, name: str = "event_times", require_sorted: bool = True) -> EventTimes:
    """Convert event times to floats.

    Parameters
    ----------
    x : array_like of float, datetime64, datetime or ISO-8601 str, shape (n,)
        Event times. Floats are in any time unit; datetimes become hours.
    name : str
        Argument name used in error messages.
    require_sorted : bool
        Refuse times that decrease (ties are allowed).

    Raises
    ------
    TypeError
        If ``x`` is not a sequence (a string, a number, a mapping, a set) or holds
        values that are neither numbers nor datetimes.
    ValueError
        If ``x`` is not one-dimensional (nested or ragged sequences), or for
        NaN/NaT/None/unparsable values, naive times mixed with time-zone-aware ones,
        or decreasing times, naming the row.

    Notes
    -----
    Ties (equal times) are kept: zero gaps are data, never dropped here. Integer
    times beyond 2**53 in magnitude (e.g. nanoseconds since the epoch) become offsets
    from the first time, subtracted in integer arithmetic so that no precision is
    lost. Aware times
    are exact instants whatever their UTC offsets (``+01:00`` and ``+02:00`` rows of one
    zone across a daylight-saving change are fine) and are converted to UTC.
    """
    if isinstance(x, (str, bytes)):
        raise TypeError(f"`{name}` must be a sequence of times, not a single string")
    if x is None or isinstance(x, (Mapping, Set)):
        raise TypeError(f"`{name}` must be an ordered sequence of times (list, tuple or array); got {type(x).__name__}")
    try:
        arr = np.asarray(x)
    except ValueError:  # numpy: "setting an array element with a sequence ... inhomogeneous shape"
        raise ValueError(
            f"`{name}` must be a one-dimensional sequence of times; got a nested sequence of unequal lengths"
        ) from None
    if arr.ndim == 0:
        raise TypeError(f"`{name}` must be a sequence of times; got a single {type(x).__name__}")
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be one-dimensional; got shape {arr.shape}")
    if arr.dtype.kind == "O" and arr.size and _numbers_or_missing(arr):
        i = next(i for i, v in enumerate(arr) if v is None or (isinstance(v, float) and np.isnan(v)))
        raise _row_error(name, i, "is missing (None/NaN); times must be finite numbers")
    resolution = None
    if arr.dtype.kind in "iu" and arr.size and (int(arr.max()) > _EXACT_INT or int(arr.min()) < -_EXACT_INT):
        values = _integer_offsets(arr, name=name, require_sorted=require_sorted)
        unit, origin = "input units", None
    elif arr.dtype.kind in "iuf" and arr.dtype != bool:
        values = arr.astype(np.float64)
        bad = ~np.isfinite(values)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise _row_error(name, i, f"is {values[i]}; times must be finite")
        unit, origin = "input units", None
    elif arr.dtype.kind == "M":
        nat = np.isnat(arr)
        if nat.any():
            raise _row_error(name, int(np.flatnonzero(nat)[0]), "is NaT (missing time)")
        stamps = arr.astype("datetime64[us]")
        origin = stamps[0] if stamps.size else None
        values = (stamps - origin) / _HOUR if stamps.size else np.zeros(0)
        unit, resolution = "hours", _resolution_hours(stamps)
    elif arr.dtype.kind in "OU":
        stamps = parse_timestamps(list(arr), name=name)
        origin = stamps[0] if stamps.size else None
        values = (stamps - origin) / _HOUR if stamps.size else np.zeros(0)
        unit, resolution = "hours", _resolution_hours(stamps)
    else:
        raise TypeError(f"`{name}` must hold numbers or datetimes; got dtype {arr.dtype}")
    values = np.asarray(values, dtype=np.float64)
    if require_sorted and values.size > 1:
        dec = values[1:] < values[:-1]  # not np.diff: the difference of huge times may overflow
        if dec.any():
            i = int(np.flatnonzero(dec)[0]) + 1
            raise _row_error(name, i, f"is earlier than row {i - 1}; event times must be sorted ascending")
    return EventTimes(values=values, unit=unit, origin=origin, resolution=resolution)
