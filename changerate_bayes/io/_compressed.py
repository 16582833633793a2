"""Compressed logs: opening them as text by their magic bytes, and naming the file when they are broken."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib

from ._errors import CrawlLogError

__all__ = ["DECOMPRESSION_ERRORS", "check_complete", "compression_of", "decompression_error", "open_bytes", "open_text"]

_MAGIC = ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))
_SUFFIX = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd"}


def _zstd_error():
    import zstandard

    return zstandard.ZstdError


#: What the decompressors raise for a truncated or corrupt stream (gzip.BadGzipFile is an OSError).
DECOMPRESSION_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError, _zstd_error())


def compression_of(path) -> str | None:
    """ "gzip", "bz2", "xz", "zstd" from the file's first bytes, or None for an uncompressed file."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    return next((kind for magic, kind in _MAGIC if head.startswith(magic)), None)


def check_complete(path, src: str | None = None) -> None:
    """Refuse a zstd file whose last frame is cut short (its reader would return the part silently).

    gzip, bz2 and xz readers raise for a truncated stream themselves; for zstd every frame
    is decompressed once here (about 1 GB/s), and nothing is done for other files.

    Raises
    ------
    CrawlLogError
        If the file is zstd-compressed and truncated or corrupt.
    """
    if compression_of(path) != "zstd":
        return
    import zstandard

    src = str(path) if src is None else src
    dctx = zstandard.ZstdDecompressor()
    obj, fed = dctx.decompressobj(), False
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                data = chunk
                while data:
                    obj.decompress(data)
                    fed = True
                    data = obj.unused_data if obj.eof else b""
                    if obj.eof:  # the next frame starts in ``data``
                        obj, fed = dctx.decompressobj(), False
    except zstandard.ZstdError as exc:
        raise decompression_error(src, exc, path) from None
    if fed and not obj.eof:
        raise decompression_error(src, EOFError("the last zstd frame ends before its end"), path)


def open_text(path, *, encoding: str = "utf-8-sig", errors: str = "strict"):
    """``path`` opened as text, decompressed by its magic bytes; a UTF-8 byte-order mark is dropped.

    ``errors`` is :func:`open`'s (``"replace"`` to peek at a file whose bytes may not all decode).

    Raises
    ------
    CrawlLogError
        For a truncated zstd file (:func:`check_complete`).
    """
    check_complete(path)
    if compression_of(path) is None:
        return open(path, encoding=encoding, errors=errors, newline="")
    return io.TextIOWrapper(open_bytes(path), encoding=encoding, errors=errors, newline="")


def open_bytes(path):
    """``path`` opened for reading bytes, decompressed by its magic bytes (no check of a cut zstd file)."""
    kind = compression_of(path)
    if kind is None:
        return open(path, "rb")
    if kind == "gzip":
        raw = gzip.open(path, "rb")
    elif kind == "bz2":
        raw = bz2.open(path, "rb")
    elif kind == "xz":
        raw = lzma.open(path, "rb")
    else:
        import zstandard

        raw = zstandard.open(path, "rb")
    return raw


def decompression_error(src: str, exc: BaseException, path=None) -> CrawlLogError:
    """The error for a log that cannot be decompressed (or read): names the file and what it is."""
    if isinstance(exc, OSError) and exc.errno is not None:  # a real I/O error, not a bad stream
        return CrawlLogError(f"{src}: cannot be read ({exc.strerror})")
    if path is None:  # e.g. a cluster run over several files: which one failed is not known
        return CrawlLogError(
            f"{src}: cannot be decompressed ({type(exc).__name__}: {exc}); a compressed file "
            "is truncated or corrupt, or not compressed as its name says"
        )
    name = str(path).lower()
    said = next((kind for suffix, kind in _SUFFIX.items() if name.endswith(suffix)), None)
    try:
        found = compression_of(path)
    except OSError:
        found = None
    if said is not None and found != said:
        what = f"its name says {said} but it is " + (f"{found}-compressed" if found else "not compressed")
    else:
        what = "the file is truncated or corrupt"
    return CrawlLogError(f"{src}: cannot be decompressed ({type(exc).__name__}: {exc}); {what}")
