"""Vectorised parsing of a log's time column into UTC nanoseconds, with row-precise errors."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._errors import CrawlLogError, where

__all__ = ["parse_time_column"]

_AWARE = r"(?:[zZ]|[+-]\d\d(?::?\d\d)?)$"
_NAT = np.iinfo(np.int64).min


def parse_time_column(values: pd.Series, *, source: str, column: str, lines: np.ndarray, line_word: str,
                      required: bool, state: dict, fmt: str | None = None) -> np.ndarray:
    """UTC nanoseconds since the epoch (int64) of one chunk of a time column.

    ISO-8601 strings (or datetime dtypes) are accepted; a time with a UTC offset is an
    exact instant, a naive time is taken as UTC. ``state`` carries the awareness seen in
    earlier chunks and files (naive and aware together are refused).
    Missing values are an error if ``required``, else returned as the int64 minimum.
    """
    n = len(values)
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        aware = getattr(values.dtype, "tz", None) is not None
        _check_kind(state, "aware" if aware else "naive", source=source, column=column,
                    line=int(lines[0]) if n else 0, line_word=line_word)
        ts = values.dt.tz_convert("UTC") if aware else values
        out = ts.to_numpy(dtype="datetime64[ns]").astype(np.int64)
        missing = np.isnat(ts.to_numpy(dtype="datetime64[ns]"))
        if required and missing.any():
            i = int(np.flatnonzero(missing)[0])
            raise CrawlLogError(f"{where(source, line_word, lines[i], column)}: missing time")
        out[missing] = _NAT
        return out
    if values.dtype.kind in "biuf":
        i = 0 if n == 0 else int(np.flatnonzero(~values.isna().to_numpy())[0]) if values.notna().any() else 0
        raise CrawlLogError(
            f"{where(source, line_word, lines[i] if n else 0, column)}: times must be ISO-8601 datetimes "
            f"(e.g. 2024-01-31T12:00:00Z); got the number {values.iloc[i]!r}"
        )
    s = values.astype("string").str.strip()
    missing = (s.isna() | (s == "") | (s == "-")).to_numpy(dtype=bool)
    if required and missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise CrawlLogError(f"{where(source, line_word, lines[i], column)}: missing time")
    present = ~missing
    out = np.full(n, _NAT, dtype=np.int64)
    if not present.any():
        return out
    sp = s[present]
    want = "an ISO-8601 datetime" if fmt is None else f"a time of the form {fmt}"
    if fmt is None:
        parsed = pd.to_datetime(sp, format="ISO8601", utc=True, errors="coerce")
    else:
        parsed = pd.to_datetime(sp, format=fmt, utc=True, errors="coerce")
    bad = parsed.isna().to_numpy(dtype=bool)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        i = int(np.flatnonzero(present)[j])
        raise CrawlLogError(f"{where(source, line_word, lines[i], column)}: unparsable time {sp.iloc[j]!r} "
                            f"(expected {want})")
    idx = np.flatnonzero(present)
    if fmt is None:
        last = sp.str[-1]
        aware = (last == "Z") | (last == "z")
        if not aware.all():
            aware = sp.str.contains(_AWARE, regex=True)
        aware = aware.to_numpy(dtype=bool)
        kind0 = "aware" if aware[0] else "naive"
        _check_kind(state, kind0, source=source, column=column, line=int(lines[idx[0]]), line_word=line_word)
        odd = aware != aware[0]
        if odd.any():
            j = int(np.flatnonzero(odd)[0])
            kinds = ("naive", "time-zone-aware") if aware[0] else ("time-zone-aware", "naive")
            raise CrawlLogError(
                f"{where(source, line_word, lines[idx[j]], column)}: naive and time-zone-aware times are "
                f"mixed ({line_word} {lines[idx[0]]} is {kinds[1]}, this one {kinds[0]}: {sp.iloc[j]!r}); "
                "their order and gaps are ambiguous: give every time a UTC offset, or none"
            )
    else:
        _check_kind(state, "aware", source=source, column=column, line=int(lines[idx[0]]), line_word=line_word)
    out[present] = parsed.to_numpy(dtype="datetime64[ns]").astype(np.int64)
    return out


def _check_kind(state: dict, kind: str, *, source, column, line, line_word):
    seen = state.get("kind")
    if seen is None:
        state["kind"] = kind
        state["where"] = where(source, line_word, line, column)
        return
    if seen != kind:
        raise CrawlLogError(
            f"{where(source, line_word, line, column)}: {kind} times, but {state['where']} holds {seen} ones: "
            "naive and time-zone-aware times are mixed; give every time a UTC offset, or none"
        )
