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
- failed visits (status >= 400 or not an HTTP status, missing status, missing digest
  where digests decide) are dropped, and the next interval runs from the last successful
  visit; so are redirects (3xx other than 304), which observe no content of the page;
- duplicate captures (same page, same time) collapse to the first in file order;
- ``last_modified`` at or after its fetch time is ignored and counted;
- a page whose server reports the fetch time as Last-Modified (3+ visits, 4 in 5 of
  those with a date, within a minute of the fetch or later) has its dates set aside and
  is counted; where ``last_modified`` decides changes, the log's digest (or ETag) or
  ``changed`` column decides them for that page if there is one (only with an explicit
  ``change_from="last_modified"``), else its rows are dropped (``last_modified_unreliable``);
- unsorted visits are sorted and counted; single-visit pages are counted, not kept.

Malformed input raises :class:`CrawlLogError` (a ValueError) naming the file, the line
(or row, or record) and the column.
"""

# The readers are imported on first use (PEP 562), so that the command line can list the
# formats without loading pandas; ``from changerate_bayes.io import read_csv`` imports
# what that name needs.
_LAZY = {
    "Audit": "._audit",
    "DROP_REASONS": "._audit",
    "read_cdx": "._cdx",
    "CrawlLogError": "._errors",
    "BUCKET_FOLDER": "._formats",
    "FORMATS": "._formats",
    "log_files": "._formats",
    "detect_format": "._formats",
    "read_log": "._formats",
    "read_ota": "._ota",
    "CHANGE_SOURCES": "._semantics",
    "STANDARD_COLUMNS": "._semantics",
    "CrawlLog": "._semantics",
    "DEFAULT_CHUNK_ROWS": "._tabular",
    "read_csv": "._tabular",
    "read_parquet": "._tabular",
    "read_frame": "._frame",
    "SIGNAL_DROP_REASONS": "._signals",
    "SignalAudit": "._signals",
    "read_signals": "._signals",
    "NOT_MODIFIED_PROFILES": "._warc",
    "read_warc": "._warc",
}


#: What the engines of :mod:`changerate_bayes.crawllog` build on (reading in chunks, page buckets,
#: per-file pieces, the checks over several files): public to the package, not listed in
#: ``__all__``. name -> (module, name in that module).
_ENGINE = {
    "DECOMPRESSION_ERRORS": ("._compressed", "DECOMPRESSION_ERRORS"),
    "check_complete": ("._compressed", "check_complete"),
    "decompression_error": ("._compressed", "decompression_error"),
    "check_page_key": ("._cdx", "_check_page_key"),
    "plain": ("._errors", "plain"),
    "log_signal_rows": ("._signals", "log_signal_rows"),
    "signal_flags": ("._signal_values", "signal_flags"),
    "signal_frame": ("._signal_values", "signal_frame"),
    "check_field_counts": ("._fields", "check_field_counts"),
    "common_format": ("._formats", "common_format"),
    "mixed_formats_error": ("._formats", "mixed_formats_error"),
    "refuse_surt_for_warc": ("._formats", "refuse_surt_for_warc"),
    "BUCKET_ROWS": ("._buckets", "BUCKET_ROWS"),
    "COMPACT_COLUMNS": ("._buckets", "_NAMES"),
    "PageBuckets": ("._buckets", "PageBuckets"),
    "bucket_count": ("._buckets", "bucket_count"),
    "different_columns_message": ("._buckets", "different_columns_message"),
    "no_pages_error": ("._buckets", "no_pages_error"),
    "reduce_buckets": ("._buckets", "reduce_buckets"),
    "FILE_STRIDE": ("._pieces", "_FILE_STRIDE"),
    "check_time_kinds": ("._pieces", "check_time_kinds"),
    "compact_file": ("._pieces", "compact_file"),
    "merge_pieces": ("._pieces", "merge_pieces"),
    "page_hashes": ("._pieces", "page_hashes"),
    "split_piece": ("._pieces", "split_piece"),
    "build_log": ("._semantics", "build_log"),
    "TabularScan": ("._tabular", "_Scan"),
    "as_paths": ("._tabular", "_as_paths"),
    "check_chunk_rows": ("._tabular", "_check_chunk"),
    "check_columns": ("._tabular", "check_columns"),
    "check_scan_rows": ("._tabular", "check_scan_rows"),
    "column_plan": ("._tabular", "_plan"),
    "csv_rows_estimate": ("._tabular", "csv_rows_estimate"),
    "parquet_rows": ("._tabular", "parquet_rows"),
    "scan_csv": ("._tabular", "scan_csv"),
    "scan_parquet": ("._tabular", "scan_parquet"),
    "check_kinds": ("._times", "check_kinds"),
    "merge_kinds": ("._times", "merge_kinds"),
    "time_kinds": ("._times", "time_kinds"),
}


def __getattr__(name):
    import importlib

    if name in _LAZY:
        module, attr = _LAZY[name], name
    elif name in _ENGINE:
        module, attr = _ENGINE[name]
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), attr)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = sorted(_LAZY)
