"""``DynamicRateFilter``: the posterior of a drifting change rate, updated crawl by crawl."""

from __future__ import annotations

import numpy as np

from .._rng import as_generator
from .._validation import as_float_array, check_open_unit, check_positive_int, page_vector
from ._model import UNIT_FREE_SIGMAS, check_prior, check_sigmas, make_lattice, page_chunks, rounded_intervals

__all__ = ["DynamicRateFilter"]


def mixture_weights(log_ev: np.ndarray) -> np.ndarray:
    """Posterior weights of the volatilities from their log marginal likelihoods (axis 0)."""
    z = log_ev - log_ev.max(axis=0, keepdims=True)
    w = np.exp(z)
    return w / w.sum(axis=0, keepdims=True)


def lattice_quantiles(m: np.ndarray, u0: float, h: float, probs: np.ndarray) -> np.ndarray:
    """Quantiles of Δ under node probabilities ``m`` (n, G), each node's mass spread
    uniformly over its cell of log Δ; ``probs`` of shape (Q,) or (n, Q). Returns (n, Q)."""
    n, g = m.shape
    cdf = np.cumsum(m, axis=1)
    cdf /= cdf[:, -1:]
    probs = np.broadcast_to(np.asarray(probs, dtype=np.float64), (n, np.shape(probs)[-1]))
    j = np.minimum(np.sum(cdf[:, None, :] < probs[:, :, None], axis=2), g - 1)
    rows = np.arange(n)[:, None]
    below = np.where(j > 0, cdf[rows, j - 1], 0.0)
    mass = m[rows, j] / np.sum(m, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.where(mass > 0, (probs - below) / mass, 0.5)
    frac = np.clip(frac, 0.0, 1.0)
    return np.exp(u0 + (j - 0.5 + frac) * h)


class DynamicRateFilter:
    """Posterior of a change rate that drifts in time, updated crawl by crawl.

    The model: u_t = log Δ_t follows a Gaussian random walk, u_{t+τ} − u_t ~ N(0, σ²τ),
    and the crawl that ends an interval of length τ_k sees a change with probability
    P(I_k = 1 | Δ, τ_k) = 1 − e^{−Δτ_k}, Δ the rate at the end of the interval (the walk
    is held constant within an interval; exact for σ = 0). The posterior of log Δ is
    kept on an equally spaced lattice (a point-mass filter): O(G) memory per page and
    volatility, updated exactly on the lattice by forward filtering.

    Parameters
    ----------
    n_pages : int, optional
        Number of pages tracked at once; None (default) for one page, whose
        properties are then scalars.
    sigma : float or sequence of float, optional
        Volatility σ >= 0 of log Δ, per √(time unit of the intervals): over an interval
        τ, log Δ moves by a normal step of standard deviation σ√τ (so drift grows with
        elapsed time, not with the number of crawls). With intervals in hours,
        σ = 0.1 means a typical factor e^{0.1·√24} ≈ 1.6 per day. A sequence is averaged
        over by Bayesian model averaging: each σ keeps its own filter and its marginal
        likelihood, the weights are updated after every crawl (uniform prior over the
        values given); see :attr:`sigma_weights`. σ = 0 is the static model of
        :func:`changerate_bayes.posterior` on the lattice. Default (None): unit-free,
        σ = c/√m_i averaged over c in (0, 0.01, 0.03, 0.1, 0.3, 1), m_i page i's typical
        crawl interval (``typical_interval``, rounded to 1/8 of an octave), so the
        largest lets log Δ move by about 1 per typical interval.
    typical_interval : float or array_like of shape (n_pages,), optional
        m_i for the default ``sigma``, in the time unit of the intervals (e.g. the
        crawler's planned interval). Default: each page's first crawl interval (a
        streaming filter has not seen the later ones; :func:`dynamic_posterior` uses
        the median of all of them). Only with ``sigma=None``.
    prior : GammaPrior, LogNormalPrior or BetaPrimePrior, optional
        Prior on Δ at the first crawl. Default ``LogNormalPrior(0, 3)`` (log Δ ~
        Normal(0, 3), Δ per time unit). A BetaPrimePrior needs ``crawl_rate``.
    grid : int or array_like of float, optional
        The lattice: a number of nodes (default 200) spanning the prior's quantiles
        1e-6 to 1 − 1e-6 in log Δ (at most 30 units of log Δ), or increasing rates
        equally spaced in log Δ (e.g. ``numpy.geomspace(1e-4, 1e2, 200)``), in changes
        per time unit. The posterior is confined to the lattice: choose it to cover the
        rates the pages can have.
    crawl_rate : float or array_like of shape (n_pages,), optional
        p, for a prior on Δ/p only.

    Raises
    ------
    TypeError
        For arguments of the wrong type.
    ValueError
        For a bad ``n_pages``, a negative or repeated σ, an improper prior, a bad grid,
        or, with the default grid, a prior whose median rate is outside 1e-300..1e300
        per time unit or whose 30 units of log Δ around the median hold less than half
        its mass (e.g. ``GammaPrior(1e-3, 1)``): pass ``grid`` then.

    Notes
    -----
    One crawl with interval τ costs O(G · (2B + 1)) per page and volatility, B ≈ 6σ√τ/h
    the half-width of the random-walk kernel in nodes (h the lattice spacing) but at
    most G − 1, and O(G) for σ = 0: bounded whatever σ and τ are. As σ√τ grows past the
    lattice's width the transition tends to the uniform distribution on the lattice. The random walk on the lattice is the continuous-time
    nearest-neighbour walk whose transition over τ is the discrete Gaussian kernel
    e^{−t} I_n(t), t = σ²τ/h² (Lindeberg 1990): its variance is σ²τ exactly and two
    steps τ₁, τ₂ equal one step τ₁ + τ₂; it tends to the Gaussian walk as h → 0. Mass
    that would leave the lattice is kept at its ends (columns renormalised).

    References
    ----------
    Avrachenkov, Patil & Thoppe, "Online algorithms for estimating change rates of web
    pages", Section 3.1 (P(I = 1 | τ) = 1 − e^{−Δτ}). S. Särkkä, *Bayesian Filtering
    and Smoothing*, Cambridge University Press 2013, Section 4.2 (Bayesian filtering
    equations) and 8.1 (smoothing equations). R. S. Bucy and K. D. Senne, "Digital
    synthesis of non-linear filters", Automatica 7, 1971 (point-mass filters).
    T. Lindeberg, "Scale-space for discrete signals", IEEE PAMI 12(3), 1990 (the
    discrete Gaussian kernel). J. A. Hoeting et al., "Bayesian model averaging: a
    tutorial", Statistical Science 14(4), 1999.

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes import DynamicRateFilter, GammaPrior
    >>> f = DynamicRateFilter(sigma=0.0, prior=GammaPrior(2.0, 1.0), grid=np.geomspace(1e-6, 1e2, 400))
    >>> f.update(False, 3.0)  # one crawl after 3 hours, no change: Gamma(2, 4) exactly
    >>> round(float(f.rate), 6)
    0.5
    """

    def __init__(self, n_pages=None, *, sigma=None, prior=None, grid=None, crawl_rate=None, typical_interval=None):
        self._single = n_pages is None
        n = 1 if n_pages is None else check_positive_int(n_pages, name="n_pages")
        self.n_pages = None if self._single else n
        self._n = n
        self._unit_free = sigma is None
        self._sigmas = check_sigmas(UNIT_FREE_SIGMAS if self._unit_free else sigma)
        # the rounded typical interval of each page (NaN until known), unit-free σ only
        self._typical = np.full(n, np.nan)
        if typical_interval is not None:
            if not self._unit_free:
                raise TypeError("`typical_interval` is only for the default (unit-free) `sigma=None`")
            self._typical = rounded_intervals(page_vector(typical_interval, n, name="typical_interval", positive=True))
        p = None if crawl_rate is None else as_float_array(crawl_rate, name="crawl_rate", positive=True, ndim=(0, 1))
        if p is not None and p.ndim == 1 and p.shape != (n,):
            raise ValueError(f"`crawl_rate` must be a scalar or have shape ({n},); got {p.shape}")
        self.prior = check_prior(prior, p)
        self._lattice = make_lattice(grid, self.prior, p, n)
        w0 = self._lattice.prior_weights(n)
        self._w = np.repeat(w0[None], self._sigmas.size, axis=0)
        self._log_ev = np.zeros((self._sigmas.size, n))
        self.n_updates = np.zeros(n, dtype=np.int64)

    # ------------------------------------------------------------ inputs
    def _vector(self, x, *, name, dtype=np.float64, positive=False):
        if x is None:
            raise TypeError(f"`{name}` is required")
        return page_vector(x, self._n, name=name, binary=dtype is bool, positive=positive)

    def _out(self, a):
        return a[0] if self._single else a

    # ------------------------------------------------------------ updates
    def update(self, changed, interval, mask=None) -> None:
        """Add one crawl of every page (of the pages in ``mask``).

        Parameters
        ----------
        changed : array_like of {0, 1} or bool, shape (n_pages,) (or scalar)
            I_k: whether the crawl saw a change since the page's previous crawl.
        interval : array_like of float, shape (n_pages,) (or scalar)
            τ_k > 0: time since the page's previous crawl (or since the start of
            observation, for its first crawl), in the time unit of σ and Δ.
        mask : array_like of bool, shape (n_pages,), optional
            False where the page was not crawled this step: its state is untouched
            (and its ``changed``/``interval`` entries are ignored). Default: all pages.

        Raises
        ------
        TypeError, ValueError
            For inputs of the wrong type, shape or value (τ must be > 0 and finite
            where ``mask`` is True). ValueError also when a crawl is impossible on the
            lattice (every node gives it probability 0 in float64): widen ``grid``.
        """
        mask = np.ones(self._n, dtype=bool) if mask is None else self._vector(mask, name="mask", dtype=bool)
        changed_in = np.asarray(changed) if changed is not None else None
        if changed_in is not None and changed_in.dtype.kind in "biuf" and changed_in.shape == (self._n,):
            changed_in = np.where(mask, changed_in, 0)  # entries of pages not crawled are neither used nor checked
        changed = self._vector(changed_in, name="changed", dtype=bool)
        tau_in = np.asarray(interval)
        if tau_in.dtype.kind in "iuf" and tau_in.ndim in (0, 1):
            tau_checked = np.where(mask, tau_in, 1.0) if tau_in.ndim == 1 and tau_in.shape == (self._n,) else tau_in
        else:
            tau_checked = tau_in
        tau = self._vector(tau_checked, name="interval", positive=True)
        status = np.zeros(self._n, dtype=np.int8)
        lat = self._lattice
        from . import _kernels  # numba is imported on first use

        if self._unit_free:
            first = mask & np.isnan(self._typical)
            self._typical[first] = rounded_intervals(tau[first])
        for sel, sig in self._groups(mask, tau):
            # Ctrl-C is acted on between chunks of pages
            for a, b in page_chunks(self._n, sig.size * lat.u.size, max_pages=None):
                _kernels.stream_update(
                    self._w, self._log_ev, changed, tau, sel, lat.rates, 2.0 * np.log(lat.h), sig, status, a, b
                )
        if status.any():
            i = int(np.flatnonzero(status)[0])
            raise ValueError(
                f"page {i}: the crawl (changed={bool(changed[i])}, interval={tau[i]:g}) has probability 0 at every "
                f"lattice node [{lat.rates[0]:.3g}, {lat.rates[-1]:.3g}]: widen `grid`; the filter state of this "
                "page is no longer valid"
            )
        self.n_updates += mask

    def _groups(self, mask, tau):
        """(pages, σ) pairs covering ``mask``: one for an absolute σ; with the unit-free
        default, one per rounded typical interval (a page without one yet uses ``tau``)."""
        if not self._unit_free:
            return [(mask, self._sigmas)]
        m = np.where(np.isnan(self._typical), rounded_intervals(tau), self._typical)
        values = np.unique(m[mask])
        return [(mask & (m == v), self._sigmas / np.sqrt(v)) for v in values]

    # ------------------------------------------------------------ reading
    @property
    def sigmas(self) -> np.ndarray:
        """The volatilities averaged over, shape (S,): per √time unit, or with the default
        ``sigma=None`` the unit-free c, per √(typical interval)."""
        return self._sigmas.copy()

    @property
    def typical_interval(self):
        """The rounded typical interval m_i of the unit-free default (NaN before a page's
        first crawl; all NaN for an absolute ``sigma``): float or (n_pages,)."""
        return self._out(self._typical.copy())

    @property
    def grid(self) -> np.ndarray:
        """The lattice rates Δ_i, shape (G,)."""
        return self._lattice.rates.copy()

    @property
    def sigma_weights(self) -> np.ndarray:
        """Posterior probability of each volatility given the crawls so far.

        Shape (S,) for one page, (n_pages, S) for many; rows sum to one.
        """
        return self._out(mixture_weights(self._log_ev).T)

    @property
    def log_evidence(self) -> np.ndarray:
        """Log marginal likelihood of the crawls so far under each σ: (S,) or (n_pages, S)."""
        return self._out(self._log_ev.T.copy())

    def node_probabilities(self) -> np.ndarray:
        """Posterior probabilities of the lattice nodes, averaged over σ: (G,) or (n_pages, G)."""
        pi = mixture_weights(self._log_ev)
        return self._out(np.einsum("sn,sng->ng", pi, self._w))

    @property
    def rate(self):
        """Posterior mean of Δ now (after the last crawl), per time unit: float or (n_pages,)."""
        m = np.einsum("sn,sng->ng", mixture_weights(self._log_ev), self._w)
        return self._out(m @ self._lattice.rates / m.sum(axis=1))

    def credible_interval(self, level: float = 0.9):
        """Equal-tailed credible interval of Δ now.

        Parameters
        ----------
        level : float in (0, 1), default 0.9

        Returns
        -------
        ndarray
            Shape (2,) for one page, (n_pages, 2) for many: lower and upper bounds.
        """
        level = check_open_unit(level, name="level")
        m = np.einsum("sn,sng->ng", mixture_weights(self._log_ev), self._w)
        probs = np.array([(1 - level) / 2, (1 + level) / 2])
        return self._out(lattice_quantiles(m, self._lattice.u[0], self._lattice.h, probs))

    def predict_change_probability(self, interval):
        """P(I = 1 | crawls so far) for a crawl ``interval`` after each page's last crawl.

        The one-step predictive: Σ_σ w_σ Σ_i (K_{σ,τ} w)_i (1 − e^{−Δ_i τ}), i.e. the
        rate diffuses by the random walk over τ before the crawl is made.

        Parameters
        ----------
        interval : float or array_like of shape (n_pages,)
            τ > 0, in the time unit of Δ.

        Returns
        -------
        float or ndarray of shape (n_pages,)
        """
        tau = self._vector(interval, name="interval", positive=True)
        out = np.empty((self._sigmas.size, self._n))
        lat = self._lattice
        from . import _kernels  # numba kernels: loaded on first use, nothing compiled at import

        for sel, sig in self._groups(np.ones(self._n, dtype=bool), tau):
            part = np.empty_like(out)
            # Ctrl-C is acted on between chunks of pages
            for a, b in page_chunks(self._n, sig.size * lat.u.size, max_pages=None):
                _kernels.stream_predict(self._w, tau, lat.rates, 2.0 * np.log(lat.h), sig, part, a, b)
            out[:, sel] = part[:, sel]
        pi = mixture_weights(self._log_ev)
        return self._out(np.sum(pi * out, axis=0))

    def sample(self, rng=None):
        """One draw of Δ now per page (e.g. for Thompson sampling).

        Parameters
        ----------
        rng : int, numpy.random.Generator or None

        Returns
        -------
        float or ndarray of shape (n_pages,)
        """
        gen = as_generator(rng)
        m = np.einsum("sn,sng->ng", mixture_weights(self._log_ev), self._w)
        q = lattice_quantiles(m, self._lattice.u[0], self._lattice.h, gen.random((self._n, 1)))
        return self._out(q[:, 0])

    def __repr__(self) -> str:
        return (
            f"DynamicRateFilter(n_pages={self.n_pages}, sigma={self._sigmas.tolist()}, prior={self.prior!r}, "
            f"grid={self._lattice.u.size} nodes [{self._lattice.rates[0]:.3g}, {self._lattice.rates[-1]:.3g}])"
        )
