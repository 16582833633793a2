"""Bayesian posteriors of the change rate Δ: exact, fast, pooled and streaming.

- Priors: :class:`GammaPrior`, :class:`LogNormalPrior` (on Δ), :class:`BetaPrimePrior`
  (on Δ/p).
- :func:`posterior` (methods ``"nuts"``, ``"grid"``, ``"conjugate"``) and
  :func:`pooled_posterior` (hierarchical, many pages) return ``arviz.InferenceData``.
- :class:`BayesianEstimator` updates a posterior crawl by crawl;
  :func:`posterior_mean_path` is its batch counterpart.
- :func:`posterior_summary`: exact per-page mean, sd and credible interval (no draws).
- :func:`log_likelihood`, :func:`sampler_diagnostics`.
- The posterior predictive: :func:`change_probability` (P(changed within t | crawls))
  and :func:`posterior_history` (the compact history with the same posterior);
  :func:`posterior_mean_interval` (the per-page mean and interval without the sd).
- For the other posteriors of the package (``dynamic``, ``bursts``) and the validation
  studies: :func:`log_prior_u` (a prior's log density in u = log Δ),
  :func:`make_summary_data` (an ``InferenceData`` of summaries) and :func:`mcse_mean`.
"""

from ._arviz import make_summary_data, mcse_mean
from ._diagnostics import ESS_MIN_PER_CHAIN, MAX_DIVERGENCES, R_HAT_MAX, SamplerDiagnostics, sampler_diagnostics
from ._likelihood import log_likelihood, pt_log_likelihood
from ._pooled import POPULATIONS, pooled_posterior
from ._posterior import DEFAULT_PRIOR, METHODS, posterior
from ._predictive import change_probability, posterior_history
from ._priors import BetaPrimePrior, GammaPrior, LogNormalPrior, Prior, log_prior_u
from ._streaming import BayesianEstimator, posterior_mean_path
from ._sufficient import crawl_rates
from ._summary import PosteriorSummary, posterior_mean_interval, posterior_summary

__all__ = [
    "BayesianEstimator",
    "BetaPrimePrior",
    "DEFAULT_PRIOR",
    "ESS_MIN_PER_CHAIN",
    "GammaPrior",
    "LogNormalPrior",
    "MAX_DIVERGENCES",
    "METHODS",
    "POPULATIONS",
    "Prior",
    "R_HAT_MAX",
    "SamplerDiagnostics",
    "change_probability",
    "crawl_rates",
    "log_likelihood",
    "log_prior_u",
    "make_summary_data",
    "mcse_mean",
    "pooled_posterior",
    "posterior",
    "posterior_history",
    "posterior_mean_interval",
    "posterior_mean_path",
    "posterior_summary",
    "PosteriorSummary",
    "pt_log_likelihood",
    "sampler_diagnostics",
]
