"""The posterior predictive of a page's next change, and the compact history that determines it.

:func:`change_probability` is P(the page has changed a time t after its last crawl | its
crawls), exact; :func:`posterior_history` is the smallest history with the same
posterior, which a distributed engine sends back instead of every visit.
"""

from __future__ import annotations

import numpy as np

from ..history import CrawlHistory
from ._grid import BLOCK_PAGES, fit_grid, improper_pages
from ._posterior import _check_prior, refuse_improper
from ._sufficient import crawl_rates, exact_likelihood, likelihood_from_parts

__all__ = ["change_probability", "posterior_history"]


def _check_history(history) -> CrawlHistory:
    if not isinstance(history, CrawlHistory):
        raise TypeError(f"`history` must be a CrawlHistory; got {type(history).__name__}")
    if history.flat_intervals is None:
        raise ValueError("`history` needs the crawl intervals τ: the predictive is exact given them")
    return history


def posterior_history(history: CrawlHistory) -> CrawlHistory:
    """The smallest history with the same exact posterior of Δ as ``history``, page by page.

    The interval-censored likelihood of a page depends only on S0 = Σ(1 − I_k)τ_k and on
    the intervals of the crawls that saw a change (:func:`~changerate_bayes.bayes.posterior_summary`),
    and the default prior on the page's crawl rate. So each page keeps its changed crawls
    (in order) followed by one unchanged crawl of length S0 (none when S0 = 0), and its
    crawl rate and label: about one entry per change instead of one per visit. This is
    what a Dask partition sends back for the schedule.

    Parameters
    ----------
    history : CrawlHistory
        Rectangular or ragged, with intervals.

    Returns
    -------
    CrawlHistory
        Ragged, the same pages in the same order.
    """
    history = _check_history(history)
    tau = history.flat_intervals
    assert tau is not None  # checked by _check_history
    changed = history.flat_changed > 0
    page = history.page_index()
    n = history.lengths.size
    s0 = np.bincount(page, weights=np.where(changed, 0.0, tau), minlength=n)
    n_changed = np.bincount(page, weights=changed, minlength=n).astype(np.int64)
    has_s0 = s0 > 0
    lengths = n_changed + has_s0
    ends = np.cumsum(lengths)
    flat_changed = np.zeros(int(ends[-1]) if n else 0, dtype=np.int8)
    flat_tau = np.empty(flat_changed.size)
    starts = ends - lengths
    # the changed crawls of page i fill starts[i] : starts[i] + n_changed[i], in order
    rank = np.arange(int(changed.sum())) - np.repeat(np.cumsum(n_changed) - n_changed, n_changed)
    at = np.repeat(starts, n_changed) + rank
    flat_changed[at] = 1
    flat_tau[at] = tau[changed]
    last = ends[has_s0] - 1
    flat_tau[last] = s0[has_s0]
    rate = history.crawl_rate
    if rate is not None:
        rate = np.broadcast_to(np.asarray(rate, dtype=np.float64), (n,)).copy()
    return CrawlHistory.from_segments(
        flat_changed, flat_tau, lengths=lengths, crawl_rate=rate, page_ids=history.page_ids
    )


def change_probability(history, interval, *, prior=None) -> np.ndarray:
    """P(a page changes within ``interval`` of its last crawl | its crawls), per page, exactly.

    The posterior predictive of the Poisson change model: with Δ's posterior given the
    page's crawls, P(changed by t) = 1 − E[e^{−Δt}].

    Parameters
    ----------
    history : CrawlHistory
        One page or many, rectangular or ragged, with intervals (their time unit is the
        unit of ``interval``; hours for a log read by :mod:`changerate_bayes.io`).
    interval : float or array_like of shape (n_pages,)
        Time after each page's last crawl, >= 0 and finite.
    prior : GammaPrior, LogNormalPrior or BetaPrimePrior, optional
        Default ``BetaPrimePrior(1, 2)`` on Δ/p (the page's crawl rate), as
        :func:`changerate_bayes.posterior_summary`.

    Returns
    -------
    ndarray of float64, shape (n_pages,)
        Probabilities in [0, 1] (0 where ``interval`` is 0).

    Raises
    ------
    TypeError
        If ``history`` is not a CrawlHistory or ``prior`` not a prior.
    ValueError
        If the history has no intervals, ``interval`` is negative, not finite or of the
        wrong shape, the interval totals overflow float64, or a posterior is improper.

    Notes
    -----
    Unchanged crawls enter the likelihood only through S0 = Σ(1 − I_k)τ_k, as e^{−ΔS0};
    so E[e^{−Δt}] = Z(S0 + t)/Z(S0), with Z the posterior's normalising constant, each
    integrated exactly on its own adapted quadrature grid in log Δ
    (geometric convergence), and
    P = −expm1(log Z(S0 + t) − log Z(S0)). With a Gamma(a, b) prior and no change seen
    this is 1 − ((b + S0)/(b + S0 + t))^a.

    References
    ----------
    Paper "Online estimators of change rates", Section 3.1 (P(I = 1 | τ) = 1 − e^{−Δτ}).

    Examples
    --------
    >>> from changerate_bayes import CrawlHistory, GammaPrior
    >>> from changerate_bayes.bayes import change_probability
    >>> h = CrawlHistory.from_segments([0, 0], [2.0, 3.0], lengths=[2])  # 5 h, no change
    >>> float(change_probability(h, 5.0, prior=GammaPrior(2.0, 5.0))[0].round(12))  # 1 − (10/15)^2
    0.555555555556
    """
    history = _check_history(history)
    n = history.lengths.size
    t = _check_interval(interval, n)
    prior = _check_prior(prior, history)
    with np.errstate(over="ignore"):
        if not np.isfinite(np.add.reduceat(history.flat_intervals, history.offsets[:-1])).all():
            raise ValueError("`history`: a page's crawl intervals sum beyond the float64 range")
    coef = prior.coefficients(crawl_rates(history)).as_arrays(n)
    lik = exact_likelihood(history)
    refuse_improper(improper_pages(lik, coef), prior, history)
    later = likelihood_from_parts(lik.t0 + t, lik._page, lik._tau)
    out = np.zeros(n)
    for start in range(0, n, BLOCK_PAGES):
        stop = min(start + BLOCK_PAGES, n)
        c = {k: v[start:stop] for k, v in coef.items()}
        z0 = fit_grid(lik.block(start, stop), c).log_norm
        z1 = fit_grid(later.block(start, stop), c).log_norm
        assert z0 is not None and z1 is not None  # fit_grid sets log_norm
        out[start:stop] = -np.expm1(np.minimum(z1 - z0, 0.0))
    return np.where(t > 0, np.clip(out, 0.0, 1.0), 0.0)


def _check_interval(interval, n: int) -> np.ndarray:
    try:
        t = np.asarray(interval, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"`interval` must be a number or an array of numbers; got {interval!r}") from None
    if t.ndim > 1 or (t.ndim == 1 and t.size != n):
        raise ValueError(f"`interval` must be a number or have shape ({n},); got shape {t.shape}")
    t = np.broadcast_to(t, (n,))
    bad = ~(np.isfinite(t) & (t >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"`interval` must be >= 0 and finite; got {t[i]} at index {i}")
    return t
