"""Learners: per-page change-rate estimates from a crawler's own (I, τ), vectorised over pages.

A learner is any object with

* ``update(changed, interval, mask)``: arrays of shape (N,); page i saw crawl
  (I_i, τ_i) this step iff ``mask[i]`` (the other entries are to be ignored);
* ``rate``: ndarray (N,), the current estimate of Δ per day (finite, >= 0);
* ``sample(rng)``: ndarray (N,), one draw of every Δ_i from the learner's belief;

and, for the index policies (:class:`~changerate_bayes.replay.IndexPolicy`),

* ``prob_change_within(elapsed)``: ndarray (N,), the predictive probability
  F_i(t) = P(page i changed within ``elapsed[i]`` of its last crawl | its crawls),
  ``elapsed`` of shape (N,) in the time unit of the intervals it is given (days in the
  replay), the method of :class:`~changerate_bayes.bursts.BurstFilter`;
* optionally ``freshness_index(elapsed)``: ndarray (N,), the mean-form index
  t F(t) − ∫_0^t F(s) ds in days for ``elapsed`` in days, when the learner has it in
  closed form (else the policy integrates ``prob_change_within`` numerically).

The learned policies (:class:`~changerate_bayes.replay.PlugInPolicy`,
:class:`~changerate_bayes.replay.ThompsonPolicy`) take a factory ``n_pages -> learner``,
so any object with this interface (a dynamic, drifting-rate filter for instance) plugs in
as ``PlugInPolicy(lambda n: MyFilter(n_pages=n), name="mine")``.
"""

from __future__ import annotations

import types

import numpy as np

from .._validation import as_float_array
from ..bursts import BurstFilter
from ..dynamic import DynamicRateFilter, mixture_weights
from ..scheduling import index_kernels

__all__ = ["LLNLearner", "GridLearner", "DynamicLearner", "OldestFirst", "KnownRates", "burst_learner"]

_KERNELS: list[types.ModuleType] = []


class _IndexTable:
    """The mean-form index of a belief on rate nodes, tabulated per page in log t.

    Rows are recomputed only for the pages whose belief changed (a crawl), O(T·G) each;
    a read is O(1) per page (cubic Hermite in (log t, log ν), nodes 8 a decade from
    1e-2 to 1e4 days: within 1e-4 relative of the sum over the nodes; below 1e-2 days
    (15 min) log ν continues with its slope, ν ∝ t², beyond 1e4 days it is flat).
    """

    LOG_T0 = float(np.log(1e-2))
    H = float(np.log(10.0) / 8.0)
    N_T = 49

    def __init__(self, n_pages: int):
        self.ylog = np.zeros((n_pages, self.N_T))
        self.slope = np.zeros((n_pages, self.N_T))
        self.dirty = np.ones(n_pages, dtype=bool)

    def read_signed(self, terms_of, elapsed) -> np.ndarray:
        """ν at ``elapsed`` days; ``terms_of(rows)`` gives (coefficients, rates), each (len(rows), C)."""
        k = index_kernels()
        rows = np.flatnonzero(self.dirty)
        if rows.size:
            coef, rates = terms_of(rows)
            k.signed_table(
                np.ascontiguousarray(coef, dtype=np.float64),
                np.ascontiguousarray(rates, dtype=np.float64),
                rows,
                self.LOG_T0,
                self.H,
                self.ylog,
                self.slope,
            )
            self.dirty[rows] = False
        out = np.empty(self.ylog.shape[0])
        k.table_index(self.ylog, self.slope, self.LOG_T0, self.H, np.ascontiguousarray(elapsed, dtype=np.float64), out)
        return out

    def read(self, probs_of, rates, elapsed) -> np.ndarray:
        """ν at ``elapsed`` days; ``probs_of(rows)`` gives the beliefs (len(rows), G) of the rows to recompute."""
        k = index_kernels()
        rows = np.flatnonzero(self.dirty)
        if rows.size:
            probs = np.ascontiguousarray(probs_of(rows), dtype=np.float64)
            k.mixture_table(probs, rates, rows, self.LOG_T0, self.H, self.ylog, self.slope)
            self.dirty[rows] = False
        out = np.empty(self.ylog.shape[0])
        k.table_index(self.ylog, self.slope, self.LOG_T0, self.H, np.ascontiguousarray(elapsed, dtype=np.float64), out)
        return out


def _kernels():
    """The compiled counts (numba: compiled, or loaded from its cache, on first use)."""
    if not _KERNELS:
        from . import _kernels as k  # numba kernels: imported on first use, never compiled at import

        _KERNELS.append(k)
    return _KERNELS[0]


class LLNLearner:
    """The LLN estimator p̂ Î/(k + α − Î) with the crawl rate estimated as p̂ = k/Σ τ.

    Paper eq. (1) (Avrachenkov, Patil & Thoppe) assumes Poisson crawling at a known rate
    p; a replayed crawler's intervals are neither Poisson nor of one rate, so p is
    replaced by the page's empirical crawl rate. Before a page's first crawl, and while
    it has seen no change, the estimate is 0. ``sample`` returns ``rate`` (no belief to
    sample from).

    Parameters
    ----------
    n_pages : int
    alpha : float, default 1.0
        α > 0 keeps the estimate finite when every crawl saw a change.
    """

    def __init__(self, n_pages: int, *, alpha: float = 1.0):
        self.alpha = float(alpha)
        self.k = np.zeros(n_pages)
        self.ones = np.zeros(n_pages)
        self.tau = np.zeros(n_pages)

    def update(self, changed, interval, mask) -> None:
        m = np.asarray(mask, dtype=bool)
        self.k[m] += 1.0
        self.ones[m] += np.asarray(changed)[m]
        self.tau[m] += np.asarray(interval)[m]

    def _update_events(self, page, changed, interval) -> None:
        """``update`` of crawls given one by one, in order: page (int64), I (bool), τ (days)."""
        _kernels().lln_events(page, changed, interval, self.k, self.ones, self.tau)

    @property
    def rate(self) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(self.tau > 0, self.k / self.tau, 0.0)
        return p * self.ones / (self.k + self.alpha - self.ones)

    def sample(self, rng) -> np.ndarray:
        return self.rate


class GridLearner:
    """The exact interval-censored likelihood of Δ on a log grid, per page; MLE or posterior.

    log L(Δ) = Σ_j I_j log(1 − e^{−Δτ_j}) − Δ Σ_j (1 − I_j) τ_j holds for any crawl
    schedule (the τ_j are observed). The state is the first sum tabulated on G nodes
    uniform in log Δ plus the exposure Σ(1 − I)τ: O(G) per page, O(G) work per crawl
    that saw a change and O(1) per crawl that did not (the O(G) terms are added, in crawl
    order, at the next read). Reads are cached and recomputed only for pages crawled since
    the last read.

    Parameters
    ----------
    n_pages : int
    estimate : {"mean", "mle"}, default "mean"
        ``rate`` is the posterior mean under a log-normal prior (median
        ``prior_median`` per day, σ = ``prior_sigma`` in log Δ), or the maximum of the
        likelihood on the grid refined by a parabola in log Δ (0 while no change has been
        seen; the top node while every crawl saw one).
    prior_median : float, default 1/30
        Per day: a page changing about monthly.
    prior_sigma : float, default 2.0
    grid_size : int, default 128
    width : float, default 4.5
        The grid spans log(median) ± width·σ (1/30 per day: about 1/(680 years) to 270 per day).

    Notes
    -----
    ``sample`` draws Δ from the posterior (inverse CDF on the grid, uniform within a
    cell in log Δ), whatever ``estimate`` is. ``prob_change_within(t)`` is the posterior
    predictive 1 − E[e^{−Δt}] and ``freshness_index(t)`` the posterior mean of the Poisson
    index E[(1 − e^{−Δt}(1 + Δt))/Δ] (sums over the grid nodes).
    """

    def __init__(
        self,
        n_pages: int,
        *,
        estimate: str = "mean",
        prior_median: float = 1.0 / 30.0,
        prior_sigma: float = 2.0,
        grid_size: int = 128,
        width: float = 4.5,
    ):
        if estimate not in ("mean", "mle"):
            raise ValueError(f"`estimate` must be 'mean' or 'mle'; got {estimate!r}")
        self.estimate = estimate
        self.log_grid = np.log(prior_median) + prior_sigma * np.linspace(-width, width, grid_size)
        self.grid = np.exp(self.log_grid)
        self.step = self.log_grid[1] - self.log_grid[0]
        self.log_prior = -0.5 * ((self.log_grid - np.log(prior_median)) / prior_sigma) ** 2
        self._loglik = np.zeros((n_pages, grid_size))
        self._pending: list[
            tuple[np.ndarray, np.ndarray]
        ] = []  # (pages, τ) of the crawls that saw a change, not yet in ``_loglik``
        self.exposure = np.zeros(n_pages)
        self.n_changed = np.zeros(n_pages)
        self.n_unchanged = np.zeros(n_pages)
        self._dirty = np.ones(n_pages, dtype=bool)  # posterior mean and CDF to recompute
        self._dirty_mle = np.ones(n_pages, dtype=bool)  # MLE to recompute
        self._mean = np.zeros(n_pages)
        self._mle = np.zeros(n_pages)
        self._cdf = np.zeros((n_pages, grid_size))
        self._post = np.zeros((n_pages, grid_size))  # posterior probabilities of the nodes
        self._table = _IndexTable(n_pages)  # the mean-form index, tabulated in log t

    def update(self, changed, interval, mask) -> None:
        m = np.asarray(mask, dtype=bool)
        c = np.asarray(changed, dtype=bool)
        tau = np.asarray(interval, dtype=np.float64)
        if not m.shape == c.shape == tau.shape == self.exposure.shape:
            m, c, tau = (np.ascontiguousarray(x) for x in np.broadcast_arrays(m, c, tau))
            if m.shape != self.exposure.shape:
                raise ValueError(
                    f"`changed`, `interval` and `mask` must have shape {self.exposure.shape}; got {m.shape}"
                )
        # counts, exposure Σ(1 − I)τ of the crawls that saw no change, dirty flags
        hit = _kernels().grid_counts(
            m, c, tau, self.exposure, self.n_unchanged, self.n_changed, self._dirty, self._dirty_mle
        )
        if hit.size:
            self._pending.append((hit, tau[hit]))

    def _update_events(self, page, changed, interval) -> None:
        """``update`` of crawls given one by one, in order: page (int64), I (bool), τ (days)."""
        pos = _kernels().grid_events(
            page, changed, interval, self.exposure, self.n_unchanged, self.n_changed, self._dirty, self._dirty_mle
        )
        if pos.size:
            self._pending.append((page[pos], interval[pos]))

    def _flush(self) -> None:
        """Add the pending terms log(1 − e^{−Δτ}) to the rows, in the order of the crawls."""
        if not self._pending:
            return
        hit = np.concatenate([h for h, _ in self._pending])
        tau = np.concatenate([t for _, t in self._pending])
        self._pending = []
        _kernels().add_rows(self._loglik, hit, np.log(-np.expm1(-tau[:, None] * self.grid[None, :])))

    @property
    def loglik_changed(self) -> np.ndarray:
        """Σ_j I_j log(1 − e^{−Δ τ_j}) per page on the grid nodes, shape (N, G)."""
        self._flush()
        return self._loglik

    def _loglik_rows(self, idx) -> np.ndarray:
        self._flush()
        return self._loglik[idx] - self.exposure[idx, None] * self.grid[None, :]

    def _refresh(self) -> None:
        """Recompute the cached reads (posterior mean and CDF, MLE) of the pages crawled since."""
        self._refresh_posterior()
        self._refresh_mle()

    def _refresh_posterior(self) -> None:
        idx = np.flatnonzero(self._dirty)
        if not idx.size:
            return
        logp = self._loglik_rows(idx) + self.log_prior
        logp -= logp.max(axis=1, keepdims=True)
        w = np.exp(logp)
        w /= w.sum(axis=1, keepdims=True)
        self._mean[idx] = w @ self.grid
        self._post[idx] = w
        self._table.dirty[idx] = True
        self._cdf[idx] = np.cumsum(w, axis=1)
        self._dirty[idx] = False

    def _refresh_mle(self) -> None:
        idx = np.flatnonzero(self._dirty_mle)
        if not idx.size:
            return
        loglik = self._loglik_rows(idx)
        # MLE: grid argmax refined by a parabola through the neighbours (in log Δ)
        j = np.argmax(loglik, axis=1)
        jj = np.clip(j, 1, self.grid.size - 2)
        rows = np.arange(idx.size)
        y0, y1, y2 = loglik[rows, jj - 1], loglik[rows, jj], loglik[rows, jj + 1]
        denom = y0 - 2.0 * y1 + y2
        with np.errstate(invalid="ignore", divide="ignore"):
            shift = np.where(denom < 0, 0.5 * (y0 - y2) / denom, 0.0)
        shift = np.clip(shift, -1.0, 1.0)
        u = np.where((j > 0) & (j < self.grid.size - 1), self.log_grid[jj] + shift * self.step, self.log_grid[j])
        mle = np.exp(u)
        mle = np.where(self.n_changed[idx] == 0, 0.0, mle)
        self._mle[idx] = mle
        self._dirty_mle[idx] = False

    @property
    def rate(self) -> np.ndarray:
        # The posterior is brought up to date at every read, for any estimate: its mean is a
        # matrix-vector product over the rows read together, whose rounding depends on that
        # set of rows. The MLE is row by row, so it is recomputed only when it is read.
        self._refresh_posterior()
        if self.estimate == "mean":
            return self._mean.copy()
        self._refresh_mle()
        return self._mle.copy()

    def sample(self, rng) -> np.ndarray:
        self._refresh_posterior()
        n = self._cdf.shape[0]
        u = rng.random(n)
        jitter = rng.random(n)
        idx = np.minimum(_kernels().count_below(self._cdf, u), self.grid.size - 1)
        return np.exp(self.log_grid[idx] + (jitter - 0.5) * self.step)

    def prob_change_within(self, elapsed) -> np.ndarray:
        """Posterior predictive P(change within ``elapsed`` days of the last crawl), shape (N,).

        1 − Σ_g π_g e^{−Δ_g t} over the grid nodes (π the posterior), t = ``elapsed``.
        """
        self._refresh_posterior()
        t = np.asarray(elapsed, dtype=np.float64)
        return -np.einsum("ng,ng->n", self._post, np.expm1(-t[:, None] * self.grid[None, :]))

    def freshness_index(self, elapsed) -> np.ndarray:
        """Posterior mean of the Poisson freshness index at ``elapsed`` days, shape (N,), in days.

        Σ_g π_g (1 − e^{−Δ_g t}(1 + Δ_g t))/Δ_g = t F(t) − ∫_0^t F(s) ds for the posterior
        predictive F (see :func:`~changerate_bayes.replay.freshness_index`), tabulated in
        log t per page when its posterior changes and interpolated (relative error < 1e-4).
        """
        self._refresh_posterior()
        return self._table.read(lambda rows: self._post[rows], self.grid, elapsed)


class OldestFirst:
    """No learning: the index of a page is the age of its copy, so an index policy crawls the
    oldest copies first, i.e. round robin (``IndexPolicy(OldestFirst, name=..., pace="pages")``
    is round robin paced to the pages in the crawl, the reference for what a learner adds
    to the pace).

    ``rate`` and ``sample`` are 0 (no belief); ``freshness_index(elapsed)`` returns
    ``elapsed``.

    Parameters
    ----------
    n_pages : int
    """

    def __init__(self, n_pages: int):
        self.n_pages = int(n_pages)

    def update(self, changed, interval, mask) -> None:
        pass

    @property
    def rate(self) -> np.ndarray:
        return np.zeros(self.n_pages)

    def sample(self, rng) -> np.ndarray:
        return np.zeros(self.n_pages)

    def freshness_index(self, elapsed) -> np.ndarray:
        return np.array(elapsed, dtype=np.float64)


class KnownRates:
    """No learning: each page's Poisson rate is given and kept, whatever the crawls show.

    The learner of a hindsight reference: fed each page's true change count over its window,
    Δ_i = n_i/T_i (``ReplayContext.true_rates``), an :class:`IndexPolicy` over it crawls by
    the Whittle index of the known rates, as the index policies would if their posteriors had
    converged to those rates.

    Parameters
    ----------
    rates : array_like, shape (N,)
        Δ_i >= 0, changes per day, finite.

    Raises
    ------
    TypeError
        For non-numeric ``rates``.
    ValueError
        For ``rates`` that are not one-dimensional, negative or non-finite.

    Notes
    -----
    ``rate`` and ``sample(rng)`` return the rates, ``prob_change_within(t)`` is
    1 − e^{−Δt} and ``freshness_index(t)`` the Poisson index (1 − e^{−Δt}(1 + Δt))/Δ
    (:func:`~changerate_bayes.replay.freshness_index`); ``update`` does nothing.
    """

    def __init__(self, rates):
        self.rates = np.ascontiguousarray(as_float_array(rates, name="rates", nonnegative=True, ndim=(1,)))

    def update(self, changed, interval, mask) -> None:
        pass

    @property
    def rate(self) -> np.ndarray:
        return self.rates.copy()

    def sample(self, rng) -> np.ndarray:
        return self.rates.copy()

    def prob_change_within(self, elapsed) -> np.ndarray:
        return -np.expm1(-self.rates * np.asarray(elapsed, dtype=np.float64))

    def freshness_index(self, elapsed) -> np.ndarray:
        t = np.ascontiguousarray(np.broadcast_to(np.asarray(elapsed, dtype=np.float64), self.rates.shape))
        out = np.empty(self.rates.size)
        index_kernels().poisson_index(self.rates, t, out)
        return out


class DynamicLearner:
    """The dynamic posterior (log-rate random walk, :class:`~changerate_bayes.dynamic.DynamicRateFilter`) as a learner.

    Intervals and rates are in days (σ per √day). ``prob_change_within`` is the filter's
    one-step predictive (the rate diffuses over the elapsed time);
    ``freshness_index`` is the Poisson index averaged over the posterior of the rate
    *now*, held over the elapsed time, tabulated as :meth:`GridLearner.freshness_index` (the
    diffusion over that time is left out: the predictive costs a lattice convolution per page, ~8 ms for 263 pages, too slow to
    integrate at every step of a replay).

    Parameters
    ----------
    n_pages : int
    sigma : sequence of float
        Volatilities per √day, averaged by Bayesian model averaging.
    grid : int
        Lattice nodes.
    """

    def __init__(self, n_pages: int, *, sigma=(0.0, 0.03, 0.1, 0.3), grid: int = 96):
        self.sigma = sigma
        self.grid = grid
        self.filter = DynamicRateFilter(n_pages=n_pages, sigma=sigma, grid=grid)
        self._n = int(n_pages)
        self._table = _IndexTable(self._n)

    def update(self, changed, interval, mask) -> None:
        self.filter.update(changed, interval, mask)
        self._table.dirty |= np.asarray(mask, dtype=bool)

    def _node_probabilities(self, rows) -> np.ndarray:
        """Posterior probabilities of the lattice nodes now, averaged over σ, for pages ``rows``."""
        f = self.filter
        m = np.einsum("sn,sng->ng", mixture_weights(f._log_ev[:, rows]), f._w[:, rows])
        return m / m.sum(axis=1, keepdims=True)

    @property
    def rate(self) -> np.ndarray:
        return np.atleast_1d(self.filter.rate)

    def sample(self, rng) -> np.ndarray:
        return np.atleast_1d(self.filter.sample(rng))

    def prob_change_within(self, elapsed) -> np.ndarray:
        """The filter's predictive P(change within ``elapsed`` days), shape (N,); 0 where elapsed <= 0."""
        t = np.asarray(elapsed, dtype=np.float64)
        pos = t > 0
        out = np.atleast_1d(self.filter.predict_change_probability(np.where(pos, t, 1.0)))
        return np.where(pos, out, 0.0)

    def freshness_index(self, elapsed) -> np.ndarray:
        """Poisson index averaged over the posterior of the rate now, at ``elapsed`` days (N,), in days."""
        return self._table.read(self._node_probabilities, np.ascontiguousarray(self.filter.grid), elapsed)


def burst_learner(n_pages: int, *, params, scales):
    """The burst model's exact filter (:class:`~changerate_bayes.bursts.BurstFilter`) with the
    index policy's closed-form mean index.

    Under the model the time to the first change after a crawl is phase-type: with
    M = s(Q − Λ) for scale s, its survival is α e^{Mt} 1 = a₁ e^{−μ₁t} + a₂ e^{−μ₂t}
    (μ_j = −eigenvalues of M, a₁ = (u − d₂)/(d₁ − d₂), a₂ = (d₁ − u)/(d₁ − d₂), u = αM1,
    d_j the eigenvalues), so ν(t) = t F(t) − ∫_0^t F = Σ_k P(k) Σ_j a_kj (1 − e^{−μ_kj t}(1 +
    μ_kj t))/μ_kj: a signed mixture of Poisson indices, tabulated per page in log t when the
    page is crawled (as :meth:`GridLearner.freshness_index`). Tested against the numerical
    integral of ``prob_change_within``.

    Parameters
    ----------
    n_pages : int
    params : BurstParameters
        Rates per day.
    scales : sequence of float
        Per-page rate scales averaged over.
    """

    class _BurstLearner(BurstFilter):
        def __init__(self):
            super().__init__(n_pages, params=params, scales=scales)
            self._table = _IndexTable(n_pages)

        def update(self, changed, interval, mask=None) -> None:
            super().update(changed, interval, mask)
            self._table.dirty |= np.ones(n_pages, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)

        def _terms(self, rows):
            w = self._weights()[rows]  # (R, K)
            a = self.alpha_[rows]  # (R, K, 2)
            s = self._scales[None, :]
            l0, l1 = self._l0[rows, None] * s, self._l1[rows, None] * s
            q01, q10 = self._q01[rows, None] * s, self._q10[rows, None] * s
            m00, m11 = -(q01 + l0), -(q10 + l1)  # M = [[m00, q01], [q10, m11]]
            tr, det = m00 + m11, m00 * m11 - q01 * q10
            root = np.sqrt(np.maximum(tr * tr - 4.0 * det, 0.0))
            d1, d2 = 0.5 * (tr + root), 0.5 * (tr - root)  # d2 < d1 < 0
            u = -(a[:, :, 0] * l0 + a[:, :, 1] * l1)  # α M 1 (the rows of M sum to −λ)
            gap = d1 - d2
            with np.errstate(divide="ignore", invalid="ignore"):
                a1 = np.where(gap > 0, (u - d2) / gap, 1.0)
                a2 = np.where(gap > 0, (d1 - u) / gap, 0.0)
            mu1 = np.where(gap > 0, -d1, -u)  # equal eigenvalues: one exponential of rate −u
            coef = np.concatenate([w * a1, w * a2], axis=1)
            rates = np.concatenate([mu1, -d2], axis=1)
            return coef, rates

        def freshness_index(self, elapsed) -> np.ndarray:
            """The mean-form index t F(t) − ∫_0^t F at ``elapsed`` days, shape (N,), in days."""
            return self._table.read_signed(self._terms, elapsed)

    return _BurstLearner()
