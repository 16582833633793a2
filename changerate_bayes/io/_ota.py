"""The Open Terms Archive crawl observations as shipped with the package."""

from __future__ import annotations

from ._semantics import CrawlLog
from ._tabular import DEFAULT_CHUNK_ROWS, read_csv

__all__ = ["read_ota", "OTA_CHANGE_COLUMNS"]

OTA_CHANGE_COLUMNS = {"filtered": "changed_filtered", "raw": "changed_raw"}


def read_ota(paths=None, *, changed="filtered", chunk_rows=DEFAULT_CHUNK_ROWS) -> CrawlLog:
    """Read Open Terms Archive crawl observations (``page,fetch_time,changed_raw,changed_filtered``).

    One row per visit of a run of the Open Terms Archive engine (dating collection,
    69 URLs, 2021-12 to 2026-08; see ``changerate_bayes/datasets/data/README.md``
    for provenance and the attribution to keep).

    Parameters
    ----------
    paths : path or list of paths, optional
        Default: the shipped ``crawls_dating.csv.gz``
        (``dataset_path("ota_crawls_dating")``).
    changed : {"filtered", "raw"}, default "filtered"
        Which decision is I_k. ``"filtered"``: the cleaned text of the document
        changed (median 0.4% of visits): the change a reader of the terms sees.
        ``"raw"``: the raw HTML changed, which on many pages happens on every fetch
        (tokens, timestamps embedded in the page; median 47% of visits), so it
        measures page noise rather than edits.

    Returns
    -------
    CrawlLog
        The history (intervals in hours). The file has no status column: a failed
        fetch left no row, so the interval after it runs from the last successful
        visit, as the change rules require.

    Raises
    ------
    ValueError
        For ``changed`` other than "filtered"/"raw"; CrawlLogError as :func:`read_csv`.

    Examples
    --------
    >>> from changerate_bayes.io import read_ota
    >>> log = read_ota()
    >>> log.audit.rows_read, log.history.n_pages
    (309582, 69)
    """
    if changed not in OTA_CHANGE_COLUMNS:
        raise ValueError(f"`changed` must be one of {list(OTA_CHANGE_COLUMNS)}; got {changed!r}")
    if paths is None:
        from ..datasets import dataset_path

        paths = dataset_path("ota_crawls_dating")
    return read_csv(
        paths, columns={"changed": OTA_CHANGE_COLUMNS[changed]}, change_from="changed", chunk_rows=chunk_rows
    )
