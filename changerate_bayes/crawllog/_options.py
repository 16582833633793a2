"""The options of a crawl-log job, built once by a public entry point and handed down to the engines."""

from __future__ import annotations

import dataclasses
from typing import Any

from .allocate import allocate_crawls
from .table import page_table

__all__ = ["LogOptions"]


@dataclasses.dataclass(frozen=True)
class LogOptions:
    """How a log is read (``format`` … ``page_key``), estimated (``methods`` … ``posterior_method``)
    and allocated (``budget``, ``hosts``, ``host_budgets``): the keyword arguments of
    :func:`changerate_bayes.crawllog.estimate` and of the engines' entry points, unchecked (each
    engine checks what it reads)."""

    format: str = "auto"
    columns: Any = None
    change_from: str = "auto"
    ota_changed: str | None = None
    page_key: str = "url"
    methods: tuple = ()
    prior: Any = None
    budget: Any = None
    level: float = 0.9
    posterior_method: str = "grid"
    hosts: Any = None
    host_budgets: Any = None

    @classmethod
    def of(cls, arguments: dict) -> LogOptions:
        """The options among an entry point's ``arguments`` (its ``locals()`` on entry); the others
        keep their defaults."""
        return cls(**{f.name: arguments[f.name] for f in dataclasses.fields(cls) if f.name in arguments})

    @property
    def estimation(self) -> dict:
        """The keyword arguments of :func:`~changerate_bayes.crawllog.page_table`."""
        return dict(methods=self.methods, prior=self.prior, level=self.level, posterior_method=self.posterior_method)

    def allocate(self, table):
        """:func:`~changerate_bayes.crawllog.allocate_crawls` of ``table`` within the budget and host caps."""
        return allocate_crawls(table, self.budget, hosts=self.hosts, host_budgets=self.host_budgets)

    def page_table(self, log):
        """The allocated :func:`~changerate_bayes.crawllog.page_table` of ``log`` (the table's warnings
        in its ``attrs``, not issued)."""
        return self.allocate(page_table(log, **self.estimation))
