"""Do a history's crawl intervals fit the crawling model an estimator assumes?

The Naive, LLN, SA and SAM estimators use only the crawl rate p and the I_k: they rely on
E[I] = Δ/(Δ + p), which holds when the intervals τ are exponential with mean 1/p
(Poisson crawling; paper eq. 4). The regular-crawl estimator relies on τ = 1/p. When a
history carries its intervals, :func:`warn_if_not_poisson` and
:func:`warn_if_not_regular` check them and emit a :class:`StatisticalWarning` naming the
problem and the estimators that do fit.

Poisson check (a test with a false-alarm rate of at most ``FALSE_ALARM`` = 1e-6 per call):
under Poisson crawling the z = p τ are i.i.d. Exp(1). The Kolmogorov distance D between
their empirical CDF and 1 − e^{−z}, taken at the 63 interior 1/64-quantiles of Exp(1), is
at most the full Kolmogorov-Smirnov statistic, so by
the Dvoretzky-Kiefer-Wolfowitz inequality with Massart's constant,
P(D > ε) <= 2 exp(−2 n ε²) for n intervals. The check flags the history when the pooled
distance over all pages exceeds ε(α/2, n_pages·k) or one page's distance exceeds
ε(α/(2 n_pages), k), with ε(a, n) = sqrt(log(2/a)/(2n)); by the union bound a genuine
Poisson crawl is flagged with probability at most α. Regular crawls (all p τ = 1) have
D ≈ 1 − e^{−1} = 0.63 and are flagged from about 18 crawls on one page (or 18 crawls
pooled over pages). Binning by the exact CDF makes the check O(n), with no sort: one
compiled pass over the crawls (``_kernels.exp_cell_distance``) finds each z's cell with a
lookup table and one comparison, and keeps 64 counts per page at a time, so pages of any
length cost no padding and no (n_pages, 64) array.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from .._validation import StatisticalWarning
from ._segments import segment_totals

__all__ = ["FALSE_ALARM", "poisson_distance_segments", "dkw_threshold", "warn_if_not_poisson", "warn_if_not_regular"]

FALSE_ALARM = 1e-6  # probability that a genuine Poisson crawl is flagged, per call
N_EDGES = 64  # the distance is taken at the 1/64-quantiles of Exp(1)
REGULAR_BIAS = 0.01  # the regular-crawl estimator tolerates 1% first-order bias from jitter

_ALTERNATIVES_POISSON = (
    "Use 'mle' or 'mm', which use the intervals and assume no crawl schedule; for crawls on a "
    "fixed schedule, 'regular' (Cho & Garcia-Molina's estimator for regular access, "
    "Δ̂ = −p log((k − Î_k + 0.5)/(k + 0.5)))."
)


def dkw_threshold(alpha, n):
    """ε with 2 exp(−2 n ε²) = alpha: the distance a Poisson crawl exceeds with probability <= alpha."""
    return np.sqrt(np.log(2.0 / alpha) / (2.0 * np.asarray(n, dtype=np.float64)))


def _cell(z):
    return np.minimum(np.floor(-np.expm1(-z) * N_EDGES), N_EDGES - 1)


LOOKUP_SCALE = 128.0  # bins of width 1/128 in z: narrower than any cell (>= 1/64), so one edge per bin


@functools.cache
def _cell_edges():
    """edges[i] = the smallest float z with cell(z) >= i (i = 1..63), edges[64] = inf, and the
    lookup table."""
    edges = np.zeros(N_EDGES + 1)
    edges[N_EDGES] = np.inf
    for i in range(1, N_EDGES):
        z = -np.log1p(-i / N_EDGES)
        while _cell(z) >= i:
            z = np.nextafter(z, 0.0)
        while _cell(z) < i:
            z = np.nextafter(z, np.inf)
        edges[i] = z
    n_bins = int(np.ceil(edges[N_EDGES - 1] * LOOKUP_SCALE)) + 1
    # uint8 (cells 0..63): the compiled pass then knows every cell index is >= 0 and skips
    # the negative-index wrap on its lookups (about a quarter of the pass's time)
    table = np.searchsorted(edges[1:N_EDGES], np.arange(n_bins) / LOOKUP_SCALE, side="right").astype(np.uint8)
    return edges, table


def poisson_distance_segments(history):
    """Per-page and pooled distance of p·τ from Exp(1) at the 1/64-quantiles, over the
    history's CSR segments (pages of any length) in one compiled pass.

    The distances are max_i abs(F_k(q_i) − i/64) (F_k the page's empirical CDF of p·τ),
    computed as max_i abs(64·(count below q_i) − i·k) / (64 k): exact in integers with one
    rounding.

    Returns
    -------
    per_page : ndarray, shape (n_pages,)
        The distance of each page.
    pooled : float
        The same for all pages pooled.
    """
    from . import _kernels  # numba kernels: loaded on first use, nothing compiled at import

    cached = history.__dict__.get("_poisson_distances")
    if cached is not None:  # the history is immutable: the check of several methods runs once
        return cached[0].copy(), cached[1]
    edges, table = _cell_edges()
    p = np.ascontiguousarray(np.atleast_1d(np.asarray(history.crawl_rate, dtype=np.float64)))
    n = history.lengths.size
    per_page = np.empty(n)
    counts = np.zeros(N_EDGES, dtype=np.int64)
    _kernels.exp_cell_distance(history.flat_intervals, history.offsets, p, edges, table, LOOKUP_SCALE, per_page, counts)
    # as the per-page distances: exact integers, one rounding
    gaps = np.abs(N_EDGES * np.cumsum(counts)[:-1] - np.arange(1, N_EDGES) * history.n_visits)
    pooled = float(gaps.max() / (N_EDGES * history.n_visits))
    history.__dict__["_poisson_distances"] = (per_page.copy(), pooled)
    return per_page, pooled


def _flat_scaled_intervals(history):
    p = np.asarray(history.crawl_rate, dtype=np.float64)
    tau = history.flat_intervals
    with np.errstate(over="ignore"):
        return tau * (np.repeat(p, history.lengths) if p.ndim == 1 else p)


def warn_if_not_poisson(history, method: str, *, stacklevel: int) -> bool:
    """Warn when the intervals are clearly not exponential with mean 1/p; return whether it warned."""
    if history.flat_intervals is None or history.crawl_rate is None:
        return False
    n_pages, lengths = history.lengths.size, history.lengths
    per_page, pooled = poisson_distance_segments(history)
    eps_pool = float(dkw_threshold(FALSE_ALARM / 2, history.n_visits))
    # each page at its own length (one number when all pages have the same length)
    eps_page = dkw_threshold(FALSE_ALARM / (2 * n_pages), lengths if history.is_ragged else lengths[0])
    flagged = per_page > eps_page
    if pooled <= eps_pool and not flagged.any():
        return False
    eps_page = float(np.max(eps_page))
    z = _flat_scaled_intervals(history)
    with np.errstate(over="ignore", invalid="ignore"):
        mean, cv = float(z.mean()), float(z.std() / z.mean())
    if n_pages == 1:
        where = f"Kolmogorov distance of p·τ from Exp(1) D = {per_page[0]:.3f} > {eps_page:.3f}"
    else:
        where = (
            f"Kolmogorov distance of p·τ from Exp(1) D = {pooled:.3f} pooled over the {n_pages} pages "
            f"(flagged above {eps_pool:.3f}), and {int(flagged.sum())} page(s) above the per-page level "
            f"{eps_page:.3f}" + (" (at the shortest page's length)" if history.is_ragged else "")
        )
    warnings.warn(
        f"method {method!r} assumes Poisson crawling: intervals τ exponential with mean 1/p, so that "
        f"E[I] = Δ/(Δ + p) (paper eq. 4). These intervals are not (a test that Poisson crawls fail with "
        f"probability < {FALSE_ALARM:g}): {where}; mean p·τ = {mean:.3f} and coefficient of variation "
        f"{cv:.3f} (Poisson: 1 and 1). The estimate is biased. {_ALTERNATIVES_POISSON}",
        StatisticalWarning,
        stacklevel=stacklevel + 1,
    )
    return True


def warn_if_not_regular(history, estimate, *, stacklevel: int) -> bool:
    """Warn when the intervals differ from 1/p enough to bias the regular-crawl estimate by > 1%.

    With τ = (1 + ε)/p, mean(ε) = m and sd(ε) = c, the estimator tends to
    −p log E[e^{−Δτ}] ≈ Δ(1 + m − (Δ/p) c²/2) to first order, so the relative bias is
    about |m − (Δ/p) c²/2| <= |m| + (Δ̂/p) c²/2, evaluated per page with the final estimate.
    """
    if history.flat_intervals is None or history.crawl_rate is None:
        return False
    z = _flat_scaled_intervals(history)
    p = np.atleast_1d(np.asarray(history.crawl_rate, dtype=np.float64))
    ratio = np.atleast_1d(np.asarray(estimate, dtype=np.float64)) / p
    with np.errstate(over="ignore", invalid="ignore"):
        if history.is_ragged:  # per page, over its own crawls
            mean = segment_totals(z, history) / history.lengths
            c = np.sqrt(segment_totals((z - np.repeat(mean, history.lengths)) ** 2, history) / history.lengths)
        else:
            z2 = z.reshape(history.lengths.size, -1)
            mean, c = z2.mean(axis=1), z2.std(axis=1)
        m = mean - 1.0
    bias = np.abs(m) + ratio * c**2 / 2.0
    bad = bias > REGULAR_BIAS
    if not bad.any():
        return False
    i = int(np.argmax(bias))
    warnings.warn(
        f"method 'regular' assumes crawls on a fixed schedule, every τ = 1/p, but on {int(bad.sum())} of "
        f"{bad.size} page(s) the intervals bias it by more than {REGULAR_BIAS:.0%} (worst page: mean p·τ = "
        f"{1 + m[i]:.3f}, coefficient of variation {c[i] / (1 + m[i]):.3f}, first-order relative bias "
        f"{bias[i]:.3f}). Use 'mle' or 'mm', which use the intervals; with Poisson crawls at rate p, "
        "'lln', 'sa' or 'sam'.",
        StatisticalWarning,
        stacklevel=stacklevel + 1,
    )
    return True
