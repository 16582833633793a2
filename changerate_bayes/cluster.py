"""Deprecated module path: the Dask engine is :mod:`changerate_bayes.crawllog.dask_engine`."""

from ._moved import moved_names

__getattr__, __dir__ = moved_names(
    __name__,
    dict.fromkeys(
        ("ClusterEstimates", "estimate_files_dask", "estimate_pages_dask", "per_page_partitions"),
        "changerate_bayes.crawllog.dask_engine",
    ),
)
