"""Change rates that move: a dynamic posterior over Δ_t.

log Δ follows a Gaussian random walk in time (volatility σ per √(time unit); by default
unit-free, c per √(each page's typical crawl interval)), and a
crawl after an interval τ sees a change with probability 1 − e^{−Δτ}. The posterior is
computed exactly on a lattice of log Δ (a point-mass filter), vectorised over pages:

- :class:`DynamicRateFilter`: streaming, ``update(changed, interval, mask=None)``,
  ``rate``, ``credible_interval``, ``predict_change_probability`` (the next crawl's
  P(I = 1 | τ)), ``sample`` (Thompson sampling), ``sigma_weights`` (Bayesian model
  averaging over volatilities);
- :func:`dynamic_posterior`: filtered and forward-backward smoothed summaries of Δ_t
  and one-step predictive probabilities of whole histories (rectangular or padded with
  a mask), as ``arviz.InferenceData``;
- :func:`simulate_drifting_pages`: pages whose rate drifts (``DRIFT_KINDS``), crawled at
  Poisson times, for calibration studies (:class:`DriftingPages`).
"""

from ._filter import DynamicRateFilter, mixture_weights
from ._model import DEFAULT_GRID_SIZE, DEFAULT_PRIOR, DEFAULT_SIGMAS, UNIT_FREE_SIGMAS
from ._posterior import DEFAULT_LEVELS, dynamic_posterior
from ._simulate import DRIFT_KINDS, DriftingPages, simulate_drifting_pages

__all__ = [
    "DEFAULT_GRID_SIZE",
    "DEFAULT_LEVELS",
    "DEFAULT_PRIOR",
    "DEFAULT_SIGMAS",
    "DRIFT_KINDS",
    "UNIT_FREE_SIGMAS",
    "DriftingPages",
    "DynamicRateFilter",
    "dynamic_posterior",
    "mixture_weights",
    "simulate_drifting_pages",
]
