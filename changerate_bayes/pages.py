"""Deprecated module path: the per-page table and the crawl allocation are in :mod:`changerate_bayes.crawllog`.

Every public name of :mod:`changerate_bayes.crawllog.table` and
:mod:`changerate_bayes.crawllog.allocate` is read through here, with a warning.
"""

from ._moved import moved_names
from .crawllog import allocate as _allocate
from .crawllog import table as _table

__getattr__, __dir__ = moved_names(
    __name__,
    {
        **dict.fromkeys(_table.__all__, _table.__name__),
        **dict.fromkeys(_allocate.__all__, _allocate.__name__),
    },
)
