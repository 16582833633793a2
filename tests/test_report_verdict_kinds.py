"""Verdict kinds and key numbers of the report agree: checks on simulated data are checks, findings on
real data are findings, a failing check shows in its study's key number, a zero Monte Carlo p-value is < 1/N."""

import pytest

from changerate_bayes.report import format_pvalue, section_outcome, summary_row, verdict_boxes


def test_a_zero_monte_carlo_pvalue_prints_as_below_one_over_n():
    assert format_pvalue(0.0, n_draws=2000) == "< 1/2000"
    assert format_pvalue(0.0) == "< 1e-4" and format_pvalue(0.5, n_draws=2000) == "0.5"


def test_predictive_check_on_a_real_trace_is_a_finding_and_on_a_simulated_page_a_check():
    from changerate_bayes.validation.calibration import ppc_kind, ppc_text

    assert ppc_kind("trace wikipedia_x: 900 revisions over 1000 h", False) == "finding"
    assert ppc_kind("trace wikipedia_x: 900 revisions over 1000 h", True) == "finding"
    assert ppc_kind("simulated Poisson page: Δ = 1/h, p = 1/h, k = 400", False) == "fails"
    assert ppc_kind("simulated Poisson page: Δ = 1/h, p = 1/h, k = 400", True) == "holds"
    assert ppc_text({"ppp": 0.0, "n_draws": 2000}) == "p < 1/2000"
    assert ppc_text({"ppp": 0.25, "n_draws": 2000}) == "p = 0.250"


def _calibration_result(sim_ppp, trace_ppp):
    bins = [{"tau_low": 0.1, "tau_high": 1.0, "n": 10, "observed": 0.5, "predicted": 0.5, "inside": True}]
    return {
        "calibration": {
            "settings": {"uniformity_alpha": 0.01},
            "sbc": [
                {"method": "grid", "ranks": {"pvalue": 0.5}, "coverage": [{"pvalue": 0.3}, {"pvalue": 0.7}]},
            ],
            "ppc": [
                {
                    "source": "simulated Poisson page",
                    "checks": {"grid": {"bins": bins, "ppp": sim_ppp, "n_draws": 2000}},
                },
                {
                    "source": "trace t: 10 revisions",
                    "checks": {"grid": {"bins": bins, "ppp": trace_ppp, "n_draws": 2000}},
                },
            ],
        }
    }


def test_calibration_row_agrees_with_its_boxes():
    from changerate_bayes.validation.calibration import summarize

    # a misfit on a real trace: a finding, the row holds and its key number counts the checks
    row = summarize(_calibration_result(0.4, 0.0))
    assert row["kind"] == "holds" and row["key_number"] == "3 / 3 checks pass at 0.01"
    # a misfit on the simulated page: a failing check, named in the key number
    row = summarize(_calibration_result(0.0, 0.4))
    assert row["kind"] == "fails" and "simulated page fails (grid p < 1/2000)" in row["key_number"]


def test_prequential_key_number_shows_a_failing_own_model_coverage(monkeypatch):
    from changerate_bayes.validation import prequential

    monkeypatch.setattr(prequential, "verdict", lambda result: ("The dynamic posterior wins.", None))
    cov = [
        {"which": "filtered", "level": 0.9, "crawl": 60, "coverage": 0.85, "ok": False},
        {"which": "filtered", "level": 0.9, "crawl": 200, "coverage": 0.9, "ok": True},
    ]
    result = {
        "prequential": {"traces": [{"winner": "dynamic"}] * 24, "ota": {"winner": "mle"}},
        "dynamic_calibration": {"kinds": [{"kind": "random_walk", "coverage": cov}]},
    }
    row = prequential.summarize(result)
    assert row["kind"] == "fails"
    assert row["key_number"].startswith("own-model coverage fails: filtered 90% bands cover 0.85 at crawl 60")
    assert row["key_number"].endswith("dynamic posterior best on 24 of 25")
    cov[0]["ok"] = True
    row = prequential.summarize(result)
    assert row == {
        "verdict": "The dynamic posterior wins.",
        "key_number": "dynamic posterior best on 24 of 25",
        "kind": "finding",
    }


@pytest.mark.parametrize(("ratios", "kind"), [((0.5, 0.9), "holds"), ((0.5, 1.2), "mixed"), ((1.1, 1.2), "fails")])
def test_last_modified_is_a_check_on_simulated_pages(ratios, kind):
    from changerate_bayes.validation.last_modified import CRAWLS, RATES, lower_rmse_kind, render, summarize

    cells = [(lc, n) for lc in RATES for n in CRAWLS]
    ratio = {c: ratios[i % 2] for i, c in enumerate(cells)}
    rows = []
    for lc, n in cells:
        for est, rmse in (("regular", 1.0), ("lm_cgm", ratio[(lc, n)])):
            rows.append(
                {
                    "rate_per_interval": lc,
                    "crawls": n,
                    "estimator": est,
                    "rmse": rmse,
                    "rmse_se": 0.01,
                    "bias": 0.0,
                    "bias_se": 0.01,
                    "infinite_share": 0.0,
                }
            )
    result = {"last_modified": {"replications": 10, "rows": rows}}
    assert lower_rmse_kind([{"ratio": r} for r in ratio.values()]) == kind
    assert summarize(result)["kind"] == kind and "finding" not in verdict_boxes(render(result))
    assert section_outcome(summarize(result), render(result))["kind"] == kind


def test_the_pitfalls_of_gof_size_are_checks():
    from changerate_bayes.validation.gof_size import pitfall_kind

    conservative = {"rejection_rate": 0.001, "interval_low": 0.03, "interval_high": 0.07}
    nominal = {"rejection_rate": 0.05, "interval_low": 0.03, "interval_high": 0.07}
    liberal = {"rejection_rate": 0.4, "interval_low": 0.03, "interval_high": 0.07}
    assert pitfall_kind([conservative, conservative], "below") == "holds"
    assert pitfall_kind([conservative, nominal], "below") == "fails"
    assert pitfall_kind([liberal], "above") == "holds" and pitfall_kind([nominal], "above") == "fails"
    assert summary_row(verdict="x", key_number="1", kind=pitfall_kind([liberal], "above"))["kind"] == "holds"


def _replay_result(fresh):
    """A scheduling_replay result: weighted freshness of index_mean and uniform at 0.1, 0.3, 1 and 3×."""
    budgets = [0.1, 0.3, 1.0, 3.0]
    rows = [
        {"policy": p, "budget": b, "freshness_weighted": fresh[p][i]}
        for p in ("index_mean", "uniform")
        for i, b in enumerate(budgets)
    ]
    verdict = {
        "best": "index_thompson",
        "mean_vs_oracle": {"index_thompson": 1.002},
        "vs_schedules": {"nutch": {"gain": 0.01, "spent": 1.7}},
        "best_by_budget": [],
    }
    settings = {"multiples": budgets, "budgets": budgets, "n_documents": 100}
    return {"scheduling_replay": {"settings": settings, "ota": rows, "verdict": verdict}}


def test_the_replay_recommends_for_a_schedule_what_the_command_line_does():
    from changerate_bayes.crawllog.allocate import RECOMMENDED_POLICY
    from changerate_bayes.validation.scheduling_replay import _fixed_schedule_words, fixed_schedule_check, summarize

    assert RECOMMENDED_POLICY == "auto"
    # the full replay's pattern: round robin fresher below the total change rate, index_mean from it up
    result = _replay_result({"index_mean": [0.40, 0.59, 0.81, 0.92], "uniform": [0.41, 0.61, 0.80, 0.91]})
    check = fixed_schedule_check(result)
    assert [c["auto"] for c in check] == ["uniform", "uniform", "index_mean", "index_mean"]
    assert all(c["agrees"] for c in check)
    row = summarize(result)
    assert row["key_number"].startswith("schedule: auto, fresher of the fixed tables at 4 of 4 budgets")
    assert 'use the allocation "auto"' in row["verdict"]
    words = _fixed_schedule_words(check)
    assert "what `changerate-bayes estimate --budget` and `schedule` do" in words and "should use" not in words
    # a run where index_mean is fresher everywhere says where auto's choice is not the fresher one
    check = fixed_schedule_check(_replay_result({"index_mean": [0.5] * 4, "uniform": [0.4] * 4}))
    assert [c["agrees"] for c in check] == [False, False, True, True]
    assert (
        "at 2 of 4 budgets" in summarize(_replay_result({"index_mean": [0.5] * 4, "uniform": [0.4] * 4}))["key_number"]
    )
