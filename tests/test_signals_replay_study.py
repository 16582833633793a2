"""The signals_replay study's pieces on a short slice of the shipped dating crawls."""

import math

import numpy as np
import pandas as pd
import pytest

from changerate_bayes.validation import runner
from changerate_bayes.validation import signals_replay as study


def test_the_tables_follow_the_crawl_flags():
    changes, signals, win = study.ota_signal_tables(days=60)
    assert (win["end"] - win["start"]).max() <= pd.Timedelta(days=60)
    merged = changes.merge(win, on="page")
    assert ((merged["timestamp"] > merged["start"]) & (merged["timestamp"] <= merged["end"])).all()
    # nearly every text change comes with a raw change at its run (recall about 1)
    true = changes.merge(signals, on=["page", "timestamp"])
    assert len(true) >= len(changes) - 1
    assert len(signals) > 20 * len(changes)


def test_degraded_signals_thin_the_true_ones_and_add_poisson_false_ones():
    changes, signals, win = study.ota_signal_tables(days=365)
    gen = np.random.default_rng(0)
    n_true = len(changes.merge(signals, on=["page", "timestamp"]))
    thin = study.degraded_signals(changes, signals, win, "recall_0.5", gen)
    dropped = len(signals) - len(thin)
    # Binomial(n_true, 1/2): within 4 standard deviations
    assert abs(dropped - n_true / 2) <= 4 * math.sqrt(n_true / 4)
    assert set(map(tuple, thin.to_numpy())) <= set(map(tuple, signals.to_numpy()))
    for version, mult in (("false_1x", 1.0), ("false_5x", 5.0)):
        out = study.degraded_signals(changes, signals, win, version, gen)
        added = len(out) - len(signals)
        mean = mult * len(changes)  # rate per page-day × page-days = mult × changes
        assert abs(added - mean) <= 4 * math.sqrt(mean)
    with pytest.raises(ValueError, match="`version` must be one of"):
        study.degraded_signals(changes, signals, win, "nope", gen)


def test_simulated_collections_follow_their_model():
    changes, signals, win = study.simulated_signal_tables(np.random.default_rng(0), n_pages=200, days=50.0)
    assert len(win) == 200 and (win["end"] == 50.0).all()
    true = changes.merge(signals, on=["page", "timestamp"])
    n = len(changes)
    assert abs(len(true) - 0.95 * n) <= 4 * math.sqrt(n * 0.95 * 0.05)  # Binomial(n, 0.95)
    false = signals.merge(changes.assign(_c=1), on=["page", "timestamp"], how="left")
    false = false[false["_c"].isna()]
    on_runs = np.isclose(false["timestamp"] * 4, np.round(false["timestamp"] * 4))
    noisy = set(false.loc[on_runs, "page"])
    # a noisy page has a false signal at 30-90% of its 200 runs: every noisy page shows up
    assert abs((200 - len(noisy)) - 40) <= 4 * math.sqrt(200 * 0.2 * 0.8)  # clean pages: Binomial(200, 0.2)
    per_run = false[on_runs].groupby("page").size() / 200
    assert per_run.between(0.2, 0.95).all()
    rows = study.simulated_check(1, 4, n_pages=6, days=20.0)
    assert {(r["policy"], r["multiple"]) for r in rows} == {(p, m) for p in study.SIM_POLICIES for m in study.MULTIPLES}


@pytest.mark.slow
def test_study_runs_reports_and_is_registered():
    changes, signals, win = study.ota_signal_tables(days=90)
    rows = study.replay_versions(changes, signals, win, n_boot=20, seed=3)
    assert {r["version"] for r in rows} == set(study.VERSIONS)
    real = [r for r in rows if r["version"] == "real"]
    assert {r["policy"] for r in real} == set(study.PLAIN) | set(study.SIGNALLED)
    assert sorted({r["multiple"] for r in rows}) == list(study.MULTIPLES)
    for r in rows:  # the gap from uniform (0) to clairvoyant (1), with paired intervals around it
        if r["policy"] == "uniform":
            assert r["gap_share"] == 0
        if r["policy"] == "clairvoyant":
            assert r["gap_share"] == 1
        assert r["gap_share_lo"] <= r["gap_share"] + 1e-12 <= r["gap_share_hi"] + 2e-12
        assert r["within_budget"]
    v = study.verdict(rows)
    assert set(v["real"]) == {"0.3", "1.0", "3.0"}
    assert isinstance(v["data_supports_goal"], bool)
    ceiling = [r for r in real if r["policy"] == "paced_hindsight_signals" and r["multiple"] == 1.0][0]
    assert v["real"]["1.0"]["ceiling_gap_share"] == ceiling["gap_share"]
    assert v["data_supports_goal"] == all(v["real"][m]["ceiling_vs_paced_oracle_lo"] > 1 for m in ("1.0", "3.0"))
    result = {
        "signals_replay": {
            "settings": {
                "preset": "quick",
                "days": 90,
                "n_boot": 20,
                "n_documents": len(win),
                "n_changes": len(changes),
                "n_signals": len(signals),
                "true_signals": 0,
                "clean_documents": 3,
                "clean_changes": 5,
                "span_days": 90.0,
                "total_change_rate": len(changes) / 90.0,
                "multiples": list(study.MULTIPLES),
                "step": study.STEP,
                "epoch": study.EPOCH,
            },
            "rows": rows,
            "verdict": v,
            # two collections, 0.5 and 0.7: mean 0.6, sd 0.1 √2, standard error 0.1
            "simulated": [
                {"collection": j, "policy": "paced_oracle", "multiple": 1.0, "freshness_weighted": f}
                for j, f in enumerate((0.5, 0.7))
            ],
        }
    }
    result["signals_replay"]["settings"]["n_sim"] = 2
    html = study.render(result)
    assert "0.600 ± 0.100" in html and "paced_hindsight_signals" in html
    assert "recall thinned to 0.5" in html and "paced_index_signals" in html and "0/1 per run" in html
    assert "3 documents have a signal precision" in html
    s = study.summarize(result)
    assert s["kind"] == "finding" and "gap share at 1×" in s["key_number"]
    assert "known in hindsight" in s["verdict"]
    assert "signals_replay" in runner.STUDIES and "signals_replay" in runner._COST_HINT
