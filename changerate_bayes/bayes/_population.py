"""The population distribution of u = log Δ across pages, given its two hyperparameters.

Two families, each written in u = log Δ (Δ per unit time):

- ``"lognormal"``: u ~ Normal(m, s); hyperparameters ``population_log_median`` (m) and
  ``population_sigma`` (s).
- ``"gamma"``: Δ ~ Gamma(a, rate a/μ) (mean μ); hyperparameters ``population_log_mean``
  (log μ) and ``population_shape`` (a). With w = u − log μ and y = e^w the density of u
  is a^a/Γ(a) · exp(a(w − y)): mode u = log μ, curvature a there, a left tail ∝ e^{a u}
  (heavy when a is small) and a doubly exponential right tail.

For each family this module gives, in PyTensor, the log-density, the CDF (both tails,
without cancellation), the ratios π'/π and π'''/π (for the Euler-Maclaurin end
corrections of ``_marginal``) and a centre and scale (the mode and (−(log π)'')^{-1/2}
there); in NumPy, draws of u and the coefficients of the density as a prior for the
exact 1-D grid of ``_grid`` (log-normal: C = 1/(2s²), M = m; gamma: A = a, B = a/μ).
"""

from __future__ import annotations

import numpy as np

from ._priors import PriorCoefficients

__all__ = ["POPULATIONS", "HYPER", "SymbolicPopulation", "sample_log_rate", "grid_coefficients"]

POPULATIONS = ("lognormal", "gamma")
#: the two hyperparameters of each family: (location on the log scale, spread)
HYPER = {
    "lognormal": ("population_log_median", "population_sigma"),
    "gamma": ("population_log_mean", "population_shape"),
}
_LOG_2PI = float(np.log(2.0 * np.pi))


class SymbolicPopulation:
    """Symbolic density of u = log Δ for hyperparameters ``loc``, ``spread`` (PyTensor).

    Parameters
    ----------
    population : {"lognormal", "gamma"}
    loc : tensor
        m (log-normal) or log μ (gamma).
    spread : tensor
        s > 0 (log-normal) or the shape a > 0 (gamma).
    """

    def __init__(self, population: str, loc, spread):
        import pytensor.tensor as pt  # PyTensor: heavy, loaded on first use

        self.population, self.loc, self.spread = population, loc, spread
        if population == "lognormal":
            self.centre, self.scale = loc, spread
        else:
            self.centre, self.scale = loc, 1.0 / pt.sqrt(spread)

    def logpdf(self, u):
        """log π(u)."""
        import pytensor.tensor as pt  # PyTensor: heavy, loaded on first use

        if self.population == "lognormal":
            z = (u - self.loc) / self.spread
            return -0.5 * z * z - pt.log(self.spread) - 0.5 * _LOG_2PI
        a, w = self.spread, u - self.loc
        return a * pt.log(a) - pt.gammaln(a) + a * (w - pt.exp(w))

    def cdf_and_sf(self, u):
        """P(U <= u) and P(U > u), each computed directly (no 1 − F cancellation)."""
        import pytensor.tensor as pt  # PyTensor: heavy, loaded on first use

        if self.population == "lognormal":
            z = (u - self.loc) / (self.spread * np.sqrt(2.0))
            return 0.5 * pt.erfc(-z), 0.5 * pt.erfc(z)
        x = self.spread * pt.exp(u - self.loc)
        return pt.gammainc(self.spread, x), pt.gammaincc(self.spread, x)

    def derivative_ratios(self, u):
        """π'(u)/π(u) and π'''(u)/π(u)."""
        if self.population == "lognormal":
            s = self.spread
            z = (u - self.loc) / s
            return -z / s, (3.0 * z - z**3) / s**3
        import pytensor.tensor as pt  # PyTensor: heavy, loaded on first use

        a, y = self.spread, pt.exp(u - self.loc)
        d1 = a * (1.0 - y)
        return d1, d1**3 - 3.0 * a * a * y * (1.0 - y) - a * y


def sample_log_rate(population: str, loc: np.ndarray, spread: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Draws of u = log Δ from the population, one per entry of the broadcast hyperparameters.

    The gamma draw is taken on the log scale, log G_a = log G_{a+1} + log(V)/a with
    V ~ Uniform(0, 1) (exact, and finite for any shape however small).
    """
    loc, spread = np.broadcast_arrays(np.asarray(loc, float), np.asarray(spread, float))
    if population == "lognormal":
        return loc + spread * rng.standard_normal(loc.shape)
    log_g = np.log(rng.standard_gamma(spread + 1.0)) + np.log(rng.random(loc.shape)) / spread
    return loc + log_g - np.log(spread)


def grid_coefficients(population: str, loc: np.ndarray, spread: np.ndarray) -> dict[str, np.ndarray]:
    """The population as a prior in the coefficient form of ``_priors`` (arrays of one shape)."""
    loc, spread = np.broadcast_arrays(np.asarray(loc, float), np.asarray(spread, float))
    if population == "lognormal":
        coef = PriorCoefficients(C=0.5 / spread**2, M=loc)
    else:
        coef = PriorCoefficients(A=spread, B=spread * np.exp(-loc))
    return coef.as_arrays(loc.size)
