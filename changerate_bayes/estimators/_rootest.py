"""Shared streaming machinery of the MLE and moment-matching estimators."""

from __future__ import annotations

import numpy as np

from ._base import StreamingEstimator
from ._rootpath import RootPath

__all__ = ["RootEstimator", "root_path", "no_params"]


def no_params(method: str, **params) -> dict:
    """``"mle"`` and ``"mm"`` take no parameters."""
    if params:
        raise TypeError(f"method {method!r} takes no parameters; got {sorted(params)}")
    return {}


def root_path(history, kind) -> np.ndarray:
    """The root for every prefix of every page, shape ``history.shape``."""
    tau = history.require_intervals(method=kind.name)
    changed = np.atleast_2d(history.changed)
    solver = RootPath(kind, changed.shape[0])
    out = solver.extend(changed, np.atleast_2d(tau))
    return out.reshape(history.shape)


class RootEstimator(StreamingEstimator):
    needs_crawl_rate = False
    needs_intervals = True
    _kind = None

    def __init__(self, *, crawl_rate=None, n_pages=None):
        super().__init__(crawl_rate=crawl_rate, n_pages=n_pages)
        self.solver_ = RootPath(self._kind, 1 if n_pages is None else n_pages)

    def _update(self, changed, interval):
        self.solver_.extend(changed.reshape(-1, 1), interval.reshape(-1, 1))

    def _rate(self):
        r = self.solver_.root
        return r[0] if self.n_pages is None else r

    def merge(self, other):
        """A new estimator holding the crawls of ``self`` then ``other`` (disjoint data).

        The estimate depends on the crawls only as a set, so merging concatenates the
        two stored histories (O(k): the root is re-solved once).

        Raises
        ------
        TypeError, ValueError
            If ``other`` is not of the same class with the same pages.
        """
        self._check_mergeable(other)
        out = type(self)(crawl_rate=self.crawl_rate, n_pages=self.n_pages)
        for est in (self, other):
            changed, tau = est.solver_.history()
            if changed.shape[1]:
                out.solver_.extend(changed, tau)
        out.n_crawls_ = self.n_crawls_ + other.n_crawls_
        return out
