"""The politeness study: the heuristics it compares, its formulas, and its run in the report."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

import changerate_bayes.validation.politeness as study
from changerate_bayes.scheduling import capped_crawl_rates, optimal_crawl_rates
from changerate_bayes.validation import Progress, run_validation

OBJECTIVES = ("binary_freshness", "harmonic_staleness")

# --- formulas ---


def test_freshness_formulas_against_hand_values():
    # p = 2, Δ = 1: Poisson crawls 2/3; every 1/2 day: (1 - e^{-1/2}) × 2; staleness ln(3/2)
    assert study.poisson_freshness([2.0], [1.0])[0] == pytest.approx(2 / 3, rel=1e-15)
    assert study.periodic_freshness([2.0], [1.0])[0] == pytest.approx(0.7869386805747332, rel=1e-15)
    assert study.periodic_freshness([1.0], [1.0])[0] == pytest.approx(1 - math.exp(-1), rel=1e-15)
    assert study.harmonic_staleness([2.0], [1.0])[0] == pytest.approx(math.log(1.5), rel=1e-15)
    # never crawled: stale (infinitely for harmonic staleness); never changes: fresh
    np.testing.assert_array_equal(study.periodic_freshness([0.0, 0.0, 3.0], [1.0, 0.0, 0.0]), [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(study.poisson_freshness([0.0, 0.0, 3.0], [1.0, 0.0, 0.0]), [0.0, 1.0, 1.0])
    np.testing.assert_array_equal(study.harmonic_staleness([0.0, 0.0, 3.0], [1.0, 0.0, 0.0]), [np.inf, 0.0, 0.0])


@pytest.mark.parametrize(("p", "d"), [(0.3, 2.0), (5.0, 0.1), (1e-3, 1e-6), (1.0, 40.0)])
def test_periodic_freshness_is_the_time_average_over_one_interval(p, d):
    # crawled at 0, 1/p, 2/p, ...: fresh at time t after a crawl with probability e^{-Δ t}
    interval = 1.0 / p
    average = integrate.quad(lambda t: math.exp(-d * t), 0.0, interval, epsabs=0, epsrel=1e-13)[0] / interval
    assert study.periodic_freshness([p], [d])[0] == pytest.approx(average, rel=1e-12)


def test_host_sizes_sum_to_the_pages_and_respect_the_largest_size():
    sizes = study.host_sizes(3, 20_000, 1.7, 500)
    assert sizes.sum() == 20_000 and sizes.min() >= 1 and sizes.max() <= 500
    assert np.median(sizes) <= 3  # heavy tailed: most hosts are tiny (P(n = 1) = 1/ζ(1.7) ≈ 0.49)
    with pytest.raises(ValueError, match="max_size"):
        study.host_sizes(3, 100, 1.7, 1)


# --- heuristics on small random instances ---


@st.composite
def instances(draw):
    n_hosts = draw(st.integers(1, 5))
    sizes = np.array(draw(st.lists(st.integers(1, 6), min_size=n_hosts, max_size=n_hosts)))
    n = int(sizes.sum())
    floats = st.floats(1e-2, 1e2)
    d = np.array(draw(st.lists(floats, min_size=n, max_size=n)))
    caps = np.array(draw(st.lists(floats, min_size=n_hosts, max_size=n_hosts)))
    budget = draw(st.floats(1e-1, 5e2))
    return d, np.repeat(np.arange(n_hosts), sizes), caps, budget, draw(st.sampled_from(OBJECTIVES))


def _host_spend_loop(p, codes, n_hosts):
    return np.array([sum(p[i] for i in range(p.size) if codes[i] == h) for h in range(n_hosts)])


@settings(max_examples=60, deadline=None)
@given(instances())
def test_queue_delay_spends_each_host_min_of_cap_and_its_spend(inst):
    d, codes, caps, budget, objective = inst
    free = optimal_crawl_rates(d, 1.0, budget, objective=objective)
    p = study.queue_delayed_rates(free, codes, caps)
    spend_free = _host_spend_loop(free, codes, caps.size)
    spend = _host_spend_loop(p, codes, caps.size)
    np.testing.assert_allclose(spend, np.minimum(caps, spend_free), rtol=1e-12)
    assert np.all(spend <= caps * (1 + 1e-12))
    assert p.sum() == pytest.approx(np.minimum(caps, spend_free).sum(), rel=1e-12)
    # a host within its cap keeps its rates; one over it keeps their proportions
    for h in range(caps.size):
        on = codes == h
        if spend_free[h] <= caps[h]:
            np.testing.assert_array_equal(p[on], free[on])
        else:
            np.testing.assert_allclose(p[on] * spend_free[h], free[on] * caps[h], rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(instances())
def test_saturate_and_recurse_keeps_caps_and_spends_what_they_allow(inst):
    d, codes, caps, budget, objective = inst
    p, solves = study.saturate_and_recurse_rates(d, 1.0, codes, caps, budget, objective)
    spend = _host_spend_loop(p, codes, caps.size)
    assert np.all(p >= 0) and np.all(spend <= caps * (1 + 1e-12))
    assert 1 <= solves <= caps.size + 1
    # the whole budget whenever the hosts have room for it, else every host at its cap
    assert p.sum() == pytest.approx(min(budget, caps.sum()), rel=1e-10)
    if caps.sum() > budget * (1 + 1e-9):
        assert p.sum() == pytest.approx(budget, rel=1e-10)


@settings(max_examples=60, deadline=None)
@given(instances())
def test_uniform_within_caps_is_the_optimum_of_the_symmetric_problem(inst):
    d, codes, caps, budget, _ = inst
    p = study.uniform_capped_rates(codes, caps, budget)
    spend = _host_spend_loop(p, codes, caps.size)
    assert np.all(spend <= caps * (1 + 1e-12))
    assert p.sum() == pytest.approx(min(budget, caps.sum()), rel=1e-10)
    # equal rates on the hosts below their caps: the unique optimum of a problem in which
    # every page is the same (equal Δ and w), solved by the exact capped solver
    same = capped_crawl_rates(
        np.ones(codes.size),
        1.0,
        budget,
        objective="harmonic_staleness",
        hosts=codes,
        host_budgets=dict(enumerate(caps.tolist())),
    ).rates
    np.testing.assert_allclose(p, same, rtol=1e-9)


@settings(max_examples=80, deadline=None)
@given(instances())
def test_the_exact_optimum_is_at_least_as_good_as_every_heuristic(inst):
    d, codes, caps, budget, objective = inst
    rows = {r["method"]: r for r in study.compare(d, codes, caps, budget, objective)}
    exact = rows["exact"]
    for method in study.HEURISTICS:
        assert rows[method]["loss"] >= -1e-10 * abs(exact["value"]) - 1e-14, method
        assert rows[method]["max_spend_over_cap"] <= 1 + 1e-12
        assert rows[method]["unspent"] >= -1e-12
    assert exact["max_spend_over_cap"] <= 1 + 1e-12 and exact["loss"] == 0
    # without caps no cap-respecting allocation does better
    assert rows["no_caps"]["loss"] <= 1e-10 * abs(exact["value"]) + 1e-14
    # the loss is split over the pages of hosts at cap and the others
    for r in rows.values():
        assert r["loss_on_capped"] + r["loss_elsewhere"] == pytest.approx(r["loss"], rel=1e-9, abs=1e-15)


# --- the study in the report ---

TINY = {"pages": 3000, "max_host_fraction": 0.1, "budget_per_page": 200.0}


def test_the_study_runs_and_renders_in_the_report(tmp_path, monkeypatch):
    monkeypatch.setattr(study, "_sizes", lambda preset: TINY)
    path = run_validation(tmp_path, preset="quick", seed=3, only=["politeness"], progress=Progress(quiet=True))
    html = path.read_text()
    assert study.TITLE in html and "saturate and recurse" in html and "<img" in html
    data = json.loads((tmp_path / "results.json").read_text())
    res = data["politeness"]
    assert res["population"]["pages"] == 3000 and res["population"]["max_host_size"] <= 300
    rows = res["rows"]
    assert len(rows) == len(OBJECTIVES) * len(study.CAPS) * (len(study.METHODS) + 1)
    ok, worst_margin, _ = study._check(rows)
    assert ok and worst_margin >= -1e-9
    # caps bind at Nutch's delay on this population: 17,280 per day < 200 per page × the largest host
    nutch = [r for r in rows if r["caps"] == study.CAPS[1][0] and r["method"] == "exact"]
    assert all(r["hosts_at_cap"] >= 1 for r in nutch)
    summary = study.summarize(data)
    assert summary["kind"] == "holds"
    # the claim is for Poisson crawls; the fixed-interval comparisons are reported in the summary and the verdict
    wins = study._periodic_wins(rows)
    n_compared = len(OBJECTIVES) * len(study.CAPS) * len(study.HEURISTICS)
    count = f"in {len(wins)} of {n_compared} comparisons" if wins else f"in all {n_compared} comparisons"
    assert "Poisson crawl times" in summary["verdict"] and count in summary["verdict"]
    verdict = html[html.index('class="verdict') :]
    assert count in verdict[: verdict.index("</p>")]
    # the lower bound on queue delay's loss on the hosts not at cap is a true lower bound
    shares = [r["loss_elsewhere"] / r["loss"] for r in rows if r["method"] == "queue_delay" and r["loss"] > 0]
    bound = int(html.split("on the hosts not at cap it loses at least ")[1].split("%")[0])
    assert bound <= 100 * min(shares) < bound + 1
    # no per-page cost printed as a zero percentage; the hosts counted for no caps are those over their cap
    assert "(0.00%" not in html and "count the hosts over their cap" in html
    assert "median of 3 calls each" in html


# --- the text of the report ---


def test_percentages_keep_small_values_and_lower_bounds_true():
    assert study._pct(0.0123) == "1.23%"
    assert study._pct(3.5e-5) == "0.0035%"  # not "0.00%"
    assert study._pct(-4.2e-6) == "-0.00042%"
    assert study._pct(0.0) == "0%"
    # a lower bound is rounded down: 0.0135/0.04735 = 28.5% is "at least 28%", not 29%
    assert study._floor_pct(0.0135 / 0.04735) == "28%"
    assert study._floor_pct(0.2999) == "29%" and study._floor_pct(0.3) == "30%"


def test_timed_calls_the_solver_repeats_times_and_returns_its_result():
    calls = []
    out, seconds = study._timed(lambda: calls.append(1) or len(calls), 3)
    assert len(calls) == 3 and out == 3 and seconds >= 0.0


def _row(objective, caps, method, periodic):
    return {"objective": objective, "caps": caps, "method": method, "periodic_freshness": periodic}


def test_fixed_interval_wins_are_counted_and_their_largest_margin_reported():
    # two settings; saturate and recurse beats exact under fixed intervals in one of them by 2.5e-4
    rows = []
    for caps, sat in (("a", 0.50025), ("b", 0.4)):
        rows += [
            _row("binary_freshness", caps, "exact", 0.5),
            _row("binary_freshness", caps, "queue_delay", 0.45),
            _row("binary_freshness", caps, "saturate_recurse", sat),
            _row("binary_freshness", caps, "uniform", 0.3),
            _row("binary_freshness", caps, "no_caps", 0.6),  # breaks the caps: not a heuristic
        ]
    wins = study._periodic_wins(rows)
    assert [(r["caps"], r["method"]) for r, _ in wins] == [("a", "saturate_recurse")]
    assert wins[0][1] == pytest.approx(2.5e-4, rel=1e-9)
    text = study._periodic_summary(rows, brief=True)
    assert (
        text
        == "under fixed-interval crawls saturate and recurse is fresher than exact in 1 of 6 comparisons, by at most 2.5e-04"
    )
    rows[2]["periodic_freshness"] = 0.49
    assert "in all 6 comparisons" in study._periodic_summary(rows)
