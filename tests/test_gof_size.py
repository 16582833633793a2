"""The size-and-power study at reduced size: simulators, vectorised p-values, rejection rates.

Rejection rates under H0 are checked against the central 99.9% interval of
Bin(D, 0.05)/D (about a dozen rates are checked together, so a 99.9% interval keeps
the chance of a false failure of the file near 1%); tolerances of simulator checks
are 4 Monte Carlo standard errors.
"""

import json

import numpy as np
import pytest
from scipy import stats

import changerate_bayes.validation.gof_size as G
from changerate_bayes._rng import replication_generators
from changerate_bayes.diagnostics import crawl_calibration, poisson_gof
from changerate_bayes.diagnostics._crawl import calibration_from_windows, window_multiples
from changerate_bayes.validation._preset import Preset, Progress


def _bounds(d, level=0.999):
    lo, hi = stats.binom.interval(level, d, 0.05)
    return lo / d, hi / d


def test_binomial_interval_by_hand():
    # Bin(2000, 0.05): 99% central interval [78, 122] (scipy.stats.binom.ppf)
    lo, hi = G.binomial_interval(2000)
    assert (lo * 2000, hi * 2000) == (stats.binom.ppf(0.005, 2000, 0.05), stats.binom.isf(0.005, 2000, 0.05))
    assert 0.035 < lo < 0.05 < hi < 0.065


def test_simulators_have_rate_one_and_their_shape():
    d, n = 400, 200
    gens = replication_generators(3, d)
    pois = G.simulate_times("poisson", n, gens)
    assert pois.shape == (d, n) and np.all(np.diff(pois, axis=1) > 0)
    assert abs(pois[:, -1].mean() - n) < 4 * np.sqrt(n / d)  # t_n ~ Gamma(n, 1)
    gaps = np.diff(G.simulate_times("weibull", n, replication_generators(4, d)), axis=1).ravel()
    cv = 1.2605127868071078  # sqrt(Γ(1 + 2/0.8) / Γ(1 + 1/0.8)² - 1)
    assert abs(gaps.mean() - 1) < 4 * cv / np.sqrt(gaps.size)
    drift = G.simulate_times("drift", n, replication_generators(5, d))
    late = np.mean(drift > n / 2)  # ∫_{1/2}^1 (1 + 2x) dx / 2 = 0.625
    # given n, the events of a row are i.i.d. with density (1 + 2x)/2 on [0, 1]: binomial SE
    assert abs(late - 0.625) < 4 * np.sqrt(0.625 * 0.375 / (d * n))
    hawkes = G.simulate_times("hawkes", n, replication_generators(6, d))
    assert np.all(np.diff(hawkes, axis=1) >= 0)
    # stationary Hawkes: Var N(T) / T -> 1 / (1 - 0.5)^2 = 4, so t_n has sd about 2 sqrt(n)
    assert abs(hawkes[:, -1].mean() - n) < 4 * 2 * np.sqrt(n) / np.sqrt(d)
    assert np.mean(np.std(np.diff(hawkes, axis=1), axis=1)) > 1.3  # bursty: gap CV well above 1


def test_simulation_rows_do_not_depend_on_the_other_rows():
    gens = replication_generators(8, 6)
    gens2 = replication_generators(8, 6)
    full = G.simulate_times("hawkes", 30, gens)
    part = G.simulate_times("hawkes", 30, gens2[2:4])
    assert np.array_equal(full[2:4], part)


def test_vectorised_pvalues_match_poisson_gof():
    gens = replication_generators(9, 3)
    times = G.simulate_times("poisson", 120, gens)
    null = G._null_statistics(120, 4999, np.random.default_rng(0))
    pv = G.pvalues_vectorised(times, np.zeros(3), null)
    for i in range(3):
        r = poisson_gof(times[i], n_resamples=999, rng=i)
        for k in ("laplace_trend", "mil_hdbk_189", "dispersion_index", "anderson_darling"):
            assert pv[k][i] == pytest.approx(r.tests[k].pvalue, rel=1e-9), k
        assert pv["ks_lilliefors"][i] == pytest.approx(r.tests["ks_lilliefors"].pvalue, rel=1e-9)
        for k in ("ks_bootstrap", "ad_bootstrap", "cvm_bootstrap", "gap_cv"):
            # two Monte Carlo estimates (1000 and 5000 samples) of one p-value: 4 SE of the
            # difference; a two-sided p = 2 p1 has SE 2 sqrt(p1 (1 - p1) / M); 1e-3 for the
            # (1 + #)/(M + 1) offset
            p = r.tests[k].pvalue
            p1 = p / 2 if k == "gap_cv" else p
            f = 2 if k == "gap_cv" else 1
            se = f * np.sqrt(p1 * (1 - p1) / 1000 + p1 * (1 - p1) / 5000) + 1e-3
            assert abs(pv[k][i] - p) < 4 * se, k


def test_vectorised_calibration_matches_the_library():
    gens = replication_generators(10, 2)
    det, horizon = G.simulate_crawl_detections("poisson", 300, gens, ratio=0.1, delay=0.0)
    p = G.pvalues_calibration(det, horizon, np.random.default_rng(3), ratio=0.1)
    # the same windows through the library function
    mult = window_multiples(1 / 0.1, 1.0)
    g = np.random.default_rng(3)
    n_draw = int(horizon / np.mean(mult) * 1.5) + 20
    m = g.choice(mult, size=n_draw)
    ends = 0.5 + np.cumsum(m)
    keep = ends <= horizon - 0.5
    edges = np.concatenate(([0.5], ends[keep]))
    for i in range(2):
        r = calibration_from_windows(det[i], edges, m[keep], mult, 1.0)
        assert p[i] == pytest.approx(r.pvalue, rel=1e-6)


def test_size_of_every_test_under_h0():
    d, n = 1000, 50
    gens = replication_generators(21, d)
    times = G.simulate_times("poisson", n, gens)
    offset = np.array([g.uniform(0, 168) for g in gens])
    pv = G.pvalues_vectorised(times, offset, G._null_statistics(n, 2999, np.random.default_rng(22)))
    lo, hi = _bounds(d)
    checked = 0
    # hour of day: with 24 cells, too few of the datasets of 50 events pass Cochran's rule;
    # the segmentation tests: in the next test
    for k in (t for t in G.TESTS if t not in ("hour_of_day", "segments_dispersion", "time_rescaling")):
        ran = np.isfinite(pv[k])
        lo_k, hi_k = _bounds(int(ran.sum()))
        assert ran.sum() >= 500, k
        assert lo_k <= np.mean(pv[k][ran] <= 0.05) <= hi_k, k
        checked += 1
    assert checked == 10
    # the pitfall: plain KS with the plug-in rate is far too conservative
    assert np.mean(pv[G.PITFALL] <= 0.05) < lo


def test_size_of_segmentation_and_calibration_tests_under_h0():
    d = 150
    gens = replication_generators(23, d)
    pv = G.pvalues_segments(G.simulate_times("poisson", 30, gens), gens, 99)
    for k in ("segments_dispersion", "time_rescaling"):
        ran = np.isfinite(pv[k])
        lo, hi = _bounds(int(ran.sum()))
        assert lo <= np.mean(pv[k][ran] <= 0.05) <= hi, k
    d = 600
    det, horizon = G.simulate_crawl_detections("poisson", 300, replication_generators(24, d), ratio=0.1)
    p = G.pvalues_calibration(det, horizon, np.random.default_rng(25), ratio=0.1)
    ran = np.isfinite(p)
    lo, hi = _bounds(int(ran.sum()))
    assert ran.sum() > 500 and lo <= np.mean(p[ran] <= 0.05) <= hi


def test_crawl_simulator_detects_with_probability_ratio():
    d, n, q = 200, 100, 0.3
    det, horizon = G.simulate_crawl_detections("poisson", n, replication_generators(30, d), ratio=q)
    assert horizon == round(n / q)
    counts = np.array([x.size for x in det])  # Bin(N, q) detections per row
    assert abs(counts.mean() - horizon * q) < 4 * np.sqrt(horizon * q * (1 - q) / d)
    frac = np.concatenate([x - np.floor(x) for x in det])  # recorded up to 0.2 c after the crawl
    assert frac.min() >= 0 and frac.max() < G.CRAWL_DELAY
    late, _ = G.simulate_crawl_detections("poisson", n, replication_generators(31, 50), ratio=q, schedule_delay=1.0)
    assert np.mean(np.concatenate([x - np.floor(x) for x in late]) > 0.5) > 0.3  # crawls run late
    hawkes, n_crawls = G.simulate_crawl_detections("hawkes", n, replication_generators(32, d), ratio=q)
    gaps = np.concatenate([np.diff(np.round(x)) for x in hawkes])
    seen = sum(x.size for x in hawkes) / (d * n_crawls)  # detections per crawl (bursts merge: below q)
    # bursts: the crawl after a detection detects far more often than a crawl at random (8 SE apart)
    assert np.mean(gaps == 1) > seen + 8 * np.sqrt(seen * (1 - seen) / gaps.size)


def test_size_of_the_crawl_tests_under_h0():
    """Every test poisson_gof runs on crawl detections, at c / mean gap = 0.3 (where the old
    jittered-Lilliefors approximation rejected most datasets): 300 datasets of 100 detections."""
    d = 300
    gens = replication_generators(33, d)
    det, horizon = G.simulate_crawl_detections("poisson", 100, gens, ratio=0.3)
    pv = G.pvalues_crawl(det, gens, n_resamples=39, n_seg=100)
    pv["crawl_calibration"] = G.pvalues_calibration(det, horizon, np.random.default_rng(34), ratio=0.3)
    checked = 0
    for k in G.CRAWL_TESTS:
        ran = np.isfinite(pv[k])
        if ran.sum() < 50:  # hour of day: Cochran's rule fails with 100 detections over 2 weeks
            continue
        lo, hi = _bounds(int(ran.sum()))
        assert lo <= np.mean(pv[k][ran] <= 0.05) <= hi, k
        checked += 1
    assert checked == 8
    assert np.mean(pv[G.CRAWL_PITFALL] <= 0.05) > 0.5  # the approximation that was replaced


def test_power_against_bursty_alternatives_exceeds_size():
    d, n = 300, 100
    gens = replication_generators(26, d)
    null = G._null_statistics(n, 1999, np.random.default_rng(27))
    for alt, tests in (
        ("hawkes", ("ks_lilliefors", "gap_cv", "dispersion_index")),
        ("drift", ("laplace_trend", "mil_hdbk_189")),
    ):
        pv = G.pvalues_vectorised(G.simulate_times(alt, n, gens), np.zeros(d), null)
        _, hi = _bounds(d)
        for k in tests:
            assert np.mean(pv[k] <= 0.05) > hi, (alt, k)


def test_crawl_pvalues_are_the_library_results():
    from changerate_bayes.diagnostics._grid import crawl_grid, grid_results

    det, _ = G.simulate_crawl_detections("hawkes", 400, replication_generators(28, 2), ratio=0.1)
    pv = G.pvalues_crawl(det, replication_generators(29, 2), n_resamples=39, n_seg=0)
    for i, g in enumerate(replication_generators(29, 2)):  # the same streams, by hand
        res, _ = grid_results(
            crawl_grid(det[i], 1.0), clock0_hours=g.uniform(0.0, 168.0), n_resamples=39, rng=g, n_qq=0
        )
        for k in ("geometric_gaps", "gap_cv", "laplace_trend", "mil_hdbk_189", "dispersion_index"):
            assert pv[k][i] == res[k].pvalue, k
    assert np.isnan(pv["segments_dispersion"]).all()  # n_seg = 0: not segmented
    r = crawl_calibration(det[0], 1.0, rng=0)
    assert r.ran and 0 <= r.pvalue <= 1


def test_run_and_render_at_tiny_size(monkeypatch):
    monkeypatch.setitem(G.SIZES, "quick", G._sizes(40, 199, (5, 3, 1), 19, (20, 20, 5), 19))
    monkeypatch.setattr(G, "N_EVENTS", (20, 100))
    res = G.run(Preset("quick"), seed=1, progress=Progress(quiet=True))
    assert set(res) == set(G.KEYS)
    text = json.dumps(res, allow_nan=False)
    back = json.loads(text)
    sizes = {(r["test"], r["n_events"], r["crawl_ratio"]) for r in back["gof_size"]}
    assert ("ks_lilliefors", 20, None) in sizes and (G.PITFALL, 100, None) in sizes
    for q in G.CRAWL_RATIOS:
        assert all((k, 100, q) in sizes for k in (*G.CRAWL_TESTS, G.CRAWL_PITFALL))
    assert {r["schedule"] for r in back["gof_size"] if r["data"] == G.CRAWL} == {G.REGULAR, G.IRREGULAR}
    assert {r["alternative"] for r in back["gof_power"]} == {"weibull", "hawkes", "drift", "hawkes (crawled)"}
    for r in back["gof_size"]:
        assert r["rejection_rate"] is None or 0 <= r["rejection_rate"] <= 1
    html = G.render(back)
    assert "<table" in html and html.count("data:image/png;base64") == 3 and "pitfall" in html
    assert "Crawl detections" in html and "irregular schedule" in html
