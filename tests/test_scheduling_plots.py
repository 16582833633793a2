"""Scheduling plots: pure data helpers and Axes-returning drawing functions."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from changerate_bayes.scheduling import (  # noqa: E402
    EphemeralSources,
    closed_loop_bands,
    optimal_crawl_rates,
    plot_change_ratio,
    plot_closed_loop,
    plot_crawl_rates,
    plot_schedule,
    plot_whittle_index,
    simulate_change_detection,
    simulate_closed_loop,
    simulate_ephemeral_crawling,
    whittle_index,
    whittle_index_curve,
)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_whittle_index_curve_data():
    x, g, xn, gn = whittle_index_curve(alpha=0.7, inflow=2.0, cost=2.0, n_points=50)
    np.testing.assert_allclose(g, whittle_index(x, alpha=0.7, inflow=2.0, cost=2.0))
    np.testing.assert_allclose(np.diff(xn), 2.0 * 0.7 ** np.arange(1, xn.size))  # x_{n+1} - x_n = uα^{n+1}
    assert xn[-1] < 2.0 / 0.3 and gn.shape == xn.shape


def test_closed_loop_bands_and_plot():
    delta = np.random.default_rng(0).lognormal(0.0, 1.0, (3, 100))
    res = simulate_closed_loop(delta, 1.0, 50.0, policies=("uniform", "thompson"), n_epochs=4, rng=0)
    bands = closed_loop_bands(res, kind="freshness")
    mean, lo, hi = bands["thompson"]
    np.testing.assert_allclose(mean, res.freshness[1].mean(axis=0))
    assert np.all(lo <= mean) and np.all(mean <= hi)
    assert set(closed_loop_bands(res, kind="estimate_within_2x")) == {"thompson"}
    for kind in ("freshness", "regret", "estimate_within_2x"):
        ax = plot_closed_loop(res, kind=kind)
        assert isinstance(ax, matplotlib.axes.Axes) and len(ax.lines) >= 1


def test_other_plots_return_axes():
    d = np.random.default_rng(1).lognormal(0.0, 1.0, 50)
    w = np.random.default_rng(2).lognormal(0.0, 1.0, 50)
    fig, ax = plt.subplots()
    assert plot_crawl_rates(d, optimal_crawl_rates(d, w, 20.0), w, ax=ax) is ax
    assert isinstance(plot_whittle_index(alpha=0.5, inflow=1.0), matplotlib.axes.Axes)
    src = EphemeralSources([1.0, 2.0], [1.0, 1.0], [1.0, 0.5])
    sim = simulate_ephemeral_crawling(src, 1, n_periods=20)
    ax = plot_schedule(sim.crawled)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["source 1", "source 2"]
    site = np.repeat(np.arange(3), 10)
    res = simulate_change_detection(
        np.ones(30), site, 12, policies=("greedy", "round_robin"), n_cycles=2, sample_size=2, rng=0
    )
    assert len(plot_change_ratio(res).lines) == 2
    with pytest.raises(ValueError, match=r"`crawled` must have shape"):
        plot_schedule([1, 0])
