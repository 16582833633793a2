"""poisson_gof: its contract on simulated and real traces; plots."""

import dataclasses
import json

import matplotlib
import numpy as np
import pytest
from matplotlib.figure import Figure

from changerate_bayes import StatisticalWarning
from changerate_bayes.diagnostics import (
    TEST_NAMES,
    DiagnosticResult,
    PoissonGOFResult,
    plot_qq,
    plot_rate,
    poisson_gof,
    rate_over_time,
)
from changerate_bayes.traces import load_trace, trace_info

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def poisson_result():
    t = np.cumsum(np.random.default_rng(5).exponential(0.5, size=400))  # rate 2 per unit
    return poisson_gof(t, n_resamples=199, rng=1)


@pytest.fixture(scope="module")
def oblast():
    return poisson_gof(load_trace("wikipedia_oblast"), n_resamples=199, rng=2)


def test_contract_fields(poisson_result):
    r = poisson_result
    assert isinstance(r, PoissonGOFResult)
    assert r.n_events == 400 and r.rate_unit == "per input time unit"
    assert tuple(r.tests) == TEST_NAMES
    assert {"ks_lilliefors", "anderson_darling"} <= set(r.tests)
    for name, t in r.tests.items():
        assert isinstance(t, DiagnosticResult) and t.name == name
        assert isinstance(t.reading, str) and t.reading
    assert r.qq.theoretical.shape == r.qq.observed.shape == (399,)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.n_events = 3
    with pytest.raises(TypeError):
        r.tests["ks_lilliefors"] = None


def test_rate_is_events_per_span(poisson_result):
    t = poisson_result.times
    assert poisson_result.rate == pytest.approx(399 / (t[-1] - t[0]))
    # within 4 standard errors (rate/sqrt(n)) of the true rate 2
    assert abs(poisson_result.rate - 2.0) < 4 * 2.0 / np.sqrt(399)


def test_poisson_data_pass(poisson_result):
    r = poisson_result
    assert r.rejected() == ()
    assert "No test rejects" in r.summary()
    assert r.segments.n_segments == 1
    assert r.tests["hour_of_day"].status == "not applicable"
    assert r.tests["crawl_calibration"].status == "not applicable"
    assert r.tests["geometric_gaps"].status == "not applicable"
    assert r.tests["burstiness"].pvalue == r.tests["gap_cv"].pvalue
    assert "Holm over 11 tests" in r.summary()  # floats: no clock for the two seasonality tests


def test_datetimes_give_rates_per_hour():
    start = np.datetime64("2021-03-01T00:00:00", "s")
    # 1 event per 3 hours: 200 events span about 3.5 weeks, enough for the day-of-week test
    secs = np.cumsum(np.random.default_rng(0).exponential(3 * 3600.0, size=200)).astype(np.int64)
    r = poisson_gof(start + secs.astype("timedelta64[s]"), n_resamples=39, rng=0)
    assert r.rate_unit == "per hour"
    assert r.rate == pytest.approx(199 / ((secs[-1] - secs[0]) / 3600))
    assert r.resolution == pytest.approx(1 / 3600)
    assert r.origin == start + secs[0].astype("timedelta64[s]")
    assert r.tests["day_of_week"].ran


def test_iso_strings_and_floats_give_the_same_tests():
    hours = np.round(np.cumsum(np.random.default_rng(3).exponential(5.0, size=80)) * 3600) / 3600
    stamps = [
        str(np.datetime64("2020-01-01T00:00:00") + np.timedelta64(int(round(h * 3600)), "s")) + "Z" for h in hours
    ]
    a = poisson_gof(stamps, n_resamples=39, rng=4)
    b = poisson_gof(hours - hours[0], resolution=1 / 3600, n_resamples=39, rng=4)
    assert a.tests["laplace_trend"].statistic == pytest.approx(b.tests["laplace_trend"].statistic)
    assert a.rate == pytest.approx(b.rate)


def test_real_trace_rejects_poisson(oblast):
    r = oblast
    assert r.n_events == 958 and r.rate_unit == "per hour"
    assert r.rate == pytest.approx(
        957 / ((load_trace("wikipedia_oblast")[-1] - load_trace("wikipedia_oblast")[0]) / np.timedelta64(1, "h"))
    )
    # SOURCES.md: every trace has a gap CV >= 1.5 and a KS distance several times the
    # 5% Lilliefors critical value (about 0.034 for 957 gaps)
    assert r.tests["gap_cv"].statistic > 1.5
    assert r.tests["ks_lilliefors"].statistic > 3 * 0.034
    assert r.tests["ks_lilliefors"].pvalue <= 0.001
    assert {"ks_lilliefors", "gap_cv", "laplace_trend", "dispersion_index"} <= set(r.rejected())
    assert "rejected" in r.summary() and "bursty" in r.summary()
    assert r.segments.n_segments > 5


def test_to_dict_is_json(oblast):
    d = oblast.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text)["tests"]["ks_lilliefors"]["pvalue"] == oblast.tests["ks_lilliefors"].pvalue
    assert set(d["tests"]) == set(TEST_NAMES)


def test_crawl_detection_trace_is_tested_on_its_crawl_grid():
    name = "gitscrape_simonwillisonblog-backup_blog_blogmark"
    t = load_trace(name)[:400]
    # its first 400 detections drift off the 2-hour grid a little more than the 5% that is warned about
    with pytest.warns(StatisticalWarning, match="45 of 400 are more than c/4 off"):
        r = poisson_gof(t, crawl_interval=trace_info(name).crawl_interval_hours, n_resamples=39, rng=0)
    assert r.jittered is None and r.crawl_grid.crawl_interval == 2.0
    assert r.tests["crawl_calibration"].ran
    assert r.tests["crawl_calibration"].details["df"] >= 1
    assert r.tests["geometric_gaps"].ran and r.tests["ks_lilliefors"].status == "not applicable"
    assert r.qq.distribution == "geometric"


def test_result_validation():
    with pytest.raises(ValueError, match="`pvalue` must be in"):
        DiagnosticResult("x", 1.0, 1.5, "r")
    with pytest.raises(ValueError, match="has no statistic"):
        DiagnosticResult("x", 1.0, None, "r", "insufficient data")
    with pytest.raises(ValueError, match="`status` must be one of"):
        DiagnosticResult("x", None, None, "r", "skipped")
    r = DiagnosticResult("x", 2.0, 0.01, "r")
    assert r.rejects(0.05) is True and r.rejects(0.001) is False
    assert DiagnosticResult("x", None, None, "r", "not applicable").rejects() is None


# ----------------------------------------------------------------------------- plots
def test_rate_over_time_by_hand():
    r = rate_over_time(np.array([0.0, 0.5, 1.0, 3.0, 4.0]), n_bins=4)
    assert r.edges.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert r.counts.tolist() == [2, 1, 0, 2] and r.rates.tolist() == [2.0, 1.0, 0.0, 2.0]
    assert rate_over_time(np.array([1.0])).counts.tolist() == [1]


def test_plot_qq_returns_axes_with_envelope(poisson_result):
    fig = Figure()
    ax = fig.add_subplot()
    out = plot_qq(poisson_result, ax=ax, color="C2")
    assert out is ax
    assert len(ax.collections) == 2  # envelope band and points
    assert ax.get_xlabel().startswith("exponential quantile")
    bare = plot_qq(poisson_result.qq)
    assert bare.figure is not None


def test_plot_rate_with_segments_on_a_date_axis(oblast):
    ax = plot_rate(oblast)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("Bayesian blocks" in s for s in labels)
    assert ax.get_yscale() == "log" and ax.get_xlabel() == "time (UTC)"


def test_plot_qq_without_gaps():
    r = poisson_gof([1.0], rng=0, n_resamples=39)
    ax = plot_qq(r)
    assert ax.texts[0].get_text() == "no gaps to plot"
