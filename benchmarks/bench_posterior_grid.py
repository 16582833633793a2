"""Benchmark: the exact grid posterior on 10^5 pages × 100 crawls, and its agreement with NUTS.

Run: ``python benchmarks/bench_posterior_grid.py [--pages 100000] [--crawls 100]
[--draws 100] [--check 5]``.

Prints the wall time of ``posterior(history, method="grid")`` on the whole history
(time.perf_counter, one run), then, on ``--check`` of its pages, the posterior means of
``method="grid"`` (4000 i.i.d. draws) and ``method="nuts"`` (nutpie, 4 × 1000 draws)
with their Monte Carlo SEs (grid: sd/√n; NUTS: ArviZ ``mcse``), the z-score of each
difference, and the time per page of each method (NUTS: sampling only, after compilation).
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz as az
import numpy as np

from changerate_bayes import CrawlHistory, GammaPrior, posterior, simulate_history

from _result import result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--crawls", type=int, default=100)
    parser.add_argument("--draws", type=int, default=100, help="grid draws per page on the large history")
    parser.add_argument("--check", type=int, default=5, help="pages compared with NUTS")
    args = parser.parse_args(argv)
    gen = np.random.default_rng(2024)
    prior = GammaPrior(2.0, 1.0)
    rates = prior.sample(args.pages, rng=gen)
    history = simulate_history(rates, 1.0, args.crawls, n_pages=args.pages, rng=gen)
    print(f"# {args.pages:,} pages × {args.crawls} Poisson crawls (p = 1), Δ ~ Gamma(2, 1); "
          f"{history.changed.mean():.1%} of crawls saw a change")

    t0 = time.perf_counter()
    idata = posterior(history, prior=prior, method="grid", draws=args.draws, chains=1, rng=1)
    dt = time.perf_counter() - t0
    print(f"grid posterior, {args.draws} draws per page: {dt:.2f} s "
          f"({args.pages / dt:,.0f} pages/s; {idata.posterior['change_rate'].shape} draws)")

    pick = np.sort(gen.choice(args.pages, args.check, replace=False))
    sub = CrawlHistory(history.changed[pick], history.intervals[pick], history.crawl_rate)
    t0 = time.perf_counter()
    grid = posterior(sub, prior=prior, method="grid", draws=1000, chains=4, rng=2)
    t_grid = time.perf_counter() - t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        posterior(sub, prior=prior, method="nuts", draws=10, tune=10, chains=2, rng=3)  # compile
        t_compile = time.perf_counter() - t0
        t0 = time.perf_counter()
        nuts = posterior(sub, prior=prior, method="nuts", draws=1000, tune=1000, chains=4, rng=3)
        t_nuts = time.perf_counter() - t0
    g = grid.posterior["change_rate"].values.reshape(-1, args.check)
    n_mean = nuts.posterior["change_rate"].mean(("chain", "draw")).values
    n_mcse = az.mcse(nuts, var_names=["change_rate"], method="mean")["change_rate"].values
    g_mean, g_mcse = g.mean(axis=0), g.std(axis=0, ddof=1) / np.sqrt(g.shape[0])
    z = (n_mean - g_mean) / np.sqrt(n_mcse**2 + g_mcse**2)
    print(f"\n# agreement on {args.check} pages: posterior mean of Δ (± Monte Carlo SE)")
    print(f"{'page':>7} {'true Δ':>8} {'grid':>18} {'NUTS':>18} {'z':>6}")
    for i, page in enumerate(pick):
        print(f"{page:7d} {rates[page]:8.4f} {g_mean[i]:9.4f} ± {g_mcse[i]:.4f} {n_mean[i]:9.4f} ± {n_mcse[i]:.4f} "
              f"{z[i]:6.2f}")
    print(f"max |z| = {np.abs(z).max():.2f} (agreement: every |z| < 3)")
    result(f"grid posterior, {args.pages:,} pages × {args.crawls} crawls, {args.draws} draws per page "
           f"(for information)", f"{dt:.1f} s", None, value=dt, unit="s")
    result(f"grid agrees with NUTS on {args.check} pages: every |mean difference| / MCSE < 3",
           f"max {np.abs(z).max():.2f}", bool(np.abs(z).max() < 3), value=float(np.abs(z).max()))
    print(f"\ntime per page: grid {t_grid / args.check * 1e3:.2f} ms (4000 draws), "
          f"NUTS {t_nuts / args.check * 1e3:.1f} ms (4 × 1000 draws, {args.check} pages in one model; "
          f"compilation {t_compile:.1f} s once); ratio NUTS/grid = {t_nuts / t_grid:.0f}")


if __name__ == "__main__":
    main()
