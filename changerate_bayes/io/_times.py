"""Vectorised parsing of a log's time column into UTC nanoseconds, with row-precise errors."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._errors import CrawlLogError, plain, where

__all__ = ["parse_time_column", "check_kinds", "merge_kinds", "time_kinds"]

# A UTC offset ("Z", "+01:00", "-0500") after the time of day: a date alone ("2024-01-01",
# whose "-01" is the day, not an offset) is naive.
_AWARE = r"[Tt ]\d[^+\-zZ]*(?:[zZ]|[+-]\d\d(?::?\d\d)?)$"
#: An HTTP date as servers send Last-Modified and Date (RFC 9110 IMF-fixdate, always GMT).
_HTTP_DATE = r"[A-Za-z]{3}, \d\d [A-Za-z]{3} \d{4} \d\d:\d\d:\d\d GMT"
_HTTP_FORMAT = "%a, %d %b %Y %H:%M:%S GMT"
_NAT = np.iinfo(np.int64).min
# Times are held as int64 nanoseconds, whose range is 1677-09-21 .. 2262-04-11: a time
# outside whole years inside it is refused rather than wrapped around.
_FIRST_YEAR, _LAST_YEAR = 1678, 2261
_LO = np.datetime64(f"{_FIRST_YEAR}-01-01", "s")
_HI = np.datetime64(f"{_LAST_YEAR + 1}-01-01", "s")
_KIND_NAMES = {"naive": "naive", "aware": "time-zone-aware"}


def parse_time_column(values: pd.Series, *, source: str, column: str, lines: np.ndarray, line_word: str,
                      required: bool, state: dict, fmt: str | None = None) -> np.ndarray:
    """UTC nanoseconds since the epoch (int64) of one chunk of a time column.

    ISO-8601 strings (or datetime dtypes) are accepted, and HTTP dates (RFC 9110
    IMF-fixdate, ``Sun, 06 Nov 1994 08:49:37 GMT``: a Last-Modified header logged as sent);
    a time with a UTC offset (or GMT) is an exact instant, a naive time (a date alone
    included) is taken as UTC. ``state``
    carries the awareness seen in earlier chunks, files and time columns (naive and
    aware together are refused). Times outside the years 1678-2261 (those int64
    nanoseconds hold) are refused, naming the line. Missing values are an error if
    ``required``, else returned as the int64 minimum.

    With ``state["defer"]`` true, mixed awareness is not refused here but recorded in
    ``state["kinds"]`` (for :func:`check_kinds` over the partitions of a cluster run).
    """
    n = len(values)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        aware = getattr(values.dtype, "tz", None) is not None
        ts = values.dt.tz_convert("UTC").dt.tz_localize(None) if aware else values
        arr = ts.to_numpy()
        missing = np.isnat(arr)
        if required and missing.any():
            i = int(np.flatnonzero(missing)[0])
            raise CrawlLogError(f"{where(source, line_word, lines[i], column)}: missing time")
        _kinds(state, {("aware" if aware else "naive"): (int(lines[0]), None)}, source=source, column=column,
               line_word=line_word)
        out = _to_ns(arr, missing, source=source, column=column, lines=lines, line_word=line_word,
                     shown=lambda i: str(ts.iloc[i]))
        return out
    if values.dtype.kind in "biuf":
        i = int(np.flatnonzero(~values.isna().to_numpy())[0]) if values.notna().any() else 0
        raise CrawlLogError(
            f"{where(source, line_word, lines[i], column)}: times must be ISO-8601 datetimes "
            f"(e.g. 2024-01-31T12:00:00Z); got the number {plain(values.iloc[i])!r}"
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
    want = "an ISO-8601 datetime or an HTTP date" if fmt is None else f"a time of the form {fmt}"
    http = np.zeros(len(sp), dtype=bool)
    if fmt is None:
        parsed = pd.to_datetime(sp, format="ISO8601", utc=True, errors="coerce")
        http = (parsed.isna() & sp.str.fullmatch(_HTTP_DATE)).to_numpy(dtype=bool, na_value=False)
        if http.any():  # a header logged as the server sent it
            parsed[http] = pd.to_datetime(sp[http], format=_HTTP_FORMAT, utc=True, errors="coerce")
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
        aware = _aware_strings(sp) | http
        firsts = {}
        for kind, mask in (("aware", aware), ("naive", ~aware)):
            if mask.any():
                j = int(np.argmax(mask))
                firsts[kind] = (int(lines[idx[j]]), sp.iloc[j])
    else:
        firsts = {"aware": (int(lines[idx[0]]), sp.iloc[0])}
    _kinds(state, firsts, source=source, column=column, line_word=line_word)
    arr = parsed.dt.tz_localize(None).to_numpy()
    out[present] = _to_ns(arr, np.zeros(arr.size, bool), source=source, column=column, lines=lines[idx],
                          line_word=line_word, shown=lambda j: sp.iloc[j])
    return out


def _aware_strings(s: pd.Series) -> np.ndarray:
    """Whether each stripped time string (pandas "string" dtype, none missing) carries a UTC offset."""
    last = s.str[-1]
    aware = (last == "Z") | (last == "z")
    if not aware.all():  # the regex only when some time does not end in Z
        aware = s.str.contains(_AWARE, regex=True)
    return aware.to_numpy(dtype=bool, na_value=False)


def time_kinds(values) -> np.ndarray:
    """The awareness of each time: 1 time-zone-aware, 0 naive, -1 a date alone (naive).

    Parameters
    ----------
    values : pandas.Series or array-like, shape (n,)
        ISO-8601 strings, datetimes / Timestamps (aware when they carry a ``tzinfo``),
        dates, or a datetime64 column (aware when its dtype has a time zone).

    Returns
    -------
    ndarray of int8, shape (n,)
        The same rule as the crawl-log readers: a string is aware when a UTC offset
        ("Z", "+01:00", "-0500") follows its time of day; a date alone has no time of
        day (readers that take it as naive treat -1 as 0).
    """
    import datetime as _dt

    values = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    n = len(values)
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        return np.full(n, 1 if getattr(values.dtype, "tz", None) is not None else 0, dtype=np.int8)
    obj = values.to_numpy(dtype=object)
    is_str = np.fromiter((isinstance(v, str) for v in obj), dtype=bool, count=n)
    out = np.zeros(n, dtype=np.int8)
    if is_str.any():
        s = pd.Series(obj[is_str], dtype="string").str.strip()
        kinds = np.where(_aware_strings(s), 1, 0).astype(np.int8)
        dated = ~s.str.contains(r"[Tt ]\d", regex=True).to_numpy(dtype=bool, na_value=False)
        kinds[(kinds == 0) & dated] = -1
        out[is_str] = kinds
    others = np.flatnonzero(~is_str)
    for i in others:
        v = obj[i]
        if isinstance(v, _dt.datetime):
            out[i] = 1 if v.tzinfo is not None else 0
        elif isinstance(v, _dt.date):
            out[i] = -1
    return out


def _to_ns(arr: np.ndarray, missing: np.ndarray, *, source, column, lines, line_word, shown) -> np.ndarray:
    """datetime64 of any unit -> int64 ns (NaT -> the int64 minimum), refusing times ns cannot hold."""
    lo, hi = _LO.astype(arr.dtype), _HI.astype(arr.dtype)
    out_of_range = ~missing & ((arr < lo) | (arr >= hi))
    if out_of_range.any():
        i = int(np.flatnonzero(out_of_range)[0])
        raise CrawlLogError(
            f"{where(source, line_word, lines[i], column)}: time {shown(i)!r} is outside the years "
            f"{_FIRST_YEAR}-{_LAST_YEAR} that the reader can hold (int64 nanoseconds); is the year a typo?"
        )
    out = arr.astype("datetime64[ns]").astype(np.int64)
    out[missing] = _NAT
    return out


def _kinds(state: dict, firsts: dict, *, source, column, line_word) -> None:
    """Check (or, with ``state["defer"]``, record) the awareness of one chunk of a time column.

    ``firsts`` maps "naive"/"aware" to (line, value) of its first time in the chunk.
    """
    if not firsts:
        return
    if state.get("defer"):
        merge_kinds(state.setdefault("kinds", {}), {column: firsts})
        return
    check_kinds(state, firsts, source=source, column=column, line_word=line_word)


def merge_kinds(into: dict, more: dict) -> dict:
    """Merge recorded awarenesses (column -> kind -> (line, value)): the earliest line of each kind."""
    for column, firsts in more.items():
        have = into.setdefault(column, {})
        for kind, (line, value) in firsts.items():
            if kind not in have or line < have[kind][0]:
                have[kind] = (line, value)
    return into


def check_kinds(state: dict, firsts: dict, *, source, column, line_word) -> None:
    """Refuse naive and time-zone-aware times together, naming the first line of each.

    ``firsts`` maps "naive"/"aware" to (line, value) of the first time of that kind in
    the rows checked (one chunk, or a whole log); ``state`` holds the kind of the
    earlier chunks and time columns.
    """
    if not firsts:
        return
    k0, (l0, _) = min(firsts.items(), key=lambda kv: kv[1][0])
    seen = state.get("kind")
    if seen is None:
        state["kind"] = k0
        state["where"] = where(source, line_word, l0, column)
    elif seen != k0:
        raise CrawlLogError(
            f"{where(source, line_word, l0, column)}: {k0} times, but {state['where']} holds {seen} ones: "
            "naive and time-zone-aware times are mixed; give every time a UTC offset, or none"
        )
    if len(firsts) == 2:
        k1 = "naive" if k0 == "aware" else "aware"
        l1, v1 = firsts[k1]
        raise CrawlLogError(
            f"{where(source, line_word, l1, column)}: naive and time-zone-aware times are "
            f"mixed ({line_word} {l0} is {_KIND_NAMES[k0]}, this one {_KIND_NAMES[k1]}: {v1!r}); "
            "their order and gaps are ambiguous: give every time a UTC offset, or none"
        )
