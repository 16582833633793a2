"""Every record of a CSV log has one field per header column: a row with fields too many or too few is refused.

pandas' C parser reads only the columns it is asked for (``usecols``), so it drops extra
fields silently, and it pads a short row with empty fields; this check runs first.
"""

from __future__ import annotations

import csv

from ._compressed import DECOMPRESSION_ERRORS, compression_of, decompression_error, open_bytes, open_text
from ._errors import CrawlLogError

__all__ = ["check_field_counts"]

_BLOCK = 1 << 24  # bytes parsed at a time
_ARROW_CODECS = {None: None, "gzip": "gzip", "bz2": "bz2", "zstd": "zstd"}  # xz: the python module


def check_field_counts(path, *, src: str, sep: str = ",") -> None:
    """Refuse a record of ``path`` whose number of fields differs from its header line's.

    pyarrow's CSV parser counts the fields of every record (in C, a block of the file
    at a time); only when it flags a record, or cannot parse the file, is the file read
    again with :mod:`csv` (quoting followed as by pandas, quoted newlines included),
    which decides and names the physical line. Blank lines are skipped, as by pandas.

    Raises
    ------
    CrawlLogError
        ``"{src}: line N: 5 fields, but the header (line 1) has 4"``: the physical line.
        (A record the :mod:`csv` module cannot read, e.g. a field over its size limit,
        is left to pandas' reader.)
    """
    if len(sep) != 1:  # only single-character separators are counted; others are left to pandas
        return
    try:
        if not _fast(path, src=src, sep=ord(sep)):
            _slow(path, src=src, sep=sep)
    except DECOMPRESSION_ERRORS as exc:
        raise decompression_error(src, exc, path) from None


def _mismatch(src: str, line: int, got: int, want: int) -> CrawlLogError:
    what = (
        "a field too many"
        if got == want + 1
        else ("a field too few" if got == want - 1 else ("fields too many" if got > want else "fields too few"))
    )
    return CrawlLogError(
        f"{src}: line {line}: {got} fields, but the header (line 1) has {want} ({what}); "
        "give every row one field per column (quote a field that holds the separator)"
    )


def _fast(path, *, src: str, sep: int) -> bool:
    """True if pyarrow's CSV parser finds every record as wide as the header line.

    Quoted separators are followed; a quoted newline is not (it would cost the parser
    its speed), so any row it flags, and any failure, is left to :func:`_slow`.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    flagged = []

    def handler(row):
        flagged.append(row.number)
        return "error"

    read = pacsv.ReadOptions(block_size=_BLOCK, autogenerate_column_names=True)  # the header counts as a row
    parse = pacsv.ParseOptions(delimiter=chr(sep), invalid_row_handler=handler)
    convert = pacsv.ConvertOptions(include_columns=["f0"], column_types={"f0": pa.binary()})
    codec = _ARROW_CODECS.get(compression_of(path), "")
    try:  # pyarrow's own decompression where it has the codec (the python modules' is slower)
        with open_bytes(path) if codec == "" else pa.input_stream(str(path), compression=codec) as fh:
            for _ in pacsv.open_csv(fh, read_options=read, parse_options=parse, convert_options=convert):
                pass
    except (pa.ArrowException, OSError, EOFError):
        return False
    return not flagged


def _slow(path, *, src: str, sep: str) -> None:
    """Count the fields of every record with :mod:`csv` (quoted separators and newlines followed)."""
    want = None
    with open_text(path) as fh:
        reader = csv.reader(fh, delimiter=sep)
        end = 0
        try:
            for row in reader:
                start, end = end + 1, reader.line_num
                if not row:
                    continue
                if want is None:
                    want = len(row)
                elif len(row) != want:
                    raise _mismatch(src, start, len(row), want)
        except (csv.Error, UnicodeDecodeError):  # the reader that follows names these
            return
