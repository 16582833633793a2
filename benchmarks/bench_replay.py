"""Benchmark: one replay of the shipped Open Terms Archive documents per policy.

Run: ``python benchmarks/bench_replay.py [--step 6h] [--policies uniform thompson nutch]``.
Prints, per policy, the wall time of one :func:`run_replay` over every document with a
non-empty window (14 years, budget = the total change rate), the steps visited per
second and the crawls made, beside the goal: the default preset of the
``scheduling_replay`` study (about 80 such replays and bisection runs) within 10 minutes
on 2 cores, i.e. one replay in about 5 s. Then (unless ``--no-readme``) the wall time of the
README's ``replay_policies`` example (5 policies, budgets 5 and 20 plus the spend of each
schedule: 14 replays, 200 bootstrap resamples), for information (53-59 s with the
step-by-step Python loop of every policy, before the compiled paths).

``--multiples`` replays every policy at 0.1, 0.3, 1 and 3 times the total change rate
(the study's four budgets) and prints each policy's total and the sum over policies,
against the goal of the study's default preset: all of it within 10 minutes.
"""

from __future__ import annotations

import argparse
import time

import pandas as pd
from _result import result  # noqa: E402  (the RESULT line read by run_all.py)

from changerate_bayes.datasets import dataset_path
from changerate_bayes.replay import POLICIES, pages_from_table, replay_metrics, replay_policies, run_replay
from changerate_bayes.validation.scheduling_replay import ota_table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step", default="6h")
    parser.add_argument(
        "--policies",
        nargs="+",
        default=["uniform", "oracle", "thompson", "nutch", "stormcrawler", "paced_index_thompson"],
    )
    parser.add_argument("--no-readme", action="store_true", help="skip the README replay_policies example")
    parser.add_argument(
        "--multiples",
        action="store_true",
        help="each policy at 0.1, 0.3, 1 and 3 times the total change rate, and the sum",
    )
    args = parser.parse_args(argv)
    if args.multiples:
        return multiples(args)
    changes, win, _ = ota_table()
    pages = pages_from_table(changes, window=win)
    dt_ms = int(pd.Timedelta(args.step) / pd.Timedelta(milliseconds=1))
    rate = pages.total_change_rate()
    n_steps = int(pages.span_days * 86_400_000 // dt_ms)
    print(
        f"# {pages.n_pages} documents, {int(pages.n_changes.sum())} changes, {pages.span_days:.0f} days, "
        f"{n_steps} steps of {args.step}; budget {rate:.3g} crawls/day; goal: ~5 s per replay"
    )
    for name in args.policies:
        pol = POLICIES[name]()
        t0 = time.perf_counter()
        res = run_replay(pages, pol, budget=rate, dt_ms=dt_ms, epoch_steps=max(1, 7 * 86_400_000 // dt_ms), rng=0)
        sec = time.perf_counter() - t0
        m = replay_metrics(res)
        print(
            f"{name:14s} {sec:6.2f} s  {n_steps / sec:9.0f} steps/s  {m['crawls']:9d} crawls  "
            f"freshness {m['freshness']:.3f}"
        )
        result(
            f"replay of all {pages.n_pages} documents ({n_steps} steps of {args.step}), policy {name}: ~5 s",
            f"{sec:.1f} s ({n_steps / sec:.0f} steps/s)",
            sec <= 5.0,
            value=sec,
            unit="s",
        )
    if not args.no_readme:
        sec = readme_example()
        print(f"README replay_policies example {sec:6.2f} s")
        result(
            "README replay_policies example (14 replays of 1261 documents, 6h steps, n_boot 200), for information",
            f"{sec:.1f} s",
            None,
            value=sec,
            unit="s",
        )


def multiples(args) -> None:
    """Each policy at the study's four budgets; the wall time per policy and in all."""
    changes, win, _ = ota_table()
    pages = pages_from_table(changes, window=win)
    dt_ms = int(pd.Timedelta(args.step) / pd.Timedelta(milliseconds=1))
    rate = pages.total_change_rate()
    epoch = max(1, 7 * 86_400_000 // dt_ms)
    total = 0.0
    for name in args.policies:
        sec = 0.0
        cells = []
        for m in (0.1, 0.3, 1.0, 3.0):
            pol = POLICIES[name]()
            t0 = time.perf_counter()
            res = run_replay(
                pages, pol, budget=rate * m if pol.budgeted else None, dt_ms=dt_ms, epoch_steps=epoch, rng=0
            )
            sec += time.perf_counter() - t0
            cells.append(f"{m:g}x {replay_metrics(res)['freshness']:.3f}")
            if not pol.budgeted:
                break
        total += sec
        print(f"{name:24s} {sec:7.1f} s  " + "  ".join(cells), flush=True)
    print(f"all {len(args.policies)} policies x 4 budgets: {total:.1f} s")
    result(
        f"{len(args.policies)} policies x 4 budgets on all {pages.n_pages} documents, {args.step} steps: within 600 s",
        f"{total:.0f} s",
        total <= 600.0,
        value=total,
        unit="s",
    )


def readme_example() -> float:
    """Wall time (s) of the README's replay_policies call."""
    pages = pd.read_csv(dataset_path("ota_versions_pages"))
    changes = pd.read_csv(dataset_path("ota_versions_changes"))
    windows = pages.rename(columns={"first_record": "start", "last_event": "end"})[["page", "start", "end"]]
    windows = windows[windows["end"] > windows["start"]]
    changes = changes[changes["page"].isin(windows["page"])]
    t0 = time.perf_counter()
    replay_policies(
        changes,
        window=windows,
        budget=[5.0, 20.0],
        policies=["uniform", "thompson", "oracle", "nutch", "stormcrawler"],
        step="6h",
        epoch="7D",
        n_boot=200,
        rng=1,
    )
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
