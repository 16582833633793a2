"""Piecewise-constant rate: Bayesian-blocks segmentation, Poisson tests within the
segments and the time-rescaling theorem.

Segmentation library: ``astropy.stats.bayesian_blocks`` with ``fitness="events"``
(Scargle et al. 2013). It was chosen over ``ruptures`` and over a hand-made
statsmodels/scipy change-point search because it is made for exactly this data:
unbinned event times with the exact Poisson likelihood of each block, ties handled
as multiplicities, the optimal partition found by dynamic programming (not a greedy
or windowed search) and a prior on the number of change points calibrated by a
false-alarm probability ``p0`` per change point. ``ruptures`` segments binned
signals and has no Poisson point-process cost, so it would need a binning choice and a
penalty tuned by hand; statsmodels and scipy have no change-point search. astropy is
maintained by a large community with regular releases; its cost is O(n²), about 1 s
for 9000 events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from ._result import DiagnosticResult, insufficient, verdict_words

__all__ = ["Segments", "segment_rates", "fit_segments", "rescaled_gaps", "time_rescaling_result", "segments_dispersion_result",
           "MIN_EVENTS"]

MIN_EVENTS = 10


@dataclass(frozen=True)
class Segments:
    """A piecewise-constant rate fitted to event times.

    Attributes
    ----------
    edges : ndarray, shape (K + 1,)
        Segment boundaries in the time unit of the events (hours for datetimes),
        from the first to the last event.
    counts : ndarray of int, shape (K,)
        Events in each segment (the last segment includes the last event).
    rates : ndarray, shape (K,)
        counts / length: events per time unit in each segment.
    p0 : float
        False-alarm probability per change point used by Bayesian blocks.
    """

    edges: np.ndarray
    counts: np.ndarray
    rates: np.ndarray
    p0: float

    @property
    def n_segments(self) -> int:
        """Number of segments K."""
        return int(self.counts.size)

    def cumulative_rate(self, t) -> np.ndarray:
        """Λ(t) = ∫ rate from the first edge to ``t`` (piecewise linear)."""
        t = np.asarray(t, dtype=np.float64)
        lengths = np.diff(self.edges)
        cum = np.concatenate(([0.0], np.cumsum(self.rates * lengths)))
        k = np.clip(np.searchsorted(self.edges, t, side="right") - 1, 0, self.n_segments - 1)
        return cum[k] + self.rates[k] * (t - self.edges[k])


def _events_fitness(p0: float):
    """astropy's ``Events`` fitness with its argument list computed once.

    ``FitnessFunc.fit`` reads the ``_fitness_args`` property (an ``inspect.signature``
    call) several times per event; caching it changes nothing else (see
    ``benchmarks/bench_bayesian_blocks.py`` for the time saved). Falls back to plain
    ``Events`` if a future astropy stores the arguments differently.
    """
    from functools import cached_property

    from astropy.stats import Events

    prop = getattr(Events, "_fitness_args", None)
    if not isinstance(prop, property):
        return Events(p0=p0)

    class _CachedEvents(Events):
        @cached_property
        def _fitness_args(self):
            return prop.fget(self)

    return _CachedEvents(p0=p0)


def fit_segments(times: np.ndarray, *, p0: float = 0.05) -> Segments:
    """Bayesian blocks (astropy, ``fitness="events"``) on sorted event times."""
    from astropy.stats import bayesian_blocks

    t = np.asarray(times, dtype=np.float64)
    if t.size < 2 or t[-1] <= t[0]:
        edges = np.array([t[0], t[-1]]) if t.size else np.array([0.0, 0.0])
        return Segments(edges, np.array([t.size]), np.array([0.0]), float(p0))
    edges = np.asarray(bayesian_blocks(t, fitness=_events_fitness(p0)), dtype=np.float64)
    edges[0], edges[-1] = t[0], t[-1]
    idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, edges.size - 2)
    counts = np.bincount(idx, minlength=edges.size - 1)
    rates = counts / np.diff(edges)
    return Segments(edges, counts, rates, float(p0))


def rescaled_gaps(times: np.ndarray, segments: Segments) -> np.ndarray:
    """Gaps of Λ(t_i): i.i.d. Exp(1) if the fitted rate were the true one."""
    return np.diff(segments.cumulative_rate(times), axis=-1)


def _ks_exp1(gaps: np.ndarray) -> np.ndarray:
    """KS distance of ``gaps`` (shape (..., m)) to Exp(1), vectorised."""
    g = np.sort(gaps, axis=-1)
    m = g.shape[-1]
    cdf = -np.expm1(-g)
    i = np.arange(1, m + 1)
    return np.maximum(np.max(i / m - cdf, axis=-1), np.max(cdf - (i - 1) / m, axis=-1))


def _segment_index(times: np.ndarray, segments: Segments) -> np.ndarray:
    return np.clip(np.searchsorted(segments.edges, times, side="right") - 1, 0, segments.n_segments - 1)


def time_rescaling_result(times: np.ndarray, segments: Segments, *, n_resamples: int, rng,
                          alpha: float = 0.05) -> DiagnosticResult:
    """Time-rescaling test: KS of the rescaled gaps Λ(t_{i+1}) - Λ(t_i) against Exp(1).

    The rates are fitted to the same events, which makes the textbook KS p-value
    conservative; the p-value here is a Monte Carlo p-value conditional on the
    segmentation: given its count, the events of a segment are i.i.d. uniform on it
    under a piecewise-homogeneous Poisson process (first and last events held
    fixed), so the positions are redrawn that way and the statistic recomputed
    (``scipy.stats.monte_carlo_test``). The choice of the segments from the same
    data is not accounted for (conservative).

    References
    ----------
    Brown, E. N., Barbieri, R., Ventura, V., Kass, R. E. and Frank, L. M. (2002), The
    time-rescaling theorem and its application to neural spike train data analysis,
    *Neural Computation* 14, 325-346.
    """
    n = times.size
    if n < MIN_EVENTS or times[-1] <= times[0]:
        return insufficient("time_rescaling", f"{n} event(s); the test needs {MIN_EVENTS}")
    seg_idx = _segment_index(times, segments)
    lo = segments.edges[seg_idx]
    width = np.diff(segments.edges)[seg_idx]
    fixed = np.zeros(n, dtype=bool)
    fixed[[0, -1]] = True

    def rvs(size):
        pos = lo + rng.random(size) * width
        pos[..., fixed] = times[fixed]
        return np.sort(pos, axis=-1)  # segments are disjoint and ordered: each stays in its own

    def statistic(x, axis=-1):
        return _ks_exp1(rescaled_gaps(x, segments))

    res = stats.monte_carlo_test(times, rvs, statistic, vectorized=True, n_resamples=n_resamples,
                                 alternative="greater", axis=-1)
    d, p = float(res.statistic), float(res.pvalue)
    return DiagnosticResult(
        "time_rescaling", d, p,
        f"KS distance {d:.3f} of the gaps rescaled by the {segments.n_segments}-segment rate to Exp(1); "
        + verdict_words(p, alpha,
                        reject="even with the rate allowed to change between segments, the events are not Poisson "
                               "(clustering within segments)",
                        keep="a Poisson process with the segmented rate fits"),
        details={"n_segments": segments.n_segments, "n_resamples": int(n_resamples),
                 "null": "Monte Carlo, uniform positions within segments"},
    )


def segments_dispersion_result(times: np.ndarray, segments: Segments, *, alpha: float = 0.05) -> DiagnosticResult:
    """Poisson within segments: dispersion of counts in sub-windows of each segment.

    Each segment with at least 10 inner events is cut into K_s = floor(m_s / 5)
    (at most 50) equal sub-windows; given its count, a segment's inner events are
    uniform on it under a piecewise-homogeneous Poisson process, so the Pearson
    statistics add up to a chi-square with Σ (K_s - 1) df. The events on a segment's
    edges are left out. Over-dispersion means clustering at shorter time scales than
    the segments.
    """
    edges, n_seg = segments.edges, segments.n_segments
    if times.size < MIN_EVENTS or times[-1] <= times[0]:
        return insufficient("segments_dispersion", f"{times.size} event(s); the test needs {MIN_EVENTS}")
    seg_idx = _segment_index(times, segments)
    lo, hi = edges[:-1][seg_idx], edges[1:][seg_idx]
    inner = (times > lo) & (times < hi)
    m_s = np.bincount(seg_idx[inner], minlength=n_seg)
    k_s = np.minimum(m_s // 5, 50)
    use = k_s >= 2
    if not use.any():
        return insufficient("segments_dispersion", "no segment has 10 inner events")
    sel = inner & use[seg_idx]
    s = seg_idx[sel]
    u = (times[sel] - lo[sel]) / (hi[sel] - lo[sel])
    k = k_s[s]
    sub = np.minimum((u * k).astype(np.int64), k - 1)
    offsets = np.concatenate(([0], np.cumsum(k_s)))[:-1]
    counts = np.bincount(offsets[s] + sub, minlength=int(k_s.sum()))
    seg_of_cell = np.repeat(np.arange(n_seg), k_s)
    expected = (m_s / np.maximum(k_s, 1))[seg_of_cell]
    cells = use[seg_of_cell]
    chi2 = float(np.sum((counts[cells] - expected[cells]) ** 2 / expected[cells]))
    df = int(np.sum(k_s[use] - 1))
    p = float(stats.chi2.sf(chi2, df))  # upper tail: clustering (see dispersion_statistic)
    index = chi2 / df
    return DiagnosticResult(
        "segments_dispersion", index, p,
        f"variance/mean of counts in sub-windows of {int(use.sum())} of {n_seg} segment(s) = {index:.3g} "
        f"(1 under Poisson); " + verdict_words(
            p, alpha, reject="within segments of constant rate the events still cluster",
            keep="within segments the counts are not over-dispersed"),
        details={"chi2": chi2, "df": df, "n_segments_tested": int(use.sum()), "n_segments": n_seg},
    )


def segment_rates(event_times, *, p0: float = 0.05) -> Segments:
    """Piecewise-constant rate of event times by Bayesian blocks (astropy).

    Parameters
    ----------
    event_times : array_like, shape (n,), n >= 2
        Sorted event times, floats (any unit) or datetimes (hours since the first).
    p0 : float, default 0.05
        False-alarm probability per change point (Scargle et al. 2013, eq. 21).

    Returns
    -------
    Segments
        Edges from the first to the last event, counts and rates per segment (events
        per time unit: per hour for datetimes).

    Raises
    ------
    ValueError
        For fewer than two distinct times, ``p0`` outside (0, 1), or bad times (naming
        the row).

    Notes
    -----
    Bayesian blocks maximise Σ_k N_k (log N_k - log L_k) - prior(K) over all
    partitions by dynamic programming (``fitness="events"``); see the module
    docstring for why this library.

    References
    ----------
    Scargle, J. D., Norris, J. P., Jackson, B. and Chiang, J. (2013), Studies in
    astronomical time series analysis. VI. Bayesian block representations,
    ApJ 764, 167.

    Examples
    --------
    >>> import numpy as np
    >>> g = np.random.default_rng(2)
    >>> t = np.concatenate([np.sort(g.uniform(0, 100, 100)), np.sort(g.uniform(100, 110, 100))])
    >>> seg = segment_rates(t)
    >>> seg.n_segments, np.round(seg.rates, 0).tolist()
    (2, [1.0, 10.0])
    """
    from .._times import as_event_times

    if not (isinstance(p0, (int, float)) and 0 < p0 < 1):
        raise ValueError(f"`p0` must be in (0, 1); got {p0!r}")
    t = as_event_times(event_times).values
    if t.size < 2 or t[-1] <= t[0]:
        raise ValueError(f"`event_times` must hold at least two distinct times; got {t.size} event(s)")
    return fit_segments(t, p0=p0)
