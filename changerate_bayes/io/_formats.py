"""Choosing a reader by format name or by file name."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import CrawlLogError

if TYPE_CHECKING:  # only for the annotations: the readers import pandas on first use
    from ._semantics import CrawlLog

__all__ = ["FORMATS", "detect_format", "read_log"]

#: Format names accepted by :func:`read_log` (and ``estimate --format``).
FORMATS = ("csv", "parquet", "cdx", "warc", "ota", "auto")

_SUFFIXES = {
    ".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".cdx": "cdx", ".cdxj": "cdx",
    ".warc": "warc", ".arc": "warc",
}
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst")


def detect_format(path) -> str:
    """The format of a log from its name (``.csv[.gz]``, ``.parquet``, ``.cdx[j][.gz]``, ``.warc[.gz]``).

    A CSV whose header holds ``changed_filtered`` is the Open Terms Archive format ("ota").

    Raises
    ------
    CrawlLogError (a ValueError)
        If the name does not tell the format, or the path is a device, pipe or socket.
    """
    p = Path(path)
    if p.exists() and not p.is_file() and not p.is_dir():
        raise CrawlLogError(f"{p}: not a regular file (a device, pipe or socket); give a log file")
    suffixes = [s.lower() for s in p.suffixes]
    while suffixes and suffixes[-1] in _COMPRESSED:
        suffixes.pop()
    fmt = _SUFFIXES.get(suffixes[-1]) if suffixes else None
    if fmt is None:
        raise CrawlLogError(
            f"{p}: unknown format: the file name does not end in one of {sorted(_SUFFIXES)} "
            f"(optionally compressed {list(_COMPRESSED)}); pass the format (one of {list(FORMATS[:-1])})"
        )
    if fmt == "csv" and p.is_file():
        from ._compressed import DECOMPRESSION_ERRORS, open_text

        try:
            with open_text(p) as fh:
                header = fh.readline()
        except (UnicodeDecodeError, *DECOMPRESSION_ERRORS):
            header = ""  # the reader names the problem
        if "changed_filtered" in [c.strip() for c in header.split(",")]:
            return "ota"
    return fmt


def read_log(paths, *, format="auto", columns=None, change_from="auto", ota_changed="filtered",
             chunk_rows=None) -> CrawlLog:
    """Read crawl logs of any supported format into a ragged history.

    Parameters
    ----------
    paths : path or list of paths
        Several files are read as one log (they must share a format).
    format : {"csv", "parquet", "cdx", "warc", "ota", "auto"}, default "auto"
        "auto" decides from the file names (see :func:`detect_format`).
    columns, change_from
        For "csv" and "parquet" (see :func:`read_csv`).
    ota_changed : {"filtered", "raw"}, default "filtered"
        For "ota" (see :func:`read_ota`).
    chunk_rows : int, optional
        Rows (lines, records) per chunk; default the readers' default.

    Returns
    -------
    CrawlLog

    Raises
    ------
    CrawlLogError (a ValueError)
        For an unknown format (naming the file), files of different formats with
        "auto", or any reader's error.
    """
    from ._cdx import read_cdx
    from ._ota import read_ota
    from ._tabular import DEFAULT_CHUNK_ROWS, _as_paths, read_csv, read_parquet
    from ._warc import read_warc

    files = _as_paths(paths)
    if not isinstance(format, str) or format not in FORMATS:
        raise CrawlLogError(f"{files[0]}: unknown format {format!r}; choose one of {list(FORMATS)}")
    if format == "auto":
        kinds = {detect_format(p) for p in files}
        if len(kinds) > 1:
            raise CrawlLogError(f"{', '.join(map(str, files))}: the files have different formats {sorted(kinds)}; "
                                "read them separately or pass `format`")
        format = kinds.pop()
    chunk = DEFAULT_CHUNK_ROWS if chunk_rows is None else chunk_rows
    if format == "csv":
        return read_csv(files, columns=columns, change_from=change_from, chunk_rows=chunk)
    if format == "parquet":
        return read_parquet(files, columns=columns, change_from=change_from, chunk_rows=chunk)
    if format == "cdx":
        return read_cdx(files, chunk_rows=chunk)
    if format == "warc":
        return read_warc(files, chunk_rows=chunk)
    return read_ota(files, changed=ota_changed, chunk_rows=chunk)
