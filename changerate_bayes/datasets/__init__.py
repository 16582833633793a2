"""Real multi-page change data shipped with the package.

``opentermsarchive/``: Open Terms Archive data (licence ODC-BY 1.0; attribution "Open
Terms Archive contributors", dating collection "Open Terms Archive with contributions
from the Dating Privacy collective"; see ``data/README.md`` for provenance):

- ``versions_pages.csv``: 1,345 documents and their observation windows;
- ``versions_changes.csv.gz``: 55,305 detected changes (``page,timestamp``);
- ``crawls_dating.csv.gz``: 309,582 crawl visits of 69 URLs, one row per visit
  (``page,fetch_time,changed_raw,changed_filtered``);
- ``crawls_dating_pages.csv``: the 69 URLs and their fetchers.

:func:`write_cdxj_shards` writes a synthetic Common Crawl URL index (CDXJ shards in
the real format) for tests and benchmarks.
"""

from __future__ import annotations

from pathlib import Path

from ._cdxj import surt, write_cdxj_shards

__all__ = ["DATASETS", "dataset_path", "surt", "write_cdxj_shards"]

_DATA = Path(__file__).resolve().parent / "data"

#: Shipped files by name.
DATASETS: dict[str, str] = {
    "ota_versions_pages": "opentermsarchive/versions_pages.csv",
    "ota_versions_changes": "opentermsarchive/versions_changes.csv.gz",
    "ota_crawls_dating": "opentermsarchive/crawls_dating.csv.gz",
    "ota_crawls_dating_pages": "opentermsarchive/crawls_dating_pages.csv",
}


def dataset_path(name: str) -> Path:
    """Path of a shipped data file.

    Parameters
    ----------
    name : str
        One of the keys of :data:`DATASETS`.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    TypeError
        If ``name`` is not a string.
    ValueError
        If ``name`` is not a shipped data set.

    Examples
    --------
    >>> dataset_path("ota_crawls_dating").name
    'crawls_dating.csv.gz'
    """
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a str; got {type(name).__name__}")
    if name not in DATASETS:
        raise ValueError(f"`name` must be one of {sorted(DATASETS)}; got {name!r}")
    return _DATA / DATASETS[name]
