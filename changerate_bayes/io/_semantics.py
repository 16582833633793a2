"""The change semantics shared by every reader: visits of many pages -> a ragged history.

A log is first reduced, chunk by chunk, to compact columns (:class:`VisitColumns`:
integer page codes, UTC nanoseconds, hashed digests), then :func:`build_log` applies
the rules below to all pages at once with sorts and shifts (no loop over pages):

1. A row that is not a capture (e.g. a WARC revisit of an unknown profile) is dropped.
2. When the log has a status column, a row whose status is missing is dropped
   (``missing_status``), and so is one with status >= 400 or a value that is not an
   HTTP status (below 100, not a whole number: ``failed_status``). A redirect (3xx other
   than 304) is dropped too (``redirect``): its body is the redirect, not the page, so it
   is no observation of the page's content. An HTTP 304, a WARC revisit of profile
   identical-payload-digest / server-not-modified, or a row whose ``not_modified``
   column is true (1/true/yes) is a successful visit that saw no change, whatever its
   status field says.
3. A successful visit without the evidence that decides "changed" is dropped: no digest
   (``missing_digest``), an empty ``changed`` (``missing_changed``; not on the page's first
   successful visit, the reference copy, where "changed" has no meaning), or a
   ``last_modified`` that is missing or not before its fetch (``missing_last_modified``).
4. Visits are sorted by page and time (rows earlier than the previous row of the same
   page in file order are counted as ``out_of_order``). Duplicate captures (same page,
   same time) collapse to the first in file order (``duplicate``).
5. Each page's first remaining visit is the reference copy, not an observation. Every
   later visit k is an observation: τ_k = t_k - t_{k-1} in hours, from the previous
   *remaining* (successful) visit, so the interval after a failed visit runs from the
   last successful one; and I_k is

   - ``digest``: 1 iff the digest differs from that of the previous successful visit
     (a 304/revisit carries the previous digest forward; one before the page's first
     digest is dropped, ``not_modified_before_reference``);
   - ``changed``: the crawler's own 0/1 decision;
   - ``last_modified``: 1 iff last_modified is after the previous visit's time;

   and 0 for a 304/revisit.
6. ``last_modified`` at or after its own fetch time is ignored and counted
   (``last_modified_ignored``), whatever decides changes. It must be naive if the fetch
   times are, and aware if they are (a naive one beside aware fetch times is refused).
7. A server that reports the fetch time as Last-Modified is detected page by page
   (:func:`last_modified_liars`): among the page's successful visits that carry a
   Last-Modified, at least :data:`LIAR_MIN_VISITS` give one no earlier than
   :data:`LM_NOW_NS` (60 s) before the fetch (or later: in the future; "the fetch" is the
   server's own ``Date`` header where the log has it, WARC responses, so that a server
   clock off by minutes is still found, else the fetch time), and such visits
   are at least :data:`LIAR_SHARE` (4 in 5) of them. Where ``last_modified`` decides
   changes, every visit of such a page would look "changed" whatever the content did:
   its changes are decided by the log's digest (or ETag) column if it has one, else by its
   ``changed`` column, with their rules (``Audit.last_modified_fallback`` names it; only
   an explicit ``change_from="last_modified"`` leaves such a column beside the dates,
   since "auto" prefers it); without either, all the page's rows are dropped
   (``last_modified_unreliable``). So is a page whose Last-Modified says "changed" (a
   date after the previous visit) on at least two visits where the digest shows the same
   content on more than half of them, the rule by which such a page is found unreliable
   where digests decide (:func:`_last_modified_ages`). The page is counted in
   ``Audit.last_modified_unreliable_pages``. Where something else decides, the page is
   kept, counted, and its dates are not used (``last_modified_age`` NaN,
   ``last_modified_unreliable`` true).
8. Pages left with a single visit are counted (``single_visit_pages``), not kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pandas as pd

from ..history import CrawlHistory
from ._audit import DROP_REASONS, Audit
from ._errors import CrawlLogError, plain, where
from ._signal_values import signal_flags
from ._times import _HI, _LO, _NAT, _kinds, parse_time_column

__all__ = [
    "CHANGE_SOURCES",
    "LIAR_MIN_VISITS",
    "LIAR_SHARE",
    "LM_NOW_NS",
    "STANDARD_COLUMNS",
    "CrawlLog",
    "VisitColumns",
    "build_log",
    "compact_batch",
    "compact_frame",
    "last_modified_liars",
    "resolve_change_source",
]

#: The columns a log may have (``page`` and ``fetch_time`` are required).
STANDARD_COLUMNS = ("page", "fetch_time", "status", "digest", "changed", "last_modified")
CHANGE_SOURCES = ("auto", "digest", "changed", "last_modified")
_NS_PER_HOUR = 3.6e12
_R = {name: i + 1 for i, name in enumerate(DROP_REASONS)}


@dataclass(frozen=True)
class CrawlLog:
    """A crawl log read into a ragged history, with its audit.

    Attributes
    ----------
    history : CrawlHistory
        Ragged: one page per page with at least two usable visits, in order of first
        appearance in the log; ``intervals`` in **hours** (rates per hour),
        ``crawl_rate`` = each page's observed crawl rate, visits / Σ τ (per hour),
        ``page_ids`` = the page labels.
    first_visit, last_visit : ndarray of datetime64[ns], shape (n_pages,)
        UTC time of each page's reference copy and of its last usable visit.
    audit : Audit
        Rows read, kept and dropped by reason.
    last_modified_age : ndarray of float64, shape (n_visits,), optional
        With a ``last_modified`` column: per observation of the history (flat order),
        hours from the page's last modification to the visit where a change was seen
        (0 where none was), NaN on every visit of a page whose dates are unreliable or
        do not date each change seen (see :attr:`Audit.last_modified_unreliable_pages`).
    last_modified_unreliable : ndarray of bool, shape (n_pages,), optional
        With a ``last_modified`` column: per page of the history, whether its server's
        Last-Modified was found unreliable (module docstring, rule 7) and is not used.
    last_attempt : ndarray of datetime64[ns], shape (n_pages,), optional
        UTC time of each page's last fetch attempt in the log, whatever its outcome (a
        failed status, a redirect, a duplicate: every row of the page that is a capture),
        at or after ``last_visit``.
    """

    history: CrawlHistory
    first_visit: np.ndarray
    last_visit: np.ndarray
    audit: Audit
    last_modified_age: np.ndarray | None = None
    last_modified_unreliable: np.ndarray | None = None
    last_attempt: np.ndarray | None = None

    @property
    def page_ids(self) -> np.ndarray:
        """Page labels, shape (n_pages,)."""
        ids = self.history.page_ids
        assert ids is not None  # a crawl log's history always carries the page labels
        return ids


@dataclass
class VisitColumns:
    """Compact columns of a log (internal): one entry per row, in file order."""

    page: np.ndarray  # int64 codes into ``labels``
    time: np.ndarray  # int64 UTC ns
    status: np.ndarray | None  # float64, NaN = missing (None: no status column)
    not_modified: np.ndarray  # bool: HTTP 304 / WARC revisit
    digest: np.ndarray | None  # uint64 hashes (None: no digest column)
    has_digest: np.ndarray | None
    changed: np.ndarray | None  # int8 0/1, -1 = missing (None: no changed column)
    last_modified: np.ndarray | None  # int64 UTC ns, _NAT = missing
    not_capture: np.ndarray  # bool: dropped as "not_a_capture"
    server_date: np.ndarray | None = None  # int64 UTC ns of the server's Date header, _NAT = missing (WARC)

    @staticmethod
    def concat(parts: list[VisitColumns]) -> VisitColumns:
        def cat(name):
            cols = [getattr(p, name) for p in parts]
            if all(c is None for c in cols):
                return None
            if any(c is None for c in cols):
                raise CrawlLogError(f"the files do not all have a {name!r} column: give them the same columns")
            return np.concatenate(cols)

        names = VisitColumns.__dataclass_fields__
        return VisitColumns(**{name: cat(name) for name in names})


def resolve_change_source(change_from: str, available: set, *, source: str) -> str:
    """``change_from`` with "auto" resolved: digest, else changed, else last_modified."""
    if change_from not in CHANGE_SOURCES:
        raise ValueError(f"`change_from` must be one of {list(CHANGE_SOURCES)}; got {change_from!r}")
    if change_from == "auto":
        for name in ("digest", "changed", "last_modified"):
            if name in available:
                return name
        raise CrawlLogError(
            f"{source}: line 1: no column says whether a page changed: the log needs a 'digest', 'changed' or "
            "'last_modified' column (map yours with `columns=`)"
        )
    if change_from not in available:
        raise CrawlLogError(f"{source}: line 1: missing column {change_from!r}, which `change_from` asks for")
    return change_from


def _hash_strings(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(values.dtype, pd.CategoricalDtype):  # each distinct value hashed once
        codes = values.cat.codes.to_numpy()
        h, ok = _hash_strings(pd.Series(values.cat.categories))
        if h.size == 0:  # every value missing (a batch of nulls has no categories)
            return np.zeros(codes.size, dtype=np.uint64), np.zeros(codes.size, dtype=bool)
        present = codes >= 0
        return np.where(present, h[codes], np.uint64(0)), present & ok[codes]
    s = values.astype("string").str.strip()
    weak = s.str.startswith('W/"').to_numpy(dtype=bool, na_value=False)
    if weak.any():  # a weak ETag names the same content as the strong one (RFC 9110 8.8.3.2)
        s = s.where(~weak, s.str[2:])
    ok = ~(s.isna() | (s == "") | (s == "-")).to_numpy(dtype=bool)
    out = np.zeros(len(s), dtype=np.uint64)
    if ok.any():
        # categorize=False: the same hashes, without factorizing first (mostly distinct digests)
        out[ok] = pd.util.hash_array(s[ok].to_numpy(dtype=object), categorize=False)
    return out, ok


def _booleans_as_numbers(values: pd.Series) -> pd.Series:
    """A text column's true/false (any case: pandas writes a bool column as True/False) as 1/0."""
    if values.dtype.kind in "biuf":
        return values
    low = values.astype("string").str.strip().str.lower()
    is_bool = low.isin(["true", "false"]).to_numpy(dtype=bool, na_value=False)
    if not is_bool.any():
        return values
    ones = (low == "true").to_numpy(dtype=bool, na_value=False)
    return values.astype("string").mask(is_bool, np.where(ones, "1", "0"))


def _numbers(values: pd.Series, *, source, column, lines, line_word, want: str = "a number") -> np.ndarray:
    if values.dtype.kind in "biuf":
        return values.to_numpy(dtype=np.float64)
    s = values.astype("string").str.strip()
    missing = (s.isna() | (s == "") | (s == "-")).to_numpy(dtype=bool)
    num = pd.to_numeric(s.mask(missing), errors="coerce").to_numpy(dtype=np.float64)
    bad = np.isnan(num) & ~missing
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CrawlLogError(f"{where(source, line_word, lines[i], column)}: expected {want}; got {plain(s.iloc[i])!r}")
    return num


_TRUE = ("1", "true", "t", "yes", "y")
_FALSE = ("0", "false", "f", "no", "n", "", "-")


def _booleans(values: pd.Series, *, source, column, lines, line_word) -> np.ndarray:
    """A 0/1 or true/false column (booleans, numbers or their text; empty = false) as bool."""
    if values.dtype == bool:
        return values.to_numpy(dtype=bool)
    if values.dtype.kind in "biuf":  # numpy or nullable (pd.NA = false) booleans and numbers
        num = values.to_numpy(dtype=np.float64, na_value=np.nan)
        num = np.where(np.isnan(num), 0.0, num)
        bad = (num != 0) & (num != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise CrawlLogError(f"{where(source, line_word, lines[i], column)}: must be 0 or 1; got {num[i]:g}")
        return num == 1
    s = values.astype("string").str.strip().str.lower().fillna("")
    s = s.where(~s.isin(["1.0", "0.0"]), s.str[0])
    yes = s.isin(_TRUE).to_numpy(dtype=bool)
    no = s.isin(_FALSE).to_numpy(dtype=bool)
    bad = ~(yes | no)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CrawlLogError(
            f"{where(source, line_word, lines[i], column)}: expected 0/1 or true/false; got {plain(values.iloc[i])!r}"
        )
    return yes


def compact_frame(
    frame: pd.DataFrame,
    *,
    source: str,
    line_word: str,
    labels: pd.Index,
    state: dict,
    names: dict | None = None,
    time_format: str | None = None,
    first_line: int = 1,
    lines=None,
):
    """Compact columns of one chunk of a log whose columns have the standard names.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns among :data:`STANDARD_COLUMNS`, plus optionally ``not_modified``
        (bool), ``not_capture`` (bool) and ``signal`` (0/1: rows that are signals, not
        visits, are left out; :mod:`changerate_bayes.io._signals`).
    labels : pandas.Index
        Page labels seen so far; new ones are appended.
    names : dict, optional
        Standard name -> the file's column name, for error messages.
    first_line : int, default 1
        File line (or record) number of the chunk's first row, for error messages; the
        rows follow it one line each.
    lines : ndarray of int64, shape (len(frame),), optional
        Each row's line (or record) number instead, for rows that are not one a line.

    Returns
    -------
    (VisitColumns, pandas.Index)
        The chunk and the updated labels.
    """
    names = names or {}
    n = len(frame)
    if lines is None:
        lines = np.arange(first_line, first_line + n, dtype=np.int64)

    def col(c: str) -> str:
        return names.get(c, c)

    if "signal" in frame:  # signal rows (a change-indicating signal, not a visit) are not visits
        flags = signal_flags(frame["signal"], source=source, column="signal", lines=lines, line_word=line_word)
        frame = frame.drop(columns="signal")
        if flags.any():
            frame, lines = frame[~flags], lines[~flags]
        n = len(frame)
    pages = frame["page"]
    missing = pages.isna().to_numpy(dtype=bool).copy()
    if isinstance(pages.dtype, pd.CategoricalDtype):  # a dictionary column: its distinct values checked once
        cats = pd.Series(pages.cat.categories)
        if cats.dtype == object or isinstance(cats.dtype, pd.StringDtype):
            blank = (cats.astype("string").str.strip() == "").fillna(True).to_numpy(dtype=bool)
            if blank.any():
                missing |= np.isin(pages.cat.codes.to_numpy(), np.flatnonzero(blank))
        codes, uniques = pd.factorize(pages, sort=False)
        uniques = pd.Index(np.asarray(uniques, dtype=object))
    elif pages.dtype == object or isinstance(pages.dtype, pd.StringDtype):  # pandas 3 reads dtype=str as "str"
        missing |= (pages.astype("string").str.strip() == "").fillna(True).to_numpy(dtype=bool)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise CrawlLogError(f"{where(source, line_word, lines[i], col('page'))}: missing page")
    if not isinstance(pages.dtype, pd.CategoricalDtype):
        codes, uniques = pd.factorize(pages, sort=False)
        uniques = pd.Index(uniques)
    known, labels = _label_codes_adding(uniques, labels, state)
    codes = known[codes]
    times = lambda c, req, fmt=None: parse_time_column(  # noqa: E731
        frame[c], source=source, column=col(c), lines=lines, line_word=line_word, required=req, state=state, fmt=fmt
    )
    time = times("fetch_time", True, time_format)
    status = None
    if "status" in frame:
        status = _numbers(frame["status"], source=source, column=col("status"), lines=lines, line_word=line_word)
    nm = np.zeros(n, bool)
    if "not_modified" in frame:
        nm = _booleans(
            frame["not_modified"], source=source, column=col("not_modified"), lines=lines, line_word=line_word
        )
    if status is not None:
        nm = nm | (status == 304)
    digest = has_digest = None
    if "digest" in frame:
        digest, has_digest = _hash_strings(frame["digest"])
    changed = None
    if "changed" in frame:
        num = _numbers(
            _booleans_as_numbers(frame["changed"]),
            source=source,
            column=col("changed"),
            lines=lines,
            line_word=line_word,
            want="0 or 1 (or true/false)",
        )
        bad = ~np.isnan(num) & (num != 0) & (num != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise CrawlLogError(f"{where(source, line_word, lines[i], col('changed'))}: must be 0 or 1; got {num[i]:g}")
        changed = np.where(np.isnan(num), -1, num).astype(np.int8)
    last_modified = times("last_modified", False) if "last_modified" in frame else None
    not_capture = frame["not_capture"].to_numpy(dtype=bool) if "not_capture" in frame else np.zeros(n, bool)
    server_date = times("server_date", False) if "server_date" in frame else None
    return VisitColumns(
        codes, time, status, nm, digest, has_digest, changed, last_modified, not_capture, server_date
    ), labels


def compact_batch(
    batch, *, source: str, first_line: int, labels: pd.Index, state: dict, inv: dict, names: dict | None = None
):
    """:func:`compact_frame` of one Parquet record batch, read from its Arrow buffers where it can.

    The common columns (``page`` as a dictionary of strings without nulls, ``fetch_time``
    a timestamp without nulls, ``status`` a number, ``digest`` a dictionary of strings)
    go to compact columns without a pandas frame: the page codes from the dictionary's
    entries in order of first use, the digests hashed once per dictionary entry (as
    :func:`_hash_strings` hashes a categorical). Anything else (other columns or types,
    nulls or blank pages, duplicate dictionary entries, times the reader cannot hold)
    goes through ``compact_frame(batch.to_pandas())``, which gives the same columns and
    names the row of a bad value. ``inv`` maps the file's column names to the standard
    ones; rows are numbered from ``first_line``.

    Returns
    -------
    (VisitColumns, pandas.Index)
        The batch and the updated labels.
    """
    part = _compact_arrow(
        batch, source=source, first_line=first_line, labels=labels, state=state, inv=inv, names=names or {}
    )
    if part is not None:
        return part
    chunk = batch.to_pandas().rename(columns=inv)
    return compact_frame(
        chunk, source=source, first_line=first_line, line_word="row", labels=labels, state=state, names=names
    )


def _string_dictionary(column, pa):
    """(indices, dictionary) of a dictionary-of-strings Arrow array, or None."""
    t = column.type
    if not (pa.types.is_dictionary(t) and (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type))):
        return None
    return column.indices, column.dictionary


def _compact_arrow(batch, *, source, first_line, labels, state, inv, names):
    """The fast path of :func:`compact_batch`; None where it does not apply (nothing changed then)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cols = {inv.get(name, name): batch.column(i) for i, name in enumerate(batch.schema.names)}
    if not set(cols) <= {"page", "fetch_time", "status", "digest"} or "page" not in cols or "fetch_time" not in cols:
        return None
    n = batch.num_rows
    page = _string_dictionary(cols["page"], pa)
    ft = cols["fetch_time"]
    if page is None or cols["page"].null_count or not pa.types.is_timestamp(ft.type) or ft.null_count or n == 0:
        return None
    status = cols.get("status")
    if status is not None and not (pa.types.is_integer(status.type) or pa.types.is_floating(status.type)):
        return None
    digest = cols.get("digest")
    if digest is not None:
        digest = _string_dictionary(digest, pa)
        if digest is None:
            return None
    # the pages: dictionary entries in order of first use (what pandas.factorize gives)
    idx = page[0].to_numpy(zero_copy_only=False)
    local, used = pd.factorize(idx)  # the entries used, in order of first use
    values = page[1].take(pa.array(used)).to_pylist()
    if len(set(values)) != len(values) or any(not v.strip() for v in values):
        return None  # duplicate entries, or a blank page (compact_frame names its row)
    arr = ft.to_numpy(zero_copy_only=False)  # datetime64 of the column's unit, UTC (naive: taken as UTC)
    lo, hi = _LO.astype(arr.dtype), _HI.astype(arr.dtype)
    if ((arr < lo) | (arr >= hi)).any():
        return None  # compact_frame names the row and the time
    kind = "aware" if ft.type.tz is not None else "naive"
    _kinds(
        state, {kind: (first_line, None)}, source=source, column=names.get("fetch_time", "fetch_time"), line_word="row"
    )
    time = arr.astype("datetime64[ns]").astype(np.int64)
    uniques = pd.Index(values, dtype=object)
    known, labels = _label_codes_adding(uniques, labels, state)
    codes = known[local]
    st = None
    nm = np.zeros(n, bool)
    if status is not None:
        st = pc.cast(status, pa.float64()).to_numpy(zero_copy_only=False)
        nm = st == 304
    h = has = None
    if digest is not None:
        d_idx, d_dict = digest
        try:  # the dictionary as a pandas string column without a copy (as compact_frame's categories)
            entries = pd.Series(pd.arrays.ArrowStringArray(d_dict))
        except (TypeError, ValueError):
            entries = pd.Series(d_dict.to_pylist(), dtype=object)
        h_entry, ok_entry = _hash_strings(entries)
        present = ~d_idx.is_null().to_numpy(zero_copy_only=False)
        di = d_idx.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        if len(d_dict) == 0:
            h, has = np.zeros(n, np.uint64), np.zeros(n, bool)
        else:
            h = np.where(present, h_entry[di], np.uint64(0))
            has = present & ok_entry[di]
    return VisitColumns(codes, time, st, nm, h, has, None, None, np.zeros(n, bool)), labels


def _append_labels(labels: pd.Index, new) -> pd.Index:
    """``labels`` followed by ``new``, an object Index (``Index.append`` would infer a string dtype,
    a pass over every label, at each chunk)."""
    return pd.Index(
        np.concatenate((labels.to_numpy(dtype=object), np.asarray(new, dtype=object))), dtype=object, copy=False
    )


def _label_codes(uniques: pd.Index, labels: pd.Index, state: dict) -> np.ndarray:
    """Code of each of ``uniques`` among ``labels`` (int64, −1 for a new one).

    A dict label -> code kept in ``state`` across chunks answers in O(len(uniques)),
    where an Index of strings would be hashed anew for every chunk.
    """
    lookup = state.get("label_codes")
    if lookup is None or len(lookup) != len(labels):
        lookup = state["label_codes"] = dict(zip(labels.tolist(), range(len(labels))))
    get = lookup.get
    return np.fromiter((get(x, -1) for x in uniques.tolist()), dtype=np.int64, count=len(uniques))


def _label_codes_adding(uniques: pd.Index, labels: pd.Index, state: dict) -> tuple[np.ndarray, pd.Index]:
    """Code of each of ``uniques`` among ``labels`` (int64), the new ones given the next codes in
    order and appended: the codes and the updated labels."""
    known = _label_codes(uniques, labels, state)
    new = known < 0
    if new.any():
        known[new] = np.arange(len(labels), len(labels) + int(new.sum()))
        state["label_codes"].update(zip(uniques[new].tolist(), known[new].tolist()))
        labels = _append_labels(labels, uniques[new])
    return known, labels


def check_digest_not_empty(v: VisitColumns | SimpleNamespace, *, source: str, column: str) -> None:
    """A digest column that is entirely empty is an error (it cannot decide anything)."""
    if v.has_digest is not None and v.has_digest.size and not v.has_digest.any():
        raise CrawlLogError(
            f"{source}: line 1, column {column!r}: the digest column is entirely empty; "
            "map another column with `columns=` or choose `change_from`"
        )


def build_log(
    v: VisitColumns, labels, *, change_from: str, sources, empty_ok: bool = False, audit_extra: dict | None = None
) -> CrawlLog:
    """Apply the change semantics (module docstring) to compact columns: a :class:`CrawlLog`.

    ``audit_extra`` holds audit fields the reader counted itself (e.g. truncated records).

    Raises
    ------
    CrawlLogError
        If no page has two usable visits (nothing to estimate).
    """
    n = v.page.size
    labels = np.asarray(labels, dtype=object)
    # the rows by page in file order (a stable sort of int32 keys where the codes fit: ~3x faster)
    page_key = v.page.astype(np.int32) if labels.size <= np.iinfo(np.int32).max else v.page
    by_page = np.argsort(page_key, kind="stable")
    # out-of-order rows: earlier than the previous row of the same page in file order
    pp, tt = v.page[by_page], v.time[by_page]
    out_of_order = int(np.count_nonzero((pp[1:] == pp[:-1]) & (tt[1:] < tt[:-1])))

    lm_ok = None
    lm_ignored = 0
    if v.last_modified is not None:
        present = v.last_modified != _NAT
        lm_ok = present & (v.last_modified < v.time)
        lm_ignored = int(np.count_nonzero(present & ~lm_ok))

    reason = np.zeros(n, dtype=np.int8)

    def drop(mask, name):
        reason[(reason == 0) & mask] = _R[name]

    nm = v.not_modified
    drop(v.not_capture, "not_a_capture")
    if v.status is not None:
        st = v.status
        drop(np.isnan(st) & ~nm, "missing_status")
        http = (st >= 100) & (st < 400) & (st == np.floor(st))  # -1, 0, -inf, 200.5: not an HTTP success
        drop(~http & ~nm, "failed_status")
        drop((st >= 300) & ~nm, "redirect")
    says_now = None
    if v.last_modified is not None:  # on the successful visits: what a server says of itself
        now = v.time if v.server_date is None else np.where(v.server_date != _NAT, v.server_date, v.time)
        says_now = last_modified_liars(v.page, now, v.last_modified, reason == 0, labels.size)
    # which rows each rule decides: where last_modified decides, the pages whose server reports the
    # fetch time are decided by the digest, else by ``changed``, else by nothing (dropped)
    fallback = None
    by_digest = by_changed = np.ones(n, dtype=bool)
    if change_from == "last_modified":
        assert says_now is not None and lm_ok is not None  # resolve_change_source checked that the column is there
        fallback = "digest" if v.digest is not None else "changed" if v.changed is not None else None
        if fallback == "digest":  # dates that say "changed" where the digest shows the same content, as under "digest"
            says_now = says_now | _dates_contradict_digest(v, lm_ok, reason == 0, labels.size)
        liar_rows = says_now[v.page]
        by_lm = ~liar_rows
        by_digest, by_changed = liar_rows & (fallback == "digest"), liar_rows & (fallback == "changed")
        if fallback is None:
            drop(liar_rows, "last_modified_unreliable")
    if change_from in ("digest", "last_modified") and v.digest is not None:
        assert v.has_digest is not None  # read together with the digest
        drop(by_digest & ~v.has_digest & ~nm, "missing_digest")
    if change_from in ("changed", "last_modified") and v.changed is not None:
        missing = by_changed & (v.changed < 0) & ~nm
        if missing.any():  # a page's first successful visit is its reference copy: its `changed` means nothing
            missing &= ~_first_visits(v.page, v.time, reason == 0)
        drop(missing, "missing_changed")
    if change_from == "last_modified":
        assert lm_ok is not None  # resolve_change_source checked that the column is there
        drop(by_lm & ~lm_ok & ~nm, "missing_last_modified")

    # by page, then time, then file order (a lexsort on (page, time, position)): the rows
    # kept, by page in file order, are already in that order except on the pages where a
    # row is earlier than the one before it; only those pages' rows are sorted by time
    order = by_page[reason[by_page] == 0]
    pg, tm = v.page[order], v.time[order]
    descent = (pg[1:] == pg[:-1]) & (tm[1:] < tm[:-1])
    if descent.any():
        rows = np.isin(pg, np.unique(pg[1:][descent]))
        sub = order[rows]
        sub = sub[np.argsort(v.time[sub], kind="stable")]
        order[rows] = sub[np.argsort(page_key[sub], kind="stable")]
    pg, tm = v.page[order], v.time[order]
    dup = np.zeros(order.size, dtype=bool)
    dup[1:] = (pg[1:] == pg[:-1]) & (tm[1:] == tm[:-1])
    reason[order[dup]] = _R["duplicate"]
    order = order[~dup]

    digest_decides = change_from == "digest" or fallback == "digest"
    if digest_decides:  # a 304/revisit carries the digest of the page's last copy forward
        pg = v.page[order]
        m = order.size
        k = np.arange(m)
        first = np.ones(m, dtype=bool)
        first[1:] = pg[1:] != pg[:-1]
        start = np.maximum.accumulate(np.where(first, k, 0))
        content = ~nm[order]
        last_content = np.maximum.accumulate(np.where(content, k, -1))
        no_ref = (last_content < start) & by_digest[order]
        reason[order[no_ref]] = _R["not_modified_before_reference"]
        assert v.digest is not None  # the digest decides only where the column is there
        eff = v.digest[order][np.maximum(last_content, 0)][~no_ref]
        order = order[~no_ref]
    pg, tm = v.page[order], v.time[order]
    m = order.size
    first = np.ones(m, dtype=bool)
    first[1:] = pg[1:] != pg[:-1]
    obs = ~first
    chg = np.zeros(m, dtype=np.int8)
    if change_from == "changed":
        assert v.changed is not None  # resolve_change_source checked that the column is there
        chg = v.changed[order].copy()
    elif change_from == "last_modified":
        assert v.last_modified is not None  # resolve_change_source checked that the column is there
        chg[1:] = v.last_modified[order][1:] > tm[:-1]
        if fallback == "changed":
            assert v.changed is not None  # the fallback is "changed" only where the column is there
            alt = by_changed[order]
            chg[alt] = v.changed[order][alt]
    if digest_decides:
        alt = by_digest[order]
        chg[1:][alt[1:]] = eff[1:][alt[1:]] != eff[:-1][alt[1:]]
    chg[nm[order]] = 0
    chg[first] = 0

    counts_all = np.bincount(v.page, minlength=labels.size) if n else np.zeros(labels.size, np.int64)
    kept_per_page = np.bincount(pg, minlength=labels.size)
    lm_age, lm_liars, liar = None, 0, None
    if v.last_modified is not None:
        assert says_now is not None  # found above from the same column
        lm_age, liar = _last_modified_ages(v, lm_ok, order, pg, tm, first, chg, nm, change_from, labels.size, says_now)
        lm_liars = int(np.count_nonzero(liar & ((kept_per_page > 0) | says_now)))
    n_pages = int(np.count_nonzero(counts_all))
    single = int(np.count_nonzero(kept_per_page == 1))
    none_usable = int(np.count_nonzero((counts_all > 0) & (kept_per_page == 0)))
    obs_pages = np.flatnonzero(kept_per_page >= 2)  # page codes of the history, in label order
    dropped = tuple((name, int(np.count_nonzero(reason == _R[name]))) for name in DROP_REASONS)
    audit = Audit(
        sources=tuple(str(s) for s in sources),
        change_source=change_from,
        rows_read=int(n),
        pages=n_pages,
        pages_kept=int(obs_pages.size),
        visits_kept=int(np.count_nonzero(obs & (kept_per_page[pg] >= 2))),
        reference_visits=int(np.count_nonzero(first)),
        dropped=dropped,
        out_of_order=out_of_order,
        single_visit_pages=single,
        pages_without_usable_visit=none_usable,
        last_modified_ignored=lm_ignored,
        last_modified_unreliable_pages=lm_liars,
        last_modified_fallback=fallback or "",
        **(audit_extra or {}),
    )
    if obs_pages.size == 0:
        if empty_ok:  # a partition of a cluster run may hold no usable page
            return CrawlLog(
                history=None,  # type: ignore[arg-type]  # internal: a partition's empty log, merged away before users see it
                first_visit=np.zeros(0, "datetime64[ns]"),
                last_visit=np.zeros(0, "datetime64[ns]"),
                audit=audit,
            )
        raise CrawlLogError(
            f"{', '.join(audit.sources)}: no page has two usable visits, so there is nothing to estimate\n"
            + audit.format()
        )
    # pages appear in sorted code order = order of first appearance in the log
    tau = np.zeros(m)
    # in unsigned arithmetic: two times 1678..2261 apart may differ by more than int64 holds
    # (the differences that count, within a page, are >= 0 and below 2**64)
    tau[1:] = (tm[1:].view(np.uint64) - tm[:-1].view(np.uint64)) / _NS_PER_HOUR
    lengths = kept_per_page[obs_pages] - 1
    flat_tau = tau[obs]
    sums = np.add.reduceat(flat_tau, np.concatenate(([0], np.cumsum(lengths)[:-1])))
    history = CrawlHistory.from_segments(
        chg[obs],
        flat_tau,
        lengths=lengths.astype(np.int64),
        crawl_rate=lengths / sums,
        page_ids=labels[obs_pages],
    )
    first_t = tm[first][kept_per_page[pg[first]] >= 2]
    last = np.ones(m, dtype=bool)
    last[:-1] = pg[1:] != pg[:-1]
    last_t = tm[last][kept_per_page[pg[last]] >= 2]
    # each page's last fetch attempt: its latest capture row, whatever became of it
    attempt = np.full(labels.size, np.iinfo(np.int64).min, dtype=np.int64)
    captures = ~v.not_capture
    np.maximum.at(attempt, v.page[captures], v.time[captures].astype("datetime64[ns]").view(np.int64))
    last_attempt = np.maximum(attempt[obs_pages], last_t.astype("datetime64[ns]").view(np.int64))
    return CrawlLog(
        history=history,
        first_visit=first_t.astype("datetime64[ns]"),
        last_visit=last_t.astype("datetime64[ns]"),
        audit=audit,
        last_modified_age=None if lm_age is None else lm_age[obs],
        last_modified_unreliable=None if liar is None else liar[obs_pages],
        last_attempt=last_attempt.view("datetime64[ns]"),
    )


def _first_visits(page, time, ok) -> np.ndarray:
    """Per row: whether it is its page's first among the rows ``ok``, by time, then file order."""
    rows = np.flatnonzero(ok)
    order = rows[np.lexsort((time[rows], page[rows]))]  # stable: ties stay in file order
    out = np.zeros(page.size, dtype=bool)
    head = np.ones(order.size, dtype=bool)
    head[1:] = page[order][1:] != page[order][:-1]
    out[order[head]] = True
    return out


#: A Last-Modified no earlier than this before its fetch time (60 s, in ns) says "now": clock skew
#: of a few seconds either way, and a page rendered at the request, still count.
LM_NOW_NS = 60 * 10**9
#: At least this many successful visits of a page must say "now" before its server is found unreliable.
LIAR_MIN_VISITS = 3
#: ... and they must be at least this share of the page's visits that carry a Last-Modified.
LIAR_SHARE = 0.8


def last_modified_liars(page, time, last_modified, usable, n_labels) -> np.ndarray:
    """Which pages' servers report the fetch time as Last-Modified, per page label (bool).

    A visit "says now" when its Last-Modified is no earlier than :data:`LM_NOW_NS` (60 s)
    before its fetch time: at the fetch, a few seconds either side of it (clock skew, a
    page generated for the request), or in the future. A page is unreliable when at least
    :data:`LIAR_MIN_VISITS` (3) of its usable visits with a Last-Modified say now, and
    they are at least :data:`LIAR_SHARE` (4 in 5) of those visits. So two visits never
    condemn a page (an honest page that changed seconds before two fetches is possible;
    three in a row of a page that changes once an hour on average has probability about 4.5·10^-6), one
    honest date among four or more "now" does not clear it (a cache or a CDN may serve
    the true date now and then), while one among two or three "now" does.

    A page that really changes every minute is indistinguishable from such a server by
    its dates alone; it is treated as one (its digests, where the log has them, still
    decide its changes).

    Parameters
    ----------
    page : ndarray of int64, shape (n_rows,)
        Page codes in ``range(n_labels)``.
    time, last_modified : ndarray of int64, shape (n_rows,)
        The time of each response (the server's ``Date`` header where known, else the
        fetch time) and its Last-Modified (UTC ns; ``_NAT`` where missing).
    usable : ndarray of bool, shape (n_rows,)
        The rows that are successful visits.
    """
    present = usable & (last_modified != _NAT)
    # time - lm <= 60 s, in unsigned arithmetic: the difference may exceed what int64 holds
    behind = time.view(np.uint64) - last_modified.view(np.uint64)
    now = present & ((last_modified >= time) | (behind <= np.uint64(LM_NOW_NS)))
    n_present = np.bincount(page, weights=present, minlength=n_labels)
    n_now = np.bincount(page, weights=now, minlength=n_labels)
    return (n_now >= LIAR_MIN_VISITS) & (n_now >= LIAR_SHARE * n_present - 1e-9)


def _wrong_dates(pg, says, same, n_labels) -> np.ndarray:
    """Per label: whether the dates say "changed" (``says``) at least twice, and the content was
    the same (``same``) on more than half of those visits."""
    n_says = np.bincount(pg, weights=says, minlength=n_labels)
    n_wrong = np.bincount(pg, weights=says & same, minlength=n_labels)
    return (n_says >= 2) & (2 * n_wrong > n_says)


def _dates_contradict_digest(v, lm_ok, usable, n_labels) -> np.ndarray:
    """Per label: whether the page's Last-Modified says "changed" where its digest shows the same content.

    The rule :func:`_last_modified_ages` applies where digests decide, on the visits
    digests would keep (the ``usable`` rows with a digest or a 304/revisit, sorted by
    time, duplicates and 304s before the first digest dropped), so that a page is found
    the same way when ``last_modified`` decides.
    """
    nm = v.not_modified
    rows = np.flatnonzero(usable & (v.has_digest | nm))
    order = rows[np.lexsort((v.time[rows], v.page[rows]))]  # stable: ties stay in file order
    pg, tm = v.page[order], v.time[order]
    first = np.ones(order.size, dtype=bool)
    first[1:] = pg[1:] != pg[:-1]
    keep = first.copy()
    keep[1:] |= tm[1:] != tm[:-1]  # duplicates collapse to the first in file order
    order, pg, tm = order[keep], pg[keep], tm[keep]
    k = np.arange(order.size)
    first = np.ones(order.size, dtype=bool)
    first[1:] = pg[1:] != pg[:-1]
    start = np.maximum.accumulate(np.where(first, k, 0))
    last_content = np.maximum.accumulate(np.where(~nm[order], k, -1))
    ref = last_content >= start  # a 304 before the page's first digest is no visit
    eff = v.digest[order][np.maximum(last_content, 0)][ref]  # a 304 carries the last digest forward
    order, pg, tm = order[ref], pg[ref], tm[ref]
    first = np.ones(order.size, dtype=bool)
    first[1:] = pg[1:] != pg[:-1]
    same = np.ones(order.size, dtype=bool)
    same[1:] = eff[1:] == eff[:-1]
    prev = np.empty_like(tm)
    if tm.size:
        prev[0] = tm[0]
        prev[1:] = tm[:-1]
    lm = v.last_modified[order]
    says = lm_ok[order] & ~first & (lm > prev) & ~nm[order]
    return _wrong_dates(pg, says, same, n_labels)


def _last_modified_ages(v, lm_ok, order, pg, tm, first, chg, nm, change_from, n_labels, says_now):
    """Each kept visit's age (hours since the Last-Modified time) where it dates the change seen, and the liars.

    Returns (age, liar): ``age`` per kept visit, NaN where unknown and 0 where no change
    was seen; a page whose Last-Modified is unreliable (``liar``, per label: it says
    "now", :func:`last_modified_liars`, or, where digests decide, it says "changed" while
    the content is the same on more than half of the visits where it says so) gets NaN on
    every visit, as does a page with a change its Last-Modified does not date.
    """
    lm = v.last_modified[order]
    valid = lm_ok[order]
    prev = np.empty_like(tm)
    if tm.size:  # no row left (e.g. every visit failed): no age, and build_log says there is nothing to estimate
        prev[0] = tm[0]
        prev[1:] = tm[:-1]
    inside = valid & ~first & (lm > prev)  # the date falls in the interval since the previous visit
    liar = says_now.copy()
    if change_from == "digest":
        liar |= _wrong_dates(pg, inside & ~nm[order], chg == 0, n_labels)
    changed = (chg == 1) & ~first
    age = np.where(changed, np.where(inside, (tm - lm) / _NS_PER_HOUR, np.nan), 0.0)
    undated = np.bincount(pg, weights=np.isnan(age), minlength=n_labels) > 0
    age[(liar | undated)[pg]] = np.nan
    return age, liar
