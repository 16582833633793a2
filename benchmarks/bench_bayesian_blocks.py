"""Bayesian blocks on the longest shipped trace: astropy's ``fitness="events"`` against
the same fitness with its argument list cached (``diagnostics._segments._events_fitness``).

Run: ``python benchmarks/bench_bayesian_blocks.py``; prints the times and their ratio
measured in this run, and checks that both give the same segments.
"""

import time

import numpy as np
from _result import result
from astropy.stats import bayesian_blocks

from changerate_bayes._event_times import as_event_times
from changerate_bayes.diagnostics import fit_segments
from changerate_bayes.traces import load_trace


def best_of(f, repeats=3):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main():
    name = "gitscrape_scrape-hacker-news-by-domain_simonwillison-net"
    t = as_event_times(load_trace(name)).values
    plain, edges = best_of(lambda: bayesian_blocks(t, fitness="events", p0=0.05))
    cached, seg = best_of(lambda: fit_segments(t, p0=0.05))
    assert np.array_equal(edges[1:-1], seg.edges[1:-1])
    print(f"{name}: {t.size} events, {seg.n_segments} segments")
    print(f"astropy bayesian_blocks(fitness='events'): {plain:.3f} s")
    print(f"fit_segments (cached fitness arguments):   {cached:.3f} s")
    print(f"ratio: {plain / cached:.2f}x")
    result(
        f"Bayesian blocks, {t.size} events: fit_segments against astropy (for information)",
        f"{plain / cached:.2f}x ({cached:.3f} s vs {plain:.3f} s)",
        None,
        value=plain / cached,
        unit="x",
    )


if __name__ == "__main__":
    main()
