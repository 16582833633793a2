"""Calibration of crawl observations: does P(I = 1 | τ) = 1 - exp(-Δ τ) hold?

A crawl-detection trace records the crawls (on a grid of step c) that saw a change.
Group consecutive grid crawls into virtual crawls that are m·c apart (m drawn from
powers of two, so τ = m·c takes several values): the virtual crawl reports I = 1 if
any grid crawl in it detected a change, i.e. if the page changed at least once in
the m·c hours it covers. Window edges sit half-way between grid crawls, so timing
jitter of less than c/2 never moves a detection across an edge. Under a homogeneous
Poisson change process the windows are independent and I ~ Bernoulli(1 - e^{-Δτ}).

Δ is fitted by maximum likelihood: a binomial GLM with complementary log-log link
and offset log τ (cloglog P = log Δ + log τ), statsmodels. The calibration test is
the likelihood-ratio (G) test of that one-parameter curve against a free detection
probability in every τ-bin: chi-square with B - 1 df.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import xlogy

from .._event_times import as_event_times
from .._rng import as_generator
from .._validation import check_positive_scalar
from ._result import DiagnosticResult, insufficient, verdict_words

__all__ = ["crawl_calibration", "calibration_windows", "calibration_table", "fit_cloglog_rate", "calibration_result"]

MIN_EXPECTED = 5.0


def window_multiples(mean_gap: float, crawl_interval: float) -> np.ndarray:
    """τ/c values: powers of two from 1 up to about 1.5 mean gaps (at least {1, 2})."""
    top = max(2.0, 1.5 * mean_gap / crawl_interval)
    return 2 ** np.arange(int(np.ceil(np.log2(top))) + 1)


def calibration_windows(start: float, stop: float, crawl_interval: float, multiples: np.ndarray, rng):
    """Window edges tiling (start, stop) with lengths m·c, m drawn uniformly from ``multiples``.

    Returns
    -------
    edges : ndarray, shape (J + 1,)
    m : ndarray of int, shape (J,)
    """
    span = stop - start
    mean_len = float(np.mean(multiples)) * crawl_interval
    n_draw = int(span / mean_len * 1.5) + 20
    m = rng.choice(multiples, size=n_draw)
    ends = start + np.cumsum(m) * crawl_interval
    while ends[-1] < stop:  # pragma: no cover - 1.5x the expected need almost surely suffices
        more = rng.choice(multiples, size=n_draw)
        m = np.concatenate((m, more))
        ends = start + np.cumsum(m) * crawl_interval
    keep = ends <= stop
    return np.concatenate(([start], ends[keep])), m[keep]


def calibration_table(times: np.ndarray, edges: np.ndarray, m: np.ndarray, multiples: np.ndarray):
    """Per τ-bin: number of windows and number with at least one detection.

    Returns
    -------
    n_windows, n_detected : ndarray of int, shape (B,)
    """
    counts = np.diff(np.searchsorted(times, edges, side="right"))
    hit = counts > 0
    b = np.searchsorted(multiples, m)
    n_w = np.bincount(b, minlength=multiples.size)
    n_d = np.bincount(b, weights=hit, minlength=multiples.size).astype(np.int64)
    return n_w, n_d


def fit_cloglog_rate(n_windows: np.ndarray, n_detected: np.ndarray, tau: np.ndarray) -> tuple[float, float]:
    """MLE of Δ and its standard error from grouped crawl observations (statsmodels GLM,
    binomial family, cloglog link, offset log τ, intercept only)."""
    import statsmodels.api as sm  # statsmodels: about 1 s to import, needed only here

    endog = np.column_stack([n_detected, n_windows - n_detected]).astype(np.float64)
    model = sm.GLM(
        endog, np.ones((tau.size, 1)), family=sm.families.Binomial(link=sm.families.links.CLogLog()), offset=np.log(tau)
    )
    res = model.fit()
    log_delta, se = float(res.params[0]), float(res.bse[0])
    return float(np.exp(log_delta)), float(np.exp(log_delta) * se)


def g_statistic(n_windows, n_detected, q0):
    """Likelihood-ratio statistic of binomial counts against probabilities ``q0``
    (vectorised over leading axes; bins along the last axis)."""
    n = np.asarray(n_windows, dtype=np.float64)
    o = np.asarray(n_detected, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        qhat = np.where(n > 0, o / np.where(n > 0, n, 1), 0.0)
        ll1 = xlogy(o, qhat) + xlogy(n - o, 1 - qhat)
        ll0 = xlogy(o, q0) + xlogy(n - o, 1 - q0)
    return 2.0 * np.sum(ll1 - ll0, axis=-1)


def calibration_result(
    times: np.ndarray, crawl_interval: float | None, *, rng, alpha: float = 0.05, time_scale: float = 1.0
) -> DiagnosticResult:
    """The ``crawl_calibration`` test on sorted detection times (see module docstring);
    ``times`` and ``crawl_interval`` in units of ``time_scale`` input units (Δ̂ and τ
    are reported in the input unit)."""
    name = "crawl_calibration"
    if crawl_interval is None:
        return DiagnosticResult(
            name,
            None,
            None,
            "not applicable: exact change times, not crawl detections (no crawl interval given)",
            "not applicable",
        )
    n = times.size
    if n < 10 or times[-1] <= times[0]:
        return insufficient(name, f"{n} detection(s); the test needs 10")
    c = crawl_interval
    mean_gap = (times[-1] - times[0]) / (n - 1)
    mult = window_multiples(mean_gap, c)
    # start half a crawl after the first detection and stop half a crawl before the last:
    # both are conditioned on, as in the other tests
    edges, m = calibration_windows(times[0] + c / 2, times[-1] - c / 2, c, mult, rng)
    return calibration_from_windows(times, edges, m, mult, c, alpha=alpha, time_scale=time_scale)


def calibration_from_windows(
    times, edges, m, multiples, crawl_interval, *, alpha: float = 0.05, time_scale: float = 1.0
) -> DiagnosticResult:
    """The calibration test for given virtual-crawl windows (see :func:`calibration_windows`)."""
    name = "crawl_calibration"
    if m.size < 2:
        return insufficient(name, "the trace is too short for two crawl windows")
    n_w, n_d = calibration_table(times, edges, m, multiples)
    tau = multiples * crawl_interval
    use = n_w > 0
    if n_d[use].sum() == 0 or n_d[use].sum() == n_w[use].sum():
        return insufficient(name, "every crawl window saw a change, or none did")
    delta, _ = fit_cloglog_rate(n_w[use], n_d[use], tau[use])
    q = -np.expm1(-delta * tau)
    use &= (n_w * q >= MIN_EXPECTED) & (n_w * (1 - q) >= MIN_EXPECTED)
    if use.sum() < 2:
        return insufficient(name, "fewer than two τ-bins with 5 expected detections and 5 expected misses")
    delta, se = fit_cloglog_rate(n_w[use], n_d[use], tau[use])
    q = -np.expm1(-delta * tau[use])
    delta, se, tau = delta / time_scale, se / time_scale, tau * time_scale  # input units
    g = float(g_statistic(n_w[use], n_d[use], q))
    df = int(use.sum()) - 1
    p = float(stats.chi2.sf(g, df))
    obs = n_d[use] / n_w[use]
    worst = int(np.argmax(np.abs(obs - q)))
    return DiagnosticResult(
        name,
        g,
        p,
        f"G = {g:.4g} on {df} df over {int(use.sum())} crawl-interval bins (Δ̂ = {delta:.3g} per time unit); "
        + verdict_words(
            p,
            alpha,
            reject=f"detections do not follow 1 - exp(-Δτ): at τ = {tau[use][worst]:.3g} a change is seen "
            f"{obs[worst]:.2f} of the time, the Poisson model says {q[worst]:.2f}",
            keep="the detection probability follows 1 - exp(-Δτ) at every crawl interval",
        ),
        details={
            "df": df,
            "delta": delta,
            "delta_se": se,
            "tau": tau[use].tolist(),
            "n_windows": n_w[use].tolist(),
            "n_detected": n_d[use].tolist(),
            "expected": q.tolist(),
        },
    )


def crawl_calibration(detection_times, crawl_interval: float, *, alpha: float = 0.05, rng=None) -> DiagnosticResult:
    """Calibration test of crawl detections: P(I = 1 | τ) = 1 - exp(-Δτ) by τ-bins.

    Parameters
    ----------
    detection_times : array_like, shape (n,)
        Times at which a crawl detected a change (floats or datetimes; datetimes
        become hours), sorted. Crawls run every ``crawl_interval``; crawls that saw
        no change are not recorded.
    crawl_interval : float
        The crawl grid step c, same unit (hours for datetimes).
    alpha : float, default 0.05
        Level used in the reading.
    rng : int, numpy.random.Generator or None
        Seed for the window lengths.

    Returns
    -------
    DiagnosticResult
        ``statistic`` is the likelihood-ratio G of the fitted curve 1 - exp(-Δ̂τ)
        against a free detection probability per τ-bin, ``pvalue`` from chi-square
        with B - 1 df; ``details`` has Δ̂ (``delta``, per time unit), its standard
        error and the per-bin table (``tau``, ``n_windows``, ``n_detected``,
        ``expected`` probability).

    Raises
    ------
    ValueError
        For unsorted/unparsable times (naming the row) or ``crawl_interval`` <= 0.

    Notes
    -----
    Consecutive grid crawls are grouped into virtual crawls τ = m c apart, m drawn
    from 1, 2, 4, ... up to about three mean gaps; a virtual crawl reports I = 1 if a
    detection falls in it. Under a homogeneous Poisson change process the I are
    independent Bernoulli(1 - e^{-Δτ}) (the paper's observation model, Section 2).
    Δ is fitted by a binomial GLM with cloglog link and offset log τ (statsmodels).
    τ-bins with fewer than 5 expected detections or misses are left out.

    References
    ----------
    Paper (online_change_rate_estimators), Section 2 (P(I = 1) = 1 - e^{-Δτ}) and
    eq. (15) (the MLE that the GLM solves).

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes.diagnostics import crawl_calibration
    >>> g = np.random.default_rng(0)
    >>> changes = np.sort(g.uniform(0, 2000, 1000))            # Poisson, 0.5 per hour
    >>> detected = np.unique(np.ceil(changes / 0.25) * 0.25)    # crawled every 15 min
    >>> res = crawl_calibration(detected, 0.25, rng=1)
    >>> res.pvalue > 0.05, round(res.details["delta"], 1)
    (True, 0.5)
    """
    c = check_positive_scalar(crawl_interval, name="crawl_interval")
    t = as_event_times(detection_times, name="detection_times").values
    return calibration_result(t, c, rng=as_generator(rng), alpha=alpha)


def fit_rate_grouped(n_windows: np.ndarray, n_detected: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """MLE of Δ from grouped crawl observations, vectorised over leading axes.

    Solves Σ_b O_b τ_b / (e^{Δ τ_b} - 1) = Σ_b (n_b - O_b) τ_b (the score of the
    cloglog GLM of :func:`fit_cloglog_rate`; paper eq. 15 grouped by τ) with
    ``scipy.optimize.elementwise.find_root``. Rows with no detection or no miss have
    no finite positive root and give NaN.

    Parameters
    ----------
    n_windows, n_detected : ndarray, shape (..., B)
    tau : ndarray, shape (B,) or broadcastable

    Returns
    -------
    ndarray, shape (...)
    """
    from scipy.optimize import elementwise  # scipy >= 1.15 only; the rest of the module works with older scipy

    n = np.asarray(n_windows, dtype=np.float64)
    o = np.asarray(n_detected, dtype=np.float64)
    tau = np.broadcast_to(np.asarray(tau, dtype=np.float64), n.shape)
    miss = np.sum((n - o) * tau, axis=-1)
    ok = (o.sum(axis=-1) > 0) & (miss > 0)

    n_bins = n.shape[-1]

    def score(log_delta, *cols):  # elementwise: one argument per τ-bin (find_root needs that)
        d = np.exp(log_delta)
        total = -cols[-1]
        for b in range(n_bins):
            ob, tb = cols[b], cols[n_bins + b]
            with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
                total = total + np.where(ob > 0, ob * tb / np.expm1(d * tb), 0.0)
        return total

    lo = np.log(1e-12 / tau.max(axis=-1))
    hi = np.log(50.0 / tau.min(axis=-1))
    o_ok = np.where(ok[..., None], o, 1.0)
    miss_ok = np.where(ok, miss, 1.0)
    cols = tuple(o_ok[..., b] for b in range(n_bins)) + tuple(tau[..., b] for b in range(n_bins)) + (miss_ok,)
    res = elementwise.find_root(score, (lo, hi), args=cols)
    return np.where(ok & res.success, np.exp(res.x), np.nan)
