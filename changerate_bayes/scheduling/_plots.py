"""Plots of the scheduling results: data preparation is pure, drawing is thin."""

from __future__ import annotations

import numpy as np

from .._validation import as_float_array, check_choice, check_positive_int
from ._whittle import _check_params, _index_formula

__all__ = [
    "whittle_index_curve",
    "closed_loop_bands",
    "plot_crawl_rates",
    "plot_whittle_index",
    "plot_closed_loop",
    "plot_schedule",
    "plot_change_ratio",
]


def _axes(ax):
    if ax is None:
        import matplotlib.pyplot as plt  # matplotlib: heavy, loaded only to draw

        _, ax = plt.subplots()
    return ax


def whittle_index_curve(*, alpha, inflow, cost=1.0, n_points=400):
    """States and Whittle indices for plotting γ(x) on [u, u/(1-α)].

    Returns
    -------
    states, index : ndarray, shape (n_points,)
    grid_states, grid_index : ndarray
        The states x_n = u(1-α^{n+1})/(1-α) reachable from u (while below 99.9% of u*)
        and their indices, where the curve has its kinks.

    Examples
    --------
    >>> from changerate_bayes.scheduling import whittle_index_curve
    >>> x, g, xn, gn = whittle_index_curve(alpha=0.5, inflow=1.0, n_points=3)
    >>> x.tolist(), g.tolist()
    ([1.0, 1.5, 2.0], [0.5, 1.0, 2.0])
    """
    a, u, c = (float(v) for v in _check_params(alpha, inflow, cost))
    n_points = check_positive_int(n_points, name="n_points", minimum=2)
    ustar = u / (1 - a)
    x = np.linspace(u, ustar, n_points)
    n_max = int(np.ceil(np.log(1e-3) / np.log(a)))
    xn = u * (1 - a ** (np.arange(n_max) + 1)) / (1 - a)
    return x, _index_formula(x, a, u, ustar) / c, xn, _index_formula(xn, a, u, ustar) / c


def closed_loop_bands(result, *, kind="freshness"):
    """Mean and 95% normal band over replications of a closed-loop quantity.

    Parameters
    ----------
    result : ClosedLoopResult
    kind : {"freshness", "regret", "estimate_within_2x"}

    Returns
    -------
    dict
        policy -> (mean, lower, upper), each of shape (n_epochs,).
    """
    kind = check_choice(kind, name="kind", choices=("freshness", "regret", "estimate_within_2x"))
    data = getattr(result, kind)
    out = {}
    n_rep = data.shape[1]
    for j, name in enumerate(result.policies):
        vals = data[j]
        if np.isnan(vals).all():
            continue
        mean = vals.mean(axis=0)
        half = 1.96 * vals.std(axis=0, ddof=1) / np.sqrt(n_rep) if n_rep > 1 else np.zeros_like(mean)
        out[name] = (mean, mean - half, mean + half)
    return out


def plot_crawl_rates(change_rates, crawl_rates, weights=None, *, ax=None, **kwargs):
    """Scatter of optimal crawl rate p_i against change rate Δ_i (log x axis).

    Parameters
    ----------
    change_rates, crawl_rates : array_like, shape (N,)
    weights : array_like, shape (N,), optional
        Colours the points.
    ax : matplotlib Axes, optional
    **kwargs
        Passed to ``ax.scatter``.

    Returns
    -------
    matplotlib.axes.Axes
    """
    d = as_float_array(change_rates, name="change_rates", nonnegative=True, ndim=(1,))
    p = as_float_array(crawl_rates, name="crawl_rates", nonnegative=True, ndim=(1,))
    ax = _axes(ax)
    c = None if weights is None else np.log10(as_float_array(weights, name="weights", positive=True, ndim=(1,)))
    sc = ax.scatter(d, p, c=c, s=kwargs.pop("s", 6), **kwargs)
    if c is not None:
        ax.figure.colorbar(sc, ax=ax, label="log10 weight")
    ax.set_xscale("log")
    ax.set_xlabel("change rate Δ")
    ax.set_ylabel("optimal crawl rate p")
    return ax


def plot_whittle_index(*, alpha, inflow, cost=1.0, ax=None, **kwargs):
    """The Whittle index γ(x) over the state space, kinks at the reachable states."""
    x, g, xn, gn = whittle_index_curve(alpha=alpha, inflow=inflow, cost=cost)
    ax = _axes(ax)
    (line,) = ax.plot(x, g, **kwargs)
    ax.plot(xn, gn, "o", ms=3, color=line.get_color())
    ax.set_xlabel("state x (expected uncrawled utility)")
    ax.set_ylabel("Whittle index γ(x)")
    return ax


def plot_closed_loop(result, *, kind="freshness", ax=None, **kwargs):
    """Freshness (or cumulative regret) per epoch of each closed-loop policy, with 95% bands."""
    bands = closed_loop_bands(result, kind=kind)
    ax = _axes(ax)
    t = result.epoch_end
    for name, (mean, lo, hi) in bands.items():
        (line,) = ax.plot(t, mean, label=name, **kwargs)
        ax.fill_between(t, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
    if kind == "freshness":
        ax.axhline(float(result.oracle_freshness.mean()), color="k", ls=":", lw=1, label="oracle steady state")
    ax.set_xlabel("time (end of epoch)")
    ax.set_ylabel(
        {
            "freshness": "weighted freshness",
            "regret": "cumulative regret",
            "estimate_within_2x": "weight of pages with Δ̂ within 2× of Δ",
        }[kind]
    )
    ax.legend(fontsize="small")
    return ax


def plot_schedule(crawled, *, labels=None, ax=None, **kwargs):
    """Raster of a crawl schedule: a mark where source i is crawled in period t.

    Parameters
    ----------
    crawled : array_like of bool, shape (n_periods, N)
    labels : sequence of str, optional
    """
    c = np.asarray(crawled, dtype=bool)
    if c.ndim != 2:
        raise ValueError(f"`crawled` must have shape (n_periods, N); got {c.shape}")
    ax = _axes(ax)
    t, i = np.nonzero(c)
    ax.scatter(t, i, marker="|", s=kwargs.pop("s", 60), **kwargs)
    ax.set_yticks(range(c.shape[1]))
    ax.set_yticklabels(labels if labels is not None else [f"source {j + 1}" for j in range(c.shape[1])])
    ax.set_xlabel("period")
    ax.set_ylim(-0.5, c.shape[1] - 0.5)
    return ax


def plot_change_ratio(result, *, ax=None, **kwargs):
    """ChangeRatio per download cycle of each policy (:class:`ChangeDetectionResult`)."""
    ax = _axes(ax)
    cycles = np.arange(1, result.change_ratio.shape[1] + 1)
    for name, ratio in zip(result.policies, result.change_ratio):
        ax.plot(cycles, ratio, marker="o", ms=3, label=name, **kwargs)
    ax.set_xlabel("download cycle")
    ax.set_ylabel("ChangeRatio")
    ax.legend(fontsize="small")
    return ax
