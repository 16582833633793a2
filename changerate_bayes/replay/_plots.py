"""Plot of a replay table: freshness against crawls per day."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["plot_freshness_budget"]


def plot_freshness_budget(table: pd.DataFrame, *, weighted: bool = True, ax=None):
    """Freshness against budget for each policy of a :func:`replay_policies` table.

    Budgeted and tuned policies are lines over the given budgets, each point at the crawls
    per day actually spent (a tuned schedule that cannot spend as little as a budget sits at
    its floor), with the bootstrap intervals when the table has them (the hindsight references,
    any name containing "oracle", dashed; tuned schedules dotted); a schedule with its
    defaults is one black marker.

    Parameters
    ----------
    table : pandas.DataFrame
        The output of :func:`~changerate_bayes.replay.replay_policies`.
    weighted : bool, default True
        Plot ``freshness_weighted`` (else ``freshness``).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ValueError
        If ``table`` lacks the columns policy, budget, budget_source, crawls_per_day
        and the freshness column.
    """
    import matplotlib.pyplot as plt  # optional dependency, heavy: imported when a figure is drawn

    col = "freshness_weighted" if weighted else "freshness"
    need = {"policy", "budget", "budget_source", "crawls_per_day", col}
    if not isinstance(table, pd.DataFrame) or not need <= set(table.columns):
        raise ValueError(f"`table` must be a replay_policies table with columns {sorted(need)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.5))
    given = table[table["budget_source"] == "given"]
    for name, rows in given.groupby("policy", sort=False):
        rows = rows.sort_values("budget")
        y = rows[col].to_numpy(dtype=float)
        err = None
        if f"{col}_lo" in rows:
            err = np.vstack([y - rows[f"{col}_lo"].to_numpy(dtype=float), rows[f"{col}_hi"].to_numpy(dtype=float) - y])
        ls = "--" if "oracle" in name else (":" if name.endswith("_tuned") else "-")
        ax.errorbar(rows["crawls_per_day"], y, yerr=err, marker="o", ms=3, capsize=2, ls=ls, label=name)
    own = table[table["budget_source"] == "own schedule"]
    for (_, r), mk in zip(own.iterrows(), "sD^v<>"):
        own_err = None
        if f"{col}_lo" in own:
            own_err = [[r[col] - r[f"{col}_lo"]], [r[f"{col}_hi"] - r[col]]]
        ax.errorbar(
            [r["crawls_per_day"]],
            [r[col]],
            yerr=own_err,
            marker=mk,
            ms=8,
            ls="none",
            color="k",
            label=f"{r['policy']} (own schedule)",
        )
    ax.set_xscale("log")
    ax.set_xlabel("crawls per day spent")
    ax.set_ylabel("time-averaged freshness" + (" (weighted)" if weighted else ""))
    ax.legend(fontsize="x-small", ncol=2)
    return ax
