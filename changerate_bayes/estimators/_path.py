"""``estimate_path``: the trajectory of any estimator over a crawl history, and
``final_estimates``: each page's estimate after its last crawl."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from .._validation import check_choice
from ..history import CrawlHistory
from ._crawlcheck import warn_if_not_poisson, warn_if_not_regular
from ._lln import lln_final, lln_params, lln_path
from ._naive import naive_final, naive_params, naive_path
from ._regular import regular_final, regular_params, regular_path
from ._rootest import no_params, root_final, root_path
from ._rootkinds import MLE_KIND, MM_KIND
from ._sa import sa_final, sa_params, sa_path
from ._sam import sam_final, sam_params, sam_path

__all__ = ["METHODS", "POISSON_CRAWL_METHODS", "estimate_path", "final_estimates", "check_method_params"]

METHODS = ("naive", "lln", "sa", "sam", "mle", "mm", "regular")
POISSON_CRAWL_METHODS = ("naive", "lln", "sa", "sam")  # built on E[I] = Δ/(Δ + p)

_PARAMS: dict[str, tuple[Callable[..., dict], tuple[str, ...]]] = {
    "naive": (naive_params, ()),
    "lln": (lln_params, ("alpha",)),
    "sa": (sa_params, ("eta", "initial")),
    "sam": (sam_params, ("eta", "beta", "omega", "initial")),
    "mle": (lambda **kw: no_params("mle", **kw), ()),
    "mm": (lambda **kw: no_params("mm", **kw), ()),
    "regular": (regular_params, ()),
}
#: method -> (its path over a history, its estimates after each page's last crawl)
_COMPUTE = {
    "naive": (naive_path, naive_final),
    "lln": (lln_path, lln_final),
    "sa": (sa_path, sa_final),
    "sam": (sam_path, sam_final),
    "mle": (partial(root_path, kind=MLE_KIND), partial(root_final, kind=MLE_KIND)),
    "mm": (partial(root_path, kind=MM_KIND), partial(root_final, kind=MM_KIND)),
    "regular": (regular_path, regular_final),
}


def check_method_params(method, params: dict) -> dict:
    """Check ``method`` and its parameters; return the parameters with defaults filled in.

    Raises
    ------
    ValueError
        For an unknown method or a bad parameter value.
    TypeError
        For a parameter the method does not take, or of the wrong type.
    """
    method = check_choice(method, name="method", choices=METHODS)
    check, names = _PARAMS[method]
    unknown = sorted(set(params) - set(names))
    if unknown:
        allowed = ", ".join(names) if names else "none"
        raise TypeError(f"method {method!r} does not take parameter(s) {unknown}; it takes: {allowed}")
    return check(**params)


def estimate_path(history, method, **params):
    """The estimate of the change rate Δ after each crawl.

    Parameters
    ----------
    history : CrawlHistory
        One page (shape (k,)), several (shape (n_pages, k)), or pages of any length (a
        ragged history from :meth:`CrawlHistory.from_segments`).
    method : {"naive", "lln", "sa", "sam", "mle", "mm", "regular"}
        The estimator (paper eq. 1-3, 15 and Section 3.4):

        - ``"naive"``: p Î_k / k (biased: tends to pΔ/(Δ+p)).
        - ``"lln"``: p Î_k / (k + α_k − Î_k); ``alpha`` = a float > 0 (default 1.0),
          ``"log"`` (α_k = log(k + 1), positive at k = 1 unlike log k), ``"sqrt"``
          (α_k = √k) or a callable taking the int array of k and returning α_k > 0.
        - ``"sa"``: y_{k+1} = y_k + η_k[I_{k+1}(y_k + p) − y_k], η_k = (k+1)^(−eta);
          ``eta`` in (0, 1] (default 0.75), ``initial`` = y_0 (default 0.0).
        - ``"sam"``: z_{k+1} = z_k + η_k[I_{k+1}(z_k + p) − z_k] + ζ_k(z_k − z_{k−1}),
          ζ_k = (β_k − ω η_k)/β_{k−1}, β_k = (k+1)^(−beta), ζ_0 = 0, z_{−1} = z_0 =
          ``initial``; ``eta`` (0.75), ``beta`` (0.6), ``omega`` (1.0), ``initial`` (0.0),
          all exponents > 0 (see :func:`check_sam_stepsizes` for the regimes).
        - ``"mle"``: root of Σ I_j τ_j/(e^{Δτ_j} − 1) = Σ (1 − I_j) τ_j.
        - ``"mm"``: root of Σ (1 − I_j) = Σ e^{−Δτ_j}.
        - ``"regular"``: −p log((k − Î_k + 0.5)/(k + 0.5)), Cho & Garcia-Molina's
          estimator for crawls on a fixed schedule, every τ = 1/p.

        The MLE and MM are exactly 0.0 while no crawl has seen a change and ``inf``
        while every crawl has (no clamp).

        Which crawls each assumes: ``"naive"``, ``"lln"``, ``"sa"`` and ``"sam"`` use
        only p and the I_k, through E[I] = Δ/(Δ + p) (paper eq. 4), which holds for
        **Poisson crawling**: intervals exponential with mean 1/p. On a fixed schedule
        (every τ = 1/p) they tend to p(e^{Δ/p} − 1) instead of Δ (12.9 for Δ = 5,
        p = 3). ``"regular"`` assumes that fixed schedule. ``"mle"`` and ``"mm"`` use
        the intervals themselves and assume no schedule.
    **params
        The method's parameters above.

    Returns
    -------
    ndarray of float64, shape ``history.shape``
        Element j (along the last axis) is the estimate after the first j + 1 crawls,
        in changes per the time unit of the crawl rate / intervals. For a ragged
        history the shape is (n_pages, n_crawls), n_crawls the longest page, and row i
        is NaN after page i's last crawl (from column ``history.lengths[i]`` on); each
        row equals the path of that page alone. :func:`final_estimates` gives each
        page's last value without the padded array.

    Raises
    ------
    TypeError
        If ``history`` is not a CrawlHistory, or a parameter is not one of the method's.
    ValueError
        For an unknown method, a bad parameter value (``alpha`` <= 0, ``eta`` outside
        its range, ...), a history without the crawl rate ("naive", "lln", "sa",
        "sam", "regular") or without the intervals ("mle", "mm").

    Warns
    -----
    StatisticalWarning
        When the history carries intervals that contradict the method's crawling
        model: for "naive", "lln", "sa" and "sam", intervals that are clearly not
        exponential with mean 1/p (a Kolmogorov-distance test that a Poisson crawl
        fails with probability at most 1e-6; see Notes); for "regular", intervals far
        enough from 1/p to bias the estimate by more than 1%. Also when SAM iterates
        overflow (η < β: "race to infinity"); they are reported as ±inf from then on.

    Notes
    -----
    Vectorised over pages (the counts of "naive", "lln" and "regular" by cumulative
    sums over each page's crawls; "sa" and "sam" in one compiled pass over the crawls
    of all pages). With a crawl rate near the float64 limit (e.g. 1.7e308) the
    estimates stay finite wherever they are representable: p·Î_k/k is formed as
    p·(Î_k/k) where p·Î_k would overflow, and an SA/SAM step that overflows is redone in
    units of p. The MLE and
    paths solve the first 128 prefixes exactly and then track the root with a
    certified Taylor expansion instead of re-solving from scratch at every k (see
    ``_rootpath``); time and memory grow linearly with the number of pages. Ragged
    histories are solved in groups of pages of similar length (within a factor 2).

    The Poisson-crawling check: under Poisson crawling p·τ ~ Exp(1). The largest gap
    between the empirical CDF of p·τ and 1 − e^{−z} at the 1/64-quantiles of Exp(1) is
    at most the Kolmogorov-Smirnov distance, which a sample of n exceeds with
    probability at most 2 exp(−2nε²) (Dvoretzky-Kiefer-Wolfowitz-Massart). The history
    is flagged when the distance pooled over pages, or that of one page, exceeds the ε
    of probability 1e-6/2 (split over the pages by the union bound), so a genuine
    Poisson crawl is flagged at most once in a million calls; a fixed schedule
    (distance 0.63) is flagged from about 18 crawls.

    References
    ----------
    Avrachenkov, Patil & Thoppe, "Online algorithms for estimating change rates of web
    pages", eq. (1), (2), (3), (4), (10), (15) and Section 3.4; J. Cho and
    H. Garcia-Molina, "Estimating frequency of change", ACM TOIT 3(3), 2003 (MLE and
    the regular-access estimator).

    Examples
    --------
    >>> from changerate_bayes import CrawlHistory, estimate_path
    >>> h = CrawlHistory([1, 0, 1, 1], intervals=[0.4, 0.2, 0.5, 0.3], crawl_rate=3.0)
    >>> estimate_path(h, "naive").tolist()
    [3.0, 1.5, 2.0, 2.25]
    >>> estimate_path(h, "lln", alpha=1.0).tolist()
    [3.0, 1.5, 3.0, 4.5]
    >>> estimate_path(h, "mle")[:2].tolist()  # inf while every crawl saw a change
    [inf, 2.746530721670...]
    """
    if not isinstance(history, CrawlHistory):
        raise TypeError(f"`history` must be a CrawlHistory; got {type(history).__name__}")
    params = check_method_params(method, params)
    path = _COMPUTE[method][0](history, **params)
    if method in POISSON_CRAWL_METHODS:
        warn_if_not_poisson(history, method, stacklevel=2)
    elif method == "regular":
        last = path[np.arange(path.shape[0]), history.lengths - 1] if history.is_ragged else path[..., -1]
        warn_if_not_regular(history, last, stacklevel=2)
    return path


def final_estimates(history, method, **params):
    """Each page's estimate of the change rate Δ after its last crawl.

    The same numbers as the last observed column of :func:`estimate_path` (row i at
    column ``history.lengths[i] - 1``), computed without the path where the maths
    allows: "naive", "lln" and "regular" from each page's counts (k, Î_k) by segment
    sums; "sa" and "sam" by one compiled pass over the crawls that keeps only the
    current iterate; "mle" and "mm" by one exact solve of each page's equation over all
    its crawls (no root tracking over the prefixes).

    Parameters
    ----------
    history : CrawlHistory
        One page, several pages, or pages of any length (ragged).
    method : {"naive", "lln", "sa", "sam", "mle", "mm", "regular"}
        The estimator, as in :func:`estimate_path`.
    **params
        The method's parameters, as in :func:`estimate_path` (for a callable ``alpha``,
        it receives each page's number of crawls).

    Returns
    -------
    float or ndarray of float64, shape (n_pages,)
        A float for a one-page (1-D) history, else one estimate per page, in changes per
        the time unit of the crawl rate / intervals. Equal to the path's last values to
        rounding for the counting and recursive methods; for "mle" and "mm" to the
        path's certified accuracy (relative error ~1e-13, see :func:`estimate_path`).

    Raises
    ------
    TypeError, ValueError
        As :func:`estimate_path`.

    Warns
    -----
    StatisticalWarning
        As :func:`estimate_path` (the crawling-model checks and SAM overflow).

    References
    ----------
    As :func:`estimate_path`.

    Examples
    --------
    >>> from changerate_bayes import CrawlHistory, final_estimates
    >>> h = CrawlHistory.from_segments([1, 0, 1, 1, 0, 0], lengths=[2, 4], crawl_rate=3.0)
    >>> final_estimates(h, "naive").tolist()  # 3 * 1/2, 3 * 2/4
    [1.5, 1.5]
    >>> final_estimates(h, "lln").tolist()  # 3 * 1/(2 + 1 - 1), 3 * 2/(4 + 1 - 2)
    [1.5, 2.0]
    """
    if not isinstance(history, CrawlHistory):
        raise TypeError(f"`history` must be a CrawlHistory; got {type(history).__name__}")
    params = check_method_params(method, params)
    out = np.asarray(_COMPUTE[method][1](history, **params), dtype=np.float64)
    if method in POISSON_CRAWL_METHODS:
        warn_if_not_poisson(history, method, stacklevel=2)
    elif method == "regular":
        warn_if_not_regular(history, out, stacklevel=2)
    return float(out[0]) if history.n_pages is None else out
