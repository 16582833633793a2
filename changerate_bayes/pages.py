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

import numpy as np
import pandas as pd

from .bayes._summary import posterior_mean_interval
from .estimators import METHODS, final_estimates
from .history import CrawlHistory
from .scheduling import index_crawl_intervals, optimal_crawl_rates

__all__ = ["estimate_pages", "allocate_crawls", "recommend_rate", "merge_notes", "one_note_per_check",
           "PAGE_COLUMNS", "RATE_COLUMNS", "IDENTIFIED_MIN", "RECOMMENDED_POLICY", "MAX_INTERVAL_FACTOR"]

#: The allocation ``allocate_crawls`` makes by default: the choice the replay of real pages supports
#: (study ``scheduling_replay``), see :func:`allocate_crawls`.
RECOMMENDED_POLICY = "auto"
#: No page's interval exceeds this many round-robin intervals N/B.
MAX_INTERVAL_FACTOR = 4.0
_POLICIES = ("auto", "index_mean", "uniform", "plug_in")
_INTERVAL_RANGE = (1e-4, 1e5)  # days: the intervals the index allocation considers

#: Columns always present, in order (then the rate columns, one per requested method, the allocation).
PAGE_COLUMNS = ("page", "n_crawls", "n_changes", "first_visit", "last_visit", "mean_interval_h")
#: The recommended rate, its credible interval, how it was chosen, and the posterior's mean and
#: interval, which the crawl allocation uses (all rates in changes per day).
RATE_COLUMNS = ("rate_per_day", "rate_lower_per_day", "rate_upper_per_day", "rate_method", "posterior_mean",
                "posterior_lower", "posterior_upper")
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
    use_mle = ((n_changes >= IDENTIFIED_MIN) & (n_crawls - n_changes >= IDENTIFIED_MIN)
               & np.isfinite(mle) & (mle > 0))
    return np.where(use_mle, mle, posterior_mean), np.where(use_mle, "mle", "posterior_mean").astype(object)


_ASSUMES = re.compile(r"^method '([^']+)' assumes ")


def merge_notes(messages) -> list[str]:
    """The estimators' warnings, each stated once: notes that differ only by the method
    they name ("method 'lln' assumes ...") become one note naming all of them."""
    merged: dict[str, list[str]] = {}
    for msg in dict.fromkeys(messages):
        m = _ASSUMES.match(msg)
        key = msg[m.end():] if m else msg
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
    return [same[0] if len(same) == 1 else
            f"{same[0]} (this check ran on each of the parts' pages; {len(same)} parts failed it, "
            "this is the first)" for same in kinds.values()]


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


def _check_budget(budget):
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
        raise TypeError(f"`budget` must be a number of crawls per day; got {type(budget).__name__}")
    budget = float(budget)
    if not (np.isfinite(budget) and budget > 0):
        raise ValueError(f"`budget` must be > 0 and finite (crawls per day); got {budget}")
    return budget


def page_table(history_or_log, *, methods=(), prior=None, level=0.9, posterior_method="grid",
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
    table.attrs.update(level=float(level), prior=post.prior, rates="changes per day", rate_rule=RATE_RULE,
                       warnings=merge_notes(caught))
    return table


#: ``warnings.catch_warnings`` swaps the process's warning state: two threads capturing at once (the
#: tasks of a Dask worker with several threads) would lose or split each other's notes, so the
#: estimators whose warnings :func:`page_table` gathers run one thread at a time.
_CAPTURE = threading.Lock()


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


def allocate_crawls(table: pd.DataFrame, budget=None, *, policy: str = RECOMMENDED_POLICY,
                    objective="binary_freshness", weights=None,
                    max_interval_factor: float = MAX_INTERVAL_FACTOR) -> pd.DataFrame:
    """Add a crawl rate and interval for every page to a page table (a copy), within ``budget``.

    ``policy="index_mean"`` is the stationary schedule of the index policy
    (:class:`~changerate_bayes.replay.IndexPolicy`, mean form): page i is crawled every
    I_i, where its freshness index w_i E[ν_Δ(I)] reaches a price λ, ν_Δ(t) =
    (1 − e^{−Δt}(1 + Δt))/Δ averaged over the page's posterior, and λ is such that
    Σ_i 1/I_i = budget (:func:`~changerate_bayes.scheduling.index_crawl_intervals`: each
    I_i and λ exact to rounding; intervals are sought from 1e-4 to 1e5 days).
    ``policy="uniform"`` is round robin (every interval N/B).
    ``policy="plug_in"`` is :func:`changerate_bayes.scheduling.optimal_crawl_rates` of the
    posterior means (``objective``), the allocation of earlier versions, which the replay
    puts far below round robin (0.60-0.96 of its freshness).

    ``policy="auto"`` (the default, :data:`RECOMMENDED_POLICY`) follows the replay of the
    1,261 Open Terms Archive documents (study ``scheduling_replay``, 6-hour steps): the
    index's mean form beat round robin at 1× and 3× the total change rate (weighted
    freshness 0.808 vs 0.802 and 0.915 vs 0.906) and lost to it at 0.1× and 0.3× (0.406
    vs 0.413, 0.590 vs 0.610). So "auto" is "index_mean" when the budget is at least the
    total estimated change rate Σ posterior means, and "uniform" below it. (The Thompson
    form of the index, best on average over the budgets, redraws its rates every period
    and is not a fixed table.) ``attrs["policy"]`` names the choice (and ``estimate`` prints it).

    No page is left out: every interval is at most M = ``max_interval_factor`` × N/B days
    (N pages, B the budget; N/B the round-robin interval). A page the allocation would
    crawl less often than that, or never (the index of a page that changes very often
    saturates at w/Δ below the price, and the plug-in allocation gives such pages rate 0),
    gets M and ``at_revisit_bound = True``; ``attrs["n_at_revisit_bound"]`` counts them. The
    other pages' rates are scaled to spend what is left (if every page is in that case, the
    budget is shared equally: intervals N/B).

    Parameters
    ----------
    table : pandas.DataFrame
        A page table (:func:`page_table`): ``posterior_mean`` (per day) and, for the index,
        ``posterior_lower``/``posterior_upper`` (the posterior is taken as the log-normal
        matched to that interval at ``table.attrs["level"]``, default 0.9; a point mass at
        the mean when the lower bound is 0); ``mean_interval_h`` when ``budget`` is None.
    budget : float, optional
        Crawls per day over all pages, > 0; default: the crawls the log shows (Σ 24 / mean interval).
    policy : {"auto", "index_mean", "uniform", "plug_in"}, default "auto"
    objective : str, default "binary_freshness"
        Objective of the plug-in allocation (see ``optimal_crawl_rates``).
    weights : array_like of shape (N,), optional
        w_i >= 0, importance of each page (default 1).
    max_interval_factor : float, default 4.0
        M in round-robin intervals, >= 1.

    Returns
    -------
    pandas.DataFrame
        The table with ``crawls_per_day`` (1/I_i, summing to the budget), ``crawl_interval_h``
        (24 I_i, finite, <= 24 M) and ``at_revisit_bound`` (bool); ``attrs`` gains
        ``budget_per_day``, ``objective``, ``policy`` (the policy's name),
        ``max_interval_h`` and ``n_at_revisit_bound`` (and ``price`` for the index).

    Raises
    ------
    ValueError
        If ``budget`` is not > 0 and finite, ``policy`` is unknown, ``max_interval_factor`` < 1,
        ``weights`` has the wrong length or negative values, or ``posterior_mean`` is not
        finite and >= 0.
    TypeError
        For a non-numeric ``budget``.

    References
    ----------
    J. Cho and H. Garcia-Molina, "Effective page refresh policies for web crawlers" (2003),
    the Lagrangian condition w ν(I) = λ; the index policy: :mod:`changerate_bayes.replay`.
    """
    budget = _check_budget(budget)
    if policy not in _POLICIES:
        raise ValueError(f"`policy` must be one of {list(_POLICIES)}; got {policy!r}")
    if (isinstance(max_interval_factor, bool) or not isinstance(max_interval_factor, numbers.Real)
            or not (np.isfinite(max_interval_factor) and max_interval_factor >= 1)):
        raise ValueError(f"`max_interval_factor` must be a finite number >= 1; got {max_interval_factor!r}")
    if budget is None:
        budget = float(np.nansum(_HOURS_PER_DAY / table["mean_interval_h"].to_numpy()))
        if not (np.isfinite(budget) and budget > 0):
            raise ValueError("the log shows no crawls to reallocate (`mean_interval_h` gives no crawls per day): "
                             "give `budget`")
    n = len(table)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (n,) or not (np.isfinite(w).all() and (w >= 0).all()):
        raise ValueError(f"`weights` must be {n} finite values >= 0 (one per row); got shape {w.shape}")
    mean = table["posterior_mean"].to_numpy(dtype=np.float64)
    bad = ~(np.isfinite(mean) & (mean >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"column 'posterior_mean' must be finite and >= 0 (changes per day); got {mean[i]} "
                         f"at row {i}")
    out = table.copy()
    attrs = dict(table.attrs)
    if n == 0:
        out["crawls_per_day"] = np.zeros(0)
        out["crawl_interval_h"] = np.zeros(0)
        out["at_revisit_bound"] = np.zeros(0, dtype=bool)
        out.attrs.update(attrs, budget_per_day=budget, objective=objective, policy=policy, max_interval_h=np.inf,
                         n_at_revisit_bound=0)
        return out
    cap = float(max_interval_factor) * n / budget  # days
    if policy == "auto":
        policy = "index_mean" if budget >= float(mean.sum()) else "uniform"
    if policy == "uniform":
        rates = np.full(n, budget / n)
        bound = np.zeros(n, dtype=bool)
        extra = {}
    elif policy == "plug_in":
        rates = optimal_crawl_rates(table["posterior_mean"].to_numpy(), w if weights is not None else 1.0, budget,
                                    objective=objective)
        bound = rates < 1.0 / cap
        left = budget - bound.sum() / cap
        rest = rates[~bound].sum()
        rates = np.where(bound, 1.0 / cap, rates * (left / rest if rest > 0 else 0.0))
        extra = {}
    else:
        # each page's posterior: the log-normal matched to its equal-tailed interval at the
        # table's level, or a point mass at the posterior mean (a lower bound of 0, lower = upper)
        from scipy.stats import norm

        lo = table["posterior_lower"].to_numpy(dtype=np.float64) if "posterior_lower" in table else mean
        hi = table["posterior_upper"].to_numpy(dtype=np.float64) if "posterior_upper" in table else mean
        ok = np.isfinite(lo) & np.isfinite(hi) & (lo > 0) & (hi > lo)
        log_lo, log_hi = np.log(np.where(ok, lo, 1.0)), np.log(np.where(ok, hi, 1.0))
        sd = (log_hi - log_lo) / (2.0 * norm.ppf(0.5 + 0.5 * float(table.attrs.get("level", 0.9))))
        median = np.where(ok, np.exp(0.5 * (log_lo + log_hi)), mean)
        found = index_crawl_intervals(median, sd, budget, weights=w, max_interval=cap,
                                      interval_range=_INTERVAL_RANGE)
        intervals, price = found.intervals, found.price
        bound = intervals >= cap * (1.0 - 1e-12)
        rates = 1.0 / intervals
        # a page whose index saturates below the price drops to the bound at one price: the spend
        # jumps there, so the rest of the budget goes to the other pages in proportion to their rates
        # (if every page is there, the budget is shared equally: each page's index is flat)
        left, rest = budget - bound.sum() / cap, rates[~bound].sum()
        if rest > 0 and left > 0:
            rates = np.where(bound, rates, rates * (left / rest))
        elif rest == 0:
            rates = np.full(n, budget / n)
        extra = {"price": float(price)}
    out["crawls_per_day"] = rates
    out["crawl_interval_h"] = _HOURS_PER_DAY / rates
    out["at_revisit_bound"] = bound
    out.attrs.update(attrs, budget_per_day=budget, objective=objective, policy=policy,
                     max_interval_h=cap * _HOURS_PER_DAY, n_at_revisit_bound=int(bound.sum()), **extra)
    return out


def estimate_pages(history_or_log, *, methods=(), prior=None, budget=None, level=0.9,
                   posterior_method="grid", unit_hours=1.0) -> pd.DataFrame:
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
    table = page_table(history_or_log, methods=methods, prior=prior, level=level,
                       posterior_method=posterior_method, unit_hours=unit_hours)
    out = allocate_crawls(table, budget)
    from ._validation import StatisticalWarning

    for msg in out.attrs["warnings"]:
        warnings.warn(msg, StatisticalWarning, stacklevel=2)
    return out
