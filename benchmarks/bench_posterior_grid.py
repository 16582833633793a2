"""Benchmark: posteriors for a million pages (grid and conjugate), and grid vs NUTS agreement.

Run: ``python benchmarks/bench_posterior_grid.py [--pages 1000000] [--crawls 20]
[--draws 100] [--check 5] [--skip-nuts] [--methods grid conjugate]`` (``--methods
conjugate --skip-nuts``: the conjugate goals only).

Goals (10^6 pages × 20 Poisson crawls, 100 draws per page):

* ``posterior(method="grid")`` in ≤ 10 s and ≤ 1 GB peak memory;
* ``posterior(method="conjugate")`` in ≤ 2 s and ≤ 1 GB peak memory.

Each method runs in its own child process (``python bench_posterior_grid.py --child
METHOD``) that simulates the history, compiles the kernels on a small history (or
loads them from numba's on-disk cache), then times one ``posterior`` call on the full
history (time.perf_counter). Memory is read in the child with
/proc/self/status: VmRSS at the start of the call (interpreter, libraries and the
simulated history) and VmHWM, the peak resident set size, reset just before the call
(``/proc/self/clear_refs``), so the table shows what the call added (the goal; the
draws alone are 8 × 10^8 bytes = 0.8 GB) and the whole process's peak during it.
For the conjugate method the child then times NumPy's gamma sampler alone on the
same number of variates and threads: the floor of the NumPy sampler the method used
before its compiled kernel (the kernel must beat it to meet the goal).

Then, on ``--check`` pages, the posterior means of ``method="grid"`` (4000 i.i.d.
draws) and ``method="nuts"`` (nutpie, 4 × 1000 draws) with their Monte Carlo SEs, the
z-score of each difference, and the time per page of each method.

Prints one ``RESULT {json}`` line per goal (see ``benchmarks/run_all.py``).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from changerate_bayes import BetaPrimePrior, CrawlHistory, GammaPrior, posterior, simulate_history
from changerate_bayes.bayes import _conjugate

GOALS = {"grid": (10.0, 1.0), "conjugate": (2.0, 1.0)}  # seconds, GB


def _history(pages, crawls, seed=2024):
    gen = np.random.default_rng(seed)
    prior = GammaPrior(2.0, 1.0)
    rates = prior.sample(pages, rng=gen)
    return prior, rates, simulate_history(rates, 1.0, crawls, n_pages=pages, rng=gen)


def _prior_for(method, prior):
    return BetaPrimePrior(1.0, 2.0) if method == "conjugate" else prior


def _status_kb(field):
    """A field of /proc/self/status in bytes (VmRSS: resident now; VmHWM: its peak), or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_peak():
    """Reset the kernel's peak-RSS counter (VmHWM) of this process; False if impossible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _gamma_floor(method, pages, draws):
    """Seconds NumPy takes for the 2 × pages × draws gamma variates alone, on the same threads."""
    block, threads = _conjugate.BLOCK_PAGES, _conjugate.THREADS
    shapes = np.random.default_rng(0).uniform(1.0, 22.0, block)
    n_blocks = -(-pages // block)
    buf = [np.empty((draws, block)) for _ in range(threads)]

    def fill(j):
        gen = np.random.default_rng(j)
        out = buf[j % threads]
        gen.standard_gamma(shapes, size=out.shape, out=out)
        gen.standard_gamma(shapes, size=out.shape, out=out)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(fill, range(n_blocks)))
    return time.perf_counter() - t0


def child(method, pages, crawls, draws):
    """Time one posterior call in this process and report its memory (JSON on stdout).

    Memory: the resident set size at the start of the call (VmRSS: interpreter,
    libraries, the history) and its peak during the call (VmHWM, reset just before the
    call), so the peak is the whole process's and the difference is what the call added.
    """
    prior, _, history = _history(pages, crawls)
    small = _history(200, crawls, seed=1)[2]
    posterior(small, prior=_prior_for(method, prior), method=method, draws=draws, chains=1, rng=0)  # compile / load
    gc.collect()
    exact = _reset_peak() and _status_kb("VmHWM") is not None
    before = _status_kb("VmRSS") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    t0 = time.perf_counter()
    idata = posterior(history, prior=_prior_for(method, prior), method=method, draws=draws, chains=1, rng=1)
    dt = time.perf_counter() - t0
    peak = _status_kb("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    shape = idata.posterior["change_rate"].shape
    del idata
    gc.collect()
    floor = _gamma_floor(method, pages, draws) if method == "conjugate" else None
    print(
        json.dumps(
            {
                "seconds": dt,
                "peak_bytes": peak,
                "before_bytes": before,
                "shape": list(shape),
                "changed": float(history.flat_changed.mean()),
                "exact_peak": exact,
                "floor": floor,
            }
        )
    )


def run_child(method, args):
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        method,
        "--pages",
        str(args.pages),
        "--crawls",
        str(args.crawls),
        "--draws",
        str(args.draws),
    ]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def result(goal, measured, meets, **extra):
    print(
        "RESULT " + json.dumps({"goal": goal, "measured": measured, "meets": meets, **extra}, ensure_ascii=False),
        flush=True,
    )


def _load():
    try:
        return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    except OSError:
        return f"{os.cpu_count()} cores"


def speed(args):
    size = f"{args.pages:,} pages × {args.crawls} crawls, {args.draws} draws per page"
    draws_gb = 8 * args.pages * args.draws / 1e9
    for method in args.methods:
        note_before = _load()
        r = run_child(method, args)
        secs, gb = r["seconds"], r["peak_bytes"] / 1e9
        start = r["before_bytes"] / 1e9
        added = gb - start
        how = "peak RSS during the call (VmHWM)" if r["exact_peak"] else "peak RSS of the process (ru_maxrss)"
        max_s, max_gb = GOALS[method]
        print(
            f"posterior(method={method!r}), {size}: {secs:.2f} s (goal ≤ {max_s:g} s); {how} {gb:.2f} GB, "
            f"of which {start:.2f} GB resident at the call's start (libraries + history) and {added:.2f} GB "
            f"added by the call (its draws alone: {draws_gb:.2f} GB); draws {tuple(r['shape'])}; {note_before}"
        )
        note = f"{note_before}; {start:.2f} GB resident at the call's start"
        if r["floor"] is not None:
            print(
                f"  NumPy's gamma sampler alone, 2 × {args.pages * args.draws:.0e} variates on the same threads: "
                f"{r['floor']:.2f} s (the floor of a NumPy sampler; ratio to the call {r['floor'] / secs:.2f})"
            )
            note += f"; NumPy's gamma variates alone take {r['floor']:.2f} s"
            result(
                f'posterior(method="{method}"): NumPy\'s 2 × {args.pages * args.draws:.0e} gamma variates alone '
                "(the floor of a NumPy sampler)",
                f"{r['floor']:.2f} s",
                None,
                value=r["floor"],
                unit="s",
            )
        result(
            f'posterior(method="{method}"), {size}: ≤ {max_s:g} s',
            f"{secs:.2f} s",
            secs <= max_s,
            value=secs,
            unit="s",
            note=note,
        )
        result(
            f'posterior(method="{method}"), {size}: ≤ {max_gb:g} GB added by the call (its draws '
            f"{draws_gb:.2f} GB included)",
            f"{added:.2f} GB",
            added <= max_gb,
            value=added,
            unit="GB",
            note=note,
        )
        result(
            f'posterior(method="{method}"), {size}: peak of the whole process during the call '
            f"(libraries and history included)",
            f"{gb:.2f} GB",
            None,
            value=gb,
            unit="GB",
            note=note,
        )


def agreement(args):
    import arviz as az  # ArviZ: heavy, loaded on first use

    prior, rates, history = _history(20_000, args.crawls)
    gen = np.random.default_rng(7)
    pick = np.sort(gen.choice(history.n_pages, args.check, replace=False))
    changed, tau, _ = history.padded()
    sub = CrawlHistory(changed[pick], tau[pick], history.crawl_rate)
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
        print(
            f"{page:7d} {rates[page]:8.4f} {g_mean[i]:9.4f} ± {g_mcse[i]:.4f} {n_mean[i]:9.4f} ± {n_mcse[i]:.4f} "
            f"{z[i]:6.2f}"
        )
    zmax = float(np.abs(z).max())
    print(f"max |z| = {zmax:.2f} (agreement: every |z| < 3)")
    print(
        f"\ntime per page: grid {t_grid / args.check * 1e3:.2f} ms (4000 draws), "
        f"NUTS {t_nuts / args.check * 1e3:.1f} ms (4 × 1000 draws, {args.check} pages in one model; "
        f"compilation {t_compile:.1f} s once); ratio NUTS/grid = {t_nuts / t_grid:.0f}"
    )
    result(f"grid vs NUTS posterior means on {args.check} pages: max |z| < 3", f"{zmax:.2f}", zmax < 3, value=zmax)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--crawls", type=int, default=20)
    parser.add_argument("--draws", type=int, default=100, help="draws per page on the large history")
    parser.add_argument("--check", type=int, default=5, help="pages compared with NUTS")
    parser.add_argument("--skip-nuts", action="store_true", help="only the speed and memory goals")
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=("grid", "conjugate"),
        default=["grid", "conjugate"],
        help="the methods whose speed and memory goals are measured",
    )
    parser.add_argument("--child", choices=sorted(GOALS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.pages, args.crawls, args.draws)
        return
    speed(args)
    if not args.skip_nuts:
        agreement(args)


if __name__ == "__main__":
    main()
