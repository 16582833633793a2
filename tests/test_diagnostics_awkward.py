"""Awkward data (issue 5): ties, quantised times, too few events, zero gaps, bad input."""

import re
import warnings

import numpy as np
import pytest
from scipy import stats

from changerate_bayes import StatisticalWarning
from changerate_bayes.diagnostics import TEST_NAMES, poisson_gof
from changerate_bayes.diagnostics._exponential import edf_statistics, lilliefors_pvalues
from changerate_bayes.diagnostics._prep import decimal_resolution, prepare_events

FAST = {"n_resamples": 39}


def _binomial_bounds(n, p=0.05, level=0.999):
    lo, hi = stats.binom.interval(level, n, p)
    return lo / n, hi / n


# ----------------------------------------------------------------------------- ties
def test_ties_are_counted_and_jittered_within_the_resolution():
    t = np.array([0.0, 0.5, 0.5, 1.25, 2.0, 2.0, 2.0, 3.75, 4.5, 6.0, 7.25, 9.0])
    res = poisson_gof(t, rng=0, **FAST)
    assert res.n_events == 12 and res.n_ties == 3
    assert res.resolution == 0.01 and res.jittered == "within resolution"
    assert any("3 tied time(s)" in note for note in res.notes)
    # zero gaps are not dropped: all 11 gaps are in the Q-Q data, now positive after jitter
    assert res.qq.observed.size == 11 and np.all(res.qq.observed > 0)
    assert res.times.tolist() == t.tolist()  # the raw times are kept


def test_jitter_stays_in_its_resolution_cell():
    t = np.repeat(np.arange(0.0, 50.0), 2)  # every time twice, whole numbers
    prep = prepare_events(t, rng=1)
    assert prep.resolution == 1.0 and prep.n_ties == 50
    assert np.all(np.floor(prep.times) == t)  # U(0, 1) added to each time, then sorted


def test_ties_of_unknown_resolution_make_gap_tests_not_applicable():
    g = np.random.default_rng(0)
    t = np.cumsum(g.exponential(size=40))  # full precision: no decimal resolution detectable
    t[5] = t[4]
    with pytest.warns(StatisticalWarning, match="tied times.*do not apply"):
        res = poisson_gof(t, rng=0, **FAST)
    assert res.n_ties == 1 and res.jittered is None
    for k in ("ks_lilliefors", "anderson_darling", "ks_bootstrap", "gap_cv", "time_rescaling"):
        assert res.tests[k].status == "not applicable" and res.tests[k].pvalue is None
        assert "tied time" in res.tests[k].reading
    # count-based tests still use every event, the tied ones included
    assert res.tests["laplace_trend"].ran and res.tests["dispersion_index"].ran
    assert res.n_events == 40


def test_explicit_resolution_repairs_ties_of_full_precision_floats():
    g = np.random.default_rng(0)
    t = np.cumsum(g.exponential(size=40))
    t[5] = t[4]
    with warnings.catch_warnings():
        warnings.simplefilter("error", StatisticalWarning)
        res = poisson_gof(t, resolution=1e-3, rng=0, **FAST)
    assert res.jittered == "within resolution" and res.tests["ks_lilliefors"].ran


def test_ties_at_the_first_event_with_unknown_resolution():
    t = np.array([0.1234567891] * 3 + list(np.cumsum(np.random.default_rng(1).exponential(size=20)) + 1))
    with pytest.warns(StatisticalWarning):
        res = poisson_gof(t, rng=0, **FAST)
    assert res.tests["mil_hdbk_189"].status == "not applicable"


def test_rounded_poisson_times_plain_ks_is_wrong_jitter_is_right():
    """Poisson data rounded to half a mean gap: Lilliefors on the rounded gaps rejects far
    too often; jittered within the resolution it has the right size (1000 datasets;
    99.9% binomial interval of 0.05)."""
    d, n, r = 1000, 100, 0.5
    g = np.random.default_rng(11)
    rounded = np.floor(np.cumsum(g.exponential(size=(d, n)), axis=1) / r) * r
    gaps = np.diff(rounded, axis=1)
    with np.errstate(divide="ignore"):
        p_plain = lilliefors_pvalues(edf_statistics(np.maximum(gaps, 0))["ks"], n - 1)
    jit = np.stack([prepare_events(row, resolution=r, rng=i).times for i, row in enumerate(rounded)])
    p_jit = lilliefors_pvalues(edf_statistics(np.diff(jit, axis=1))["ks"], n - 1)
    lo, hi = _binomial_bounds(d)
    assert np.mean(p_plain <= 0.05) > hi
    assert lo <= np.mean(p_jit <= 0.05) <= hi


def test_crawl_grid_detections_are_jittered_within_the_crawl_interval():
    """Poisson changes seen on a crawl grid with Δc = 0.02: the detection times jittered
    back into their crawl interval pass Lilliefors at the nominal size (1000 datasets)."""
    d, n, c = 1000, 100, 0.02
    g = np.random.default_rng(12)
    det = np.ceil(np.cumsum(g.exponential(size=(d, n)), axis=1) / c) * c
    jit = np.stack([prepare_events(np.unique(row)[:90], crawl_interval=c, rng=i).times for i, row in enumerate(det)])
    p = lilliefors_pvalues(edf_statistics(np.diff(jit, axis=1))["ks"], 89)
    lo, hi = _binomial_bounds(d)
    assert lo <= np.mean(p <= 0.05) <= hi


def test_crawl_interval_large_against_the_gaps_warns():
    t = np.arange(1.0, 40.0) * 1.0  # a detection at every crawl
    with pytest.warns(StatisticalWarning, match="merge into one detection"):
        res = poisson_gof(t, crawl_interval=1.0, rng=0, **FAST)
    assert res.jittered == "within crawl interval"


def test_decimal_resolution():
    assert decimal_resolution(np.array([1.0, 2.0, 5.0])) == 1.0
    assert decimal_resolution(np.array([0.1 * 3, 0.2])) == 0.1  # 0.30000000000000004 is 0.3
    assert decimal_resolution(np.array([])) == 0.0


# ----------------------------------------------------------------------------- too few events
@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, 12])
def test_too_few_events_give_insufficient_data_not_errors(n):
    t = np.cumsum(np.random.default_rng(n).exponential(size=n))
    res = poisson_gof(t, rng=0, **FAST)
    assert res.n_events == n
    assert set(res.tests) == set(TEST_NAMES)
    for name, r in res.tests.items():
        if r.ran:
            assert 0.0 <= r.pvalue <= 1.0 and np.isfinite(r.statistic)
        else:
            assert r.pvalue is None and r.statistic is None
            assert r.status in ("insufficient data", "not applicable")
            assert r.reading.startswith(r.status)
    if n < 6:
        assert not res.tests["ks_lilliefors"].ran
        assert "insufficient data" in res.tests["ks_lilliefors"].reading
    assert isinstance(res.summary(), str)
    assert (res.rate is None) == (n < 2)


def test_all_times_equal():
    with pytest.warns(StatisticalWarning):
        res = poisson_gof([3.1234567891] * 10, rng=0, **FAST)
    assert res.rate is None and res.n_ties == 9 and res.segments is None
    assert all(not r.ran for r in res.tests.values())


def test_seasonality_needs_datetimes_and_enough_events():
    res = poisson_gof(np.arange(50.0), rng=0, **FAST)
    assert res.tests["hour_of_day"].status == "not applicable"
    stamps = np.datetime64("2021-01-01T00:00:00") + (np.arange(30) * 3600 * 7).astype("timedelta64[s]")
    res = poisson_gof(stamps, rng=0, **FAST)
    assert res.tests["hour_of_day"].status == "insufficient data"


def test_pvalues_stay_in_unit_interval_on_extreme_data():
    t = np.concatenate([np.zeros(1) , np.linspace(1000, 1000.001, 50), [5000.0]])
    res = poisson_gof(t, resolution=1e-6, rng=0, **FAST)
    for r in res.tests.values():
        if r.ran:
            assert 0.0 <= r.pvalue <= 1.0


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "times, message",
    [
        ([0.0, 2.0, 1.0], r"`event_times` row 2: is earlier than row 1"),
        ([0.0, float("nan"), 1.0], r"`event_times` row 1: is nan"),
        (["2020-01-01T00:00:00Z", "2020-13-01T00:00:00Z"], r"`event_times` row 1: cannot parse"),
        (np.array(["2020-01-01", "NaT", "2020-01-03"], dtype="datetime64[s]"), r"`event_times` row 1: is NaT"),
        (["2020-01-01T00:00:00Z", "2020-01-02T00:00:00+02:00"], r"`event_times` row 1: time zone"),
        (["2020-01-01T00:00:00", "2020-01-02T00:00:00Z"], r"`event_times` row 1: time zone UTC\+0:00:00 differs"),
    ],
)
def test_bad_times_raise_value_error_naming_the_row(times, message):
    with pytest.raises(ValueError, match=message):
        poisson_gof(times)


@pytest.mark.parametrize(
    "kwargs, err, message",
    [
        ({"resolution": 0.0}, ValueError, "`resolution` must be a finite number > 0; got 0.0"),
        ({"resolution": "1s"}, TypeError, "`resolution` must be a real number"),
        ({"crawl_interval": -1.0}, ValueError, "`crawl_interval` must be a finite number > 0; got -1.0"),
        ({"n_windows": 1}, ValueError, "`n_windows` must be >= 2; got 1"),
        ({"n_resamples": 5}, ValueError, "`n_resamples` must be >= 19; got 5"),
        ({"n_resamples": 99.5}, TypeError, "`n_resamples` must be an integer"),
        ({"p0": 1.0}, ValueError, "`p0` must be in (0, 1); got 1.0"),
        ({"alpha": 0.0}, ValueError, "`alpha` must be a finite number > 0; got 0.0"),
        ({"rng": 1.5}, TypeError, "`rng` must be an int seed"),
    ],
)
def test_bad_arguments(kwargs, err, message):
    with pytest.raises(err, match=re.escape(message)):
        poisson_gof(np.arange(20.0), **kwargs)


def test_wrong_type_of_times():
    with pytest.raises(TypeError, match="`event_times` must be a sequence of times"):
        poisson_gof("2020-01-01")
    with pytest.raises(TypeError, match="`event_times` must hold numbers or datetimes"):
        poisson_gof(np.array([1 + 2j, 3 + 0j]))


def test_statistical_warning_points_at_the_caller():
    t = np.cumsum(np.random.default_rng(0).exponential(size=30))
    t[3] = t[2]
    with pytest.warns(StatisticalWarning) as record:
        poisson_gof(t, rng=0, **FAST)
    assert record[0].filename == __file__
