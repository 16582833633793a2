"""Real change traces shipped with the package (see ``data/SOURCES.md``).

Three kinds of trace, which mean different things:

- ``"revisions"`` (``wikipedia_*``, ``wikidata_*``): exact save times of every revision.
- ``"crawl_detections"`` (``gitscrape_*``): times a scheduled crawl *detected* a change,
  rounded to the crawl schedule; crawls that saw no change leave no record.
- ``"commits"`` (``git_*``): commit times of a human-edited document.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from importlib import resources

import numpy as np

from .._event_times import parse_timestamps

__all__ = ["TraceInfo", "list_traces", "load_trace", "trace_info", "read_trace_csv"]

_KINDS = {"wikipedia": "revisions", "wikidata": "revisions", "gitscrape": "crawl_detections", "git": "commits"}

# Nominal crawl interval (hours) of the crawl-detection traces, from data/SOURCES.md.
_CRAWL_INTERVAL_HOURS = {
    "gitscrape_ca-fires-history_incidents": 20 / 60,
    "gitscrape_scrape-hacker-news-by-domain_simonwillison-net": 1.0,
    "gitscrape_nyt-2020-election-scraper_results": 10 / 60,
    "gitscrape_simonwillisonblog-backup_blog_blogmark": 2.0,
}


@dataclass(frozen=True)
class TraceInfo:
    """What a shipped trace is.

    Attributes
    ----------
    name : str
        File stem, as given by :func:`list_traces`.
    kind : {"revisions", "crawl_detections", "commits"}
    crawl_interval_hours : float or None
        Nominal crawl interval for ``"crawl_detections"`` traces (the schedule may
        vary: see SOURCES.md), else None.
    """

    name: str
    kind: str
    crawl_interval_hours: float | None


def _data_dir():
    return resources.files(__package__) / "data"


def list_traces() -> list[str]:
    """Names (file stems) of the shipped traces, sorted.

    Examples
    --------
    >>> from changerate_bayes.traces import list_traces
    >>> "wikipedia_oblast" in list_traces()
    True
    """
    return sorted(p.name[:-4] for p in _data_dir().iterdir() if p.name.endswith(".csv"))


def trace_info(name: str) -> TraceInfo:
    """Kind and crawl schedule of the shipped trace ``name``.

    Raises
    ------
    ValueError
        If ``name`` is not a shipped trace.
    """
    _check_name(name)
    return TraceInfo(name, _KINDS[name.split("_", 1)[0]], _CRAWL_INTERVAL_HOURS.get(name))


def _check_name(name):
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a trace name (str); got {type(name).__name__}")
    names = list_traces()
    if name not in names:
        raise ValueError(f"`name` must be one of the shipped traces {names}; got {name!r}")


def read_trace_csv(path) -> np.ndarray:
    """Read a trace CSV (header ``timestamp``, one ISO-8601 time per line).

    Parameters
    ----------
    path : str or os.PathLike
        The file, UTF-8 encoded (a leading byte-order mark is allowed).

    Returns
    -------
    ndarray of datetime64[us], shape (n,)
        UTC event times, sorted ascending (ties kept).

    Raises
    ------
    TypeError
        If ``path`` is not a str or path (an int would be taken as a file descriptor).
    ValueError
        If the file is not valid UTF-8, the header is not ``timestamp``, a line is
        unparsable, a time is missing, time zones are mixed or the times are not
        sorted: the message names the file and the line.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` must be a file path (str or os.PathLike); got {type(path).__name__}")
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ValueError(
            f"trace file {path} line {line}: not valid UTF-8 (byte {raw[exc.start]:#04x} at "
            f"offset {exc.start}); save the file as UTF-8"
        ) from None
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if not rows or [c.strip() for c in rows[0]] != ["timestamp"]:
        raise ValueError(f"trace file {path}: the first line must be the header 'timestamp'")
    items = []
    for line_no, row in enumerate(rows[1:], start=2):
        if len(row) != 1:
            raise ValueError(f"trace file {path} line {line_no}: expected one column, got {len(row)}")
        items.append(row[0])
    stamps = parse_timestamps(items, name=f"trace file {path} line", row_offset=2)
    dec = np.flatnonzero(np.diff(stamps) < np.timedelta64(0, "us"))
    if dec.size:
        line = int(dec[0]) + 3
        raise ValueError(
            f"trace file {path} line {line}: {stamps[dec[0] + 1]} is earlier than the line before; "
            "timestamps must be sorted ascending"
        )
    return stamps


def load_trace(name: str) -> np.ndarray:
    """Event times of the shipped trace ``name``.

    Parameters
    ----------
    name : str
        One of :func:`list_traces`.

    Returns
    -------
    ndarray of datetime64[us], shape (n_events,)
        UTC event times, sorted ascending; ties kept.

    Raises
    ------
    ValueError
        If ``name`` is unknown or the file is malformed (unparsable or unsorted
        timestamps), naming the line.

    Examples
    --------
    >>> from changerate_bayes.traces import load_trace
    >>> t = load_trace("wikipedia_oblast")
    >>> t.dtype, len(t)
    (dtype('<M8[us]'), 958)
    """
    _check_name(name)
    with resources.as_file(_data_dir() / f"{name}.csv") as path:
        return read_trace_csv(path)
