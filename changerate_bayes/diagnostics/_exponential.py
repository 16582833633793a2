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

__all__ = ["MIN_GAPS", "lilliefors_test", "anderson_test", "bootstrap_test", "edf_statistics"]

MIN_GAPS = 5

_NAMES = {"ks": "ks_bootstrap", "ad": "ad_bootstrap", "cvm": "cvm_bootstrap"}
_LABELS = {"ks": "Kolmogorov-Smirnov", "ad": "Anderson-Darling", "cvm": "Cramér-von Mises"}

_REJECT = "the gaps are not exponential, so the events are not a homogeneous Poisson process"
_KEEP = "the gaps are consistent with an exponential distribution"


def _too_few(name, gaps):
    return insufficient(name, f"{gaps.size} gap(s); the test needs at least {MIN_GAPS}", n_gaps=int(gaps.size))


def lilliefors_test(gaps: np.ndarray, *, alpha: float = 0.05) -> DiagnosticResult:
    """Lilliefors KS test of exponential gaps (statsmodels, table p-value in [0.001, 0.99])."""
    from statsmodels.stats.diagnostic import lilliefors

    if gaps.size < MIN_GAPS:
        return _too_few("ks_lilliefors", gaps)
    d, p = lilliefors(gaps, dist="exp", pvalmethod="table")
    p = float(np.clip(p, 0.0, 1.0))
    bound = "upper" if p <= 0.001 + 1e-12 else ("lower" if p >= 0.99 - 1e-12 else None)
    return DiagnosticResult(
        "ks_lilliefors", float(d), p,
        f"KS distance {d:.3f} to the fitted exponential; " + verdict_words(p, alpha, reject=_REJECT, keep=_KEEP, bound=bound),
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
        "anderson_darling", a2, p,
        f"A² = {a2:.3g} against the fitted exponential; " + verdict_words(p, alpha, reject=_REJECT, keep=_KEEP, bound=bound),
        details={"n_gaps": int(gaps.size), "pvalue_bound": bound, "null": "Stephens (1974) table (scipy.stats.anderson)"},
    )


def bootstrap_test(gaps: np.ndarray, statistic: str, *, n_resamples: int, rng, alpha: float = 0.05) -> DiagnosticResult:
    """Parametric-bootstrap EDF test of exponential gaps (scipy.stats.goodness_of_fit).

    The scale is refitted on every bootstrap sample, so the p-value is a Monte Carlo
    p-value of the estimated-parameter test, (1 + #{T* >= T}) / (1 + n_resamples).
    """
    name = _NAMES[statistic]
    if gaps.size < MIN_GAPS:
        return _too_few(name, gaps)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # log(0) in AD of an extreme bootstrap draw
        res = stats.goodness_of_fit(
            stats.expon, gaps, known_params={"loc": 0.0}, statistic=statistic, n_mc_samples=n_resamples, rng=rng
        )
    t, p = float(res.statistic), float(res.pvalue)
    return DiagnosticResult(
        name, t, p,
        f"{_LABELS[statistic]} statistic {t:.3g}, rate refitted in {n_resamples} bootstrap samples; "
        + verdict_words(p, alpha, reject=_REJECT, keep=_KEEP),
        details={"n_gaps": int(gaps.size), "n_resamples": int(n_resamples), "null": "parametric bootstrap"},
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
    from statsmodels.stats._lilliefors import get_lilliefors_table

    ks = np.asarray(ks, dtype=np.float64)
    flat = ks.reshape(-1)
    if flat.size == 1:  # TableDist.prob returns a scalar for one value
        return np.full(ks.shape, float(get_lilliefors_table(dist="exp").prob(flat[0], n_gaps)))
    return np.asarray(get_lilliefors_table(dist="exp").prob(flat, n_gaps), dtype=np.float64).reshape(ks.shape)
