"""Replaying real change histories under a crawl budget.

Given the real change times of N pages and each page's observation window, a crawl
policy decides when each page is crawled; a crawl reveals only I (changed since the
last crawl?) and τ (time since it). The replay scores every policy by the time the
local copies were fresh, their age, and the crawls spent.

* :func:`replay_policies`: the tidy table of metrics for a list of policies × budgets.
* :func:`pages_from_table`, :class:`ReplayPages`: the checked input.
* :func:`run_replay`, :class:`ReplayResult`, :class:`ReplayContext`: the engine.
* :func:`plot_freshness_budget`: freshness against crawls per day.
* :func:`replay_metrics`, :func:`bootstrap_counts`, :func:`bootstrap_ratio`, :func:`gap_share`,
  :func:`bootstrap_gap_share`: metrics and intervals over resampled pages.
* Policies: :class:`UniformPolicy`, :class:`OraclePolicy`, :class:`PlugInPolicy`,
  :class:`ThompsonPolicy` (budgeted); :class:`NutchPolicy`, :class:`StormCrawlerPolicy`
  (the crawlers' adaptive schedules, :func:`nutch_update`, :func:`stormcrawler_update`),
  :func:`tune_increase_rate`; :class:`IndexPolicy` (crawl the largest freshness index,
  :func:`freshness_index`, :func:`predictive_freshness_index`, any learner's predictive);
  :class:`ClairvoyantPolicy` (knows the change times: near the best any schedule can do);
  :class:`HindsightIndexPolicy` (the index of each page's true rate n_i/T_i: a hindsight reference).
* Change signals (``replay_policies(..., signals=...)``, :func:`signal_times`): :class:`SignalIndexPolicy`
  (the signal-aware index at the effective elapsed time, :func:`effective_elapsed`) and
  :class:`SignalFirstPolicy` (crawl on every signal), named in :data:`SIGNAL_POLICIES`, with the
  hindsight reference :class:`HindsightSignalIndexPolicy` (the same index with each page's
  (Δ, q, ν) counted from the whole replay, :func:`hindsight_signal_parameters`).
* Learners (``update(changed, interval, mask)``, ``rate``, ``sample(rng)``, and
  ``prob_change_within(elapsed)``, elapsed in days, for the index policies):
  :class:`LLNLearner`, :class:`GridLearner`, :class:`DynamicLearner`, :class:`KnownRates` (given rates),
  :class:`~changerate_bayes.bursts.BurstFilter`; any object with that interface plugs
  into :class:`PlugInPolicy` / :class:`ThompsonPolicy` / :class:`IndexPolicy`.
"""

from ._engine import ReplayContext, ReplayResult, run_replay
from ._index import ClairvoyantPolicy, HindsightIndexPolicy, IndexPolicy, freshness_index, predictive_freshness_index
from ._learners import DynamicLearner, GridLearner, KnownRates, LLNLearner, OldestFirst
from ._metrics import bootstrap_counts, bootstrap_gap_share, bootstrap_ratio, gap_share, replay_metrics
from ._pages import ReplayPages, pages_from_table
from ._plots import plot_freshness_budget
from ._policies import (
    NUTCH_DEFAULTS,
    NUTCH_MODIFIED,
    NUTCH_NOTMODIFIED,
    NUTCH_UNKNOWN,
    NUTCH_VERSIONS,
    POLICIES,
    STORMCRAWLER_DEFAULTS,
    NutchPolicy,
    OraclePolicy,
    PlugInPolicy,
    RatePolicy,
    StormCrawlerPolicy,
    ThompsonPolicy,
    UniformPolicy,
    nutch_update,
    stormcrawler_update,
)
from ._replay import (
    DEFAULT_POLICIES,
    POLICY_NAMES,
    SIGNAL_POLICIES,
    TUNED,
    at_search_bound,
    replay_policies,
    tune_increase_rate,
)
from ._replay import _check_budgets as check_budgets
from ._signals import (
    HindsightSignalIndexPolicy,
    SignalFirstPolicy,
    SignalIndexPolicy,
    effective_elapsed,
    hindsight_signal_parameters,
    signal_times,
)

__all__ = [
    "ClairvoyantPolicy",
    "DEFAULT_POLICIES",
    "DynamicLearner",
    "GridLearner",
    "OldestFirst",
    "KnownRates",
    "HindsightIndexPolicy",
    "HindsightSignalIndexPolicy",
    "IndexPolicy",
    "LLNLearner",
    "NUTCH_DEFAULTS",
    "NUTCH_MODIFIED",
    "NUTCH_NOTMODIFIED",
    "NUTCH_UNKNOWN",
    "NUTCH_VERSIONS",
    "NutchPolicy",
    "OraclePolicy",
    "POLICIES",
    "POLICY_NAMES",
    "PlugInPolicy",
    "RatePolicy",
    "ReplayContext",
    "ReplayPages",
    "ReplayResult",
    "SIGNAL_POLICIES",
    "STORMCRAWLER_DEFAULTS",
    "SignalFirstPolicy",
    "SignalIndexPolicy",
    "StormCrawlerPolicy",
    "TUNED",
    "ThompsonPolicy",
    "UniformPolicy",
    "at_search_bound",
    "bootstrap_counts",
    "bootstrap_gap_share",
    "bootstrap_ratio",
    "check_budgets",
    "effective_elapsed",
    "freshness_index",
    "gap_share",
    "hindsight_signal_parameters",
    "nutch_update",
    "pages_from_table",
    "plot_freshness_budget",
    "predictive_freshness_index",
    "replay_metrics",
    "replay_policies",
    "run_replay",
    "signal_times",
    "stormcrawler_update",
    "tune_increase_rate",
]
