"""The convergence study: schema, the LLN α = 1 slope, and its helpers."""

import json
import math

import numpy as np
import pytest
from scipy.integrate import quad

from changerate_bayes.validation import Preset, Progress, convergence
from changerate_bayes.validation._fits import (
    fisher_information,
    folded_normal_mean,
    loglog_slope,
    mae_curve,
    recursion_moments,
)


def test_loglog_slope_exact_power_law():
    k = np.geomspace(100, 20000, 20)
    slope, intercept = loglog_slope(k, 3.0 * k**-0.5)
    assert slope == pytest.approx(-0.5, abs=1e-12)
    assert intercept == pytest.approx(math.log(3.0), abs=1e-12)


def test_mae_curve_marks_divergence():
    est = np.array([[1.0, np.inf], [3.0, 2.0]])
    assert mae_curve(est, 2.0).tolist() == [1.0, math.inf]


@pytest.mark.parametrize(("delta", "p"), [(5.0, 3.0), (500.0, 3.0), (0.2, 3.0)])
def test_fisher_information_matches_quadrature(delta, p):
    # E_τ[τ²/(e^{Δτ} − 1)], τ ~ Exp(p), by numerical integration
    ref = quad(lambda t: p * t * t * math.exp(-(p + delta) * t) / -math.expm1(-delta * t), 0, math.inf, limit=200)[0]
    assert fisher_information(delta, p) == pytest.approx(ref, rel=1e-8)


def test_recursion_moments_match_enumeration():
    # Two crawls of SAM (η = β = 1, ω = 0.5: η_0 = 1, η_1 = 1/2, ζ_1 = 1/4) from z_0 = 0.5:
    # enumerate the four (I_1, I_2) outcomes with their probabilities, μ = Δ/(Δ+p).
    delta, p, z0 = 5.0, 3.0, 0.5
    mu = delta / (delta + p)
    etas, zetas = np.array([[1.0], [0.5]]), np.array([[0.0], [0.25]])
    mean, var = recursion_moments(delta, p, etas, zetas, 2, initial=z0)
    outcomes = []
    for i1 in (0, 1):
        for i2 in (0, 1):
            z1 = z0 + 1.0 * (i1 * (z0 + p) - z0)
            z2 = z1 + 0.5 * (i2 * (z1 + p) - z1) + 0.25 * (z1 - z0)
            prob = (mu if i1 else 1 - mu) * (mu if i2 else 1 - mu)
            outcomes.append((prob, z1 - delta, z2 - delta))
    for j in (0, 1):  # error after j + 1 crawls
        m = sum(prob * errors[j] for prob, *errors in outcomes)
        v = sum(prob * errors[j] ** 2 for prob, *errors in outcomes) - m**2
        assert mean[j, 0] == pytest.approx(m, rel=1e-12)
        assert var[j, 0] == pytest.approx(v, rel=1e-12)


def test_folded_normal_mean():
    assert folded_normal_mean(np.array(0.0), np.array(1.0)) == pytest.approx(math.sqrt(2 / math.pi))
    assert folded_normal_mean(np.array(-3.0), np.array(0.0)) == 3.0
    # E|N(1, 4)| by quadrature
    ref = quad(lambda x: abs(x) * math.exp(-((x - 1) ** 2) / 8) / math.sqrt(8 * math.pi), -40, 40)[0]
    assert folded_normal_mean(np.array(1.0), np.array(4.0)) == pytest.approx(ref, rel=1e-9)


def test_sam_log_factor_explanation():
    # β = 1, ω = 1, a = 3/8: Re λ = 1/2 exactly; k^-1/2 (log k)^1/2 fitted over [100, 20000]
    grid = convergence.log_grid(100, 20000, 20)
    slope, text = convergence._sam_theory(2.0, 1.0, 1.0, 3 / 8, grid)
    k = grid.astype(float)
    assert slope == pytest.approx(loglog_slope(k, np.sqrt(np.log(k) / k))[0], abs=1e-12)
    assert -0.44 < slope < -0.42 and "log k" in text and "Re λ = ω/2 = 0.500" in text
    assert convergence._sam_theory(1.2, 0.6, 1.0, 3 / 8, grid) == (None, "")


@pytest.fixture(scope="module")
def quick_result():
    return convergence.run(Preset("quick"), seed=7, progress=Progress(quiet=True))


ROW_KEYS = {"estimator", "params", "change_rate", "crawl_rate", "slope", "ci_low", "ci_high", "theory_slope", "verdict"}
REGIME_KEYS = {"eta", "beta", "omega", "regime", "converged", "final_mae"}


@pytest.mark.slow
def test_quick_lln_slope_is_minus_one_half(quick_result):
    # Theorem 1 with α_k = 1: E|x_k − Δ| = O(k^-1/2): the quick preset's slope must lie
    # within 0.05 of −1/2. The tolerance is justified by the bootstrap CI over the R = 400
    # replications, whose half-width is < 0.025 (so 0.05 is more than 3 bootstrap SEs); a
    # flatter slope than that would contradict the theorem at these k.
    row = next(r for r in quick_result["convergence_rates"] if r["estimator"] == "lln" and r["params"]["alpha"] == "1")
    assert abs(row["slope"] + 0.5) <= 0.05
    assert (row["ci_high"] - row["ci_low"]) / 2 < 0.025
    assert row["ci_low"] <= row["slope"] <= row["ci_high"]
    assert row["verdict"].startswith("Theorem 1: consistent")


@pytest.mark.slow
def test_quick_study_schema_and_render(quick_result):
    assert set(quick_result) == set(convergence.KEYS)
    data = json.loads(json.dumps(quick_result, allow_nan=False))
    rows, regimes = data["convergence_rates"], data["sam_regimes"]
    assert {r["estimator"] for r in rows} == {"naive", "lln", "sa", "sam", "mle", "mm"}
    for r in rows:
        assert ROW_KEYS <= set(r)
        assert isinstance(r["verdict"], str) and r["verdict"]
        if r["slope"] is not None:
            assert r["ci_low"] <= r["ci_high"]
    for g in regimes:
        assert REGIME_KEYS <= set(g)
        assert isinstance(g["converged"], bool)
    # Theorem 3's regimes converge; η < β (ζ_k → −∞) races to infinity
    assert all(g["converged"] for g in regimes if g["regime"] != "invalid")
    assert all(not g["converged"] and g["final_mae"] is None for g in regimes if g["eta"] < g["beta"])
    # SAM with β = 1 at Re λ = 1/2: the verdict explains the log factor and gives its slope
    log_row = next(r for r in rows if r["estimator"] == "sam" and r["params"]["beta"] == 1.0)
    assert "log k" in log_row["verdict"] and log_row["theory_slope_over_fit"] == pytest.approx(-0.429, abs=0.005)
    assert log_row["verdict"].split("Measured: ")[1].startswith("consistent")
    # every regime's verdict names its setting; no project-internal wording
    html = convergence.render(quick_result)
    assert "η = 0.5, β = 0.6 in 100% of the runs" in html and "issue" not in html.lower()
    # α_k = k^0.9: the bias term keeps the slope flatter than −0.1 at these k, and the verdict says why
    k09 = next(r for r in rows if r["params"].get("alpha") == "k^0.9")
    assert k09["slope"] > -0.1 and "α_k/k" in k09["verdict"]
    # the Naive estimator converges to pΔ/(Δ+p), not Δ
    naive = next(r for r in rows if r["estimator"] == "naive")
    assert naive["mean_at_k_max"] == pytest.approx(naive["limit"], rel=0.01)
    assert html.count("<img") == 2 and "verdict" in html
