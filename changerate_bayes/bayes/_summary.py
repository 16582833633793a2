"""``posterior_summary()``: exact per-page posterior mean, sd and credible interval of Δ."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from .._validation import check_choice, check_open_unit, check_positive_int
from ..history import CrawlHistory
from ._conjugate import conjugate_parameters
from ._grid import DEFAULT_GRID_SIZE, improper_pages
from ._grid_fast import _raise_for_status
from ._posterior import _check_conjugate, _check_prior, refuse_improper
from ._sufficient import change_counts, crawl_rates, time_rescaling

__all__ = ["PosteriorSummary", "posterior_summary", "SUMMARY_METHODS"]

SUMMARY_METHODS = ("grid", "conjugate")
#: below this squared coefficient of variation, the sd is taken from the grid's central
#: moment rather than from E[Δ²] − E[Δ]² (which would cancel catastrophically)
_CANCEL_CV2 = 1e-4


@dataclass(frozen=True)
class PosteriorSummary:
    """Per-page summary of the posterior of the change rate Δ.

    Attributes
    ----------
    mean, sd : ndarray of float64, shape (n_pages,)
        Posterior mean and standard deviation of Δ (per unit time of the intervals, or
        of the crawl rate for ``"conjugate"``); ``inf`` where the moment diverges.
    lower, upper : ndarray of float64, shape (n_pages,)
        The equal-tailed ``level`` credible interval: the (1 − level)/2 and
        (1 + level)/2 posterior quantiles.
    level : float
        Probability of the interval.
    method : str
        ``"grid"`` or ``"conjugate"``.
    prior : str
        ``repr`` of the prior used.
    page_ids : ndarray or None
        The history's page labels, shape (n_pages,).

    A one-page (1-D) history gives arrays of shape (1,).
    """

    mean: np.ndarray
    sd: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float
    method: str
    prior: str
    page_ids: np.ndarray | None = None

    @property
    def n_pages(self) -> int:
        return int(self.mean.size)

    def to_frame(self):
        """A ``pandas.DataFrame``, one row per page: page, mean, sd, lower, upper.

        ``page`` holds the page labels, or 0..n_pages−1 when the history has none.
        """
        import pandas as pd  # pandas: only for this table; the posteriors do not need it

        page = self.page_ids if self.page_ids is not None else np.arange(self.n_pages)
        return pd.DataFrame({"page": page, "mean": self.mean, "sd": self.sd, "lower": self.lower, "upper": self.upper})


def _check_args(history, method, level, grid_size) -> tuple[str, float, int]:
    """The checked ``method``, ``level`` and ``grid_size`` of :func:`posterior_summary`."""
    if not isinstance(history, CrawlHistory):
        raise TypeError(f"`history` must be a CrawlHistory; got {type(history).__name__}")
    return (
        check_choice(method, name="method", choices=SUMMARY_METHODS),
        check_open_unit(level, name="level"),
        check_positive_int(grid_size, name="grid_size", minimum=8),
    )


def posterior_summary(
    history, *, prior=None, method: str = "grid", level: float = 0.9, grid_size: int = DEFAULT_GRID_SIZE
) -> PosteriorSummary:
    """Posterior mean, sd and equal-tailed credible interval of Δ for every page, exactly.

    No draws: ``"grid"`` integrates the exact posterior by adapted quadrature in log Δ
    (as :func:`posterior` with ``method="grid"``), ``"conjugate"`` uses the closed form.
    Works on rectangular and ragged histories (pages of any length, see
    :meth:`CrawlHistory.from_segments`) at the same cost per crawl.

    Parameters
    ----------
    history : CrawlHistory
        One page or many, rectangular or ragged. ``"grid"`` needs the intervals τ (the
        unit of τ is the unit of Δ); ``"conjugate"`` needs the crawl rate p and ignores τ.
    prior : GammaPrior, LogNormalPrior or BetaPrimePrior, optional
        Default ``BetaPrimePrior(1, 2)`` (needs the crawl rate). ``"conjugate"`` accepts
        only ``BetaPrimePrior``.
    method : {"grid", "conjugate"}, default "grid"
    level : float, default 0.9
        Probability of the credible interval, in (0, 1).
    grid_size : int, default 64
        Quadrature nodes per page (``"grid"`` only), at least 8.

    Returns
    -------
    PosteriorSummary
        Arrays of shape (n_pages,) (``(1,)`` for one page); ``to_frame()`` gives a
        ``pandas.DataFrame``.

    Raises
    ------
    TypeError
        If ``history`` is not a CrawlHistory, ``prior`` not a prior, ``level`` not a
        real number or ``grid_size`` not an int.
    ValueError
        For an unknown ``method``; ``level`` outside (0, 1); missing intervals (grid)
        or crawl rate (conjugate, beta-prime prior); a non-beta-prime prior with
        ``"conjugate"``; an improper posterior (BetaPrimePrior with a = 0 on a page
        that never saw a change); a page whose posterior spreads over more orders of
        magnitude than the quadrature grid resolves (its computed mean would fall below
        what its own credible interval allows, e.g. one change seen in an interval of
        1e-60 time units), or reaches rates beyond the float64 range (its summary would
        be NaN, e.g. intervals of 5e-324 under a heavy-tailed prior).

    Notes
    -----
    Grid: with f the log-posterior of u = log Δ and Z_j = ∫ e^{ju + f(u)} du, each on
    its own adapted grid (e^{ju} times the prior is the prior with A + j), the mean is
    Z_1/Z_0 and E[Δ²]/E[Δ]² = Z_2 Z_0/Z_1², so heavy right tails are integrated in
    full; where sd/mean < 1e-2 the relative variance is the grid's central moment
    E[(Δ/E[Δ] − 1)²] instead (no cancellation). The interval inverts the quadrature CDF of the density's grid.
    The log-likelihood needs per page only S0 = Σ(1 − I_j)τ_j and the intervals of the
    crawls that saw a change. Each page's grids are computed by compiled kernels, one page
    at a time on all cores (the algorithm of the NumPy grid, to 1e-12 relative; the
    numbers do not depend on the number of threads), and pages with bit-identical S0,
    sorted changed intervals and prior coefficients (e.g. the pages of a regular crawl
    that saw the same number of changes) share one computation: their summaries are the
    same bit for bit as if each were computed alone, so the cost grows with the distinct
    pages, not with all of them.

    Conjugate: Δ/p ~ BetaPrime(α, β), α = a + Î_k, β = b + k − Î_k; mean p α/(β − 1)
    (β > 1), variance p² α(α + β − 1)/((β − 1)²(β − 2)) (β > 2); the quantile q is
    p x/(1 − x) with x = I⁻¹_q(α, β), 1 − x taken as I⁻¹_{1−q}(β, α) for accuracy
    (``inf`` only where it exceeds the float64 range).

    References
    ----------
    Paper "Online estimators of change rates", Section 3.1 (E[I | τ] = 1 − e^{−Δτ}),
    eq. (4) (I ~ Bernoulli(Δ/(Δ + p)) under Poisson crawling).

    Examples
    --------
    >>> from changerate_bayes import BetaPrimePrior, CrawlHistory, posterior_summary
    >>> h = CrawlHistory.from_segments([1, 0, 1, 0, 0], [1.0, 2.0, 0.5, 1.0, 1.5], lengths=[2, 3], crawl_rate=1.0)
    >>> s = posterior_summary(h, method="conjugate", prior=BetaPrimePrior(1.0, 2.0))
    >>> s.mean.round(4).tolist()  # p (a + Î)/(b + k − Î − 1): 2/2 and 2/3
    [1.0, 0.6667]
    """
    method, level, grid_size = _check_args(history, method, level, grid_size)
    return _summary(history, prior=prior, method=method, level=level, grid_size=grid_size, with_sd=True)


def posterior_mean_interval(
    history, *, prior=None, method: str = "grid", level: float = 0.9, grid_size: int = DEFAULT_GRID_SIZE
) -> PosteriorSummary:
    """:func:`posterior_summary` without the standard deviation (``sd`` is None).

    The same mean and interval, bit for bit, without the grid of E[Δ²] that only the sd
    needs (a third of the grid method's work): what the per-page table shows. Pages with
    the same statistics share one computation (see :func:`posterior_summary`, Notes).
    """
    method, level, grid_size = _check_args(history, method, level, grid_size)
    return _summary(history, prior=prior, method=method, level=level, grid_size=grid_size, with_sd=False)


def _summary(history, *, prior, method, level, grid_size, with_sd) -> PosteriorSummary:
    prior = _check_prior(prior, history)
    probs = np.array([(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    if method == "conjugate":
        _check_conjugate(history, prior)
        n_changed, n_crawls = change_counts(history)
        refuse_improper((prior.a + n_changed) <= 0, prior, history)
        mean, sd, lower, upper = conjugate_summary(prior.a, prior.b, n_changed, n_crawls, crawl_rates(history), probs)
    else:
        if history.flat_intervals is None:
            raise ValueError("method 'grid' needs the crawl intervals τ: pass `intervals` to CrawlHistory")
        coef = prior.coefficients(crawl_rates(history)).as_arrays(history.lengths.size)
        tau, coef, shift = time_rescaling(history, coef)
        n_changed, _ = change_counts(history)
        t0 = np.bincount(
            history.page_index(), weights=np.where(history.flat_changed > 0, 0.0, tau), minlength=history.lengths.size
        )
        refuse_improper(improper_pages(_PageCounts(n_changed, t0), coef), prior, history)
        mean, sd, lower, upper = grid_summary(
            history.flat_changed, tau, history.offsets, coef, probs, size=grid_size, with_sd=with_sd
        )
        _check_mean_against_interval(mean, lower, probs[0])
        _check_defined(history, mean, sd, lower, upper)
        if shift is not None:  # back from the rescaled time of overflowing pages (exact: powers of 2)
            e = -np.rint(shift / np.log(2.0)).astype(np.int64)
            mean, lower, upper = (np.ldexp(v, e) for v in (mean, lower, upper))
            sd = None if sd is None else np.ldexp(sd, e)
    if not with_sd:
        sd = None
    return PosteriorSummary(
        mean=mean,
        sd=sd,
        lower=lower,
        upper=upper,
        level=level,
        method=method,
        prior=repr(prior),
        page_ids=history.page_ids,
    )


def _check_mean_against_interval(mean, lower, p_low) -> None:
    """ValueError where a grid mean contradicts its own interval.

    For Δ >= 0 with P(Δ >= q) = 1 − p_low, E[Δ] >= (1 − p_low)·q: a mean below that
    means the grid missed part of the posterior's mass (a tail spread over many orders
    of magnitude), and the number would be silently wrong.
    """
    bad = np.isfinite(mean) & (mean < (1.0 - p_low) * lower * (1.0 - 1e-9))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"page {i}: the posterior spreads over more orders of magnitude than the quadrature grid "
            f"resolves (computed mean {mean[i]:.3g} below the bound {(1.0 - p_low) * lower[i]:.3g} that its "
            f"credible interval implies); check the unit of the intervals"
        )


def _check_defined(history, mean, sd, lower, upper) -> None:
    """ValueError where the quadrature gave NaN (never a valid mean, sd or quantile).

    It happens when a page's posterior reaches rates beyond the float64 range, e.g.
    under a heavy-tailed prior with intervals of 1e-320 time units, whose posterior runs
    up to Δ ≈ 1/τ: the number would be silently undefined.
    """
    bad = np.isnan(mean) | np.isnan(lower) | np.isnan(upper)
    if sd is not None:  # None: the sd was not asked for
        bad |= np.isnan(sd)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        tau = history.flat_intervals[history.offsets[i] : history.offsets[i + 1]]
        raise ValueError(
            f"page {i}: the posterior reaches rates beyond the float64 range (its shortest interval is "
            f"{float(tau.min()):.3g} time units, so rates up to about its inverse fit the crawls), and its grid "
            "summary is undefined; express the intervals in a larger time unit"
        )


def conjugate_quantiles(post_a, post_b, crawl_rate, probs) -> np.ndarray:
    """Quantiles of p·BetaPrime(α, β): shape (n_pages, m) for ``probs`` of shape (m,).

    p x/(1 − x) with x = I⁻¹_q(α, β) and 1 − x = I⁻¹_{1−q}(β, α), evaluated in logs so
    that neither p x nor x/(1 − x) overflows unless the quantile itself does.
    """
    post_a, post_b = post_a[:, None], post_b[:, None]
    x = special.betaincinv(post_a, post_b, probs)
    y = special.betaincinv(post_b, post_a, 1.0 - probs)
    with np.errstate(divide="ignore", over="ignore"):
        return np.exp(np.log(crawl_rate)[:, None] + np.log(x) - np.log(y))


def conjugate_summary(a, b, n_changed, n_crawls, crawl_rate, probs):
    """Mean, sd, lower and upper quantile of Δ under the conjugate posterior (closed form)."""
    post_a, post_b = conjugate_parameters(a, b, n_changed, n_crawls)
    p = np.asarray(crawl_rate, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = post_a / np.where(post_b > 1.0, post_b - 1.0, 1.0)
        mean = np.where(post_b > 1.0, p * ratio, np.inf)
        rel_var = (post_a + post_b - 1.0) / (post_a * np.where(post_b > 2.0, post_b - 2.0, 1.0))
        sd = np.where(post_b > 2.0, mean * np.sqrt(rel_var), np.inf)
    q = conjugate_quantiles(post_a, post_b, p, probs)
    return mean, sd, q[:, 0], q[:, 1]


class _PageCounts:
    """What :func:`improper_pages` needs of a page's likelihood: its changes and S0."""

    def __init__(self, n_changed, t0):
        self.n_changed, self.t0 = n_changed, t0

    def right_tail_finite(self):
        return self.t0 > 0  # as ExactLikelihood: some crawl saw no change (in time > 0)


def distinct_pages(changed, tau, offsets, coefficients):
    """One representative of each group of pages whose grid summaries are equal bit for bit.

    A page's summary is a function of its prior coefficients, its sorted changed
    intervals and S0 (:mod:`._summary_kernels`), so pages equal in all of them (e.g. the
    pages of a regular crawl that saw the same changes) share one computation. Pages are
    grouped by a key of those numbers (a hash of the sorted changed intervals, the count
    of changes, the bits of S0 and of every coefficient), and each page's sorted changed
    intervals are then compared with its representative's bit for bit (a page whose hash
    collided is its own representative).

    Returns
    -------
    reps : ndarray of int64, shape (n_groups,)
        The representative pages, increasing.
    inverse : ndarray of int64, shape (n_pages,)
        The row of ``reps`` whose summary is each page's.
    n_changed, t0 : ndarray, shape (n_pages,)
        Changed crawls (int64) and S0 (float64) per page.
    """
    # numba kernels: loaded on first use, nothing compiled at import
    from ._summary_kernels import page_keys, same_changed

    n = offsets.size - 1
    n_changed = np.empty(n, dtype=np.int64)
    t0 = np.empty(n)
    key = np.empty(n, dtype=np.uint64)
    page_keys(changed, tau, offsets, n_changed, t0, key)
    cols = [key, n_changed.view(np.uint64), t0.view(np.uint64)]
    cols += [np.ascontiguousarray(c, dtype=np.float64).view(np.uint64) for c in coefficients]
    rows = np.ascontiguousarray(np.stack(cols, axis=1))
    _, first, inverse = np.unique(
        rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel(),
        return_index=True,
        return_inverse=True,
    )
    inverse = inverse.ravel().astype(np.int64)
    rep_of_page = first[inverse].astype(np.int64)
    shared = np.flatnonzero(rep_of_page != np.arange(n))
    if shared.size:
        ok = same_changed(changed, tau, offsets, shared, rep_of_page[shared])
        rep_of_page[shared[~ok]] = shared[~ok]  # a hash collision: computed on its own
    reps, inverse = np.unique(rep_of_page, return_inverse=True)
    return reps.astype(np.int64), inverse.ravel().astype(np.int64), n_changed, t0


def grid_summary(
    changed, tau, offsets, coef: dict, probs: np.ndarray, *, size: int = DEFAULT_GRID_SIZE, with_sd: bool = True
):
    """Mean, sd and quantiles of Δ per page by adapted quadrature (compiled, both cores).

    Exactly what :func:`._grid.fit_grid` gives (to a few ulps): the mean is Z_1/Z_0 and
    E[Δ²]/E[Δ]² = Z_2 Z_0/Z_1² with each Z_j = ∫ e^{ju + f(u)} du on its own adapted grid,
    the quantiles invert the density grid's CDF. Pages with equal prior coefficients,
    S0 and sorted changed intervals are computed once (:func:`distinct_pages`): the
    numbers are the same bit for bit as computing every page. ``with_sd=False`` skips
    the grid of E[Δ²] (sd returned as None; the rest unchanged).

    Returns
    -------
    mean, sd, lower, upper : ndarray, shape (n_pages,)

    Raises
    ------
    FloatingPointError, ValueError
        As :func:`._grid.fit_grid`, naming the page.
    """
    import numba  # numba: heavy; the package imports without it

    from ._summary_kernels import summary_pages  # numba kernels: loaded on first use, nothing compiled at import

    changed = np.ascontiguousarray(changed, dtype=np.int8)
    tau = np.ascontiguousarray(tau, dtype=np.float64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    a = {k: np.ascontiguousarray(coef[k], dtype=np.float64) for k in "ABCMEL"}
    reps, inverse, n_changed, t0 = distinct_pages(changed, tau, offsets, [a[k] for k in "ABCMEL"])
    counts = _PageCounts(n_changed.astype(np.float64), t0)
    shapes, finite = [a["A"]], [np.ones(t0.size, dtype=bool)]
    for j in (1, 2):
        shifted = dict(a)
        shifted["A"] = a["A"] + j
        inf = improper_pages(counts, shifted)  # the moment E[Δ^j] diverges: its grid is not used
        shapes.append(np.where(inf, a["A"], shifted["A"]))
        finite.append(~inf)
    k = reps.size
    log_z = [np.empty(k), np.empty(k), np.full(k, np.nan)]
    central, quant = np.full(k, np.nan), np.empty((k, probs.size))
    status, bad_mode = np.zeros(k, dtype=np.int32), np.zeros(k)
    with numba.parallel_chunksize(4):
        summary_pages(
            changed,
            tau,
            offsets,
            reps,
            *shapes,
            a["B"],
            a["C"],
            a["M"],
            a["E"],
            a["L"],
            np.linspace(0.0, 1.0, size),
            np.ascontiguousarray(probs, dtype=np.float64),
            with_sd,
            *log_z,
            central,
            quant,
            status,
            bad_mode,
        )
    if status.any():  # name the first page (in page order) whose grid failed
        bad = np.flatnonzero(status[inverse])
        page = int(bad[0])
        _raise_for_status(status[inverse][page : page + 1], bad_mode[inverse][page : page + 1], page)
    log_z0, log_z1, log_z2 = (z[inverse] for z in log_z)
    quant = quant[inverse]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        log_mean = log_z1 - log_z0
        mean = np.where(finite[1], np.exp(log_mean), np.inf)
        sd = None
        if with_sd:
            # E[Δ²]/E[Δ]² − 1 from the log normalising constants: free of the scale of Δ
            cv2 = np.expm1(log_z2 + log_z0 - 2.0 * log_z1)
            use_grid = finite[2] & finite[1] & ~(cv2 > _CANCEL_CV2)
            cv2 = np.where(use_grid, central[inverse], cv2)
            sd = np.where(finite[2] & finite[1], mean * np.sqrt(np.maximum(cv2, 0.0)), np.inf)
    return mean, sd, quant[:, 0], quant[:, 1]
