"""The posterior predictive: P(a page is unchanged | the signals since its last crawl)."""

from __future__ import annotations

import numpy as np
from scipy import special

from ._estimation import SignalPosterior

__all__ = ["unchanged_probability"]


def _page_vector(x, n_pages: int, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim > 1 or (arr.ndim == 1 and arr.size != n_pages):
        raise ValueError(f"`{name}` must be a number or have shape ({n_pages},); got shape {arr.shape}")
    return np.broadcast_to(arr, (n_pages,))


def unchanged_probability(t, n, posterior: SignalPosterior) -> np.ndarray:
    """P(no change in the time ``t`` since the last crawl | ``n`` signals in it, the data), per page.

    Parameters
    ----------
    t : float or array_like of shape (n_pages,)
        Days since each page's last crawl, >= 0 and finite.
    n : int or array_like of shape (n_pages,)
        Signals received since then, integers >= 0.
    posterior : SignalPosterior
        From :func:`signal_posterior`.

    Returns
    -------
    ndarray of float64, shape (n_pages,)
        The posterior mean of e^{−(1−q)Δt}(ν/(qΔ + ν))^n given the crawls and these
        signals, in [0, 1].

    Raises
    ------
    TypeError
        If ``posterior`` is not a SignalPosterior.
    ValueError
        If ``t`` or ``n`` is negative, not finite, not whole (``n``) or of the wrong shape;
        or if a page's ``n`` signals in ``t`` days are impossible under every posterior
        draw: ``n > 0`` at ``t = 0`` (a signal at a crawl's time belongs to the interval
        that crawl ends, so none is counted at t = 0), or ``n > 0`` where every draw has
        no signal rate (s + ν = 0).

    Notes
    -----
    The n signals in t are themselves evidence on the signal rate λ = qΔ + ν: the exact
    predictive weighs each posterior draw by Poisson(n; λt). The posterior already holds
    the signals after the last crawl of its data (m in τ_tail, Poisson(m; λτ_tail)), so
    the draws are reweighted by Poisson(n; λt)/Poisson(m; λτ_tail) (self-normalised
    importance weights; all 1 when (t, n) is the data's tail). The result is exact up
    to Monte Carlo error. With q = 0 and n = 0 it is the crawl-only predictive
    E[e^{−Δt}] (:func:`changerate_bayes.bayes.change_probability` is 1 minus it).

    Examples
    --------
    >>> from changerate_bayes.signals import SignalPrior, simulate_signal_pages, signal_posterior
    >>> from changerate_bayes.signals import unchanged_probability
    >>> d = simulate_signal_pages([0.5, 0.5], 0.9, 1.0, horizon=200.0, crawl_interval=1.0, rng=5)
    >>> post = signal_posterior(d, prior=SignalPrior(1.0, 1.0, 2.0, 1.0, 1.0), draws=200, tune=50, rng=6)
    >>> p = unchanged_probability(1.0, [0, 3], post)
    >>> bool(p[0] > p[1])  # more signals, more likely changed
    True
    """
    if not isinstance(posterior, SignalPosterior):
        raise TypeError(f"`posterior` must be a SignalPosterior; got {type(posterior).__name__}")
    n_pages = posterior.signalled.shape[-1]
    t = _page_vector(t, n_pages, "t")
    n = _page_vector(n, n_pages, "n")
    if (~(np.isfinite(t) & (t >= 0))).any():
        raise ValueError(f"`t` must be >= 0 and finite days; got {t[~(np.isfinite(t) & (t >= 0))][0]}")
    if (~(np.isfinite(n) & (n >= 0) & (n == np.round(n)))).any():
        raise ValueError("`n` must hold counts of signals: integers >= 0")
    s = posterior.signalled.reshape(-1, n_pages)
    u = posterior.unsignalled.reshape(-1, n_pages)
    nu = posterior.false_rate.reshape(-1, n_pages)
    lam = s + nu
    m, tail = posterior.tail_signals.astype(np.float64), posterior.tail_time
    with np.errstate(divide="ignore", invalid="ignore"):
        log_w = special.xlogy(n, lam * t) - lam * t - special.xlogy(m, lam * tail) + lam * tail
        log_false = np.where(n > 0, np.log(nu) - np.log(lam), 0.0)
    log_w = np.where(np.isnan(log_w), -np.inf, log_w)
    impossible = np.isneginf(log_w).all(axis=0)
    if impossible.any():
        i = int(np.flatnonzero(impossible)[0])
        raise ValueError(
            f"page {i}: `n` = {n[i]:.0f} signals in `t` = {t[i]:g} days have probability 0 under every "
            "posterior draw (n > 0 needs t > 0 and a signal rate > 0), so the predictive is not defined"
        )
    log_w = log_w - log_w.max(axis=0)
    w = np.exp(log_w)
    with np.errstate(invalid="ignore"):
        value = np.exp(-u * t + np.where(n > 0, n * log_false, 0.0))
    value = np.nan_to_num(value, nan=0.0)
    return np.clip((w * value).sum(axis=0) / w.sum(axis=0), 0.0, 1.0)
