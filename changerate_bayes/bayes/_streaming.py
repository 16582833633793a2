"""Streaming Bayes: the posterior of Δ updated crawl by crawl."""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from .._validation import as_float_array, check_choice, check_positive_int, first_bad_index
from ..history import CrawlHistory
from ._conjugate import conjugate_mean, conjugate_quantile
from ._grid import inverse_cdf
from ._likelihood import _log1mexp_neg
from ._priors import BetaPrimePrior, Prior, log_prior_u

__all__ = ["BayesianEstimator", "posterior_mean_path", "LIKELIHOODS", "DEFAULT_RATE_GRID_SIZE"]

LIKELIHOODS = ("conjugate", "exact")
#: nodes of the fixed log-rate grid of the exact-likelihood streaming posterior
DEFAULT_RATE_GRID_SIZE = 1024
_DEFAULT_PRIOR = BetaPrimePrior(1.0, 2.0)


def _check_level(level) -> float:
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < level < 1:
        raise ValueError(f"`level` must be in (0, 1); got {level!r}")
    return float(level)


class _Config:
    """Validated settings shared by the streaming class and the batch path."""

    def __init__(self, prior, crawl_rate, likelihood, rate_grid):
        self.likelihood = check_choice(likelihood, name="likelihood", choices=LIKELIHOODS)
        if prior is None:
            prior = _DEFAULT_PRIOR
        if not isinstance(prior, Prior):
            raise TypeError(
                f"`prior` must be a GammaPrior, LogNormalPrior or BetaPrimePrior; got {type(prior).__name__}"
            )
        self.prior = prior
        self.p = None
        if crawl_rate is not None:
            self.p = as_float_array(crawl_rate, name="crawl_rate", positive=True, ndim=(0, 1))
        if self.likelihood == "conjugate":
            if not isinstance(prior, BetaPrimePrior):
                raise ValueError(
                    f"`prior` must be a BetaPrimePrior for likelihood 'conjugate'; got {prior!r}"
                )
            if self.p is None:
                raise ValueError("likelihood 'conjugate' needs `crawl_rate` (p > 0)")
            return
        if not prior.proper:
            raise ValueError(f"likelihood 'exact' needs a proper prior; got the improper {prior!r}")
        if prior.needs_crawl_rate and self.p is None:
            raise ValueError(f"`prior` {prior!r} is a prior on Δ/p: pass `crawl_rate`")
        self.log_rates = self._grid(rate_grid)
        self.coef = {c: np.asarray(v, dtype=np.float64) for c, v in dataclasses.asdict(prior.coefficients(self.p)).items()}

    def _grid(self, rate_grid) -> np.ndarray:
        if rate_grid is None:
            dist = self.prior.distribution(None if self.p is None else self.p)
            low = float(np.min(dist.ppf(1e-8))) * 1e-4
            high = float(np.max(dist.ppf(1.0 - 1e-8))) * 1e4
            size = DEFAULT_RATE_GRID_SIZE
        else:
            if not (isinstance(rate_grid, tuple) and len(rate_grid) == 3):
                raise TypeError(f"`rate_grid` must be a tuple (low, high, size); got {rate_grid!r}")
            low, high, size = rate_grid
            bounds = as_float_array([low, high], name="rate_grid", positive=True)
            low, high = float(bounds[0]), float(bounds[1])
            size = check_positive_int(size, name="rate_grid size", minimum=16)
            if not high > low:
                raise ValueError(f"`rate_grid` needs low < high; got {rate_grid!r}")
        return np.linspace(np.log(low), np.log(high), size)

    def log_prior(self, n_pages):
        u = self.log_rates
        coef = {c: np.broadcast_to(v, (n_pages,)).copy() if np.ndim(v) else np.full(n_pages, float(v))
                for c, v in self.coef.items()}
        return log_prior_u(np.broadcast_to(u, (n_pages, u.size)), coef)

    def increment(self, changed, interval):
        """Exact log-likelihood of one crawl at every grid node, shape (n_pages, G)."""
        x = np.exp(self.log_rates)[None, :] * interval[:, None]
        return np.where(changed[:, None] > 0, _log1mexp_neg(x), -x)

    def exact_mean(self, log_post):
        rates = np.exp(self.log_rates)
        w = np.exp(log_post - log_post.max(axis=1, keepdims=True))
        w[:, [0, -1]] *= 0.5
        return (w * rates).sum(axis=1) / w.sum(axis=1)

    def exact_quantile(self, log_post, probs):
        u = self.log_rates
        n = log_post.shape[0]
        out = inverse_cdf(np.full(n, u[0]), np.full(n, u[1] - u[0]), log_post, np.broadcast_to(probs, (n, len(probs))))
        return np.exp(out)


class BayesianEstimator:
    """Posterior mean and credible interval of Δ, updated crawl by crawl.

    Parameters
    ----------
    prior : Prior, optional
        Default ``BetaPrimePrior(1, 2)``. ``likelihood="conjugate"`` needs a
        BetaPrimePrior (the improper a = 0 is allowed: see Notes); ``"exact"`` needs
        a proper prior.
    crawl_rate : float or array_like of shape (n_pages,), optional
        p > 0 per unit time; needed by ``"conjugate"`` and by a BetaPrimePrior.
    likelihood : {"conjugate", "exact"}, default "conjugate"
        ``"conjugate"``: Poisson crawling with τ marginalised; the state is two
        counts per page (O(1)), intervals are ignored. ``"exact"``: the
        interval-censored likelihood on a fixed grid of log Δ; the state is the
        log-posterior at the grid nodes (O(G) per page) and ``update`` needs the
        interval.
    rate_grid : tuple (low, high, size), optional
        Fixed grid for ``"exact"``: ``size`` nodes uniform in log Δ from ``low`` to
        ``high`` (rates per unit time). Default: 1024 nodes from 10^-4 × the prior's
        1e-8 quantile to 10^4 × its 1 − 1e-8 quantile. The mean stays accurate while the
        posterior of log Δ lies inside the grid and its sd exceeds ~2 node spacings.
    n_pages : int, optional
        None (default) for one page with scalar updates; else ``update`` takes
        arrays of shape (n_pages,).

    Attributes
    ----------
    n_crawls_ : int
        Crawls seen.
    n_changed_ : float or ndarray
        Changes seen Î_k (``"conjugate"``).
    log_posterior_ : ndarray, shape (n_pages, G)
        Unnormalised log-posterior at the grid nodes (``"exact"``).

    Notes
    -----
    Conjugate: after k crawls with Î_k changes, Δ/p ~ BetaPrime(a + Î_k, b + k − Î_k),
    mean p(a + Î_k)/(b + k − Î_k − 1) (∞ if b + k − Î_k <= 1). With a = 0 and
    b = 1 + α this is the LLN estimator p Î_k/(k + α − Î_k) (paper eq. 1); while no
    change has been seen the posterior is improper and ``rate`` is 0, the limit
    a → 0+, and ``credible_interval`` raises.

    The streaming state after each update equals :func:`posterior_mean_path` on the
    same crawls (same arithmetic, same order).

    Examples
    --------
    >>> from changerate_bayes import BayesianEstimator
    >>> est = BayesianEstimator(crawl_rate=2.0)  # BetaPrimePrior(1, 2), conjugate
    >>> for changed in [1, 0, 1, 1]:
    ...     est.update(changed)
    >>> est.rate  # 2 * (1 + 3) / (2 + 4 - 3 - 1)
    4.0
    >>> lo, hi = est.credible_interval(0.9)
    >>> bool(lo < est.rate < hi)
    True
    """

    def __init__(self, *, prior=None, crawl_rate=None, likelihood="conjugate", rate_grid=None, n_pages=None):
        self.prior = prior
        self.crawl_rate = crawl_rate
        self.likelihood = likelihood
        self.rate_grid = rate_grid
        self.n_pages = None if n_pages is None else check_positive_int(n_pages, name="n_pages")
        self._cfg = _Config(prior, crawl_rate, likelihood, rate_grid)
        n = self.n_pages or 1
        p = self._cfg.p
        if p is not None and p.ndim == 1 and p.shape != (n,):
            raise ValueError(f"`crawl_rate` must be a scalar or have shape (n_pages,) = ({n},); got {p.shape}")
        self.n_crawls_ = 0
        if self._cfg.likelihood == "conjugate":
            self._changed = np.zeros(n)
        else:
            self.log_posterior_ = self._cfg.log_prior(n)

    # ------------------------------------------------------------------ updates
    def _as_pages(self, x, *, name, positive=False):
        n = self.n_pages or 1
        shape = () if self.n_pages is None else (n,)
        arr = np.asarray(x)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"`{name}` must be numeric; got dtype {arr.dtype}")
        if arr.shape != shape:
            raise ValueError(f"`{name}` must have shape {shape} (n_pages={self.n_pages}); got {arr.shape}")
        arr = arr.astype(np.float64).reshape(n)
        if positive:
            bad = ~(np.isfinite(arr) & (arr > 0))
            if bad.any():
                raise ValueError(f"`{name}` must be finite and > 0; got {arr[bad][0]} at index {first_bad_index(bad)}")
        return arr

    def update(self, changed, interval=None) -> None:
        """Add one crawl of every page.

        Parameters
        ----------
        changed : {0, 1} or array_like of shape (n_pages,)
            I_k.
        interval : float or array_like of shape (n_pages,), optional
            τ_k > 0; required by ``likelihood="exact"``, ignored by ``"conjugate"``.

        Raises
        ------
        ValueError
            For values other than 0/1, a wrong shape, or a missing/non-positive
            interval under the exact likelihood.
        TypeError
            For non-numeric input.
        """
        c = self._as_pages(changed, name="changed")
        bad = (c != 0) & (c != 1)
        if bad.any():
            raise ValueError(f"`changed` must be 0 or 1; got {c[bad][0]} at index {first_bad_index(bad)}")
        if self._cfg.likelihood == "conjugate":
            self._changed = self._changed + c
        else:
            if interval is None:
                raise ValueError("likelihood 'exact' needs the crawl `interval` τ_k")
            tau = self._as_pages(interval, name="interval", positive=True)
            self.log_posterior_ = self.log_posterior_ + self._cfg.increment(c, tau)
        self.n_crawls_ += 1

    def merge(self, other: "BayesianEstimator") -> "BayesianEstimator":
        """A new estimator holding the crawls of both (same settings, disjoint crawls).

        Conjugate: the counts add. Exact: the log-likelihoods add (the prior is
        counted once).
        """
        if not isinstance(other, BayesianEstimator):
            raise TypeError(f"`other` must be a BayesianEstimator; got {type(other).__name__}")
        same = (self._cfg.likelihood, repr(self._cfg.prior), self.n_pages) == (
            other._cfg.likelihood, repr(other._cfg.prior), other.n_pages)
        if not same or (self._cfg.likelihood == "exact" and not np.array_equal(self._cfg.log_rates, other._cfg.log_rates)):
            raise ValueError("`other` must have the same likelihood, prior, grid and n_pages")
        merged = BayesianEstimator(prior=self.prior, crawl_rate=self.crawl_rate, likelihood=self.likelihood,
                                   rate_grid=self.rate_grid, n_pages=self.n_pages)
        if self._cfg.likelihood == "conjugate":
            merged._changed = self._changed + other._changed
        else:
            merged.log_posterior_ = self.log_posterior_ + other.log_posterior_ - self._cfg.log_prior(self.n_pages or 1)
        merged.n_crawls_ = self.n_crawls_ + other.n_crawls_
        return merged

    # ------------------------------------------------------------------ reading
    @property
    def n_changed_(self):
        if self._cfg.likelihood != "conjugate":
            raise AttributeError("n_changed_ is kept by the conjugate likelihood only")
        return float(self._changed[0]) if self.n_pages is None else self._changed.copy()

    def _out(self, x):
        return float(x[0]) if self.n_pages is None else x

    @property
    def rate(self):
        """Posterior mean of Δ (per unit time): float, or ndarray of shape (n_pages,).

        Before the first crawl this is the prior mean (∞ for a BetaPrimePrior with
        b <= 1), not NaN as for the non-Bayesian estimators.
        """
        cfg = self._cfg
        if cfg.likelihood == "conjugate":
            return self._out(conjugate_mean(cfg.prior.a, cfg.prior.b, self._changed, self.n_crawls_, cfg.p))
        return self._out(cfg.exact_mean(self.log_posterior_))

    def credible_interval(self, level: float = 0.9):
        """Equal-tailed credible interval of Δ.

        Parameters
        ----------
        level : float, default 0.9
            Posterior probability inside the interval.

        Returns
        -------
        (low, high) : floats or ndarrays of shape (n_pages,)

        Raises
        ------
        ValueError
            If ``level`` is not in (0, 1), or a page's posterior is improper (a = 0,
            no change seen).
        """
        level = _check_level(level)
        probs = np.array([(1 - level) / 2, (1 + level) / 2])
        cfg = self._cfg
        if cfg.likelihood == "conjugate":
            if cfg.prior.a == 0 and (self._changed == 0).any():
                page = int(np.flatnonzero(self._changed == 0)[0])
                raise ValueError(
                    f"the posterior of page {page} is improper (prior a = 0, no change seen): "
                    "no credible interval"
                )
            q = conjugate_quantile(cfg.prior.a, cfg.prior.b, self._changed[:, None], self.n_crawls_,
                                   np.reshape(cfg.p, (-1, 1)), probs[None, :])
        else:
            q = cfg.exact_quantile(self.log_posterior_, probs)
        return self._out(q[:, 0]), self._out(q[:, 1])


def posterior_mean_path(history, *, prior=None, likelihood="conjugate", rate_grid=None) -> np.ndarray:
    """Posterior mean of Δ after each crawl: the batch form of :class:`BayesianEstimator`.

    Parameters
    ----------
    history : CrawlHistory
        Shape (k,) or (n_pages, k); ``"conjugate"`` needs its crawl rate,
        ``"exact"`` its intervals.
    prior, likelihood, rate_grid
        As for :class:`BayesianEstimator` (the crawl rate comes from ``history``).

    Returns
    -------
    ndarray, shape of ``history.changed``
        Element j is the posterior mean after the first j + 1 crawls.

    Examples
    --------
    >>> from changerate_bayes import CrawlHistory
    >>> from changerate_bayes.bayes import BetaPrimePrior, posterior_mean_path
    >>> h = CrawlHistory([1, 0, 1], crawl_rate=3.0)
    >>> posterior_mean_path(h, prior=BetaPrimePrior(0.0, 2.0)).tolist()  # = LLN, alpha = 1
    [3.0, 1.5, 3.0]
    """
    if not isinstance(history, CrawlHistory):
        raise TypeError(f"`history` must be a CrawlHistory; got {type(history).__name__}")
    cfg = _Config(prior, history.crawl_rate, likelihood, rate_grid)
    n = history.n_pages or 1
    changed = history.changed.reshape(n, -1).astype(np.float64)
    k = changed.shape[1]
    if cfg.likelihood == "conjugate":
        p = np.broadcast_to(np.asarray(cfg.p, dtype=np.float64).reshape(-1, 1), (n, 1))
        out = conjugate_mean(cfg.prior.a, cfg.prior.b, np.cumsum(changed, axis=1), np.arange(1, k + 1), p)
    else:
        tau = history.require_intervals(method="exact").reshape(n, -1)
        log_post = cfg.log_prior(n)
        out = np.empty((n, k))
        for j in range(k):  # the recursion over crawls; vectorised over pages
            log_post = log_post + cfg.increment(changed[:, j], tau[:, j])
            out[:, j] = cfg.exact_mean(log_post)
    return out.reshape(history.shape)
