"""The burst study's parts: padding, held-out fits, baselines, and the verdict's words."""

from __future__ import annotations

import numpy as np

import changerate_bayes.validation.bursts as B
from changerate_bayes import BurstParameters, simulate_burst_pages


def test_pad_stacks_rows_with_a_mask():
    a = (np.array([[1, 0, 1]], dtype=np.int8), np.array([[1.0, 2.0, 3.0]]))
    b = (np.array([[0], [1]], dtype=np.int8), np.array([[4.0], [5.0]]))
    c, t, m = B._pad([a, b])
    np.testing.assert_array_equal(c, [[1, 0, 1], [0, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(t, [[1, 2, 3], [4, 1, 1], [5, 1, 1]])
    np.testing.assert_array_equal(m, [[True] * 3, [True, False, False], [True, False, False]])


def test_held_out_fit_and_baselines_on_simulated_bursts():
    # on bursty pages, the burst model fitted on other pages predicts held-out pages
    # better than the random walk (both judged by the mean log score after the burn-in)
    sim = simulate_burst_pages(BurstParameters(0.02, 2.0, 0.05, 0.5), 60, 120, rng=4)
    train, test = slice(0, 40), slice(40, 60)
    mask = np.ones((40, 120), dtype=bool)
    fits = B.fit_held_out(sim.changed[train], sim.intervals[train], mask, 120)
    assert set(fits) == set(B.BURSTS)
    ch, tau = sim.changed[test], sim.intervals[test]
    tmask = np.ones(ch.shape, dtype=bool)
    preds = B.baseline_predictions(ch, tau, tmask, np.full(20, 2.0))
    from changerate_bayes import burst_predictive

    for m, fit in fits.items():
        preds[m] = burst_predictive(ch, tau, params=fit.params, scales=fit.scales).change_probability
    block = B._score("sim", ch, tau, tmask, preds, 50, np.random.default_rng(0))
    rows = {r["method"]: r for r in block["rows"]}
    assert rows["burst"]["log_score"] > rows["dynamic"]["log_score"]
    assert rows["dynamic"]["diff_vs_dynamic"] == 0.0


def _block(label, diffs, ratio=None):
    rows = [
        {
            "method": m,
            "log_score": -0.4 + d,
            "brier": 0.1,
            "diff_vs_dynamic": d,
            "ci_low": d - 0.01,
            "ci_high": d + 0.01,
        }
        for m, d in zip(B.METHODS, diffs)
    ]
    b = {
        "label": label,
        "rows": rows,
        "fraction_changed": 0.3,
        "winner": "burst",
        "n_scored": 100,
        "fits": {
            m: {
                "quiet_rate": 0.1,
                "busy_rate": 1.0,
                "to_busy": 0.1,
                "to_quiet": 0.5,
                "busy_probability": 1 / 6,
                "converged": True,
            }
            for m in B.BURSTS
        },
    }
    if ratio is not None:
        b["ratio"] = ratio
    return b


def test_verdict_names_wins_and_losses():
    win = [0.05, 0.04, 0.0, -0.01, -0.02, -0.1]
    lose = [-0.05, -0.04, 0.0, -0.01, -0.02, -0.1]
    ota = _block("ota", win)
    ota.update({"fits": [ota["fits"]], "median_interval_hours": 8.0})  # one fit per fold of pages
    res = {
        "bursts": {
            "traces": [_block("a", win, 1 / 3), _block("b", lose, 1 / 15)],
            "ota": ota,
            "settings": {
                "R": 1,
                "max_crawls": 10,
                "fit_crawls": 5,
                "folds": 2,
                "trace_folds": 2,
                "n_boot": 10,
                "scales": [1.0],
                "ota_max": None,
            },
        }
    }
    text, ok = B.verdict(res)
    assert ok is None
    assert "higher on: a at p = rate/3; ota" in text and "Both score lower on: b at p = rate/15 (-0.0400)" in text
    summary = B.summarize(res)
    assert summary["key_number"] == "a burst variant beats the random walk on 2 of 3"
    assert "Mean log score" in summary["verdict"] and "lower on" not in summary["verdict"]
    html = B.render(res)
    assert "burst, per-page scale" in html and "random walk (unit-free σ)" in html
    assert "0.0125" in html  # λ0 = 0.1 per mean interval of 8 h, per hour
    res["bursts"]["traces"][1] = _block("b", win, 1 / 15)
    assert B.verdict(res)[1] is True
