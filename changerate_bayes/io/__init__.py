"""Reading real crawl logs: CSV, Parquet, CDX, WARC and the Open Terms Archive observations.

Every reader returns a :class:`CrawlLog`: a ragged :class:`~changerate_bayes.CrawlHistory`
(one page per page with at least two usable visits; intervals in hours), each page's
first and last visit time, and an :class:`Audit` accounting for every row read.

The change semantics (the same for every format; :mod:`changerate_bayes.io._semantics`):

- changed = the digest differs from that of the previous *successful* visit of the page
  (or the crawler's own 0/1 ``changed``, or ``last_modified`` after the previous visit);
- an HTTP 304 or a WARC revisit (identical-payload-digest / server-not-modified) is a
  visit that saw no change;
- the first successful visit of a page is the reference copy, not an observation;
- failed visits (status >= 400, missing status, missing digest where digests decide)
  are dropped, and the next interval runs from the last successful visit;
- duplicate captures (same page, same time) collapse to the first in file order;
- ``last_modified`` at or after its fetch time is ignored and counted;
- unsorted visits are sorted and counted; single-visit pages are counted, not kept.

Malformed input raises :class:`CrawlLogError` (a ValueError) naming the file, the line
(or row, or record) and the column.
"""

from ._audit import DROP_REASONS, Audit
from ._cdx import read_cdx
from ._errors import CrawlLogError
from ._formats import FORMATS, detect_format, read_log
from ._ota import read_ota
from ._semantics import CHANGE_SOURCES, STANDARD_COLUMNS, CrawlLog
from ._tabular import DEFAULT_CHUNK_ROWS, read_csv, read_parquet
from ._frame import read_frame
from ._warc import NOT_MODIFIED_PROFILES, read_warc

__all__ = [
    "Audit",
    "CHANGE_SOURCES",
    "CrawlLog",
    "CrawlLogError",
    "DEFAULT_CHUNK_ROWS",
    "DROP_REASONS",
    "FORMATS",
    "NOT_MODIFIED_PROFILES",
    "STANDARD_COLUMNS",
    "detect_format",
    "read_cdx",
    "read_csv",
    "read_frame",
    "read_log",
    "read_ota",
    "read_parquet",
    "read_warc",
]
