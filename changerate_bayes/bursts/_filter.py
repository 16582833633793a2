"""``BurstFilter``: the exact posterior of a page's quiet/busy state, crawl by crawl."""

from __future__ import annotations

import numpy as np

from .._rng import as_generator
from .._validation import as_float_array, check_positive_int, page_vector
from ._model import DEFAULT_SCALES, check_params, check_rates_per_page, check_scales

__all__ = ["BurstFilter"]


def _kernels():
    from . import _kernels as k  # compiled (or loaded from numba's cache) on first use

    return k


class BurstFilter:
    """Exact forward filter of a two-state Markov-modulated Poisson process under crawls.

    Each page is quiet or busy (see :class:`BurstParameters`) and is crawled at times of
    the crawler's choosing; a crawl sees only I_k (did the page change since the previous
    crawl) and the interval τ_k. The filter's state per page is the 2-vector
    P(state now | I_1..I_k) (per rate scale, with the log evidence of each scale):
    O(K) numbers per page, updated exactly in O(K) per crawl.

    The object is a replay learner: ``update(changed, interval, mask)``, ``rate`` and
    ``sample(rng)`` (see :mod:`changerate_bayes.replay`), plus
    :meth:`prob_change_within`, the predictive P(change within t | history).

    Parameters
    ----------
    n_pages : int
        Number of pages (>= 1).
    params : BurstParameters
        λ0, λ1, q01, q10 in changes (switches) per time unit of the intervals.
    scales : sequence of float, default (1.0,)
        Per-page rate scales averaged over: under scale s a page follows the MMPP with
        all four rates times s (same shape, another speed). The prior over the scales is
        uniform; each scale keeps its own filter and marginal likelihood (Bayesian model
        averaging, exact). ``(1.0,)`` is one shared parameter set.
    time_scale : float or array_like of shape (n_pages,), optional
        Per-page time unit: page i's rates are ``params`` divided by ``time_scale[i]``
        (for parameters fitted in units of each page's typical crawl interval, pass
        that interval). Default 1.

    Raises
    ------
    TypeError
        If ``params`` is not a BurstParameters, or an argument has the wrong type.
    ValueError
        For ``n_pages`` < 1, scales not > 0 or repeated, a ``time_scale`` not > 0 or of
        the wrong shape.

    Notes
    -----
    With generator Q = [[−q01, q01], [q10, −q10]] and Λ = diag(λ0, λ1), a crawl after τ
    updates the row vector α of state probabilities to α N(τ)/(α N(τ) 1) if it saw no
    change, N(τ) = exp((Q − Λ)τ), and to α C(τ)/(α C(τ) 1) if it saw one,
    C(τ) = exp(Qτ) − N(τ); the crawl's likelihood is the denominator. The predictive
    P(change within t) = α C(t) 1 = 1 − α N(t) 1. Both matrices are 2 x 2 closed forms
    (see :mod:`changerate_bayes.bursts._kernels`), stable for τ → 0 (relative precision
    of P(change) ≈ λτ kept) and τ → ∞. Before its first crawl a page is in the
    stationary distribution.

    References
    ----------
    W. Fischer and K. Meier-Hellstern, "The Markov-modulated Poisson process (MMPP)
    cookbook", Performance Evaluation 18(2), 1993 (the MMPP; exp((Q − Λ)τ) is the
    no-arrival transition matrix, Section 3). S. Särkkä, *Bayesian Filtering and
    Smoothing*, Cambridge University Press 2013, Section 4.2 (filtering equations).

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes import BurstFilter, BurstParameters
    >>> f = BurstFilter(2, params=BurstParameters(0.01, 1.0, 0.05, 0.5))
    >>> f.update(np.array([True, False]), np.array([2.0, 2.0]), np.array([True, True]))
    >>> p = f.prob_change_within(np.array([1.0, 1.0]))
    >>> bool(p[0] > p[1])  # a page that just changed is more likely busy
    True
    """

    def __init__(self, n_pages, *, params, scales=DEFAULT_SCALES, time_scale=None):
        self.n_pages = check_positive_int(n_pages, name="n_pages")
        self.params = check_params(params)
        self.scales = scales
        self._scales, self._log_prior = check_scales(scales)
        n = self.n_pages
        ts = np.ones(n) if time_scale is None else page_vector(time_scale, n, name="time_scale", positive=True)
        self.time_scale = time_scale
        inv = 1.0 / ts
        self._l0, self._l1, self._q01, self._q10 = (
            np.ascontiguousarray(x * inv) for x in check_rates_per_page(params, inv)
        )
        k = self._scales.size
        pb = params.busy_probability
        self.alpha_ = np.empty((n, k, 2))
        self.alpha_[:, :, 0] = 1.0 - pb
        self.alpha_[:, :, 1] = pb
        self.log_evidence_ = np.broadcast_to(self._log_prior, (n, k)).copy()
        self.n_updates_ = np.zeros(n, dtype=np.int64)

    # ------------------------------------------------------------ inputs
    def _vector(self, x, *, name, kind):
        return page_vector(
            x, self.n_pages, name=name, binary=kind == "bool", nonnegative=kind == "nonneg", positive=kind == "pos"
        )

    # ------------------------------------------------------------ updates
    def update(self, changed, interval, mask=None) -> None:
        """Add one crawl of every page in ``mask``.

        Parameters
        ----------
        changed : array_like of {0, 1} or bool, shape (n_pages,) (or scalar)
            I: whether the crawl saw a change since the page's previous crawl.
        interval : array_like of float, shape (n_pages,) (or scalar)
            τ > 0: time since the page's previous crawl (or since the filter started,
            for its first crawl), in the time unit of the rates. Ignored outside ``mask``.
        mask : array_like of bool, shape (n_pages,), optional
            True for the pages crawled now (default all).

        Raises
        ------
        TypeError, ValueError
            For indicators other than 0/1, intervals not > 0 and finite (where
            ``mask``), shapes other than (n_pages,); ValueError also if a crawl is
            impossible under the model (e.g. a change with λ0 = λ1 = 0), naming the page.
        """
        m = np.ones(self.n_pages, dtype=bool) if mask is None else self._vector(mask, name="mask", kind="bool")
        c = self._vector(changed, name="changed", kind="bool")
        tau_in = np.asarray(interval)
        if tau_in.dtype == bool or tau_in.dtype.kind not in "iuf":
            raise TypeError(f"`interval` must be numeric; got dtype {tau_in.dtype}")
        if tau_in.shape == (self.n_pages,):
            tau_in = np.where(m, tau_in, 1.0)  # entries outside the mask are ignored
        tau = self._vector(tau_in, name="interval", kind="pos")
        status = np.zeros(self.n_pages, dtype=np.int8)
        _kernels().stream_update(
            self.alpha_, self.log_evidence_, c, tau, m, self._l0, self._l1, self._q01, self._q10, self._scales, status
        )
        if status.any():
            i = int(np.flatnonzero(status)[0])
            raise ValueError(
                f"page {i}: the crawl (changed={bool(c[i])}, interval={tau[i]:g}) has probability 0 "
                f"under {self.params!r}; the filter state of this page is no longer valid"
            )
        self.n_updates_ += m

    # ------------------------------------------------------------ reading
    def _weights(self) -> np.ndarray:
        lev = self.log_evidence_
        z = np.exp(lev - lev.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    @property
    def scale_weights(self) -> np.ndarray:
        """P(scale | crawls so far), shape (n_pages, K); rows sum to one."""
        return self._weights()

    @property
    def busy_probability(self) -> np.ndarray:
        """P(busy now | crawls so far) (at the last crawl), shape (n_pages,)."""
        return np.einsum("nk,nk->n", self._weights(), self.alpha_[:, :, 1])

    @property
    def rate(self) -> np.ndarray:
        """E[change rate now | crawls so far], per time unit, shape (n_pages,).

        The rate at each page's last crawl: Σ_k P(k) Σ_j P(j | k) s_k λ_j.
        """
        w = self._weights()
        lam = self.alpha_[:, :, 0] * self._l0[:, None] + self.alpha_[:, :, 1] * self._l1[:, None]
        return np.einsum("nk,nk->n", w, lam * self._scales[None, :])

    def sample(self, rng=None) -> np.ndarray:
        """One draw of the current change rate per page (scale, then state, from the posterior).

        Parameters
        ----------
        rng : int, numpy.random.Generator or None

        Returns
        -------
        ndarray of shape (n_pages,)
            s_k λ_j of the drawn scale k and state j, per time unit.
        """
        gen = as_generator(rng)
        n = self.n_pages
        w = self._weights()
        u = gen.random((n, 2))
        k = np.minimum((np.cumsum(w, axis=1) < u[:, :1]).sum(axis=1), w.shape[1] - 1)
        rows = np.arange(n)
        busy = u[:, 1] < self.alpha_[rows, k, 1]
        return np.where(busy, self._l1, self._l0) * self._scales[k]

    def prob_change_within(self, elapsed: np.ndarray) -> np.ndarray:
        """P(at least one change within ``elapsed`` after each page's last crawl | crawls so far).

        Exact under the model: Σ_k P(k) α_k (1 − N_k(t) 1), N_k(t) = exp((Q_k − Λ_k) t).

        Parameters
        ----------
        elapsed : array_like of float, shape (n_pages,) (or scalar, or (n_pages, m))
            t >= 0, time since each page's last crawl (since the start for a page not
            crawled yet), in the time unit of the rates; a 2-D array gives m times per page.

        Returns
        -------
        ndarray of shape (n_pages,) (or (n_pages, m))
            Probabilities in [0, 1], nondecreasing in t; 0 at t = 0.

        Raises
        ------
        TypeError
            If ``elapsed`` is not numeric.
        ValueError
            If a value is negative or not finite, or the shape is not (n_pages,),
            (n_pages, m) or a scalar.
        """
        t = as_float_array(elapsed, name="elapsed", nonnegative=True, ndim=(0, 1, 2))
        n = self.n_pages
        if t.ndim == 2 and t.shape[0] != n:
            raise ValueError(f"`elapsed` must have shape ({n},) or ({n}, m); got {t.shape}")
        if t.ndim == 1 and t.shape != (n,):
            raise ValueError(f"`elapsed` must have shape ({n},) (one time per page); got {t.shape}")
        if t.ndim == 0:
            t2 = np.full((n, 1), float(t))
        else:
            t2 = np.ascontiguousarray(t.reshape(n, -1))
        out = np.empty(t2.shape)
        _kernels().stream_predict(
            self.alpha_, self.log_evidence_, t2, self._l0, self._l1, self._q01, self._q10, self._scales, out
        )
        return out if t.ndim == 2 else out[:, 0]

    def __repr__(self) -> str:
        return f"BurstFilter(n_pages={self.n_pages}, params={self.params!r}, scales={self._scales.tolist()})"
