"""Public entry point: replay policies on a table of page change times."""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .._rng import as_generator
from ..scheduling import check_host_budgets, check_hosts
from ._engine import ReplayResult, run_replay
from ._metrics import bootstrap_counts, bootstrap_gap_share, bootstrap_ratio, gap_share, replay_metrics
from ._pages import ReplayPages, pages_from_table
from ._policies import POLICIES
from ._signals import HindsightSignalIndexPolicy, SignalFirstPolicy, SignalIndexPolicy, signal_times

__all__ = ["replay_policies", "tune_increase_rate", "POLICY_NAMES", "DEFAULT_POLICIES", "TUNED", "SIGNAL_POLICIES"]

#: Schedules that can be tuned to a budget through their increase rate.
TUNED = {"nutch_tuned": "nutch", "nutch_nosync_tuned": "nutch_nosync", "stormcrawler_tuned": "stormcrawler"}
#: Every policy name :func:`replay_policies` knows but the signal policies.
POLICY_NAMES = tuple(POLICIES) + tuple(TUNED)
#: The policies that read change signals (``replay_policies(..., signals=...)``): name -> factory.
#: Without signals ``"paced_index_signals"`` is ``"paced_index_mean"`` and ``"paced_on_signal"``
#: is ``"paced_uniform"``; ``"paced_index_signals_rate"`` (the signal-aware index whose posterior of Δ
#: weighs each page's signal count too) is ``"paced_index_mean"``; ``"paced_hindsight_signals"``
#: (a hindsight reference) is ``"paced_oracle"``.
SIGNAL_POLICIES = {
    "paced_index_signals": lambda: SignalIndexPolicy(name="paced_index_signals"),
    "paced_on_signal": lambda: SignalFirstPolicy(name="paced_on_signal"),
    "paced_index_signals_rate": lambda: SignalIndexPolicy(name="paced_index_signals_rate", signal_rate_bound=True),
    "paced_hindsight_signals": lambda: HindsightSignalIndexPolicy(name="paced_hindsight_signals"),
}
DEFAULT_POLICIES = (
    "uniform",
    "nutch",
    "nutch_tuned",
    "stormcrawler",
    "stormcrawler_tuned",
    "lln",
    "mle",
    "posterior_mean",
    "thompson",
    "index_mean",
    "index_thompson",
    "oracle",
    "oracle_proportional",
    "clairvoyant",
)
_INC_BOUNDS = (1e-3, 100.0)
#: the largest budget, in crawls per day (over ten million a second): the engine counts
#: the crawls a budget allows, floor(B·t), in int64, which holds B·t for t up to 25,000 years
MAX_BUDGET = 1e12


def at_search_bound(inc_rate, bounds=_INC_BOUNDS) -> bool:
    """Whether an increase rate from :func:`tune_increase_rate` stopped at an end of its
    bisection's range ``bounds`` (within 1%, more than the last step): the budget was then
    not matched inside the search, whatever the crawls spent say.

    Examples
    --------
    >>> at_search_bound(0.001002814), at_search_bound(0.37), at_search_bound(100.0), at_search_bound(None)
    (True, False, True, False)
    """
    if inc_rate is None or inc_rate != inc_rate:  # not a tuned schedule
        return False
    return bool(inc_rate <= bounds[0] * 1.01 or inc_rate >= bounds[1] / 1.01)


def _check_budgets(budget) -> tuple:
    vals = list(budget) if isinstance(budget, (list, tuple, np.ndarray, pd.Series)) else [budget]
    if not vals:
        raise ValueError("`budget` must hold at least one budget (crawls per day)")
    out = []
    for b in vals:
        if isinstance(b, (np.floating, np.integer)):
            b = b.item()
        if isinstance(b, bool) or not isinstance(b, numbers.Real):
            raise TypeError(f"`budget` must be a real number of crawls per day; got {type(b).__name__}")
        if not (np.isfinite(b) and b > 0):
            raise ValueError(f"`budget` must be a finite number of crawls per day > 0; got {b}")
        if b > MAX_BUDGET:
            raise ValueError(f"`budget` must be at most {MAX_BUDGET:g} crawls per day; got {b:g}")
        out.append(float(b))
    return tuple(out)


def _ms(value, *, name: str) -> int:
    try:
        td = pd.Timedelta(value)
    except (ValueError, TypeError):
        raise ValueError(f"`{name}` must be a time span such as '1h' or '1D'; got {value!r}") from None
    ms = int(td / pd.Timedelta(milliseconds=1))
    if ms <= 0:
        raise ValueError(f"`{name}` must be a positive time span; got {value!r}")
    return ms


def _check_policies(policies) -> list:
    if isinstance(policies, str) or not isinstance(policies, (list, tuple)):
        policies = [policies]
    out = []
    valid = tuple(POLICIES) + tuple(TUNED) + tuple(SIGNAL_POLICIES)  # read now: entries added to POLICIES count
    for p in policies:
        if isinstance(p, str):
            if p not in valid:
                raise ValueError(f"unknown policy {p!r}; valid policies: {', '.join(valid)}")
        elif not all(hasattr(p, a) for a in ("name", "budgeted", "reset", "next_step", "select", "observe")):
            raise TypeError(f"a policy must be a name from {valid} or a policy object; got {p!r}")
        out.append(p)
    names = [p if isinstance(p, str) else p.name for p in out]
    if len(set(names)) != len(names):
        raise ValueError(f"`policies` must be distinct; got {names}")
    if not out:
        raise ValueError("`policies` must name at least one policy")
    return out


def tune_increase_rate(
    pages: ReplayPages,
    family: str,
    budgets,
    *,
    dt_ms: int = 3_600_000,
    iterations: int = 12,
    bounds=_INC_BOUNDS,
    rng=None,
    host_codes=None,
    host_caps=None,
):
    """Increase rate of a crawler's adaptive schedule that spends each budget (bisection).

    The decrease rate and the other settings keep their defaults. All budgets are tuned
    at once: the pages are replayed as ``len(budgets)`` independent copies, copy j with
    its own increase rate, and each bisection step halves every bracket in log(rate).
    A larger increase rate means longer intervals and mostly fewer crawls; the rate kept
    is the bracket's upper end, the smallest rate found whose crawls fit the budget.
    Nutch's spend is not monotone everywhere: past an increase rate of about 0.41 the
    first interval after a forceRefetch (81 d × (1 + rate), less the sync offset)
    puts the next fetch more than db.fetch.interval.max ahead, so the Generator refetches
    the page at the next cycle (on the Open Terms Archive documents at 6-hour steps: 6.86
    crawls/day at 0.41, 8.40 at 0.42). There the bisection finds a rate that fits, not
    the smallest. A schedule also has a ceiling: a budget above what the smallest rate
    spends is met by that rate (``within_budget``, with fewer crawls than given; Nutch
    with sync_delta tops out at 9.1 crawls/day on those documents).

    Parameters
    ----------
    pages : ReplayPages
    family : {"nutch", "nutch_nosync", "stormcrawler"}
    budgets : sequence of float
        Crawls per day.
    dt_ms : int, default one hour
    iterations : int, default 12
        Bisection steps on [bounds[0], bounds[1]] in log rate (12: each rate to ±0.14% of
        log range 11.5).
    bounds : (float, float), default (1e-3, 100)
    rng : seed for the replays (the schedules are deterministic; kept for symmetry)
    host_codes, host_caps : ndarray, optional
        Per-host caps (see :func:`run_replay`): the host (0 .. H − 1) of each page and
        c_h crawls per day; each copy gets hosts of its own. The spend counted is the
        fetches made.

    Returns
    -------
    (rates, result) : ndarray (len(budgets),) and the ReplayResult of the final replay of
        the tiled pages (copy j = pages j·N .. j·N + N − 1). A budget below what the
        schedule spends at the upper bound is not reachable: its copy then overspends
        (check the crawls).
    """
    budgets = np.asarray(budgets, dtype=np.float64)
    k, n = budgets.size, pages.n_pages
    tiled = pages.tile(k)
    lo = np.full(k, np.log(bounds[0]))
    hi = np.full(k, np.log(bounds[1]))
    hosts: dict = {}
    if host_codes is not None:
        n_hosts = int(np.asarray(host_caps).size)
        codes = np.asarray(host_codes, dtype=np.int64)
        hosts = dict(
            host_codes=(codes[None, :] + n_hosts * np.arange(k)[:, None]).ravel(),
            host_caps=np.tile(np.asarray(host_caps, dtype=np.float64), k),
        )

    def spend(log_rate):
        pol = POLICIES[family](name=f"{family}_tuned", inc_rate=np.repeat(np.exp(log_rate), n))
        res = run_replay(tiled, pol, dt_ms=dt_ms, rng=rng, **hosts)
        per = res.crawls.reshape(k, n).sum(axis=1) / res.span_days
        return res, per

    for _ in range(iterations):  # a loop over bisection steps; the budgets are vectorised
        mid = 0.5 * (lo + hi)
        _, per = spend(mid)
        over = per > budgets
        lo = np.where(over, mid, lo)
        hi = np.where(over, hi, mid)
    res, _ = spend(hi)
    return np.exp(hi), res


def _host_arguments(pages: ReplayPages, changes, window, hosts, host_budgets) -> dict:
    """``run_replay``'s host_codes and host_caps from ``replay_policies``' ``hosts`` and
    ``host_budgets`` (empty without caps), checked."""
    if host_budgets is None:
        if hosts is not None:
            page_hosts(pages, changes, window, hosts)  # checked all the same
        return {}
    if hosts is None:
        raise ValueError("`host_budgets` needs `hosts` (a column of `changes` or a mapping page -> host)")
    labels_per_page = page_hosts(pages, changes, window, hosts)
    codes, labels = check_hosts(labels_per_page, labels_per_page.shape)
    caps = check_host_budgets(host_budgets, labels)
    return dict(host_codes=codes, host_caps=caps)


def page_hosts(pages: ReplayPages, changes, window, hosts) -> np.ndarray:
    """The host label of every page of ``pages`` (object array, shape (N,)) from ``hosts``:
    a column of ``changes`` (and of ``window`` when it is a table with that column) or a
    mapping page -> host. Raises ValueError naming ``hosts`` for a missing column, a page
    with no host or with two, an unknown page in the mapping, or a missing label."""
    names = pd.Index(pages.names)
    if isinstance(hosts, str):
        tables = [t for t in (changes, window) if isinstance(t, pd.DataFrame) and hosts in t.columns]
        if not isinstance(changes, pd.DataFrame) or hosts not in changes.columns:
            cols = list(changes.columns) if isinstance(changes, pd.DataFrame) else []
            raise ValueError(f"`hosts` names column {hosts!r}, which `changes` does not have (columns: {cols})")
        pairs = pd.concat(
            [pd.DataFrame({"page": t["page"].astype(str).to_numpy(), "host": t[hosts].to_numpy()}) for t in tables],
            ignore_index=True,
        )
        if pairs["host"].isna().any():
            bad = pairs.loc[pairs["host"].isna(), "page"].iloc[0]
            raise ValueError(f"`hosts` column {hosts!r} has no host (None or NaN) for page {bad!r}")
        per_page = pairs.drop_duplicates()
        twice = per_page["page"].duplicated(keep=False)
        if twice.any():
            bad = per_page.loc[twice, "page"].iloc[0]
            found = per_page.loc[per_page["page"] == bad, "host"].tolist()
            raise ValueError(f"`hosts` column {hosts!r} gives page {bad!r} more than one host: {found}")
        series = pd.Series(per_page["host"].to_numpy(), index=per_page["page"].to_numpy())
    elif isinstance(hosts, (Mapping, pd.Series)):
        series = pd.Series(hosts, dtype=object) if isinstance(hosts, Mapping) else hosts.astype(object)
        series.index = series.index.astype(str)
        unknown = ~series.index.isin(names)
        if unknown.any():
            raise ValueError(
                f"`hosts` maps page {series.index[unknown][0]!r}, which is not among the replayed pages "
                f"({int(unknown.sum())} unknown)"
            )
        if series.index.duplicated().any():
            raise ValueError(f"`hosts` maps page {series.index[series.index.duplicated()][0]!r} twice")
        if series.isna().any():
            raise ValueError(f"`hosts` has no host (None or NaN) for page {series.index[series.isna()][0]!r}")
    else:
        raise TypeError(
            f"`hosts` must be a column name of `changes` or a mapping page -> host; got {type(hosts).__name__}"
        )
    out = series.reindex(names)
    if out.isna().any():
        missing = names[out.isna().to_numpy()]
        raise ValueError(f"`hosts` gives no host for page {missing[0]!r} ({missing.size} pages without one)")
    return out.to_numpy(dtype=object)


def replay_policies(
    changes,
    *,
    budget,
    policies=DEFAULT_POLICIES,
    window=None,
    weights=None,
    step="1h",
    epoch="1D",
    match_schedules=True,
    n_boot=0,
    level: float = 0.95,
    tune_iterations=12,
    rng=None,
    hosts=None,
    host_budgets=None,
    signals=None,
) -> pd.DataFrame:
    """Replay real change histories under crawl policies and a crawl budget.

    Every policy sees only what its own crawls reveal, (I, τ) per crawl, never the
    change times; budgeted policies get ``budget`` crawls per day over all pages (a hard
    limit), Nutch's and StormCrawler's adaptive schedules spend what their rules spend.

    Parameters
    ----------
    changes : pandas.DataFrame
        Columns ``page``, ``timestamp`` (datetimes / ISO-8601 strings, or numbers in
        days), sorted in time within each page; and ``start``, ``end`` when ``window``
        is None. See :func:`pages_from_table`.
    budget : float or sequence of float
        0 < B <= 1e12 (:data:`MAX_BUDGET`), crawls per day over all pages.
    policies : sequence of str or policy objects, default :data:`DEFAULT_POLICIES`
        Names from :data:`POLICY_NAMES`: ``"uniform"`` (round robin), ``"nutch"``
        (Nutch 1.22's AdaptiveFetchSchedule, nutch-default.xml: :class:`NutchPolicy`),
        ``"nutch_nosync"`` (the same with sync_delta off), ``"stormcrawler"``
        (StormCrawler 3.x's AdaptiveScheduler defaults: :class:`StormCrawlerPolicy`), their
        ``"*_tuned"`` versions (increase rate bisected to each budget by
        :func:`tune_increase_rate`), plug-in optimal rates fed by ``"lln"``, ``"mle"``,
        ``"posterior_mean"``, ``"thompson"`` sampling from the posterior, the index
        policies :class:`IndexPolicy` ``"index_mean"`` / ``"index_thompson"`` (static
        posterior), ``"dynamic_index_mean"`` / ``"dynamic_index_thompson"`` (random-walk
        posterior) and ``"burst_index_mean"`` / ``"burst_index_thompson"`` (burst
        model), ``"paced_index_mean"`` / ``"paced_index_thompson"`` (static posterior,
        crawls spent in proportion to the pages in the crawl: ``IndexPolicy(pace="pages")``)
        and ``"paced_uniform"`` (round robin at that pace), the hindsight references ``"oracle"`` (optimal static rates of the
        true n_i/T_i), ``"oracle_proportional"`` (rates ∝ true n_i/T_i), ``"index_oracle"`` and
        ``"paced_oracle"`` (the freshness index of the true n_i/T_i, unpaced and paced:
        :class:`HindsightIndexPolicy`, the references of the index policies), and
        ``"clairvoyant"`` (:class:`ClairvoyantPolicy`, knows the change times). A policy object (e.g.
        ``PlugInPolicy(factory, name=...)`` with any learner) is used as given.
    window : DataFrame (page, start, end), (start, end) or None
        Observation windows (see :func:`pages_from_table`).
    weights : mapping page -> w >= 0, optional
        Known importance of each page (default 1); used by the allocations and by
        ``freshness_weighted``.
    step : str or timedelta, default "1h"
        Time step: a page is crawled at most once per step, and a schedule's due time is
        served at the first step at or after it.
    epoch : str or timedelta, default "1D"
        How often the budgeted policies re-solve their allocation (rounded to steps).
    match_schedules : bool, default True
        Also run every budgeted policy at the crawls per day that each own-schedule
        policy in ``policies`` ("nutch", "stormcrawler", ...) actually spent.
    n_boot : int, default 0
        Bootstrap resamples of the pages for the intervals (0: none). The same resamples
        serve every policy, so the ratio intervals are paired.
    level : float, default 0.95
    tune_iterations : int, default 12
    rng : int, Generator or None
        Seeds the policies' random phases and draws (run j uses child j of ``rng``) and
        the bootstrap.
    hosts : str or mapping page -> host, optional
        The host of each page, for per-host politeness caps: the name of a column of
        ``changes`` (and of ``window`` when it is a table holding it: a page without
        changes takes its host from there), one host per page, or a mapping (dict or
        Series) from every page to its host label. Used only with ``host_budgets``.
    host_budgets : float or mapping host -> float, optional
        c_h > 0, finite, crawls per day a host may be fetched (a crawler waiting d
        seconds between fetches from one host: 86,400/d): one number for every host or a
        mapping (hosts missing from it are uncapped; labels without pages are ignored).
        None (default): no caps, and the replay is exactly the one without hosts. With
        caps, every policy's crawls go through per-host queues (first in first out, a
        token bucket per host, :func:`run_replay`): a host is fetched at most
        max(1, ⌈c_h·dt⌉) times in a step and c_h a day in the long run, a crawl over the
        cap waits for the next steps with room, and a budgeted policy is charged when it
        orders a crawl, as a crawler's queue does. The allocating policies plan with the
        caps: ``"oracle"`` and the plug-in policies take the capped optimum
        (:func:`~changerate_bayes.scheduling.optimal_crawl_rates` with ``hosts`` and
        ``host_budgets``), the index policies weight a page on host h by λ/(λ + η_h), the
        multipliers of the capped optimum of their current rates
        (:class:`IndexPolicy`); round robin, the crawlers' schedules and the clairvoyant
        reference do not (the queues hold them to the caps).
    signals : pandas.DataFrame, optional
        Change signals: columns ``page``, ``timestamp`` (one row per signal, times of the
        kind of the change times, any order), checked by
        :func:`~changerate_bayes.replay.signal_times` with the windows' rules (a signal at
        a window's start is in the initial copy; outside a per-page window it is an
        error, outside a single (start, end) window it is left out). Each policy that
        reads signals (:data:`SIGNAL_POLICIES`: ``"paced_index_signals"``,
        :class:`~changerate_bayes.replay.SignalIndexPolicy`, and ``"paced_index_signals_rate"``,
        the same with ``signal_rate_bound=True``; ``"paced_on_signal"``,
        :class:`~changerate_bayes.replay.SignalFirstPolicy`; ``"paced_hindsight_signals"``,
        :class:`~changerate_bayes.replay.HindsightSignalIndexPolicy`, which is also given
        all the signals and change times at the start; any policy object with a
        ``receive_signals`` method) is given, at each step k, the signals at times <= t_k;
        the other policies run as without signals. None (default): no signal, every
        result as without this argument. Not with ``host_budgets``.

    Returns
    -------
    pandas.DataFrame
        One row per policy × budget: ``policy``, ``budget`` (crawls/day given; for an
        own schedule its own spend), ``budget_source`` ("given", "own schedule" or
        "spent by <policy>"), ``inc_rate`` (tuned schedules), the metrics of
        :func:`replay_metrics`, ``within_budget``, and with ``n_boot`` > 0
        ``freshness_lo``/``_hi`` and ``freshness_weighted_lo``/``_hi``; when ``"oracle"`` ran
        at that budget, ``vs_oracle`` (freshness ÷ the oracle's, weighted) and its
        interval ``vs_oracle_lo``/``_hi``; likewise ``vs_paced_oracle`` when ``"paced_oracle"``
        ran; when ``"uniform"`` and ``"clairvoyant"`` ran at that budget,
        ``gap_share`` (the share of the weighted-freshness gap from uniform to clairvoyant
        the policy closes, :func:`gap_share`) and with ``n_boot`` > 0 its paired interval
        ``gap_share_lo``/``_hi``.

    Raises
    ------
    ValueError
        For a budget <= 0, above 1e12 or non-finite, an unknown policy (the message lists the valid
        ones), bad ``step``/``epoch``, and the table errors of :func:`pages_from_table`
        (unparsable or unsorted change times naming the row, a page with no window); for
        ``hosts`` naming no column, a page with no host or two, a mapping naming an
        unknown page, a missing host label; for a cap <= 0, NaN or infinite in
        ``host_budgets``, or ``host_budgets`` without ``hosts``; for ``signals`` (naming
        the table and its column or row): a missing column, an unparsable time, a page
        not replayed (all rows: no matching page), the same (page, timestamp) twice, a
        signal outside its page's window, or ``signals`` with ``host_budgets``.
    TypeError
        For arguments of the wrong type.

    References
    ----------
    Paper Section 5 (binary freshness, eq. 16); Azar et al. (2018); Cho & Garcia-Molina,
    "Effective page refresh policies for web crawlers" (2003, freshness and age); Apache
    Nutch 1.22 AdaptiveFetchSchedule; StormCrawler 3.x AdaptiveScheduler.

    Examples
    --------
    >>> import pandas as pd
    >>> from changerate_bayes.replay import replay_policies
    >>> changes = pd.DataFrame({"page": ["a", "a", "b"], "timestamp": [1.5, 3.2, 2.0]})
    >>> window = pd.DataFrame({"page": ["a", "b", "c"], "start": [0.0, 0.0, 0.0], "end": [5.0, 5.0, 5.0]})
    >>> df = replay_policies(changes, window=window, budget=2.0, policies=["uniform", "oracle"], rng=0)
    >>> df["policy"].tolist(), df["within_budget"].tolist()
    (['uniform', 'oracle'], [True, True])
    >>> bool((df["crawls_per_day"] <= 2.0).all())
    True
    """
    budgets = _check_budgets(budget)
    pols = _check_policies(policies)
    dt_ms = _ms(step, name="step")
    epoch_steps = max(1, int(round(_ms(epoch, name="epoch") / dt_ms)))
    if isinstance(n_boot, bool) or not isinstance(n_boot, numbers.Integral) or n_boot < 0:
        raise ValueError(f"`n_boot` must be an integer >= 0; got {n_boot!r}")
    if not (isinstance(level, numbers.Real) and 0 < level < 1):
        raise ValueError(f"`level` must be in (0, 1); got {level!r}")
    pages = pages_from_table(changes, window=window, weights=weights)
    host_kw = _host_arguments(pages, changes, window, hosts, host_budgets)
    sig_kw: dict = {}
    if signals is not None:
        if host_kw:
            raise ValueError("`signals` cannot be combined with `host_budgets` (per-host caps) yet")
        sig_kw = dict(signals=signal_times(signals, pages, per_page_windows=not isinstance(window, tuple)))
    gen = as_generator(rng)
    boot_rng, run_seeds = gen.spawn(2)
    counts = bootstrap_counts(pages.n_pages, n_boot, boot_rng) if n_boot else None
    seed_iter = iter(run_seeds.spawn(4096))

    def make(p, **kw):
        if isinstance(p, str) and p in SIGNAL_POLICIES:
            return SIGNAL_POLICIES[p](**kw)
        return POLICIES[p](**kw) if isinstance(p, str) else p

    # (policy name, budget, source, inc_rate, result)
    runs: list[tuple[str, float, str, float | None, ReplayResult]] = []
    schedules = [
        p
        for p in pols
        if (isinstance(p, str) and p not in TUNED and not make(p).budgeted)
        or (not isinstance(p, str) and not p.budgeted)
    ]
    extra = []
    for p in schedules:
        res = run_replay(pages, make(p), dt_ms=dt_ms, epoch_steps=epoch_steps, rng=next(seed_iter), **host_kw, **sig_kw)
        spent = res.crawls.sum() / res.span_days
        runs.append((res.policy, float(spent), "own schedule", None, res))
        if match_schedules and spent > 0:
            extra.append((float(spent), f"spent by {res.policy}"))
    all_budgets = [(b, "given") for b in budgets] + extra
    for p in pols:
        if isinstance(p, str) and p in TUNED:
            continue
        pol = make(p)
        if not pol.budgeted:
            continue
        for b, source in all_budgets:
            pol = make(p)
            res = run_replay(
                pages, pol, budget=b, dt_ms=dt_ms, epoch_steps=epoch_steps, rng=next(seed_iter), **host_kw, **sig_kw
            )
            runs.append((res.policy, b, source, None, res))
    n = pages.n_pages
    for p in pols:
        if isinstance(p, str) and p in TUNED:
            rates, res = tune_increase_rate(
                pages,
                TUNED[p],
                budgets,
                dt_ms=dt_ms,
                iterations=tune_iterations,
                rng=next(seed_iter),
                **host_kw,
            )
            for j, b in enumerate(budgets):
                part = res.part(j * n, (j + 1) * n)
                runs.append((p, b, "given", float(rates[j]), part))

    oracle = {(b, s): r for name, b, s, _, r in runs if name == "oracle"}
    paced_oracle = {(b, s): r for name, b, s, _, r in runs if name == "paced_oracle"}
    uniform = {(b, s): r for name, b, s, _, r in runs if name == "uniform"}
    clairvoyant = {(b, s): r for name, b, s, _, r in runs if name == "clairvoyant"}
    rows = []
    for name, b, source, rate, res in runs:
        m = replay_metrics(res)
        row = {
            "policy": name,
            "budget": b,
            "budget_source": source,
            "inc_rate": rate,
            **m,
            "within_budget": bool(m["crawls"] <= np.floor(b * res.span_days + 1e-9)),
        }
        if counts is not None:
            row["freshness_lo"], row["freshness_hi"] = bootstrap_ratio(res, counts, level=level)
            row["freshness_weighted_lo"], row["freshness_weighted_hi"] = bootstrap_ratio(
                res, counts, weighted=True, level=level
            )
        at = (b, source if source != "own schedule" else f"spent by {name}")
        low, high = uniform.get(at), clairvoyant.get(at)
        if low is not None and high is not None:
            row["gap_share"] = gap_share(res, low, high)
            if counts is not None:
                row["gap_share_lo"], row["gap_share_hi"] = bootstrap_gap_share(res, low, high, counts, level=level)
        for col, refs in (("vs_oracle", oracle), ("vs_paced_oracle", paced_oracle)):
            ref = refs.get(at)
            if ref is not None:
                row[col] = m["freshness_weighted"] / replay_metrics(ref)["freshness_weighted"]
                if counts is not None:
                    row[f"{col}_lo"], row[f"{col}_hi"] = bootstrap_ratio(
                        res, counts, reference=ref, weighted=True, level=level
                    )
        rows.append(row)
    return pd.DataFrame(rows)
