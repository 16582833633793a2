"""Crawl detections as a 0/1 sequence on the crawl grid, and exact tests of it.

A crawl-detection trace records the crawls (every c time units) that saw a change;
crawls that saw none leave no record. Under a homogeneous Poisson change process with
rate Δ the crawls detect independently, each with probability q = 1 - exp(-Δc): the
detections are a Bernoulli sequence on the grid, and the gap between two detections
is a whole number of crawl intervals, geometric: P(G = k) = q (1 - q)^(k - 1). The
continuous-time facts the other tests use (exponential gaps; event positions i.i.d.
uniform given their number) hold only in the limit c / mean gap -> 0: a detection says
only that at least one change fell in its crawl interval. Jittering detections back
into their interval does not help: Lilliefors on jittered detections of Poisson
changes rejects almost always when c is a quarter of the mean detection gap.

The exact null used here: condition on the first and last detections (slots 0 and N)
and on their number n. Given these, the m = n - 2 inner detections are a uniformly
random m-subset of the N - 1 inner crawls, whatever q (the number of detections is
sufficient for q). Tests of the gap distribution and of the positions follow:

- ``geometric_gaps``: Kolmogorov-Smirnov distance of the gaps (in crawl intervals) to
  the geometric law with q̂ = (n - 1)/N, Monte Carlo p-value under the exact null;
- ``gap_cv`` / ``burstiness``: the gaps' coefficient of variation (about √(1 - q) for
  geometric gaps, not 1), Monte Carlo, two-sided;
- ``mil_hdbk_189``: 2 Σ log(N / j) over inner detection slots j, Monte Carlo;
- ``laplace_trend``: the mean slot of the inner detections; its exact null is that of
  the Wilcoxon-Mann-Whitney rank sum of detected against missed crawls (normal
  approximation with exact moments and continuity correction, as
  ``scipy.stats.mannwhitneyu(method="asymptotic")``);
- ``dispersion_index``, ``hour_of_day``, ``day_of_week``, ``segments_dispersion``:
  Pearson's statistic of detections per group of crawls against the number of crawls
  in the group. Given n the counts are multivariate hypergeometric (crawls are drawn
  without replacement), so E[X²] = (K - 1)(L - m)/(L - 1) with L inner crawls: the
  statistic is scaled by (L - 1)/(L - m) and referred to chi-square with K - 1 df.

Monte Carlo p-values break ties between the observed and simulated statistics at
random, so that they are exactly uniform on {1/(M+1), ..., 1} under H0 (the gaps are
integers and their statistics tie often: without this the tests would be conservative).

Real schedules are not exact grids: a detection is put in the slot
round((t - t_1)/c), pushed one slot on if the previous detection took that slot. Gaps
shorter than half a crawl interval and detections more than c/4 off the grid are
counted and reported: they mean the schedule is not the regular grid these tests
assume, and a rejection may then reflect the schedule as well as the changes.

References
----------
Dufour, J.-M. (2006), Monte Carlo tests with nuisance parameters, *Journal of
Econometrics* 133, 443-477 (Monte Carlo tests with randomised tie-breaking).
Mann, H. B. and Whitney, D. R. (1947), *Annals of Mathematical Statistics* 18, 50-60.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from ._burstiness import burstiness_coefficient, gap_cv
from ._counts import _PERIODS, cochran_ok, default_n_windows, seasonal_labels, seasonal_reading
from ._exponential import MIN_GAPS
from ._qq import QQData
from ._result import DiagnosticResult, insufficient, not_applicable, verdict_words
from ._trend import MIN_INTERIOR

__all__ = [
    "CrawlGrid",
    "crawl_grid",
    "random_subsets",
    "mc_pvalue",
    "geometric_ks",
    "wilcoxon_trend",
    "grid_results",
    "OFF_GRID",
]

#: A detection more than this fraction of c away from its slot is "off the grid".
OFF_GRID = 0.25
# rows × draws per chunk of Monte Carlo null samples (bounds memory)
_CHUNK_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class CrawlGrid:
    """Crawl detections placed on the crawl grid.

    Attributes
    ----------
    slots : ndarray of int64, shape (n,)
        Crawl index of each detection, counted from the first detection (slot 0);
        strictly increasing. ``slots[-1]`` is N, the crawls spanned.
    crawl_interval : float
        c, in the time unit of the detection times.
    n_shifted : int
        Detections pushed one slot on because the previous detection had taken their
        slot (gaps shorter than c/2, or ties).
    n_off_grid : int
        Detections more than c/4 away from the nominal time of the slot they were put
        in (shifted detections are among them).
    """

    slots: np.ndarray
    crawl_interval: float
    n_shifted: int
    n_off_grid: int

    @property
    def n_crawls(self) -> int:
        """N, the crawls from the first to the last detection."""
        return int(self.slots[-1]) if self.slots.size else 0

    @property
    def detection_probability(self) -> float | None:
        """q̂ = (n - 1)/N, the MLE of the detection probability per crawl."""
        return (self.slots.size - 1) / self.n_crawls if self.n_crawls else None

    @property
    def change_rate(self) -> float | None:
        """Δ̂ = -log(1 - q̂)/c per time unit (inf if every crawl detected a change)."""
        q = self.detection_probability
        if q is None:
            return None
        with np.errstate(divide="ignore"):
            return float(-np.log1p(-q) / self.crawl_interval)


def crawl_grid(times: np.ndarray, crawl_interval: float) -> CrawlGrid:
    """Slots of sorted detection times on a grid of step ``crawl_interval`` from the first.

    Examples
    --------
    >>> g = crawl_grid(np.array([0.0, 1.1, 2.9, 3.2, 7.0]), 1.0)
    >>> g.slots.tolist(), g.n_shifted, g.n_off_grid
    ([0, 1, 3, 4, 7], 1, 1)
    """
    t = np.asarray(times, dtype=np.float64)
    if t.size == 0:
        return CrawlGrid(np.zeros(0, dtype=np.int64), float(crawl_interval), 0, 0)
    pos = (t - t[0]) / crawl_interval
    nearest = np.round(pos).astype(np.int64)
    idx = np.arange(t.size)
    slots = np.maximum.accumulate(nearest - idx) + idx  # strictly increasing, >= nearest
    return CrawlGrid(
        slots, float(crawl_interval), int(np.sum(slots != nearest)), int(np.sum(np.abs(pos - slots) > OFF_GRID))
    )


# ----------------------------------------------------------------------------- exact null
def random_subsets(n_slots: int, m: int, size: int, rng) -> np.ndarray:
    """Uniformly random m-subsets of {0, ..., n_slots - 1}, sorted, one per row.

    The first m distinct values of a sequence of i.i.d. uniform draws are a uniform
    m-subset (the law is invariant under relabelling the slots), so the work is about
    m log m per row, not n_slots; for m > n_slots/2 the complement is drawn.

    Returns
    -------
    ndarray of int64, shape (size, m)

    Examples
    --------
    >>> s = random_subsets(10, 3, 4000, np.random.default_rng(0))
    >>> s.shape, bool(np.all(np.diff(s, axis=1) > 0)), round(float(np.mean(np.any(s == 0, axis=1))), 1)
    ((4000, 3), True, 0.3)
    """
    if m == 0:
        return np.zeros((size, 0), dtype=np.int64)
    if 2 * m > n_slots:
        miss = random_subsets(n_slots, n_slots - m, size, rng)
        keep = np.ones((size, n_slots), dtype=bool)
        np.put_along_axis(keep, miss, False, axis=1)
        return np.nonzero(keep)[1].reshape(size, m)
    p = (n_slots - np.arange(m)) / n_slots  # chance that the next draw is new (coupon collector)
    k = int(np.sum(1 / p) + 6 * np.sqrt(np.sum((1 - p) / p**2)) + 10)
    out = np.empty((size, m), dtype=np.int64)
    todo = np.arange(size)
    while todo.size:  # rows short of m distinct values (about 1e-9 of them) are redrawn
        x = rng.integers(0, n_slots, size=(todo.size, k))
        order = np.argsort(x, axis=1, kind="stable")
        xs = np.take_along_axis(x, order, axis=1)
        new = np.ones(xs.shape, dtype=bool)
        new[:, 1:] = xs[:, 1:] != xs[:, :-1]
        first = np.empty_like(new)
        np.put_along_axis(first, order, new, axis=1)  # True at the first draw of each value
        rank = np.cumsum(first, axis=1)
        ok = rank[:, -1] >= m
        sel = first & (rank <= m) & ok[:, None]
        out[todo[ok]] = np.sort(x[sel].reshape(-1, m), axis=1)
        todo = todo[~ok]
    return out


def mc_pvalue(observed: float, null: np.ndarray, alternative: str, rng) -> float:
    """Monte Carlo p-value (1 + #{null at least as extreme}) / (1 + M), ties between the
    observed and a simulated statistic broken at random: exactly uniform on
    {1/(M+1), ..., 1} under H0 for any statistic (Dufour 2006). ``alternative`` is
    "greater" or "two-sided" (twice the smaller one-sided p-value, at most 1)."""
    null = np.asarray(null, dtype=np.float64)
    u = rng.random(null.size + 1)
    above = (null > observed) | ((null == observed) & (u[1:] > u[0]))
    p_greater = (1 + int(np.sum(above))) / (null.size + 1)
    if alternative == "greater":
        return p_greater
    p_less = (1 + int(np.sum(~above))) / (null.size + 1)
    return min(1.0, 2 * min(p_greater, p_less))


# ----------------------------------------------------------------------------- statistics
def geometric_ks(gaps: np.ndarray, q: float) -> np.ndarray:
    """Kolmogorov-Smirnov distance sup_k |F_n(k) - F(k)| of integer gaps (>= 1) to the
    geometric law F(k) = 1 - (1 - q)^k, vectorised over rows (gaps along the last axis).

    Examples
    --------
    >>> float(geometric_ks(np.array([1, 1, 2, 3]), 0.5))   # F = 1/2, 3/4, 7/8; F_n = 1/2, 3/4, 1
    0.125
    """
    g = np.sort(np.asarray(gaps, dtype=np.float64), axis=-1)
    n = g.shape[-1]
    i = np.arange(1, n + 1)
    log1mq = np.log1p(-q) if q < 1 else -np.inf
    with np.errstate(invalid="ignore"):
        cdf = -np.expm1(g * log1mq)
        cdf_before = -np.expm1((g - 1) * log1mq)  # F(k - 1): F_n jumps at k, F rises up to k - 1
    return np.maximum(np.max(i / n - cdf, axis=-1), np.max(cdf_before - (i - 1) / n, axis=-1))


def _mil_statistic(slots: np.ndarray, n_crawls: int) -> np.ndarray:
    inner = slots[..., 1:-1].astype(np.float64)
    return 2.0 * np.sum(np.log(n_crawls) - np.log(inner), axis=-1)


def wilcoxon_trend(position_sum, m, n_inner):
    """Trend z and two-sided p-value from the sum of the inner detection slots.

    Given m detections among the L = ``n_inner`` inner crawls 1..L, the slots are a
    uniform m-subset, so their sum R is the Wilcoxon rank sum of detected against
    missed crawls: U = R - m(m+1)/2 has mean m(L - m)/2 and variance
    m(L - m)(L + 1)/12. z = (U - mean)/sd (> 0: detections crowd towards the end);
    the p-value is the normal one with continuity correction, as
    ``scipy.stats.mannwhitneyu(method="asymptotic")``. Vectorised over the arguments.
    """
    m = np.asarray(m, dtype=np.float64)
    L = np.asarray(n_inner, dtype=np.float64)
    u = np.asarray(position_sum, dtype=np.float64) - m * (m + 1) / 2
    mean = m * (L - m) / 2
    sd = np.sqrt(m * (L - m) * (L + 1) / 12)
    z = (u - mean) / sd
    p = np.minimum(1.0, 2 * stats.norm.sf((np.abs(u - mean) - 0.5) / sd))
    return z, p


def _pearson_hypergeometric(observed, exposure, m, n_inner):
    """Pearson's statistic of counts against exposure (crawls per cell), scaled by
    (L - 1)/(L - m) for sampling crawls without replacement; cells with no exposure
    are left out. Returns (scaled chi2, df, expected)."""
    use = exposure > 0
    o, e = observed[use], exposure[use]
    expected = m * e / n_inner
    chi2 = float(np.sum((o - expected) ** 2 / expected))
    scale = (n_inner - 1) / (n_inner - m)
    return chi2 * scale, int(use.sum()) - 1, expected


# ----------------------------------------------------------------------------- results
def _null_statistics(grid: CrawlGrid, n_resamples: int, rng, n_qq: int):
    """Geometric KS, gap CV and MIL statistics of ``n_resamples`` null samples, and the
    sorted gaps of the first ``n_qq`` (for the Q-Q envelope)."""
    n, N = grid.slots.size, grid.n_crawls
    m, q = n - 2, grid.detection_probability
    assert q is not None  # called with at least two crawls
    chunk = max(1, _CHUNK_ELEMENTS // max(2 * m, 1))
    ks, cv, mil, qq_rows = [], [], [], []
    done = 0
    while done < n_resamples:  # a loop over chunks of Monte Carlo samples, each vectorised
        size = min(chunk, n_resamples - done)
        inner = random_subsets(N - 1, m, size, rng) + 1
        slots = np.concatenate([np.zeros((size, 1), np.int64), inner, np.full((size, 1), N)], axis=1)
        gaps = np.diff(slots, axis=1)
        ks.append(geometric_ks(gaps, q))
        cv.append(gap_cv(gaps))
        mil.append(_mil_statistic(slots, N))
        if done < n_qq:
            qq_rows.append(np.sort(gaps[: n_qq - done], axis=1))
        done += size
    qq_null = np.concatenate(qq_rows) if qq_rows else np.zeros((0, m + 1), dtype=np.int64)
    return np.concatenate(ks), np.concatenate(cv), np.concatenate(mil), qq_null


def _reading_null(n_resamples):
    return {"n_resamples": int(n_resamples), "null": "Monte Carlo: detection slots uniform given their number"}


def grid_results(
    grid: CrawlGrid,
    *,
    clock0_hours: float | None,
    segments=None,
    origin: float = 0.0,
    n_windows: int | None = None,
    n_resamples: int,
    rng,
    alpha: float = 0.05,
    qq_level: float = 0.95,
    n_qq: int = 199,
):
    """The crawl-grid versions of the Poisson tests (see the module docstring).

    Parameters
    ----------
    grid : CrawlGrid
    clock0_hours : float or None
        Hours since Monday 1970-01-05 00:00 UTC of slot 0 (datetime input), else None.
    segments : Segments or None
        Bayesian blocks fitted to the nominal slot times ``origin + slot * c``.
    origin : float
        Time of slot 0 in the unit of ``segments``.

    Returns
    -------
    tests : dict
        name -> DiagnosticResult for ``geometric_gaps``, ``gap_cv``, ``burstiness``,
        ``laplace_trend``, ``mil_hdbk_189``, ``dispersion_index``, ``hour_of_day``,
        ``day_of_week`` and ``segments_dispersion``.
    qq : QQData
        Gaps (time units) against geometric quantiles, envelope from the exact null.
    """
    n, N, c = grid.slots.size, grid.n_crawls, grid.crawl_interval
    m, L = n - 2, N - 1
    names = (
        "geometric_gaps",
        "gap_cv",
        "burstiness",
        "laplace_trend",
        "mil_hdbk_189",
        "dispersion_index",
        "hour_of_day",
        "day_of_week",
        "segments_dispersion",
    )
    empty_qq = QQData(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), float(qq_level), 0, "geometric")
    if n < 3 or N < 2:
        why = f"{n} detection(s) over {N} crawl interval(s)"
        return {k: insufficient(k, why) for k in names}, empty_qq
    if m >= L:
        why = "every crawl between the first and last detection saw a change (q̂ = 1): nothing to compare"
        return {k: insufficient(k, why) for k in names}, empty_qq
    q = grid.detection_probability
    assert q is not None  # N >= 2 crawls, checked above
    slots = grid.slots
    gaps = np.diff(slots)
    inner = slots[1:-1]
    out: dict[str, DiagnosticResult] = {}

    # Monte Carlo tests on the gaps and the MIL statistic: one exact null sample
    ks_null, cv_null, mil_null, qq_null = _null_statistics(grid, n_resamples, rng, n_qq)
    common = {
        "n_gaps": int(gaps.size),
        "q": q,
        "change_rate": grid.change_rate,
        "crawl_interval": c,
        **_reading_null(n_resamples),
    }
    if gaps.size < MIN_GAPS:
        why = f"{gaps.size} gap(s); the test needs at least {MIN_GAPS}"
        out["geometric_gaps"], out["gap_cv"], out["burstiness"] = (
            insufficient(k, why) for k in ("geometric_gaps", "gap_cv", "burstiness")
        )
    else:
        d = float(geometric_ks(gaps, q))
        p = mc_pvalue(d, ks_null, "greater", rng)
        out["geometric_gaps"] = DiagnosticResult(
            "geometric_gaps",
            d,
            p,
            f"KS distance {d:.3f} of the gaps (in crawl intervals) to the geometric law with q̂ = {q:.3g} "
            "detections per crawl; "
            + verdict_words(
                p,
                alpha,
                reject="the gaps between detections are not geometric, so the detections are not "
                "independent crawls of a homogeneous Poisson change process",
                keep="the gaps are consistent with independent detections per crawl (geometric gaps)",
            ),
            details=common,
        )
        cv = float(gap_cv(gaps))
        cv0 = float(np.median(cv_null))
        p = mc_pvalue(cv, cv_null, "two-sided", rng)
        kind = "bursty (gaps more variable than geometric)" if cv > cv0 else "more regular than independent crawls"
        det = {**common, "expected": cv0}
        out["gap_cv"] = DiagnosticResult(
            "gap_cv",
            cv,
            p,
            f"gap CV = {cv:.3g} ({cv0:.3g} expected for crawl detections of Poisson changes, about √(1 - q̂)); "
            + verdict_words(p, alpha, reject=f"the detections are {kind}", keep="gap variability as for Poisson"),
            details=det,
        )
        b, b0 = float(burstiness_coefficient(cv)), float(burstiness_coefficient(cv0))
        out["burstiness"] = DiagnosticResult(
            "burstiness",
            b,
            p,
            f"Goh-Barabási B = {b:.3g} ({b0:.3g} expected for crawl detections of Poisson changes); same test "
            "as gap_cv; " + verdict_words(p, alpha, reject=f"the detections are {kind}", keep="not bursty"),
            details={**det, "expected": b0},
        )

    # trend tests
    if m < MIN_INTERIOR or L - m < MIN_INTERIOR:
        why = f"{m} inner detection(s) and {L - m} crawl(s) without one; the tests need {MIN_INTERIOR} of each"
        out["laplace_trend"] = insufficient("laplace_trend", why)
        out["mil_hdbk_189"] = insufficient("mil_hdbk_189", why)
    else:
        z, p = wilcoxon_trend(float(np.sum(inner)), m, L)
        z, p = float(z), float(p)
        out["laplace_trend"] = DiagnosticResult(
            "laplace_trend",
            z,
            p,
            f"z = {z:.2f} (Wilcoxon rank sum of detected against missed crawls); "
            + verdict_words(
                p,
                alpha,
                reject=f"the detection rate {'increases' if z > 0 else 'decreases'} over the trace (trend)",
                keep="no linear trend in the detection rate",
            ),
            details={"n_inner": m, "n_inner_crawls": L, "null": "exact moments of the rank sum, normal approximation"},
        )
        s = float(_mil_statistic(slots, N))
        p = mc_pvalue(s, mil_null, "two-sided", rng)
        s0 = float(np.mean(mil_null))
        out["mil_hdbk_189"] = DiagnosticResult(
            "mil_hdbk_189",
            s,
            p,
            f"2Σlog(N/j) = {s:.4g} over the detection slots j (mean {s0:.4g} under H0); "
            + verdict_words(
                p,
                alpha,
                reject=f"the detection rate {'increases' if s < s0 else 'decreases'} over the trace (power-law trend)",
                keep="no power-law trend in the detection rate",
            ),
            details={"n_inner": m, "expected": s0, **_reading_null(n_resamples)},
        )

    out["dispersion_index"] = _dispersion(inner, m, L, n_windows, alpha)
    for kind in ("hour_of_day", "day_of_week"):
        out[kind] = _seasonality(inner, m, L, c, clock0_hours, kind, alpha)
    out["segments_dispersion"] = _segments_dispersion(slots, segments, origin, c, alpha)

    # Q-Q: observed gaps against geometric quantiles, envelope from the exact null
    probs = (np.arange(1, gaps.size + 1) - 0.5) / gaps.size
    theoretical = np.maximum(1.0, np.ceil(np.log1p(-probs) / np.log1p(-q) - 1e-9)) * c
    if qq_null.shape[0]:
        lower, upper = np.quantile(qq_null, [(1 - qq_level) / 2, (1 + qq_level) / 2], axis=0) * c
    else:
        lower = upper = np.full(gaps.size, np.nan)
    qq = QQData(theoretical, np.sort(gaps) * c, lower, upper, float(qq_level), int(qq_null.shape[0]), "geometric")
    return {k: out[k] for k in names}, qq


def _window_cells(n_inner: int, k: int) -> np.ndarray:
    """Crawls per window when the inner crawls 1..L are cut into k near-equal windows."""
    bounds = -(-np.arange(k + 1) * n_inner // k)  # ceil(w L / k)
    return np.diff(bounds)


def _dispersion(inner, m, L, n_windows, alpha) -> DiagnosticResult:
    name = "dispersion_index"
    if m < 10:
        return insufficient(name, f"{m} inner detection(s); the test needs 10")
    k = default_n_windows(m) if n_windows is None else int(n_windows)
    if k < 2 or m / k < 5:
        return insufficient(name, f"{m} inner detections in {k} windows: fewer than 5 expected per window")
    win = (inner - 1) * k // L
    chi2, df, _ = _pearson_hypergeometric(np.bincount(win, minlength=k), _window_cells(L, k), m, L)
    index, p = chi2 / df, float(stats.chi2.sf(chi2, df))
    return DiagnosticResult(
        name,
        index,
        p,
        f"variance/mean of detections in {k} windows of crawls = {index:.3g} (1 under H0, after the "
        "correction for crawls drawn without replacement); "
        + verdict_words(
            p, alpha, reject="detections are clustered (over-dispersed)", keep="detections are not over-dispersed"
        ),
        details={"n_windows": k, "chi2": chi2, "df": df, "null": "hypergeometric, scaled chi-square"},
    )


def _seasonality(inner, m, L, c, clock0, kind, alpha) -> DiagnosticResult:
    if clock0 is None:
        return not_applicable(kind, "needs datetimes (a clock), got plain numbers")
    if m < 1:
        return insufficient(kind, f"{m} inner detections")
    period, n_bins = _PERIODS[kind]
    width = period / n_bins
    # nominal clock time of every inner crawl 1..L and the bin it falls in
    crawl_bin = np.minimum((np.mod(clock0 + np.arange(1, L + 1) * c, period) / width).astype(np.int64), n_bins - 1)
    exposure = np.bincount(crawl_bin, minlength=n_bins)
    observed = np.bincount(crawl_bin[inner - 1], minlength=n_bins)
    if np.count_nonzero(exposure) < 2:
        return not_applicable(kind, f"every crawl falls in the same {'hour' if kind == 'hour_of_day' else 'day'}")
    chi2, df, expected = _pearson_hypergeometric(observed, exposure, m, L)
    if not cochran_ok(expected):
        return insufficient(
            kind,
            f"{m} inner detections give expected counts down to {expected.min():.2g} per bin "
            "(the chi-square approximation needs >= 1 everywhere and >= 5 in 80% of the bins)",
        )
    p = float(stats.chi2.sf(chi2, df))
    use = exposure > 0
    ratio = np.full(n_bins, np.nan)
    ratio[use] = observed[use] / (m * exposure[use] / L)
    return DiagnosticResult(
        kind,
        chi2,
        p,
        seasonal_reading(
            kind, chi2, df, p, ratio, alpha, rate="detection rate", against=", against the crawls in each bin"
        ),
        details={
            "df": df,
            "labels": seasonal_labels(kind),
            "counts": observed.tolist(),
            "crawls": exposure.tolist(),
            "null": "hypergeometric, scaled chi-square",
        },
    )


def _segments_dispersion(slots, segments, origin, c, alpha) -> DiagnosticResult:
    name = "segments_dispersion"
    if segments is None or slots.size < 10:
        return insufficient(name, f"{slots.size} detection(s); the test needs 10")
    N = int(slots[-1])
    edges = (np.asarray(segments.edges) - origin) / c  # in slots
    n_seg = segments.n_segments
    crawls = np.arange(1, N)  # inner crawls
    seg = np.clip(np.searchsorted(edges, crawls, side="right") - 1, 0, n_seg - 1)
    L_s = np.bincount(seg, minlength=n_seg)
    start = np.concatenate(([0], np.cumsum(L_s)[:-1])) + 1  # first inner crawl of each segment
    det = np.zeros(N + 1, dtype=bool)
    det[slots] = True
    hit = det[1:N]
    m_s = np.bincount(seg, weights=hit, minlength=n_seg).astype(np.int64)
    k_s = np.minimum(m_s // 5, 50)
    use = (k_s >= 2) & (m_s < L_s)
    if not use.any():
        return insufficient(name, "no segment has 10 inner detections and a crawl without one")
    k = k_s[seg]
    sub = np.where(use[seg], (crawls - start[seg]) * k // np.maximum(L_s[seg], 1), 0)
    offsets = np.concatenate(([0], np.cumsum(k_s)))[:-1]
    cell = offsets[seg] + sub
    n_cells = int(k_s.sum())
    exposure = np.bincount(cell[use[seg]], minlength=n_cells).astype(np.float64)
    observed = np.bincount(cell[use[seg] & hit], minlength=n_cells).astype(np.float64)
    seg_of_cell = np.repeat(np.arange(n_seg), k_s)
    cells = use[seg_of_cell]
    m_c, L_c = m_s[seg_of_cell][cells], L_s[seg_of_cell][cells]
    expected = m_c * exposure[cells] / L_c
    contrib = (observed[cells] - expected) ** 2 / expected * (L_c - 1) / (L_c - m_c)
    chi2 = float(np.sum(contrib))
    df = int(np.sum(k_s[use] - 1))
    p = float(stats.chi2.sf(chi2, df))
    index = chi2 / df
    return DiagnosticResult(
        name,
        index,
        p,
        f"variance/mean of detections in sub-windows of {int(use.sum())} of {n_seg} segment(s) = {index:.3g} "
        "(1 under H0, corrected for crawls drawn without replacement); "
        + verdict_words(
            p,
            alpha,
            reject="within segments of constant rate the detections still cluster",
            keep="within segments the detections are not over-dispersed",
        ),
        details={
            "chi2": chi2,
            "df": df,
            "n_segments_tested": int(use.sum()),
            "n_segments": n_seg,
            "null": "hypergeometric within segments, scaled chi-square",
        },
    )
