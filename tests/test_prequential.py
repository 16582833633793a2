"""The prequential study's parts: discounted counts, plug-in predictions, scores, bootstrap,
the Open Terms Archive padding, and one small run and render."""

import json

import numpy as np
import pytest

import changerate_bayes.validation.prequential as P
from changerate_bayes import dynamic_posterior
from changerate_bayes.validation._preset import Preset, Progress

# the tests that compile the dynamic filter's kernels run in one pytest-xdist worker, so that a
# fresh checkout compiles them once, not once in every worker at the same time (conftest.py)
pytestmark = pytest.mark.xdist_group("dynamic_kernels")


def test_discounted_rate_by_hand():
    changed = np.array([[1, 0]])
    tau = np.array([[2.0, 1.0]])
    r = P.discounted_rate(changed, tau, gamma=0.5)
    # crawl 1: q = 1.5/2 = 0.75, tau_bar = 2 -> -log(0.25)/2
    assert r[0, 0] == pytest.approx(np.log(4) / 2)
    # crawl 2: s = 0.5, c = 1.5, t = 2, q = 1/2.5, tau_bar = 2/1.5
    assert r[0, 1] == pytest.approx(-np.log1p(-0.4) / (2 / 1.5))


def test_plug_in_uses_the_estimate_before_the_crawl():
    est = np.array([[1.0, 2.0, np.inf]])
    tau = np.array([[1.0, 0.5, 0.25]])
    p = P._plug_in(est, tau)
    np.testing.assert_allclose(p, [[0.0, 1 - np.exp(-0.5), 1 - np.exp(-0.5)]])


def test_scores_clip_and_skip_the_burn_in():
    k = P.BURN_IN + 2
    p = np.full((1, k), 0.0)
    p[0, -1] = 0.25
    changed = np.zeros((1, k), dtype=np.int8)
    changed[0, -2] = 1
    log_s, brier = P.scores(p, changed, np.ones((1, k), dtype=bool))
    assert np.isnan(log_s[0, : P.BURN_IN]).all()
    assert log_s[0, -2] == pytest.approx(np.log(P.CLIP)) and log_s[0, -1] == pytest.approx(np.log(0.75))
    assert brier[0, -2] == pytest.approx((1 - P.CLIP) ** 2)


def test_block_bootstrap_interval_covers_a_constant_shift():
    rng = np.random.default_rng(0)
    diff = 0.1 + rng.standard_normal((3, 400)) * 0.01
    lo, hi = P.block_bootstrap_diff(diff, 300, rng)
    assert lo < diff.mean() < hi and hi - lo < 0.01


def test_static_method_is_sigma_zero():
    rng = np.random.default_rng(1)
    tau = rng.exponential(1.0, (2, 60))
    changed = (rng.random((2, 60)) < 0.3).astype(np.int8)
    pred = P.predictions(changed, tau)
    ref = dynamic_posterior((changed, tau), sigma=0.0, prior=P._prior(), grid=P.GRID, smooth=False)
    np.testing.assert_array_equal(pred["static"], ref.predictions["change_probability"].values)
    assert set(P.METHODS) <= set(pred) and all(pred[m].shape == (2, 60) for m in P.METHODS)


def test_ota_history_reference_copy_and_intervals():
    changed, tau, mask, pages, mean_tau = P.ota_history(5)
    assert changed.shape == tau.shape == mask.shape == (69, 5) and mask.all()
    import pandas as pd

    from changerate_bayes.datasets import dataset_path

    d = pd.read_csv(dataset_path("ota_crawls_dating"))
    first = d[d["page"] == pages[0]].assign(t=lambda x: pd.to_datetime(x["fetch_time"], utc=True)).sort_values("t")
    hours = first["t"].diff().dt.total_seconds().values[1:6] / 3600
    np.testing.assert_allclose(tau[0] * mean_tau[0], hours)
    assert changed[0].tolist() == first["changed_filtered"].tolist()[1:6]


@pytest.mark.slow
def test_run_and_render_quick(monkeypatch, tmp_path):
    monkeypatch.setitem(
        P.SIZES, "quick", {"R": 1, "max_crawls": 120, "ota_max": 100, "sim_pages": 60, "sim_crawls": 30, "n_boot": 20}
    )
    res = P.run(Preset("quick"), seed=3, progress=Progress(quiet=True))
    assert set(res) == set(P.KEYS)
    json.dumps(res, allow_nan=False)
    html = P.render(res)
    assert "Prequential scores" in html and "ODC-BY" in html
    s = P.summarize(res)
    assert s["kind"] in ("holds", "fails", "finding") and s["verdict"] and s["key_number"]
