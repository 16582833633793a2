"""The burst model's inputs checked where they enter: parameters, time scales, and the intervals a fit can take."""

import math

import numpy as np
import pytest

from changerate_bayes.bursts import BurstFilter, BurstParameters, burst_predictive, fit_bursts
from changerate_bayes.bursts._fit import MEDIAN_INTERVAL_RANGE
from changerate_bayes.bursts._model import MAX_RATE


def test_all_rates_zero_is_refused():
    with pytest.raises(ValueError, match=r"`quiet_rate`, `busy_rate`, `to_busy` and `to_quiet` are all 0"):
        BurstParameters(0, 0, 0, 0)


@pytest.mark.parametrize("zeros", [(0.0, 0.0, 0.1, 0.0), (0.0, 0.0, 0.0, 0.1), (0.0, 0.5, 0.0, 0.0)])
def test_a_model_with_one_rate_above_zero_runs(zeros):
    # one switching or change rate > 0 is a model: the filter and the predictive run (where both change
    # rates are 0, no change is possible: a change seen has probability 0, which the filter says)
    p = BurstParameters(*zeros)
    pred = burst_predictive(np.array([0, 0]), np.array([1.0, 2.0]), params=p)
    assert np.all((pred.change_probability >= 0) & (pred.change_probability <= 1))
    f = BurstFilter(1, params=p)
    f.update([0], [1.0])
    if p.busy_rate == 0:
        assert pred.change_probability.tolist() == [0.0, 0.0]
        with pytest.raises(ValueError, match="has probability 0"):
            BurstFilter(1, params=p).update([1], [1.0])


@pytest.mark.parametrize("name", ["quiet_rate", "busy_rate", "to_busy", "to_quiet"])
def test_a_rate_too_large_to_multiply_is_refused(name):
    rates = {"quiet_rate": 0.1, "busy_rate": 1.0, "to_busy": 0.1, "to_quiet": 0.1}
    rates[name] = 2 * MAX_RATE
    if name == "quiet_rate":
        rates["busy_rate"] = 2 * MAX_RATE
    with pytest.raises(ValueError, match=rf"`{name}` must be <= 1e\+150"):
        BurstParameters(**rates)


def test_a_time_scale_that_makes_the_rates_overflow_is_refused():
    p = BurstParameters(0.01, 1.0, 0.05, 0.5)
    with pytest.raises(ValueError, match="`time_scale` is so small"):
        BurstFilter(2, params=p, time_scale=np.array([1.0, 1e-200]))
    with pytest.raises(ValueError, match="`time_scale` is so small"):
        burst_predictive(np.array([[0, 1]]), np.ones((1, 2)), params=p, time_scale=1e-200)


def _history(rng, n=400):
    changed = (rng.random(n) < 0.3).astype(int)
    return changed, rng.exponential(1.0, n)


@pytest.mark.parametrize("tiny", [1e-300, 1e-120])
def test_intervals_too_short_for_the_fit_are_refused_naming_the_limit(tiny):
    changed, tau = _history(np.random.default_rng(1))
    with pytest.raises(
        ValueError,
        match=r"`intervals`: their median is .* fit_bursts needs it within "
        r"\[1e-100, 1e\+100\]",
    ):
        fit_bursts(changed, tau * tiny)
    with pytest.raises(ValueError, match=r"`intervals`: their median is"):
        fit_bursts(changed, tau * (1 / tiny))


def test_a_fit_runs_on_intervals_near_the_limit():
    # a median interval of 1e-90 (inside the limit): the rates are finite, per that time unit, and the
    # fit's log likelihood is the one the filter gives the data at those rates
    changed, tau = _history(np.random.default_rng(2))
    small = tau * 1e-90
    assert MEDIAN_INTERVAL_RANGE[0] < np.median(small)
    fit = fit_bursts(changed, small, maxiter=400)
    rates = np.array(fit.params.as_tuple())
    assert np.all(np.isfinite(rates)) and rates.max() <= MAX_RATE and fit.params.mean_rate > 1e80
    ll = burst_predictive(changed, small, params=fit.params).log_likelihood
    assert math.isclose(fit.log_likelihood, float(ll), rel_tol=1e-9)
    assert fit.log_likelihood < 0
