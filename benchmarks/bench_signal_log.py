"""Benchmark: ``crawllog.estimate`` of a log with change signals on 10^5 pages, against the same log without.

The log is synthetic: ``--pages`` pages (default 10^5), each crawled ``--crawls`` times
(default 30) about once a day (exponential gaps of mean 1 day, rounded to the second),
changes Poisson with Δ log-normal around 0.3 per day (log-sd 1), each change signalled
with probability q ~ Uniform(0.3, 0.95) within a minute after it, and false signals at
ν ~ Gamma(1, 0.2) per day: about 10 signals per page. Changes are decided by the log's
``changed`` column.

Timed, in one process (the pandas engine, the commands' default sampler settings
``SIGNAL_DRAWS``): ``estimate(visits)`` (the table without signals) and
``estimate(visits, signals=signals, rng=0)`` (the same table with the signal columns);
then, for the parts of the second: the signals matched with the visits
(``part_signals`` + ``log_signals``), the pooled prior (``pooled_signal_prior``, which
runs EM, on ``PRIOR_PAGES`` pages drawn at random), and the Gibbs sampler (``signal_columns`` less the prior). The ratio with/without
is the result (measured in one run); the wall times for information.

Run: ``uv run --locked python benchmarks/bench_signal_log.py [--pages 100000] [--crawls 30]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from changerate_bayes.crawllog import SIGNAL_DRAWS, estimate, log_signals, signal_columns
from changerate_bayes.crawllog.signal_log import PRIOR_PAGES, _take, part_signals, unique_signals
from changerate_bayes.io import read_frame
from changerate_bayes.signals import pooled_signal_prior

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _result import load_note, result  # noqa: E402

T0 = np.datetime64("2024-01-01T00:00:00", "s").astype("datetime64[ns]").view(np.int64)
DAY = 86_400 * 10**9


def synthetic_log(pages: int, crawls: int, seed: int = 0):
    """(visits, signals) data frames of the module docstring."""
    gen = np.random.default_rng(seed)
    delta = np.exp(np.log(0.3) + gen.standard_normal(pages))
    q = gen.uniform(0.3, 0.95, pages)
    nu = gen.gamma(1.0, 0.2, pages)
    gaps = np.round(gen.exponential(1.0, (pages, crawls)) * 86_400) + 1  # seconds, each > 0
    times = np.cumsum(gaps, axis=1)  # seconds after T0
    horizon = times[:, -1] / 86_400 + 1.0
    n_changes = gen.poisson(delta * horizon)
    page_of_change = np.repeat(np.arange(pages), n_changes)
    change_t = gen.uniform(0, 1, page_of_change.size) * horizon[page_of_change] * 86_400
    # a crawl sees a change if one happened since the page's previous crawl
    order = np.lexsort((change_t, page_of_change))
    page_of_change, change_t = page_of_change[order], change_t[order]
    flat_t = times.ravel()
    page_of_visit = np.repeat(np.arange(pages), crawls)
    key_v = page_of_visit * 1e9 + flat_t
    key_c = page_of_change * 1e9 + change_t
    before = np.searchsorted(key_c, key_v, side="right")  # changes of earlier pages, and of this one before
    seen = before - np.concatenate(([0], np.cumsum(n_changes)[:-1]))[page_of_visit]
    changed = np.zeros(flat_t.size, dtype=np.int8)
    changed[1:] = (np.diff(seen) > 0) & (page_of_visit[1:] == page_of_visit[:-1])
    visits = pd.DataFrame(
        {
            "page": pd.Index([f"https://example.org/{i}" for i in range(pages)])[page_of_visit],
            "fetch_time": pd.to_datetime(T0 + (flat_t * 1e9).astype(np.int64), utc=True),
            "changed": changed,
        }
    )
    told = gen.random(page_of_change.size) < q[page_of_change]
    true_t = change_t[told] + gen.uniform(0, 60, told.sum())
    n_false = gen.poisson(nu * horizon)
    page_of_false = np.repeat(np.arange(pages), n_false)
    false_t = gen.uniform(0, 1, page_of_false.size) * horizon[page_of_false] * 86_400
    sig_page = np.concatenate([page_of_change[told], page_of_false])
    sig_t = np.concatenate([true_t, false_t])
    signals = pd.DataFrame(
        {
            "page": visits["page"].to_numpy()[sig_page * crawls],
            "signal_time": pd.to_datetime(T0 + (np.round(sig_t) * 1e9).astype(np.int64), utc=True),
        }
    )
    return visits, signals


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, default=100_000)
    p.add_argument("--crawls", type=int, default=30)
    args = p.parse_args(argv)
    visits, signals = synthetic_log(args.pages, args.crawls)
    print(f"{args.pages} pages, {len(visits)} visits, {len(signals)} signals; sampler {SIGNAL_DRAWS}")
    warnings.simplefilter("ignore")
    estimate(visits.iloc[: 40 * args.crawls], budget=10.0)  # numba kernels loaded once
    t = time.perf_counter()
    plain = estimate(visits)
    t_plain = time.perf_counter() - t
    t = time.perf_counter()
    res = estimate(visits, signals=signals, rng=0)
    t_sig = time.perf_counter() - t
    print(f"estimate without signals: {t_plain:.1f} s; with signals: {t_sig:.1f} s ({t_sig / t_plain:.2f}x)")
    print(res.signal_audit.format())
    log = read_frame(visits)
    t = time.perf_counter()
    matched = log_signals(plain.table, [part_signals(log, *unique_signals(signals))], signals)
    t_match = time.perf_counter() - t
    gen = np.random.default_rng(0)
    n = matched.data.n_pages
    sample = np.sort(gen.choice(n, min(n, PRIOR_PAGES), replace=False))
    t = time.perf_counter()
    pooled_signal_prior(_take(matched.data, sample))
    t_prior = time.perf_counter() - t
    t = time.perf_counter()
    signal_columns(matched, rng=0)
    t_cols = time.perf_counter() - t
    print(
        f"parts: matching {t_match:.1f} s, pooled prior (EM on {sample.size} pages) {t_prior:.1f} s, Gibbs "
        f"sampling {t_cols - t_prior:.1f} s ({matched.data.intervals.size} compressed intervals)"
    )
    note = load_note()
    result(
        f"estimate with signals, {args.pages} pages x {args.crawls} crawls: time against without (information)",
        f"{t_sig:.1f} s against {t_plain:.1f} s ({t_sig / t_plain:.2f}x)",
        None,
        value=t_sig / t_plain,
        unit="x",
        note=note,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
