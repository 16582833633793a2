"""Host politeness caps in the replay: freshness per policy with and without per-host caps.

A crawler fetches a host at most c_h times a day (Nutch: one queue per host and
fetcher.server.delay = 5 s, at most 17,280 fetches a day; StormCrawler 1 s). The replay
(:func:`changerate_bayes.replay.replay_policies` with ``hosts`` and ``host_budgets``)
sends every policy's crawls through a queue per host that holds an over-cap fetch until
the host has room. Two populations:

* the Open Terms Archive documents of the main replay (host = the service of each
  document, the part of its label between the collection and the document type: the
  archive's versions carry no URL), at the total change rate as budget (1×);
* a synthetic crawler-scale population (quick: 600 pages on 40 hosts, 20 days, 3-hour
  steps; default 5,000 on 250 and full 20,000 on 1,000, 60 days, 2-hour steps): Pareto host sizes (tail index 1.2, so a few
  hosts hold many pages), log-normal change rates (median 0.3 a day, σ 1.2), Poisson
  changes, every page in the crawl for the whole span; budget the total change rate.

Caps where they bind: each host gets a fraction f (1/2, 1/4) of what it spends without
caps at that budget under the hindsight-optimal static rates of the pages' true rates
(:func:`~changerate_bayes.scheduling.optimal_crawl_rates`), and at least f times its
pages' round-robin share B·n_h/N (a host those rates hardly crawl keeps some room). So
the caps add up to between f·B and 2f·B (well under B at f = 1/4), and where
it goes among the hosts with room decides the freshness.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from changerate_bayes.replay import pages_from_table, replay_policies
from changerate_bayes.report import html_table
from changerate_bayes.scheduling import optimal_crawl_rates

#: Policies replayed with and without caps (the tuned schedules' bisection is left out).
POLICIES = (
    "uniform",
    "nutch",
    "stormcrawler",
    "posterior_mean",
    "index_mean",
    "index_thompson",
    "oracle",
    "index_oracle",
    "clairvoyant",
)
FRACTIONS = (0.5, 0.25)
#: One cap for every host (as a crawler's one politeness delay): this quantile of the hosts'
#: spend under the hindsight-optimal static rates, so that it binds on the busiest hosts only.
ONE_CAP_QUANTILE = 0.9


def sizes(preset) -> dict:
    return preset.pick(
        quick=dict(synth_pages=600, synth_hosts=40, synth_days=20.0, synth_step="3h"),
        default=dict(synth_pages=5_000, synth_hosts=250, synth_days=60.0, synth_step="2h"),
        full=dict(synth_pages=20_000, synth_hosts=1_000, synth_days=60.0, synth_step="2h"),
    )


def ota_hosts(win: pd.DataFrame) -> pd.Series:
    """Host of each document (page label ``collection:Service/Document type.md``): its service."""
    service = win["page"].astype(str).str.split(":", n=1).str[-1].str.split("/", n=1).str[0]
    return pd.Series(service.to_numpy(), index=win["page"].astype(str).to_numpy())


def synthetic_population(*, n_pages: int, n_hosts: int, days: float, rng) -> tuple:
    """(changes, windows, hosts) of ``n_pages`` pages on ``n_hosts`` hosts: Pareto(1.2) host
    sizes (every host at least one page), log-normal rates (median 0.3/day, σ 1.2),
    Poisson change times in (0, days]."""
    rng = np.random.default_rng(rng)
    weight = rng.pareto(1.2, size=n_hosts) + 1.0
    extra = rng.multinomial(n_pages - n_hosts, weight / weight.sum())
    host = np.repeat(np.arange(n_hosts), extra + 1)
    rate = np.exp(np.log(0.3) + 1.2 * rng.standard_normal(n_pages))
    counts = rng.poisson(rate * days)
    page = np.repeat(np.arange(n_pages), counts)
    times = rng.uniform(0.0, days, size=page.size)
    order = np.lexsort((times, page))
    names = np.array([f"s{i}" for i in range(n_pages)], dtype=object)
    changes = pd.DataFrame({"page": names[page[order]], "timestamp": times[order]})
    win = pd.DataFrame({"page": names, "start": 0.0, "end": float(days)})
    hosts = pd.Series([f"h{h}" for h in host], index=names)
    return changes, win, hosts


def host_spend(changes, win, hosts: pd.Series, budget: float) -> tuple[pd.Series, pd.Series]:
    """Per host: the spend of the optimal static rates of the true rates at ``budget``, and
    its pages' round-robin share B·n_h/N (crawls per day)."""
    pages = pages_from_table(changes, window=win)
    rates = optimal_crawl_rates(pages.true_rates, pages.weights, budget)
    host = hosts.reindex(list(pages.names)).to_numpy()
    spend = pd.Series(rates).groupby(host).sum()
    share = pd.Series(np.full(pages.n_pages, budget / pages.n_pages)).groupby(host).sum()
    return spend, share


def spend_caps(changes, win, hosts: pd.Series, budget: float, fraction: float) -> dict:
    """Cap of every host: ``fraction`` × max(its spend under the optimal static rates of the
    true rates at ``budget``, its pages' round-robin share)."""
    spend, share = host_spend(changes, win, hosts, budget)
    return {h: float(fraction * max(spend[h], share[h])) for h in spend.index}


def one_cap(changes, win, hosts: pd.Series, budget: float) -> float:
    """One cap for every host: the :data:`ONE_CAP_QUANTILE` quantile of the hosts' spend
    under the optimal static rates at ``budget``."""
    spend, _ = host_spend(changes, win, hosts, budget)
    return float(np.quantile(spend.to_numpy(), ONE_CAP_QUANTILE))


def replay_with_caps(changes, win, hosts, *, budget, step, epoch, seed) -> tuple[list[dict], dict]:
    """Rows (policy, caps, freshness, crawls/day) without caps and at each fraction, and
    the caps' settings."""
    rows, info = [], {}
    settings = [("none", None)] + [(f"{f:g}", f) for f in FRACTIONS] + [("one", "one")]
    for label, frac in settings:
        if frac is None:
            caps = None
        elif frac == "one":
            c = one_cap(changes, win, hosts, budget)
            caps = dict.fromkeys(hosts.unique().tolist(), c)
        else:
            caps = spend_caps(changes, win, hosts, budget, float(frac))
        df = replay_policies(
            changes,
            window=win,
            budget=budget,
            policies=list(POLICIES),
            step=step,
            epoch=epoch,
            match_schedules=False,
            rng=seed,
            hosts=hosts if caps else None,
            host_budgets=caps,
        )
        if caps:
            info[label] = {"total_caps": float(sum(caps.values())), "n_hosts": len(caps), "max_cap": max(caps.values())}
        for r in df.to_dict("records"):
            rows.append(
                {
                    "policy": r["policy"],
                    "caps": label,
                    "freshness_weighted": float(r["freshness_weighted"]),
                    "crawls_per_day": float(r["crawls_per_day"]),
                }
            )
    return rows, info


def run(preset, *, changes, win, rate: float, seed: int, progress) -> dict:
    """The host-caps section's results (OTA documents and the synthetic population)."""
    sz = sizes(preset)
    ota_rows, ota_info = replay_with_caps(
        changes, win, ota_hosts(win), budget=rate, step="6h", epoch="7D", seed=seed + 2
    )
    progress("documents replayed with host caps")
    schanges, swin, shosts = synthetic_population(
        n_pages=sz["synth_pages"], n_hosts=sz["synth_hosts"], days=sz["synth_days"], rng=seed + 3
    )
    srate = len(schanges) / sz["synth_days"]
    syn_rows, syn_info = replay_with_caps(
        schanges, swin, shosts, budget=srate, step=sz["synth_step"], epoch="1D", seed=seed + 4
    )
    progress("synthetic population replayed with host caps")
    return {
        "settings": {
            "fractions": list(FRACTIONS),
            "policies": list(POLICIES),
            "ota_budget": rate,
            "ota_hosts": int(ota_hosts(win).nunique()),
            "ota_caps": ota_info,
            "synth_pages": sz["synth_pages"],
            "synth_hosts": sz["synth_hosts"],
            "synth_days": sz["synth_days"],
            "synth_step": sz["synth_step"],
            "synth_budget": srate,
            "synth_caps": syn_info,
        },
        "ota": ota_rows,
        "synthetic": syn_rows,
    }


def _table(rows):
    out = {}
    for r in rows:
        rec = out.setdefault(r["policy"], {"policy": r["policy"]})
        rec[f"f_{r['caps']}"] = r["freshness_weighted"]
        rec[f"c_{r['caps']}"] = r["crawls_per_day"]
    return list(out.values())


def render(res: dict) -> list[str]:
    """HTML parts of the section."""
    st = res["settings"]
    cols = [("policy", "policy"), ("f_none", "freshness, no caps"), ("c_none", "crawls/day")]
    for f in st["fractions"]:
        cols += [(f"f_{f:g}", f"freshness, caps {f:g}×"), (f"c_{f:g}", "crawls/day")]
    cols += [("f_one", "freshness, one cap"), ("c_one", "crawls/day")]
    parts = [
        "<h3>Per-host politeness caps</h3>",
        "<p>A crawler fetches a host at most c_h times a day through a queue per host (Nutch: "
        "fetcher.server.delay 5 s, at most 17,280 fetches a day; StormCrawler 1 s). Here every policy's crawls "
        "go through such queues (first in first out, a token bucket per host of c_h·dt a step, capacity "
        "max(1, ⌈c_h·dt⌉)); a crawl over the cap waits for the next steps with room, and a budgeted policy is "
        "charged when it orders it. Caps where they bind: each host gets a fraction (1/2, 1/4) of what the "
        "hindsight-optimal static rates spend on it at the budget (at least that fraction of its round-robin "
        "share); and one cap for every host, as a crawler's one politeness delay: the 90th percentile of the "
        "hosts' spend under those rates, binding on the busiest hosts only. oracle and the plug-in policies take the capped optimum; the index policies weight a host's "
        "pages by λ/(λ + η_h), the multipliers of the capped optimum of their current rates; round robin, the "
        "crawlers' schedules and the clairvoyant reference are only held back by the queues.</p>",
        html_table(
            _table(res["ota"]),
            cols,
            caption=f"Open Terms Archive documents, host = service ({st['ota_hosts']} hosts), budget "
            f"{st['ota_budget']:.3g}/day (1× the total change rate), 6-hour steps: weighted freshness and crawls "
            f"per day fetched, without and with caps (one cap: {st['ota_caps']['one']['max_cap']:.3g}/day)",
        ),
        html_table(
            _table(res["synthetic"]),
            cols,
            caption=f"Synthetic population: {st['synth_pages']} pages on {st['synth_hosts']} hosts (Pareto 1.2 "
            f"sizes), log-normal change rates, {st['synth_days']:g} days, {st['synth_step']} steps, budget "
            f"{st['synth_budget']:.3g}/day (1× the total change rate; one cap: "
            f"{st['synth_caps']['one']['max_cap']:.3g}/day)",
        ),
    ]
    return parts
