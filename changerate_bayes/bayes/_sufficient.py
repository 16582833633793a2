"""Sufficient statistics of crawl histories, rectangular or ragged (CSR layout).

Given the intervals, the log-likelihood of a page is

    log L(Δ) = Σ_{I_j = 1} log(1 − e^{−Δτ_j}) − Δ S0,   S0 = Σ_j (1 − I_j) τ_j,

so the unchanged crawls enter only through S0, one number per page, and only the
crawls that saw a change need their own interval. The changed intervals are kept one
page after the other with CSR offsets: pages of different lengths cost nothing extra.
"""

from __future__ import annotations

import numpy as np

from ..history import CrawlHistory
from ._likelihood import ExactLikelihood

__all__ = ["exact_likelihood", "change_counts", "crawl_rates"]


def change_counts(history: CrawlHistory) -> tuple[np.ndarray, np.ndarray]:
    """Changes seen Î and crawls k per page, float64 arrays of shape (n_pages,)."""
    lengths = history.lengths
    flat = history.flat_changed
    n_changed = np.add.reduceat(flat.astype(np.float64), history.offsets[:-1]) if flat.size else np.zeros(0)
    return n_changed, lengths.astype(np.float64)


def crawl_rates(history: CrawlHistory) -> np.ndarray | None:
    """The crawl rate p per page, shape (n_pages,), or None."""
    if history.crawl_rate is None:
        return None
    n = history.lengths.size
    return np.broadcast_to(np.asarray(history.crawl_rate, dtype=np.float64), (n,))


def exact_likelihood(history: CrawlHistory) -> ExactLikelihood:
    """The :class:`ExactLikelihood` of every page from the flat (CSR) view of the history.

    Holds per page S0 and the number of changes, and the intervals of the changed crawls
    with their page index (page-sorted), exactly what ``ExactLikelihood(changed, tau)``
    holds for a rectangular history.
    """
    tau = history.flat_intervals
    if tau is None:
        raise ValueError("the likelihood needs the crawl intervals τ: pass `intervals` to CrawlHistory")
    changed = history.flat_changed > 0
    n = history.lengths.size
    page = history.page_index()
    lik = object.__new__(ExactLikelihood)
    lik.n_pages = n
    lik.n_changed = np.bincount(page, weights=changed, minlength=n).astype(np.float64)
    lik.t0 = np.bincount(page, weights=np.where(changed, 0.0, tau), minlength=n)
    lik._page = page[changed]
    lik._tau = np.ascontiguousarray(tau[changed])
    lik._segments()
    half = lik._sum(lik._tau) / 2.0
    lik.start = np.log((lik.n_changed + 0.5) / (lik.t0 + half))
    return lik
