"""Crawl scheduling built on change-rate estimates.

* Optimal crawl rates for known Δ: :func:`optimal_crawl_rates` (exact KKT /
  water-filling, paper Section 5; Azar et al. 2018; Kolobov et al. 2019) and
  :func:`crawl_objective`.
* Pages that signal every change (sitemaps, feeds): :func:`complete_observability_crawl_probabilities`
  and :func:`split_crawl_budget` (one budget shared with pages crawled blindly; Kolobov et al. 2019).
* Closing the loop: :func:`simulate_closed_loop` (learn Δ online with LLN, SAM,
  posterior mean or Thompson sampling while reallocating every epoch).
* Ephemeral content (Avrachenkov & Borkar): :func:`whittle_index` (closed form),
  :func:`whittle_index_numerical` and :func:`check_indexability` (its independent
  checks), :class:`EphemeralSources`, :func:`simulate_ephemeral_crawling`,
  :func:`solve_ephemeral_dp` (exact optimum for a few sources), :func:`schedule_period`.
* Sampling-based change detection (Cho & Ntoulas 2002): :func:`allocate_downloads`,
  :func:`expected_change_ratio`, :func:`optimal_sample_size`,
  :func:`rule_of_thumb_sample_size`, :func:`simulate_change_detection`.
* The freshness index (Whittle index of binary freshness): :func:`freshness_index` (a Poisson
  page), :func:`predictive_freshness_index` (any predictive), :func:`index_kernels` (compiled);
  its stationary allocation :func:`index_crawl_intervals`, and :func:`capped_index_intervals`
  under per-host caps (Kolobov et al. 2019).
* Plots: ``plot_*`` (return the Axes) and their pure data helpers.
"""

from . import _closed_loop, _ephemeral, _freshness_index, _plots, _sampling, _whittle
from ._closed_loop import *  # noqa: F403 (each module's __all__ lists its public names once)
from ._complete_observability import CrawlBudgetSplit, complete_observability_crawl_probabilities, split_crawl_budget
from ._ephemeral import *  # noqa: F403
from ._freshness_index import *  # noqa: F403
from ._host_caps import check_host_budgets, check_hosts, equal_split
from ._index_allocation import IndexIntervals, index_crawl_intervals
from ._index_host_caps import CappedIndexIntervals, capped_index_intervals, revisit_bound_rates
from ._optimal_rates import CappedCrawlRates, capped_crawl_rates, crawl_objective, optimal_crawl_rates
from ._plots import *  # noqa: F403
from ._sampling import *  # noqa: F403
from ._whittle import *  # noqa: F403

__all__ = [
    # optimal rates
    "optimal_crawl_rates",
    "capped_crawl_rates",
    "CappedCrawlRates",
    "crawl_objective",
    "complete_observability_crawl_probabilities",
    "split_crawl_budget",
    "CrawlBudgetSplit",
    "index_crawl_intervals",
    "IndexIntervals",
    "capped_index_intervals",
    "CappedIndexIntervals",
    # per-host caps: the hosts' codes and caps, round robin within caps, the revisit bound
    "check_hosts",
    "check_host_budgets",
    "equal_split",
    "revisit_bound_rates",
]
__all__ += _closed_loop.__all__  # closed loop
__all__ += _whittle.__all__ + _ephemeral.__all__  # ephemeral content / Whittle index
__all__ += _sampling.__all__  # sampling-based change detection
__all__ += _freshness_index.__all__  # the freshness index
__all__ += _plots.__all__  # plots
