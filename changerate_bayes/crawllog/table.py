"""The per-page table: one row per page of a crawl log, with one recommended change rate per page.

Each row holds the page's counts, visit times, its recommended rate ``rate_per_day``
(chosen per page by the evidence, see :func:`recommend_rate`) with its credible interval,
and the crawl allocation; the other estimators' values are columns only on request
(``methods=``). Every rate is in changes per day.
"""

from __future__ import annotations

import numbers
import re
import threading
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import StatisticalWarning
from ..bayes import posterior_mean_interval
from ..estimators import METHODS, final_estimates, last_modified_rate
from ..history import CrawlHistory
from ..io import CrawlLog
from .allocate import allocate_crawls

__all__ = [
    "LogEstimates",
    "estimate_pages",
    "page_table",
    "recommend_rate",
    "merge_notes",
    "one_note_per_check",
    "concat_part_tables",
    "PAGE_COLUMNS",
    "RATE_COLUMNS",
    "IDENTIFIED_MIN",
    "RATE_RULE",
]


#: Columns always present, in order (then the rate columns, one per requested method, the allocation).
PAGE_COLUMNS = ("page", "n_crawls", "n_changes", "first_visit", "last_visit", "mean_interval_h")
#: The recommended rate, its credible interval, how it was chosen, and the posterior's mean and
#: interval, which the crawl allocation uses (all rates in changes per day).
RATE_COLUMNS = (
    "rate_per_day",
    "rate_lower_per_day",
    "rate_upper_per_day",
    "rate_method",
    "posterior_mean",
    "posterior_lower",
    "posterior_upper",
)
#: A page's MLE is its recommended rate once at least this many of its crawls saw a change
#: and at least this many did not; otherwise the posterior mean is.
IDENTIFIED_MIN = 10
_HOURS_PER_DAY = 24.0
RATE_RULE = (
    f"rate_per_day is the maximum-likelihood estimate (interval-censored Poisson, eq. 15) on pages with at "
    f"least {IDENTIFIED_MIN} crawls that saw a change and {IDENTIFIED_MIN} that did not, and the posterior mean "
    "elsewhere (the MLE is 0 with no change seen, infinite when every crawl saw one, and no more accurate than "
    "the posterior mean below that evidence); rate_lower_per_day and rate_upper_per_day are the posterior's "
    "equal-tailed credible interval; all rates in changes per day"
)


@dataclass(frozen=True)
class LogEstimates:
    """The per-page table of a crawl log with its audit: what every engine of
    :func:`changerate_bayes.crawllog.estimate` returns.

    Attributes
    ----------
    table : pandas.DataFrame
        The per-page table of :func:`estimate_pages`, pages in order of first appearance
        in the log.
    audit : changerate_bayes.io.Audit
        The audit of the whole log (the parts' audits summed).
    engine : {"pandas", "buckets", "dask"}
        The engine that computed it.
    n_parts : int, default 1
        Parts the log was reduced in: buckets of pages ("buckets"), partitions or groups
        of files ("dask"), 1 ("pandas").
    spilled_bytes : int, default 0
        Bytes of compact rows written to temporary files ("buckets"; 0 when the log
        fitted in memory, and for the other engines).
    shuffled : bool, default False
        Whether visits were moved between Dask workers to bring each page's visits
        together ("dask"; False when the files already partitioned the pages).
    log : CrawlLog, optional
        The visits, when asked for (``keep_log`` of :func:`changerate_bayes.crawllog.estimate`).
    format : str, optional
        The log format of the files read (None for a log given in memory).

    ``n_buckets`` and ``n_partitions`` are other names of ``n_parts``.
    """

    table: pd.DataFrame
    audit: object
    engine: str = "pandas"
    n_parts: int = 1
    spilled_bytes: int = 0
    shuffled: bool = False
    log: CrawlLog | None = None
    format: str | None = None

    @property
    def n_buckets(self) -> int:
        """``n_parts``: the buckets of pages of the out-of-core engine."""
        return self.n_parts

    @property
    def n_partitions(self) -> int:
        """``n_parts``: the partitions (or groups of files) of the Dask engine."""
        return self.n_parts


def recommend_rate(n_changes, n_crawls, mle, posterior_mean):
    """The recommended change rate of each page, and which estimate it is.

    Parameters
    ----------
    n_changes, n_crawls : array_like of int, shape (n_pages,)
        Crawls that saw a change (Σ I_k) and crawls (observations after the reference copy).
    mle, posterior_mean : array_like of float, shape (n_pages,)
        The page's maximum-likelihood estimate and posterior mean (same unit; the result
        is in that unit).

    Returns
    -------
    rate : ndarray of float64, shape (n_pages,)
    method : ndarray of str, shape (n_pages,)
        ``"mle"`` where at least :data:`IDENTIFIED_MIN` crawls saw a change and at least
        :data:`IDENTIFIED_MIN` did not (and the MLE is finite and > 0), else
        ``"posterior_mean"``.

    Notes
    -----
    With few changed (or few unchanged) crawls the interval-censored likelihood is flat on
    one side in log Δ: the MLE is 0 before the first change, infinite when every crawl saw
    one, and noisy in between, while the posterior mean stays finite and shrinks towards
    the prior (Δ near the crawl rate). Once both counts reach :data:`IDENTIFIED_MIN` the
    likelihood dominates the prior and the two agree; the MLE is then preferred because it
    does not depend on the prior, whose scale is the page's own crawl rate (the crawler's
    past choice), and it attains the Cramér-Rao bound (the ``convergence`` study).
    Measured with ``benchmarks/check_rate_choice.py`` (20,000 simulated pages, log Δ ~
    Normal(log 0.5, 1.5) per hour, Poisson crawls at 1/h): RMS error of log Δ̂ with
    min(changed, unchanged) in [1, 3): MLE 0.70-0.82, posterior mean 0.59-0.78; in
    [10, 20): 0.248-0.355 both (to 0.005); at >= 20 (k = 200): 0.141 and 0.142. With none
    of one kind (min = 0) the MLE is 0 or infinite on every page. In relative error of Δ
    neither wins throughout above the threshold (k = 200: 0.262 against 0.280; k = 20:
    0.439 against 0.410), so the choice there rests on the MLE's freedom from the prior.
    """
    n_changes = np.asarray(n_changes)
    n_crawls = np.asarray(n_crawls)
    mle = np.asarray(mle, dtype=np.float64)
    posterior_mean = np.asarray(posterior_mean, dtype=np.float64)
    use_mle = (n_changes >= IDENTIFIED_MIN) & (n_crawls - n_changes >= IDENTIFIED_MIN) & np.isfinite(mle) & (mle > 0)
    return np.where(use_mle, mle, posterior_mean), np.where(use_mle, "mle", "posterior_mean").astype(object)


_ASSUMES = re.compile(r"^method '([^']+)' assumes ")


def merge_notes(messages) -> list[str]:
    """The estimators' warnings, each stated once: notes that differ only by the method
    they name ("method 'lln' assumes ...") become one note naming all of them."""
    merged: dict[str, list[str | None]] = {}
    for msg in dict.fromkeys(messages):
        m = _ASSUMES.match(msg)
        key = msg[m.end() :] if m else msg
        merged.setdefault(key, []).append(m.group(1) if m else None)
    out = []
    for key, names in merged.items():
        names = [n for n in names if n is not None]
        if not names:
            out.append(key)
        elif len(names) == 1:
            out.append(f"method {names[0]!r} assumes {key}")
        else:
            out.append(f"methods {', '.join(repr(n) for n in names)} assume {key}")
    return out


def one_note_per_check(notes: list[str]) -> list[str]:
    """One note per model check, for engines that run the checks part by part (Dask
    partitions, buckets of pages): the same check can come back with each part's numbers;
    the first is kept, saying how many parts failed it."""
    kinds: dict[str, list[str]] = {}
    for note in notes:  # the same check: the same words, whatever its numbers
        kinds.setdefault(re.sub(r"\d+(\.\d+)?(e[-+]?\d+)?", "#", note), []).append(note)
    return [
        same[0]
        if len(same) == 1
        else f"{same[0]} (this check ran on each of the parts' pages; {len(same)} parts failed it, this is the first)"
        for same in kinds.values()
    ]


def concat_part_tables(tables, keys) -> pd.DataFrame:
    """The page tables of the parts (Dask partitions, buckets of pages) as one table.

    ``keys[i]`` (one integer per row of ``tables[i]``) orders the pages, e.g. by the row
    where each was first seen; equal keys keep the parts' order. ``attrs`` come from the
    first table, and ``attrs["warnings"]`` is every part's warnings merged, one note per
    check (:func:`merge_notes`, :func:`one_note_per_check`).
    """
    table = pd.concat(tables, ignore_index=True)
    table = table.iloc[np.argsort(np.concatenate(keys), kind="stable")].reset_index(drop=True)
    table.attrs.update(tables[0].attrs)
    table.attrs["warnings"] = one_note_per_check(merge_notes(w for t in tables for w in t.attrs["warnings"]))
    return table


def _check_methods(methods) -> tuple:
    if isinstance(methods, str):
        methods = (methods,)
    methods = tuple(methods)
    bad = [m for m in methods if m not in METHODS]
    if bad:
        raise ValueError(f"`methods` must be among {list(METHODS)}; got {bad}")
    if len(set(methods)) != len(methods):
        raise ValueError(f"`methods` must not repeat a method; got {list(methods)}")
    return methods


def page_table(
    history_or_log, *, methods=(), prior=None, level=0.9, posterior_method="grid", unit_hours=1.0
) -> pd.DataFrame:
    """:func:`estimate_pages` without the crawl allocation (each row depends on its page only)."""
    if isinstance(history_or_log, CrawlLog):
        history, first, last = history_or_log.history, history_or_log.first_visit, history_or_log.last_visit
    elif isinstance(history_or_log, CrawlHistory):
        history, first, last = history_or_log, None, None
    else:
        raise TypeError(f"`history_or_log` must be a CrawlLog or a CrawlHistory; got {type(history_or_log).__name__}")
    methods = _check_methods(methods)
    if isinstance(unit_hours, bool) or not isinstance(unit_hours, numbers.Real) or not unit_hours > 0:  # type: ignore[operator]  # typeshed's numbers.Real declares no > with int
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
        "page": ids,
        "n_crawls": lengths,
        "n_changes": n_changes,
        "first_visit": pd.to_datetime(nat if first is None else first, utc=True),
        "last_visit": pd.to_datetime(nat if last is None else last, utc=True),
        "mean_interval_h": mean_tau,
    }
    caught, values = [], {"mle": np.full(n, np.nan)}  # no intervals: no MLE, the posterior mean is chosen
    candidates = ("mle",) if tau is not None else ()  # the MLE is a candidate for the recommended rate
    for method in dict.fromkeys((*candidates, *methods)):
        with _CAPTURE, warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            values[method] = np.atleast_1d(final_estimates(history, method)) * per_day
        caught += [str(x.message) for x in w]
    age = getattr(history_or_log, "last_modified_age", None)
    if age is not None:  # Cho & Garcia-Molina's estimator with the last-modification date
        out["lm_rate"] = _last_modified_rates(history, age) * per_day
        liar = getattr(history_or_log, "last_modified_unreliable", None)
        if liar is not None:  # the server reports the fetch time: its dates are not used
            out["lm_unreliable"] = np.asarray(liar, dtype=bool)
    # the table shows the mean and interval only: the sd's grid is not computed
    post = posterior_mean_interval(history, prior=prior, method=posterior_method, level=level)
    mean = post.mean * per_day
    out["rate_per_day"], out["rate_method"] = recommend_rate(n_changes, lengths, values["mle"], mean)
    out["rate_lower_per_day"] = post.lower * per_day
    out["rate_upper_per_day"] = post.upper * per_day
    out["posterior_mean"] = mean
    out["posterior_lower"], out["posterior_upper"] = out["rate_lower_per_day"], out["rate_upper_per_day"]
    for method in methods:
        out[method] = values[method]
    table = pd.DataFrame(out)
    first = [*PAGE_COLUMNS, *RATE_COLUMNS]
    table = table[first + [c for c in table.columns if c not in first]]  # then the methods (and lm_rate)
    table.attrs.update(
        level=float(level), prior=post.prior, rates="changes per day", rate_rule=RATE_RULE, warnings=merge_notes(caught)
    )
    return table


#: ``warnings.catch_warnings`` swaps the process's warning state: two threads capturing at once (the
#: tasks of a Dask worker with several threads) would lose or split each other's notes, so the
#: estimators whose warnings :func:`page_table` gathers run one thread at a time.
_CAPTURE = threading.Lock()


def _last_modified_rates(history, age) -> np.ndarray:
    """Each page's :func:`~changerate_bayes.estimators.last_modified_rate` (NaN where a change is undated)."""
    lengths = history.lengths
    page = np.repeat(np.arange(lengths.size), lengths)
    dated = np.bincount(page, weights=np.isnan(age), minlength=lengths.size) == 0
    out = np.full(lengths.size, np.nan)
    if dated.any():
        keep = dated[page]
        out[dated] = last_modified_rate(
            history.flat_changed[keep], history.flat_intervals[keep], age[keep], lengths=lengths[dated]
        )
    return out


def estimate_pages(
    history_or_log, *, methods=(), prior=None, budget=None, level=0.9, posterior_method="grid", unit_hours=1.0
) -> pd.DataFrame:
    """One row per page: counts, visit times, the recommended change rate with its interval, the crawl plan.

    Parameters
    ----------
    history_or_log : CrawlLog or CrawlHistory
        A log read by :mod:`changerate_bayes.io` (intervals in hours), or a history
        (rectangular or ragged) whose time unit is ``unit_hours`` hours.
    methods : sequence of str, default ()
        Further estimators whose final value (:func:`changerate_bayes.final_estimates`,
        per day) gets a column, for comparison; :data:`changerate_bayes.estimators.METHODS`
        gives all seven. "naive", "lln", "sa" and "sam" assume Poisson crawls and
        "regular" a fixed schedule: the history's own check warns when the intervals say
        otherwise (the warnings are collected, each stated once, in
        ``table.attrs["warnings"]`` and re-issued). SA and SAM may be far from converged
        after a page's few crawls: they can differ from the recommended rate by orders of
        magnitude.
    prior : Prior, optional
        Prior of the posterior (default ``BetaPrimePrior(1, 2)`` on Δ/p with each
        page's observed crawl rate), see :func:`changerate_bayes.posterior_summary`.
    budget : float, optional
        Crawls per day shared by the recommended allocation (:func:`allocate_crawls`);
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
        bare history), ``mean_interval_h``; ``rate_per_day``, the recommended rate
        (:func:`recommend_rate`: the MLE where at least :data:`IDENTIFIED_MIN` crawls saw a
        change and as many did not, else the posterior mean), ``rate_lower_per_day`` and
        ``rate_upper_per_day`` (the posterior's equal-tailed ``level`` credible interval),
        ``rate_method`` (``"mle"`` or ``"posterior_mean"``); ``posterior_mean``,
        ``posterior_lower`` and ``posterior_upper``, the posterior's summary that the
        allocation uses (the interval is the rate's); one column per requested method; ``lm_rate`` for a log with Last-Modified
        dates (Cho & Garcia-Molina's estimator with the date,
        :func:`~changerate_bayes.estimators.last_modified_rate`; NaN for a page whose
        dates are unreliable or do not date every change seen) and, for a log read
        from files, ``lm_unreliable`` (True where the page's server reports the fetch
        time as Last-Modified, or a change its content does not show: its dates are
        not used; :attr:`changerate_bayes.io.Audit.last_modified_unreliable_pages`); ``crawls_per_day``,
        ``crawl_interval_h`` (finite) and ``at_revisit_bound`` of :func:`allocate_crawls`
        (the recommended :data:`RECOMMENDED_POLICY`, named in ``attrs["policy"]``). Every
        rate is in **changes per day**. ``attrs`` holds the level, prior, budget,
        objective, policy, the revisit bound, the rule of the recommended rate
        (``rate_rule``) and the estimators' warnings, each once.

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
    >>> t[["page", "n_crawls", "n_changes", "rate_method"]].values.tolist()
    [['a', 2, 1, 'posterior_mean'], ['b', 4, 2, 'posterior_mean']]
    >>> t["naive"].round(4).tolist()  # p Î_k / k per day: 4 * 1/2, 24/10.5 * 2/4
    [2.0, 1.1429]
    >>> float(round(t["crawls_per_day"].sum(), 12))
    4.0
    """
    table = page_table(
        history_or_log,
        methods=methods,
        prior=prior,
        level=level,
        posterior_method=posterior_method,
        unit_hours=unit_hours,
    )
    out = allocate_crawls(table, budget)
    for msg in out.attrs["warnings"]:
        warnings.warn(msg, StatisticalWarning, stacklevel=2)
    return out
