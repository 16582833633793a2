"""Benchmark: optimal crawl rates under per-host politeness caps against the uncapped solver.

Run: ``python benchmarks/bench_host_caps.py [--pages 1000000] [--hosts 10000]
[--delay 5] [--crawls-per-page 1.0] [--objective binary_freshness] [--seed 0] [--repeats 3]``.
The stated size is ``--pages 10000000 --hosts 100000`` (10^7 pages on 10^5 hosts;
about 1 GB of peak memory and half a minute in all); the default is 10^6 pages on
10^4 hosts, for a quick run.

*Data.* Host sizes follow Zipf's law: each host draws a size from numpy's ``zipf`` with
a = 2, truncated at (number of hosts)/100, and every page is assigned to a host with
probability proportional to that size (integer host labels). Change rates are lognormal
(median 0.2 changes per day, σ = 1.5), weights lognormal (σ = 1). The budget is
``--crawls-per-page`` crawls per page per day; every host is capped at Nutch's default
politeness, one fetch per ``fetcher.server.delay`` = 5 s, i.e. 86,400/5 = 17,280
fetches per day, scaled by pages/10^7 so that the share of hosts at their cap stays
roughly the same at smaller sizes (the script prints that share, of hosts and pages).

*Timing.* Both solvers are first called on a small problem (numba kernels compiled or
loaded from cache), then each is timed ``--repeats`` times, alternately, and the
minimum of each kept (``time.perf_counter``), on the same arrays in the same process:
``optimal_crawl_rates(Δ, w, B)`` and ``capped_crawl_rates(Δ, w, B, hosts=...,
host_budgets=...)`` (which includes factorising the host labels and the
uncapped solve it starts from). The goal is capped/uncapped <= 3. Peak memory is the
``tracemalloc`` peak during one more, untimed call of each (numpy reports its buffers
to tracemalloc). The
number of rounds of the growing set of hosts at cap is counted in a separate, untimed
call.

*The crawl allocation.* Then ``allocate_crawls`` (the commands' allocation, default policy
and budget: the freshness index) on ``bench_allocate``'s page table of ``--allocate-pages``
pages (10^6) on ``--allocate-hosts`` Zipf-sized hosts (10^5, as above, integer labels),
every host capped at the same scaled Nutch politeness, against ``allocate_crawls``
without caps on the same table: both timed ``--repeats`` times, alternately, the minimum
of each kept (information: the caps' share of the allocation's time).
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from changerate_bayes.crawllog import allocate_crawls
from changerate_bayes.scheduling import _host_caps, capped_crawl_rates, optimal_crawl_rates

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _result import load_note, result  # noqa: E402
from bench_allocate import page_table  # noqa: E402

GOAL_RATIO = 3.0
NUTCH_CAP = 86_400 / 5.0  # fetches per day per host at fetcher.server.delay = 5 s
ZIPF_A = 2.0  # host sizes ~ zipf(a) (weights), truncated at hosts/100


def make_problem(pages: int, hosts: int, crawls_per_page: float, delay: float, seed: int):
    rng = np.random.default_rng(seed)
    size = np.minimum(rng.zipf(ZIPF_A, size=hosts), max(1, hosts // 100)).astype(np.float64)
    host_of = rng.choice(hosts, size=pages, p=size / size.sum())
    delta = rng.lognormal(np.log(0.2), 1.5, size=pages)
    w = rng.lognormal(0.0, 1.0, size=pages)
    budget = crawls_per_page * pages
    cap = 86_400 / delay * pages / 1e7
    return delta, w, host_of, budget, cap


def timed(fun):
    t0 = time.perf_counter()
    out = fun()
    return out, time.perf_counter() - t0


def peak_memory(fun) -> int:
    tracemalloc.start()
    fun()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def count_rounds(delta, w, host_of, budget, cap, objective):
    calls = []
    original = _host_caps.solve_capped

    def counting(d, ww, codes, caps, b, obj, uncapped, fallback):
        def wrapped(*args):
            calls.append(args[2])
            return uncapped(*args)

        return original(d, ww, codes, caps, b, obj, wrapped, fallback)

    import changerate_bayes.scheduling._optimal_rates as opt

    opt.solve_capped = counting
    try:
        capped_crawl_rates(delta, w, budget, objective=objective, hosts=host_of, host_budgets=cap)
    finally:
        opt.solve_capped = original
    return len(calls)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--delay", type=float, default=5.0, help="seconds between fetches from one host")
    parser.add_argument("--crawls-per-page", type=float, default=1.0, help="budget, crawls per page per day")
    parser.add_argument("--objective", default="binary_freshness", choices=("binary_freshness", "harmonic_staleness"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3, help="timed calls of each solver (minimum kept)")
    parser.add_argument("--allocate-pages", type=int, default=1_000_000, help="pages of the allocate_crawls timing")
    parser.add_argument("--allocate-hosts", type=int, default=100_000, help="hosts of the allocate_crawls timing")
    args = parser.parse_args(argv)

    delta, w, host_of, budget, cap = make_problem(args.pages, args.hosts, args.crawls_per_page, args.delay, args.seed)
    print(
        f"{args.pages:,} pages on {args.hosts:,} hosts ({np.unique(host_of).size:,} with pages), "
        f"largest host {np.bincount(host_of).max():,} pages; budget {budget:,.0f}/day, "
        f"cap {cap:,.1f}/day per host ({args.delay:g} s delay, scaled by pages/10^7); {args.objective}"
    )
    warm = make_problem(2000, 20, args.crawls_per_page, args.delay, args.seed + 1)
    optimal_crawl_rates(warm[0], warm[1], warm[3], objective=args.objective)
    for objective in ("binary_freshness", "harmonic_staleness"):  # load every kernel the run uses
        capped_crawl_rates(warm[0], warm[1], warm[3], objective=objective, hosts=warm[2], host_budgets=warm[3] / 40)

    plain = lambda: optimal_crawl_rates(delta, w, budget, objective=args.objective)  # noqa: E731
    capped = lambda: capped_crawl_rates(
        delta,
        w,
        budget,
        objective=args.objective,  # noqa: E731
        hosts=host_of,
        host_budgets=cap,
    )
    t_plain = t_caps = np.inf
    for _ in range(args.repeats):  # alternated, the minimum of each: the machine may be shared
        t_plain = min(t_plain, timed(plain)[1])
        res, t = timed(capped)
        t_caps = min(t_caps, t)
    m_plain, m_caps = peak_memory(plain), peak_memory(capped)
    rounds = count_rounds(delta, w, host_of, budget, cap, args.objective)
    spend = np.bincount(np.searchsorted(res.hosts, host_of), weights=res.rates)
    hosts_at_cap = res.at_cap.mean()
    pages_at_cap = res.at_cap[np.searchsorted(res.hosts, host_of)].mean()
    ratio = t_caps / t_plain
    print(
        f"hosts at cap: {res.at_cap.sum():,} of {res.hosts.size:,} ({100 * hosts_at_cap:.2f}%), "
        f"holding {100 * pages_at_cap:.1f}% of the pages; uncapped solves: {rounds}"
    )
    print(
        f"Σp/B - 1 = {res.rates.sum() / budget - 1:.1e}; max over hosts of spend/cap - 1 = "
        f"{(spend / cap).max() - 1:.1e}; price λ = {res.price:.4g}, max η = {res.host_prices.max():.4g}"
    )
    print(f"uncapped optimal_crawl_rates: {t_plain:.2f} s, peak {m_plain / 2**20:,.0f} MiB")
    print(
        f"capped_crawl_rates:           {t_caps:.2f} s, peak {m_caps / 2**20:,.0f} MiB  "
        f"(ratio {ratio:.2f}; {load_note()})"
    )
    size = f"{args.pages:.0e} pages / {args.hosts:.0e} hosts"
    result(
        f"host caps, {size}: capped/uncapped time <= {GOAL_RATIO:g}",
        f"{ratio:.2f}x",
        ratio <= GOAL_RATIO,
        value=ratio,
        note=f"{t_caps:.2f} s vs {t_plain:.2f} s; {load_note()}",
    )
    result(
        f"host caps, {size}: peak memory",
        f"{m_caps / 2**20:,.0f} MiB",
        None,
        value=m_caps / 2**20,
        unit="MiB",
        note=f"uncapped {m_plain / 2**20:,.0f} MiB",
    )
    result(
        f"host caps, {size}: share of hosts / pages at cap",
        f"{100 * hosts_at_cap:.2f}% / {100 * pages_at_cap:.1f}%",
        None,
    )
    allocate_with_caps(args)
    return 0


def allocate_with_caps(args) -> None:
    """``allocate_crawls`` with and without host caps on one page table, in this process."""
    pages, hosts = args.allocate_pages, args.allocate_hosts
    table = page_table(pages, seed=args.seed)
    host_of = make_problem(pages, hosts, args.crawls_per_page, args.delay, args.seed)[2]
    cap = 86_400 / args.delay * pages / 1e7
    warm = page_table(2000, seed=args.seed + 1)
    allocate_crawls(warm, hosts=np.arange(2000) % 20, host_budgets=10.0)  # load the kernels
    plain = lambda: allocate_crawls(table)  # noqa: E731
    capped = lambda: allocate_crawls(table, hosts=host_of, host_budgets=cap)  # noqa: E731
    t_plain = t_caps = np.inf
    for _ in range(args.repeats):  # alternated, the minimum of each
        t_plain = min(t_plain, timed(plain)[1])
        out, t = timed(capped)
        t_caps = min(t_caps, t)
    spend = out.groupby("host")["crawls_per_day"].sum().to_numpy()
    ratio = t_caps / t_plain
    size = f"{pages:.0e} pages / {hosts:.0e} hosts"
    print(
        f"allocate_crawls ({out.attrs['policy']}, budget {out.attrs['budget_per_day']:,.0f}/day, cap {cap:,.1f}/day "
        f"per host), {size}: {out.attrs['n_hosts_at_cap']:,} hosts at cap holding "
        f"{100 * out['host_at_cap'].mean():.1f}% of the pages; max spend/cap - 1 = {(spend / cap).max() - 1:.1e}, "
        f"Σ/B - 1 = {out['crawls_per_day'].sum() / out.attrs['budget_per_day'] - 1:.1e}"
    )
    print(f"allocate_crawls with caps {t_caps:.2f} s, without {t_plain:.2f} s (ratio {ratio:.2f}; {load_note()})")
    result(
        f"allocate_crawls with host caps / without, {size} (information)",
        f"{ratio:.2f}x",
        None,
        value=ratio,
        note=f"{t_caps:.2f} s vs {t_plain:.2f} s; {load_note()}",
    )


if __name__ == "__main__":
    raise SystemExit(main())
