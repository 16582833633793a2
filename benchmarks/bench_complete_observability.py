"""Benchmark: split_crawl_budget (one multiplier, exact) against LambdaCrawl's search over the split.

Run: ``python benchmarks/bench_complete_observability.py [--sizes 1000 10000 100000]
[--repeats 3] [--large-repeats 1] [--seed 0] [--peer-file LambdaCrawlExps.py] [--peer-epsilon E]``.

*The problem.* Half the pages signal every change (complete observability: crawled at a
signalled change with probability p_w), the other half are crawled blindly at Poisson
rates ρ_i; one budget R of crawls per day is shared and the weighted harmonic staleness
Σ −μ_w ln p_w + Σ −μ_i ln(ρ_i/(ρ_i + Δ_i)) is minimised (Kolobov, Peres, Lu, Horvitz,
NeurIPS 2019, eq. 8). Data: Δ ~ LogNormal(log 0.5, 1) changes per day, μ ~ LogNormal(0, 1),
R = 0.2 N crawls per day (the budget of the paper's experiments), a random half of the
pages with complete observability.

*The peer.* The public code of that paper: repository
https://github.com/microsoft/Optimal-Freshness-Crawl-Scheduling, file ``LambdaCrawlExps.py``
at commit 62bde09d89abd272d795cf24948d4f4dced0974f, functions ``LambdaCrawl_ComplObs``
(Algorithm 2: saturate the pages whose p would exceed 1, recompute, repeat),
``LambdaCrawl_IncomplObs`` (Algorithm 1: bisection over λ with the bracket and stopping
rule of ``BisectionSearchMonotoneDecr``), ``SplitEval_JStar`` and ``LambdaCrawl_X``
(Algorithm 3: ``scipy.optimize.minimize_scalar(method="bounded")`` over the budget of the
signalled pages in [0, min(R, Σ Δ_w)] with ``xatol = 0.005 R``), and the cost functions
``HarmonicPolicyCost*`` and ``BinaryPolicyCost*`` (mean costs over the pages, eq. 8 and the
supplement's eqs. 12-13). The functions ``_peer_*`` below (and Algorithm 1,
``peer_incomplete`` in ``_lambdacrawl.py``) restate those steps for this comparison only
(same loops over the pages in Python, same bounds, tolerances and calls); they are not
part of the package. The stored copy of the repository holds no LICENSE file
and its README names no licence, so no code is copied here: the steps are rewritten, and
``--peer-file`` runs the original functions from a local copy of ``LambdaCrawlExps.py``
instead. The bisection tolerance of ``LambdaCrawl_IncomplObs`` (absolute, on λ; 0.1 in the
paper's experiments) is set to 1e-12 times the lower end of its own bracket at the full
budget (``--peer-epsilon`` sets it), so that the peer's remaining error is the split
search's 0.005 R; the restated bisection also stops when no float is left between its
ends, where the original, with so small a tolerance, can loop forever (so with
``--peer-file`` give a ``--peer-epsilon`` of about 1e-9 of λ).

*Measured.* On each size, both solvers get the same arrays. Times are medians of
``--repeats`` calls (``--large-repeats`` for the peer at the largest size, where one call
takes tens of seconds), alternately, in this one process (``time.perf_counter``). Printed:
the split each finds (crawls per day given to the signalled pages, as a fraction of R),
max |p_w − p_w,peer|, max |ρ_i − ρ_i,peer|/R, the harmonic cost of each by the peer's own
cost function (ours must be at least as good, the peer's larger by what its 0.005 R
tolerance on the split allows), the budget each spends, and the speed ratio peer/ours.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy import optimize

from changerate_bayes.scheduling import split_crawl_budget

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _lambdacrawl import peer_incomplete  # noqa: E402
from _result import load_note, result  # noqa: E402

SPLIT_TOLERANCE = 0.005  # the peer's xatol, as a fraction of R


# ----------------------------------------------------------------------------------------
# The peer's steps (see the module docstring for the source), for comparison only.
# ----------------------------------------------------------------------------------------


def _peer_complete(importances, ch_rates, bandwidth):
    """Algorithm 2: p = R' μ/(Δ Σμ') over the undecided pages; those >= 1 fixed at 1; repeat."""
    if bandwidth == 0:
        return np.zeros_like(importances, dtype=float)
    n = len(importances)
    probs = np.zeros_like(importances, dtype=float)
    guess = np.empty_like(importances, dtype=float)
    remaining = bandwidth
    while True:
        saturated = False
        total = 0
        for w in range(n):
            if probs[w] == 0:
                total += importances[w]
        for w in range(n):
            if probs[w] == 0:
                p_hat = bandwidth * importances[w] / (ch_rates[w] * total)
                if p_hat >= 1.0:
                    probs[w] = 1.0
                    guess[w] = -1
                    remaining -= probs[w] * ch_rates[w]
                    saturated = True
                else:
                    guess[w] = p_hat
        if not saturated:
            for w in range(n):
                if guess[w] != -1:
                    probs[w] = guess[w]
            return probs
        bandwidth = remaining


def _peer_split_value(budget_c, solver, imp_i, ch_i, eps_i, imp_c, ch_c, bandwidth):
    """``SplitEval_JStar``: the harmonic cost J* (summed, not averaged) of one split."""
    rates = solver(imp_i, ch_i, bandwidth - budget_c, eps_i)
    probs = _peer_complete(imp_c, ch_c, budget_c)
    j_i, j_c = _peer_harmonic_sums(rates, probs, imp_i, ch_i, imp_c, ch_c)
    return j_i + j_c


def _peer_split(imp_i, ch_i, eps_i, imp_c, ch_c, bandwidth, *, incomplete=peer_incomplete, complete=_peer_complete):
    """``LambdaCrawl_X``: bounded scalar minimisation over the split, xatol 0.005 R; (rates, probs, split)."""
    res = optimize.minimize_scalar(
        _peer_split_value,
        bounds=(0, min(bandwidth, sum(ch_c))),
        args=(incomplete, imp_i, ch_i, eps_i, imp_c, ch_c, bandwidth),
        method="bounded",
        options={"xatol": SPLIT_TOLERANCE * bandwidth},
    )
    if not res.success:
        raise RuntimeError("the peer's bounded minimisation failed")
    rates = incomplete(imp_i, ch_i, bandwidth - res.x, eps_i)
    probs = complete(imp_c, ch_c, res.x)
    return rates, probs, float(res.x)


def _peer_harmonic_sums(rates_i, probs_c, imp_i, ch_i, imp_c, ch_c):
    """The peer's two harmonic sums, Σ −μ ln(ρ/(ρ+Δ)) (blind pages) and Σ −μ ln p (signalled); inf at a 0."""
    cost_i = 0.0
    for w in range(len(imp_i)):
        if rates_i[w] == 0:
            cost_i = math.inf
            break
        cost_i -= imp_i[w] * math.log(rates_i[w] / (rates_i[w] + ch_i[w]))
    cost_c = 0.0
    for w in range(len(imp_c)):
        if probs_c[w] == 0:
            cost_c = math.inf
            break
        cost_c -= imp_c[w] * math.log(probs_c[w])
    return cost_i, cost_c


def _peer_harmonic_cost(rates_i, probs_c, imp_i, ch_i, imp_c, ch_c):
    """``HarmonicPolicyCost``: the mean over all pages of −μ ln(ρ/(ρ+Δ)) and −μ ln p."""
    cost_i, cost_c = _peer_harmonic_sums(rates_i, probs_c, imp_i, ch_i, imp_c, ch_c)
    return (cost_i + cost_c) / (len(imp_i) + len(imp_c))


def _peer_binary_cost(rates_i, probs_c, imp_i, ch_i, imp_c, ch_c):
    """``BinaryPolicyCost``: the mean over all pages of μ Δ/(ρ+Δ) and μ (1 − p)."""
    cost_i = sum(imp_i[w] * ch_i[w] / (rates_i[w] + ch_i[w]) for w in range(len(imp_i)))
    cost_c = sum(imp_c[w] * (1 - probs_c[w]) for w in range(len(imp_c)))
    return (cost_i + cost_c) / (len(imp_i) + len(imp_c))


def _load_peer(path):
    """The original functions from a local copy of ``LambdaCrawlExps.py``."""
    spec = importlib.util.spec_from_file_location("lambdacrawl_peer", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def split(imp_i, ch_i, eps_i, imp_c, ch_c, bandwidth):
        rates, probs = mod.LambdaCrawl(imp_i, ch_i, eps_i, imp_c, ch_c, bandwidth)
        return rates, probs, float(np.sum(np.asarray(probs) * ch_c))

    return split, mod.HarmonicPolicyCost, mod.BinaryPolicyCost


# ----------------------------------------------------------------------------------------


def make_problem(n: int, seed: int):
    rng = np.random.default_rng(seed)
    delta = rng.lognormal(math.log(0.5), 1.0, n)
    mu = rng.lognormal(0.0, 1.0, n)
    complete = rng.random(n) < 0.5
    return delta, mu, complete, 0.2 * n


def _median_time(fn, repeats):
    times, value = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), value


def compare(n, seed, repeats, peer_repeats, peer, peer_epsilon=None):
    delta, mu, complete, budget = make_problem(n, seed)
    imp_c, ch_c, imp_i, ch_i = mu[complete], delta[complete], mu[~complete], delta[~complete]
    nn = ch_i.size
    if peer_epsilon is None:  # 1e-12 × the lower end of the peer's bracket for λ
        peer_epsilon = 1e-12 * nn**2 * imp_i.min() * ch_i.min() / (nn * ch_i.max() * budget + budget**2)
    eps = peer_epsilon
    peer_split, harmonic_cost, binary_cost = peer

    split_crawl_budget(delta[:100], mu[:100], 20.0, complete[:100])  # first call: imports, caches
    t_ours, ours = _median_time(lambda: split_crawl_budget(delta, mu, budget, complete), repeats)
    t_peer, theirs = _median_time(lambda: peer_split(imp_i, ch_i, eps, imp_c, ch_c, budget), peer_repeats)
    rates_peer, probs_peer, split_peer = theirs
    rates_peer, probs_peer = np.asarray(rates_peer, dtype=float), np.asarray(probs_peer, dtype=float)
    rates_ours, probs_ours = ours.crawl_rates[~complete], ours.crawl_probabilities

    cost_ours = harmonic_cost(rates_ours, probs_ours, imp_i, ch_i, imp_c, ch_c)
    cost_peer = harmonic_cost(rates_peer, probs_peer, imp_i, ch_i, imp_c, ch_c)
    bin_ours = binary_cost(rates_ours, probs_ours, imp_i, ch_i, imp_c, ch_c)
    bin_peer = binary_cost(rates_peer, probs_peer, imp_i, ch_i, imp_c, ch_c)
    spend_ours = (ours.complete_budget + ours.incomplete_budget) / budget
    spend_peer = (float(np.sum(probs_peer * ch_c)) + float(np.sum(rates_peer))) / budget
    row = {
        "n": n,
        "t_ours": t_ours,
        "t_peer": t_peer,
        "split_ours": ours.complete_budget / budget,
        "split_peer": split_peer / budget,
        "dp": float(np.max(np.abs(probs_ours - probs_peer))),
        "drho": float(np.max(np.abs(rates_ours - rates_peer)) / budget),
        "cost_ours": cost_ours,
        "cost_peer": cost_peer,
        "bin_ours": bin_ours,
        "bin_peer": bin_peer,
        "spend_ours": spend_ours,
        "spend_peer": spend_peer,
        "own_objective": ours.objective / n,
        "saturated": float(np.mean(probs_ours == 1.0)),
    }
    print(
        f"N = {n:>7,} ({complete.sum():,} signalled): ours {t_ours * 1e3:8.2f} ms, LambdaCrawl {t_peer:8.3f} s, "
        f"ratio {t_peer / t_ours:8.0f}x (medians of {repeats} and {peer_repeats})\n"
        f"    split to the signalled pages: ours {row['split_ours']:.6f} R, peer {row['split_peer']:.6f} R "
        f"(|diff| {abs(row['split_ours'] - row['split_peer']):.2e} R; peer's tolerance {SPLIT_TOLERANCE} R); "
        f"{row['saturated']:.1%} of the signalled pages at p = 1\n"
        f"    max |p - p_peer| {row['dp']:.2e}, max |rho - rho_peer|/R {row['drho']:.2e}\n"
        f"    harmonic cost (peer's function, mean per page): ours {cost_ours:.12f}, peer {cost_peer:.12f}, "
        f"peer - ours {cost_peer - cost_ours:+.2e} ({(cost_peer - cost_ours) / cost_ours:+.2e} relative); "
        f"ours by its own evaluation {row['own_objective']:.12f}\n"
        f"    binary cost of the same allocations (information): ours {bin_ours:.6f}, peer {bin_peer:.6f}\n"
        f"    budget spent: ours {spend_ours:.15f} R, peer {spend_peer:.15f} R"
    )
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--large-repeats", type=int, default=1, help="the peer's repeats at the largest size")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peer-file", type=Path, help="a local copy of the public LambdaCrawlExps.py")
    parser.add_argument("--peer-epsilon", type=float, help="the bisection tolerance on λ of the peer's Algorithm 1")
    args = parser.parse_args(argv)
    if args.peer_file:
        peer = _load_peer(args.peer_file)
        print(f"# peer: the original functions from {args.peer_file}")
    else:
        peer = (_peer_split, _peer_harmonic_cost, _peer_binary_cost)
        print("# peer: the restated steps of LambdaCrawl (_peer_split), see the module docstring")
    print("# Δ ~ LogNormal(log 0.5, 1)/day, μ ~ LogNormal(0, 1), R = 0.2 N/day, half the pages signalled")
    largest = max(args.sizes)
    for i, n in enumerate(sorted(args.sizes)):
        peer_repeats = args.large_repeats if n == largest and len(args.sizes) > 1 else args.repeats
        row = compare(n, args.seed + i, args.repeats, peer_repeats, peer, args.peer_epsilon)
        ratio = row["t_peer"] / row["t_ours"]
        no_worse = row["cost_ours"] <= row["cost_peer"] * (1 + 1e-12)
        exact = abs(row["spend_ours"] - 1) <= 1e-12
        near = abs(row["split_ours"] - row["split_peer"]) <= SPLIT_TOLERANCE
        result(
            f"split of one budget, signalled vs blind pages, N = {n:,}: budget spent to 1e-12, harmonic cost "
            f"<= LambdaCrawl's, split within its {SPLIT_TOLERANCE} R tolerance",
            f"cost peer - ours {(row['cost_peer'] - row['cost_ours']) / row['cost_ours']:+.1e} relative, split "
            f"|diff| {abs(row['split_ours'] - row['split_peer']):.1e} R, |spent/R - 1| {abs(row['spend_ours'] - 1):.0e}",
            no_worse and exact and near,
            note=load_note(),
        )
        result(
            f"split of one budget, N = {n:,}: speed ratio LambdaCrawl / ours",
            f"{ratio:.0f}x ({row['t_ours'] * 1e3:.1f} ms vs {row['t_peer']:.2f} s)",
            None,
            value=ratio,
            unit="x",
            note=load_note(),
        )


if __name__ == "__main__":
    main()
