"""Estimation of (Δ, q, ν) per page: maximum likelihood by EM, and the Bayesian posterior.

Both work on the complete data of the model: per crawl interval, the signalled changes S,
the unsignalled changes U and the false signals F = n − S. Given them, the likelihood
factorises into three Poisson likelihoods,

    s^{ΣS} e^{−sT} · u^{ΣU} e^{−uT_c} · ν^{ΣF} e^{−νT},

of the signalled-change rate s = qΔ, the unsignalled-change rate u = (1 − q)Δ and the
false-signal rate ν (T: the observed time, tail after the last crawl included; T_c: the
crawled time, where unsignalled changes leave a trace). An interval with I = 0 has
S = U = 0. An interval with I = 1 and n signals has S ~ Binomial(n, π) and
U ~ Poisson(uτ) conditioned on S + U >= 1, with π = s/(s + ν); the tail's m signals have
S ~ Binomial(m, π). So

- **EM** (Dempster, Laird & Rubin 1977): with P0 = (1 − π)^n e^{−uτ},
  E[S | I = 1] = nπ/(1 − P0) and E[U | I = 1] = uτ/(1 − P0); the M-step is
  s = ΣE[S]/T, ν = (N − ΣE[S])/T, u = ΣE[U]/T_c.
- **Gibbs sampling** (data augmentation, Tanner & Wong 1987): with independent Gamma
  priors on s, u and ν, the rates given the latent counts are Gamma, and the latent
  counts given the rates are drawn exactly (by inversion of their distribution functions
  at uniforms of the generator, in one compiled pass per draw: :mod:`._gibbs_kernels`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import special

from .._rng import as_generator
from .._validation import check_positive_int
from ._data import SignalData
from ._model import signal_log_likelihood

__all__ = [
    "SignalPrior",
    "SignalMLE",
    "SignalPosterior",
    "signal_mle",
    "pooled_signal_prior",
    "signal_posterior",
]

QUANTITIES = ("change_rate", "recall", "precision", "false_rate")


@dataclass(frozen=True)
class SignalPrior:
    """Prior of (Δ, q, ν): Δ ~ Gamma(a + b, change_b), q ~ Beta(a, b), ν ~ Gamma(false_shape, false_b).

    Δ and q are independent, and so, by the Beta–Gamma algebra, are the signalled-change
    rate qΔ ~ Gamma(a, change_b) and the unsignalled-change rate (1 − q)Δ ~ Gamma(b,
    change_b): the priors of the three rates of the model are independent Gammas, which
    makes them conjugate to the complete data.

    Parameters
    ----------
    recall_a, recall_b : float
        Beta parameters of the recall q (>= 0, not both 0). ``recall_a = 0`` means q = 0
        (signals carry no information), ``recall_b = 0`` means q = 1 (every change is
        signalled).
    change_b : float
        Rate parameter of Δ's Gamma prior, days (> 0): prior mean of Δ is
        (a + b)/change_b per day.
    false_shape : float
        Shape of ν's Gamma prior (>= 0; 0 means ν = 0, no false signal).
    false_b : float
        Rate parameter of ν's Gamma prior, days (> 0).

    Raises
    ------
    ValueError
        If a parameter is negative, not finite, or the rates are not positive.

    Examples
    --------
    >>> from changerate_bayes.signals import SignalPrior
    >>> p = SignalPrior(recall_a=9.0, recall_b=1.0, change_b=20.0, false_shape=1.0, false_b=1.0)
    >>> p.mean_change_rate, p.mean_recall
    (0.5, 0.9)
    """

    recall_a: float
    recall_b: float
    change_b: float
    false_shape: float
    false_b: float

    def __post_init__(self):
        for name in ("recall_a", "recall_b", "false_shape"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float, np.floating, np.integer)) and np.isfinite(v) and v >= 0):
                raise ValueError(f"`{name}` must be a finite number >= 0; got {v!r}")
        for name in ("change_b", "false_b"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float, np.floating, np.integer)) and np.isfinite(v) and v > 0):
                raise ValueError(f"`{name}` must be a finite number > 0 (days); got {v!r}")
        if self.recall_a + self.recall_b == 0:
            raise ValueError("`recall_a` and `recall_b` must not both be 0")

    @property
    def mean_change_rate(self) -> float:
        """Prior mean of Δ, per day."""
        return float((self.recall_a + self.recall_b) / self.change_b)

    @property
    def mean_recall(self) -> float:
        """Prior mean of q."""
        return float(self.recall_a / (self.recall_a + self.recall_b))


def _check_data(data) -> SignalData:
    if not isinstance(data, SignalData):
        raise TypeError(f"`data` must be a SignalData; got {type(data).__name__}")
    return data


@dataclass(frozen=True)
class _Flat:
    """The intervals that saw a change (the only ones with latent counts), and totals."""

    page: np.ndarray
    tau: np.ndarray
    n: np.ndarray
    time: np.ndarray
    crawled: np.ndarray
    signals: np.ndarray
    tail_signals: np.ndarray


def _flat(data: SignalData) -> _Flat:
    hit = data.changed > 0
    tot = data.totals()
    return _Flat(
        data.page_index()[hit],
        data.intervals[hit],
        data.signals[hit].astype(np.float64),
        tot["time"],
        tot["crawled_time"],
        tot["signals"],
        data.tail_signals.astype(np.float64),
    )


def _expected_latent(s, u, nu, f: _Flat):
    """E[ΣS] and E[ΣU] per page (EM's E-step), given the rates of shape (n_pages,)."""
    n_pages = s.shape[-1]
    lam = s + nu
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = np.where(lam > 0, s / lam, 0.0)
        log_false = np.log1p(-pi)
    # log P(S = 0) = n log(1 − π); 0 without signals, also where π = 1 (ν = 0: log(1 − π) = −∞)
    a = np.zeros(f.n.shape)
    np.multiply(f.n, log_false[f.page], out=a, where=f.n > 0)
    mu = u[f.page] * f.tau
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = -np.expm1(a - mu)  # 1 − P0
        es = np.where(f.n > 0, f.n * pi[f.page] / denom, 0.0)
        eu = mu / denom
    s_sum = np.bincount(f.page, weights=es, minlength=n_pages) + f.tail_signals * pi
    u_sum = np.bincount(f.page, weights=eu, minlength=n_pages)
    return s_sum, u_sum


@dataclass(frozen=True)
class SignalMLE:
    """Maximum-likelihood estimates of each page's (Δ, q, ν), with Wald intervals.

    Attributes
    ----------
    change_rate, recall, false_rate, precision : ndarray of shape (n_pages,)
        Δ̂ (per day), q̂, ν̂ (per day) and π̂ = q̂Δ̂/(q̂Δ̂ + ν̂). π̂ is NaN, undefined, for
        a page with no signal at all: there q̂Δ̂ = ν̂ = 0 and π̂ = 0/0 (no signal, so no
        estimate of the share of true ones); q̂ is 0 there. For a page with
        ``converged`` False the values are the last EM iterate (see :func:`signal_mle`).
    covariance : ndarray of shape (n_pages, 3, 3)
        Inverse observed information in (log Δ, logit q, log ν); NaN where the estimate
        is on the boundary (q̂ in {0, 1} or ν̂ = 0), where it is not defined.
    iterations : int
        EM iterations run.
    converged : ndarray of bool, shape (n_pages,)
        Whether the rates moved by less than ``tol`` (relative) in the last iteration.
    """

    change_rate: np.ndarray
    recall: np.ndarray
    false_rate: np.ndarray
    precision: np.ndarray
    covariance: np.ndarray
    iterations: int
    converged: np.ndarray

    def interval(self, level: float = 0.9) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Wald intervals from the observed information, on the log / logit scale.

        Parameters
        ----------
        level : float, default 0.9
            Coverage, in (0, 1).

        Returns
        -------
        dict
            ``change_rate``, ``recall``, ``false_rate``: (lower, upper), each of shape
            (n_pages,); NaN where ``covariance`` is NaN.
        """
        if not 0 < level < 1:
            raise ValueError(f"`level` must be in (0, 1); got {level}")
        z = special.ndtri(0.5 + level / 2)
        se = np.sqrt(np.diagonal(self.covariance, axis1=1, axis2=2))
        with np.errstate(divide="ignore"):
            x = np.stack([np.log(self.change_rate), special.logit(self.recall), np.log(self.false_rate)], axis=1)
        lo, hi = x - z * se, x + z * se
        return {
            "change_rate": (np.exp(lo[:, 0]), np.exp(hi[:, 0])),
            "recall": (special.expit(lo[:, 1]), special.expit(hi[:, 1])),
            "false_rate": (np.exp(lo[:, 2]), np.exp(hi[:, 2])),
        }


def _observed_information_inverse(delta, q, nu, data: SignalData, step: float = 1e-4) -> np.ndarray:
    """Inverse of the Hessian of −log L in x = (log Δ, logit q, log ν), by central differences."""
    n_pages = data.n_pages
    cov = np.full((n_pages, 3, 3), np.nan)
    interior = (q > 0) & (q < 1) & (nu > 0) & (delta > 0)
    if not interior.any():
        return cov
    with np.errstate(divide="ignore"):
        x0 = np.stack([np.log(delta), special.logit(q), np.log(nu)])  # (3, n_pages)
    x0 = np.where(interior, x0, 0.0)
    shifts = [np.zeros(3)]
    for i in range(3):
        for j in range(i, 3):
            for si in (1, -1):
                for sj in (1, -1):
                    e = np.zeros(3)
                    e[i] += si * step
                    e[j] += sj * step
                    shifts.append(e)
    shifts_arr = np.array(shifts)  # (S, 3)
    x = x0[None, :, :] + shifts_arr[:, :, None]
    ll = signal_log_likelihood(np.exp(x[:, 0]), special.expit(x[:, 1]), np.exp(x[:, 2]), data)  # (S, n_pages)
    hess = np.empty((n_pages, 3, 3))
    k = 1
    for i in range(3):
        for j in range(i, 3):
            pp, pm, mp, mm = ll[k], ll[k + 1], ll[k + 2], ll[k + 3]
            k += 4
            hess[:, i, j] = hess[:, j, i] = (pp - pm - mp + mm) / (4 * step * step)
    info = -hess[interior]
    with np.errstate(invalid="ignore"):
        det = np.linalg.det(info)
    ok = np.isfinite(det) & (det > 0)
    inv = np.full_like(info, np.nan)
    inv[ok] = np.linalg.inv(info[ok])
    cov[interior] = inv
    return cov


def signal_mle(data: SignalData, *, max_iter: int = 20_000, tol: float = 1e-10) -> SignalMLE:
    """Maximum-likelihood estimates of (Δ, q, ν) for every page, by EM.

    Parameters
    ----------
    data : SignalData
        Every page needs at least one crawl interval (Δ and q are not identified
        without one).
    max_iter : int, default 20000
        EM iterations at most (all pages at once). Near the boundary (q̂ = 1 or ν̂ = 0)
        EM converges slowly; the estimate there is still within ``tol``-size steps.
    tol : float, default 1e-10
        Stop when no page's rate moved by more than ``tol`` times itself (or times
        1/T, T the page's observed days, for a rate near 0) in an iteration.

    Returns
    -------
    SignalMLE
        Pages whose EM did not converge in ``max_iter`` iterations have
        ``converged`` False and hold the last EM iterate: its likelihood is above the
        start's (EM never lowers it) but not the maximum; typically a boundary estimate
        (q̂ → 1 or ν̂ → 0) still moving towards it by small steps.

    Raises
    ------
    TypeError
        If ``data`` is not a SignalData.
    ValueError
        If a page has no crawl interval.

    Warns
    -----
    RuntimeWarning
        If some pages did not converge, naming how many.

    Notes
    -----
    Each EM step increases every page's likelihood (module docstring). Start: half of
    the signals true, and u from the changes not explained by them. The Wald intervals of
    :meth:`SignalMLE.interval` use the observed information by central differences of
    :func:`signal_log_likelihood`; they are approximate (asymptotic).

    References
    ----------
    Dempster, Laird & Rubin (1977), "Maximum likelihood from incomplete data via the EM
    algorithm"; the model of Busa-Fekete et al. (WWW 2025).

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes.signals import simulate_signal_pages, signal_mle
    >>> d = simulate_signal_pages(0.5, 0.7, 1.0, horizon=2000.0, crawl_interval=1.0, rng=1)
    >>> fit = signal_mle(d)
    >>> bool(abs(fit.change_rate[0] - 0.5) < 0.1 and abs(fit.recall[0] - 0.7) < 0.15)
    True
    """
    data = _check_data(data)
    max_iter = check_positive_int(max_iter, name="max_iter")
    if (data.lengths == 0).any():
        i = int(np.flatnonzero(data.lengths == 0)[0])
        raise ValueError(f"`data`: page {i} has no crawl interval, so its change rate and recall are not identified")
    f = _flat(data)
    n_pages = data.n_pages
    changes = data.totals()["changes_seen"]
    lam = (f.signals + 0.5) / f.time
    s, nu = lam / 2, lam / 2
    u = (changes + 0.5) / f.crawled
    converged = np.zeros(n_pages, dtype=bool)
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007 - EM iterations (all pages at once)
        s_sum, u_sum = _expected_latent(s, u, nu, f)
        old = np.stack([s, u, nu])
        s = s_sum / f.time
        nu = np.maximum(f.signals - s_sum, 0.0) / f.time
        u = u_sum / f.crawled
        new = np.stack([s, u, nu])
        converged = (np.abs(new - old) <= tol * np.maximum(new, 1.0 / f.time)).all(axis=0)
        if converged.all():
            break
    delta = s + u
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(delta > 0, s / delta, 0.0)
        precision = np.where(s + nu > 0, s / (s + nu), np.nan)
    cov = _observed_information_inverse(delta, q, nu, data)
    if not converged.all():
        warnings.warn(
            f"signal_mle: {int(np.count_nonzero(~converged))} of {n_pages} pages did not converge in "
            f"{it} EM iterations (`max_iter`); their estimates are the last EM iterate (a higher "
            "likelihood than the start, not the maximum), see `converged`",
            RuntimeWarning,
            stacklevel=2,
        )
    return SignalMLE(delta, q, nu, precision, cov, it, converged)


def _gamma_moments(x, exposure, *, min_shape: float, max_shape: float):
    """(shape, rate) of a Gamma population of rates from Poisson-like counts x over exposures."""
    m = x.sum() / exposure.sum()
    spread = (exposure * (x / exposure - m) ** 2).sum() - x.size * m
    var = max(spread / exposure.sum(), m * m / max_shape)
    shape = min(max(m * m / var, min_shape), max_shape)
    return shape, shape / m


def pooled_signal_prior(data: SignalData, *, min_shape: float = 0.1, max_shape: float = 1e3) -> SignalPrior:
    """A prior for all pages, fitted to them: empirical Bayes by moment matching.

    Parameters
    ----------
    data : SignalData
        At least 2 pages, each with a crawl interval, with some signal and some change
        seen in all.
    min_shape, max_shape : float, default 0.1, 1000
        Bounds on the fitted Gamma shapes (and on recall_a, recall_b).

    Returns
    -------
    SignalPrior

    Raises
    ------
    ValueError
        If fewer than 2 pages, or no page saw a signal or a change.

    Notes
    -----
    Each page's complete-data counts are imputed at its maximum-likelihood estimate
    (:func:`signal_mle`): E[ΣS], E[ΣU], N − E[ΣS]. For a Gamma(a, b) population of rates
    r_i and Poisson counts X_i over exposures E_i, E[X_i/E_i] = a/b and
    Σ E_i (X_i/E_i − m)² has expectation ΣE_i·Var r + n·m, so the population's mean and
    variance are matched with those of the counts (the negative-binomial moment method).
    Δ = s + u is matched as one Gamma (rate ``change_b``), and split into recall_a and
    recall_b by the pooled share of signalled changes; ν as another. This is an
    approximation (plug-in counts, moments, the recall's spread tied to Δ's); the
    hierarchical model with these as hyperparameters would be the exact alternative.

    Examples
    --------
    >>> from changerate_bayes.signals import simulate_signal_pages, pooled_signal_prior
    >>> d = simulate_signal_pages([0.2, 0.5, 1.0, 2.0], 0.8, 1.0, horizon=500.0, crawl_interval=1.0, rng=2)
    >>> p = pooled_signal_prior(d)
    >>> bool(0.5 < p.mean_change_rate < 1.5 and 0.6 < p.mean_recall < 0.95)
    True
    """
    data = _check_data(data)
    if data.n_pages < 2:
        raise ValueError(f"`data` must hold at least 2 pages to pool; got {data.n_pages}")
    tot = data.totals()
    if tot["signals"].sum() == 0 or tot["changes_seen"].sum() == 0:
        raise ValueError("`data`: no page saw a signal or no page saw a change; nothing to pool")
    with warnings.catch_warnings():  # a plug-in for moments: the last EM iterate serves
        warnings.simplefilter("ignore", RuntimeWarning)
        fit = signal_mle(data, max_iter=2000, tol=1e-8)
    f = _flat(data)
    s_sum, u_sum = _expected_latent(fit.recall * fit.change_rate, (1 - fit.recall) * fit.change_rate, fit.false_rate, f)
    # Δ's exposure: the crawled time (where both kinds of change are seen)
    shape, rate = _gamma_moments(s_sum + u_sum, f.crawled, min_shape=min_shape, max_shape=max_shape)
    share = s_sum.sum() / (s_sum.sum() + u_sum.sum())
    a = min(max(shape * share, min_shape), max_shape)
    b = min(max(shape * (1 - share), min_shape), max_shape)
    c, d = _gamma_moments(np.maximum(f.signals - s_sum, 0.0), f.time, min_shape=min_shape, max_shape=max_shape)
    return SignalPrior(float(a), float(b), float(rate), float(c), float(d))


@dataclass(frozen=True)
class SignalPosterior:
    """Posterior draws of every page's rates (from :func:`signal_posterior`).

    Attributes
    ----------
    signalled, unsignalled, false_rate : ndarray of shape (chains, draws, n_pages)
        Draws of s = qΔ, u = (1 − q)Δ and ν, per day.
    prior : SignalPrior
    tail_time : ndarray of shape (n_pages,)
        Days after the last crawl in the data the posterior conditions on.
    tail_signals : ndarray of shape (n_pages,)
        Signals in that time.
    """

    signalled: np.ndarray
    unsignalled: np.ndarray
    false_rate: np.ndarray
    prior: SignalPrior
    tail_time: np.ndarray
    tail_signals: np.ndarray

    def draws(self, quantity: str) -> np.ndarray:
        """Draws of ``change_rate`` (Δ), ``recall`` (q), ``precision`` or ``false_rate`` (ν).

        Returns
        -------
        ndarray of shape (chains, draws, n_pages)
        """
        s, u, nu = self.signalled, self.unsignalled, self.false_rate
        with np.errstate(invalid="ignore", divide="ignore"):
            values = {
                "change_rate": s + u,
                "recall": np.where(s + u > 0, s / (s + u), self.prior.mean_recall),
                "precision": np.where(s + nu > 0, s / (s + nu), 0.0),
                "false_rate": nu,
            }
        if quantity not in values:
            raise ValueError(f"`quantity` must be one of {QUANTITIES}; got {quantity!r}")
        return values[quantity]

    def summary(self, level: float = 0.9):
        """Posterior mean and equal-tailed interval of Δ, q, precision and ν per page.

        Parameters
        ----------
        level : float, default 0.9
            Probability of the interval, in (0, 1).

        Returns
        -------
        pandas.DataFrame
            One row per page; columns ``<quantity>_mean``, ``<quantity>_lower``,
            ``<quantity>_upper`` for change_rate (per day), recall, precision and
            false_rate (per day).
        """
        import pandas as pd  # pandas: loaded on first use

        if not 0 < level < 1:
            raise ValueError(f"`level` must be in (0, 1); got {level}")
        cols = {}
        for name in QUANTITIES:
            x = self.draws(name).reshape(-1, self.signalled.shape[-1])
            lo, hi = np.quantile(x, [(1 - level) / 2, (1 + level) / 2], axis=0)
            cols[f"{name}_mean"], cols[f"{name}_lower"], cols[f"{name}_upper"] = x.mean(axis=0), lo, hi
        return pd.DataFrame(cols)


_KERNELS: dict = {}


def _kernels():
    """The numba kernels module, compiled (or loaded from numba's cache) on first call."""
    if not _KERNELS:
        from . import _gibbs_kernels as k

        _KERNELS["module"] = k
    return _KERNELS["module"]


def _latent_layout(f: _Flat, n_pages: int) -> tuple:
    """The kernel's view of the changed intervals, computed once per sampler run.

    (each page's first changed interval, n_pages + 1 of them; τ; signals as int64; each
    interval's first uniform in a row — one without signals, two with —; the uniforms per
    row; the tail's signals as int64). The intervals are in page order (``_flat``).
    """
    per = np.where(f.n > 0, 2, 1)
    offset = np.zeros(per.size, dtype=np.int64)
    np.cumsum(per[:-1], out=offset[1:])
    return (
        np.searchsorted(f.page, np.arange(n_pages + 1)).astype(np.int64),
        np.ascontiguousarray(f.tau, dtype=np.float64),
        f.n.astype(np.int64),
        offset,
        int(per.sum()),
        f.tail_signals.astype(np.int64),
    )


def _draw_latent(gen, s, u, nu, f: _Flat, n_pages: int, layout=None):
    """One Gibbs draw of ΣS and ΣU per (chain, page) given the rates (chains, n_pages).

    By inversion at uniforms from ``gen``, in one pass (:mod:`._gibbs_kernels`): per changed
    interval, whether S = 0 (probability P(S = 0) P(U >= 1)/P(S + U >= 1)); if so U ~
    Poisson(uτ) given U >= 1; if not the first true signal J (truncated geometric), with the
    rest of S Binomial(n − J, π) and U ~ Poisson(uτ), which are summed per page and drawn
    as one binomial (with the tail's Binomial(m, π)) and one Poisson.
    """
    chains = s.shape[0]
    starts, tau, n, offset, total, tail_n = _latent_layout(f, n_pages) if layout is None else layout
    uniforms = gen.random((chains, total))
    page_uniforms = gen.random((chains, n_pages, 2))
    s_sum = np.empty((chains, n_pages))
    u_sum = np.empty((chains, n_pages))
    k = _kernels()
    kernel = k.latent_sums_parallel if chains * n_pages > k.PARALLEL_ABOVE else k.latent_sums
    kernel(
        np.ascontiguousarray(s, dtype=np.float64),
        np.ascontiguousarray(u, dtype=np.float64),
        np.ascontiguousarray(nu, dtype=np.float64),
        starts,
        tau,
        n,
        offset,
        uniforms,
        tail_n,
        page_uniforms,
        s_sum,
        u_sum,
    )
    return s_sum, u_sum


def signal_posterior(
    data: SignalData, *, prior: SignalPrior | None = None, draws: int = 1000, tune: int = 500, chains: int = 2, rng=None
) -> SignalPosterior:
    """Posterior of every page's (Δ, q, ν) by Gibbs sampling, all pages at once.

    Parameters
    ----------
    data : SignalData
    prior : SignalPrior, optional
        Default: :func:`pooled_signal_prior` of ``data`` (empirical Bayes over the pages).
    draws : int, default 1000
        Draws kept per chain.
    tune : int, default 500
        Draws discarded per chain first (>= 0).
    chains : int, default 2
        Independent chains, started from the prior.
    rng : int or numpy.random.Generator, optional

    Returns
    -------
    SignalPosterior

    Raises
    ------
    TypeError
        If ``data`` is not a SignalData or ``prior`` not a SignalPrior.
    ValueError
        If ``draws`` or ``chains`` is not a positive integer, ``tune`` negative, or
        the default prior cannot be pooled (see :func:`pooled_signal_prior`).

    Notes
    -----
    Data augmentation (module docstring): the latent signalled and unsignalled changes of
    each changed interval are drawn exactly given the rates, then the rates from their
    Gamma conditionals. The draws are exact in the limit; check convergence with e.g.
    ``arviz.rhat`` on :meth:`SignalPosterior.draws`. Cost per draw: O(pages + changed
    intervals), in one pass of a numba kernel (compiled, or loaded from numba's cache, on
    the first call); the draws depend on the seed only.

    Examples
    --------
    >>> from changerate_bayes.signals import SignalPrior, simulate_signal_pages, signal_posterior
    >>> d = simulate_signal_pages([0.5, 0.5], 0.9, 2.0, horizon=300.0, crawl_interval=1.0, rng=3)
    >>> post = signal_posterior(d, prior=SignalPrior(1.0, 1.0, 2.0, 1.0, 0.5), draws=300, tune=100, rng=4)
    >>> s = post.summary()
    >>> bool(((s.change_rate_lower < 0.5) & (0.5 < s.change_rate_upper)).all())
    True
    """
    data = _check_data(data)
    if prior is None:
        prior = pooled_signal_prior(data)
    if not isinstance(prior, SignalPrior):
        raise TypeError(f"`prior` must be a SignalPrior; got {type(prior).__name__}")
    draws = check_positive_int(draws, name="draws")
    chains = check_positive_int(chains, name="chains")
    tune = check_positive_int(tune, name="tune", minimum=0)
    gen = as_generator(rng)
    f = _flat(data)
    n_pages = data.n_pages
    shape = (chains, n_pages)

    def gamma(a, b):
        return gen.gamma(np.broadcast_to(a, shape)) / b if np.any(a > 0) else np.zeros(shape)

    s = gamma(prior.recall_a, prior.change_b)
    u = gamma(prior.recall_b, prior.change_b)
    nu = gamma(prior.false_shape, prior.false_b)
    out_s = np.empty((chains, draws, n_pages))
    out_u = np.empty_like(out_s)
    out_nu = np.empty_like(out_s)
    layout = _latent_layout(f, n_pages)
    for it in range(tune + draws):  # Markov chain steps (all pages and chains at once)
        s_sum, u_sum = _draw_latent(gen, s, u, nu, f, n_pages, layout)
        s = gen.gamma(prior.recall_a + s_sum) / (prior.change_b + f.time) if prior.recall_a > 0 else np.zeros(shape)
        u = gen.gamma(prior.recall_b + u_sum) / (prior.change_b + f.crawled) if prior.recall_b > 0 else np.zeros(shape)
        false_count = f.signals - s_sum
        nu = (
            gen.gamma(prior.false_shape + false_count) / (prior.false_b + f.time)
            if prior.false_shape > 0
            else np.zeros(shape)
        )
        if it >= tune:
            out_s[:, it - tune], out_u[:, it - tune], out_nu[:, it - tune] = s, u, nu
    return SignalPosterior(out_s, out_u, out_nu, prior, data.tail_time.copy(), data.tail_signals.copy())
