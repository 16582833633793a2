"""Vectorised parsing of a log's time column into UTC nanoseconds, with row-precise errors."""

from __future__ import annotations

from dataclasses import dataclass

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
# The other forms of an HTTP date that recipients must accept (RFC 9110 section 5.6.7), and
# RFC 5322 dates with another zone: IMF-fixdate with any case of GMT, or UTC, UT, Z or a
# numeric offset; RFC 850 (``Sunday, 06-Nov-94 08:49:37 GMT``); C's asctime
# (``Sun Nov  6 08:49:37 1994``, GMT by definition). Parsed by email.utils.
_ZONE = r"(?:[Gg][Mm][Tt]|[Uu][Tt][Cc]?|[Zz]|[+-]\d{4})"
_HTTP_OTHER = (
    r"(?:[A-Za-z]{3},\s*)?\d{1,2} [A-Za-z]{3} \d{4} \d\d:\d\d(?::\d\d)? "
    + _ZONE
    + r"|[A-Za-z]{6,9}, \d\d-[A-Za-z]{3}-\d\d \d\d:\d\d:\d\d "
    + _ZONE
    + r"|[A-Za-z]{3} [A-Za-z]{3} [ \d]?\d \d\d:\d\d:\d\d \d{4}"
)
#: A time written as a number: seconds since 1970-01-01T00:00:00Z (sign, digits, an optional fraction).
_EPOCH = r"([+-]?)(\d+)(?:\.(\d*))?"
#: Numbers of at least this magnitude are refused: as seconds they lie beyond the year 5138; they are
#: milliseconds (1.7e12 today) or finer, which the reader does not guess.
EPOCH_LIMIT = 1e11
_NAT = np.iinfo(np.int64).min
# Times are held as int64 nanoseconds, whose range is 1677-09-21 .. 2262-04-11: a time
# outside whole years inside it is refused rather than wrapped around.
_FIRST_YEAR, _LAST_YEAR = 1678, 2261
_LO = np.datetime64(f"{_FIRST_YEAR}-01-01", "s")
_HI = np.datetime64(f"{_LAST_YEAR + 1}-01-01", "s")
_KIND_NAMES = {"naive": "naive", "aware": "time-zone-aware"}


@dataclass(frozen=True)
class _Place:
    """Where a chunk's times stand, for the error messages: the log (or frame), the time column and
    each time's line (record, row) number, called ``line_word``."""

    source: str
    column: str
    lines: np.ndarray
    line_word: str

    def of(self, i) -> str:
        """``"log.csv: line 12, column 'fetch_time'"``: where the chunk's ``i``-th time stands."""
        return where(self.source, self.line_word, self.lines[i], self.column)

    def subset(self, rows) -> _Place:
        """The place of the chunk's times ``rows`` (indices or a mask), in that order."""
        return _Place(self.source, self.column, self.lines[rows], self.line_word)

    def kinds(self, state: dict, firsts: dict) -> None:
        """:func:`_kinds` of this column's times (``firsts``: their first line of each awareness)."""
        _kinds(state, firsts, source=self.source, column=self.column, line_word=self.line_word)


def _refuse_missing(missing: np.ndarray, place: _Place) -> None:
    """A required time column: refuse its first missing time, naming the line."""
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise CrawlLogError(f"{place.of(i)}: missing time")


def parse_time_column(
    values: pd.Series,
    *,
    source: str,
    column: str,
    lines: np.ndarray,
    line_word: str,
    required: bool,
    state: dict,
    fmt: str | None = None,
) -> np.ndarray:
    """UTC nanoseconds since the epoch (int64) of one chunk of a time column.

    ISO-8601 strings (or datetime dtypes) are accepted; HTTP dates (a Last-Modified
    header logged as sent) in each form of RFC 9110 section 5.6.7 (IMF-fixdate
    ``Sun, 06 Nov 1994 08:49:37 GMT``, the obsolete RFC 850 ``Sunday, 06-Nov-94 08:49:37 GMT``
    and asctime ``Sun Nov  6 08:49:37 1994``), also with ``gmt``, ``UTC`` or a numeric
    offset such as ``+0200``; and numbers (a numeric column, or text that is a decimal
    number and not ISO-8601: ``1700000000``, ``1700000000.25``), which are **seconds**
    since 1970-01-01T00:00:00Z. A number of magnitude 1e11 or more (past the year 5138
    as seconds: milliseconds or finer) is refused, not guessed. Text is read as ISO-8601
    first, so ``20240101`` is 1 January 2024 (as is any text ISO-8601 reads, e.g. a year
    ``2024``; seconds of crawl times, 9 or 10 digits or with a fraction, are no ISO form). A time with a UTC offset (or GMT, or a
    number) is an exact instant, a naive time (a date alone included) is taken as UTC. ``state``
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
    place = _Place(source, column, lines, line_word)
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        aware = getattr(values.dtype, "tz", None) is not None
        ts = values.dt.tz_convert("UTC").dt.tz_localize(None) if aware else values
        arr = ts.to_numpy()
        missing = np.isnat(arr)
        if required:
            _refuse_missing(missing, place)
        place.kinds(state, {("aware" if aware else "naive"): (int(lines[0]), None)})
        return _to_ns(arr, missing, place, shown=lambda i: str(ts.iloc[i]))
    if values.dtype.kind in "biuf":  # seconds since 1970-01-01 UTC
        if values.dtype.kind == "b":
            i = int(np.flatnonzero(values.notna().to_numpy())[0]) if values.notna().any() else 0
            raise CrawlLogError(
                f"{place.of(i)}: times must be ISO-8601 datetimes "
                f"or seconds since 1970-01-01 UTC; got the boolean {plain(values.iloc[i])!r}"
            )
        missing = values.isna().to_numpy()
        if required:
            _refuse_missing(missing, place)
        out = _epoch_numbers(values, missing, place)
        if (~missing).any():
            place.kinds(state, {"aware": (int(lines[int(np.argmax(~missing))]), None)})
        return out
    s = values.astype("string").str.strip()
    missing = (s.isna() | (s == "") | (s == "-")).to_numpy(dtype=bool)
    if required:
        _refuse_missing(missing, place)
    present = ~missing
    out = np.full(n, _NAT, dtype=np.int64)
    if not present.any():
        return out
    sp = s[present]
    want = "an ISO-8601 datetime or an HTTP date" if fmt is None else f"a time of the form {fmt}"
    http = extra = np.zeros(len(sp), dtype=bool)
    if fmt is None:
        parsed = pd.to_datetime(sp, format="ISO8601", utc=True, errors="coerce")
        http = (parsed.isna() & sp.str.fullmatch(_HTTP_DATE)).to_numpy(dtype=bool, na_value=False)
        if http.any():  # a header logged as the server sent it
            parsed[http] = pd.to_datetime(sp[http], format=_HTTP_FORMAT, utc=True, errors="coerce")
        rest = parsed.isna().to_numpy(dtype=bool)
        if rest.any():  # other HTTP date forms, and numbers (seconds since 1970), straight to ns
            extra_ns = np.full(len(sp), _NAT, dtype=np.int64)
            rows = np.flatnonzero(present)
            rest_s = sp[rest]
            epoch = np.zeros(len(sp), dtype=bool)
            epoch[rest] = rest_s.str.fullmatch(_EPOCH).to_numpy(dtype=bool, na_value=False)
            if epoch.any():
                extra_ns[epoch] = _epoch_strings(sp[epoch], place.subset(rows[epoch]))
            other = rest & ~epoch  # digits only, or with letters: the two never match the same text
            if other.any():
                other[other] = sp[other].str.fullmatch(_HTTP_OTHER).to_numpy(dtype=bool, na_value=False)
            if other.any():
                extra_ns[other] = _http_dates(sp[other], place.subset(rows[other]))
                other &= extra_ns != _NAT
                http = http | other
            extra = other | epoch
    else:
        parsed = pd.to_datetime(sp, format=fmt, utc=True, errors="coerce")
    bad = parsed.isna().to_numpy(dtype=bool) & ~extra
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        i = int(np.flatnonzero(present)[j])
        raise CrawlLogError(f"{place.of(i)}: unparsable time {sp.iloc[j]!r} (expected {want})")
    idx = np.flatnonzero(present)
    if fmt is None:
        is_aware = _aware_strings(sp) | http | extra
        firsts = {}
        for kind, mask in (("aware", is_aware), ("naive", ~is_aware)):
            if mask.any():
                j = int(np.argmax(mask))
                firsts[kind] = (int(lines[idx[j]]), sp.iloc[j])
    else:
        firsts = {"aware": (int(lines[idx[0]]), sp.iloc[0])}
    place.kinds(state, firsts)
    arr = parsed.dt.tz_localize(None).to_numpy()
    ns = _to_ns(arr, extra, place.subset(idx), shown=lambda j: sp.iloc[j])
    if extra.any():
        ns[extra] = extra_ns[extra]
    out[present] = ns
    return out


def _http_dates(values: pd.Series, place: _Place) -> np.ndarray:
    """HTTP dates in the obsolete forms (RFC 850, asctime) or with another zone, as int64 UTC ns.

    Each distinct value is parsed once by :func:`email.utils.parsedate_to_datetime` (a
    log repeats a page's Last-Modified on many visits); a date without a zone (asctime)
    or with ``-0000`` is GMT (RFC 9110 section 5.6.7). A two-digit year (RFC 850) is read as
    email.utils reads it: 69-99 as 1969-1999, 00-68 as 2000-2068 (the rule of RFC 9110,
    the latest past year with those digits, gives the same year for every date of
    1977-2068 read today). A value that does not parse is ``_NAT``.
    """
    import calendar
    from email.utils import parsedate_to_datetime

    def seconds(text):
        try:
            d = parsedate_to_datetime(text)
        except (TypeError, ValueError, OverflowError):
            return None
        return calendar.timegm(d.utctimetuple()) if d.tzinfo is not None else calendar.timegm(d.timetuple())

    codes, uniques = pd.factorize(values)
    secs = [seconds(u) for u in uniques]
    ok_u = np.array([v is not None for v in secs], dtype=bool)
    sec_u = np.array([0 if v is None else v for v in secs], dtype=np.float64)
    ok, sec = ok_u[codes], sec_u[codes]
    _check_seconds_range(sec, ok, place, shown=lambda i: values.iloc[i], unit="")
    return np.where(ok, sec.astype(np.int64) * 10**9, _NAT)


def _epoch_refused(text, place: _Place, i: int) -> CrawlLogError:
    return CrawlLogError(
        f"{place.of(i)}: the number {text} is too large for seconds since "
        f"1970-01-01 UTC (a time given as a number is seconds; {EPOCH_LIMIT:.0e} or more would be past the year "
        "5138): milliseconds or microseconds? give seconds (divide by 1000 or 10^6) or ISO-8601 times"
    )


def _epoch_numbers(values: pd.Series, missing: np.ndarray, place: _Place) -> np.ndarray:
    """A numeric time column (seconds since 1970-01-01 UTC; integers exact, floats to float precision) as int64 ns."""
    out = np.full(len(values), _NAT, dtype=np.int64)
    ok = ~missing
    if values.dtype.kind in "iu" and not missing.any():
        x = values.to_numpy()
    else:
        x = values.to_numpy(dtype=np.float64, na_value=np.nan)
    big = ok & ~(np.abs(x.astype(np.float64)) < EPOCH_LIMIT)
    if big.any():
        i = int(np.flatnonzero(big)[0])
        raise _epoch_refused(repr(plain(values.iloc[i])), place, i)
    _check_seconds_range(np.where(ok, x, 0).astype(np.float64), ok, place, shown=lambda i: plain(values.iloc[i]))
    if x.dtype.kind in "iu":
        out[:] = x.astype(np.int64) * 10**9
    else:
        whole = np.floor(x[ok])
        out[ok] = whole.astype(np.int64) * 10**9 + np.rint((x[ok] - whole) * 1e9).astype(np.int64)
    return out


def _epoch_strings(values: pd.Series, place: _Place) -> np.ndarray:
    """Numbers written as text (seconds since 1970-01-01 UTC, up to 9 decimals exact) as int64 ns.

    The sign, whole seconds and decimals are split by pyarrow's regular expressions (in C++:
    pandas' ``str.extract`` runs Python per row).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pa.array(values.to_numpy(dtype=object), type=pa.string())
    parts = pc.extract_regex(arr, r"(?P<sign>[+-]?)(?P<whole>\d+)(?:\.(?P<frac>\d*))?")
    sign_t, whole_t, frac_t = (parts.field(k) for k in ("sign", "whole", "frac"))
    digits = pc.utf8_length(pc.utf8_ltrim(whole_t, "0")).to_numpy(zero_copy_only=False)
    big = digits > 11
    if not big.any():
        sec = pc.cast(whole_t, pa.int64()).to_numpy(zero_copy_only=False)
        big = ~(sec < EPOCH_LIMIT)
    if big.any():
        i = int(np.flatnonzero(big)[0])
        raise _epoch_refused(values.iloc[i], place, i)
    frac = pc.utf8_rpad(pc.utf8_slice_codeunits(frac_t, 0, 9), 9, "0")
    frac = pc.cast(frac, pa.int64()).to_numpy(zero_copy_only=False)
    sign = np.where(pc.equal(sign_t, "-").to_numpy(zero_copy_only=False), -1, 1)
    _check_seconds_range(sign * (sec + frac / 1e9), np.ones(sec.size, bool), place, shown=lambda i: values.iloc[i])
    return sign * (sec * 10**9 + frac)


def _check_seconds_range(
    sec: np.ndarray, ok: np.ndarray, place: _Place, *, shown, unit: str = " (seconds since 1970-01-01 UTC)"
) -> None:
    """Refuse times (seconds since 1970, float64) outside the years int64 nanoseconds hold, naming the line."""
    lo, hi = float(_LO.astype(np.int64)), float(_HI.astype(np.int64))
    bad = ok & ~((sec >= lo) & (sec < hi))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CrawlLogError(
            f"{place.of(i)}: time {shown(i)!r}{unit} is outside the years "
            f"{_FIRST_YEAR}-{_LAST_YEAR} that the reader can hold (int64 nanoseconds)"
        )


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


def _to_ns(arr: np.ndarray, missing: np.ndarray, place: _Place, *, shown) -> np.ndarray:
    """datetime64 of any unit -> int64 ns (NaT -> the int64 minimum), refusing times ns cannot hold."""
    lo, hi = _LO.astype(arr.dtype), _HI.astype(arr.dtype)
    out_of_range = ~missing & ((arr < lo) | (arr >= hi))
    if out_of_range.any():
        i = int(np.flatnonzero(out_of_range)[0])
        raise CrawlLogError(
            f"{place.of(i)}: time {shown(i)!r} is outside the years "
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
