"""The Monte Carlo engine (serial = chunked = parallel) and the paper-figures study."""

import json
from concurrent.futures import ThreadPoolExecutor

import matplotlib.pyplot as plt
import numpy as np
import pytest

from changerate_bayes import estimate_path, simulate_replications
from changerate_bayes.validation import Preset, Progress, monte_carlo
from changerate_bayes.validation._engine import PowerSequence, Setting, log_grid, run_replications
from changerate_bayes.validation._fits import rmse_ratio

SETTINGS = [
    Setting("naive", "naive"),
    Setting("lln", "lln", {"alpha": PowerSequence(0.9)}),
    Setting("sa", "sa", {"eta": 0.75}),
    Setting("sa1", "sa", {"eta": 1.0, "initial": 1.0}),
    Setting("sam", "sam", {"eta": 0.75, "beta": 0.6}),
    Setting("race", "sam", {"eta": 0.4, "beta": 0.6}),  # overflows: kept as ±inf, no warning
    Setting("mle", "mle"),
    Setting("mm", "mm"),
]


def test_serial_equals_chunked_equals_parallel():
    keep = log_grid(1, 1500, 25)
    kwargs = dict(seed=42, settings=SETTINGS, keep=keep)
    serial = run_replications(5.0, 3.0, 1500, 30, **kwargs)
    chunked = run_replications(5.0, 3.0, 1500, 30, chunk_size=7, **kwargs)
    with ThreadPoolExecutor(max_workers=2) as pool:
        parallel = run_replications(5.0, 3.0, 1500, 30, chunk_size=4, executor=pool, **kwargs)
    for s in SETTINGS:
        assert serial[s.label].shape == (30, keep.size)
        assert np.array_equal(serial[s.label], chunked[s.label]), s.label
        assert np.array_equal(serial[s.label], parallel[s.label]), s.label
    assert np.isinf(serial["race"][:, -1]).all()


def test_engine_equals_estimate_path_and_replication_streams():
    keep = np.array([1, 10, 200])
    out = run_replications(5.0, 3.0, 200, 6, seed=7, settings=SETTINGS[:5] + SETTINGS[6:], keep=keep)
    h = simulate_replications(5.0, 3.0, 200, 6, rng=7)
    for s in SETTINGS[:5] + SETTINGS[6:]:
        assert np.array_equal(out[s.label], estimate_path(h, s.method, **s.params)[:, keep - 1]), s.label
    # replication i only depends on SeedSequence(seed).spawn(R)[i]: rows 2:4 alone give the same
    part = simulate_replications(5.0, 3.0, 200, 6, rng=7, start=2, stop=4)
    assert np.array_equal(part.changed, h.changed[2:4])


def test_engine_bad_arguments():
    with pytest.raises(ValueError, match="`keep`"):
        run_replications(5.0, 3.0, 100, 4, seed=1, settings=SETTINGS[:1], keep=[0, 5])
    with pytest.raises(ValueError, match="`keep`"):
        run_replications(5.0, 3.0, 100, 4, seed=1, settings=SETTINGS[:1], keep=[5, 5])
    with pytest.raises(ValueError, match="unique"):
        run_replications(5.0, 3.0, 100, 4, seed=1, settings=SETTINGS[:1] * 2, keep=[5])
    with pytest.raises(ValueError, match="`eta` must be"):
        run_replications(5.0, 3.0, 100, 4, seed=1, settings=[Setting("x", "sa", {"eta": 2.0})], keep=[5])


def test_rmse_ratio_hand_values():
    a, b = np.array([1.0, 3.0]), np.array([2.0, 2.0])  # truth 2: RMSE(a) = 1, RMSE(b) = 0.5... b exact
    weights = np.array([[0.5, 0.5], [1.0, 0.0]])
    ratio, low, high = rmse_ratio(a, b + np.array([0.5, -0.5]), 2.0, weights)
    assert ratio == pytest.approx(2.0)  # √(1/0.25)
    assert low == pytest.approx(2.0) and high == pytest.approx(2.0)
    assert rmse_ratio(np.array([np.inf, 1.0]), b, 2.0, weights) == (None, None, None)


def _entry(n_k=30):
    k = list(range(1, n_k + 1))
    est = {
        "label": "LLN",
        "method": "lln",
        "params": {},
        "k": k,
        "single": [5.0] * n_k,
        "low": [4.0] * n_k,
        "high": [6.0] * n_k,
        "rmse": [1.0 / (i**0.5) for i in k],
        "infinite_fraction": [0.0] * n_k,
    }
    return {
        "figure": "2",
        "change_rate": 5.0,
        "crawl_rate": 3.0,
        "n_replications": 100,
        "n_crawls": n_k,
        "estimators": [est],
    }


def test_figure_labels_do_not_overlap_the_next_panel():
    # Each panel's y-label and tick labels must start right of the previous panel's axes
    # (panel (c)'s y-label used to sit on panel (b)).
    fig = monte_carlo._figure(_entry())
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = fig.axes
    for left, right in zip(axes[:-1], axes[1:]):
        label = right.yaxis.label.get_window_extent(renderer)
        ticks = right.yaxis.get_tightbbox(renderer)
        assert left.get_window_extent(renderer).x1 < min(label.x0, ticks.x0)
    assert "quantiles" in axes[1].get_title()
    plt.close(fig)


@pytest.fixture(scope="module")
def quick_result():
    return monte_carlo.run(Preset("quick"), seed=2024, progress=Progress(quiet=True))


@pytest.mark.slow
def test_quick_study_schema_and_render(quick_result):
    assert set(quick_result) == set(monte_carlo.KEYS)
    text = json.dumps(quick_result, allow_nan=False)  # no NaN/inf in results.json
    data = json.loads(text)["monte_carlo"]
    figs = {f["figure"]: f for f in data["figures"]}
    assert {"2", "3", "4", "5a", "5b", "5c", "5d"} <= set(figs)
    fig2 = figs["2"]
    assert (fig2["change_rate"], fig2["crawl_rate"], fig2["n_replications"]) == (5.0, 3.0, 100)
    assert [e["label"] for e in fig2["estimators"]] == ["Naive", "LLN", "SA", "SAM", "MLE", "MM"]
    for e in fig2["estimators"]:
        n = len(e["k"])
        assert all(len(e[key]) == n for key in ("single", "low", "high", "rmse", "infinite_fraction"))
        lo, hi = np.array(e["low"], dtype=float), np.array(e["high"], dtype=float)
        ok = ~np.isnan(lo) & ~np.isnan(hi)
        assert (lo[ok] <= hi[ok]).all()
    # the Naive estimator's RMSE tends to its bias Δ²/(Δ+p) = 25/8 (paper Section 3.4)
    naive = fig2["estimators"][0]
    assert naive["rmse"][-1] == pytest.approx(25 / 8, rel=0.05)
    for r in data["recommendations"]:
        assert {"scenario", "claim", "statement", "ratio", "ci_low", "ci_high", "criterion", "holds"} <= set(r)
        if r["holds"] is not None:
            assert r["ci_low"] <= r["ratio"] <= r["ci_high"]
    html = monte_carlo.render(quick_result)
    assert html.count("<img") == 4 and "Practical recommendations" in html
    assert "2.5% quantile of Δ̂ over runs" in html and "97.5% quantile of Δ̂ over runs" in html
