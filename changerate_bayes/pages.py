"""The per-page table: one row per page of a crawl log, with every estimate of its change rate."""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd

from .bayes._summary import posterior_mean_interval
from .estimators import METHODS, final_estimates
from .history import CrawlHistory
from .scheduling import optimal_crawl_rates

__all__ = ["estimate_pages", "allocate_crawls", "PAGE_COLUMNS"]

#: Columns always present, in order (then one per method, the posterior, the allocation).
PAGE_COLUMNS = ("page", "n_crawls", "n_changes", "first_visit", "last_visit", "mean_interval_h")
_HOURS_PER_DAY = 24.0


def _check_methods(methods) -> tuple:
    if isinstance(methods, str):
        methods = (methods,)
    methods = tuple(methods)
    if not methods:
        raise ValueError(f"`methods` must name at least one of {list(METHODS)}")
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise ValueError(f"`methods` must be among {list(METHODS)}; got {bad}")
    if len(set(methods)) != len(methods):
        raise ValueError(f"`methods` must not repeat a method; got {list(methods)}")
    return methods


def _check_budget(budget):
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
        raise TypeError(f"`budget` must be a number of crawls per day; got {type(budget).__name__}")
    budget = float(budget)
    if not (np.isfinite(budget) and budget > 0):
        raise ValueError(f"`budget` must be > 0 and finite (crawls per day); got {budget}")
    return budget


def page_table(history_or_log, *, methods=METHODS, prior=None, level=0.9, posterior_method="grid",
               unit_hours=1.0) -> pd.DataFrame:
    """:func:`estimate_pages` without the crawl allocation (each row depends on its page only)."""
    from .io import CrawlLog

    if isinstance(history_or_log, CrawlLog):
        history, first, last = history_or_log.history, history_or_log.first_visit, history_or_log.last_visit
    elif isinstance(history_or_log, CrawlHistory):
        history, first, last = history_or_log, None, None
    else:
        raise TypeError(f"`history_or_log` must be a CrawlLog or a CrawlHistory; got {type(history_or_log).__name__}")
    methods = _check_methods(methods)
    if isinstance(unit_hours, bool) or not isinstance(unit_hours, numbers.Real) or not unit_hours > 0:
        raise ValueError(f"`unit_hours` must be a number > 0 (hours per time unit of the history); got {unit_hours!r}")
    per_day = _HOURS_PER_DAY / float(unit_hours)
    n = history.n_pages or 1
    lengths = history.lengths
    starts = history.offsets[:-1]
    n_changes = np.add.reduceat(history.flat_changed.astype(np.int64), starts)
    tau = history.flat_intervals
    mean_tau = np.full(n, np.nan) if tau is None else np.add.reduceat(tau, starts) / lengths * unit_hours
    ids = history.page_ids if history.page_ids is not None else np.arange(n)
    nat = np.full(n, np.datetime64("NaT", "ns"))
    out = {
        "page": ids, "n_crawls": lengths, "n_changes": n_changes,
        "first_visit": pd.to_datetime(nat if first is None else first, utc=True),
        "last_visit": pd.to_datetime(nat if last is None else last, utc=True),
        "mean_interval_h": mean_tau,
    }
    caught = []
    for method in methods:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out[method] = np.atleast_1d(final_estimates(history, method)) * per_day
        caught += [str(x.message) for x in w]
    age = getattr(history_or_log, "last_modified_age", None)
    if age is not None:  # Cho & Garcia-Molina's estimator with the last-modification date
        out["lm_rate"] = _last_modified_rates(history, age) * per_day
    # the table shows the mean and interval only: the sd's grid is not computed
    post = posterior_mean_interval(history, prior=prior, method=posterior_method, level=level)
    out["posterior_mean"] = post.mean * per_day
    out["posterior_lower"] = post.lower * per_day
    out["posterior_upper"] = post.upper * per_day
    table = pd.DataFrame(out)
    table.attrs.update(level=float(level), prior=post.prior, rates="changes per day",
                       warnings=list(dict.fromkeys(caught)))
    return table


def _last_modified_rates(history, age) -> np.ndarray:
    """Each page's :func:`~changerate_bayes.estimators.last_modified_rate` (NaN where a change is undated)."""
    from .estimators import last_modified_rate

    lengths = history.lengths
    page = np.repeat(np.arange(lengths.size), lengths)
    dated = np.bincount(page, weights=np.isnan(age), minlength=lengths.size) == 0
    out = np.full(lengths.size, np.nan)
    if dated.any():
        keep = dated[page]
        out[dated] = last_modified_rate(history.flat_changed[keep], history.flat_intervals[keep], age[keep],
                                        lengths=lengths[dated])
    return out


def allocate_crawls(table: pd.DataFrame, budget=None, *, objective="binary_freshness") -> pd.DataFrame:
    """Add the optimal crawl rate and interval of every page to a page table (a copy).

    The posterior mean of each page's rate is taken as its Δ, all pages weigh the same,
    and ``budget`` crawls per day are shared by :func:`changerate_bayes.scheduling.optimal_crawl_rates`.
    Columns added: ``crawls_per_day`` (p_i) and ``crawl_interval_h`` = 24 / p_i (``inf``
    for a page the allocation does not crawl). ``budget=None`` reallocates the crawls the
    log shows (Σ 24 / mean interval).

    Raises
    ------
    ValueError
        If ``budget`` is not > 0 and finite.
    """
    budget = _check_budget(budget)
    if budget is None:
        budget = float(np.nansum(_HOURS_PER_DAY / table["mean_interval_h"].to_numpy()))
    rates = optimal_crawl_rates(table["posterior_mean"].to_numpy(), 1.0, budget, objective=objective)
    out = table.copy()
    out["crawls_per_day"] = rates
    with np.errstate(divide="ignore"):
        out["crawl_interval_h"] = np.where(rates > 0, _HOURS_PER_DAY / np.where(rates > 0, rates, 1.0), np.inf)
    out.attrs.update(table.attrs, budget_per_day=budget, objective=objective)
    return out


def estimate_pages(history_or_log, *, methods=METHODS, prior=None, budget=None, level=0.9,
                   posterior_method="grid", unit_hours=1.0) -> pd.DataFrame:
    """One row per page: counts, visit times, every estimator's final value, the posterior, the crawl plan.

    Parameters
    ----------
    history_or_log : CrawlLog or CrawlHistory
        A log read by :mod:`changerate_bayes.io` (intervals in hours), or a history
        (rectangular or ragged) whose time unit is ``unit_hours`` hours.
    methods : sequence of str, default all of :data:`changerate_bayes.estimators.METHODS`
        Estimators whose final value (:func:`changerate_bayes.final_estimates`) gets a
        column. "naive", "lln", "sa" and "sam" assume Poisson crawls and "regular" a
        fixed schedule: the history's own check warns when the intervals say otherwise
        (the warnings are collected in ``table.attrs["warnings"]`` and re-issued).
    prior : Prior, optional
        Prior of the posterior (default ``BetaPrimePrior(1, 2)`` on Δ/p with each
        page's observed crawl rate), see :func:`changerate_bayes.posterior_summary`.
    budget : float, optional
        Crawls per day shared by the optimal allocation (:func:`allocate_crawls`);
        default: the crawls per day the history shows.
    level : float, default 0.9
        Probability of the equal-tailed credible interval.
    posterior_method : {"grid", "conjugate"}, default "grid"
        "grid" is exact for any crawl intervals; "conjugate" assumes Poisson crawling.
    unit_hours : float, default 1.0
        Hours per time unit of the history (1.0 for the readers' histories).

    Returns
    -------
    pandas.DataFrame
        Columns ``page``, ``n_crawls`` (observations: visits after the reference
        copy), ``n_changes`` (Σ I_k), ``first_visit``, ``last_visit`` (UTC; NaT for a
        bare history), ``mean_interval_h``, one column per method, ``lm_rate`` for a log
        with Last-Modified dates (Cho & Garcia-Molina's estimator with the date,
        :func:`~changerate_bayes.estimators.last_modified_rate`; NaN for a page whose
        dates are unreliable or do not date every change seen), ``posterior_mean``,
        ``posterior_lower``, ``posterior_upper`` (all rates in **changes per day**),
        ``crawls_per_day`` and ``crawl_interval_h``. ``attrs`` holds the level,
        prior, budget, objective and the warnings.

    Raises
    ------
    TypeError
        For an input that is not a CrawlLog or CrawlHistory, a non-numeric budget.
    ValueError
        For an unknown or repeated method, ``level`` outside (0, 1), a ``budget``
        <= 0, or what :func:`final_estimates` / :func:`posterior_summary` raise
        (e.g. a history without intervals with ``posterior_method="grid"``).

    References
    ----------
    Avrachenkov, Patil & Thoppe, "Online algorithms for estimating change rates of web
    pages" (estimators, eq. 1-3, 15; allocation, Section 5).

    Examples
    --------
    >>> from changerate_bayes import CrawlHistory, estimate_pages
    >>> h = CrawlHistory.from_segments([1, 0, 0, 1, 1, 0], [6., 6., 6., 12., 12., 12.],
    ...                                lengths=[2, 4], crawl_rate=[1 / 6, 1 / 10.5], page_ids=["a", "b"])
    >>> t = estimate_pages(h, methods=["naive"], budget=4.0)
    >>> t[["page", "n_crawls", "n_changes"]].values.tolist()
    [['a', 2, 1], ['b', 4, 2]]
    >>> t["naive"].round(4).tolist()  # p Î_k / k per day: 4 * 1/2, 24/10.5 * 2/4
    [2.0, 1.1429]
    >>> float(round(t["crawls_per_day"].sum(), 12))
    4.0
    """
    table = page_table(history_or_log, methods=methods, prior=prior, level=level,
                       posterior_method=posterior_method, unit_hours=unit_hours)
    out = allocate_crawls(table, budget)
    from ._validation import StatisticalWarning

    for msg in out.attrs["warnings"]:
        warnings.warn(msg, StatisticalWarning, stacklevel=2)
    return out
