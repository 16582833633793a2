"""Coverage of the per-page table's intervals on pages crawled too rarely for their rate.

Pages are crawled every τ = 30 days or at Poisson times of mean 30 days (a Common Crawl
cadence), k crawls each, at true rates across saturation (from 0.01 to 3 changes a day:
from no change seen to a change at every crawl). The table flags a page whose every crawl
saw a change ``rate_bound = "lower"`` and reports the likelihood's one-sided interval
[Δ_L, inf), and a page with no change seen ``"upper"``, [0, Δ_U]
(:func:`changerate_bayes.crawllog.table.rate_bounds`); for every true rate
P(flagged "lower" and Δ_L > Δ) < 1 − c, and the same mirrored. The section measures both
misses per cell and the coverage of each end of the table's interval over all pages
(flagged pages: the bound; others: the posterior's equal-tailed interval).
"""

from __future__ import annotations

import numpy as np

from changerate_bayes.crawllog.table import page_table
from changerate_bayes.history import CrawlHistory
from changerate_bayes.report import html_table, verdict_html

#: true rates (changes per day), crawls per page, the mean crawl interval (days)
RATES = tuple(float(r) for r in np.geomspace(0.01, 3.0, 10))
KS = (3, 6, 12)
TAU_DAYS = 30.0
SCHEMES = ("regular", "poisson")


def bound_coverage(n_rep: int, *, rng, level: float = 0.9) -> dict:
    """Simulate ``n_rep`` pages per (true rate, k, crawl scheme) cell and measure how often the
    table's interval ends miss the true rate.

    Parameters
    ----------
    n_rep : int
        Pages per cell (>= 1); 60 cells.
    rng : int or numpy.random.Generator
        Seed or generator of the crawl times and changes.
    level : float, default 0.9
        Level c of the table's intervals.

    Returns
    -------
    dict
        ``settings``; ``cells``: one record per cell (rate, k, scheme, share of pages flagged
        "lower" and "upper", the shares missing with each bound, ``ok`` when both are at most
        1 − c + 3 binomial SEs); ``pooled``: coverage of each end over all pages with its SE;
        ``ok``: every cell and both pooled coverages ≥ c − 3 SE.

    Raises
    ------
    ValueError
        If ``n_rep`` < 1 or ``level`` is not in (0, 1).
    """
    if isinstance(n_rep, bool) or not isinstance(n_rep, (int, np.integer)) or n_rep < 1:
        raise ValueError(f"`n_rep` must be an integer >= 1; got {n_rep!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"`level` must be in (0, 1); got {level!r}")
    gen = np.random.default_rng(rng)
    rate, k, scheme = (a.ravel() for a in np.meshgrid(RATES, KS, np.arange(len(SCHEMES)), indexing="ij"))
    n_cells = rate.size
    cell = np.repeat(np.arange(n_cells), n_rep)
    d, kk, s = rate[cell], k[cell], scheme[cell]
    page = np.repeat(np.arange(kk.size), kk)
    tau = np.where(s[page] == 0, TAU_DAYS, gen.exponential(TAU_DAYS, size=kk.sum()))
    changed = gen.random(kk.sum()) < -np.expm1(-d[page] * tau)
    history = CrawlHistory.from_segments(
        changed.astype(np.int8), tau, lengths=kk, crawl_rate=kk / np.bincount(page, weights=tau)
    )
    table = page_table(history, unit_hours=24.0, level=level)
    bound, lo, hi = (table[c].to_numpy() for c in ("rate_bound", "rate_lower_per_day", "rate_upper_per_day"))

    def share(x):
        return np.bincount(cell, weights=x, minlength=n_cells) / n_rep

    miss_lower, miss_upper = share((bound == "lower") & (lo > d)), share((bound == "upper") & (hi < d))
    flag_lower, flag_upper = share(bound == "lower"), share(bound == "upper")
    se_cell = float(np.sqrt(level * (1 - level) / n_rep))
    allowed = 1 - level + 3 * se_cell
    cells = [
        {
            "rate": float(rate[i]),
            "k": int(k[i]),
            "scheme": SCHEMES[scheme[i]],
            "flagged_lower": float(flag_lower[i]),
            "miss_lower": float(miss_lower[i]),
            "flagged_upper": float(flag_upper[i]),
            "miss_upper": float(miss_upper[i]),
            "ok": bool(miss_lower[i] <= allowed and miss_upper[i] <= allowed),
        }
        for i in range(n_cells)
    ]
    n = d.size
    se = float(np.sqrt(level * (1 - level) / n))
    pooled = {
        "pages": int(n),
        "lower_covers": float(np.mean(lo <= d)),
        "upper_covers": float(np.mean(hi >= d)),
        "miss_lower": float(np.mean((bound == "lower") & (lo > d))),
        "miss_upper": float(np.mean((bound == "upper") & (hi < d))),
        "se": se,
    }
    ok = all(c["ok"] for c in cells) and min(pooled["lower_covers"], pooled["upper_covers"]) >= level - 3 * se
    return {
        "settings": {"level": level, "n_rep": int(n_rep), "tau_days": TAU_DAYS, "ks": list(KS), "rates": list(RATES)},
        "cells": cells,
        "allowed_miss": allowed,
        "pooled": pooled,
        "ok": bool(ok),
    }


def render_bound_coverage(res: dict) -> str:
    """The section's HTML: the per-cell table and the verdict."""
    st, p = res["settings"], res["pooled"]
    c = st["level"]
    intro = (
        f"<p>Pages whose rate is only a bound: {st['n_rep']} pages per cell crawled every {st['tau_days']:g} days "
        f"or at Poisson times of that mean, k = {', '.join(map(str, st['ks']))} crawls, true rates "
        f"{st['rates'][0]:g}-{st['rates'][-1]:g} changes a day. The table reports the likelihood's one-sided "
        f"{c:.0%} interval on pages whose every crawl saw a change ([Δ_L, ∞)) or none did ([0, Δ_U]); a bound "
        f"misses the truth with probability below {1 - c:.2g} at every rate.</p>"
    )
    table = html_table(
        res["cells"],
        [
            ("rate", "true rate (per day)"),
            ("k", "crawls"),
            ("scheme", "crawls"),
            ("flagged_lower", "share 'lower'"),
            ("miss_lower", "'lower' and Δ_L > Δ"),
            ("flagged_upper", "share 'upper'"),
            ("miss_upper", "'upper' and Δ_U < Δ"),
            ("ok", f"misses ≤ {res['allowed_miss']:.3f}"),
        ],
        caption=f"Misses of the one-sided bounds per cell (allowed: {1 - c:.2g} + 3 binomial SEs)",
    )
    verdict = (
        f"over {p['pages']} pages, the table's lower end is at most the true rate on {p['lower_covers']:.3f} of them "
        f"and its upper end at least the true rate on {p['upper_covers']:.3f} (SE {p['se']:.4f}, target ≥ {c:g}); "
        f"a flagged bound misses on {p['miss_lower']:.4f} ('lower') and {p['miss_upper']:.4f} ('upper') of all pages"
    )
    return intro + str(table) + str(verdict_html(verdict, res["ok"]))
