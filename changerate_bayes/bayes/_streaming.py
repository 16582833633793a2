"""Streaming Bayes: the posterior of Δ updated crawl by crawl."""

from __future__ import annotations

import warnings

import numpy as np

from .._validation import (
    StatisticalWarning,
    as_float_array,
    check_choice,
    check_open_unit,
    check_positive_int,
    first_bad_index,
)
from ..history import CrawlHistory
from ._conjugate import conjugate_mean, conjugate_quantile
from ._grid import BLOCK_PAGES, fit_grid, inverse_cdf, posterior_mean
from ._lattice import LatticeLikelihood
from ._likelihood import _log1mexp_neg
from ._priors import BetaPrimePrior, Prior, log_prior_u

__all__ = ["BayesianEstimator", "posterior_mean_path", "LIKELIHOODS", "READ_GRID_SIZE"]

LIKELIHOODS = ("conjugate", "exact")
#: quadrature nodes per page when the exact posterior is read (mean, credible interval)
READ_GRID_SIZE = 128
#: a fixed ``rate_grid`` is reported as not covering the posterior when more than this
#: posterior mass lies on its outermost nodes (1% of them at each end, at least 2) ...
EDGE_MASS = 1e-6
#: ... or when the posterior sd of log Δ is below this many node spacings
MIN_SD_SPACINGS = 3.0
_DEFAULT_PRIOR = BetaPrimePrior(1.0, 2.0)


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
        self.log_rates = None
        if crawl_rate is not None:
            self.p = as_float_array(crawl_rate, name="crawl_rate", positive=True, ndim=(0, 1))
        if self.likelihood == "conjugate":
            if not isinstance(prior, BetaPrimePrior):
                raise ValueError(f"`prior` must be a BetaPrimePrior for likelihood 'conjugate'; got {prior!r}")
            if self.p is None:
                raise ValueError("likelihood 'conjugate' needs `crawl_rate` (p > 0)")
            return
        if not prior.proper:
            raise ValueError(f"likelihood 'exact' needs a proper prior; got the improper {prior!r}")
        if prior.needs_crawl_rate and self.p is None:
            raise ValueError(f"`prior` {prior!r} is a prior on Δ/p: pass `crawl_rate`")
        if rate_grid is not None:
            self.log_rates = _fixed_grid(rate_grid)

    @property
    def fixed_grid(self) -> bool:
        return self.log_rates is not None

    def coef(self, n_pages: int) -> dict:
        """Prior coefficients in log Δ as arrays of shape (n_pages,)."""
        return self.prior.coefficients(self.p).as_arrays(n_pages)

    # ------------------------------------------------- fixed grid (rate_grid given)
    def log_prior(self, n_pages):
        u = self.log_rates
        return log_prior_u(np.broadcast_to(u, (n_pages, u.size)), self.coef(n_pages))

    def increment(self, changed, interval):
        """Exact log-likelihood of one crawl at every fixed-grid node, shape (n_pages, G)."""
        x = np.exp(self.log_rates)[None, :] * interval[:, None]
        return np.where(changed[:, None] > 0, _log1mexp_neg(x), -x)

    def fixed_mean(self, log_post):
        _warn_if_grid_misses(self.log_rates, log_post)
        rates = np.exp(self.log_rates)
        w = np.exp(log_post - log_post.max(axis=1, keepdims=True))
        w[:, [0, -1]] *= 0.5
        return (w * rates).sum(axis=1) / w.sum(axis=1)

    def fixed_quantile(self, log_post, probs):
        _warn_if_grid_misses(self.log_rates, log_post)
        u = self.log_rates
        n = log_post.shape[0]
        out = inverse_cdf(np.full(n, u[0]), np.full(n, u[1] - u[0]), log_post, np.broadcast_to(probs, (n, len(probs))))
        return np.exp(out)


def _fixed_grid(rate_grid) -> np.ndarray:
    if not (isinstance(rate_grid, tuple) and len(rate_grid) == 3):
        raise TypeError(f"`rate_grid` must be a tuple (low, high, size); got {rate_grid!r}")
    low, high, size = rate_grid
    bounds = as_float_array([low, high], name="rate_grid", positive=True)
    low, high = float(bounds[0]), float(bounds[1])
    size = check_positive_int(size, name="rate_grid size", minimum=16)
    if not high > low:
        raise ValueError(f"`rate_grid` needs low < high; got {rate_grid!r}")
    return np.linspace(np.log(low), np.log(high), size)


def _warn_if_grid_misses(log_rates, log_post) -> None:
    """StatisticalWarning when a fixed grid does not cover or resolve a page's posterior."""
    size = log_rates.size
    w = np.exp(log_post - log_post.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    edge = max(2, size // 100)
    at_edge = (w[:, :edge].sum(axis=1) > EDGE_MASS) | (w[:, -edge:].sum(axis=1) > EDGE_MASS)
    mean_u = (w * log_rates).sum(axis=1)
    sd_u = np.sqrt(np.maximum((w * (log_rates - mean_u[:, None]) ** 2).sum(axis=1), 0.0))
    narrow = sd_u < MIN_SD_SPACINGS * (log_rates[1] - log_rates[0])
    if at_edge.any() or narrow.any():
        page = int(np.flatnonzero(at_edge | narrow)[0])
        what = (
            f"has more than {EDGE_MASS:g} of its mass at an end of"
            if at_edge[page]
            else f"is narrower than {MIN_SD_SPACINGS:g} node spacings of"
        )
        warnings.warn(
            f"the posterior of page {page} {what} the fixed `rate_grid` "
            f"[{np.exp(log_rates[0]):.3g}, {np.exp(log_rates[-1]):.3g}] ({size} nodes): its mean and "
            "credible interval are not accurate; use rate_grid=None (exact at any Δ)",
            StatisticalWarning,
            stacklevel=4,
        )


def _read_blocks(lik, coef, fn) -> np.ndarray:
    """Apply ``fn(lik_block, coef_block)`` in blocks of pages and stack the results."""
    out = []
    for start in range(0, lik.n_pages, BLOCK_PAGES):
        stop = min(start + BLOCK_PAGES, lik.n_pages)
        out.append(fn(lik.block(start, stop), {c: v[start:stop] for c, v in coef.items()}))
    return np.concatenate(out, axis=0)


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
        interval-censored likelihood given the intervals; ``update`` needs the
        interval, and the state is a tabulated log-likelihood (see Notes).
    rate_grid : tuple (low, high, size), optional
        ``"exact"`` only. None (default): the exact state of the Notes, valid at any Δ.
        A tuple keeps instead the log-posterior on ``size`` nodes uniform in log Δ from
        ``low`` to ``high`` (rates per unit time), for comparison with fixed-grid
        implementations; reading ``rate`` or ``credible_interval`` then warns
        (StatisticalWarning) when the posterior has mass at the ends of that grid or is
        narrower than 3 node spacings, where its values are not accurate.
    n_pages : int, optional
        None (default) for one page with scalar updates; else ``update`` takes
        arrays of shape (n_pages,).

    Attributes
    ----------
    n_crawls_ : int
        Crawls seen.
    n_changed_ : float or ndarray
        Changes seen Î_k.
    exposure_ : float or ndarray
        ``"exact"``: total length T0 of the intervals that saw no change.
    log_posterior_ : ndarray, shape (n_pages, G)
        ``"exact"`` with a fixed ``rate_grid``: unnormalised log-posterior at its nodes.

    Raises
    ------
    ValueError, TypeError
        For bad settings (the message names the argument).

    Notes
    -----
    Conjugate: after k crawls with Î_k changes, Δ/p ~ BetaPrime(a + Î_k, b + k − Î_k),
    mean p(a + Î_k)/(b + k − Î_k − 1) (∞ if b + k − Î_k <= 1). With a = 0 and
    b = 1 + α this is the LLN estimator p Î_k/(k + α − Î_k) (paper eq. 1); while no
    change has been seen the posterior is improper and ``rate`` is 0, the limit
    a → 0+, and ``credible_interval`` raises.

    Exact: log L(Δ) = Σ_{I_j=1} log(1 − e^{−Δτ_j}) − Δ T0. The state is T0, Î_k,
    Σ log τ_j over the changes seen, and the first sum tabulated on a lattice of
    log Δ (16 nodes per unit) spanning the crawl intervals seen, 44 + log(max τ/min τ)
    units, shared by the pages; outside it the sum has closed asymptotic forms, so the
    state is the exact log-likelihood at every Δ (to ~1e-13 per crawl), whatever the
    prior and the data. Reading the posterior fits the same adapted quadrature as
    ``posterior(method="grid")`` (:data:`READ_GRID_SIZE` nodes): the mean is a ratio
    of two normalising constants (``inf`` where the posterior mean does not exist),
    the interval inverts the posterior CDF. Before any crawl both come from the prior
    in closed form. An update costs O(lattice) per page for a crawl that saw a
    change and O(1) for one that did not; a read costs O(READ_GRID_SIZE) per page.

    The streaming state after each update equals :func:`posterior_mean_path` on the
    same crawls (same arithmetic, same order).

    Examples
    --------
    >>> from changerate_bayes import BayesianEstimator, GammaPrior
    >>> est = BayesianEstimator(crawl_rate=2.0)  # BetaPrimePrior(1, 2), conjugate
    >>> for changed in [1, 0, 1, 1]:
    ...     est.update(changed)
    >>> est.rate  # 2 * (1 + 3) / (2 + 4 - 3 - 1)
    4.0
    >>> lo, hi = est.credible_interval(0.9)
    >>> bool(lo < est.rate < hi)
    True
    >>> exact = BayesianEstimator(prior=GammaPrior(2.0, 1.0), likelihood="exact")
    >>> exact.update(0, interval=1.5)  # no change in 1.5 time units: Gamma(2, 2.5)
    >>> round(exact.rate, 12)  # 2 / 2.5
    0.8
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
        self._changed = np.zeros(n)
        if self._cfg.likelihood == "exact":
            if self._cfg.fixed_grid:
                self.log_posterior_ = self._cfg.log_prior(n)
                self._t0 = np.zeros(n)
            else:
                self._lik = LatticeLikelihood(n)

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
        if self._cfg.likelihood == "exact":
            if interval is None:
                raise ValueError("likelihood 'exact' needs the crawl `interval` τ_k")
            tau = self._as_pages(interval, name="interval", positive=True)
            if self._cfg.fixed_grid:
                self.log_posterior_ = self.log_posterior_ + self._cfg.increment(c, tau)
                self._t0 = self._t0 + np.where(c > 0, 0.0, tau)
            else:
                self._lik.update(c > 0, tau)
        self._changed = self._changed + c
        self.n_crawls_ += 1

    def merge(self, other: BayesianEstimator) -> BayesianEstimator:
        """A new estimator holding the crawls of both (same settings, disjoint crawls).

        Conjugate: the counts add. Exact: the log-likelihoods add (the prior is
        counted once).

        Raises
        ------
        TypeError
            If ``other`` is not a BayesianEstimator.
        ValueError
            If the two differ in ``likelihood``, ``prior``, ``crawl_rate``,
            ``rate_grid`` or ``n_pages``: counts observed at different crawl rates, or
            posteriors under different priors, cannot be pooled.
        """
        if not isinstance(other, BayesianEstimator):
            raise TypeError(f"`other` must be a BayesianEstimator; got {type(other).__name__}")
        a, b = self._cfg, other._cfg
        checks = (
            ("likelihood", a.likelihood, b.likelihood, a.likelihood == b.likelihood),
            ("prior", a.prior, b.prior, a.prior == b.prior),
            ("n_pages", self.n_pages, other.n_pages, self.n_pages == other.n_pages),
            (
                "crawl_rate",
                self.crawl_rate,
                other.crawl_rate,
                (a.p is None) == (b.p is None) and (a.p is None or np.array_equal(a.p, b.p)),
            ),
            (
                "rate_grid",
                self.rate_grid,
                other.rate_grid,
                (a.log_rates is None) == (b.log_rates is None)
                and (a.log_rates is None or np.array_equal(a.log_rates, b.log_rates)),
            ),
        )
        for name, mine, theirs, same in checks:
            if not same:
                raise ValueError(
                    f"`{name}` differs: {mine!r} and {theirs!r} (estimators merge only with the same "
                    "likelihood, prior, crawl_rate, rate_grid and n_pages)"
                )
        merged = BayesianEstimator(
            prior=self.prior,
            crawl_rate=self.crawl_rate,
            likelihood=self.likelihood,
            rate_grid=self.rate_grid,
            n_pages=self.n_pages,
        )
        merged._changed = self._changed + other._changed
        if a.likelihood == "exact":
            if a.fixed_grid:
                merged.log_posterior_ = self.log_posterior_ + other.log_posterior_ - a.log_prior(self.n_pages or 1)
                merged._t0 = self._t0 + other._t0
            else:
                merged._lik = self._lik.merge(other._lik)
        merged.n_crawls_ = self.n_crawls_ + other.n_crawls_
        return merged

    # ------------------------------------------------------------------ reading
    @property
    def n_changed_(self):
        return self._out(self._changed.copy())

    @property
    def exposure_(self):
        if self._cfg.likelihood != "exact":
            raise AttributeError("exposure_ is kept by the exact likelihood only")
        return self._out((self._t0 if self._cfg.fixed_grid else self._lik.t0).copy())

    def _out(self, x):
        return float(x[0]) if self.n_pages is None else x

    def _prior_values(self, what, probs=None):
        """Prior mean (n_pages,) or quantiles (n_pages, m) of every page, in closed form, before any crawl."""
        n = self.n_pages or 1
        p = self._cfg.p
        dist = self._cfg.prior.distribution(None if p is None else np.reshape(p, (-1, 1)))
        with np.errstate(over="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # scipy's overflow to inf is the answer
            if what == "mean":
                return np.broadcast_to(np.asarray(dist.mean(), dtype=np.float64).ravel(), (n,)).copy()
            return np.broadcast_to(dist.ppf(probs[None, :]), (n, probs.size)).copy()

    @property
    def rate(self):
        """Posterior mean of Δ (per unit time): float, or ndarray of shape (n_pages,).

        Before the first crawl this is the prior mean (∞ for a BetaPrimePrior with
        b <= 1); ∞ too while the posterior mean does not exist (a BetaPrimePrior with
        b <= 1 and no crawl without change).
        """
        cfg = self._cfg
        if cfg.likelihood == "conjugate":
            return self._out(conjugate_mean(cfg.prior.a, cfg.prior.b, self._changed, self.n_crawls_, cfg.p))
        if cfg.fixed_grid:
            return self._out(cfg.fixed_mean(self.log_posterior_))
        if self.n_crawls_ == 0:
            return self._out(self._prior_values("mean"))
        coef = cfg.coef(self._lik.n_pages)
        return self._out(_read_blocks(self._lik, coef, lambda lik, c: posterior_mean(lik, c, size=READ_GRID_SIZE)))

    def credible_interval(self, level: float = 0.9):
        """Equal-tailed credible interval of Δ.

        Parameters
        ----------
        level : float, default 0.9
            Posterior probability inside the interval.

        Returns
        -------
        (low, high) : floats or ndarrays of shape (n_pages,)
            0.0 or ``inf`` where a quantile lies beyond the float64 range.

        Raises
        ------
        TypeError
            If ``level`` is not a real number.
        ValueError
            If ``level`` is not in (0, 1), or a page's posterior is improper (a = 0,
            no change seen).
        """
        level = check_open_unit(level, name="level")
        probs = np.array([(1 - level) / 2, (1 + level) / 2])
        cfg = self._cfg
        if cfg.likelihood == "conjugate":
            if cfg.prior.a == 0 and (self._changed == 0).any():
                page = int(np.flatnonzero(self._changed == 0)[0])
                raise ValueError(
                    f"the posterior of page {page} is improper (prior a = 0, no change seen): no credible interval"
                )
            q = conjugate_quantile(
                cfg.prior.a,
                cfg.prior.b,
                self._changed[:, None],
                self.n_crawls_,
                np.reshape(cfg.p, (-1, 1)),
                probs[None, :],
            )
        elif cfg.fixed_grid:
            q = cfg.fixed_quantile(self.log_posterior_, probs)
        elif self.n_crawls_ == 0:
            q = self._prior_values("quantile", probs)
        else:
            coef = cfg.coef(self._lik.n_pages)
            q = _read_blocks(self._lik, coef, lambda lik, c: fit_grid(lik, c, size=READ_GRID_SIZE).quantile(probs))
        return self._out(q[:, 0]), self._out(q[:, 1])


def posterior_mean_path(history, *, prior=None, likelihood="conjugate", rate_grid=None) -> np.ndarray:
    """Posterior mean of Δ after each crawl: the batch form of :class:`BayesianEstimator`.

    Parameters
    ----------
    history : CrawlHistory
        Shape (k,) or (n_pages, k), or ragged (pages with different numbers of
        crawls); ``"conjugate"`` needs its crawl rate, ``"exact"`` its intervals.
    prior, likelihood, rate_grid
        As for :class:`BayesianEstimator` (the crawl rate comes from ``history``).

    Returns
    -------
    ndarray, shape of ``history.changed``
        Element j is the posterior mean after the first j + 1 crawls. For a ragged
        history, shape (n_pages, n_crawls), NaN after each page's last crawl.

    Raises
    ------
    TypeError
        If ``history`` is not a CrawlHistory, or ``prior`` not a prior.
    ValueError
        As for :class:`BayesianEstimator`, or when the history lacks what the
        likelihood needs.

    Examples
    --------
    >>> from changerate_bayes import CrawlHistory
    >>> from changerate_bayes.bayes import BetaPrimePrior, GammaPrior, posterior_mean_path
    >>> h = CrawlHistory([1, 0, 1], crawl_rate=3.0)
    >>> posterior_mean_path(h, prior=BetaPrimePrior(0.0, 2.0)).tolist()  # = LLN, alpha = 1
    [3.0, 1.5, 3.0]
    >>> h = CrawlHistory([0, 0], intervals=[1.0, 3.0])  # Gamma(2, 1) -> Gamma(2, 2), Gamma(2, 5)
    >>> posterior_mean_path(h, prior=GammaPrior(2.0, 1.0), likelihood="exact").round(12).tolist()
    [1.0, 0.4]
    """
    if not isinstance(history, CrawlHistory):
        raise TypeError(f"`history` must be a CrawlHistory; got {type(history).__name__}")
    cfg = _Config(prior, history.crawl_rate, likelihood, rate_grid)
    if cfg.likelihood == "exact":
        history.require_intervals(method="exact")
    # (n_pages, k) arrays; a ragged history is padded after each page's last crawl (with
    # τ = 1, so that the padding passes the checks): the padding only follows the crawls
    # whose means are kept, and its entries become NaN
    changed, tau, mask = history.padded(fill_interval=1.0)
    changed = changed.astype(np.float64)
    n, k = changed.shape

    def shaped(out):
        return np.where(mask, out, np.nan) if history.is_ragged else out.reshape(history.shape)

    if cfg.likelihood == "conjugate":
        p = np.broadcast_to(np.asarray(cfg.p, dtype=np.float64).reshape(-1, 1), (n, 1))
        return shaped(conjugate_mean(cfg.prior.a, cfg.prior.b, np.cumsum(changed, axis=1), np.arange(1, k + 1), p))
    est = BayesianEstimator(
        prior=cfg.prior, crawl_rate=history.crawl_rate, likelihood="exact", rate_grid=rate_grid, n_pages=n
    )
    out = np.empty((n, k))
    for j in range(k):  # the recursion over crawls; vectorised over pages
        est.update(changed[:, j], tau[:, j])
        out[:, j] = est.rate
    return shaped(out)
