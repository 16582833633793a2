"""changerate_bayes: how often do web pages change?

Online and Bayesian estimators of a page's change rate Δ from what a crawler sees
(I_k, τ_k, crawl rate p), Poisson-assumption diagnostics on real change traces, crawl
scheduling built on the estimates, and their Monte Carlo validation.
"""

from ._version import __version__ as __version__

# The public names are imported on first use (PEP 562), so that ``import changerate_bayes``
# and the command line start without loading pandas, PyMC and the compiled kernels'
# modules; ``from changerate_bayes import posterior`` imports what that name needs.
_LAZY = {
    # core
    "CrawlHistory": ".history",
    "simulate_change_times": ".simulate",
    "simulate_history": ".simulate",
    "simulate_replications": ".simulate",
    "StatisticalWarning": "._validation",
    # estimators
    "LLNEstimator": ".estimators",
    "MLEEstimator": ".estimators",
    "MomentMatchingEstimator": ".estimators",
    "NaiveEstimator": ".estimators",
    "RegularCrawlEstimator": ".estimators",
    "SAEstimator": ".estimators",
    "SAMEstimator": ".estimators",
    "check_sam_stepsizes": ".estimators",
    "estimate_path": ".estimators",
    "final_estimates": ".estimators",
    "last_modified_rate": ".estimators",
    # bayes
    "BayesianEstimator": ".bayes",
    "BetaPrimePrior": ".bayes",
    "GammaPrior": ".bayes",
    "LogNormalPrior": ".bayes",
    "pooled_posterior": ".bayes",
    "posterior": ".bayes",
    "PosteriorSummary": ".bayes",
    "posterior_mean_path": ".bayes",
    "posterior_summary": ".bayes",
    "sampler_diagnostics": ".bayes",
    # the crawl-log product (changerate_bayes.crawllog: estimate and schedule on any engine)
    "estimate_pages": ".crawllog",
    "estimate_log": ".crawllog",
    "LogEstimates": ".crawllog",
    "schedule_pages": ".crawllog",
    "write_schedule": ".crawllog",
    "allocate_crawls": ".crawllog",
    # dynamic (drifting rates)
    "DynamicRateFilter": ".dynamic",
    "dynamic_posterior": ".dynamic",
    # bursts (a two-state Markov-modulated Poisson process)
    "BurstFilter": ".bursts",
    "BurstParameters": ".bursts",
    "burst_predictive": ".bursts",
    "fit_bursts": ".bursts",
    "simulate_burst_pages": ".bursts",
}
_SUBPACKAGES = ("crawllog", "diagnostics", "scheduling", "traces")


def __getattr__(name):
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


__all__ = [*_LAZY, *_SUBPACKAGES]
