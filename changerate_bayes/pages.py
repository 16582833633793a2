"""Deprecated module path: the per-page table and the crawl allocation are in :mod:`changerate_bayes.crawllog`."""

from ._moved import moved_names

_TABLE, _ALLOCATE = "changerate_bayes.crawllog.table", "changerate_bayes.crawllog.allocate"
__getattr__, __dir__ = moved_names(
    __name__,
    {
        **dict.fromkeys(
            (
                "estimate_pages",
                "page_table",
                "recommend_rate",
                "merge_notes",
                "one_note_per_check",
                "concat_part_tables",
                "PAGE_COLUMNS",
                "RATE_COLUMNS",
                "IDENTIFIED_MIN",
                "RATE_RULE",
            ),
            _TABLE,
        ),
        **dict.fromkeys(("allocate_crawls", "RECOMMENDED_POLICY", "MAX_INTERVAL_FACTOR"), _ALLOCATE),
    },
)
