"""Plots of the Poisson diagnostics: Q-Q with envelope, rate over time with segments.

Data preparation is in pure functions (:func:`rate_over_time`, ``exponential_qq``);
the ``plot_*`` functions only draw on the Axes they are given (or a new one), return
it and never call ``show()``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_positive_int
from ._qq import QQData

__all__ = ["RateSeries", "rate_over_time", "plot_qq", "plot_rate"]


@dataclass(frozen=True)
class RateSeries:
    """Events per time unit in equal bins.

    Attributes
    ----------
    edges : ndarray, shape (n_bins + 1,)
    counts : ndarray of int, shape (n_bins,)
    rates : ndarray, shape (n_bins,)
        counts / bin width.
    """

    edges: np.ndarray
    counts: np.ndarray
    rates: np.ndarray


def rate_over_time(times, *, n_bins: int | None = None) -> RateSeries:
    """Empirical rate in equal bins over (t_1, t_n).

    Parameters
    ----------
    times : array_like of float, shape (n,)
        Sorted event times.
    n_bins : int, optional
        Default about 10 events per bin, between 1 and 200.

    Returns
    -------
    RateSeries
        Fewer than two events give one bin of rate 0.

    Raises
    ------
    ValueError
        If two or more events all fall at one time (zero span: the rate is undefined).

    Examples
    --------
    >>> r = rate_over_time([0.0, 1.0, 1.5, 2.0, 4.0], n_bins=2)
    >>> r.counts.tolist(), r.rates.tolist()
    ([3, 2], [1.5, 1.0])
    """
    t = np.asarray(times, dtype=np.float64)
    if n_bins is None:
        n_bins = int(np.clip(t.size // 10, 1, 200))
    n_bins = check_positive_int(n_bins, name="n_bins")
    if t.size < 2:
        lo = float(t[0]) if t.size else 0.0
        return RateSeries(np.array([lo, lo]), np.array([t.size]), np.array([0.0]))
    if not t[-1] > t[0]:
        raise ValueError(
            f"`times` has zero span ({t.size} events all at {t[0]:g}): the rate over time is undefined (infinite)"
        )
    edges = np.linspace(t[0], t[-1], n_bins + 1)
    counts, _ = np.histogram(t, bins=edges)
    return RateSeries(edges, counts, counts / np.diff(edges))


def _axes(ax):
    if ax is None:
        from matplotlib.figure import Figure  # matplotlib: heavy, loaded only to draw

        ax = Figure(figsize=(5, 4)).add_subplot()
    return ax


def _clock(x, origin):
    """Hours since ``origin`` as datetime64 (for a date axis) or unchanged."""
    if origin is None:
        return x
    return origin + (np.asarray(x) * 3.6e9).astype("timedelta64[us]")


def plot_qq(result, ax=None, *, envelope: bool = True, log: bool = False, **kwargs):
    """Q-Q plot of the gaps against the fitted exponential (geometric for crawl
    detections), with simulation envelope.

    Parameters
    ----------
    result : PoissonGOFResult or QQData
    ax : matplotlib.axes.Axes, optional
        Drawn on a new figure's Axes if None.
    envelope : bool, default True
        Shade the pointwise simulation envelope.
    log : bool, default False
        Logarithmic axes: shows the short gaps of a bursty trace, which a linear Q-Q
        plot squeezes into a corner (zero gaps are then not drawn).
    **kwargs
        Passed to ``ax.scatter`` for the points.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np
    >>> from changerate_bayes.diagnostics import poisson_gof, plot_qq
    >>> res = poisson_gof(np.cumsum(np.random.default_rng(0).exponential(size=60)), n_resamples=19, rng=0)
    >>> plot_qq(res, log=True).get_xscale()
    'log'
    """
    qq: QQData = getattr(result, "qq", result)
    unit = getattr(result, "rate_unit", "per time unit").replace("per ", "")
    ax = _axes(ax)
    if qq.observed.size == 0:
        ax.text(0.5, 0.5, "no gaps to plot", ha="center", va="center", transform=ax.transAxes)
        return ax
    if envelope and qq.n_simulations:
        ax.fill_between(qq.theoretical, qq.lower, qq.upper, color="0.8", label=f"{qq.level:.0%} simulation envelope")
    kw = {"s": 6, "color": "C0", "label": "gaps"} | kwargs
    ax.scatter(qq.theoretical, qq.observed, **kw)
    top = float(np.nanmax(np.r_[qq.theoretical, qq.observed]))
    if log:
        pos = np.r_[qq.theoretical, qq.observed]
        low = float(np.nanmin(pos[pos > 0]))
        ax.plot([low, top], [low, top], color="k", lw=0.8, label="y = x")
        ax.set_xscale("log")
        ax.set_yscale("log")
    else:
        ax.plot([0, top], [0, top], color="k", lw=0.8, label="y = x")
    ax.set_xlabel(f"{qq.distribution} quantile ({unit}s)")
    ax.set_ylabel(f"observed gap ({unit}s)")
    ax.legend(loc="lower right", fontsize="small")
    return ax


def plot_rate(
    result,
    ax=None,
    *,
    n_bins: int | None = None,
    log: bool = True,
    segments=None,
    rate=None,
    origin=None,
    rate_unit: str = "per hour",
    **kwargs,
):
    """Empirical event rate over time with the fitted constant-rate segments.

    Parameters
    ----------
    result : PoissonGOFResult or RateSeries
        A diagnostics result (the rate series is computed from its times, the segments,
        overall rate, origin and unit taken from it), or a precomputed RateSeries.
    ax : matplotlib.axes.Axes, optional
    n_bins : int, optional
        Bins of the empirical rate (see :func:`rate_over_time`; PoissonGOFResult only).
    log : bool, default True
        Logarithmic rate axis (empty bins are then not drawn).
    segments, rate, origin, rate_unit : optional
        With a RateSeries: the Segments to overlay, the overall rate, the datetime64 of
        time zero (for a date axis) and the unit of the rates.
    **kwargs
        Passed to ``ax.stairs`` for the empirical rate.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> from changerate_bayes.diagnostics import RateSeries, plot_rate, rate_over_time
    >>> ax = plot_rate(rate_over_time([0.0, 1.0, 1.5, 2.0, 4.0], n_bins=2), rate_unit="per day")
    >>> ax.get_ylabel()
    'events per day'
    """
    ax = _axes(ax)
    if isinstance(result, RateSeries):
        series = result
    else:
        segments, rate, origin, rate_unit = result.segments, result.rate, result.origin, result.rate_unit
        if result.degenerate is not None:  # all events at one time: there is no rate to draw
            series = None
            ax.text(0.5, 0.5, f"{result.degenerate}: no rate", transform=ax.transAxes, ha="center", va="center")
        else:
            series = rate_over_time(result.times, n_bins=n_bins)
    if series is not None:
        kw = {"color": "0.6", "baseline": None, "label": f"events per bin ({series.counts.size} bins)"} | kwargs
        ax.stairs(series.rates, _clock(series.edges, origin), **kw)
    if segments is not None:
        ax.stairs(
            segments.rates,
            _clock(segments.edges, origin),
            color="C3",
            lw=1.6,
            baseline=None,
            label=f"Bayesian blocks ({segments.n_segments} segments)",
        )
    if rate is not None:
        ax.axhline(rate, color="k", ls="--", lw=0.8, label="overall rate")
    if log and series is not None and np.any(series.rates > 0):
        ax.set_yscale("log")
    if origin is not None:
        import matplotlib.dates as mdates  # matplotlib: heavy, loaded only to draw

        locator = mdates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    unit = rate_unit.replace("per ", "")
    ax.set_ylabel(f"events per {unit}")
    ax.set_xlabel("time (UTC)" if origin is not None else f"time ({unit}s)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize="small")
    return ax
