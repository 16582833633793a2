"""Benchmark: optimal_crawl_rates against the public LambdaCrawl code, on 10^7 pages, and
against scipy.optimize on a small N.

Run: ``python benchmarks/bench_optimal_rates.py [--peer-pages 1000000] [--pages 10000000]
[--small 300] [--peer-file LambdaCrawlExps.py]``.

*Against LambdaCrawl* (goal: >= 50x at 10^6 pages with the same answer to 1e-9). The
peer is the binary-freshness solver of Kolobov et al.'s public code
(``LambdaCrawlBinary_Epsilon_Helper`` with epsilon = 0, i.e. Azar et al.'s algorithm):
pure Python, one list of (w Δ/Δ², page) pairs sorted with ``list.sort``, then one loop
over the pages that drops a page while its value ratio is below (r/(B + s))² and
gives the rest √(wΔ)(B + s)/r − Δ. By default the benchmark times ``_peer_binary`` below,
a restatement of those same steps (same data structures, same per-page Python work);
``--peer-file`` times the original function from a local copy of the public
``LambdaCrawlExps.py`` instead. The harmonic objective is compared with the peer's
``LambdaCrawl_IncomplObs`` restated the same way (``peer_incomplete`` in
``_lambdacrawl.py``: bisection over λ, Python loop per evaluation; its absolute
tolerance on λ set to 1e-12 times the lower end of its own bracket, so that the answers
can agree to 1e-9), at 10^5 pages since it costs minutes at 10^6. Both solvers get the same arrays; the times are the
minimum of ``--repeats`` runs for ours and one run for the peer, in the same process;
ours is timed after a first call (which compiles or loads the numba kernel).

The answers are compared as max |p − p_peer| / B and as the relative difference of the
objective values.

The other sections print wall times (time.perf_counter, one run each, same process) and,
on the small problem, the speed ratio and the objective ratio against SLSQP from
scipy.optimize (freshness is maximised, harmonic staleness minimised). A last section
times extreme magnitudes (Δ, w, B across 1e-100..1e100; a budget 1e-12 of the smallest Δ)
against the same problem at ordinary magnitudes, and prints |Σp/B - 1|.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
import time
from operator import itemgetter
from pathlib import Path

import numpy as np

from changerate_bayes.scheduling import crawl_objective, optimal_crawl_rates
from changerate_bayes.scheduling._optimal_rates import _binary_freshness_rows
from changerate_bayes.validation.scheduling_rates import reference_crawl_rates

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _lambdacrawl import peer_incomplete  # noqa: E402
from _result import load_note, result  # noqa: E402
from _timing import best_of  # noqa: E402

GOAL_RATIO = 50.0
GOAL_AGREEMENT = 1e-9


def _peer_binary(importances, ch_rates, bandwidth):
    """Azar et al.'s binary-freshness allocation, step for step as the public LambdaCrawl code.

    Same structures as the peer's ``LambdaCrawlBinary_Epsilon_Helper`` at epsilon = 0: a
    Python list of (value ratio w Δ/Δ², index) pairs sorted by ``list.sort``; Σ √(wΔ)
    accumulated in a Python loop, Σ Δ by numpy; one Python pass over the sorted pages.
    """
    n = importances.shape[0]
    rates = np.zeros(n)
    pairs = []
    for i in range(n):
        pairs.append((importances[i] * ch_rates[i] / ch_rates[i] ** 2, i))
    r = 0.0
    for i in range(n):
        r += math.sqrt(importances[i] * ch_rates[i])
    s = sum(ch_rates)
    pairs.sort(key=itemgetter(0))
    rem = bandwidth
    for _ratio, i in pairs:
        if importances[i] * ch_rates[i] / ch_rates[i] ** 2 <= (r / (rem + s)) ** 2:
            r -= math.sqrt(importances[i] * ch_rates[i])
            s -= ch_rates[i]
            rates[i] = 0.0
        else:
            rates[i] = math.sqrt(importances[i] * ch_rates[i]) * (rem + s) / r - ch_rates[i]
    return rates


def _load_peer(path):
    spec = importlib.util.spec_from_file_location("lambdacrawl_peer", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def binary(w, delta, budget):
        rates, _ = mod.LambdaCrawlBinary_Epsilon(w, delta, 0.0, [], [], budget)
        return rates

    return binary, lambda w, delta, budget, eps: mod.LambdaCrawl_IncomplObs(w, delta, budget, eps)


def compare_with_peer(n, objective, *, peer, repeats, gen):
    """Time ours and the peer's on one problem; returns (t_ours, t_peer, max |Δp|/B, objective rel. diff)."""
    delta = gen.pareto(1.2, n) + 1e-3
    w = gen.lognormal(0.0, 2.0, n)
    budget = n / 2
    optimal_crawl_rates(delta[:1000], w[:1000], 500.0, objective=objective)  # compile / load the kernel
    t_ours, ours = best_of(lambda: optimal_crawl_rates(delta, w, budget, objective=objective), repeats)
    if objective == "binary_freshness":  # the sorted log-domain solver (the previous kernel), for comparison
        t_sorted, _ = best_of(lambda: _binary_freshness_rows(delta[None], w[None], np.array([budget])), repeats)
        print(f"{objective:20s} N = {n:>9,}: sorted solver (previous kernel) {t_sorted * 1e3:8.1f} ms")
    t0 = time.perf_counter()
    if objective == "binary_freshness":
        theirs = peer[0](w, delta, budget)
    else:
        lam_lo = n**2 * w.min() * delta.min() / (n * delta.max() * budget + budget**2)  # the peer's bracket
        theirs = peer[1](w, delta, budget, 1e-12 * lam_lo)
    t_peer = time.perf_counter() - t0
    v_ours = crawl_objective(ours, delta, w, objective=objective)
    v_peer = crawl_objective(np.maximum(theirs, 0.0), delta, w, objective=objective)
    return t_ours, t_peer, float(np.max(np.abs(ours - theirs)) / budget), abs(v_ours / v_peer - 1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000_000)
    parser.add_argument("--peer-pages", type=int, default=1_000_000)
    parser.add_argument("--peer-harmonic-pages", type=int, default=100_000)
    parser.add_argument("--peer-file", type=Path, help="a local copy of the public LambdaCrawlExps.py")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--small", type=int, default=300)
    parser.add_argument("--edges", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    gen = np.random.default_rng(2024)

    peer = _load_peer(args.peer_file) if args.peer_file else (_peer_binary, peer_incomplete)
    which = f"the public code ({args.peer_file.name})" if args.peer_file else "its restatement (_peer_binary)"
    print(f"# against LambdaCrawl, {which}; Δ ~ Pareto(1.2) + 0.001, w ~ LogNormal(0, 2), B = N/2")
    for objective, n in (("binary_freshness", args.peer_pages), ("harmonic_staleness", args.peer_harmonic_pages)):
        t_ours, t_peer, dp, dv = compare_with_peer(n, objective, peer=peer, repeats=args.repeats, gen=gen)
        ratio = t_peer / t_ours
        print(
            f"{objective:20s} N = {n:>9,}: ours {t_ours * 1e3:8.1f} ms   LambdaCrawl {t_peer:7.2f} s   "
            f"ratio {ratio:6.0f}x   max |p - p_peer|/B = {dp:.1e}   objective rel. diff {dv:.1e}"
        )
        result(
            f"{objective} vs LambdaCrawl at N = {n:,}: >= {GOAL_RATIO:g}x faster, same answer to {GOAL_AGREEMENT:g}",
            f"{ratio:.0f}x ({t_ours * 1e3:.0f} ms vs {t_peer:.2f} s), max|Δp|/B {dp:.0e}, objective {dv:.0e}",
            ratio >= GOAL_RATIO and dp <= GOAL_AGREEMENT and dv <= GOAL_AGREEMENT,
            value=ratio,
            unit="x",
            note=load_note(),
        )

    print(f"# large problem: N = {args.pages:,} pages, Δ ~ Pareto(1.2) + 0.001, w ~ LogNormal(0, 2), B = N/2")
    delta = gen.pareto(1.2, args.pages) + 1e-3
    w = gen.lognormal(0.0, 2.0, args.pages)
    budget = args.pages / 2
    for objective in ("binary_freshness", "harmonic_staleness"):
        t0 = time.perf_counter()
        p = optimal_crawl_rates(delta, w, budget, objective=objective)
        dt = time.perf_counter() - t0
        print(
            f"{objective:20s} {dt:7.2f} s   |Σp/B - 1| = {abs(p.sum() / budget - 1):.1e}   "
            f"pages crawled: {np.count_nonzero(p) / p.size:.1%}"
        )
    del delta, w, p

    n = args.small
    print(f"\n# small problem: N = {n}, same distributions, against scipy.optimize.minimize(method='SLSQP')")
    delta = gen.pareto(1.2, n) + 1e-3
    w = gen.lognormal(0.0, 2.0, n)
    budget = n / 2
    for objective in ("binary_freshness", "harmonic_staleness"):
        t0 = time.perf_counter()
        ours = optimal_crawl_rates(delta, w, budget, objective=objective)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref, _ = reference_crawl_rates(delta, w, budget, objective, ftol=1e-14)
        t_ref = time.perf_counter() - t0
        v_ours = crawl_objective(ours, delta, w, objective=objective)
        v_ref = crawl_objective(np.maximum(ref, 0), delta, w, objective=objective)
        print(
            f"{objective:20s} ours {t_ours * 1e3:8.2f} ms   SLSQP {t_ref * 1e3:9.1f} ms   "
            f"speed ratio {t_ref / t_ours:8.0f}x   objective ours/SLSQP - 1 = {v_ours / v_ref - 1:+.1e}   "
            f"max |p - p_SLSQP| / B = {np.max(np.abs(ours - ref)) / budget:.1e}"
        )

    n = args.edges
    print(f"\n# numerical edges: N = {n:,}; time relative to the ordinary problem (same N)")
    ordinary = (gen.pareto(1.2, n) + 1e-3, gen.lognormal(0.0, 2.0, n), n / 2)
    cases = {
        "ordinary": ordinary,
        "Δ, w, B in 1e-100..1e100": (10.0 ** gen.uniform(-100, 100, n), 10.0 ** gen.uniform(-100, 100, n), 1e-20),
        "Δ and B × 1e300": (ordinary[0] * 1e300, ordinary[1], ordinary[2] * 1e300),
        "B = 1e-12 min Δ": (ordinary[0], ordinary[1], 1e-12 * ordinary[0].min()),
    }
    for objective in ("binary_freshness", "harmonic_staleness"):
        base = None
        for label, (delta, w, budget) in cases.items():
            t0 = time.perf_counter()
            p = optimal_crawl_rates(delta, w, budget, objective=objective)
            dt = time.perf_counter() - t0
            base = dt if base is None else base
            print(
                f"{objective:20s} {label:26s} {dt:6.2f} s  ({dt / base:4.1f}x)   |Σp/B - 1| = "
                f"{abs(p.sum() / budget - 1):.1e}   finite: {bool(np.isfinite(p).all())}"
            )


if __name__ == "__main__":
    main()
