"""The change rate with the last-modification date, and the Monte Carlo study of the error it saves."""

import math

import numpy as np
import pytest

from changerate_bayes.estimators import last_modified_rate


def _reference(changed, tau, age):
    # one page, from the definition: X changes, exposure T (ages of changed crawls, intervals of the others)
    x = sum(changed)
    n = len(changed)
    t = sum(a if c else s for c, s, a in zip(changed, tau, age))
    mle = x / t if x else 0.0
    if x == 0:
        cgm = 0.0
    elif x == n:
        cgm = (x - 1) / t
    else:
        cgm = (x - 1 - x / (n * math.log(1 - x / n))) / t
    return mle, cgm


def test_equals_the_definition_page_by_page_on_a_ragged_history():
    rng = np.random.default_rng(1)
    lengths = np.array([1, 3, 7, 2, 5, 4])
    n = lengths.sum()
    changed = (rng.random(n) < 0.5).astype(int)
    changed[:1] = 1  # a one-crawl page that changed: X = N = 1, so (N - 1)/T = 0
    changed[1:4] = 1  # X = N
    changed[11:13] = 0  # X = 0
    tau = rng.uniform(0.5, 3.0, n)
    age = np.where(changed == 1, tau * rng.random(n), np.nan)  # ages of unchanged crawls are not read
    mle = last_modified_rate(changed, tau, age, lengths=lengths, method="mle")
    cgm = last_modified_rate(changed, tau, age, lengths=lengths)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    for i, (s, k) in enumerate(zip(starts, lengths)):
        ref = _reference(changed[s:s + k], tau[s:s + k], age[s:s + k])
        assert mle[i] == pytest.approx(ref[0], rel=1e-14) and cgm[i] == pytest.approx(ref[1], rel=1e-14, abs=0)
    assert cgm[0] == 0.0 and cgm[3] == 0.0


def test_bad_input_is_named():
    one = np.ones(3)
    with pytest.raises(ValueError, match=r"`intervals` must be finite and > 0; got 0.0 at index 1"):
        last_modified_rate([1, 0, 1], [1.0, 0.0, 1.0], one)
    with pytest.raises(ValueError, match=r"`ages` of changed crawls must lie in \[0, interval\]; got 2.0"):
        last_modified_rate([1, 0, 1], one, [0.5, 0.5, 2.0])
    with pytest.raises(ValueError, match=r"`changed` must hold 0/1 values"):
        last_modified_rate([2, 0, 1], one, one)
    with pytest.raises(ValueError, match=r"`lengths` must be >= 1 and sum to 3 crawls"):
        last_modified_rate([1, 0, 1], one, one, lengths=[1, 1])
    with pytest.raises(ValueError, match=r"`method` must be 'cgm' or 'mle'; got 'x'"):
        last_modified_rate([1, 0, 1], one, one, method="x")


@pytest.mark.parametrize("lam_c", [0.3, 2.0])
def test_simulated_crawls_match_the_poisson_model(lam_c):
    from changerate_bayes._rng import replication_generators
    from validation.last_modified import simulate

    reps, n = 4000, 20
    changed, age = simulate(lam_c, n, replication_generators(5, reps))
    assert ((age >= 0) & (age < 1)).all() and (age[changed == 0] == 0).all()
    # P(change in an interval) = 1 - exp(-λc); the exposure min(age, 1) has mean (1 - exp(-λc))/λc,
    # so the pooled X / T estimates λc without bias; tolerances are 4 Monte Carlo standard errors
    p = 1 - math.exp(-lam_c)
    share = changed.mean()
    assert abs(share - p) < 4 * math.sqrt(p * (1 - p) / changed.size)
    exposure = np.where(changed == 1, age, 1.0).sum(axis=1)
    mean_t = exposure.mean()
    assert abs(mean_t - n * p / lam_c) < 4 * exposure.std(ddof=1) / math.sqrt(reps)


def test_quick_study_reports_every_scenario_with_standard_errors():
    from validation import last_modified as L
    from validation._preset import Preset

    lines = []
    result = L.run(Preset("quick"), seed=3, progress=lines.append)
    rows = result["last_modified"]["rows"]
    assert len(rows) == len(L.RATES) * len(L.CRAWLS) * len(L.ESTIMATORS) and len(lines) == 8
    for r in rows:
        assert r["bias_se"] > 0 and r["rmse_se"] > 0 and r["replications"] <= 2000
        if r["estimator"] == "lm_cgm":  # nearly unbiased: within 4 Monte Carlo standard errors (+1% for N = 10)
            assert abs(r["bias"]) < 4 * r["bias_se"] + 0.01
    ratios = {(r["rate_per_interval"], r["crawls"]): r["ratio"] for r in L.rmse_ratios(result)}
    assert ratios[(5.0, 50)] < 0.9  # where change/no-change saturates, the date saves error
    html = L.render(result)
    assert "lm_cgm" in html and "RMSE of Cho" in html
