"""CSV and Parquet crawl logs (pandas + pyarrow), read in chunks."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from ._buckets import PageBuckets, bucket_count
from ._compressed import DECOMPRESSION_ERRORS, check_complete, decompression_error, open_text
from ._errors import CrawlLogError
from ._fields import check_field_counts
from ._semantics import (
    STANDARD_COLUMNS,
    CrawlLog,
    VisitColumns,
    check_digest_not_empty,
    compact_batch,
    compact_frame,
    resolve_change_source,
)

__all__ = ["read_csv", "read_parquet", "DEFAULT_CHUNK_ROWS"]

#: Rows per chunk (the text of one chunk is held at a time; see :func:`read_csv` for the rest).
DEFAULT_CHUNK_ROWS = 500_000


def _as_paths(paths) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    try:
        out = [Path(p) for p in paths]
    except TypeError:
        raise TypeError(f"`paths` must be a path or a list of paths; got {type(paths).__name__}") from None
    if not out:
        raise ValueError("`paths` must name at least one file")
    for p in out:
        if p.is_dir():
            raise CrawlLogError(f"{p}: is a folder, not a log file")
        if not p.exists():
            raise CrawlLogError(f"{p}: no such file")
        if not p.is_file():
            raise CrawlLogError(f"{p}: not a regular file (a device, pipe or socket); give a log file")
    seen: dict = {}
    for p in out:
        first = seen.setdefault(p.resolve(), p)
        if first is not p:
            same = "twice" if str(first) == str(p) else f"twice (as {str(first)!r} and {str(p)!r})"
            raise CrawlLogError(
                f"{p}: the same file is given {same}; give each log once (its visits would be read twice)"
            )
    return out


def check_columns(columns) -> dict:
    """The caller's mapping standard name -> file column name, checked."""
    if columns is None:
        return {}
    if not isinstance(columns, dict):
        raise TypeError(f"`columns` must be a dict (standard name -> your column name); got {type(columns).__name__}")
    unknown = sorted(set(columns) - set(STANDARD_COLUMNS))
    if unknown:
        raise ValueError(f"`columns` keys must be among {list(STANDARD_COLUMNS)}; got {unknown}")
    for k, val in columns.items():
        if not isinstance(val, str):
            raise TypeError(f"`columns[{k!r}]` must be a column name (str); got {type(val).__name__}")
    return dict(columns)


def _plan_next_file(header: list[str], mapping: dict, *, source: str, change_from: str, kind):
    """:func:`_plan` of one more file; its changes must be decided as in the files before (``kind``)."""
    plan, k = _plan(header, mapping, source=source, change_from=change_from)
    if kind is not None and k != kind:
        raise CrawlLogError(f"{source}: changes would be decided by {k!r} here but by {kind!r} in the first file")
    return plan, k


def _plan(header: list[str], mapping: dict, *, source: str, change_from: str):
    """Which file columns to read as which standard columns; errors for missing ones."""
    file_cols = set(header)
    for std, name in mapping.items():
        if name not in file_cols:
            raise CrawlLogError(
                f"{source}: line 1: missing column {name!r} (given for {std!r} in `columns`); the file has {header}"
            )
    plan = {}
    for std in STANDARD_COLUMNS:
        name = mapping.get(std, std)
        if name in file_cols:
            plan[std] = name
    if "digest" not in plan and "digest" not in mapping and "etag" in file_cols:
        plan["digest"] = "etag"  # an ETag names a version of the content as a digest does
    for std in ("page", "fetch_time"):
        if std not in plan:
            raise CrawlLogError(
                f"{source}: line 1: missing required column {mapping.get(std, std)!r}; "
                f"the file has {header} (map yours with `columns=`)"
            )
    # under "auto", a digest or ``changed`` column the caller maps in ``columns`` decides ahead of one
    # found by its standard name (a mapped last_modified is read in any case: its dates and audit)
    explicit = [c for c in ("digest", "changed") if c in mapping]
    kind = resolve_change_source(
        explicit[0] if change_from == "auto" and explicit else change_from, set(plan), source=source
    )
    # read only what decides changes, plus status and last_modified (audit); where last_modified
    # decides, also the digest (else ``changed``): it decides for pages whose server reports the fetch time;
    # a column mapped in ``columns`` is always read, so that its values are checked
    spare: tuple[str, ...] = ()
    if kind == "last_modified":
        spare = ("digest",) if "digest" in plan else ("changed",)
    for other in {"digest", "changed", "last_modified"} - {kind, "last_modified", *spare, *mapping}:
        plan.pop(other, None)
    roles: dict = {}
    for std, name in plan.items():
        if name in roles:
            raise ValueError(
                f"{source}: the column {name!r} would be read as both {roles[name]!r} and {std!r}; "
                "give each role its own column (`columns` maps a role to one column)"
            )
        roles[name] = std
    return plan, kind


def _with_not_modified(plan: dict, header) -> list:
    """The file columns to read: the plan's, and ``not_modified`` (304 / revisit flags) and ``signal``
    (rows that are signals, not visits) if the file has them."""
    cols = list(plan.values())
    for extra in ("not_modified", "signal"):  # 304 / revisit flags; signal rows, which are not visits
        if extra in header and extra not in cols:
            cols.append(extra)
    return cols


def check_scan_rows(scan: _Scan) -> None:
    """Errors of a whole scan: no data rows; a digest column that is empty in every row."""
    from types import SimpleNamespace

    if scan.store.rows == 0:
        raise CrawlLogError(f"{', '.join(map(str, scan.files))}: no visits: the file(s) hold no data rows")
    if scan.kind == "digest" and scan.store.any_digest() is False:
        check_digest_not_empty(
            SimpleNamespace(has_digest=np.zeros(1, bool)),
            source=", ".join(map(str, scan.files)),
            column=scan.plans[0]["digest"],
        )


def _finish(scan: _Scan) -> CrawlLog:
    """The log of a finished scan: :func:`build_log` applied one bucket of pages at a time."""
    from ._buckets import build_log_bucketed

    check_scan_rows(scan)
    return build_log_bucketed(scan.store, scan.labels, change_from=scan.kind, sources=scan.files)


class _Scan:
    """What reading a tabular log's files gathers: page labels, column plans, the rows by bucket."""

    def __init__(self, files, store):
        self.files = files
        self.store = store
        self.labels = pd.Index([], dtype=object)
        self.state: dict = {}
        self.plans: list = []
        self.kind = None

    def add(self, part: VisitColumns) -> None:
        if part.page.size:
            self.store.add(part)


def read_csv(paths, *, columns=None, change_from="auto", chunk_rows=DEFAULT_CHUNK_ROWS, sep=",") -> CrawlLog:
    """Read crawl logs in CSV (optionally compressed: .gz, .bz2, .xz, .zst) into a ragged history.

    A crawl log is a long table of visits, one row per visit, with columns ``page``
    and ``fetch_time`` (ISO-8601; with or without a UTC offset, not mixed; a date alone
    is naive; or a number: seconds since 1970-01-01 UTC, below 1e11, see
    :func:`~changerate_bayes.io._times.parse_time_column`) and any of ``status`` (HTTP
    status), ``digest`` (content hash, ETag or payload digest), ``changed`` (0/1 when
    the crawler already decided; may be empty on a page's first visit),
    ``last_modified`` (as aware as ``fetch_time``; also an HTTP date in any form of
    RFC 9110 section 5.6.7) and ``not_modified`` (0/1 or
    true/false: an HTTP 304 or a revisit, a visit that saw no change). A compressed file
    is recognised by its first bytes; a UTF-8 byte-order mark is ignored.

    Parameters
    ----------
    paths : path or list of paths
        One log, or several read as one (same columns).
    columns : dict, optional
        Your column names: standard name -> file column, e.g.
        ``{"page": "url", "fetch_time": "ts", "digest": "sha1"}``. A column named here
        is always read and its values checked.
    change_from : {"auto", "digest", "changed", "last_modified"}, default "auto"
        What decides I_k (see :mod:`changerate_bayes.io`): "auto" takes the digest if
        there is one, else ``changed``, else ``last_modified``; a ``digest`` or
        ``changed`` named in ``columns`` comes before one found by its standard name
        (``columns={"changed": "flag"}`` makes the flag decide beside a ``digest``
        column). With ``last_modified``
        the digest (else ``changed``) column is read too, if present: it decides the
        changes of pages whose server reports the fetch time as Last-Modified
        (:mod:`changerate_bayes.io._semantics`, rule 7).
    chunk_rows : int, default 500_000
        Rows parsed at a time (the text of one chunk is held at a time).
    sep : str, default ","

    Returns
    -------
    CrawlLog
        The ragged history (intervals in hours), first/last visit times, audit.

    Raises
    ------
    CrawlLogError (a ValueError)
        Naming the file, line and column (the file's physical line, also after quoted
        fields holding newlines): a missing required column, an unparsable or missing
        time, a time outside the years 1678-2261, a row with more or fewer fields than
        the header, naive and aware times mixed (in
        ``fetch_time`` and ``last_modified`` together), an entirely empty digest
        column, a non-numeric status, a ``changed`` value other than 0/1, a
        ``not_modified`` value that is not a boolean, no data rows, no page with two
        usable visits, a path that is not a regular file, or a compressed file that is
        truncated, corrupt or not compressed as its name says.
    ValueError
        If one file column would be read for two roles (e.g. ``columns={"page":
        "digest"}`` with a ``digest`` column), naming both.
    TypeError
        For ``paths`` or ``columns`` of the wrong type.

    Notes
    -----
    Memory grows with the visits: every row is held as compact columns (35 bytes:
    page code, time, status, digest hash, flags) until the end of the files, then the
    change rules run one bucket of pages at a time (about 2·10^6 rows a bucket, about 200
    bytes per row of the bucket in work arrays), and the history keeps 9 bytes per
    visit kept. Measured on a Parquet log of 10^7 rows of 10^5 pages: a peak of about
    100 bytes per row above the process's start (1.1 GB). For the per-page table in
    memory bounded by the pages, use :func:`changerate_bayes.estimate_log`.

    Examples
    --------
    >>> import io, tempfile, os
    >>> from changerate_bayes.io import read_csv
    >>> text = "page,fetch_time,digest\\na,2024-01-01T00:00Z,x\\na,2024-01-01T06:00Z,y\\na,2024-01-01T18:00Z,y\\n"
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "log.csv")
    ...     _ = open(path, "w").write(text)
    ...     log = read_csv(path)
    >>> log.history.flat_changed.tolist(), log.history.flat_intervals.tolist()
    ([1, 0], [6.0, 12.0])
    """
    mapping = check_columns(columns)
    chunk_rows = _check_chunk(chunk_rows)
    files = _as_paths(paths)
    with PageBuckets(bucket_count(csv_rows_estimate(files))) as store:
        scan = _Scan(files, store)
        scan_csv(scan, mapping=mapping, change_from=change_from, chunk_rows=chunk_rows, sep=sep)
        return _finish(scan)


def csv_rows_estimate(files) -> float:
    """A rough number of rows of CSV files, from their sizes (~40 bytes a row, ~5x for compressed)."""
    total = 0.0
    for p in files:
        size = os.path.getsize(p)
        total += size * (5 if p.suffix.lower() in (".gz", ".bz2", ".zst", ".xz") else 1) / 40.0
    return total


def scan_csv(scan: _Scan, *, mapping: dict, change_from: str, chunk_rows: int, sep: str = ",") -> None:
    """Read CSV files chunk by chunk into ``scan`` (compact columns, page labels, column plans)."""
    for path in scan.files:
        src = str(path)
        check_complete(path, src)  # a cut zstd file would read as fewer rows
        try:
            header = list(pd.read_csv(path, sep=sep, nrows=0).columns)
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise CrawlLogError(f"{src}: line 1: not a readable CSV file ({exc})") from None
        except DECOMPRESSION_ERRORS as exc:
            raise decompression_error(src, exc, path) from None
        plan, scan.kind = _plan_next_file(header, mapping, source=src, change_from=change_from, kind=scan.kind)
        scan.plans.append(plan)
        check_field_counts(path, src=src, sep=sep)  # pandas would drop extra fields and pad missing ones
        inv = {v: s for s, v in plan.items()}
        line = 2
        try:
            with pd.read_csv(
                path,
                sep=sep,
                usecols=_with_not_modified(plan, header),
                dtype=str,
                keep_default_na=False,
                chunksize=chunk_rows,
            ) as reader:  # closed on a bad value too
                for chunk in reader:
                    chunk = chunk.rename(columns=inv)
                    part, scan.labels = compact_frame(
                        chunk,
                        source=src,
                        first_line=line,
                        line_word="line",
                        labels=scan.labels,
                        state=scan.state,
                        names=plan,
                    )
                    scan.add(part)
                    line += len(chunk)
        except CrawlLogError as exc:
            raise _at_physical_lines(exc, path, src=src, sep=sep) from None
        except pd.errors.ParserError as exc:
            raise _at_physical_lines(
                CrawlLogError(f"{src}: near line {line}: malformed CSV ({exc})"), path, src=src, sep=sep
            ) from None
        except UnicodeDecodeError as exc:
            raise CrawlLogError(
                f"{src}: at or after line {line}: not UTF-8 text ({exc.reason}: byte "
                f"{exc.object[exc.start]:#04x}); re-encode the file as UTF-8"
            ) from None
        except DECOMPRESSION_ERRORS as exc:
            raise decompression_error(src, exc, path) from None


def read_parquet(paths, *, columns=None, change_from="auto", chunk_rows=DEFAULT_CHUNK_ROWS) -> CrawlLog:
    """Read crawl logs in Parquet, batch by batch, into a ragged history.

    Same columns, change rules, result and errors as :func:`read_csv` ("row" numbers
    count data rows from 1). Time columns may be Parquet timestamps (with or without a
    time zone; naive ones are taken as UTC) or ISO-8601 strings.

    Raises
    ------
    CrawlLogError (a ValueError)
        As :func:`read_csv`, or for a file that is not Parquet.
    """
    mapping = check_columns(columns)
    chunk_rows = _check_chunk(chunk_rows)
    files = _as_paths(paths)
    with PageBuckets(bucket_count(parquet_rows(files))) as store:
        scan = _Scan(files, store)
        scan_parquet(scan, mapping=mapping, change_from=change_from, chunk_rows=chunk_rows)
        return _finish(scan)


def _open_parquet(path, read_dictionary=None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path, read_dictionary=read_dictionary)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CrawlLogError(f"{path}: not a readable Parquet file ({exc})") from None


def parquet_rows(files) -> float:
    """Rows of Parquet files, from their footers (0 for a file that cannot be opened)."""
    total = 0
    for p in files:
        try:
            total += _open_parquet(p).metadata.num_rows
        except CrawlLogError:
            pass
    return float(total)


def scan_parquet(scan: _Scan, *, mapping: dict, change_from: str, chunk_rows: int) -> None:
    """Read Parquet files batch by batch into ``scan`` (compact columns, page labels, plans).

    String page and digest columns are read as dictionaries, so that each batch's
    distinct values, not its rows, are compared with the labels seen and hashed; the
    common column types go from the Arrow buffers to compact columns without a pandas
    frame (:func:`compact_batch`).
    """
    import pyarrow as pa

    for path in scan.files:
        src = str(path)
        pf = _open_parquet(path)
        header = list(pf.schema_arrow.names)
        plan, scan.kind = _plan_next_file(header, mapping, source=src, change_from=change_from, kind=scan.kind)
        scan.plans.append(plan)
        schema = pf.schema_arrow
        as_dict = [
            plan[c]
            for c in ("page", "digest")
            if c in plan
            and (pa.types.is_string(schema.field(plan[c]).type) or pa.types.is_large_string(schema.field(plan[c]).type))
        ]
        if as_dict:
            pf = _open_parquet(path, read_dictionary=as_dict)
        inv = {v: s for s, v in plan.items()}
        row = 1
        for batch in read_ahead(pf.iter_batches(batch_size=chunk_rows, columns=_with_not_modified(plan, header))):
            part, scan.labels = compact_batch(
                batch, source=src, first_line=row, labels=scan.labels, state=scan.state, inv=inv, names=plan
            )
            scan.add(part)
            row += batch.num_rows


_END = object()


def read_ahead(items):
    """The items of an iterator, the next one produced on a second thread while the caller uses this one.

    For readers that release the GIL (pyarrow decodes a Parquet batch while the caller
    compacts the one before): the items and their order are those of ``items``; an
    exception of ``items`` is raised where its item would have been. With pyarrow's CPU
    count set to 1 (as in the Dask engine's tasks, which run on one core each:
    :mod:`changerate_bayes.crawllog._dask_tasks`) the items are produced in the caller's thread.
    """
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    if pa.cpu_count() <= 1:
        yield from items
        return
    it = iter(items)
    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = pool.submit(next, it, _END)
        while True:
            item = ahead.result()
            if item is _END:
                return
            ahead = pool.submit(next, it, _END)
            yield item


def _at_physical_lines(exc: CrawlLogError, path, *, src: str, sep: str) -> CrawlLogError:
    """``exc`` with the line numbers of ``src`` (counted in records) made the file's physical lines.

    The chunk loop counts records (header = line 1); a quoted field holding a newline, or
    a blank line, makes a record start on a later line of the file. Only on the error
    path: the file is scanned again up to the record named.
    """
    import csv
    import re

    text = str(exc)
    pattern = re.compile(re.escape(src) + r": ((?:near |at or after )?line )(\d+)|(\(line )(\d+)( is)")
    wanted = {int(m.group(2) or m.group(4)) for m in pattern.finditer(text)}
    if not wanted:
        return exc
    starts: dict = {}
    try:
        with open_text(path) as fh:
            reader = csv.reader(fh, delimiter=sep)
            record, end = 0, 0
            for row in reader:
                start, end = end + 1, reader.line_num
                if not row:  # a blank line: pandas skips it
                    continue
                record += 1
                if record in wanted:
                    starts[record] = start
                    if len(starts) == len(wanted):
                        break
    except (csv.Error, UnicodeDecodeError, *DECOMPRESSION_ERRORS):
        return exc
    if all(starts.get(k, k) == k for k in wanted):
        return exc

    def fix(m):
        if m.group(2):
            return f"{src}: {m.group(1)}{starts.get(int(m.group(2)), m.group(2))}"
        return f"{m.group(3)}{starts.get(int(m.group(4)), m.group(4))}{m.group(5)}"

    return CrawlLogError(pattern.sub(fix, text))


def _check_chunk(chunk_rows) -> int:
    if isinstance(chunk_rows, bool) or not isinstance(chunk_rows, int):
        raise TypeError(f"`chunk_rows` must be an int; got {type(chunk_rows).__name__}")
    if chunk_rows < 1:
        raise ValueError(f"`chunk_rows` must be >= 1; got {chunk_rows}")
    return chunk_rows
