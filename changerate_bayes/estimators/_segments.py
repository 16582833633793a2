"""Segment (CSR) helpers shared by the estimators: pages of any length without a loop over pages.

A history's crawls are laid out page after page (``flat_changed``, ``flat_intervals``),
page i holding ``flat[offsets[i]:offsets[i + 1]]`` (see :class:`CrawlHistory`). A path
over such a history is returned padded: shape (n_pages, n_crawls) with NaN after each
page's last crawl.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "crawl_rates",
    "position_in_page",
    "segment_cumsum",
    "segment_totals",
    "scatter_padded",
    "length_buckets",
    "count_path",
    "count_final",
]


def crawl_rates(history, *, method: str) -> np.ndarray:
    """The crawl rate as a float64 array of length 1 (shared) or n_pages.

    Raises
    ------
    ValueError
        If the history has no crawl rate.
    """
    return np.ascontiguousarray(history.crawl_rate_column(method=method).reshape(-1))


def position_in_page(history) -> np.ndarray:
    """The 0-based position of every flat crawl within its page, int64 (n_visits,)."""
    starts = np.repeat(history.offsets[:-1], history.lengths)
    return np.arange(history.n_visits, dtype=np.int64) - starts


def segment_cumsum(values: np.ndarray, history) -> np.ndarray:
    """Cumulative sums restarting at each page, float64 (n_visits,).

    Exact for integer-valued inputs (counts): the global cumulative sum minus its value
    before the page's first crawl.
    """
    total = np.cumsum(values, dtype=np.float64)
    before = np.concatenate(([0.0], total))[history.offsets[:-1]]
    return total - np.repeat(before, history.lengths)


def segment_totals(values: np.ndarray, history) -> np.ndarray:
    """Σ of ``values`` over each page, float64 (n_pages,) (``np.add.reduceat``)."""
    return np.add.reduceat(np.asarray(values, dtype=np.float64), history.offsets[:-1])


def scatter_padded(flat: np.ndarray, history) -> np.ndarray:
    """The flat per-crawl values as (n_pages, n_crawls), NaN after each page's last crawl."""
    lengths = history.lengths
    out = np.full((lengths.size, int(lengths.max())), np.nan)
    out[np.arange(out.shape[1])[None, :] < lengths[:, None]] = flat
    return out


def length_buckets(lengths: np.ndarray):
    """Groups of pages whose lengths lie in [2^b, 2^(b+1)): padding each group to its
    longest page at most doubles the work. Yields (pages, longest length)."""
    bucket = np.floor(np.log2(lengths)).astype(np.int64)
    for b in np.unique(bucket):
        pages = np.flatnonzero(bucket == b)
        yield pages, int(lengths[pages].max())


def count_path(history, estimate, *, method: str) -> np.ndarray:
    """The path of an estimator of (k, Î_k): ``estimate(p, Î_k, k)`` for every prefix k of
    every page, shape ``history.shape`` (NaN-padded (n_pages, n_crawls) if ragged).

    ``estimate`` is called once, elementwise, with the crawl rate p (broadcastable:
    shape () or (n_pages, 1), or one value per flat crawl if ragged), Î_k = Σ_{j≤k} I_j
    (float64) and the crawl counts k >= 1 (int64).
    """
    if history.is_ragged:
        p = crawl_rates(history, method=method)
        ones = segment_cumsum(history.flat_changed, history)
        k = position_in_page(history) + 1
        return scatter_padded(estimate(p if p.size == 1 else np.repeat(p, history.lengths), ones, k), history)
    p = history.crawl_rate_column(method=method)
    ones = np.cumsum(history.changed, axis=-1, dtype=np.float64)
    k = np.arange(1, history.n_crawls + 1)
    return estimate(p, ones, k)


def count_final(history, estimate, *, method: str) -> np.ndarray:
    """``estimate(p, Î_k, k)`` after each page's last crawl, shape (n_pages,): p (n_pages,)
    or (1,), Î_k float64 and k = the page's crawls (int64)."""
    p = crawl_rates(history, method=method)
    return estimate(p, segment_totals(history.flat_changed, history), history.lengths)
