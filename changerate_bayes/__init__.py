"""changerate_bayes: how often do web pages change?

Online and Bayesian estimators of a page's change rate Δ from what a crawler sees
(I_k, τ_k, crawl rate p), Poisson-assumption diagnostics on real change traces, crawl
scheduling built on the estimates, and their Monte Carlo validation.
"""

__version__ = "0.1.0"

# --- core ---
from .history import CrawlHistory
from .simulate import simulate_change_times, simulate_history, simulate_replications
from ._validation import StatisticalWarning

# --- estimators ---
from .estimators import (
    LLNEstimator,
    MLEEstimator,
    MomentMatchingEstimator,
    NaiveEstimator,
    RegularCrawlEstimator,
    SAEstimator,
    SAMEstimator,
    check_sam_stepsizes,
    estimate_path,
    final_estimates,
)

# --- bayes ---
from .bayes import (
    BayesianEstimator,
    BetaPrimePrior,
    GammaPrior,
    LogNormalPrior,
    pooled_posterior,
    posterior,
    PosteriorSummary,
    posterior_mean_path,
    posterior_summary,
    sampler_diagnostics,
)

# --- the per-page table ---
from .pages import estimate_pages  # noqa: E402
# --- dynamic (drifting rates) ---
from .dynamic import DynamicRateFilter, dynamic_posterior

# --- diagnostics / traces / scheduling: use the subpackages ---
from . import diagnostics, scheduling, traces  # noqa: E402

__all__ = [
    "CrawlHistory",
    "StatisticalWarning",
    "simulate_change_times",
    "simulate_history",
    "simulate_replications",
    # bayes
    "BayesianEstimator",
    "BetaPrimePrior",
    "GammaPrior",
    "LogNormalPrior",
    "pooled_posterior",
    "posterior",
    "posterior_mean_path",
    "posterior_summary",
    "PosteriorSummary",
    "sampler_diagnostics",
    "estimate_path",
    "final_estimates",
    # dynamic
    "DynamicRateFilter",
    "dynamic_posterior",
    "NaiveEstimator",
    "LLNEstimator",
    "SAEstimator",
    "SAMEstimator",
    "MLEEstimator",
    "MomentMatchingEstimator",
    "RegularCrawlEstimator",
    "check_sam_stepsizes",
    "estimate_pages",
    "diagnostics",
    "scheduling",
    "traces",
]
