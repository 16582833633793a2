"""Parsing of event times: floats in any time unit, or datetimes.

Datetimes are converted to hours since the first event, so rates computed from them
are *per hour*. Floats are kept in the caller's unit.
"""

from __future__ import annotations

import datetime as _dt
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
    """

    values: np.ndarray
    unit: str
    origin: np.datetime64 | None = None


def _row_error(name: str, row: int, what: str) -> ValueError:
    return ValueError(f"`{name}` row {row}: {what}")


def parse_timestamps(items, *, name: str = "event_times", row_offset: int = 0) -> np.ndarray:
    """Parse ISO-8601 strings or datetime objects into UTC ``datetime64[us]``.

    Naive timestamps are taken as UTC. All rows must agree on being naive or aware and,
    when aware, on the UTC offset: mixed time zones are refused (convert to UTC first).

    Raises
    ------
    ValueError
        For an unparsable value, NaT/None, or mixed time zones, naming the row
        (``row_offset`` is added, e.g. to give a file's line number).
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
            offset = "naive"
        else:
            if item is None or (isinstance(item, float) and np.isnan(item)):
                raise _row_error(name, row, "is missing (None/NaN)")
            if isinstance(item, str):
                text = item.strip()
                try:
                    d = _dt.datetime.fromisoformat(text)
                except ValueError:
                    raise _row_error(name, row, f"cannot parse {item!r} as an ISO-8601 timestamp") from None
            elif isinstance(item, _dt.datetime):
                d = item
                if str(d) == "NaT":  # pandas.NaT is a datetime subclass
                    raise _row_error(name, row, "is NaT (missing time)")
            else:
                raise _row_error(name, row, f"expected a timestamp, got {type(item).__name__}")
            if d.tzinfo is not None and d.utcoffset() is not None:
                offset = d.utcoffset()
                d = d.astimezone(_dt.timezone.utc).replace(tzinfo=None)
            else:
                offset = "naive"
            out[i] = np.datetime64(d, "us")
        if first_offset is None:
            first_offset, first_row = offset, row
        elif offset != first_offset:
            raise _row_error(
                name, row, f"time zone {_fmt_offset(offset)} differs from {_fmt_offset(first_offset)} "
                f"at row {first_row}; mixed time zones are ambiguous, convert all times to UTC first"
            )
    return out


def _fmt_offset(offset) -> str:
    return "none (naive)" if offset == "naive" else f"UTC{'+' if offset >= _dt.timedelta(0) else '-'}{abs(offset)}"


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
        If ``x`` is not one-dimensional data of a supported type.
    ValueError
        For NaN/NaT/unparsable values, mixed time zones or decreasing times, naming
        the row.
    """
    if isinstance(x, (str, bytes)):
        raise TypeError(f"`{name}` must be a sequence of times, not a single string")
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be one-dimensional; got shape {arr.shape}")
    if arr.dtype.kind in "iuf" and arr.dtype != bool:
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
        unit = "hours"
    elif arr.dtype.kind in "OU":
        stamps = parse_timestamps(list(arr), name=name)
        origin = stamps[0] if stamps.size else None
        values = (stamps - origin) / _HOUR if stamps.size else np.zeros(0)
        unit = "hours"
    else:
        raise TypeError(f"`{name}` must hold numbers or datetimes; got dtype {arr.dtype}")
    values = np.asarray(values, dtype=np.float64)
    if require_sorted and values.size > 1:
        dec = np.diff(values) < 0
        if dec.any():
            i = int(np.flatnonzero(dec)[0]) + 1
            raise _row_error(name, i, f"is earlier than row {i - 1}; event times must be sorted ascending")
    return EventTimes(values=values, unit=unit, origin=origin)
