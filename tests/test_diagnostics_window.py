"""The observation window of the Poisson diagnostics: a burst then a long quiet stretch is bursty."""

import numpy as np
import pandas as pd
import pytest

from changerate_bayes.cli import main
from changerate_bayes.diagnostics import poisson_gof
from changerate_bayes.diagnostics._burstiness import window_burstiness_results, window_spacings

# a change every 2 h for 3 days (36 changes, hours 0..70), then 17 quiet days: a 20-day window
BURST = np.arange(36) * 2.0
WINDOW = (0.0, 20 * 24.0)


def test_window_spacings_include_both_ends():
    np.testing.assert_array_equal(window_spacings(np.array([3.0, 5.0]), 1.0, 10.0), [2.0, 2.0, 5.0])


def test_a_burst_then_seventeen_quiet_days_is_flagged_bursty():
    without = poisson_gof(BURST, n_resamples=999, rng=0)
    assert without.tests["gap_cv"].statistic < 1  # within its own span the burst looks regular
    res = poisson_gof(BURST, n_resamples=999, rng=0, window=WINDOW)
    cv = res.tests["gap_cv"]
    # spacings: 35 of 2 h (jittered within the 1-h resolution), then 410 h to the window's end
    assert cv.statistic > 4 and cv.pvalue < 0.01 and "bursty" in cv.reading
    assert "gap_cv" in res.rejected(0.05) and "bursty" in res.summary()
    assert res.window == WINDOW


def test_the_same_burst_as_datetimes():
    t0 = pd.Timestamp("2024-03-01T00:00:00Z")
    times = [(t0 + pd.Timedelta(hours=h)).isoformat() for h in BURST]
    res = poisson_gof(times, n_resamples=999, rng=0, window=(t0.isoformat(), (t0 + pd.Timedelta(days=20)).isoformat()))
    assert res.tests["gap_cv"].pvalue < 0.01 and res.window == WINDOW


def test_poisson_traces_are_not_flagged_beyond_the_nominal_level():
    # Poisson traces on the same 480-h window at the burst's mean rate (36 events): given n the
    # events are i.i.d. uniform; the two-sided burst test at 5% must reject at most 5% of them,
    # within three binomial standard errors
    gen = np.random.default_rng(20261206)
    reps, level = 400, 0.05
    rejected = 0
    for _ in range(reps):
        n = gen.poisson(36)
        times = np.sort(gen.uniform(*WINDOW, n))
        r_cv, _ = window_burstiness_results(times, WINDOW, n_resamples=199, rng=gen)
        rejected += r_cv.pvalue <= level
    assert rejected / reps <= level + 3 * np.sqrt(level * (1 - level) / reps)


@pytest.mark.parametrize(
    ("window", "message"),
    [((10.0, 5.0), "start < end"), ((1.0, 480.0), "hold every event"), ((0.0,), r"\(start, end\)")],
)
def test_bad_windows_are_refused(window, message):
    with pytest.raises(ValueError, match=message):
        poisson_gof(BURST, n_resamples=99, rng=0, window=window)
    with pytest.raises(ValueError, match="crawl detections"):
        poisson_gof(BURST, n_resamples=99, rng=0, window=WINDOW, crawl_interval=2.0)


def test_diagnose_window_flag(tmp_path, capsys):
    events = tmp_path / "events.csv"
    pd.DataFrame({"time": BURST}).to_csv(events, index=False)
    argv = ["diagnose", str(events), "--report", str(tmp_path / "r"), "--n-resamples", "999"]
    assert main([*argv, "--window", "0", "480"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("(all): "))
    assert "gap_cv" in line
    assert main([*argv, "--window", "0", "50"]) == 2
    assert "--window" in capsys.readouterr().err
