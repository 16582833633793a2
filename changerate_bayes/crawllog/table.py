"""The per-page table: one row per page of a crawl log, with one recommended change rate per page.

Each row holds the page's counts, visit times, its recommended rate ``rate_per_day``
(chosen per page by the evidence, see :func:`recommend_rate`) with its credible interval,
and the crawl allocation; the other estimators' values are columns only on request
(``methods=``). Every rate is in changes per day.
"""

from __future__ import annotations

import dataclasses
import numbers
import re
import threading
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._validation import StatisticalWarning
from ..bayes import crawl_rates, posterior_mean_interval
from ..estimators import METHODS, final_estimates, last_modified_rate
from ..history import CrawlHistory
from ..io import CrawlLog
from .allocate import allocate_crawls

__all__ = [
    "LogEstimates",
    "estimate_pages",
    "page_table",
    "recommend_rate",
    "rate_bounds",
    "bound_notes",
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
#: The recommended rate, its interval, which side the data bound it on (``rate_bound``), how it was
#: chosen, and the posterior's mean and interval, which the crawl allocation uses (all rates in
#: changes per day).
RATE_COLUMNS = (
    "rate_per_day",
    "rate_lower_per_day",
    "rate_upper_per_day",
    "rate_bound",
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
    "equal-tailed credible interval, except on pages whose data bound the rate on one side only (rate_bound): "
    "'lower' where every crawl saw a change, whose interval is [Δ_L, inf) with Δ_L the likelihood's one-sided "
    "bound at the same level (∏(1 - exp(-Δ_L τ_k)) = 1 - level), and 'upper' where no crawl saw one, "
    "[0, -ln(1 - level)/Σ τ_k]; there the posterior interval's other end comes from the prior alone (the default "
    "Beta(1, 2) on Δ/(Δ+p) puts its upper end within a few times the crawl rate), so the table reports the "
    "likelihood's interval, which never excludes a rate the data cannot rule out; rate_per_day stays the "
    "posterior mean on these pages and posterior_lower and posterior_upper keep the posterior's interval; "
    "all rates in changes per day"
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
    signal_audit : changerate_bayes.io.SignalAudit, optional
        With signals: what was done with each
        (:func:`changerate_bayes.crawllog.log_signals`); None without.

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
    signal_audit: Any = None

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


def rate_bounds(history: CrawlHistory, level: float = 0.9):
    """Which pages' rates the data bound on one side only, and the likelihood's one-sided interval.

    A page whose every crawl saw a change has the likelihood ∏_k (1 − e^{−Δ τ_k}),
    increasing in Δ: the data give a lower bound and no upper one. A page with no change
    seen has e^{−Δ Σ_k τ_k}, decreasing in Δ: an upper bound and no lower one. (This is the
    interval-censored Poisson likelihood whose score is the MLE's equation, Avrachenkov,
    Patil & Thoppe, eq. 15; its root is infinite, or 0, on these pages.) Any interval past
    the bound comes from the prior alone.

    Parameters
    ----------
    history : CrawlHistory
        The pages' crawls (rectangular or ragged). With intervals τ_k the interval is
        conditional on them; without, the history needs a ``crawl_rate`` p and the
        interval assumes Poisson crawling at p (below).
    level : float, default 0.9
        Confidence c of the one-sided interval, in (0, 1).

    Returns
    -------
    bound : ndarray of object (str), shape (n_pages,)
        ``"lower"`` for a page with at least one crawl, each of which saw a change;
        ``"upper"`` for a page with at least one crawl and no change seen; ``""``
        otherwise.
    lower, upper : ndarray of float64, shape (n_pages,)
        The one-sided interval, in changes per time unit of the history: ``[Δ_L, inf)``
        on ``"lower"`` pages, ``[0, Δ_U]`` on ``"upper"`` pages, NaN elsewhere.

    Raises
    ------
    TypeError
        If ``history`` is not a CrawlHistory.
    ValueError
        If ``level`` is not in (0, 1); if the history has neither intervals nor a
        crawl rate while some page is bounded.

    Notes
    -----
    *Lower bound.* Δ_L solves ∏_k (1 − e^{−Δ_L τ_k}) = 1 − c: it is the smallest rate
    under which a change at every crawl has probability at least 1 − c. The product is
    increasing in Δ, so Δ_L > Δ if and only if ∏_k (1 − e^{−Δ τ_k}) < 1 − c; hence
    P(all crawls changed and Δ_L > Δ) = ∏_k (1 − e^{−Δ τ_k}) · 1{that product < 1 − c}
    < 1 − c for every true Δ and every τ, and P(Δ_L ≤ Δ) ≥ c unconditionally, taking
    the interval of every other page as whatever else covers Δ (a page that is not
    flagged never reports Δ_L). The root is found per page by Newton's method on log Δ,
    kept inside the bracket [−ln(1 − r)/τ_max, −ln(1 − r)/τ_min], r = (1 − c)^{1/k}
    (the roots with every interval equal to τ_max or to τ_min), vectorised over pages.
    With one interval τ, Δ_L = −ln(c)/τ; with k equal intervals, 1 − e^{−Δ_L τ} =
    (1 − c)^{1/k}.

    *Upper bound.* No change in total time T = Σ_k τ_k has probability e^{−ΔT};
    Δ_U = −ln(1 − c)/T makes it 1 − c, and as above P(no change seen and Δ_U < Δ) =
    e^{−ΔT} · 1{e^{−ΔT} < 1 − c} < 1 − c.

    *Without intervals* (Poisson crawling at rate p, intervals unknown): a crawl sees a
    change with probability Δ/(Δ + p) (paper eq. 4), independently, so the same argument
    gives Δ_L = p r/(1 − r) and Δ_U = p ((1 − c)^{−1/k} − 1), r = (1 − c)^{1/k},
    covering Δ with probability at least c over the crawl times as well.

    References
    ----------
    Avrachenkov, Patil & Thoppe, "Online algorithms for estimating change rates of web
    pages" (the interval-censored likelihood, eq. 15; the change probability, eq. 4).

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes import CrawlHistory
    >>> h = CrawlHistory.from_segments([1, 1, 1, 0, 0, 1, 0], [30.0] * 7, lengths=[1, 2, 2, 2])
    >>> bound, lower, upper = rate_bounds(h, level=0.9)
    >>> bound.tolist()
    ['lower', 'lower', 'upper', '']
    >>> bool(np.isclose(lower[0], -np.log(0.9) / 30))  # one interval: 1 - exp(-30 Δ) = 0.1
    True
    >>> bool(np.isclose(1 - np.exp(-30 * lower[1]), np.sqrt(0.1)))  # two: each factor √0.1
    True
    >>> bool(np.isclose(upper[2], np.log(10) / 60)), upper[:2].tolist(), float(lower[2])
    (True, [inf, inf], 0.0)
    """
    if not isinstance(history, CrawlHistory):
        raise TypeError(f"`history` must be a CrawlHistory; got {type(history).__name__}")
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0.0 < level < 1.0:
        raise ValueError(f"`level` must be a number in (0, 1); got {level!r}")
    level = float(level)
    lengths = np.asarray(history.lengths, dtype=np.int64)
    n = lengths.size
    starts = np.asarray(history.offsets[:-1])
    changed = history.flat_changed.astype(np.int64)
    n_changes = np.add.reduceat(changed, starts) if changed.size else np.zeros(n, np.int64)
    n_changes = np.where(lengths > 0, n_changes, 0)  # reduceat repeats the next page's first value
    is_lower = (lengths > 0) & (n_changes == lengths)
    is_upper = (lengths > 0) & (n_changes == 0)
    bound = np.where(is_lower, "lower", np.where(is_upper, "upper", "")).astype(object)
    lower, upper = np.full(n, np.nan), np.full(n, np.nan)
    lower[is_lower], upper[is_lower] = _lower_bound(history, is_lower, level), np.inf
    upper[is_upper], lower[is_upper] = _upper_bound(history, is_upper, level), 0.0
    return bound, lower, upper


def _log1mexp(y):
    """log(1 − e^{−y}) for y > 0, accurate at both ends."""
    small = y < np.log(2.0)
    with np.errstate(divide="ignore"):
        return np.where(small, np.log(-np.expm1(-np.where(small, y, 1.0))), np.log1p(-np.exp(-np.where(small, 1.0, y))))


def _page_rates(history, pages, name):
    p = crawl_rates(history)
    if p is None:
        raise ValueError(f"`history` needs intervals or a crawl_rate for the {name} bound of its pages")
    return p[pages]


def _upper_bound(history, pages, level):
    if not pages.any():
        return np.zeros(0)
    k = history.lengths[pages]
    if history.flat_intervals is None:  # Poisson crawling: no change in k crawls has probability (p/(Δ+p))^k
        return _page_rates(history, pages, "upper") * np.expm1(-np.log1p(-level) / k)
    total = np.add.reduceat(history.flat_intervals, np.asarray(history.offsets[:-1]))[pages]
    return -np.log1p(-level) / total


def _lower_bound(history, pages, level, max_iter=100):
    if not pages.any():
        return np.zeros(0)
    k = history.lengths[pages].astype(np.float64)
    log_target = np.log1p(-level)  # log(1 - c)
    r = np.exp(log_target / k)  # (1 - c)^(1/k): each factor's value when all intervals are equal
    if history.flat_intervals is None:  # Poisson crawling: a change at each of k crawls has probability (Δ/(Δ+p))^k
        return _page_rates(history, pages, "lower") * r / -np.expm1(log_target / k)
    keep = np.repeat(pages, history.lengths)
    tau = history.flat_intervals[keep]
    starts = np.concatenate(([0], np.cumsum(history.lengths[pages])[:-1]))
    page = np.repeat(np.arange(k.size), history.lengths[pages])
    y_r = -np.log1p(-r)  # Δ τ at which 1 - e^{-Δτ} = r
    lo = np.log(y_r / np.maximum.reduceat(tau, starts))  # g(lo) <= 0 <= g(hi), x = log Δ
    hi = np.log(y_r / np.minimum.reduceat(tau, starts))
    x = 0.5 * (lo + hi)
    for _ in range(max_iter):
        y = np.exp(x)[page] * tau
        g = np.add.reduceat(_log1mexp(y), starts) - log_target
        slope = np.add.reduceat(y * np.exp(-y) / -np.expm1(-y), starts)  # d/dx of Σ log(1 - e^{-y}) > 0
        lo, hi = np.where(g < 0, x, lo), np.where(g > 0, x, hi)
        step = np.where(slope > 0, g / np.where(slope > 0, slope, 1.0), np.inf)
        new = x - step
        new = np.where((new > lo) & (new < hi), new, 0.5 * (lo + hi))  # Newton inside the bracket, else bisect
        done = (np.abs(new - x) <= 1e-13 * np.maximum(1.0, np.abs(x))) | (hi - lo <= 1e-13 * np.maximum(1.0, np.abs(x)))
        x = new
        if done.all():
            break
    return np.exp(x)


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
    check (:func:`merge_notes`, :func:`one_note_per_check`); ``attrs["notes"]`` counts the
    bounded pages of the whole table (:func:`bound_notes`).
    """
    table = pd.concat(tables, ignore_index=True)
    table = table.iloc[np.argsort(np.concatenate(keys), kind="stable")].reset_index(drop=True)
    table.attrs.update(tables[0].attrs)
    table.attrs["warnings"] = one_note_per_check(merge_notes(w for t in tables for w in t.attrs["warnings"]))
    table.attrs["notes"] = bound_notes(table)  # counted over all the parts' pages
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
    bound, bound_lower, bound_upper = rate_bounds(history, level)
    flagged = bound != ""  # the likelihood's one-sided interval: the posterior's other end is the prior's
    out["rate_lower_per_day"] = np.where(flagged, bound_lower * per_day, post.lower * per_day)
    out["rate_upper_per_day"] = np.where(flagged, bound_upper * per_day, post.upper * per_day)
    out["rate_bound"] = bound
    out["posterior_mean"] = mean
    out["posterior_lower"], out["posterior_upper"] = post.lower * per_day, post.upper * per_day
    for method in methods:
        out[method] = values[method]
    table = pd.DataFrame(out)
    first = [*PAGE_COLUMNS, *RATE_COLUMNS]
    table = table[first + [c for c in table.columns if c not in first]]  # then the methods (and lm_rate)
    table.attrs.update(
        level=float(level),
        prior=post.prior,
        rates="changes per day",
        rate_rule=RATE_RULE,
        warnings=merge_notes(caught),
        notes=bound_notes(table),
    )
    return table


def bound_notes(table: pd.DataFrame) -> list[str]:
    """The notes on the pages whose rate is only bounded (column ``rate_bound``), one per side.

    Examples
    --------
    >>> bound_notes(pd.DataFrame({"rate_bound": ["lower", "", "upper", "upper"]}))[0][:60]
    '1 page(s) of 4 saw a change at every crawl: their rate is on'
    """
    bound = table["rate_bound"].to_numpy()
    n_lower, n_upper, n = int(np.sum(bound == "lower")), int(np.sum(bound == "upper")), len(bound)
    notes = []
    if n_lower:
        notes.append(
            f"{n_lower} page(s) of {n} saw a change at every crawl: their rate is only bounded below "
            "(rate_bound 'lower'; the interval is [rate_lower_per_day, inf), and rate_per_day, the posterior "
            "mean, rests on the prior): crawl them more often to learn their rate"
        )
    if n_upper:
        notes.append(
            f"{n_upper} page(s) of {n} saw no change: their rate is only bounded above (rate_bound 'upper'; the "
            "interval is [0, rate_upper_per_day], and rate_per_day, the posterior mean, rests on the prior)"
        )
    return notes


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
        ``rate_upper_per_day`` (the posterior's equal-tailed ``level`` credible interval,
        except on the pages ``rate_bound`` flags), ``rate_bound`` (``"lower"`` where every
        crawl saw a change, ``"upper"`` where none did, else ``""``: there the data bound the
        rate on one side only, and the interval is the likelihood's one-sided ``level``
        interval of :func:`rate_bounds`, ``[Δ_L, inf)`` or ``[0, Δ_U]``, while
        ``rate_per_day`` stays the posterior mean), ``rate_method`` (``"mle"`` or
        ``"posterior_mean"``); ``posterior_mean``,
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
        (``rate_rule``), the estimators' warnings, each once, and ``notes`` counting the
        bounded pages (:func:`bound_notes`).

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
    warn_table_notes(out)
    return out


def warn_table_notes(table) -> None:
    """Issue a page table's notes (``attrs["warnings"]``) as StatisticalWarning, at the line that
    called the caller (the user's call of :func:`estimate_pages` or of another engine's entry)."""
    for msg in table.attrs["warnings"]:
        warnings.warn(msg, StatisticalWarning, stacklevel=3)


@dataclasses.dataclass(frozen=True)
class LogOptions:
    """How a log is read (``format`` … ``page_key``), estimated (``methods`` … ``posterior_method``)
    and allocated (``budget``, ``hosts``, ``host_budgets``): the keyword arguments of
    :func:`changerate_bayes.crawllog.estimate` and of the engines' entry points, unchecked (each
    engine checks what it reads)."""

    format: str = "auto"
    columns: Any = None
    change_from: str = "auto"
    ota_changed: str | None = None
    page_key: str = "url"
    methods: tuple = ()
    prior: Any = None
    budget: Any = None
    level: float = 0.9
    posterior_method: str = "grid"
    hosts: Any = None
    host_budgets: Any = None

    @classmethod
    def of(cls, arguments: dict) -> LogOptions:
        """The options among an entry point's ``arguments`` (its ``locals()`` on entry); the others
        keep their defaults."""
        return cls(**{f.name: arguments[f.name] for f in dataclasses.fields(cls) if f.name in arguments})

    @property
    def estimation(self) -> dict:
        """The keyword arguments of :func:`~changerate_bayes.crawllog.page_table`."""
        return dict(methods=self.methods, prior=self.prior, level=self.level, posterior_method=self.posterior_method)

    def allocate(self, table):
        """:func:`~changerate_bayes.crawllog.allocate_crawls` of ``table`` within the budget and host caps."""
        return allocate_crawls(table, self.budget, hosts=self.hosts, host_budgets=self.host_budgets)

    def page_table(self, log):
        """The allocated :func:`~changerate_bayes.crawllog.page_table` of ``log`` (the table's warnings
        in its ``attrs``, not issued)."""
        return self.allocate(page_table(log, **self.estimation))
