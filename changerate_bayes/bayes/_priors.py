"""Priors on the change rate Δ.

All three priors have a log-density in u = log Δ (Jacobian included) of the form

    log π(u) = A·u − B·e^u − C·(u − M)² − E·log(1 + e^{u − L}) + const,

with A, B, C, E >= 0, so every prior here is log-concave in log Δ. The grid and
NUTS methods only need the coefficients (A, B, C, M, E, L): one compiled PyMC model
serves every prior, and the exact log-posterior in log Δ stays concave (the
log-likelihood is concave in log Δ too), which the grid method relies on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from .._validation import check_finite_real, check_positive_scalar, check_real

__all__ = ["GammaPrior", "LogNormalPrior", "BetaPrimePrior", "Prior", "PriorCoefficients"]

#: |mu| of a log-normal prior at most this: e^mu, the prior median, is a normal float64
MAX_ABS_LOG_RATE = 700.0
#: a log-normal sigma below this × max(1, |mu|) is a point mass at float64 resolution
SIGMA_RESOLUTION = 1e-12
#: a log-normal sigma above this makes 1/(2 sigma²) underflow towards zero
SIGMA_MAX = 1e150


@dataclass(frozen=True)
class PriorCoefficients:
    """Coefficients of a log-density in u = log Δ (see the module docstring).

    Each field is a float or an array broadcastable against the pages.
    """

    A: object = 0.0
    B: object = 0.0
    C: object = 0.0
    M: object = 0.0
    E: object = 0.0
    L: object = 0.0

    def as_arrays(self, n_pages: int) -> dict[str, np.ndarray]:
        """The six coefficients as float64 arrays of shape (n_pages,)."""
        return {
            name: np.broadcast_to(np.asarray(getattr(self, name), dtype=np.float64), (n_pages,)).copy()
            for name in "ABCMEL"
        }


def _softplus(x):
    return np.logaddexp(0.0, x)


def _sigmoid(x):
    return special.expit(x)


def log_prior_u(u, coef: dict, order: int = 0):
    """Log prior density in u (up to a constant), or its first/second derivative.

    ``u`` has shape (n,) or (n, G); coefficient arrays have shape (n,). Terms whose
    coefficients are all zero are skipped.
    """
    col = (lambda a: a) if np.ndim(u) == 1 else (lambda a: a[:, None])
    A, B, C, M, E, L = (col(coef[c]) for c in "ABCMEL")
    out = np.zeros(np.shape(u))
    if order == 0 and np.any(A):
        out += A * u
    elif order == 1 and np.any(A):
        out += A
    if np.any(B):
        with np.errstate(over="ignore"):  # B·e^u only where B > 0 (e^u may overflow elsewhere)
            out -= np.where(B > 0, B * np.exp(u), 0.0)
    if np.any(C):
        out -= C * (u - M) ** 2 if order == 0 else (2.0 * C * (u - M) if order == 1 else 2.0 * C)
    if np.any(E):
        if order == 0:
            out -= E * _softplus(u - L)
        else:
            s = _sigmoid(u - L)
            out -= E * s if order == 1 else E * s * (1.0 - s)
    return out


def _check_real(x, *, name: str) -> float:
    return check_finite_real(x, name=name, rule="a finite number")


class Prior:
    """Base class of the priors on Δ (not instantiated directly)."""

    #: whether the prior is a probability distribution (integrates to one)
    proper: bool = True
    #: whether the prior's scale is relative to the crawl rate p (Δ/p), so needs p
    needs_crawl_rate: bool = False
    #: "gamma", "lognormal" or "betaprime": which coefficients the log-density uses
    family: str = ""

    def coefficients(self, crawl_rate=None) -> PriorCoefficients:  # pragma: no cover - abstract
        raise NotImplementedError

    def distribution(self, crawl_rate=None):  # pragma: no cover - abstract
        """The prior on Δ as a frozen :mod:`scipy.stats` distribution."""
        raise NotImplementedError

    def sample(self, size, *, rng, crawl_rate=None) -> np.ndarray:
        """Draw Δ from the prior (used by simulation-based calibration).

        Parameters
        ----------
        size : int or tuple of int
        rng : numpy.random.Generator
        crawl_rate : float or ndarray, optional
            p, for priors on Δ/p.
        """
        if not self.proper:
            raise ValueError(f"cannot draw from the improper prior {self!r}")
        return self.distribution(crawl_rate).rvs(size=size, random_state=rng)

    def _crawl_rate(self, crawl_rate):
        if not self.needs_crawl_rate:
            return None
        if crawl_rate is None:
            raise ValueError(
                f"{type(self).__name__} is a prior on Δ/p and needs the crawl rate p: pass `crawl_rate` to CrawlHistory"
            )
        return np.asarray(crawl_rate, dtype=np.float64)


@dataclass(frozen=True)
class GammaPrior(Prior):
    """Gamma prior on the change rate Δ.

    π(Δ) = rate^shape Δ^(shape−1) e^(−rate·Δ) / Γ(shape), Δ > 0.

    Parameters
    ----------
    shape : float
        a > 0 (dimensionless). Prior mean a/b, prior sd √a/b.
    rate : float
        b > 0, in the time unit of the crawl intervals (if τ is in hours, ``rate`` is
        in hours and Δ in changes per hour). b acts like b hours of prior observation.

    Raises
    ------
    ValueError
        If ``shape`` or ``rate`` is <= 0, NaN or infinite (the message names it); if
        the prior's scale max(shape, 1)/rate is outside [e^-700, e^700] (not a normal
        float64 rate); if ``shape`` > (1e12·max(1, abs(log(shape/rate))))^2 (the prior's
        sd in log Δ, about 1/√shape, below what float64 resolves there).
    TypeError
        If a parameter is not a real number.

    Notes
    -----
    A page never seen changed in crawls of total length T has likelihood e^(−ΔT), so
    its exact posterior is Gamma(a, b + T) (mean a/(b + T)): the prior keeps the
    estimate above zero, and it shrinks like 1/T.

    Examples
    --------
    >>> from changerate_bayes import GammaPrior
    >>> GammaPrior(2.0, 1.0).mean
    2.0
    """

    shape: float
    rate: float
    family = "gamma"

    def __post_init__(self):
        a = check_positive_scalar(self.shape, name="shape")
        b = check_positive_scalar(self.rate, name="rate")
        # in u = log Δ the density is ∝ e^{a u − b e^u}: its mode is at log(a/b), and for a >= 1
        # its sd is about 1/√a; for a < 1 the mass ends above at about u = log(1/b)
        log_scale = math.log(max(a, 1.0)) - math.log(b)
        if abs(log_scale) > MAX_ABS_LOG_RATE:
            raise ValueError(
                f"`shape` and `rate` must give a prior scale max(shape, 1)/rate in [e^-{MAX_ABS_LOG_RATE:g}, "
                f"e^{MAX_ABS_LOG_RATE:g}] (a normal float64 rate); got e^{log_scale:.6g} (shape={a:g}, rate={b:g})"
            )
        a_max = (1.0 / (SIGMA_RESOLUTION * max(1.0, abs(log_scale)))) ** 2
        if a > a_max:
            raise ValueError(
                f"`shape` must be at most {a_max:.3g} for rate = {b:g} (above, the prior's sd in log Δ, about "
                f"1/√shape, is below what float64 resolves around log(shape/rate)); got {a:g}"
            )
        object.__setattr__(self, "shape", a)
        object.__setattr__(self, "rate", b)

    @property
    def mean(self) -> float:
        """Prior mean of Δ, a/b."""
        return self.shape / self.rate

    def coefficients(self, crawl_rate=None) -> PriorCoefficients:
        """Log-density coefficients in log Δ: A = a, B = b."""
        return PriorCoefficients(A=self.shape, B=self.rate)

    def distribution(self, crawl_rate=None):
        """``scipy.stats.gamma(a=shape, scale=1/rate)``."""
        return stats.gamma(a=self.shape, scale=1.0 / self.rate)


@dataclass(frozen=True)
class LogNormalPrior(Prior):
    """Log-normal prior on the change rate Δ: log Δ ~ Normal(mu, sigma).

    Parameters
    ----------
    mu : float
        Mean of log Δ, where Δ is per unit of the crawl intervals (``exp(mu)`` is the
        prior median rate, e.g. per hour).
    sigma : float
        Standard deviation of log Δ, > 0 (dimensionless; sigma = 1 puts 68% of the
        prior within a factor e of the median).

    Raises
    ------
    ValueError
        If a parameter is NaN or infinite; if abs(``mu``) > 700 (the prior median e^mu
        must be a normal float64); if ``sigma`` is outside
        [1e-12·max(1, abs(mu)), 1e150] (narrower than float64 resolves log Δ near mu, or
        so wide that 1/(2 sigma²) underflows). The message names the parameter.
    TypeError
        If a parameter is not a real number.

    Notes
    -----
    A page never seen changed in crawls of total length T has posterior density
    ∝ π(Δ) e^(−ΔT): the light log-normal tail towards Δ → 0 keeps its estimate near
    the lower part of the prior (within a few sigma of mu) rather than at zero.

    Examples
    --------
    >>> from changerate_bayes import LogNormalPrior
    >>> round(LogNormalPrior(0.0, 1.0).median, 3)
    1.0
    """

    mu: float
    sigma: float
    family = "lognormal"

    def __post_init__(self):
        mu = _check_real(self.mu, name="mu")
        if abs(mu) > MAX_ABS_LOG_RATE:
            raise ValueError(
                f"`mu` must be in [-{MAX_ABS_LOG_RATE:g}, {MAX_ABS_LOG_RATE:g}] (the prior median e^mu must be "
                f"a normal float64 rate); got {mu}"
            )
        sigma = check_positive_scalar(self.sigma, name="sigma")
        low = SIGMA_RESOLUTION * max(1.0, abs(mu))
        if not low <= sigma <= SIGMA_MAX:
            raise ValueError(
                f"`sigma` must be in [{low:.3g}, {SIGMA_MAX:g}] for mu = {mu:g} (below, float64 cannot resolve "
                f"log Δ around mu; above, 1/(2 sigma²) underflows); got {sigma:g}"
            )
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "sigma", sigma)

    @property
    def median(self) -> float:
        """Prior median of Δ, e^mu."""
        return math.exp(self.mu)

    @property
    def mean(self) -> float:
        """Prior mean of Δ, e^(mu + sigma²/2) (``inf`` beyond the float64 range)."""
        log_mean = self.mu + 0.5 * self.sigma**2
        return math.exp(log_mean) if log_mean < 709.0 else math.inf

    def coefficients(self, crawl_rate=None) -> PriorCoefficients:
        """Log-density coefficients in log Δ: C = 1/(2 sigma²), M = mu."""
        return PriorCoefficients(C=0.5 / self.sigma**2, M=self.mu)

    def distribution(self, crawl_rate=None):
        """``scipy.stats.lognorm(s=sigma, scale=exp(mu))``."""
        return stats.lognorm(s=self.sigma, scale=math.exp(self.mu))


@dataclass(frozen=True)
class BetaPrimePrior(Prior):
    """Beta-prime prior on Δ/p, i.e. a Beta(a, b) prior on μ = Δ/(Δ + p).

    With Poisson crawling at rate p, a crawl sees a change with probability
    μ = Δ/(Δ + p) (paper eq. 4); Δ/p = μ/(1 − μ) ~ BetaPrime(a, b). The prior is
    relative to the crawl rate, so it is unit-free and needs p.

    Parameters
    ----------
    a : float
        a >= 0: a prior "changes seen". ``a = 0`` is the improper prior
        π(Δ) ∝ Δ^(−1)(1 + Δ/p)^(−b) whose posterior mean with constant α = b − 1 is
        the LLN estimator (paper eq. 1); it is allowed, and refused by
        :func:`posterior` when the data leave the posterior improper (no change seen).
    b : float
        b > 0: prior "crawls without change". The prior mean of Δ, p·a/(b − 1),
        exists only for b > 1.

    Raises
    ------
    ValueError
        If ``a`` < 0 or ``b`` <= 0, or a parameter is NaN or infinite (the message
        names it).
    TypeError
        If a parameter is not a real number.

    Notes
    -----
    Conjugacy (a Beta prior on the Bernoulli(μ) indicators, paper eq. 4): after k crawls
    with Î_k changes seen, the posterior given the indicators alone is
    Δ/p ~ BetaPrime(a + Î_k, b + k − Î_k), with mean
    p (a + Î_k)/(b + k − Î_k − 1). A page never seen changed has posterior mean
    p·a/(b + k − 1) (zero, and an improper posterior, under a = 0).

    References
    ----------
    Paper "Online estimators of change rates", eq. (1), (4) and (6).

    Examples
    --------
    >>> from changerate_bayes import BetaPrimePrior
    >>> BetaPrimePrior(1.0, 2.0).proper, BetaPrimePrior(0.0, 2.0).proper
    (True, False)
    """

    a: float
    b: float
    needs_crawl_rate = True
    family = "betaprime"

    def __post_init__(self):
        a = float(check_real(self.a, name="a"))
        if not (math.isfinite(a) and a >= 0):
            raise ValueError(f"`a` must be a finite number >= 0 (a = 0: improper LLN prior); got {a}")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", check_positive_scalar(self.b, name="b"))

    @property
    def proper(self) -> bool:  # type: ignore[override]
        """False for the improper a = 0 prior."""
        return self.a > 0

    def coefficients(self, crawl_rate=None) -> PriorCoefficients:
        """Log-density coefficients in log Δ: A = a, E = a + b, L = log p."""
        p = self._crawl_rate(crawl_rate)
        return PriorCoefficients(A=self.a, E=self.a + self.b, L=np.log(p))

    def distribution(self, crawl_rate=None):
        """``scipy.stats.betaprime(a, b, scale=p)`` (proper priors only)."""
        p = self._crawl_rate(crawl_rate)
        if not self.proper:
            raise ValueError(f"{self!r} is improper and has no distribution")
        return stats.betaprime(self.a, self.b, scale=p)
