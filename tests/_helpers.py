"""Helpers shared by several test modules (and by the scripts in tests/data/)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from changerate_bayes.replay import pages_from_table


def staggered_pages(seed: int, n_pages: int = 24, days: float = 40.0, n_quiet: int = 3):
    """Replay pages whose windows start and end at different times (some enter late, some
    leave early), log-normal change rates, ``n_quiet`` pages that never change."""
    rng = np.random.default_rng(seed)
    start = np.where(rng.random(n_pages) < 0.5, 0.0, rng.uniform(0.0, 0.6 * days, n_pages))
    end = np.where(rng.random(n_pages) < 0.5, days, start + rng.uniform(1.0, 0.4 * days, n_pages))
    rows = []
    for i in range(n_pages - n_quiet):
        rate = rng.lognormal(np.log(0.3), 1.2)
        t = np.sort(rng.uniform(start[i], end[i], rng.poisson(rate * (end[i] - start[i]))))
        rows += [(f"p{i}", x) for x in t]
    changes = pd.DataFrame(rows, columns=["page", "timestamp"])
    win = pd.DataFrame({"page": [f"p{i}" for i in range(n_pages)], "start": start, "end": end})
    return pages_from_table(changes, window=win)
