"""Input guards across the package: paths, encodings, likelihood and Q-Q arguments,
huge integer times, oversized simulations, degenerate traces and error messages."""

import numpy as np
import pytest

from changerate_bayes import CrawlHistory, simulate_history
from changerate_bayes._event_times import as_event_times
from changerate_bayes.bayes import log_likelihood, posterior
from changerate_bayes.diagnostics import exponential_qq, poisson_gof, rate_over_time
from changerate_bayes.traces import read_trace_csv

# --- read_trace_csv ---------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, 1, 2.5, None, b"trace.csv"])
def test_read_trace_csv_refuses_non_paths(bad):
    # an int would be opened as a file descriptor (0 = stdin) and closed afterwards
    with pytest.raises(TypeError, match="`path` must be a file path"):
        read_trace_csv(bad)


def test_read_trace_csv_accepts_a_byte_order_mark(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufefftimestamp\n2020-01-01T00:00:00Z\n2020-01-01T02:00:00Z\n".encode("utf-8"))
    t = read_trace_csv(path)
    assert t.tolist() == [np.datetime64("2020-01-01T00:00:00", "us"), np.datetime64("2020-01-01T02:00:00", "us")]


def test_read_trace_csv_names_file_and_line_of_bad_utf8(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"timestamp\n2020-01-01T00:00:00Z\n2020-01-01T02:00:00Z \xe9\n")
    with pytest.raises(ValueError, match=r"latin1\.csv line 3: not valid UTF-8"):
        read_trace_csv(str(path))


# --- log_likelihood ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((-1.0, [1, 0], [1.0, 1.0]), ValueError, "`change_rate` must be >= 0"),
        ((np.nan, [1, 0], [1.0, 1.0]), ValueError, "`change_rate` must be >= 0"),
        ((2.0, [2, 0], [1.0, 1.0]), ValueError, "`changed` must hold 0 or 1"),
        ((2.0, [0.5, 0], [1.0, 1.0]), ValueError, "`changed` must hold 0 or 1"),
        ((2.0, [1, 0], [[1.0, 1.0], [1.0, 1.0]]), ValueError, "same shape"),
        ((2.0, [1, 0], [1.0, -1.0]), ValueError, "`intervals` must be positive and finite"),
        ((2.0, [1, 0], [1.0, np.inf]), ValueError, "`intervals` must be positive and finite"),
        (([1.0, 2.0, 3.0], [[1, 0], [0, 1]], [[1.0, 1.0], [1.0, 1.0]]), ValueError, "does not broadcast"),
        (("2", [1, 0], [1.0, 1.0]), TypeError, "`change_rate` must hold real numbers"),
        ((2.0, ["1", "0"], [1.0, 1.0]), TypeError, "`changed` must hold real numbers"),
        ((2.0, 1, 1.0), ValueError, "crawl axis"),
    ],
)
def test_log_likelihood_refuses_bad_input(args, error, match):
    with pytest.raises(error, match=match):
        log_likelihood(*args)


def test_log_likelihood_values_and_limits():
    # hand derivation: log(1 - e^{-2·0.5}) - 2·0.25
    assert log_likelihood(2.0, [1, 0], [0.5, 0.25]) == pytest.approx(np.log(1 - np.exp(-1.0)) - 0.5, rel=1e-15)
    # Δ = 0: nothing can change, so a seen change has probability 0 and no change probability 1
    assert log_likelihood(0.0, [1, 0], [1.0, 1.0]) == -np.inf
    assert log_likelihood(0.0, [0, 0], [1.0, 1.0]) == 0.0
    # one rate per page, pages broadcast against draws
    out = log_likelihood([[1.0, 2.0]], [[1, 0], [0, 1]], [[1.0, 1.0], [1.0, 1.0]])
    assert out.shape == (1, 2)
    assert out[0, 1] == pytest.approx(-2.0 + np.log(1 - np.exp(-2.0)), rel=1e-15)


# --- exponential_qq ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "gaps, match",
    [
        ([1.0, np.nan, 2.0], "`gaps` must be finite and >= 0"),
        ([1.0, -0.5, 2.0], "`gaps` must be finite and >= 0"),
        ([1.0, np.inf], "`gaps` must be finite and >= 0"),
        ([[1.0, 2.0]], "one-dimensional"),
    ],
)
def test_exponential_qq_refuses_bad_gaps(gaps, match):
    with pytest.raises(ValueError, match=match):
        exponential_qq(gaps)


def test_exponential_qq_refuses_bad_options():
    with pytest.raises(TypeError, match="real numbers"):
        exponential_qq(["a", "b"])
    with pytest.raises(ValueError, match="`level`"):
        exponential_qq([1.0, 2.0], level=1.5)
    with pytest.raises(ValueError, match="`n_simulations`"):
        exponential_qq([1.0, 2.0], n_simulations=1)


def test_exponential_qq_block_envelope_has_the_nominal_coverage(monkeypatch):
    """The column-block envelope (used above 20000 gaps) is the same law as the direct one:
    forced on 2000 exponential gaps, each point's 95% band holds the gap with probability
    0.95; averaged over 2000 correlated points the fraction outside stays well inside
    [0.01, 0.12] (its standard deviation over datasets is about 0.02 at this size)."""
    import changerate_bayes.diagnostics._qq as qq_mod

    monkeypatch.setattr(qq_mod, "_DIRECT_MAX", 100)
    monkeypatch.setattr(qq_mod, "_BLOCK", 300)
    g = np.random.default_rng(7)
    outside = [exponential_qq(g.exponential(3.0, 2000), rng=i).fraction_outside() for i in range(5)]
    assert 0.01 < np.mean(outside) < 0.12
    q = exponential_qq(g.exponential(3.0, 2000), rng=1)
    assert np.all(np.diff(q.lower) >= 0) and np.all(q.lower <= q.upper)


# --- huge integer times -----------------------------------------------------------------


def test_int64_times_near_2_62_keep_their_gaps():
    gaps = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.int64)
    t = np.int64(2**62) + np.concatenate(([0], np.cumsum(gaps)))
    values = as_event_times(t).values
    assert values.tolist() == np.concatenate(([0], np.cumsum(gaps))).tolist()
    # near the int64 limit too, where t - t[0] in int64 would be fine but float64(t) is not
    t2 = np.iinfo(np.int64).max - np.array([30, 20, 0], dtype=np.int64)
    assert as_event_times(t2).values.tolist() == [0.0, 10.0, 30.0]
    with pytest.raises(ValueError, match="row 1: is earlier than row 0"):
        as_event_times(t[::-1])


def test_poisson_gof_on_nanosecond_timestamps_is_not_degenerate():
    g = np.random.default_rng(3)
    t = np.int64(2**62) + np.cumsum(g.integers(1, 500, 40)).astype(np.int64)  # gaps below the float spacing 1024
    res = poisson_gof(t, n_resamples=99, rng=0)
    assert res.degenerate is None and res.n_events == 40
    assert res.rate == pytest.approx(39 / float(t[-1] - t[0]), rel=1e-12)


# --- minor guards -----------------------------------------------------------------------


def test_simulate_history_refuses_an_impossible_size():
    with pytest.raises(ValueError, match="would not fit in memory"):
        simulate_history(1.0, 1.0, 10**12)
    with pytest.raises(ValueError, match="would not fit in memory"):
        simulate_history(1.0, 1.0, 10**6, n_pages=10**4)


def test_rate_over_time_refuses_zero_span():
    with pytest.raises(ValueError, match="zero span"):
        rate_over_time([1.0, 1.0, 1.0])
    r = rate_over_time([0.0, 1.0, 1.5, 2.0, 4.0], n_bins=2)
    assert r.rates.tolist() == [1.5, 1.0]


def test_detections_on_every_crawl_are_explained():
    res = poisson_gof(np.arange(30.0), crawl_interval=1.0, rng=0)
    text = res.summary()
    assert "q̂ = 1" in text and "too few" not in text


def test_conjugate_without_crawl_rate_says_what_is_needed():
    h = CrawlHistory([1, 0, 1], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="needs the crawl rate"):
        posterior(h, method="conjugate", draws=10, chains=1)
