"""Writes replay_reference.npz: per-page replay results of the built-in policies, and one
``replay_policies`` table, as the compiled replay computed them when the arrays were made.

They were generated once, with ``uv run python tests/data/make_replay_reference.py`` on the
code in which the compiled replay agreed bit for bit with the plain NumPy engine, policies
and learners it replaced (the comparison then lived in tests/test_replay_compiled.py). The
test module checks today's replay against these arrays exactly; re-run this script only for
a deliberate change of the replay's results, and say so in the commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _helpers import staggered_pages  # noqa: E402

from changerate_bayes.replay import _engine, _policies, _replay  # noqa: E402
from changerate_bayes.replay._pages import MS_PER_DAY  # noqa: E402

HOUR_MS = 3_600_000
FIELDS = ("fresh_days", "age_area", "crawls", "detected")
#: the budgeted policies whose results are kept
BUDGETED = ("uniform", "lln", "mle", "posterior_mean", "thompson", "oracle", "oracle_proportional")
#: (step in hours, steps per epoch, budget per day, seed, whether the budget binds at some step)
CASES = [(6, 4, 0.6, 1, True), (24, 1, 9.0, 2, False), (3, 8, 2.5, 3, True)]
#: (label, pages seed, n_pages, days, policies, budget, hours, epoch_steps, rng)
RUNS = [(f"{c[0]}h-epoch{c[1]}-B{c[2]}", c[3], 24, 40.0, BUDGETED, c[2], c[0], c[1], c[3]) for c in CASES] + [
    ("batches", 12, 24, 40.0, ("thompson", "lln", "mle"), 4.0, 6, 40, 12),
    ("dynamic", 4, 10, 20.0, ("dynamic_mean", "dynamic_thompson"), 1.5, 6, 4, 4),
]
TABLE_POLICIES = ["uniform", "thompson", "oracle", "lln", "nutch", "stormcrawler", "nutch_tuned", "stormcrawler_tuned"]


def table_inputs():
    """The changes and windows of the ``replay_policies`` table (pages of staggered_pages(5))."""
    pages = staggered_pages(5, n_pages=16, days=30.0)
    rows = [
        (pages.names[i], t / MS_PER_DAY)
        for i in range(pages.n_pages)
        for t in pages.change_ms[pages.offsets[i] : pages.offsets[i + 1]]
    ]
    changes = pd.DataFrame(rows, columns=["page", "timestamp"])
    win = pd.DataFrame(
        {"page": list(pages.names), "start": pages.start_ms / MS_PER_DAY, "end": pages.end_ms / MS_PER_DAY}
    )
    kw = dict(
        window=win,
        budget=[0.5, 3.0],
        policies=TABLE_POLICIES,
        step="4h",
        epoch="1D",
        n_boot=20,
        tune_iterations=3,
        rng=7,
    )
    return changes, kw


def replay(label, seed, n_pages, days, policy, budget, hours, epoch, rng):
    pages = staggered_pages(seed, n_pages=n_pages, days=days)
    return _engine.run_replay(
        pages, _policies.POLICIES[policy](), budget=budget, dt_ms=hours * HOUR_MS, epoch_steps=epoch, rng=rng
    )


def main():
    out = {}
    for label, seed, n_pages, days, names, budget, hours, epoch, rng in RUNS:
        for name in names:
            res = replay(label, seed, n_pages, days, name, budget, hours, epoch, rng)
            for f in FIELDS:
                out[f"{label}/{name}/{f}"] = getattr(res, f)
    changes, kw = table_inputs()
    table = _replay.replay_policies(changes, **kw)
    for col in table.columns:
        values = table[col].to_numpy()
        out[f"table/{col}"] = values.astype(str) if values.dtype == object else values
    out["table/index"] = table.index.to_numpy()
    np.savez_compressed(Path(__file__).with_name("replay_reference.npz"), **out)


if __name__ == "__main__":
    main()
