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

Cost bound: the dynamic programme is quadratic in the number of data cells, so above
:data:`EXACT_BLOCKS_MAX` distinct times the same programme (same fitness, same prior
from ``p0`` and the number of distinct times) runs on groups of consecutive distinct
times, at most :data:`MAX_CELLS` cells: change points are then restricted to the
boundaries between groups (``Segments.group_size`` distinct times per group, recorded
in the result). The cost is O(n log n + MAX_CELLS²): about 0.3 s whatever n
(``benchmarks/bench_bayesian_blocks.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import stats

from .._event_times import as_event_times
from ._exponential import NULL_SIZE, subsize_pvalue
from ._result import DiagnosticResult, insufficient, verdict_words

__all__ = [
    "Segments",
    "segment_rates",
    "fit_segments",
    "rescaled_gaps",
    "time_rescaling_result",
    "segments_dispersion_result",
    "MIN_EVENTS",
    "EXACT_BLOCKS_MAX",
    "MAX_CELLS",
]

MIN_EVENTS = 10

#: up to this many distinct times, astropy's Bayesian blocks runs on every time
EXACT_BLOCKS_MAX = 10_000
#: above EXACT_BLOCKS_MAX, the segmentation runs on at most this many groups of consecutive times
MAX_CELLS = 4_000


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
    group_size : int, default 1
        Distinct times per data cell of the segmentation: 1 is the exact Bayesian
        blocks; above ``EXACT_BLOCKS_MAX`` distinct times, change points can only fall
        between groups of this many consecutive distinct times (a bound on the cost).
    """

    edges: np.ndarray
    counts: np.ndarray
    rates: np.ndarray
    p0: float
    group_size: int = 1

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
    from astropy.stats import Events  # astropy: heavy, needed only for Bayesian blocks

    prop = getattr(Events, "_fitness_args", None)
    if not isinstance(prop, property):
        return Events(p0=p0)

    class _CachedEvents(Events):
        @cached_property
        def _fitness_args(self):
            return prop.fget(self)

    return _CachedEvents(p0=p0)


def grouped_blocks(times: np.ndarray, *, p0: float = 0.05, group_size: int = 1) -> np.ndarray:
    """Bayesian blocks (``fitness="events"``) with change points only between groups.

    The dynamic programme of Scargle et al. (2013, Sect. 3) with the events fitness
    N (log N − log T) and astropy's prior (``p0_prior`` of the number of distinct
    times), on data cells made of ``group_size`` consecutive distinct times each (the
    last group may be smaller). Cell edges are astropy's: midpoints between
    consecutive distinct times. With ``group_size=1`` it is astropy's
    ``bayesian_blocks(times, fitness="events", p0=p0)``.

    Parameters
    ----------
    times : ndarray of float, shape (n,)
        Sorted event times with at least two distinct values.
    p0 : float
        False-alarm probability per change point.
    group_size : int
        Distinct times per data cell.

    Returns
    -------
    ndarray, shape (K + 1,)
        Block edges, from the first to the last time.
    """
    from astropy.stats import Events  # astropy: heavy, needed only for Bayesian blocks

    u, mult = np.unique(np.asarray(times, dtype=np.float64), return_counts=True)
    n_unique = u.size
    edges = np.concatenate([u[:1], 0.5 * (u[1:] + u[:-1]), u[-1:]])
    block_length = u[-1] - edges
    starts = np.arange(0, n_unique, group_size)  # first distinct time of each cell
    cell_edges = np.append(starts, n_unique)  # indices into `edges`
    counts = np.add.reduceat(mult, starts).astype(np.float64)
    cum = np.concatenate(([0.0], np.cumsum(counts)))
    length = block_length[cell_edges]
    m = starts.size
    ncp_prior = Events(p0=p0).compute_ncp_prior(n_unique)
    best = np.zeros(m)
    last = np.zeros(m, dtype=np.int64)
    for r in range(m):  # O(m²) in total; each step vectorised over the block starts
        n_k = cum[r + 1] - cum[: r + 1]
        t_k = length[: r + 1] - length[r + 1]
        a_r = n_k * np.log(n_k / t_k) - ncp_prior
        a_r[1:] += best[:r]
        i_max = int(np.argmax(a_r))
        last[r], best[r] = i_max, a_r[i_max]
    cps = [m]
    while cps[-1] > 0:
        cps.append(int(last[cps[-1] - 1]))
    return edges[cell_edges[np.array(cps[::-1])]]


def fit_segments(times: np.ndarray, *, p0: float = 0.05) -> Segments:
    """Bayesian blocks (astropy, ``fitness="events"``) on sorted event times.

    Above :data:`EXACT_BLOCKS_MAX` distinct times the segmentation runs on at most
    :data:`MAX_CELLS` groups of consecutive distinct times (:func:`grouped_blocks`;
    ``group_size`` in the result), which bounds the quadratic cost.
    """
    from astropy.stats import bayesian_blocks  # astropy: heavy, needed only for Bayesian blocks

    t = np.asarray(times, dtype=np.float64)
    if t.size < 2 or t[-1] <= t[0]:
        edges = np.array([t[0], t[-1]]) if t.size else np.array([0.0, 0.0])
        return Segments(edges, np.array([t.size]), np.array([0.0]), float(p0))
    n_unique = int(np.count_nonzero(np.diff(t))) + 1
    group_size = 1 if n_unique <= EXACT_BLOCKS_MAX else -(-n_unique // MAX_CELLS)
    if group_size == 1:
        edges = np.asarray(bayesian_blocks(t, fitness=_events_fitness(p0)), dtype=np.float64)
    else:
        edges = grouped_blocks(t, p0=p0, group_size=group_size)
    edges[0], edges[-1] = t[0], t[-1]
    idx = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, edges.size - 2)
    counts = np.bincount(idx, minlength=edges.size - 1)
    rates = counts / np.diff(edges)
    return Segments(edges, counts, rates, float(p0), group_size)


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


def _large_time_rescaling(times, segments: Segments, *, n_resamples: int, rng) -> tuple[float, float]:
    """Time rescaling above NULL_SIZE events: √n·KS against its null simulated with
    NULL_SIZE events, shared among the segments in proportion to their counts."""
    n = times.size
    d = float(_ks_exp1(rescaled_gaps(times, segments)))
    counts = np.maximum(1, np.round(segments.counts * (NULL_SIZE / n))).astype(np.int64)
    widths = np.diff(segments.edges)
    sim_seg = Segments(segments.edges, counts, counts / widths, segments.p0)
    seg_of = np.repeat(np.arange(counts.size), counts)
    lo, width = segments.edges[:-1][seg_of], widths[seg_of]
    m = seg_of.size

    def simulate(b):
        pos = np.sort(lo + rng.random((b, m)) * width, axis=-1)
        return np.sqrt(m) * _ks_exp1(rescaled_gaps(pos, sim_seg))

    return d, subsize_pvalue(np.sqrt(n) * d, simulate, n_resamples=n_resamples)


def time_rescaling_result(
    times: np.ndarray, segments: Segments, *, n_resamples: int, rng, alpha: float = 0.05
) -> DiagnosticResult:
    """Time-rescaling test: KS of the rescaled gaps Λ(t_{i+1}) - Λ(t_i) against Exp(1).

    The rates are fitted to the same events, which makes the textbook KS p-value
    conservative; the p-value here is a Monte Carlo p-value conditional on the
    segmentation: given its count, the events of a segment are i.i.d. uniform on it
    under a piecewise-homogeneous Poisson process (first and last events held
    fixed), so the positions are redrawn that way and the statistic recomputed
    (``scipy.stats.monte_carlo_test``). The choice of the segments from the same
    data is not accounted for (conservative). Above ``NULL_SIZE`` events the null is
    simulated with NULL_SIZE events spread over the segments in proportion to their
    counts and √n·KS is compared (its limit law), so the cost does not grow with n.

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

    if n > NULL_SIZE:
        d, p = _large_time_rescaling(times, segments, n_resamples=n_resamples, rng=rng)
        null = f"Monte Carlo at {NULL_SIZE} events spread over the segments as the data, √n·KS compared"
    else:
        res = stats.monte_carlo_test(
            times, rvs, statistic, vectorized=True, n_resamples=n_resamples, alternative="greater", axis=-1
        )
        d, p = float(res.statistic), float(res.pvalue)
        null = "Monte Carlo, uniform positions within segments"
    return DiagnosticResult(
        "time_rescaling",
        d,
        p,
        f"KS distance {d:.3f} of the gaps rescaled by the {segments.n_segments}-segment rate to Exp(1); "
        + verdict_words(
            p,
            alpha,
            reject="even with the rate allowed to change between segments, the events are not Poisson "
            "(clustering within segments)",
            keep="a Poisson process with the segmented rate fits",
        ),
        details={"n_segments": segments.n_segments, "n_resamples": int(n_resamples), "null": null},
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
        "segments_dispersion",
        index,
        p,
        f"variance/mean of counts in sub-windows of {int(use.sum())} of {n_seg} segment(s) = {index:.3g} "
        f"(1 under Poisson); "
        + verdict_words(
            p,
            alpha,
            reject="within segments of constant rate the events still cluster",
            keep="within segments the counts are not over-dispersed",
        ),
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
    if not (isinstance(p0, (int, float)) and 0 < p0 < 1):
        raise ValueError(f"`p0` must be in (0, 1); got {p0!r}")
    t = as_event_times(event_times).values
    if t.size < 2 or t[-1] <= t[0]:
        raise ValueError(f"`event_times` must hold at least two distinct times; got {t.size} event(s)")
    return fit_segments(t, p0=p0)
