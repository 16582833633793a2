"""Awkward data: ties, quantised times, too few events, zero gaps, bad input."""

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
    # the resolution 0.01 is inferred from the decimals, not given: the ties are warned about
    with pytest.warns(StatisticalWarning, match=r"3 zero gap\(s\) \(tied times\).*inferred from the decimals"):
        res = poisson_gof(t, rng=0, **FAST)
    assert res.n_events == 12 and res.n_ties == 3
    assert res.resolution == 0.01 and res.jittered == "within resolution"
    assert any("3 tied time(s)" in note for note in res.notes)
    # zero gaps are not dropped: all 11 gaps are in the Q-Q data, now positive after jitter
    assert res.qq.observed.size == 11 and np.all(res.qq.observed > 0)
    assert res.times.tolist() == t.tolist()  # the raw times are kept
    assert "(3 tied)" in res.summary()


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


def test_jittered_crawl_detections_are_not_exponential():
    """Why crawl detections are tested on their grid: Poisson changes seen by crawls with
    Δc = 0.3 (c a quarter of the mean gap between detections), detections jittered back into
    their crawl interval: Lilliefors rejects far more than 5% (1000 datasets of 100 detections;
    the old approximation), because a detection merges every change of its interval."""
    d, n, c = 1000, 100, 1.0
    g = np.random.default_rng(12)
    det = np.ceil(np.cumsum(g.exponential(1 / 0.3, size=(d, 3 * n)), axis=1) / c) * c
    jit = np.stack([np.sort(np.unique(row)[:n] - g.uniform(0, c, n)) for row in det])
    p = lilliefors_pvalues(edf_statistics(np.diff(jit, axis=1))["ks"], n - 1)
    assert np.mean(p <= 0.05) > 0.5
    prep = prepare_events(np.unique(det[0]), crawl_interval=c, rng=0)
    assert prep.jittered is None and np.all(prep.times == np.unique(det[0]))  # kept on the grid
    assert prep.grid.n_off_grid == 0 and prep.grid.n_shifted == 0


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
    for _name, r in res.tests.items():
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


@pytest.mark.parametrize(
    "times",
    [
        [3.1234567891] * 10,  # unknown resolution
        [1.0] * 20,  # resolution 1 inferred
        np.array(["2020-01-01T00:00:00"] * 20, dtype="datetime64[s]"),  # 1-day precision inferred
        [np.datetime64("2021-06-01T12:00:00.123456")] * 5,
    ],
)
def test_all_times_equal_is_degenerate_never_consistent(times):
    """The newcomer's report: 20 identical times were jittered within a guessed resolution
    and every test said 'consistent'. A zero span has no rate and no spacing to test."""
    with pytest.warns(StatisticalWarning, match="at the same time"):
        res = poisson_gof(times, rng=0, **FAST)
    n = len(times)
    assert res.rate is None and res.n_ties == n - 1 and res.segments is None and res.jittered is None
    assert res.degenerate == f"all {n} events at the same time (zero span)"
    for r in res.tests.values():
        assert r.status == "insufficient data" and "zero span" in r.reading and r.pvalue is None
    summary = res.summary()
    assert "No test rejects" not in summary and "consistent" not in summary and "zero span" in summary
    assert res.qq.observed.size == 0
    # the same with a given resolution or a crawl interval
    with pytest.warns(StatisticalWarning):
        assert poisson_gof(times, resolution=0.5, rng=0, **FAST).degenerate
    with pytest.warns(StatisticalWarning):
        assert poisson_gof(times, crawl_interval=0.5, rng=0, **FAST).degenerate


def test_float_ties_are_reported_whatever_the_resolution():
    t = np.arange(0.0, 30.0)
    t[10] = t[9]
    with pytest.warns(StatisticalWarning, match="tied times"):  # resolution 1.0 inferred from whole numbers
        res = poisson_gof(t, rng=0, **FAST)
    assert res.n_ties == 1 and res.jittered == "within resolution"
    t2 = np.cumsum(np.random.default_rng(0).exponential(size=30))
    t2[10] = t2[9]
    with pytest.warns(StatisticalWarning, match="tied times"):  # resolution unknown
        res = poisson_gof(t2, rng=0, **FAST)
    assert res.n_ties == 1 and res.tests["ks_lilliefors"].status == "not applicable"


def test_seasonality_needs_datetimes_and_enough_events():
    res = poisson_gof(np.arange(50.0), rng=0, **FAST)
    assert res.tests["hour_of_day"].status == "not applicable"
    stamps = np.datetime64("2021-01-01T00:00:00") + (np.arange(30) * 3600 * 7).astype("timedelta64[s]")
    res = poisson_gof(stamps, rng=0, **FAST)
    assert res.tests["hour_of_day"].status == "insufficient data"


def test_pvalues_stay_in_unit_interval_on_extreme_data():
    t = np.concatenate([np.zeros(1), np.linspace(1000, 1000.001, 50), [5000.0]])
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
        (["2020-01-01T00:00:00", "2020-01-02T00:00:00Z"], r"`event_times` row 1: time zone UTC\+0:00:00 differs"),
        (["2020-01-01T00:00:00+01:00", "2020-01-02T00:00:00"], r"`event_times` row 1: time zone none \(naive\)"),
        ([[0.0, 1.0], [2.0]], r"`event_times` must be a one-dimensional sequence of times; got a nested"),
        ([0.0, [1.0, 2.0]], r"`event_times` must be a one-dimensional sequence"),
        ([[0.0, 1.0], [2.0, 3.0]], r"`event_times` must be one-dimensional; got shape \(2, 2\)"),
        ([-1e308, 1e308], r"`event_times` span from -1e\+308 to 1e\+308 exceeds the float range"),
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


@pytest.mark.parametrize(
    "bad, message",
    [
        ("2020-01-01", "`event_times` must be a sequence of times, not a single string"),
        ({1: 2}, "`event_times` must be an ordered sequence of times (list, tuple or array); got dict"),
        ({1.0, 2.0}, "`event_times` must be an ordered sequence of times (list, tuple or array); got set"),
        (None, "`event_times` must be an ordered sequence of times (list, tuple or array); got NoneType"),
        (3.5, "`event_times` must be a sequence of times; got a single float"),
        (np.array([1 + 2j, 3 + 0j]), "`event_times` must hold numbers or datetimes"),
    ],
)
def test_wrong_type_of_times(bad, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        poisson_gof(bad)


def test_times_with_different_utc_offsets_are_exact_instants():
    """One zone across a daylight-saving change, given as ISO strings with their offsets:
    the same instants as UTC strings, and the same result."""
    local = [
        "2021-03-27T10:00:00+01:00",
        "2021-03-27T23:30:00+01:00",
        "2021-03-28T03:00:00+02:00",
        "2021-03-28T09:15:00+02:00",
        "2021-03-29T08:00:00+02:00",
        "2021-03-30T20:00:00+02:00",
    ]
    utc = [
        "2021-03-27T09:00:00Z",
        "2021-03-27T22:30:00Z",
        "2021-03-28T01:00:00Z",
        "2021-03-28T07:15:00Z",
        "2021-03-29T06:00:00Z",
        "2021-03-30T18:00:00Z",
    ]
    a, b = poisson_gof(local, rng=0, **FAST), poisson_gof(utc, rng=0, **FAST)
    assert a.times.tolist() == b.times.tolist() == [0.0, 13.5, 16.0, 22.25, 45.0, 81.0]
    assert a.origin == b.origin == np.datetime64("2021-03-27T09:00:00")


@pytest.mark.parametrize("scale", [1e160, 1e-200, 2.0**900])
def test_huge_and_tiny_times_are_rescaled_exactly(scale):
    """The newcomer's report: t * 1e160 failed inside the burstiness test (gap variance
    overflowed). Times are divided by a power of two internally (exact), every test is
    unit-free, and rates, spans and quantiles come back in the input unit."""
    t = np.cumsum(np.random.default_rng(4).exponential(size=80))
    a = poisson_gof(t, rng=5, **FAST)
    b = poisson_gof(t * scale, rng=5, **FAST)
    for k in a.tests:
        assert a.tests[k].status == b.tests[k].status, k
        if a.tests[k].ran:
            assert b.tests[k].pvalue == pytest.approx(a.tests[k].pvalue, rel=1e-6), k
            assert b.tests[k].statistic == pytest.approx(a.tests[k].statistic, rel=1e-6), k
    assert b.rate * scale == pytest.approx(a.rate, rel=1e-12)
    assert b.span / scale == pytest.approx(a.span, rel=1e-12)
    assert b.qq.observed / scale == pytest.approx(a.qq.observed, rel=1e-12)
    assert b.segments.edges / scale == pytest.approx(a.segments.edges, rel=1e-12)
    assert b.times.tolist() == (t * scale).tolist()
    det = np.unique(np.ceil(t / 0.25) * 0.25)  # crawl detections on a grid of step 0.25
    c = poisson_gof(det * scale, crawl_interval=0.25 * scale, rng=5, **FAST)
    d = poisson_gof(det, crawl_interval=0.25, rng=5, **FAST)
    assert c.crawl_grid.slots.tolist() == d.crawl_grid.slots.tolist()
    assert c.crawl_grid.crawl_interval == pytest.approx(0.25 * scale, rel=1e-12)
    assert c.tests["crawl_calibration"].details["delta"] * scale == pytest.approx(
        d.tests["crawl_calibration"].details["delta"], rel=1e-9
    )


def test_statistical_warning_points_at_the_caller():
    t = np.cumsum(np.random.default_rng(0).exponential(size=30))
    t[3] = t[2]
    with pytest.warns(StatisticalWarning) as record:
        poisson_gof(t, rng=0, **FAST)
    assert record[0].filename == __file__
