"""The real-trace study at reduced size: replay data preparation, coverage, run and render."""

import json

import numpy as np
import pytest
from scipy import stats

import changerate_bayes.validation.traces_study as T
from changerate_bayes import estimate_path
from changerate_bayes._rng import replication_generators
from changerate_bayes.history import CrawlHistory
from changerate_bayes.validation._preset import Preset, Progress


def test_observe_by_hand():
    hist, window, running = T.observe(np.array([0.0, 0.5, 0.7, 2.5]), np.array([[1.0, 2.0, 3.0]]))
    # the change at 0 is the reference copy, not in (0, 1]
    assert hist.changed.tolist() == [[1, 0, 1]] and hist.intervals.tolist() == [[1.0, 1.0, 1.0]]
    assert window.tolist() == [1.0] and running.tolist() == [[2.0, 1.0, 1.0]]


def test_observe_many_equals_observe_row_by_row(rng):
    changes = [np.sort(rng.uniform(0, 50, 30)), np.sort(rng.uniform(0, 50, 5)), np.array([])]
    crawls = np.sort(rng.uniform(0, 50, (3, 12)), axis=1)
    hist, window, running = T.observe_many(changes, crawls)
    for i, c in enumerate(changes):
        h1, w1, r1 = T.observe(c, crawls[i : i + 1])
        assert hist.changed[i].tolist() == h1.changed[0].tolist()
        assert window[i] == pytest.approx(w1[0]) and running[i] == pytest.approx(r1[0])


def test_crawl_times_rows_are_equal_length_within_the_span():
    gens = replication_generators(1, 5)
    t = T.crawl_times(100.0, 2.0, gens, max_crawls=10_000)
    assert t.shape[0] == 5 and np.all(t <= 100.0) and np.all(np.diff(t, axis=1) > 0)
    # about p * span = 200 crawls; the shortest row sets k (4 SE below the mean is rare)
    assert 200 - 4 * np.sqrt(200) * 2 < t.shape[1] <= 200 + 4 * np.sqrt(200)
    capped = T.crawl_times(100.0, 2.0, replication_generators(1, 5), max_crawls=50)
    assert capped.shape == (5, 50) and np.array_equal(capped, t[:, :50])
    with pytest.raises(ValueError, match="gives no crawl"):
        T.crawl_times(1.0, 1e-9, replication_generators(2, 2), max_crawls=10)


def test_poisson_surrogates_have_the_rate(rng):
    sur = T.poisson_surrogates(0.5, 1000.0, replication_generators(3, 200))
    counts = np.array([s.size for s in sur])
    assert abs(counts.mean() - 500) < 4 * np.sqrt(500 / 200)
    assert all(np.all(np.diff(s) >= 0) and s.min() > 0 and s.max() <= 1000 for s in sur)


def test_thin_indices():
    assert T.thin_indices(5, 10).tolist() == [0, 1, 2, 3, 4]
    idx = T.thin_indices(1000, 50, tail=5)
    assert idx[0] == 0 and idx[-1] == 999 and set(range(995, 1000)) <= set(idx) and len(idx) <= 55


def test_estimator_errors_are_relative_errors_of_final_estimates():
    hist = CrawlHistory(np.array([[1, 0, 1, 1], [0, 1, 1, 0]]), np.ones((2, 4)), 1.0)
    target = np.array([2.0, 1.0])
    summary, paths = T.estimator_errors(hist, target)
    lln = estimate_path(hist, "lln")[:, -1]
    rel = (lln - target) / target
    assert summary["lln"]["median_abs_rel_error"] == pytest.approx(np.median(np.abs(rel)))
    assert paths["lln"].tolist() == estimate_path(hist, "lln")[0].tolist()
    assert set(summary) == set(T.METHODS)


def test_posterior_coverage_on_poisson_surrogates():
    """Under the Poisson model the 94% HDI holds the window's empirical rate in about 94%
    of replays (200 replays; 99.9% binomial interval)."""
    r, span, rate = 200, 1500.0, 1.0
    crawls = T.crawl_times(span, rate / 3, replication_generators(4, r), max_crawls=10_000)
    sur = T.poisson_surrogates(rate, span, replication_generators(5, r))
    hist, target, _ = T.observe_many(sur, crawls)
    out = T.posterior_coverage(CrawlHistory(hist.changed, hist.intervals, rate / 3), target, 6)
    lo, hi = stats.binom.interval(0.999, r, T.HDI_PROB)
    assert lo / r <= out["coverage"] <= hi / r
    assert len(out["hdi0"]) == 2 and out["hdi0"][0] < out["mean0"] < out["hdi0"][1]


@pytest.fixture(scope="module")
def tiny_result():
    mp = pytest.MonkeyPatch()
    mp.setattr(T, "list_traces", lambda: ["wikipedia_oblast", "gitscrape_simonwillisonblog-backup_blog_blogmark"])
    mp.setitem(T.SIZES, "quick", {"n_resamples": 39, "n_replications": 4, "ratios": (1 / 3,), "max_crawls": 300})
    try:
        res = T.run(Preset("quick"), seed=3, progress=Progress(quiet=True))
    finally:
        mp.undo()
    return json.loads(json.dumps(res, allow_nan=False))


def test_run_returns_the_trace_overview(tiny_result):
    assert set(tiny_result) == set(T.KEYS)
    traces = tiny_result["traces"]
    assert [t["name"] for t in traces] == ["wikipedia_oblast", "gitscrape_simonwillisonblog-backup_blog_blogmark"]
    from changerate_bayes.diagnostics import TEST_NAMES

    for t in traces:
        assert {"name", "n_events", "rate"} <= set(t)
        for k in TEST_NAMES:
            assert {"statistic", "pvalue"} <= set(t[k])
            assert t[k]["pvalue"] is None or 0 <= t[k]["pvalue"] <= 1
    assert traces[0]["n_events"] == 958 and traces[0]["crawl_calibration"]["status"] == "not applicable"
    assert traces[1]["crawl_calibration"]["status"] == "ok"
    # the crawl-detection trace is tested on its 2-hour grid, the revisions as exact times
    assert traces[0]["crawl_grid"] is None and traces[0]["n_tests_run"] == 13
    g = traces[1]["crawl_grid"]
    assert g["crawl_interval_hours"] == 2.0 and 0 < g["detection_probability"] < 1 and g["n_off_grid"] < 0.1 * 2605
    assert traces[1]["n_tests_run"] == 9 and traces[1]["plot"]["qq"]["distribution"] == "geometric"
    assert traces[1]["ks_lilliefors"]["status"] == "not applicable" and traces[1]["geometric_gaps"]["status"] == "ok"


def test_run_replays_every_trace(tiny_result):
    reps = tiny_result["trace_replays"]
    assert len(reps) == 2
    for r in reps:
        assert r["n_crawls"] <= 300 and r["n_replications"] == 4
        assert r["crawl_rate"] == pytest.approx(r["ratio"] * r["trace_rate"])
        assert {e["method"] for e in r["errors"]} == set(T.METHODS)
        assert 0 <= r["coverage"] <= 1 and 0 <= r["coverage_poisson"] <= 1
        assert len(r["plot"]["k"]) == len(r["plot"]["paths"]["mle"])


def test_render_has_overview_and_a_section_per_trace(tiny_result):
    html = T.render(tiny_result)
    assert "Overview of the traces" in html
    assert html.count('<h3 id="trace-') == 2
    assert html.count("data:image/png;base64") == 4
    assert "HDI" in html and "Finding about the data" in html  # rejections on real data are findings
    # how many tests ran on which kind of trace, and why the others did not ("15 tests" was wrong)
    assert "15 tests" not in html and "Which tests run on which kind of trace" in html
    assert "13 tests ran on the revisions trace" in html and "9 tests ran on the crawl detections trace" in html
    assert "whole numbers of crawl intervals" in html


def test_tests_by_kind_rows(tiny_result):
    rows = {r["kind"]: r for r in T.tests_by_kind(tiny_result["traces"])}
    assert rows["revisions"]["n_tests"] == "13" and rows["crawl detections"]["n_tests"] == "9"
    assert "geometric gaps" in rows["crawl detections"]["tests"]
    assert "KS (Lilliefors table)" in rows["crawl detections"]["not_run"]
    assert "geometric gaps" in rows["revisions"]["not_run"] and "Goh" not in rows["revisions"]["tests"]


def test_replay_ylim_follows_the_estimators_and_the_target():
    """The newcomer's report: the y-axis was scaled to the first crawls' 'empirical rate so far'
    (0.6/h) while the estimates and the target sat near 0.003/h, flat at 0."""
    k = np.arange(1, 201)
    paths = {"lln": 0.002 + 0.001 / k, "mle": np.r_[np.inf, np.full(199, 0.0025)], "sa": np.full(200, 0.001)}
    lo, hi = T.replay_ylim(paths, 0.009)
    assert lo == 0.0 and hi == pytest.approx(0.009 * 1.15)  # the target is the top, the estimates visible
    lo, hi = T.replay_ylim({"lln": np.r_[np.full(10, 50.0), np.full(190, 0.02)]}, 0.01)
    assert hi == pytest.approx(0.02 * 1.15)  # an early transient (first 5% of crawls) does not set the scale
    assert T.replay_ylim({"mle": np.full(5, np.inf)}, 0.0) == (0.0, 1.0)
    # nothing drawn after the first 5% of crawls (where the x-axis starts) is clipped
    g = np.random.default_rng(0)
    wild = {"sa": g.lognormal(0, 2, 400), "mm": np.r_[np.inf, g.lognormal(0, 1, 399)]}
    lo, hi = T.replay_ylim(wild, 1.0)
    assert hi > max(np.max(v[20:][np.isfinite(v[20:])]) for v in wild.values())
    assert T.replay_xstart(np.arange(1, 401)) == 21.0


def test_replay_figure_labels_the_target(tiny_result):
    fig = T._replay_figure([r for r in tiny_result["trace_replays"] if r["name"] == "wikipedia_oblast"])
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert "count rate over the window" in labels and "empirical rate so far" in labels
    assert "crawl-visible rate over the window" in labels
    ax = fig.axes[0]
    target = tiny_result["trace_replays"][0]["plot"]["target"]
    assert ax.get_ylim()[1] >= target and ax.get_ylim()[1] < 5 * target
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_a_failing_estimator_is_reported_not_fatal(monkeypatch):
    import changerate_bayes

    real = changerate_bayes.estimate_path

    def flaky(history, method, **kw):
        if method == "mle":
            raise RuntimeError("MLE/MM root did not converge")
        return real(history, method, **kw)

    monkeypatch.setattr(T, "estimate_path", flaky)
    hist = CrawlHistory(np.array([[1, 0, 1, 1]]), np.ones((1, 4)), 1.0)
    summary, paths = T.estimator_errors(hist, np.array([1.0]))
    assert summary["mle"]["failed"] == "RuntimeError: MLE/MM root did not converge"
    assert summary["mle"]["median_abs_rel_error"] is None and np.all(np.isnan(paths["mle"]))
    assert summary["lln"]["failed"] is None


def test_crawl_visible_rate_by_hand_and_for_poisson_changes():
    # changes at 1, 1.1, 5 in (0, 10], p = 1: gaps 1, 0.1, 3.9
    q = (-np.expm1(-1.0) - np.expm1(-0.1) - np.expm1(-3.9)) / 10.0
    v = T.crawl_visible_rate(np.array([0.0, 1.0, 1.1, 5.0]), np.array([10.0, 4.0]), 1.0)
    assert v[0] == pytest.approx(q / (1 - q))
    q4 = (-np.expm1(-1.0) - np.expm1(-0.1)) / 4.0
    assert v[1] == pytest.approx(q4 / (1 - q4))
    # Poisson changes: E[1 - e^{-pg}] = p/(Δ + p), so the crawl-visible rate is Δ (within 4 SE)
    rng = np.random.default_rng(7)
    delta, p, span = 2.0, 0.5, 20000.0
    c = np.sort(rng.uniform(0, span, rng.poisson(delta * span)))
    est = T.crawl_visible_rate(c, np.array([span]), p)[0]
    m = c.size
    g = rng.exponential(1 / delta, 200000)
    sd_q = np.std(-np.expm1(-p * g)) * np.sqrt(m) / (p * span)
    qq = delta / (delta + p)
    assert abs(est - delta) < 4 * sd_q * p / (1 - qq) ** 2 + 4 * np.sqrt(m) / span
    # clustered changes: bursts of 5 within a second look like one change to hourly crawls
    bursts = np.sort(np.concatenate([c[::5] + 1e-4 * j for j in range(5)]))
    assert T.crawl_visible_rate(bursts, np.array([span]), p)[0] < 0.3 * bursts.size / span
