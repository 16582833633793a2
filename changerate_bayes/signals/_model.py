"""The model of noisy change-indicating signals: likelihood, predictive formula, simulation.

Changes of a page are a Poisson process of rate Δ (per day); each change is signalled
with probability q (the recall), independently; false signals are a Poisson process of
rate ν (per day), independent of the changes. By the thinning and superposition
theorems, the signalled changes, the unsignalled changes and the false signals are
independent Poisson processes of rates s = qΔ, u = (1 − q)Δ and ν, and the signals form
a Poisson process of rate λ = qΔ + ν. Given n signals in an interval, each one is,
independently, a true signal with probability π = qΔ/λ (the precision) and a false one
with probability 1 − π = ν/λ.

After a crawl at time 0, with n signals in (0, t], the page has not changed iff there was
no unsignalled change and all n signals were false:

    P(no change in (0, t] | n) = e^{−(1−q)Δt} (ν/(qΔ + ν))^n.

The likelihood of one crawl interval of length τ, with n signals and indicator I, is

    P(n, I = 0) = e^{−λτ}(λτ)^n/n! · e^{−uτ}(1 − π)^n = e^{−(Δ+ν)τ} (ντ)^n/n!
    P(n, I = 1) = e^{−λτ}(λτ)^n/n! · [1 − e^{−uτ}(1 − π)^n],

and signals after the last crawl contribute their Poisson term e^{−λτ}(λτ)^m/m! only.
The setting is the one of Busa-Fekete et al., "A Scalable Crawling Algorithm Utilizing
Noisy Change-Indicating Signals" (WWW 2025); the likelihood is derived here.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from .._rng import as_generator
from ._data import SignalData

__all__ = ["signal_log_likelihood", "unchanged_given_signals", "simulate_signal_pages"]


def _check_values(delta: np.ndarray, q: np.ndarray, nu: np.ndarray) -> None:
    for name, arr in (("change_rate", delta), ("false_rate", nu)):
        if np.isnan(arr).any() or (arr < 0).any():
            raise ValueError(f"`{name}` must be >= 0 (per day); got {arr[np.isnan(arr) | (arr < 0)].flat[0]}")
    if np.isnan(q).any() or (q < 0).any() or (q > 1).any():
        raise ValueError(f"`recall` must be in [0, 1]; got {q[np.isnan(q) | (q < 0) | (q > 1)].flat[0]}")


def _rates(change_rate, recall, false_rate, n_pages: int):
    delta = np.asarray(change_rate, dtype=np.float64)
    q = np.asarray(recall, dtype=np.float64)
    nu = np.asarray(false_rate, dtype=np.float64)
    _check_values(delta, q, nu)
    try:
        shape = np.broadcast_shapes(delta.shape, q.shape, nu.shape, (n_pages,))
    except ValueError:
        raise ValueError(
            f"`change_rate`, `recall` and `false_rate` of shapes {delta.shape}, {q.shape}, {nu.shape} "
            f"do not broadcast against the {n_pages} pages"
        ) from None
    if shape[-1] != n_pages:
        raise ValueError(
            f"`change_rate`, `recall` and `false_rate` of shapes {delta.shape}, {q.shape}, {nu.shape} "
            f"do not broadcast against the {n_pages} pages (last axis)"
        )
    return (np.broadcast_to(a, shape) for a in (delta, q, nu))


def _xlogy(x, y):
    """x log y with 0 log 0 = 0 (and x log 0 = −inf for x > 0)."""
    with np.errstate(divide="ignore"):
        return special.xlogy(x, y)


def signal_log_likelihood(change_rate, recall, false_rate, data: SignalData) -> np.ndarray:
    """Exact log-likelihood of a page's crawl indicators and signal counts.

    Parameters
    ----------
    change_rate : float or array_like
        Δ >= 0, changes per day; shape () or broadcastable to (..., n_pages).
    recall : float or array_like
        q in [0, 1], the probability that a change is signalled; same broadcasting.
    false_rate : float or array_like
        ν >= 0, false signals per day; same broadcasting.
    data : SignalData
        The pages' crawl intervals τ_k (days), indicators I_k, signal counts n_k and the
        signals after the last crawl.

    Returns
    -------
    ndarray of float64, shape (..., n_pages)
        log L(Δ, q, ν) per page, with the full Poisson probabilities (the constants
        n log τ − log n! included); −inf where the data are impossible (e.g. I = 0 with a
        signal when ν = 0).

    Raises
    ------
    TypeError
        If ``data`` is not a SignalData.
    ValueError
        If a rate is negative or NaN, ``recall`` is outside [0, 1], or the shapes do not
        broadcast against the pages.

    Notes
    -----
    With λ = qΔ + ν, u = (1 − q)Δ and π = qΔ/λ, summed over the intervals k and the
    signals after the last crawl (m in time τ_tail):

        log L = Σ_k [n_k log(λτ_k) − λτ_k − log n_k!]
                + Σ_{I_k = 0} [−uτ_k + n_k log(1 − π)]
                + Σ_{I_k = 1} log(1 − e^{−uτ_k}(1 − π)^{n_k})
                + m log(λτ_tail) − λτ_tail − log m!.

    With q = 0 this is the crawl-only likelihood of Δ
    (:func:`changerate_bayes.bayes.log_likelihood`) plus a Poisson log-likelihood of ν;
    with q = 1 and ν = 0 it is −inf unless I_k = 1 exactly when n_k >= 1.

    References
    ----------
    Busa-Fekete et al., "A Scalable Crawling Algorithm Utilizing Noisy Change-Indicating
    Signals", WWW 2025 (the setting). The likelihood is derived in the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes.signals import SignalData, signal_log_likelihood
    >>> d = SignalData.from_segments([1.0, 2.0], [0, 1], [0, 1], lengths=[2])
    >>> ll = signal_log_likelihood(0.5, 1.0, 0.0, d)  # complete observability: e^{-0.5}·(e^{-1}·1)
    >>> bool(np.isclose(ll[0], -0.5 + np.log(1.0 * np.exp(-1.0))))
    True
    """
    if not isinstance(data, SignalData):
        raise TypeError(f"`data` must be a SignalData; got {type(data).__name__}")
    delta, q, nu = _rates(change_rate, recall, false_rate, data.n_pages)
    page = data.page_index()
    tau, n, changed = data.intervals, data.signals.astype(np.float64), data.changed > 0
    # rates per interval: the page axis is last, the interval axis replaces it
    s = (q * delta)[..., page]
    u = ((1.0 - q) * delta)[..., page]
    f = nu[..., page]
    lam = s + f
    poisson = _xlogy(n, lam * tau) - lam * tau - special.gammaln(n + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_false = np.where(n > 0, np.log(f) - np.log(lam), 0.0)  # log(1 − π), 0 when n = 0
    log_p0 = -u * tau + np.where(n > 0, n * log_false, 0.0)  # log P(I = 0 | n)
    with np.errstate(divide="ignore"):
        log_p1 = np.log(-np.expm1(log_p0))
    per_interval = poisson + np.where(changed, log_p1, log_p0)
    out = _segment_sum(per_interval, data)
    lam_page = q * delta + nu
    m = data.tail_signals.astype(np.float64)
    out = out + _xlogy(m, lam_page * data.tail_time) - lam_page * data.tail_time - special.gammaln(m + 1.0)
    return out


def _segment_sum(values: np.ndarray, data: SignalData) -> np.ndarray:
    """Sum of the last axis of ``values`` (intervals) per page."""
    zero = np.zeros(values.shape[:-1] + (1,))
    impossible = np.isneginf(values)
    cum = np.concatenate([zero, np.cumsum(np.where(impossible, 0.0, values), axis=-1)], axis=-1)
    out = cum[..., data.offsets[1:]] - cum[..., data.offsets[:-1]]
    if impossible.any():
        hit = np.concatenate([zero, np.cumsum(impossible, axis=-1)], axis=-1)
        out = np.where(hit[..., data.offsets[1:]] > hit[..., data.offsets[:-1]], -np.inf, out)
    return out


def unchanged_given_signals(t, n, change_rate, recall, false_rate) -> np.ndarray:
    """P(no change in (0, t] | n signals in (0, t]) given the rates, elementwise.

    Parameters
    ----------
    t : float or array_like
        Time since the crawl, days, >= 0.
    n : int or array_like
        Signals since the crawl, >= 0.
    change_rate, recall, false_rate : float or array_like
        Δ (per day), q in [0, 1], ν (per day); broadcast with ``t`` and ``n``.

    Returns
    -------
    ndarray of float64
        e^{−(1−q)Δt} (ν/(qΔ + ν))^n, in [0, 1]. Where qΔ + ν = 0 a signal is
        impossible; there the signals count as false (the factor is 1).

    Raises
    ------
    ValueError
        If ``t`` or ``n`` is negative or NaN, or a rate is out of range.

    Examples
    --------
    >>> from changerate_bayes.signals import unchanged_given_signals
    >>> float(unchanged_given_signals(2.0, 1, 0.5, 0.5, 0.25).round(6))  # e^{-0.5}·(0.25/0.5)
    0.303265
    """
    t = np.asarray(t, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    if np.isnan(t).any() or (t < 0).any():
        raise ValueError("`t` must be >= 0 days")
    if np.isnan(n).any() or (n < 0).any() or (n != np.round(n)).any():
        raise ValueError("`n` must be a count of signals, an integer >= 0")
    delta, q, nu = np.asarray(change_rate, float), np.asarray(recall, float), np.asarray(false_rate, float)
    _check_values(delta, q, nu)
    lam = q * delta + nu
    with np.errstate(divide="ignore", invalid="ignore"):
        log_false = np.where((n > 0) & (lam > 0), np.log(nu) - np.log(lam), 0.0)
    return np.exp(-(1.0 - q) * delta * t + np.where(n > 0, n * log_false, 0.0))


def simulate_signal_pages(change_rate, recall, false_rate, *, horizon, crawl_interval, rng=None):
    """Simulate pages' changes, their noisy signals and regular crawls.

    Parameters
    ----------
    change_rate, recall, false_rate : float or array_like of shape (n_pages,)
        Δ (per day), q in [0, 1] and ν (per day) of each page.
    horizon : float
        Length of the simulated history, days (> 0); the pages are crawled at 0,
        ``crawl_interval``, 2·``crawl_interval``, ... up to ``horizon``.
    crawl_interval : float
        Days between crawls (> 0).
    rng : int or numpy.random.Generator, optional
        Seed or generator.

    Returns
    -------
    SignalData
        The crawl intervals, indicators and signal counts; the signals in the time after
        the last crawl up to ``horizon`` are the tail.

    Raises
    ------
    ValueError
        If a rate is out of range or ``horizon`` / ``crawl_interval`` are not positive.

    Notes
    -----
    Only counts per interval are drawn (no event times): per interval, the signalled
    changes, unsignalled changes and false signals are independent Poisson counts of
    means qΔτ, (1 − q)Δτ and ντ; n = signalled + false and I = 1 iff
    signalled + unsignalled >= 1.

    Examples
    --------
    >>> from changerate_bayes.signals import simulate_signal_pages
    >>> d = simulate_signal_pages([0.5, 2.0], 0.9, 1.0, horizon=10.5, crawl_interval=1.0, rng=0)
    >>> d.n_pages, d.lengths.tolist(), d.tail_time.tolist()
    (2, [10, 10], [0.5, 0.5])
    """
    gen = as_generator(rng)
    horizon = float(horizon)
    crawl_interval = float(crawl_interval)
    if not (np.isfinite(horizon) and horizon > 0):
        raise ValueError(f"`horizon` must be > 0 days; got {horizon}")
    if not (np.isfinite(crawl_interval) and 0 < crawl_interval <= horizon):
        raise ValueError(f"`crawl_interval` must be > 0 days and <= horizon; got {crawl_interval}")
    delta = np.atleast_1d(np.asarray(change_rate, dtype=np.float64))
    n_pages = int(np.broadcast_shapes(delta.shape, np.shape(recall), np.shape(false_rate))[0])
    delta, q, nu = (np.array(a, dtype=np.float64) for a in _rates(change_rate, recall, false_rate, n_pages))
    k = int(np.floor(horizon / crawl_interval + 1e-9))
    tail = horizon - k * crawl_interval
    shape = (n_pages, k)
    signalled = gen.poisson(np.broadcast_to((q * delta * crawl_interval)[:, None], shape))
    unsignalled = gen.poisson(np.broadcast_to(((1.0 - q) * delta * crawl_interval)[:, None], shape))
    false = gen.poisson(np.broadcast_to((nu * crawl_interval)[:, None], shape))
    tail_signals = gen.poisson((q * delta + nu) * tail)
    return SignalData.from_segments(
        np.full(n_pages * k, crawl_interval),
        ((signalled + unsignalled) > 0).astype(np.int8).ravel(),
        (signalled + false).ravel(),
        lengths=np.full(n_pages, k),
        tail_time=np.full(n_pages, tail),
        tail_signals=tail_signals,
    )
