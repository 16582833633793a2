"""Choosing a reader by format name or by file name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import CrawlLogError

if TYPE_CHECKING:  # only for the annotations: the readers import pandas on first use
    from ._semantics import CrawlLog

__all__ = ["BUCKET_FOLDER", "FORMATS", "common_format", "detect_format", "log_files", "mixed_formats_error", "read_log"]

#: Format names accepted by :func:`read_log` (and ``estimate --format``).
FORMATS = ("csv", "parquet", "cdx", "warc", "ota", "auto")

#: the file-name suffixes of each format (before any compression suffix)
_FORMAT_SUFFIXES = {
    "csv": (".csv",),
    "parquet": (".parquet", ".pq"),
    "cdx": (".cdx", ".cdxj"),
    "warc": (".warc", ".arc"),
}
_SUFFIXES = {suffix: fmt for fmt, suffixes in _FORMAT_SUFFIXES.items() for suffix in suffixes}
_COMPRESSED = (".gz", ".bz2", ".xz", ".zst")


_CDXJ_LINE = re.compile(r"^\S+ \d{14} \{")
_CDX_LINE = re.compile(r"^\S+ \d{14} \S+ \S+ \S+ \S+ \S+")


def _sniff(path: Path) -> str | None:
    """The format told by a file's first bytes (decompressed if gzip, bz2, xz or zstd), or None."""
    from ._compressed import DECOMPRESSION_ERRORS, compression_of, decompression_error, open_text

    with open(path, "rb") as fh:
        if fh.read(4) == b"PAR1":
            return "parquet"
    try:  # undecodable bytes replaced: a stray non-UTF-8 byte is the reader's error, with its line
        with open_text(path, encoding="utf-8-sig", errors="replace") as fh:
            head = fh.read(4096)
    except DECOMPRESSION_ERRORS as exc:
        if compression_of(path) is not None:  # cut or corrupt before its first lines: that is the error
            raise decompression_error(str(path), exc, path) from None
        head = ""
    except CrawlLogError:
        head = ""
    if head.startswith(("WARC/", "filedesc://")):
        return "warc"
    first = head.split("\n", 1)[0].rstrip("\r")
    if first.lstrip().startswith("CDX ") or _CDXJ_LINE.match(first) or _CDX_LINE.match(first):
        return "cdx"
    return None


def detect_format(path) -> str:
    """The format of a log from its name (``.csv[.gz]``, ``.parquet``, ``.cdx[j][.gz]``, ``.warc[.gz]``).

    A CSV whose header holds ``changed_filtered`` is the Open Terms Archive format ("ota").
    A name that does not tell (e.g. Common Crawl's index shards ``cdx-00123.gz``) is
    decided by the file's first bytes: Parquet's magic, a WARC record header, or a CDX
    or CDXJ line (``key 14-digit-timestamp ...``), read through gzip, bz2 or xz.

    Raises
    ------
    CrawlLogError (a ValueError)
        If the name does not tell the format, the path is a device, pipe or socket, or a
        compressed file that must be read to tell its format cannot be decompressed that far
        (cut short or corrupt).
    """
    p = Path(path)
    if p.exists() and not p.is_file() and not p.is_dir():
        raise CrawlLogError(f"{p}: not a regular file (a device, pipe or socket); give a log file")
    suffixes = [s.lower() for s in p.suffixes]
    while suffixes and suffixes[-1] in _COMPRESSED:
        suffixes.pop()
    fmt = _SUFFIXES.get(suffixes[-1]) if suffixes else None
    if fmt is None and p.is_file():
        fmt = _sniff(p)
    if fmt is None:
        raise CrawlLogError(
            f"{p}: unknown format: the file name does not end in one of {sorted(_SUFFIXES)} "
            f"(optionally compressed {list(_COMPRESSED)}) and its first line is not that of a known format; "
            f"pass the format (one of {list(FORMATS[:-1])})"
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


def common_format(paths) -> str:
    """The format the names of ``paths`` tell (:func:`detect_format`), which they must share.

    CDX and WARC files together (one log of the same pages, read together by
    :func:`read_log`) give "auto".

    Raises
    ------
    CrawlLogError (a ValueError)
        Naming two files of different formats (one ``format`` cannot read both), or as
        :func:`detect_format`.
    """
    paths = list(paths)
    kinds = [detect_format(p) for p in paths]
    if set(kinds) == {"cdx", "warc"}:
        return "auto"
    if len(set(kinds)) > 1:
        raise mixed_formats_error(paths, kinds)
    return kinds[0]


#: Formats that mix in one log: captures keyed by URL whose changes their payload digests decide.
_CAPTURES = ("cdx", "warc")


def mixed_formats_error(paths, kinds) -> CrawlLogError:
    """The error for files of formats that cannot be read as one log, saying why.

    CDX/CDXJ and WARC files mix; a CSV, Parquet or Open Terms Archive log does not mix
    with them, nor with another format: its pages, times and changes come from columns
    named by the file (or by ``columns``), with its own page names and digest algorithm,
    which nothing matches to the captures' URLs and payload digests.
    """
    paths, kinds = list(paths), list(kinds)
    captures = [(p, k) for p, k in zip(paths, kinds) if k in _CAPTURES]
    others = [(p, k) for p, k in zip(paths, kinds) if k not in _CAPTURES]
    if captures and others:
        (p0, k0), (p1, k1) = captures[0], others[0]
        return CrawlLogError(
            f"{p0}, {p1}: {p0} is {k0!r} and {p1} is {k1!r}: CDX/CDXJ and WARC files mix in one log (captures "
            f"keyed by URL, changes decided by their payload digests), but a {k1!r} log names its pages and "
            "digests in its own columns, which cannot be matched to the captures' URLs and payload digests; "
            f"read the {k1!r} file(s) separately"
        )
    p1, k1 = next((p, k) for p, k in zip(paths, kinds) if k != kinds[0])
    return CrawlLogError(
        f"{paths[0]}, {p1}: the files must share one format, but {paths[0]} is {kinds[0]!r} "
        f"and {p1} is {k1!r}; read each format separately"
    )


#: The folder name of a hive-style partition of the log by page: ``page_bucket=K/``.
BUCKET_FOLDER = "page_bucket"


def log_files(paths) -> tuple[list, list]:
    """The files of a log given as files and folders, and each file's page bucket.

    A folder stands for every file under it (hidden files and names starting with
    ``_`` skipped; sorted by path). A file under a folder named ``page_bucket=K``
    (hive-style partitioning) is in bucket ``K``; other files have bucket None.

    Returns
    -------
    (list of pathlib.Path, list of str or None)

    Raises
    ------
    CrawlLogError (a ValueError)
        For a path that does not exist, or a folder with no files.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(
                f
                for f in p.rglob("*")
                if f.is_file() and not any(part.startswith((".", "_")) for part in f.relative_to(p).parts)
            )
            if not found:
                raise CrawlLogError(f"{p}: the folder holds no log file")
            files.extend(found)
        elif p.exists():  # a device or pipe is named by the reader
            files.append(p)
        else:
            raise CrawlLogError(f"{p}: no such file or folder")
    buckets = []
    for f in files:
        tags = [part.split("=", 1)[1] for part in f.parts[:-1] if part.startswith(BUCKET_FOLDER + "=")]
        buckets.append(tags[-1] if tags else None)
    return files, buckets


def refuse_surt_for_warc(files, format: str, page_key) -> None:
    """SURT keys are a CDX index's: a WARC file among ``files`` (read as ``format``) cannot be keyed by them.

    Raises
    ------
    CrawlLogError (a ValueError)
        Naming the first WARC file when ``page_key`` is "surt".
    """
    if page_key != "surt":
        return
    for f in files:
        if (format if format != "auto" else detect_format(f)) == "warc":
            raise CrawlLogError(
                f"{f}: `page_key` surt keys the pages of CDX/CDXJ indexes by their SURT urlkey, "
                "but WARC records name their page only by URL (WARC-Target-URI); key by URL "
                "(`page_key` url, the default) or read the CDX index alone"
            )


def read_log(
    paths, *, format="auto", columns=None, change_from="auto", ota_changed="filtered", chunk_rows=None, page_key="url"
) -> CrawlLog:
    """Read crawl logs of any supported format into a ragged history.

    Parameters
    ----------
    paths : path or list of paths
        Several files are read as one log (they must share a format, except that CDX
        and WARC files may be mixed: their pages are both keyed by URL).
    format : {"csv", "parquet", "cdx", "warc", "ota", "auto"}, default "auto"
        "auto" decides from the file names, or the first bytes (see :func:`detect_format`).
    columns, change_from
        For "csv" and "parquet" (see :func:`read_csv`).
    ota_changed : {"filtered", "raw"}, default "filtered"
        For "ota" (see :func:`read_ota`).
    chunk_rows : int, optional
        Rows (lines, records) per chunk; default the readers' default.
    page_key : {"url", "surt"}, default "url"
        For "cdx": what names a page (see :func:`read_cdx`); WARC logs name pages by
        URL, so a CDX and a WARC log of the same captures give the same pages ("surt"
        with a WARC file is refused).

    Returns
    -------
    CrawlLog

    Raises
    ------
    CrawlLogError (a ValueError)
        For an unknown format (naming the file), files of different formats with
        "auto" (naming two; CDX with WARC is one log), or any reader's error.
    """
    from ._cdx import read_cdx
    from ._ota import read_ota
    from ._tabular import DEFAULT_CHUNK_ROWS, _as_paths, read_csv, read_parquet
    from ._warc import read_warc

    files = _as_paths(paths)
    if not isinstance(format, str) or format not in FORMATS:
        raise CrawlLogError(f"{files[0]}: unknown format {format!r}; choose one of {list(FORMATS)}")
    refuse_surt_for_warc(files, format, page_key)
    if format == "auto":
        kinds = {detect_format(p) for p in files}
        if kinds == {"cdx", "warc"}:  # one log of the same pages in both, keyed by URL
            from ._pieces import read_pieces

            return read_pieces(files, [detect_format(p) for p in files], chunk_rows=chunk_rows, page_key=page_key)
        format = common_format(files)
    chunk = DEFAULT_CHUNK_ROWS if chunk_rows is None else chunk_rows
    if format == "csv":
        return read_csv(files, columns=columns, change_from=change_from, chunk_rows=chunk)
    if format == "parquet":
        return read_parquet(files, columns=columns, change_from=change_from, chunk_rows=chunk)
    if format == "cdx":
        return read_cdx(files, chunk_rows=chunk, page_key=page_key)
    if format == "warc":
        return read_warc(files, chunk_rows=chunk)
    return read_ota(files, changed=ota_changed, chunk_rows=chunk)
