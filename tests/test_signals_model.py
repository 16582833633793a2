"""The noisy-signal model: P(unchanged | n signals) against a simulation of the primitive
processes, the likelihood against hand-derived values and its two limiting cases (signals
without information, and complete observability)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from changerate_bayes.bayes import log_likelihood
from changerate_bayes.signals import (
    SignalData,
    signal_log_likelihood,
    signal_mle,
    simulate_signal_pages,
    unchanged_given_signals,
)


@pytest.mark.parametrize(("delta", "q", "nu", "t"), [(0.5, 0.8, 1.5, 2.0), (2.0, 0.3, 0.2, 0.7)])
def test_unchanged_given_signals_matches_a_simulation_of_changes_marks_and_false_signals(delta, q, nu, t, rng):
    reps = 400_000
    changes = rng.poisson(delta * t, reps)  # the change process in (0, t]
    signalled = rng.binomial(changes, q)  # each change signalled independently
    n = signalled + rng.poisson(nu * t, reps)  # plus the false signals
    for k in range(5):
        at = n == k
        if at.sum() < 2000:
            continue
        p = unchanged_given_signals(t, k, delta, q, nu)
        se = np.sqrt(p * (1 - p) / at.sum())
        assert abs(np.mean(changes[at] == 0) - p) < 4 * se + 1e-12


def test_likelihood_of_two_intervals_by_hand():
    # τ = (1, 2), I = (0, 1), n = (1, 2); Δ = 0.5, q = 0.5, ν = 0.25: λ = 0.5
    d = SignalData.from_segments([1.0, 2.0], [0, 1], [1, 2], lengths=[2])
    first = np.exp(-(0.5 + 0.25) * 1.0) * 0.25  # no change, the signal false: e^{−(Δ+ν)τ} ντ
    pois = np.exp(-1.0) * 1.0**2 / 2  # two signals at λτ = 1
    second = pois * (1 - np.exp(-0.25 * 2.0) * 0.5**2)  # not (no unsignalled change and both false)
    assert signal_log_likelihood(0.5, 0.5, 0.25, d)[0] == pytest.approx(np.log(first * second), rel=1e-13)


def test_the_tail_adds_its_poisson_term_only():
    base = SignalData.from_segments([1.0, 2.0], [0, 1], [1, 2], lengths=[2])
    tail = SignalData.from_segments([1.0, 2.0], [0, 1], [1, 2], lengths=[2], tail_time=3.0, tail_signals=4)
    diff = signal_log_likelihood(0.5, 0.5, 0.25, tail) - signal_log_likelihood(0.5, 0.5, 0.25, base)
    assert diff[0] == pytest.approx(stats.poisson.logpmf(4, 0.5 * 3.0), rel=1e-12)


def test_without_recall_the_likelihood_is_the_crawl_only_one_times_a_poisson_term_in_nu(rng):
    d = simulate_signal_pages([0.3, 1.0, 4.0], 0.6, 0.8, horizon=40.5, crawl_interval=1.5, rng=rng)
    k = d.lengths[0]
    changed = d.changed.reshape(3, k)
    tau = d.intervals.reshape(3, k)
    n = d.signals.reshape(3, k)
    for delta in (0.1, 0.9, 3.0):
        for nu in (0.2, 1.7):
            crawl_only = log_likelihood(delta, changed, tau)
            poisson = stats.poisson.logpmf(n, nu * tau).sum(axis=1) + stats.poisson.logpmf(
                d.tail_signals, nu * d.tail_time
            )
            got = signal_log_likelihood(delta, 0.0, nu, d)
            np.testing.assert_allclose(got, crawl_only + poisson, rtol=1e-12)


def test_complete_observability_is_the_poisson_likelihood_of_the_signal_counts(rng):
    # q = 1, ν = 0: the signals are the changes, so I = 1 iff n >= 1
    d = simulate_signal_pages([0.4, 2.0], 1.0, 0.0, horizon=30.0, crawl_interval=1.0, rng=rng)
    np.testing.assert_array_equal(d.changed, (d.signals > 0).astype(np.int8))
    for delta in (0.3, 1.0):
        expect = np.bincount(d.page_index(), weights=stats.poisson.logpmf(d.signals, delta * d.intervals))
        np.testing.assert_allclose(signal_log_likelihood(delta, 1.0, 0.0, d), expect, rtol=1e-12)
    # a change without a signal, or a signal without a change, is impossible there
    bad = SignalData.from_segments([1.0, 1.0], [1, 0], [0, 0], lengths=[1, 1])
    assert signal_log_likelihood(1.0, 1.0, 0.0, bad)[0] == -np.inf
    assert np.isfinite(signal_log_likelihood(1.0, 1.0, 0.0, bad)[1])
    bad = SignalData.from_segments([1.0], [0], [2], lengths=[1])
    assert signal_log_likelihood(1.0, 1.0, 0.0, bad)[0] == -np.inf


def test_the_likelihood_broadcasts_over_draws_and_pages(rng):
    d = simulate_signal_pages([0.5, 1.0, 2.0], 0.7, 1.0, horizon=20.0, crawl_interval=1.0, rng=rng)
    delta = np.array([[0.2], [0.9]])
    got = signal_log_likelihood(delta, 0.6, [0.5, 1.0, 1.5], d)
    assert got.shape == (2, 3)
    for i in range(2):
        for j, nu in enumerate([0.5, 1.0, 1.5]):
            one = SignalData.from_segments(
                d.intervals[d.offsets[j] : d.offsets[j + 1]],
                d.changed[d.offsets[j] : d.offsets[j + 1]],
                d.signals[d.offsets[j] : d.offsets[j + 1]],
                lengths=[d.lengths[j]],
                tail_time=d.tail_time[j],
                tail_signals=d.tail_signals[j],
            )
            assert got[i, j] == pytest.approx(signal_log_likelihood(delta[i, 0], 0.6, nu, one)[0], rel=1e-12)


rates = st.floats(0.0, 20.0)


@given(
    t=st.floats(0.0, 50.0), dt=st.floats(0.0, 5.0), n=st.integers(0, 30), delta=rates, q=st.floats(0.0, 1.0), nu=rates
)
def test_unchanged_probability_is_a_probability_decreasing_in_time_and_signals(t, dt, n, delta, q, nu):
    p = unchanged_given_signals(t, n, delta, q, nu)
    assert 0.0 <= p <= 1.0
    assert unchanged_given_signals(t + dt, n, delta, q, nu) <= p
    assert unchanged_given_signals(t, n + 1, delta, q, nu) <= p


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((1.0, 1, -0.1, 0.5, 1.0), "change_rate"),
        ((1.0, 1, 0.1, 1.5, 1.0), "recall"),
        ((1.0, 1, 0.1, 0.5, np.nan), "false_rate"),
        ((-1.0, 1, 0.1, 0.5, 1.0), "`t`"),
        ((1.0, 1.5, 0.1, 0.5, 1.0), "`n`"),
    ],
)
def test_unchanged_given_signals_refuses_bad_values(args, match):
    with pytest.raises(ValueError, match=match):
        unchanged_given_signals(*args)


def test_likelihood_and_simulation_refuse_bad_input():
    d = SignalData.from_segments([1.0], [1], [1], lengths=[1])
    with pytest.raises(TypeError, match="SignalData"):
        signal_log_likelihood(1.0, 0.5, 1.0, {"intervals": [1.0]})
    with pytest.raises(ValueError, match="broadcast"):
        signal_log_likelihood([1.0, 2.0], 0.5, 1.0, d)
    with pytest.raises(ValueError, match="horizon"):
        simulate_signal_pages(1.0, 0.5, 1.0, horizon=0.0, crawl_interval=1.0, rng=0)
    with pytest.raises(ValueError, match="crawl_interval"):
        simulate_signal_pages(1.0, 0.5, 1.0, horizon=5.0, crawl_interval=6.0, rng=0)
    with pytest.raises(TypeError, match="rng"):
        simulate_signal_pages(1.0, 0.5, 1.0, horizon=5.0, crawl_interval=1.0, rng=1.5)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"intervals": [1.0, 0.0], "changed": [0, 1], "signals": [0, 0], "lengths": [2]}, "intervals"),
        ({"intervals": [1.0, 1.0], "changed": [0, 2], "signals": [0, 0], "lengths": [2]}, "changed"),
        ({"intervals": [1.0, 1.0], "changed": [0, 1], "signals": [0, -1], "lengths": [2]}, "signals"),
        ({"intervals": [1.0, 1.0], "changed": [0, 1], "signals": [0, 0], "lengths": [3]}, "lengths"),
        ({"intervals": [1.0], "changed": [0], "signals": [0], "lengths": [1], "tail_signals": 2}, "tail_signals"),
        ({"intervals": [1.0], "changed": [0], "signals": [0.5], "lengths": [1]}, "signals"),
    ],
)
def test_signal_data_refuses_bad_arrays(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SignalData.from_segments(kwargs.pop("intervals"), kwargs.pop("changed"), kwargs.pop("signals"), **kwargs)


def test_signal_data_takes_boolean_indicators_and_a_page_without_signals_has_no_precision():
    d = SignalData.from_segments([1.0, 1.0], np.array([True, False]), [0, 0], lengths=[2])
    assert d.changed.tolist() == [1, 0]
    fit = signal_mle(d)
    assert fit.recall[0] == 0.0 and fit.false_rate[0] == 0.0 and np.isnan(fit.precision[0])
    assert fit.change_rate[0] == pytest.approx(np.log(2.0))  # the crawl-only MLE: 1 − e^{−Δ} = 1/2
