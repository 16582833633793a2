"""Deprecated module path: the schedule is in :mod:`changerate_bayes.crawllog`, the predictive in :mod:`changerate_bayes.bayes`."""

from ._moved import moved_names

__getattr__, __dir__ = moved_names(
    __name__,
    {
        **dict.fromkeys(
            (
                "MAX_INTERVAL_H",
                "SCHEDULE_COLUMNS",
                "SCHEDULE_FORMATS",
                "crawl_schedule",
                "nutch_seed_lines",
                "schedule_pages",
                "write_schedule",
            ),
            "changerate_bayes.crawllog.fetch_schedule",
        ),
        **dict.fromkeys(("schedule_files_dask", "schedule_pages_dask"), "changerate_bayes.crawllog.dask_engine"),
        **dict.fromkeys(("change_probability", "posterior_history"), "changerate_bayes.bayes"),
    },
)
