"""The scheduling_replay study's pieces on a small slice of the shipped documents."""

import math

import pytest

from changerate_bayes.validation import scheduling_replay as study


@pytest.mark.slow
def test_study_pieces_on_a_small_slice():
    changes, win, empty = study.ota_table(n_pages=12, days=90, seed=3)
    assert empty == 84  # documents whose first record is their last event
    assert len(win) == 12 and (win["end"] > win["start"]).all()
    rate = study._total_rate(changes, win)
    sizes = dict(n_boot=30, iterations=4, policies=study.study_policies("quick"))
    budgets, df = study._replay(changes, win, rate, step="6h", epoch="7D", sizes=sizes, seed=1)
    assert [round(b / rate, 12) for b in budgets] == [0.1, 0.3, 1.0, 3.0]
    assert set(study.study_policies("quick")) == set(df["policy"])
    # the gap from uniform (0) to the clairvoyant reference (1), at every budget and spend
    given = df[df["budget_source"] == "given"]
    assert (given.loc[given["policy"] == "uniform", "gap_share"] == 0).all()
    assert (given.loc[given["policy"] == "clairvoyant", "gap_share"] == 1).all()
    assert df["gap_share"].notna().all()
    assert (df["gap_share_lo"] <= df["gap_share"] + 1e-12).all() and (
        df["gap_share"] <= df["gap_share_hi"] + 1e-12
    ).all()
    assert set(study.study_policies("default")) == set(study.POLICY_NAMES) - set(study.SLOW)
    assert study.study_policies("quick") == study.study_policies("full")
    rows = study._records(df)
    assert all(not (isinstance(v, float) and not math.isfinite(v)) for r in rows for v in r.values())
    tchanges, twin = study.trace_table(days=20)
    assert (twin["end"] <= 20).all() and len(twin) == 12
    settings = {
        "preset": "quick",
        "n_documents": 12,
        "n_empty_windows": empty,
        "n_changes": len(changes),
        "total_change_rate": rate,
        "multiples": list(study.MULTIPLES),
        "budgets": budgets,
        "days": 90,
        "n_boot": 30,
        "iterations": 4,
        "step": "6h",
        "epoch": "7D",
        "n_traces": 12,
        "trace_days": 20,
        "trace_change_rate": rate,
        "trace_budgets": budgets,
        "trace_step": "6h",
        "trace_epoch": "7D",
    }
    res = {
        "scheduling_replay": {
            "settings": settings,
            "ota": rows,
            "traces": rows,
            "verdict": study._verdict(rows, budgets),
        }
    }
    s = study.summarize(res)
    assert set(s) == {"verdict", "key_number", "kind"} and s["kind"] in ("holds", "fails", "finding")
    assert s["verdict"].startswith("On 12 real documents")
    html = study.render(res)
    assert "hindsight-optimal" in html and "ODC-BY" in html and "clairvoyant" in html
    assert "share of the weighted-freshness gap" in html
    verdict = res["scheduling_replay"]["verdict"]
    assert "paced_oracle" in html and set(verdict["mean_vs_paced_oracle"]) == set(study.PACED)
    assert all(r["policy"] not in study.REFERENCES for r in verdict["best_by_budget"])
    for m in study.MULTIPLES:
        assert f"{m:g}×" in html
