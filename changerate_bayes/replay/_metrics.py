"""Metrics of a replay, and bootstrap intervals over resampled pages."""

from __future__ import annotations

import numpy as np

from ._engine import ReplayResult

__all__ = ["replay_metrics", "bootstrap_counts", "bootstrap_ratio", "gap_share", "bootstrap_gap_share"]


def replay_metrics(result: ReplayResult) -> dict:
    """The metrics of one replay.

    Parameters
    ----------
    result : ReplayResult

    Returns
    -------
    dict
        ``freshness``: Σ_i fresh_i / Σ_i T_i, the fraction of page-time the copies were
        fresh (pages weighted by their window length T_i); ``freshness_weighted``: the same
        with every page's time weighted by w_i, Σ w_i fresh_i / Σ w_i T_i;
        ``mean_age_days``: Σ_i ∫ age_i / Σ_i T_i, the time-averaged age (0 while fresh,
        else the time since the first missed change: Cho & Garcia-Molina 2003), in days;
        ``crawls`` (after the initial copies), ``crawls_per_day`` (crawls / span of the
        replay), ``changes`` (true changes in the windows), ``detected`` (crawls that saw a
        change), ``detected_per_crawl`` (detected / crawls; NaN when there was no crawl)
        and ``changes_caught`` (detected / changes; NaN when nothing changed).

    Examples
    --------
    One page, window [0, 10] days, a change at day 2, crawls at days 5 and 10: fresh
    on [0, 2), stale on [2, 5) (age up to 3), fresh on [5, 10].

    >>> import numpy as np
    >>> from changerate_bayes.replay import ReplayResult, replay_metrics
    >>> r = ReplayResult("x", None, 10.0, np.array([10.0]), np.array([7.0]), np.array([4.5]),
    ...                  np.array([2]), np.array([1]), np.array([1]), np.array([1.0]))
    >>> m = replay_metrics(r)
    >>> m["freshness"], m["mean_age_days"], m["detected_per_crawl"]
    (0.7, 0.45, 0.5)
    """
    T, w = result.window_days, result.weights
    crawls = int(result.crawls.sum())
    detected = int(result.detected.sum())
    changes = int(result.changes.sum())
    return {
        "freshness": float(result.fresh_days.sum() / T.sum()),
        "freshness_weighted": float((w * result.fresh_days).sum() / (w * T).sum()),
        "mean_age_days": float(result.age_area.sum() / T.sum()),
        "crawls": crawls,
        "crawls_per_day": crawls / result.span_days,
        "changes": changes,
        "detected": detected,
        "detected_per_crawl": detected / crawls if crawls else float("nan"),
        "changes_caught": detected / changes if changes else float("nan"),
    }


def bootstrap_counts(n_pages: int, n_boot: int, rng) -> np.ndarray:
    """Multiplicities of each page in ``n_boot`` resamples of the pages with replacement, (n_boot, N)."""
    rng = np.random.default_rng(rng)
    return rng.multinomial(n_pages, np.full(n_pages, 1.0 / n_pages), size=n_boot).astype(np.float64)


def _resampled(result: ReplayResult, counts: np.ndarray, weighted: bool) -> np.ndarray:
    w = result.weights if weighted else 1.0
    return (counts @ (w * result.fresh_days)) / (counts @ (w * result.window_days))


def bootstrap_ratio(
    result: ReplayResult,
    counts: np.ndarray,
    *,
    reference: ReplayResult | None = None,
    weighted: bool = False,
    level: float = 0.95,
):
    """Percentile interval of freshness (or of its ratio to ``reference``) over resampled pages.

    The same ``counts`` for every policy makes the intervals of ratios paired.

    Returns
    -------
    (low, high) : floats
    """
    f = _resampled(result, counts, weighted)
    if reference is not None:
        f = f / _resampled(reference, counts, weighted)
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(f, [a, 1.0 - a])
    return float(lo), float(hi)


def gap_share(result: ReplayResult, low: ReplayResult, high: ReplayResult, *, weighted: bool = True) -> float:
    """Share of the freshness gap from ``low`` to ``high`` that ``result`` closes.

    (F − F_low) / (F_high − F_low) with F the (weighted) freshness of :func:`replay_metrics`:
    0 at the level of ``low`` (e.g. round robin), 1 at ``high`` (e.g. the clairvoyant
    reference), negative below ``low``; NaN when F_high = F_low.
    """
    key = "freshness_weighted" if weighted else "freshness"
    f, lo, hi = (replay_metrics(r)[key] for r in (result, low, high))
    return (f - lo) / (hi - lo) if hi != lo else float("nan")


def bootstrap_gap_share(
    result: ReplayResult,
    low: ReplayResult,
    high: ReplayResult,
    counts: np.ndarray,
    *,
    weighted: bool = True,
    level: float = 0.95,
):
    """Percentile interval of :func:`gap_share` over resampled pages (the same ``counts`` for the three
    replays, so the interval is paired).

    Returns
    -------
    (low, high) : floats (NaN if the gap is 0 in every resample)
    """
    f, a, b = (_resampled(r, counts, weighted) for r in (result, low, high))
    with np.errstate(invalid="ignore", divide="ignore"):
        share = (f - a) / (b - a)
    share = share[np.isfinite(share)]
    if not share.size:
        return float("nan"), float("nan")
    q = (1.0 - level) / 2.0
    lo, hi = np.quantile(share, [q, 1.0 - q])
    return float(lo), float(hi)
