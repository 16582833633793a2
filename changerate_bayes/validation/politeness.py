"""What politeness costs: the exact capped optimum against the heuristics crawlers use.

A crawler that waits d seconds between two fetches from one host can fetch at most
c = 86,400/d pages per day from it. On a population of crawler scale, this study
compares four allocations of a global budget B (crawls per day) that all respect
these caps:

(a) ``exact``: the optimum under the budget and the caps
    (:func:`~changerate_bayes.scheduling.capped_crawl_rates`; Kolobov, Lubetzky, Peres,
    Horvitz, "Optimal freshness crawl under politeness constraints", SIGIR 2019);
(b) ``queue_delay``: the optimum without caps, each host over its cap slowed down
    to it by its fetch queue (its rates scaled by c_h/S_h); the rest of B is not spent;
(c) ``saturate_recurse``: the optimum without caps; every host over its cap is fixed
    with its rates scaled to the cap, the remaining budget is solved again over the
    remaining hosts, repeated until no remaining host is over its cap;
(d) ``uniform``: equal rates per page, water level capped per host.

and, for reference, the optimum without caps (``no_caps``, which breaks them: what the
crawl would gain if it did not have to be polite). The verdict checks that (a) is at
least as good as (b), (c) and (d) under both objectives and every cap (a mathematical
property of an exact optimum, so a failure is a failure of the solver); the margins are
the finding.

Population (the same at every preset; 10^6 pages take a few seconds):

* N = 10^6 pages; the number of pages per host follows a discrete power law,
  P(n) ∝ n^-β with β = 1.7 (numpy's ``zipf``), as Huberman & Adamic found in Alexa's
  and Infoseek's crawls ("Growth dynamics of the World-Wide Web", Nature 401, 1999:
  fitted β between about 1.6 and 1.9; a rank-size (Zipf) exponent 1/(β - 1) ≈ 1.4).
  Sizes are drawn until they hold N pages (the last host is cut to fit); sizes above
  N/20 are redrawn, so that no single host holds more than 5% of the pages.
* Change rates Δ ~ LogNormal(ln(1/7), 1.5) changes per day (median one change a week),
  independent of the host; weights w = 1 (every page counts the same).
* Budget B = 2 crawls per day per page on average (2 × 10^6 crawls per day).
* Caps: StormCrawler's default ``fetcher.server.delay`` 1 s (86,400 per day per host),
  Nutch's 5 s (17,280), and a robots.txt ``Crawl-delay`` of 30 s (2,880; Nutch's
  ``fetcher.max.crawl.delay``, the longest delay it honours).

Freshness is that of the objective the solvers maximise, with Poisson crawl times:
page i is fresh a fraction p_i/(p_i + Δ_i) of the time; harmonic staleness is
ln(1 + Δ_i/p_i) per page (lower is better). The fraction (1 - e^{-Δ_i/p_i}) p_i/Δ_i a
page would be fresh if crawled at fixed intervals 1/p_i is shown for information (the
rates are optimal for Poisson crawls, not for fixed intervals).
"""

from __future__ import annotations

import math
import statistics
import time

import numpy as np

from changerate_bayes.report import figure_to_html, html_table, summary_row, verdict_html
from changerate_bayes.scheduling import capped_crawl_rates, optimal_crawl_rates

TITLE = "What politeness costs: crawl rates under per-host caps"
KEYS = ("politeness",)

OBJECTIVES = ("binary_freshness", "harmonic_staleness")
#: (name, delay between two fetches from one host in seconds)
CAPS = (
    ("StormCrawler default, 1 s", 1.0),
    ("Nutch default, 5 s", 5.0),
    ("Crawl-delay 30 s", 30.0),
)
METHODS = ("exact", "queue_delay", "saturate_recurse", "uniform")
HEURISTICS = METHODS[1:]
SECONDS_PER_DAY = 86_400.0
HOST_SIZE_EXPONENT = 1.7
CHANGE_MEDIAN = 1.0 / 7.0  # changes per day
CHANGE_LOG_SD = 1.5
#: relative tolerance of the checks (rounding of sums over 10^6 pages)
RTOL = 1e-9
#: the solves with and without caps are timed by the median of this many calls (after one untimed call of each)
TIMING_REPEATS = 3


def _sizes(preset):
    # 10^6 pages solve in a fraction of a second each: every preset runs the full size
    size = {"pages": 10**6, "max_host_fraction": 1 / 20, "budget_per_page": 2.0}
    return preset.pick(quick=size, default=size, full=size)


# --- population -------------------------------------------------------------------------------


def host_sizes(rng, pages: int, exponent: float, max_size: int) -> np.ndarray:
    """Host sizes (pages per host) from a discrete power law, summing to ``pages``.

    Sizes are drawn i.i.d. with P(n) ∝ n^-exponent, n >= 1 (numpy's ``zipf``), those
    above ``max_size`` are dropped (redrawn), and sizes are taken in order until they hold
    ``pages`` pages; the last host is cut to fit.

    Parameters
    ----------
    rng : int or numpy.random.Generator
    pages : int
        N >= 1, the total number of pages.
    exponent : float
        β > 1.
    max_size : int
        The largest host size kept, >= 2.

    Returns
    -------
    ndarray of int64, shape (H,)
        Sizes >= 1 with sum ``pages``.

    Raises
    ------
    ValueError
        If ``max_size`` < 2, or if the draws that are kept do not hold ``pages`` pages.
    """
    if max_size < 2:
        raise ValueError(f"`max_size` must be >= 2; got {max_size}")
    draws = np.random.default_rng(rng).zipf(exponent, size=pages)  # each size >= 1: N draws hold N pages
    draws = draws[draws <= max_size]
    total = np.cumsum(draws)
    if total.size == 0 or total[-1] < pages:
        raise ValueError(f"{pages} draws of sizes <= {max_size} do not hold {pages} pages; raise `max_size`")
    h = int(np.searchsorted(total, pages)) + 1  # the first h sizes reach N
    sizes = draws[:h].astype(np.int64)
    sizes[-1] -= int(total[h - 1]) - pages
    return sizes


# --- objectives per page ----------------------------------------------------------------------


def poisson_freshness(rates, change_rates) -> np.ndarray:
    """Fraction of time a page is fresh under Poisson crawls: p/(p + Δ) (1 if p = Δ = 0)."""
    p, d = np.asarray(rates, dtype=float), np.asarray(change_rates, dtype=float)
    s = p + d
    return np.divide(p, s, out=np.ones_like(s), where=s > 0)


def periodic_freshness(rates, change_rates) -> np.ndarray:
    """Fraction of time a page is fresh when crawled every 1/p: (1 - e^{-Δ/p}) p/Δ.

    1 for Δ = 0 (the limit Δ/p -> 0), 0 for p = 0 < Δ (never crawled).
    """
    p, d = np.asarray(rates, dtype=float), np.asarray(change_rates, dtype=float)
    x = np.divide(d, p, out=np.full_like(d, np.inf), where=p > 0)  # Δ/p, inf when never crawled
    x = np.where(d > 0, x, 0.0)
    with np.errstate(invalid="ignore"):
        f = -np.expm1(-x) / x
    return np.where(x == 0, 1.0, np.where(np.isinf(x), 0.0, f))


def harmonic_staleness(rates, change_rates) -> np.ndarray:
    """ln(1 + Δ/p) per page (0 for Δ = 0; inf for p = 0 < Δ)."""
    p, d = np.asarray(rates, dtype=float), np.asarray(change_rates, dtype=float)
    x = np.divide(d, p, out=np.full_like(d, np.inf), where=p > 0)
    return np.where(d > 0, np.log1p(x), 0.0)


def _page_value(objective, rates, d):
    return poisson_freshness(rates, d) if objective == "binary_freshness" else harmonic_staleness(rates, d)


# --- heuristics -------------------------------------------------------------------------------


def queue_delayed_rates(free_rates, codes, caps) -> np.ndarray:
    """Heuristic (b): the optimum without caps, each host over its cap slowed to it.

    Rates of host h are scaled by min(1, c_h/S_h), S_h = Σ_{i∈h} p_i: the host's fetch
    queue delays its pages equally. The budget the slowed hosts do not use is not spent:
    Σ p = Σ_h min(c_h, S_h).
    """
    spend = np.bincount(codes, weights=free_rates, minlength=caps.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(spend > caps, caps / spend, 1.0)
    return free_rates * scale[codes]


def saturate_and_recurse_rates(change_rates, weights, codes, caps, budget, objective) -> tuple[np.ndarray, int]:
    """Heuristic (c): solve without caps, fix the hosts over their caps, re-solve the rest.

    Each round solves the problem without caps (:func:`optimal_crawl_rates`) over the
    pages of the hosts not yet fixed, with the budget B - Σ_{fixed} c_h; every host whose
    spend S_h exceeds c_h is fixed with its rates of that round scaled by c_h/S_h. The
    rounds stop when no remaining host is over its cap (its pages keep that round's
    rates) or no host remains (the rest of B is not spent). Returns (rates, rounds).
    """
    d = np.asarray(change_rates, dtype=float)
    w = np.broadcast_to(np.asarray(weights, dtype=float), d.shape)
    rates = np.zeros(d.size)
    fixed = np.zeros(caps.size, dtype=bool)
    rounds = 0
    while True:  # one round per wave of hosts over cap (a handful), not per host
        free = ~fixed[codes]
        left = budget - caps[fixed].sum()  # > 0: each fixed host's cap is below the spend it replaced
        if not free.any():
            return rates, rounds
        rounds += 1
        pf = optimal_crawl_rates(d[free], w[free], left, objective=objective)
        spend = np.bincount(codes[free], weights=pf, minlength=caps.size)
        over = spend > caps
        if not over.any():
            rates[free] = pf
            return rates, rounds
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(over, caps / spend, 1.0)
        newly = over[codes[free]]
        idx = np.flatnonzero(free)[newly]
        rates[idx] = pf[newly] * scale[codes[idx]]
        fixed |= over


def uniform_capped_rates(codes, caps, budget) -> np.ndarray:
    """Heuristic (d): one rate ℓ for every page, capped per host: p_i = min(ℓ, c_h/n_h).

    ℓ solves Σ_h min(c_h, n_h ℓ) = B (a piecewise-linear increasing function, inverted
    after sorting the hosts by c_h/n_h); if Σ_h c_h <= B every host is at its cap.
    """
    n = np.bincount(codes, minlength=caps.size).astype(float)
    with np.errstate(divide="ignore"):
        level_at_cap = caps / n  # the level at which host h reaches its cap
    order = np.argsort(level_at_cap)
    v, ns, cs = level_at_cap[order], n[order], caps[order]
    cap_before = np.concatenate([[0.0], np.cumsum(cs)[:-1]])  # Σ of the caps of the hosts below
    n_after = np.cumsum(ns[::-1])[::-1]  # pages of host k and those above it
    with np.errstate(invalid="ignore"):
        spend_at = cap_before + v * n_after  # Σ_h min(c_h, n_h ℓ) at ℓ = v[k]
    k = int(np.searchsorted(spend_at, budget, side="left"))
    level = np.inf if k >= v.size else (budget - cap_before[k]) / n_after[k]
    return np.minimum(level, level_at_cap)[codes]


# --- the study --------------------------------------------------------------------------------


def _population(gen, sz):
    n = sz["pages"]
    sizes = host_sizes(gen, n, HOST_SIZE_EXPONENT, max(2, int(n * sz["max_host_fraction"])))
    codes = np.repeat(np.arange(sizes.size), sizes)
    d = gen.lognormal(np.log(CHANGE_MEDIAN), CHANGE_LOG_SD, n)
    return sizes, codes, d


def _host_budgets(caps):
    """``host_budgets`` for host codes 0..H-1: one number if all caps are equal, else a mapping
    (infinite caps left out: uncapped)."""
    if np.all(caps == caps[0]) and np.isfinite(caps[0]):
        return float(caps[0])
    finite = np.flatnonzero(np.isfinite(caps))
    return dict(zip(finite.tolist(), caps[finite].tolist()))


def _timed(solve, repeats: int):
    """(solve(), median wall time of ``repeats`` calls in seconds); every call gives the same result."""
    seconds = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = solve()
        seconds.append(time.perf_counter() - t0)
    return out, statistics.median(seconds)


def compare(d, codes, caps, budget, objective, *, free=None, repeats: int = 1) -> list[dict]:
    """One row per allocation (exact, the heuristics, and the optimum without caps).

    Parameters
    ----------
    d : ndarray, shape (N,)
        Change rates Δ_i >= 0 per day.
    codes : ndarray of int, shape (N,)
        Host of each page, 0..H-1 (every host has a page).
    caps : ndarray, shape (H,)
        c_h > 0, crawls per day (inf: uncapped).
    budget : float
        B > 0, crawls per day.
    objective : {"binary_freshness", "harmonic_staleness"}
    free : (ndarray, float), optional
        The optimum without caps and the seconds it took, if already solved.
    repeats : int, default 1
        The solves with and without caps are run this many times and timed by the
        median (the heuristics, which reuse the solver without caps, run once).

    Returns
    -------
    list of dict
        ``method``, ``value`` (mean per page of the objective: freshness, higher is
        better; harmonic staleness, lower is better), ``loss`` (how much worse than
        ``exact``, >= 0 when exact is better; per page), ``relative_loss`` (``loss`` ÷
        |exact's value|), ``loss_on_capped`` and ``loss_elsewhere`` (the parts of
        ``loss`` from the pages of the hosts at cap in the exact optimum, and from the
        others), ``unspent`` (1 - Σp/B), ``max_spend_over_cap`` (max_h S_h/c_h),
        ``hosts_at_cap``, ``pages_at_cap`` (hosts with S_h >= c_h (1 - 1e-9), and their
        pages), ``freshness`` (Poisson crawls), ``periodic_freshness`` (crawls at fixed
        intervals), ``solves`` (solves without caps; None for exact), ``seconds`` (wall
        time of the allocation: the median over ``repeats`` calls for exact and no caps,
        one call for the heuristics; queue delay's includes the solve without caps).
    """
    n, n_hosts = d.size, caps.size
    if free is None:
        free = _timed(lambda: optimal_crawl_rates(d, 1.0, budget, objective=objective), repeats)
    free_rates, free_seconds = free
    host_budgets = _host_budgets(caps)
    res, exact_seconds = _timed(
        lambda: capped_crawl_rates(d, 1.0, budget, objective=objective, hosts=codes, host_budgets=host_budgets),
        repeats,
    )
    queued, queue_seconds = _timed(lambda: queue_delayed_rates(free_rates, codes, caps), 1)
    (sr, rounds), sr_seconds = _timed(lambda: saturate_and_recurse_rates(d, 1.0, codes, caps, budget, objective), 1)
    uniform, uniform_seconds = _timed(lambda: uniform_capped_rates(codes, caps, budget), 1)
    allocations = {
        "exact": (res.rates, None, exact_seconds),
        "queue_delay": (queued, 1, free_seconds + queue_seconds),
        "saturate_recurse": (sr, rounds, sr_seconds),
        "uniform": (uniform, 0, uniform_seconds),
        "no_caps": (free_rates, 1, free_seconds),
    }
    sign = 1.0 if objective == "binary_freshness" else -1.0  # loss = how much worse than exact
    exact_page = _page_value(objective, res.rates, d)
    exact_value = float(exact_page.mean())
    on_capped = res.at_cap[codes]
    n_pages = np.bincount(codes, minlength=n_hosts)
    rows = []
    for method, (p, solves, seconds) in allocations.items():
        page = exact_page if method == "exact" else _page_value(objective, p, d)
        loss_page = sign * (exact_page - page) / n
        spend = np.bincount(codes, weights=p, minlength=n_hosts)
        at_cap = spend >= caps * (1 - 1e-9)
        fresh = page if objective == "binary_freshness" else poisson_freshness(p, d)
        rows.append(
            {
                "objective": objective,
                "method": method,
                "value": float(page.mean()),
                "loss": float(loss_page.sum()),
                "relative_loss": float(loss_page.sum() / abs(exact_value)),
                "loss_on_capped": float(loss_page[on_capped].sum()),
                "loss_elsewhere": float(loss_page[~on_capped].sum()),
                "unspent": float(1.0 - p.sum() / budget),
                "max_spend_over_cap": float(np.max(spend / caps)),
                "hosts_at_cap": int(at_cap.sum()),
                "pages_at_cap": int(n_pages[at_cap].sum()),
                "freshness": float(fresh.mean()),
                "periodic_freshness": float(periodic_freshness(p, d).mean()),
                "solves": solves,
                "seconds": seconds,
            }
        )
    return rows


def run(preset, *, seed: int, progress) -> dict:
    sz = _sizes(preset)
    gen = np.random.default_rng(seed)
    sizes, codes, d = _population(gen, sz)
    n, n_hosts = d.size, sizes.size
    budget = sz["budget_per_page"] * n
    # one untimed call of each solver on the full population before anything is timed: numba
    # kernels load (or compile) and the first large arrays are allocated on the first call
    for objective in OBJECTIVES:
        optimal_crawl_rates(d, 1.0, budget, objective=objective)
        capped_crawl_rates(d, 1.0, budget, objective=objective, hosts=codes, host_budgets=SECONDS_PER_DAY / CAPS[0][1])
    population = {
        "pages": n,
        "hosts": n_hosts,
        "host_size_exponent": HOST_SIZE_EXPONENT,
        "max_host_size": int(sizes.max()),
        "median_host_size": float(np.median(sizes)),
        "pages_on_hosts_over_10000": int(sizes[sizes > 10_000].sum()),
        "change_median_per_day": CHANGE_MEDIAN,
        "change_log_sd": CHANGE_LOG_SD,
        "budget_per_day": budget,
        "budget_per_page": sz["budget_per_page"],
    }
    progress(f"{n:,} pages on {n_hosts:,} hosts (largest {sizes.max():,} pages)")
    rows = []
    for objective in OBJECTIVES:
        free = _timed(lambda: optimal_crawl_rates(d, 1.0, budget, objective=objective), TIMING_REPEATS)
        for label, delay in CAPS:
            cap = SECONDS_PER_DAY / delay
            caps = np.full(n_hosts, cap)
            for row in compare(d, codes, caps, budget, objective, free=free, repeats=TIMING_REPEATS):
                rows.append({"caps": label, "delay_seconds": delay, "cap_per_day": cap, **row})
            progress(f"{objective}, {label}: done")
    return {"politeness": {"population": population, "rows": rows}}


# --- the report -------------------------------------------------------------------------------


def _check(rows) -> tuple[bool, float, float]:
    """(all checks hold, worst margin of exact over a heuristic, worst spend over a cap)."""
    worst_margin, worst_over, ok = np.inf, 0.0, True
    for r in rows:
        if r["method"] == "no_caps":
            continue
        worst_over = max(worst_over, r["max_spend_over_cap"] - 1)
        ok &= r["max_spend_over_cap"] <= 1 + RTOL and r["unspent"] >= -RTOL
        if r["method"] != "exact":
            worst_margin = min(worst_margin, r["relative_loss"])
    ok &= worst_margin >= -RTOL
    return bool(ok), float(worst_margin), float(worst_over)


def _timing(rows) -> list[dict]:
    out = []
    for objective in OBJECTIVES:
        for label, _ in CAPS:
            free = _pick(rows, objective, label, "no_caps")["seconds"]
            capped = _pick(rows, objective, label, "exact")["seconds"]
            out.append(
                {
                    "objective": objective,
                    "caps": label,
                    "uncapped_seconds": free,
                    "capped_seconds": capped,
                    "ratio": capped / free,
                }
            )
    return out


def _pick(rows, objective, caps, method):
    return next(r for r in rows if r["objective"] == objective and r["caps"] == caps and r["method"] == method)


def _figure(rows):
    import matplotlib.pyplot as plt  # matplotlib: heavy, loaded only to draw

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    labels = [c for c, _ in CAPS]
    x = np.arange(len(labels))
    width = 0.2
    names = {m: f"{NAMES[m]} ({k})" for m, k in zip(METHODS, "abcd")}
    for ax, objective, ylabel in zip(
        axes, OBJECTIVES, ("mean freshness (higher is better)", "mean staleness (lower is better)")
    ):
        for j, method in enumerate(METHODS):
            vals = [_pick(rows, objective, c, method)["value"] for c in labels]
            ax.bar(x + (j - 1.5) * width, vals, width, label=names[method])
        ax.axhline(_pick(rows, objective, labels[0], "no_caps")["value"], color="k", ls="--", lw=1, label="no caps")
        ax.set_xticks(x, [c.replace(", ", "\n") for c in labels], fontsize="small")
        ax.set_ylabel(ylabel)
        ax.set_title(objective.replace("_", " "))
        if objective == "binary_freshness":
            lo = min(r["value"] for r in rows if r["objective"] == objective)
            ax.set_ylim(max(0.0, lo - 0.1), 1.0)
    axes[1].legend(fontsize="small", loc="upper left")
    return fig


NAMES = {
    "exact": "exact",
    "queue_delay": "queue delay",
    "saturate_recurse": "saturate and recurse",
    "uniform": "uniform",
    "no_caps": "no caps",
}


def _num(x: float) -> str:
    """A per-page difference: 4 decimals, or 2 significant digits when smaller."""
    return f"{x:.4f}" if abs(x) >= 1e-3 or x == 0 else f"{x:.1e}"


def _pct(x: float) -> str:
    """A relative difference as a percentage: 2 decimals, 2 significant digits below 0.1%, "0%" for 0."""
    if x == 0:
        return "0%"
    return f"{x:.2%}" if abs(x) >= 1e-3 else f"{100 * x:.2g}%"


def _floor_pct(x: float) -> str:
    """A lower bound as a whole percentage, rounded down so that it stays a lower bound."""
    return f"{math.floor(100 * x)}%"


def _periodic_wins(rows) -> list[tuple[dict, float]]:
    """The heuristics' rows fresher than exact under fixed-interval crawls, with the difference per page."""
    out = []
    for r in rows:
        if r["method"] in HEURISTICS:
            diff = r["periodic_freshness"] - _pick(rows, r["objective"], r["caps"], "exact")["periodic_freshness"]
            if diff > 0:
                out.append((r, diff))
    return out


def _periodic_summary(rows, *, brief: bool = False) -> str:
    """One clause: in how many comparisons a heuristic is fresher than exact under fixed-interval crawls."""
    wins = _periodic_wins(rows)
    n_compared = sum(r["method"] in HEURISTICS for r in rows)
    how = "" if brief else " (fresh fraction (1 − e^(−Δ/p)) p/Δ, which the solvers do not maximise)"
    if not wins:
        return f"under fixed-interval crawls{how} exact is as fresh too, in all {n_compared} comparisons"
    who = " and ".join(dict.fromkeys(NAMES[r["method"]] for r, _ in wins))
    return (
        f"under fixed-interval crawls{how} {who} is fresher than exact in {len(wins)} of {n_compared} "
        f"comparisons, by at most {max(diff for _, diff in wins):.1e}"
    )


def _margins_words(rows) -> list[str]:
    """One sentence per objective and cap setting: the hosts at cap, the cost, the margins."""
    out = []
    for objective in OBJECTIVES:
        for label, _ in CAPS:
            ex = _pick(rows, objective, label, "exact")
            free = _pick(rows, objective, label, "no_caps")
            losses = ", ".join(
                f"{NAMES[m]} {_num(r['loss'])} ({_pct(r['relative_loss'])}"
                + (f", {r['unspent']:.1%} of B unspent)" if r["unspent"] > 1e-9 else ")")
                for m in HEURISTICS
                for r in [_pick(rows, objective, label, m)]
            )
            worst = max(HEURISTICS, key=lambda m: _pick(rows, objective, label, m)["loss"])
            out.append(
                f"{objective.replace('_', ' ')}, {label}: {ex['hosts_at_cap']} of the hosts at cap "
                f"({ex['pages_at_cap']:,} pages); the caps cost {_num(-free['loss'])} per page "
                f"({_pct(-free['relative_loss'])}); worse than exact by {losses}; the largest loss: {NAMES[worst]}."
            )
    return out


def _where_words(rows) -> str:
    """Where each heuristic loses, read off the rows."""
    heur = [r for r in rows if r["method"] in HEURISTICS]
    sat = [r for r in heur if r["method"] == "saturate_recurse"]
    same_hosts = all(r["hosts_at_cap"] == _pick(rows, r["objective"], r["caps"], "exact")["hosts_at_cap"] for r in sat)
    sat_elsewhere = max(abs(r["loss_elsewhere"]) for r in sat)
    qd = [r for r in heur if r["method"] == "queue_delay"]
    qd_share = (
        min(r["loss_elsewhere"] / r["loss"] for r in qd if r["loss"] > 0) if any(r["loss"] > 0 for r in qd) else 0
    )
    uni = [r for r in heur if r["method"] == "uniform"]
    periodic = [
        f"{NAMES[r['method']]} ({r['objective'].replace('_', ' ')}, {r['caps']}: {diff:+.1e})"
        for r, diff in _periodic_wins(rows)
    ]
    text = (
        "<p>Where each loses. <b>Queue delay</b> leaves unspent the budget its slowed hosts cannot use "
        f"(up to {max(r['unspent'] for r in qd):.0%} of B), and its other hosts keep the rates of a price set for "
        "the whole budget, which is too high once the capped hosts are held back: on the hosts not at cap it loses "
        f"at least {_floor_pct(qd_share)} of its loss. <b>Saturate and recurse</b> spends the budget and "
        + (
            "holds the same hosts at cap as the exact optimum; its rates on the other hosts are then the exact "
            "ones (loss there " + ("exactly 0" if sat_elsewhere == 0 else f"at most {sat_elsewhere:.1e}") + "), so "
            "its loss is inside the hosts at cap"
            if same_hosts
            else "holds other hosts at cap than the exact optimum in some settings (loss on the hosts not at cap up "
            f"to {sat_elsewhere:.1e} per page)"
        )
        + ", whose crawls it shares in proportion to rates solved at a price below "
        "the host's own: at its cap the exact optimum moves crawls to the pages that gain most per crawl (for "
        "freshness it gives up more of the fast-changing pages). <b>Uniform</b> ignores the change rates: it loses "
        f"on both kinds of host ({min(r['loss_on_capped'] / r['loss'] for r in uni if r['loss'] > 0):.0%}–"
        f"{max(r['loss_on_capped'] / r['loss'] for r in uni if r['loss'] > 0):.0%} of its loss on the hosts at "
        "cap).</p>"
        "<p>The column <em>fresh, fixed intervals</em> is (1 − e<sup>−Δ/p</sup>) p/Δ, the fresh fraction if "
        "each page were crawled every 1/p instead of at Poisson times; the rates are optimal for Poisson crawls, "
        "so there the ordering is not guaranteed"
    )
    if periodic:
        text += "; a heuristic's rates are fresher under fixed intervals than the exact ones for " + "; ".join(periodic)
    else:
        text += " (it holds here all the same)"
    return text + ".</p>"


def _display(rows) -> list[dict]:
    """Rows for the tables: method names in words, rounding noise (|x| < 1e-12) of the unspent budget as 0."""
    return [
        {**r, "method": NAMES[r["method"]], "unspent": 0.0 if abs(r["unspent"]) < 1e-12 else r["unspent"]} for r in rows
    ]


def render(result: dict) -> str:
    res = result["politeness"]
    pop, rows = res["population"], res["rows"]
    timing = _timing(rows)
    ok, worst_margin, worst_over = _check(rows)
    parts = [
        "<p>A crawler that waits <em>d</em> seconds between two fetches from one host fetches at most "
        "c = 86,400/<em>d</em> of its pages per day. The exact optimum under a global budget B and these caps "
        "(<code>capped_crawl_rates</code>; Kolobov, Lubetzky, Peres &amp; Horvitz, SIGIR 2019) against three "
        "heuristics that respect the caps too: <b>(b) queue delay</b>, the optimum without caps with every host "
        "over its cap slowed to it by its fetch queue (the budget it frees is not spent); <b>(c) saturate and "
        "recurse</b>, the hosts over their caps fixed with their rates scaled to the cap and the rest of the "
        "budget solved again over the other hosts, until none is over; <b>(d) uniform</b>, one rate for every "
        "page, capped per host. <b>No caps</b> (the optimum that breaks them) shows what politeness costs.</p>",
        f"<p>Population (simulated, fixed seed; the same at every preset): {pop['pages']:,} pages on "
        f"{pop['hosts']:,} hosts whose sizes follow a discrete power law P(n) ∝ n<sup>−{pop['host_size_exponent']}"
        "</sup> (Huberman &amp; Adamic, Nature 1999, fitted exponents of about 1.6–1.9 to the pages per site of "
        "Alexa's and Infoseek's crawls), sizes above N/20 redrawn: the largest host has "
        f"{pop['max_host_size']:,} pages, the median {pop['median_host_size']:.0f}, and hosts of more than 10,000 "
        f"pages hold {pop['pages_on_hosts_over_10000'] / pop['pages']:.0%} of the pages. Change rates "
        f"Δ ~ LogNormal(ln({pop['change_median_per_day']:.4f}), {pop['change_log_sd']}) per day (median one change "
        f"a week), weights 1, budget B = {pop['budget_per_day']:,.0f} crawls per day "
        f"({pop['budget_per_page']:g} per page). Caps: StormCrawler's default delay 1 s (86,400 per day per host), "
        "Nutch's 5 s (17,280), and a robots.txt Crawl-delay of 30 s (2,880; Nutch's "
        "<code>fetcher.max.crawl.delay</code>). Freshness is the time-average p/(p+Δ) of Poisson crawls, the "
        "objective the solvers maximise; harmonic staleness is ln(1+Δ/p), lower is better.</p>",
        verdict_html(
            "The exact optimum is at least as good as every heuristic under both objectives and every cap "
            f"(smallest margin {worst_margin:+.2e} relative; negative would be a failure), and every allocation "
            f"keeps every host within its cap (largest excess {worst_over:.1e}) and within the budget. "
            "Freshness here is that of Poisson crawl times, the objective the solvers maximise; "
            + _periodic_summary(rows)
            + " in mean freshness (a measurement, not a check).",
            ok,
        ),
        "<p><b>The margins</b>, per page, on this simulated population (a measurement, not a check): "
        + " ".join(_margins_words(rows))
        + "</p>",
        figure_to_html(
            _figure(rows),
            alt="Mean freshness and mean harmonic staleness of the exact capped optimum and the three "
            "heuristics under three cap settings, with the optimum without caps as a dashed line",
        ),
    ]
    columns = [
        ("caps", "caps"),
        ("method", "method"),
        ("value", "mean per page"),
        ("loss", "loss vs exact"),
        ("relative_loss", "relative"),
        ("loss_on_capped", "on hosts at cap"),
        ("loss_elsewhere", "elsewhere"),
        ("unspent", "B unspent"),
        ("hosts_at_cap", "hosts at cap"),
        ("pages_at_cap", "pages there"),
        ("periodic_freshness", "fresh, fixed intervals"),
        ("solves", "solves"),
        ("seconds", "seconds"),
    ]
    for objective, what in zip(OBJECTIVES, ("freshness (higher is better)", "harmonic staleness (lower is better)")):
        parts.append(
            html_table(
                _display([r for r in rows if r["objective"] == objective]),
                columns,
                caption=f"{objective.replace('_', ' ')}: mean {what}; losses per page against the exact optimum "
                "(negative for no caps: the gain of breaking them). For no caps, “hosts at cap” and “pages "
                "there” count the hosts over their cap (the caps it breaks). Seconds: median of "
                f"{TIMING_REPEATS} calls for exact and no caps, one call for the heuristics",
            )
        )
    parts.append(_where_words(rows))
    parts.append(
        html_table(
            timing,
            [
                ("objective", "objective"),
                ("caps", "caps"),
                ("uncapped_seconds", "without caps (s)"),
                ("capped_seconds", "with caps (s)"),
                ("ratio", "ratio"),
            ],
            caption=f"Wall time of the solver with and without caps (median of {TIMING_REPEATS} calls each, after "
            "one untimed call of each solver: numba kernels loaded)",
        )
    )
    ratios = [t["ratio"] for t in timing]
    parts.append(
        f"<p>On {pop['pages']:,} pages the exact solver with caps takes {min(ratios):.1f}–{max(ratios):.1f} times "
        f"as long as the solver without caps (information: median of {TIMING_REPEATS} calls each, on whatever "
        "else the machine is doing; "
        "<code>benchmarks/bench_host_caps.py</code> measures it properly).</p>"
    )
    return "\n".join(parts)


def summarize(result: dict) -> dict:
    """The summary-table row: the exact optimum against the heuristics."""
    rows = result["politeness"]["rows"]
    ok, worst_margin, _ = _check(rows)
    nutch = [r for r in rows if r["caps"] == CAPS[1][0] and r["objective"] == "binary_freshness"]
    qd = next(r for r in nutch if r["method"] == "queue_delay")
    sr = next(r for r in nutch if r["method"] == "saturate_recurse")
    verdict = (
        "The exact capped optimum is at least as fresh as every politeness heuristic, within every cap, for "
        f"Poisson crawl times ({_periodic_summary(rows, brief=True)})."
        if ok
        else "A heuristic beats the exact capped optimum or an allocation exceeds a cap."
    )
    return summary_row(
        verdict=verdict,
        key_number=f"Nutch caps: exact {qd['relative_loss']:.1%} fresher than queue delay, "
        f"{_pct(sr['relative_loss'])} than saturate and recurse",
        kind="holds" if ok else "fails",
    )
