"""Are the gaps exponential? Lilliefors, Anderson-Darling and parametric-bootstrap
KS / AD / CvM tests with the rate estimated from the same data.

Under a homogeneous Poisson process the gaps between events are i.i.d. exponential.
The rate is unknown and estimated by 1 / mean gap, so the null distribution of an EDF
statistic is not the textbook one (plain KS with the plug-in rate is far too
conservative); it is, however, free of the rate (the statistic of ``gaps / mean`` does
not depend on the scale), so tables (Lilliefors; Stephens) or a parametric bootstrap
from any exponential give exact-size tests.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from ._result import DiagnosticResult, insufficient, verdict_words

__all__ = [
    "MIN_GAPS",
    "NULL_SIZE",
    "lilliefors_test",
    "anderson_test",
    "bootstrap_test",
    "edf_statistics",
    "subsize_pvalue",
]

MIN_GAPS = 5

#: above this many gaps, Monte Carlo nulls are simulated at this size, on the √n scale
NULL_SIZE = 10_000
_CHUNK = 50  # Monte Carlo samples simulated at once above NULL_SIZE (bounds the memory)


def subsize_pvalue(observed: float, simulate, *, n_resamples: int, alternative: str = "greater") -> float:
    """Monte Carlo p-value from a null simulated in chunks of samples.

    Parameters
    ----------
    observed : float
        The statistic of the data.
    simulate : callable
        ``simulate(b)`` returns ``b`` statistics drawn under H0, shape (b,).
    n_resamples : int
    alternative : {"greater", "two-sided"}
        "greater": (1 + #{T* >= T}) / (1 + B); "two-sided": twice the smaller tail,
        as ``scipy.stats.monte_carlo_test``.

    Returns
    -------
    float
        The p-value, in (0, 1].
    """
    null = np.concatenate([simulate(min(_CHUNK, n_resamples - i)) for i in range(0, n_resamples, _CHUNK)])
    greater = (1 + np.count_nonzero(null >= observed)) / (1 + n_resamples)
    if alternative == "greater":
        return float(greater)
    less = (1 + np.count_nonzero(null <= observed)) / (1 + n_resamples)
    return float(min(1.0, 2 * min(greater, less)))


_NAMES = {"ks": "ks_bootstrap", "ad": "ad_bootstrap", "cvm": "cvm_bootstrap"}
_LABELS = {"ks": "Kolmogorov-Smirnov", "ad": "Anderson-Darling", "cvm": "Cramér-von Mises"}

_REJECT = "the gaps are not exponential, so the events are not a homogeneous Poisson process"
_KEEP = "the gaps are consistent with an exponential distribution"


def _too_few(name, gaps):
    return insufficient(name, f"{gaps.size} gap(s); the test needs at least {MIN_GAPS}", n_gaps=int(gaps.size))


def lilliefors_test(gaps: np.ndarray, *, alpha: float = 0.05) -> DiagnosticResult:
    """Lilliefors KS test of exponential gaps (statsmodels, table p-value in [0.001, 0.99])."""
    from statsmodels.stats.diagnostic import lilliefors  # statsmodels: about 1 s to import, needed only here

    if gaps.size < MIN_GAPS:
        return _too_few("ks_lilliefors", gaps)
    d, p = lilliefors(gaps, dist="exp", pvalmethod="table")
    p = float(np.clip(p, 0.0, 1.0))
    bound = "upper" if p <= 0.001 + 1e-12 else ("lower" if p >= 0.99 - 1e-12 else None)
    return DiagnosticResult(
        "ks_lilliefors",
        float(d),
        p,
        f"KS distance {d:.3f} to the fitted exponential; "
        + verdict_words(p, alpha, reject=_REJECT, keep=_KEEP, bound=bound),
        details={"n_gaps": int(gaps.size), "pvalue_bound": bound, "null": "Lilliefors table (statsmodels)"},
    )


def anderson_test(gaps: np.ndarray, *, alpha: float = 0.05) -> DiagnosticResult:
    """Anderson-Darling test of exponential gaps, Stephens' table (scipy.stats.anderson).

    scipy interpolates the p-value in its table of 15%, 10%, 5%, 2.5% and 1% points,
    so p-values are clipped to [0.01, 0.15]: exact at the 5% point.
    """
    if gaps.size < MIN_GAPS:
        return _too_few("anderson_darling", gaps)
    res = stats.anderson(gaps, dist="expon", method="interpolate")
    a2, p = float(res.statistic), float(res.pvalue)
    bound = "upper" if p <= 0.01 else ("lower" if p >= 0.15 else None)
    return DiagnosticResult(
        "anderson_darling",
        a2,
        p,
        f"A² = {a2:.3g} against the fitted exponential; "
        + verdict_words(p, alpha, reject=_REJECT, keep=_KEEP, bound=bound),
        details={
            "n_gaps": int(gaps.size),
            "pvalue_bound": bound,
            "null": "Stephens (1974) table (scipy.stats.anderson)",
        },
    )


def bootstrap_test(gaps: np.ndarray, statistic: str, *, n_resamples: int, rng, alpha: float = 0.05) -> DiagnosticResult:
    """Parametric-bootstrap EDF test of exponential gaps (scipy.stats.goodness_of_fit).

    The scale is refitted on every bootstrap sample, so the p-value is a Monte Carlo
    p-value of the estimated-parameter test, (1 + #{T* >= T}) / (1 + n_resamples).
    Above :data:`NULL_SIZE` gaps the bootstrap samples have NULL_SIZE gaps and the
    statistics are compared on their asymptotic scale (√m·D for KS; A² and W² as they
    are), which bounds the cost at O(n_resamples · NULL_SIZE) whatever m.
    """
    name = _NAMES[statistic]
    if gaps.size < MIN_GAPS:
        return _too_few(name, gaps)
    if gaps.size > NULL_SIZE:
        return _large_bootstrap(gaps, statistic, n_resamples=n_resamples, rng=rng, alpha=alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(0) in AD of an extreme bootstrap draw
        res = stats.goodness_of_fit(
            stats.expon, gaps, known_params={"loc": 0.0}, statistic=statistic, n_mc_samples=n_resamples, rng=rng
        )
    t, p = float(res.statistic), float(res.pvalue)
    return DiagnosticResult(
        name,
        t,
        p,
        f"{_LABELS[statistic]} statistic {t:.3g}, rate refitted in {n_resamples} bootstrap samples; "
        + verdict_words(p, alpha, reject=_REJECT, keep=_KEEP),
        details={"n_gaps": int(gaps.size), "n_resamples": int(n_resamples), "null": "parametric bootstrap"},
    )


def _root_n(statistic: str, m: int) -> float:
    """Factor putting the statistic on its asymptotic scale: √m for KS (AD and CvM are already)."""
    return float(np.sqrt(m)) if statistic == "ks" else 1.0


def _large_bootstrap(gaps, statistic, *, n_resamples, rng, alpha):
    """The bootstrap test above NULL_SIZE gaps: the estimated-scale null of √m·KS, A² or
    W² converges as m grows, so it is simulated at NULL_SIZE gaps (cost independent of m)."""
    name = _NAMES[statistic]
    m = gaps.size
    t = float(edf_statistics(gaps)[statistic])
    with np.errstate(divide="ignore"):  # log(0) in AD of an extreme draw: +inf, counted as extreme
        p = subsize_pvalue(
            t * _root_n(statistic, m),
            lambda b: (
                edf_statistics(rng.standard_exponential((b, NULL_SIZE)))[statistic] * _root_n(statistic, NULL_SIZE)
            ),
            n_resamples=n_resamples,
        )
    return DiagnosticResult(
        name,
        t,
        p,
        f"{_LABELS[statistic]} statistic {t:.3g}, rate refitted in {n_resamples} bootstrap samples of "
        f"{NULL_SIZE} gaps (asymptotic scaling); " + verdict_words(p, alpha, reject=_REJECT, keep=_KEEP),
        details={
            "n_gaps": int(m),
            "n_resamples": int(n_resamples),
            "null": f"parametric bootstrap at {NULL_SIZE} gaps, statistic on its asymptotic scale",
        },
    )


def edf_statistics(gaps: np.ndarray) -> dict[str, np.ndarray]:
    """KS, AD and CvM statistics of ``gaps`` against the exponential fitted by its mean.

    Vectorised over leading axes (one dataset per row); the same definitions as
    ``scipy.stats.goodness_of_fit`` (and, for KS, ``statsmodels`` ``lilliefors``).

    Parameters
    ----------
    gaps : ndarray, shape (..., m)
        Positive gaps, one dataset per row.

    Returns
    -------
    dict
        ``{"ks", "ad", "cvm"}`` -> ndarray of shape (...).
    """
    g = np.sort(np.asarray(gaps, dtype=np.float64), axis=-1)
    m = g.shape[-1]
    z = g / g.mean(axis=-1, keepdims=True)
    cdf = -np.expm1(-z)
    i = np.arange(1, m + 1)
    d_plus = np.max(i / m - cdf, axis=-1)
    d_minus = np.max(cdf - (i - 1) / m, axis=-1)
    logcdf = np.log(cdf)
    logsf = -z
    ad = -m - np.sum((2 * i - 1) / m * (logcdf + logsf[..., ::-1]), axis=-1)
    cvm = 1 / (12 * m) + np.sum(((2 * i - 1) / (2 * m) - cdf) ** 2, axis=-1)
    return {"ks": np.maximum(d_plus, d_minus), "ad": ad, "cvm": cvm}


def lilliefors_pvalues(ks: np.ndarray, n_gaps: int) -> np.ndarray:
    """Lilliefors p-values of KS statistics ``ks`` for ``n_gaps`` exponential gaps,
    vectorised: the table behind ``statsmodels.stats.diagnostic.lilliefors(dist="exp")``
    (p-values clipped to [0.001, 0.99] as there)."""
    from statsmodels.stats._lilliefors import get_lilliefors_table  # statsmodels: about 1 s to import, needed only here

    ks = np.asarray(ks, dtype=np.float64)
    flat = ks.reshape(-1)
    if flat.size == 1:  # TableDist.prob returns a scalar for one value
        return np.full(ks.shape, float(get_lilliefors_table(dist="exp").prob(flat[0], n_gaps)))
    return np.asarray(get_lilliefors_table(dist="exp").prob(flat, n_gaps), dtype=np.float64).reshape(ks.shape)
