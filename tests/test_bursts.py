"""The burst model (two-state MMPP): transition matrices, exact filter, fit, learner interface."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
from _helpers import replay_learners
from hypothesis import given, settings
from hypothesis import strategies as st

from changerate_bayes import BurstFilter, BurstParameters, burst_predictive, fit_bursts, simulate_burst_pages
from changerate_bayes.bursts._kernels import transition

PARAMS = [
    (0.1, 3.0, 0.2, 0.5),
    (0.0, 2.0, 0.01, 1.0),
    (1.0, 1.0, 0.3, 0.3),
    (0.5, 0.5, 0.0, 0.0),
    (1e-3, 10.0, 1e-4, 2.0),
    (0.1, 2.0, 0.0, 0.4),
    (0.2, 0.7, 5.0, 3.0),
]
TAUS = [1e-9, 1e-3, 0.05, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0]


def _reference(l0, l1, q01, q10, tau):
    """N = expm((Q − Λ)τ) and C = expm(Qτ) − N from the definition (scipy's Padé expm)."""
    q = np.array([[-q01, q01], [q10, -q10]])
    lam = np.diag([l0, l1])
    n = sl.expm((q - lam) * tau)
    return n, sl.expm(q * tau) - n


def _matrices(l0, l1, q01, q10, tau):
    r = transition(l0, l1, q01, q10, tau)
    return np.exp(r[4]) * np.array(r[:4]).reshape(2, 2), np.array(r[5:9]).reshape(2, 2), np.array(r[9:])


@pytest.mark.parametrize("p", PARAMS)
def test_transition_matrices_equal_matrix_exponentials(p):
    for tau in TAUS:
        n, c, pc = _matrices(*p, tau)
        n_ref, c_ref = _reference(*p, tau)
        np.testing.assert_allclose(n, n_ref, rtol=0, atol=1e-13)
        np.testing.assert_allclose(c, c_ref, rtol=0, atol=1e-13)
        # P(change | start state) is C·1 = 1 − N·1
        np.testing.assert_allclose(pc, c_ref.sum(axis=1), rtol=0, atol=1e-13)


def test_change_probability_keeps_relative_precision_at_tiny_intervals():
    # to first order, P(change in τ | state i) = λ_i τ (hand derivation: N = I + (Q − Λ)τ + O(τ²))
    for tau in (1e-300, 1e-200, 1e-30, 1e-12):
        _, c, pc = _matrices(0.1, 3.0, 0.2, 0.5, tau)
        np.testing.assert_allclose(pc, [0.1 * tau, 3.0 * tau], rtol=1e-9)
        np.testing.assert_allclose(np.diag(c), [0.1 * tau, 3.0 * tau], rtol=1e-9)


def test_poisson_limit_is_exact():
    lam = 0.37
    p = BurstParameters(lam, lam, 0.2, 0.9)
    f = BurstFilter(4, params=p)
    t = np.array([1e-250, 1e-6, 2.5, 40.0])
    np.testing.assert_allclose(f.prob_change_within(t), -np.expm1(-lam * t), rtol=1e-13)
    f.update([1, 0, 1, 0], [0.5, 3.0, 7.0, 1e-3])
    np.testing.assert_allclose(f.prob_change_within(t), -np.expm1(-lam * t), rtol=1e-13)
    # the likelihood is the Poisson one: Σ log P(I | τ)
    pred = burst_predictive(np.array([1, 0, 1, 1]), np.array([0.5, 3.0, 7.0, 1e-3]), params=p)
    expect = np.log(-np.expm1(-lam * 0.5)) - lam * 3.0 + np.log(-np.expm1(-lam * 7.0)) + np.log(-np.expm1(-lam * 1e-3))
    np.testing.assert_allclose(pred.log_likelihood, expect, rtol=1e-12)


def test_huge_intervals_neither_underflow_nor_overflow():
    p = BurstParameters(0.01, 1.0, 0.05, 0.5)
    pred = burst_predictive(np.array([0, 0, 1]), np.array([1e6, 1e8, 1e9]), params=p)
    assert np.all(np.isfinite(pred.log_likelihood))
    # no change in 1e6 h: the log likelihood is at least −λ0·τ (quiet all along) minus log P(quiet)
    assert pred.log_likelihood < -0.01 * 1e6 * 0.99
    assert pred.change_probability[1] == 1.0


def test_likelihood_equals_product_of_matrix_exponentials():
    # p(I_1..I_K) = π Π_k M_{I_k}(τ_k) 1 with M_0 = expm((Q − Λ)τ), M_1 = expm(Qτ) − M_0
    rng = np.random.default_rng(3)
    p = BurstParameters(0.05, 1.5, 0.1, 0.4)
    changed = rng.integers(0, 2, size=(5, 12))
    tau = rng.exponential(2.0, size=(5, 12))
    pred = burst_predictive(changed, tau, params=p)
    pi = np.array([1 - p.busy_probability, p.busy_probability])
    for i in range(5):
        v = pi.copy()
        probs = []
        for k in range(12):
            n, c = _reference(*p.as_tuple(), tau[i, k])
            probs.append(v @ c.sum(axis=1) / v.sum())
            v = v @ (c if changed[i, k] else n)
        np.testing.assert_allclose(pred.log_likelihood[i], np.log(v.sum()), rtol=1e-10)
        np.testing.assert_allclose(pred.change_probability[i], probs, rtol=1e-10)


def test_filter_matches_simulation():
    # P(change in τ) from the stationary start, and after a first crawl that saw a change,
    # against the frequencies of exactly simulated pages (4 binomial standard errors)
    p = BurstParameters(0.05, 2.0, 0.1, 0.5)
    n, tau = 40_000, 1.5
    sim = simulate_burst_pages(p, n, 2, crawl_interval=tau, regular=True, rng=11)
    f = BurstFilter(n, params=p)
    p1 = f.prob_change_within(np.full(n, tau))[0]
    freq1 = sim.changed[:, 0].mean()
    assert abs(freq1 - p1) < 4 * np.sqrt(p1 * (1 - p1) / n)
    f.update(sim.changed[:, 0], np.full(n, tau))
    pred = f.prob_change_within(np.full(n, tau))
    for seen in (0, 1):
        rows = sim.changed[:, 0] == seen
        p2 = pred[rows][0]
        np.testing.assert_allclose(pred[rows], p2)
        k = rows.sum()
        assert abs(sim.changed[rows, 1].mean() - p2) < 4 * np.sqrt(p2 * (1 - p2) / k)
    assert pred[sim.changed[:, 0] == 1][0] > pred[sim.changed[:, 0] == 0][0]  # bursts: a change begets changes


def test_streaming_filter_equals_batch_after_every_crawl():
    p = BurstParameters(0.05, 2.0, 0.1, 0.5)
    sim = simulate_burst_pages(p, 30, 40, rng=2)
    mask = np.random.default_rng(0).random((30, 40)) < 0.8
    scales = (0.5, 1.0, 2.0)
    # padded histories: each page's crawls in order, left-aligned
    order = np.argsort(~mask, axis=1, kind="stable")
    rows = np.arange(30)[:, None]
    c_pad, t_pad, m_pad = sim.changed[rows, order], sim.intervals[rows, order], mask[rows, order]
    batch = burst_predictive(c_pad, t_pad, m_pad, params=p, scales=scales)
    f = BurstFilter(30, params=p, scales=scales)
    pos = np.zeros(30, dtype=int)
    for j in range(40):
        m = mask[:, j]
        pred = f.prob_change_within(sim.intervals[:, j])
        np.testing.assert_allclose(pred[m], batch.change_probability[np.flatnonzero(m), pos[m]], rtol=1e-12, atol=1e-15)
        f.update(sim.changed[:, j], sim.intervals[:, j], m)
        pos += m
    lev = np.logaddexp.reduce(f.log_evidence_, axis=1)
    np.testing.assert_allclose(lev, batch.log_likelihood, rtol=1e-12)


def test_masked_pages_are_untouched_and_units_scale():
    p = BurstParameters(0.02, 1.0, 0.05, 0.3)
    f = BurstFilter(3, params=p)
    before = f.alpha_.copy()
    f.update([1, 1, 0], [2.0, np.nan, 1.0], [True, False, True])  # the masked-out NaN is ignored
    np.testing.assert_array_equal(f.alpha_[1], before[1])
    assert f.n_updates_.tolist() == [1, 0, 1]
    # per-hour rates with intervals in hours = per-day rates with intervals in days
    g = BurstFilter(3, params=p.scaled(24.0))
    g.update([1, 1, 0], [2.0 / 24, 1.0, 1.0 / 24], [True, False, True])
    np.testing.assert_allclose(
        g.prob_change_within(np.array([0.1, 0.2, 0.3])), f.prob_change_within(np.array([2.4, 4.8, 7.2])), rtol=1e-12
    )
    np.testing.assert_allclose(g.rate, 24.0 * f.rate, rtol=1e-12)
    # time_scale divides the rates
    h = BurstFilter(3, params=p, time_scale=np.array([1.0, 2.0, 4.0]))
    np.testing.assert_allclose(h.rate, p.mean_rate / np.array([1.0, 2.0, 4.0]), rtol=1e-12)


def test_learner_interface():
    p = BurstParameters(0.02, 1.0, 0.05, 0.3)
    f = BurstFilter(1000, params=p, scales=(0.5, 2.0))
    f.update(np.arange(1000) % 2, np.full(1000, 3.0))
    rate = f.rate
    assert rate.shape == (1000,) and np.all(np.isfinite(rate)) and np.all(rate >= 0)
    s = f.sample(np.random.default_rng(0))
    assert s.shape == (1000,)
    assert set(np.round(np.unique(s), 12)) <= {0.01, 0.04, 0.5, 2.0}
    # sampling is from the posterior: its mean is the posterior mean rate (4 standard errors)
    draws = np.array([f.sample(np.random.default_rng(i))[:2] for i in range(4000)])
    sd = draws.std(axis=0) / np.sqrt(4000)
    assert np.all(np.abs(draws.mean(axis=0) - rate[:2]) < 4 * sd)
    np.testing.assert_array_equal(f.sample(5), f.sample(5))
    assert f.prob_change_within(np.zeros(1000)).max() == 0.0
    assert f.prob_change_within(2.0).shape == (1000,)
    assert f.prob_change_within(np.ones((1000, 3))).shape == (1000, 3)


@settings(max_examples=40, deadline=None)
@given(
    l0=st.floats(0.0, 5.0),
    extra=st.floats(0.0, 20.0),
    q01=st.floats(0.0, 3.0),
    q10=st.floats(0.0, 3.0),
    hist=st.lists(st.tuples(st.booleans(), st.floats(1e-6, 50.0)), min_size=0, max_size=6),
    ts=st.lists(st.floats(0.0, 1e4), min_size=2, max_size=8),
)
def test_predictive_is_a_probability_nondecreasing_in_t(l0, extra, q01, q10, hist, ts):
    if l0 + extra == 0.0 and q01 == 0.0 and q10 == 0.0:  # no change, no switch: refused
        with pytest.raises(ValueError, match="are all 0"):
            BurstParameters(l0, l0 + extra, q01, q10)
        return
    p = BurstParameters(l0, l0 + extra, q01, q10)
    f = BurstFilter(1, params=p, scales=(0.3, 1.0))
    for changed, tau in hist:
        try:
            f.update([changed], [tau])
        except ValueError:  # a change seen with λ0 = λ1 = 0 is impossible: said, not hidden
            assert l0 + extra == 0.0 and changed
            return
    t = np.sort(np.array(ts))
    pr = f.prob_change_within(t[None, :])[0]
    assert np.all((pr >= 0) & (pr <= 1))
    assert np.all(np.diff(pr) >= -1e-12)


def test_fit_recovers_parameters_within_standard_errors():
    true = BurstParameters(0.03, 1.5, 0.08, 0.4)
    sim = simulate_burst_pages(true, 150, 150, crawl_interval=1.0, rng=7)
    fit = fit_bursts(sim.changed, sim.intervals)
    x_true = np.log([true.quiet_rate, true.busy_rate - true.quiet_rate, true.to_busy, true.to_quiet])
    p = fit.params
    x_hat = np.log([p.quiet_rate, p.busy_rate - p.quiet_rate, p.to_busy, p.to_quiet])
    assert fit.converged and np.all(np.isfinite(fit.standard_errors))
    # asymptotic normality of the MLE: each log-rate within 4 standard errors
    assert np.all(np.abs(x_hat - x_true) < 4 * fit.standard_errors), (x_hat, x_true, fit.standard_errors)
    # and the fitted parameters predict at least as well, on the data, as the true ones
    assert fit.log_likelihood >= burst_predictive(sim.changed, sim.intervals, params=true).log_likelihood.sum() - 1e-6


def test_bad_inputs():
    p = BurstParameters(0.1, 1.0, 0.1, 0.1)
    with pytest.raises(ValueError, match="busy_rate"):
        BurstParameters(1.0, 0.5, 0.1, 0.1)
    with pytest.raises(ValueError, match="to_busy"):
        BurstParameters(0.1, 1.0, -0.1, 0.1)
    with pytest.raises(TypeError, match="quiet_rate"):
        BurstParameters("a", 1.0, 0.1, 0.1)
    with pytest.raises(TypeError, match="params"):
        BurstFilter(2, params=(0.1, 1.0, 0.1, 0.1))
    with pytest.raises(ValueError, match="n_pages"):
        BurstFilter(0, params=p)
    with pytest.raises(ValueError, match="scales"):
        BurstFilter(2, params=p, scales=(1.0, 1.0))
    f = BurstFilter(2, params=p)
    with pytest.raises(ValueError, match="interval"):
        f.update([1, 0], [1.0, 0.0])
    with pytest.raises(ValueError, match="changed"):
        f.update([2, 0], [1.0, 1.0])
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        f.update([1, 0, 1], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="elapsed"):
        f.prob_change_within(np.array([1.0, -1.0]))
    with pytest.raises(ValueError, match="elapsed"):
        f.prob_change_within(np.ones(3))
    with pytest.raises(ValueError, match="probability 0"):
        BurstFilter(1, params=BurstParameters(0.0, 0.0, 0.1, 0.1)).update([1], [1.0])
    with pytest.raises(ValueError, match="intervals"):
        burst_predictive(np.array([1, 0]), np.array([1.0, -1.0]), params=p)
    with pytest.raises(ValueError, match="mask"):
        fit_bursts(np.array([[1, 0]]), np.ones((1, 2)), np.zeros((1, 2), dtype=bool))


def test_plugs_into_the_replay_as_a_learner():
    import pandas as pd

    params = BurstParameters(0.01, 1.0, 0.05, 0.5).scaled(24.0)  # per hour -> per day (the replay's unit)
    changes = pd.DataFrame({"page": ["a", "a", "a", "b"], "timestamp": [1.5, 1.6, 3.2, 2.0]})
    df, made = replay_learners(lambda n: BurstFilter(n, params=params), "burst", changes)
    assert df["policy"].tolist() == ["burst", "burst_ts"]
    assert all(f.n_updates_.sum() > 0 for f in made)
    assert np.all((df["freshness"] >= 0) & (df["freshness"] <= 1))
