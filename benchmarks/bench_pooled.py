"""Benchmark: pooled posterior, ``method="marginal"`` against ``method="joint"``.

Run: ``python benchmarks/bench_pooled.py [--pages 1000] [--crawls 1 2 5] [--draws 1000]``.

For each k: simulate ``--pages`` pages with log-normal rates (median 0.5/h, sd 1 on the
log scale) crawled k times at Poisson times (p = 1/h), fit both methods (2 chains,
``--draws`` draws after as many warm-up draws, nutpie, compiled before timing), and print
the wall time of each fit (time.perf_counter, one run, including the diagnostics), the
smallest bulk ESS and largest R-hat of the two hyperparameters (ArviZ), the ratio of
hyperparameter ESS per second (marginal / joint) and the posterior means of the
population sd s with their MCSE.
"""

from __future__ import annotations

import argparse
import time
import warnings

import arviz as az
import numpy as np
from _result import result

from changerate_bayes import pooled_posterior, simulate_history

HYPER = ["population_log_median", "population_sigma"]


def _fit(history, method, draws, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = time.perf_counter()
        idata = pooled_posterior(history, method=method, draws=draws, tune=draws, chains=2, rng=seed)
        elapsed = time.perf_counter() - t
    summ = az.summary(idata, var_names=HYPER, kind="all")
    return {
        "time": elapsed,
        "ess": float(summ["ess_bulk"].min()),
        "rhat": float(summ["r_hat"].max()),
        "s_mean": float(summ.loc["population_sigma", "mean"]),
        "s_mcse": float(summ.loc["population_sigma", "mcse_mean"]),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--crawls", type=int, nargs="+", default=[1, 2, 5])
    parser.add_argument("--draws", type=int, default=1000)
    args = parser.parse_args(argv)
    gen = np.random.default_rng(0)
    rates = np.exp(gen.normal(np.log(0.5), 1.0, args.pages))
    history = simulate_history(rates, 1.0, max(args.crawls), n_pages=args.pages, rng=gen)
    for method in ("marginal", "joint"):  # compile each model once, outside the timings
        _fit(history.head(1), method, 20, 0)
    print(f"{args.pages} pages, 2 chains x {args.draws} draws (+ {args.draws} warm-up)")
    print(f"{'k':>3} {'method':>9} {'time s':>8} {'min ESS':>8} {'max R-hat':>9} {'s mean':>8} {'MCSE':>6}")
    for k in args.crawls:
        res = {m: _fit(history.head(k), m, args.draws, 1) for m in ("marginal", "joint")}
        for m, r in res.items():
            print(
                f"{k:>3} {m:>9} {r['time']:>8.1f} {r['ess']:>8.0f} {r['rhat']:>9.3f} {r['s_mean']:>8.3f} "
                f"{r['s_mcse']:>6.3f}"
            )
        ratio = (res["marginal"]["ess"] / res["marginal"]["time"]) / (res["joint"]["ess"] / res["joint"]["time"])
        print(f"    hyperparameter ESS per second, marginal / joint: {ratio:.1f}")
        result(
            f"pooled posterior, {args.pages} pages, k = {k}: hyperparameter ESS/s, marginal / joint (for information)",
            f"{ratio:.1f}x",
            None,
            value=ratio,
            unit="x",
        )


if __name__ == "__main__":
    main()
