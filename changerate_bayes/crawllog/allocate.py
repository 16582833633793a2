"""The crawl allocation of a page table: how often to crawl each page within a budget of crawls per day.

:func:`allocate_crawls` adds to a page table (:func:`changerate_bayes.crawllog.table.page_table`)
each page's crawl rate and interval: the stationary schedule of the freshness index
(:func:`changerate_bayes.scheduling.freshness_index`) averaged over each page's
posterior, round robin, or the plug-in optimal rates, bounded by a revisit limit.
"""

from __future__ import annotations

import numbers
import warnings
from collections import defaultdict
from collections.abc import Mapping
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from scipy.stats import norm

from ..scheduling import (
    capped_crawl_rates,
    capped_index_intervals,
    check_host_budgets,
    check_hosts,
    equal_split,
    index_crawl_intervals,
    optimal_crawl_rates,
    revisit_bound_rates,
)

__all__ = ["MAX_INTERVAL_FACTOR", "RECOMMENDED_POLICY", "allocate_crawls", "check_budget", "url_hosts"]

#: The allocation ``allocate_crawls`` makes by default: the choice the replay of real pages supports
#: (study ``scheduling_replay``), see :func:`allocate_crawls`.
RECOMMENDED_POLICY = "auto"
#: No page's interval exceeds this many round-robin intervals N/B.
MAX_INTERVAL_FACTOR = 4.0
_POLICIES = ("auto", "index_mean", "uniform", "plug_in")
_INTERVAL_RANGE = (1e-4, 1e5)  # days: the intervals the index allocation considers
_HOURS_PER_DAY = 24.0


def check_budget(budget):
    """``budget`` (crawls per day) as a float, or None; TypeError or ValueError naming it if not > 0 and finite."""
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
        raise TypeError(f"`budget` must be a number of crawls per day; got {type(budget).__name__}")
    budget = float(budget)
    if not (np.isfinite(budget) and budget > 0):
        raise ValueError(f"`budget` must be > 0 and finite (crawls per day); got {budget}")
    return budget


def check_max_interval_factor(max_interval_factor):
    """ValueError naming ``max_interval_factor`` unless it is a finite number >= 1 (the revisit bound
    in round-robin intervals)."""
    if (
        isinstance(max_interval_factor, bool)
        or not isinstance(max_interval_factor, numbers.Real)
        or not (np.isfinite(max_interval_factor) and max_interval_factor >= 1)
    ):
        raise ValueError(f"`max_interval_factor` must be a finite number >= 1; got {max_interval_factor!r}")


def allocate_crawls(
    table: pd.DataFrame,
    budget=None,
    *,
    policy: str = RECOMMENDED_POLICY,
    objective="binary_freshness",
    weights=None,
    max_interval_factor: float = MAX_INTERVAL_FACTOR,
    hosts=None,
    host_budgets=None,
) -> pd.DataFrame:
    """Add a crawl rate and interval for every page to a page table (a copy), within ``budget``.

    ``policy="index_mean"`` is the stationary schedule of the index policy
    (:class:`~changerate_bayes.replay.IndexPolicy`, mean form): page i is crawled every
    I_i, where its freshness index w_i E[ν_Δ(I)] reaches a price λ, ν_Δ(t) =
    (1 − e^{−Δt}(1 + Δt))/Δ averaged over the page's posterior, and λ is such that
    Σ_i 1/I_i = budget (:func:`~changerate_bayes.scheduling.index_crawl_intervals`: each
    I_i and λ exact to rounding up to 65,536 pages, and above each page's index at I_i
    within 2e-8 relative of λ; intervals are sought from 1e-4 to 1e5 days).
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
    gets M and ``at_revisit_bound = True`` (only there: a page a host cap holds beyond M is
    not marked); ``attrs["n_at_revisit_bound"]`` counts them. The
    other pages' rates are scaled to spend what is left (if every page is in that case, the
    budget is shared equally: intervals N/B).

    Parameters
    ----------
    table : pandas.DataFrame
        A page table (:func:`~changerate_bayes.crawllog.table.page_table`): ``posterior_mean`` (per day) and, for the index,
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
    hosts : "url", array_like of shape (N,) or mapping, optional
        The host of each row (hashable labels, not None or NaN), for ``host_budgets``; a
        mapping (dict) gives the host of each value of the ``page`` column. Default (None)
        or "url": the host name of the ``page`` column's URLs (lower-cased,
        :func:`urllib.parse.urlsplit`). Used only with ``host_budgets``.
    host_budgets : float or mapping label -> float, optional
        Per-host politeness caps c_h > 0, finite, in **crawls per day**: one number for every
        host (86,400/d for a delay of d seconds between fetches from a host: 17,280 for
        Nutch's default 5 s), or a mapping (a dict, defaultdict or pandas Series; hosts
        missing from it are uncapped; with hosts taken from URLs its keys are compared
        without case and surrounding spaces; keys matching no row's host are unused, and
        a UserWarning names how many and a few of them). None (the default): no caps, and nothing else changes.

    Returns
    -------
    pandas.DataFrame
        The table with ``crawls_per_day`` (1/I_i, summing to the budget), ``crawl_interval_h``
        (24 I_i, finite, <= 24 M unless a host cap holds the page beyond it) and
        ``at_revisit_bound`` (bool: the interval is M); ``attrs`` gains
        ``budget_per_day``, ``objective``, ``policy`` (the policy's name),
        ``max_interval_h`` and ``n_at_revisit_bound`` (and ``price`` for the index). With
        ``host_budgets``, also ``host`` (the label of each row) and ``host_at_cap`` (bool:
        its host is held at its cap), and ``attrs`` ``n_hosts_at_cap``, ``n_host_cap_beyond_bound``,
        ``host_cap_longest_interval_h`` (None if no page is beyond M) and ``host_budgets``
        (the one cap, or a mapping's ``n_hosts``, ``n_capped``, ``min`` and ``max``).

    Raises
    ------
    ValueError
        If ``budget`` is not > 0 and finite, ``policy`` is unknown, ``max_interval_factor`` < 1,
        ``weights`` has the wrong length or negative values, ``posterior_mean`` is not
        finite and >= 0, a cap is <= 0, NaN or infinite, ``hosts`` has the wrong length or
        holds None or NaN, or (hosts taken from URLs) the table has no ``page`` column or
        a row's page is not a URL with a host name (naming the row).
    TypeError
        For a non-numeric ``budget`` or cap, ``host_budgets`` given as a sequence, or
        ``hosts`` that is neither "url" nor one label per row.

    Notes
    -----
    *Per-host caps.* A crawler waits between fetches from one host (politeness), so host h
    gets at most c_h crawls per day: Σ_{i∈h} 1/I_i <= c_h besides the budget. Each policy
    keeps its rule within the caps (Kolobov et al. 2019: page i on host h takes its
    allocation without caps at the price λ + η_h, η_h >= 0 and 0 unless host h is at its
    cap). "uniform": equal rates within the caps, the level ℓ with Σ_h min(c_h, n_h ℓ) = B.
    "plug_in": :func:`~changerate_bayes.scheduling.capped_crawl_rates`, the exact optimum
    of ``objective`` under the caps. "index_mean":
    :func:`~changerate_bayes.scheduling.capped_index_intervals`, each page's index meeting
    its host's price, w_i E[ν_Δ(I_i)] = λ + η_h (the uncapped search with log w_i lowered by
    log(1 + η_h/λ)); the hosts over their caps at the common price are held there, round
    after round, which is exact since each host's spend falls as its price rises (proof in
    :mod:`changerate_bayes.scheduling._index_host_caps`). The revisit bound applies as
    without caps, within each host at its cap and among the free hosts; a host whose
    n_h pages at the bound would spend more than c_h keeps its cap (each page every
    n_h/c_h > M days: ``at_revisit_bound`` is False there, ``host_at_cap`` True;
    ``attrs["n_host_cap_beyond_bound"]`` counts such pages and
    ``attrs["host_cap_longest_interval_h"]`` gives their longest interval, hours). No host spends more than its cap (to within
    1e-12 relative); the budget is spent whenever some host has room, and otherwise every
    host is at its cap and the rest of the budget is left. "auto" chooses by the budget as
    without caps.

    References
    ----------
    J. Cho and H. Garcia-Molina, "Effective page refresh policies for web crawlers" (2003),
    the Lagrangian condition w ν(I) = λ; the index policy: :mod:`changerate_bayes.replay`.
    A. Kolobov, E. Lubetzky, Y. Peres, E. Horvitz, "Optimal freshness crawl under
    politeness constraints", SIGIR 2019 (per-host caps).

    Examples
    --------
    Two pages on host a capped at 1 crawl per day, one on b, a budget of 3 per day: a
    spends its cap, b the rest:

    >>> import pandas as pd
    >>> from changerate_bayes.crawllog import allocate_crawls
    >>> table = pd.DataFrame({"page": ["https://a.example/1", "https://A.example/2", "https://b.example/"],
    ...                       "posterior_mean": [1.0, 1.0, 1.0]})
    >>> out = allocate_crawls(table, 3.0, host_budgets={"a.example": 1.0})
    >>> out[["host", "crawls_per_day", "host_at_cap"]].values.tolist()
    [['a.example', 0.5, True], ['a.example', 0.5, True], ['b.example', 2.0, False]]
    """
    budget = check_budget(budget)
    if policy not in _POLICIES:
        raise ValueError(f"`policy` must be one of {list(_POLICIES)}; got {policy!r}")
    check_max_interval_factor(max_interval_factor)
    if budget is None:
        budget = float(np.nansum(_HOURS_PER_DAY / table["mean_interval_h"].to_numpy()))
        if not (np.isfinite(budget) and budget > 0):
            raise ValueError(
                "the log shows no crawls to reallocate (`mean_interval_h` gives no crawls per day): give `budget`"
            )
    n = len(table)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if weights is not None and (w.shape != (n,) or not (np.isfinite(w).all() and (w >= 0).all())):
        raise ValueError(f"`weights` must be {n} finite values >= 0 (one per row); got shape {w.shape}")
    mean = table["posterior_mean"].to_numpy(dtype=np.float64)
    bad = ~(np.isfinite(mean) & (mean >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"column 'posterior_mean' must be finite and >= 0 (changes per day); got {mean[i]} at row {i}")
    labels = codes = caps = None
    if host_budgets is not None:
        labels = _host_labels(table, hosts)
        if hosts is None or (isinstance(hosts, str) and hosts == "url"):
            host_budgets = _url_host_keys(host_budgets)  # URL hosts are lower-cased
        codes, names = check_hosts(labels, (n,))
        caps = check_host_budgets(host_budgets, names)
        _warn_unmatched_keys(host_budgets, names)
    elif hosts is not None and not (isinstance(hosts, str) and hosts == "url"):
        _host_labels(table, hosts)  # checked, unused without caps
    out = table.copy(deep=False)  # (pandas copies on write: the caller's table never changes)
    attrs = dict(table.attrs, budget_per_day=budget, objective=objective)
    if n == 0:
        _set_rates(out, attrs, np.zeros(0), np.zeros(0, dtype=bool), policy=policy, max_interval_h=np.inf)
        if caps is not None:
            out["host"] = labels
            out["host_at_cap"] = np.zeros(0, dtype=bool)
            out.attrs.update(n_hosts_at_cap=0, host_budgets=_caps_summary(host_budgets, caps))
        return out
    cap = float(max_interval_factor) * n / budget  # days
    if policy == "auto":
        policy = "index_mean" if budget >= float(mean.sum()) else "uniform"
    if caps is not None:
        attrs.pop("price", None)  # of an earlier allocation of this table
        rates, bound, held, extra = _allocate_capped(
            table, policy, mean, w, weights, budget, cap, objective, labels, host_budgets, codes, caps
        )
        beyond = held[codes] & (rates * cap < 1.0 - 1e-12)  # the cap holds the page beyond the bound M
        bound = bound & ~beyond  # at the bound: interval M itself
        with np.errstate(divide="ignore"):
            longest = float((_HOURS_PER_DAY / rates[beyond]).max()) if beyond.any() else None
        extra.update(n_host_cap_beyond_bound=int(beyond.sum()), host_cap_longest_interval_h=longest)
        _set_rates(out, attrs, rates, bound, policy=policy, max_interval_h=cap * _HOURS_PER_DAY)
        out["host"] = labels
        out["host_at_cap"] = held[codes]
        out.attrs.update(n_hosts_at_cap=int(held.sum()), host_budgets=_caps_summary(host_budgets, caps), **extra)
        return out
    if policy == "uniform":
        rates = np.full(n, budget / n)
        bound = np.zeros(n, dtype=bool)
        extra = {}
    elif policy == "plug_in":
        rates = optimal_crawl_rates(
            table["posterior_mean"].to_numpy(), w if weights is not None else 1.0, budget, objective=objective
        )
        bound = rates < 1.0 / cap
        left = budget - bound.sum() / cap
        rest = rates[~bound].sum()
        rates = np.where(bound, 1.0 / cap, rates * (left / rest if rest > 0 else 0.0))
        extra = {}
    else:
        median, sd = _lognormal_posterior(table, mean)
        found = index_crawl_intervals(
            median, sd, budget, weights=None if weights is None else w, max_interval=cap, interval_range=_INTERVAL_RANGE
        )
        intervals, price = found.intervals, found.price
        bound = intervals >= cap * (1.0 - 1e-12)
        # a page whose index saturates below the price drops to the bound at one price: the spend
        # jumps there, so the rest of the budget goes to the other pages in proportion to their rates
        # (if every page is there, the budget is shared equally: each page's index is flat)
        rates = revisit_bound_rates(1.0 / intervals, bound, budget, cap)
        extra = {"price": float(price)}
    _set_rates(out, attrs, rates, bound, policy=policy, max_interval_h=cap * _HOURS_PER_DAY, **extra)
    return out


def _set_rates(out: pd.DataFrame, attrs: dict, rates, bound, *, policy, max_interval_h, **extra) -> None:
    """Write an allocation into ``out``: the columns ``crawls_per_day`` (``rates``), ``crawl_interval_h``
    and ``at_revisit_bound`` (``bound``), and into its attrs ``attrs``, the policy, the revisit bound
    (hours), the pages at it and the ``extra`` facts."""
    out["crawls_per_day"] = rates
    with np.errstate(divide="ignore"):  # a page a host cap holds at no crawls: an infinite interval
        out["crawl_interval_h"] = _HOURS_PER_DAY / rates
    out["at_revisit_bound"] = bound
    out.attrs.update(attrs, policy=policy, max_interval_h=max_interval_h, n_at_revisit_bound=int(bound.sum()), **extra)


def _lognormal_posterior(table: pd.DataFrame, mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each page's posterior as (median, sd of log Δ): the log-normal matched to its equal-tailed
    interval at the table's level, or a point mass at the posterior mean (a lower bound of 0,
    lower = upper)."""
    lo = table["posterior_lower"].to_numpy(dtype=np.float64) if "posterior_lower" in table else mean
    hi = table["posterior_upper"].to_numpy(dtype=np.float64) if "posterior_upper" in table else mean
    from ._lognormal_kernel import lognormal_of_interval  # numba: compiled or loaded on first use

    z2 = 2.0 * float(norm.ppf(0.5 + 0.5 * float(table.attrs.get("level", 0.9))))
    median, sd = lognormal_of_interval(
        np.ascontiguousarray(lo), np.ascontiguousarray(hi), np.ascontiguousarray(mean), z2
    )
    return median, sd


_URL_AUTHORITY = r"^[A-Za-z][A-Za-z0-9+.\-]*://(?P<authority>[^/?#]*)"


def _authorities(pages: pd.Series) -> tuple[np.ndarray, list]:
    """Each page's URL authority (what follows "scheme://" up to the path) as codes (int64, -1
    for a page that is not such a URL) into the list of distinct authorities."""
    values = pages.to_numpy(dtype=object)
    try:
        arr = pa.array(values, from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        arr = None
    if arr is not None and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        found = pc.extract_regex(arr, _URL_AUTHORITY).field("authority")  # null where no match
        enc = pc.dictionary_encode(found)
        return enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary.to_pylist()
    authority = pd.Series(values, dtype=object).str.extract(_URL_AUTHORITY, expand=False)  # labels of mixed types
    codes, uniq = pd.factorize(authority)
    return codes.astype(np.int64), list(uniq)


def url_hosts(pages, *, errors: str = "raise") -> np.ndarray:
    """The host name of each page's URL, lower-cased, as a crawler's host queues see it.

    Each distinct authority is parsed once (:func:`urllib.parse.urlsplit`): the host name
    without user info or port, so ``https://User@Example.COM:8443/a`` is on ``example.com``.
    A URL without a scheme but with ``//`` (``//example.com/a``) has a host; ``example.com/a``
    does not.

    Parameters
    ----------
    pages : array_like of str, shape (N,)
        URLs.
    errors : {"raise", "coerce"}, default "raise"
        What a page that is not a URL with a host name gets: a ValueError, or None.

    Returns
    -------
    ndarray of object, shape (N,)
        The host name of each page (None where coerced).

    Raises
    ------
    ValueError
        Naming the first row (0-based) whose page is not a URL with a host name, or for an
        unknown ``errors``.

    Examples
    --------
    >>> url_hosts(["https://Example.com:8443/a", "http://user@news.example.org/b?x=1"]).tolist()
    ['example.com', 'news.example.org']
    """
    if errors not in ("raise", "coerce"):
        raise ValueError(f"`errors` must be 'raise' or 'coerce'; got {errors!r}")
    pages = pd.Series(pages, dtype=object) if not isinstance(pages, pd.Series) else pages
    codes, uniq = _authorities(pages)
    names = np.empty(len(uniq) + 1, dtype=object)  # the last: code -1, no authority
    for k, netloc in enumerate(uniq):  # each distinct authority (host, port, user) once
        try:
            names[k] = urlsplit("//" + netloc).hostname or None
        except ValueError:
            names[k] = None
    hosts = names[codes]
    bad = pd.isna(hosts)
    if errors == "raise" and bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"row {i} ({pages.iloc[i]!r}) is not a URL with a host name")
    return hosts


def _host_labels(table: pd.DataFrame, hosts) -> np.ndarray:
    """One host label per row: ``hosts`` as given, or the host names of the ``page`` column's URLs."""
    n = len(table)
    if hosts is None or (isinstance(hosts, str) and hosts == "url"):
        if "page" not in table:
            raise ValueError("`hosts`: the table has no `page` column to take host names from; give one label per row")
        try:
            return url_hosts(table["page"])
        except ValueError as err:
            raise ValueError(
                f"`hosts`: the host of each page is taken from the `page` column, but {err}; "
                "give `hosts`, one label per row"
            ) from None
    if isinstance(hosts, Mapping):  # page -> host label
        if "page" not in table:
            raise ValueError("`hosts` maps pages to hosts, but the table has no `page` column")
        pages = table["page"]
        labels = pages.map(hosts).to_numpy(dtype=object)
        missing = pd.isna(labels)
        if missing.any():
            i = int(np.flatnonzero(missing)[0])
            raise ValueError(f"`hosts` gives no host (or None/NaN) for the page {pages.iloc[i]!r} (row {i})")
        return labels
    if isinstance(hosts, (str, bytes)) or not hasattr(hosts, "__len__"):
        raise TypeError(
            f"`hosts` must be 'url', one label per row ({n}) or a mapping page -> host; "
            f"got {type(hosts).__name__} {hosts!r}"
        )
    if len(hosts) != n:
        raise ValueError(f"`hosts` must be one label per row: {n} labels; got {len(hosts)}")
    arr = hosts.to_numpy() if isinstance(hosts, (pd.Series, pd.Index)) else np.asarray(hosts, dtype=object)
    if arr.shape != (n,):
        raise ValueError(f"`hosts` must be one label per row: shape ({n},); got {arr.shape}")
    if arr.dtype == object:
        missing = pd.isna(arr)
        if missing.any():
            i = int(np.flatnonzero(missing)[0])
            raise ValueError(f"`hosts` must not hold None or NaN; got {arr[i]!r} at row {i}")
    return arr


#: the start of the warning on keys of ``host_budgets`` that match no page's host
UNMATCHED_KEYS = "key(s) of `host_budgets` match no page's host"


def _url_host_keys(host_budgets):
    """A mapping ``host_budgets`` (dict, defaultdict or pandas Series) with its string keys stripped
    and lower-cased, as the host names of URLs are; anything else unchanged. ValueError naming
    two keys that become one."""
    if isinstance(host_budgets, pd.Series):
        host_budgets = host_budgets.to_dict()
    if not isinstance(host_budgets, Mapping) or not host_budgets:
        return host_budgets
    keys = pd.Series(list(host_budgets.keys()), dtype=object)
    lowered = keys.str.strip().str.lower()
    lowered = lowered.where(lowered.notna(), keys)  # keys that are not strings stay as they are
    twice = lowered.duplicated(keep=False).to_numpy()
    if twice.any():
        both = keys[(lowered == lowered[twice].iloc[0]).to_numpy()].tolist()
        raise ValueError(
            f"`host_budgets` keys {both[0]!r} and {both[1]!r} are one host (a URL's host name is "
            "compared without case and surrounding spaces); give it one cap"
        )
    out = dict(zip(lowered.tolist(), host_budgets.values()))
    if isinstance(host_budgets, defaultdict):
        return defaultdict(host_budgets.default_factory, out)
    return out


def _warn_unmatched_keys(host_budgets, names) -> None:
    """A UserWarning naming how many keys of a mapping ``host_budgets`` match none of the hosts
    ``names``, and a few of them."""
    if not isinstance(host_budgets, (Mapping, pd.Series)) or not len(host_budgets):
        return
    keys = pd.Index(list(host_budgets.keys()), dtype=object)
    unmatched = keys[~keys.isin(pd.Index(names, dtype=object))]
    if unmatched.size:
        shown = ", ".join(map(str, unmatched[:5])) + (", ..." if unmatched.size > 5 else "")
        warnings.warn(f"{unmatched.size} {UNMATCHED_KEYS} (their caps are unused): {shown}", UserWarning, stacklevel=3)


def _caps_summary(host_budgets, caps: np.ndarray):
    """``attrs["host_budgets"]``: the one cap (crawls per day), or counts and range of a mapping's caps."""
    if not hasattr(host_budgets, "keys"):
        return float(caps[0]) if caps.size else float(host_budgets)
    finite = caps[np.isfinite(caps)]
    return {
        "n_hosts": int(caps.size),
        "n_capped": int(finite.size),
        "min": float(finite.min()) if finite.size else None,
        "max": float(finite.max()) if finite.size else None,
    }


def _within_caps(rates, codes, caps, budget, cap):
    """The revisit bound of the plug-in rates within the caps: (rates, at the bound, hosts at cap).

    As without caps, a page below 1/M (M = ``cap``) is raised to it and the others are scaled
    by one factor g to spend the rest of the budget; under caps host h's pages off the bound
    spend g R_h on top of its pages at the bound, nb_h/M, at most c_h: g is the level with
    Σ_h min(c_h − nb_h/M, g R_h) = B − nb/M (the hosts reaching their caps are held there).
    Hosts whose cap is at most n_h/M crawl each page every n_h/c_h (the cap wins; at the bound).
    Where no cap binds this is the scaling without caps, bit for bit. A host is at its cap
    where it spends it (to within 1e-12 relative).
    """
    n_hosts = caps.size
    count = np.bincount(codes, minlength=n_hosts).astype(np.float64)
    tight = count / cap >= caps
    bound = (rates < 1.0 / cap) | tight[codes]
    left = budget - bound.sum() / cap
    rest = rates[~bound].sum()
    out = np.where(bound, 1.0 / cap, rates * (left / rest if rest > 0 else 0.0))  # as without caps
    out = np.where(tight[codes], (caps / count)[codes], out)
    spend = np.bincount(codes, weights=out, minlength=n_hosts)
    if not tight.any() and not (spend > caps).any():
        return out, bound, spend >= caps * (1.0 - 1e-12)  # at the cap (to rounding)
    room = np.where(tight, 0.0, caps - np.bincount(codes, weights=bound & ~tight[codes], minlength=n_hosts) / cap)
    spend_r = np.bincount(codes, weights=np.where(bound, 0.0, rates), minlength=n_hosts)  # R_h
    share = budget - caps[tight].sum() - np.sum(bound & ~tight[codes]) / cap
    # the level g: hosts by the g at which they reach their caps, room_h / R_h
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(spend_r > 0, room / spend_r, np.inf)
    order = np.argsort(v)
    vs, rs, cs = v[order], spend_r[order], room[order]
    before = np.concatenate([[0.0], np.cumsum(np.where(np.isfinite(vs), cs, 0.0))[:-1]])
    after = np.cumsum(rs[::-1])[::-1]
    with np.errstate(invalid="ignore"):  # inf · 0: hosts with no page off the bound come last
        at = before + vs * after
    k = int(np.searchsorted(at, share, side="left"))
    g = np.inf if k >= vs.size or after[k] == 0 else (share - before[k]) / after[k]  # inf: every host at cap
    g_h = np.minimum(g, v)
    with np.errstate(invalid="ignore"):  # 0 · inf on pages at the bound (not taken)
        out = np.where(bound, 1.0 / cap, rates * g_h[codes])
    out = np.where(tight[codes], (caps / count)[codes], out)
    return out, bound, tight | (np.bincount(codes, weights=out, minlength=n_hosts) >= caps * (1.0 - 1e-12))


def _allocate_capped(table, policy, mean, w, weights, budget, cap, objective, labels, host_budgets, codes, caps):
    """(rates, at the revisit bound, hosts at cap, extra attrs) of ``policy`` under the caps."""
    if policy == "uniform":
        rates, held = equal_split(codes, caps, budget)
        count = np.bincount(codes, minlength=caps.size)
        return rates, (count / cap >= caps)[codes], held, {}
    if policy == "plug_in":
        found = capped_crawl_rates(
            mean,
            w if weights is not None else 1.0,
            budget,
            objective=objective,
            hosts=labels,
            host_budgets=host_budgets,
        )
        rates, bound, held = _within_caps(found.rates, codes, caps, budget, cap)
        return rates, bound, held, {}
    median, sd = _lognormal_posterior(table, mean)
    capped = np.isfinite(caps)
    found = capped_index_intervals(
        median,
        sd,
        budget,
        hosts=codes,
        host_budgets=dict(zip(np.flatnonzero(capped).tolist(), caps[capped].tolist())),
        weights=w,
        max_interval=cap,
        interval_range=_INTERVAL_RANGE,
    )
    rates, price, held = found.rates, found.price, found.at_cap
    bound = found.intervals >= cap * (1.0 - 1e-12)
    return rates, bound, held, {"price": float(price)}
