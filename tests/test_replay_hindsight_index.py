"""The hindsight index references: the freshness index of each page's true rate n_i/T_i, unpaced and paced."""

import math

import numpy as np
import pandas as pd
import pytest

from changerate_bayes.replay import (
    POLICIES,
    POLICY_NAMES,
    HindsightIndexPolicy,
    KnownRates,
    pages_from_table,
    replay_policies,
    run_replay,
)


def _poisson_pages(rates, days, seed):
    """Poisson pages of the given rates per day, every window (0, days]."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, r in enumerate(rates):
        t = np.sort(rng.uniform(0.0, days, rng.poisson(r * days)))
        rows += [(f"p{i}", x) for x in t if x > 0]
    changes = pd.DataFrame(rows, columns=["page", "timestamp"])
    win = pd.DataFrame({"page": [f"p{i}" for i in range(len(rates))], "start": 0.0, "end": float(days)})
    return changes, win


class _Indices(HindsightIndexPolicy):
    """Records the index of every page at every step at which it crawls, and the elapsed times."""

    def reset(self, ctx):
        super().reset(ctx)
        self.seen = []

    def _index(self, k, elapsed):
        nu = super()._index(k, elapsed)
        self.seen.append((elapsed.copy(), nu.copy()))
        return nu


def test_known_rates_index_hand_values():
    # Δ = 1, t = 1: 1 − 2/e; Δ = 2, t = 0.5: (1 − 2/e)/2; Δ = 0: 0; Δ = 0.25, t = 1e4: 1/Δ = 4
    k = KnownRates([1.0, 2.0, 0.0, 0.25])
    got = k.freshness_index(np.array([1.0, 0.5, 5.0, 1e4]))
    want = [1.0 - 2.0 / math.e, 0.5 * (1.0 - 2.0 / math.e), 0.0, 4.0]
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=0.0)
    # F(t) = 1 − e^{−Δt}: 1 − 1/e at Δt = 1; the observations change nothing
    k.update(np.array([True, False, True, False]), np.array([1.0, 2.0, 3.0, 4.0]), np.ones(4, dtype=bool))
    np.testing.assert_allclose(
        k.prob_change_within(np.array([1.0, 0.5, 3.0, 0.0])),
        [1.0 - 1.0 / math.e, 1.0 - 1.0 / math.e, 0.0, 0.0],
        rtol=1e-14,
    )
    np.testing.assert_array_equal(k.rate, [1.0, 2.0, 0.0, 0.25])
    np.testing.assert_array_equal(k.sample(np.random.default_rng(0)), [1.0, 2.0, 0.0, 0.25])


def test_policy_index_is_the_poisson_index_of_n_over_T():
    # page a: 3 changes in a 30-day window (Δ = 0.1/day), b: 15 (Δ = 0.5), c: none (Δ = 0); weights 1, 2, 1
    changes = pd.DataFrame(
        {"page": ["a"] * 3 + ["b"] * 15, "timestamp": [4.0, 11.0, 25.0] + list(np.linspace(1.0, 29.0, 15))}
    )
    win = pd.DataFrame({"page": ["a", "b", "c"], "start": 0.0, "end": 30.0})
    pages = pages_from_table(changes, window=win, weights={"a": 1.0, "b": 2.0, "c": 1.0})
    np.testing.assert_allclose(pages.true_rates, [0.1, 0.5, 0.0], rtol=1e-12)
    pol = _Indices(name="x", pace="pages")
    run_replay(pages, pol, budget=0.5, dt_ms=21_600_000, epoch_steps=4, rng=0)
    assert len(pol.seen) > 10
    delta, w = np.array([0.1, 0.5, 0.0]), np.array([1.0, 2.0, 1.0])
    for elapsed, nu in pol.seen:
        # w (1 − e^{−Δt}(1 + Δt))/Δ from the definition, 0 for Δ = 0
        with np.errstate(invalid="ignore", divide="ignore"):
            hand = np.where(delta > 0, w * (1.0 - np.exp(-delta * elapsed) * (1.0 + delta * elapsed)) / delta, 0.0)
        np.testing.assert_allclose(nu, hand, rtol=1e-10, atol=1e-15)


def test_pace_changes_nothing_when_every_window_is_the_same():
    changes, win = _poisson_pages([0.05, 0.2, 0.2, 1.0, 3.0, 0.0, 0.5, 8.0], 60, seed=4)
    pages = pages_from_table(changes, window=win)
    out = {}
    for name in ("index_oracle", "paced_oracle"):
        pol = POLICIES[name]()
        res = run_replay(pages, pol, budget=3.0, dt_ms=3_600_000, epoch_steps=24, rng=0)
        out[name] = res
    a, b = out["index_oracle"], out["paced_oracle"]
    np.testing.assert_array_equal(a.crawls, b.crawls)
    np.testing.assert_array_equal(a.fresh_days, b.fresh_days)
    np.testing.assert_array_equal(a.detected, b.detected)
    assert int(a.crawls.sum()) == math.floor(3.0 * 60)
    # the fast pages get more crawls than the page that never changes, which the starvation rule still visits
    assert a.crawls[3] > a.crawls[5] >= 1


def test_replay_policies_reports_the_ratio_to_the_paced_reference():
    changes, win = _poisson_pages([0.1, 0.3, 1.0, 2.0], 30, seed=2)
    df = replay_policies(
        changes, window=win, budget=2.0, policies=["paced_uniform", "paced_oracle", "oracle"], n_boot=20, rng=0
    ).set_index("policy")
    assert df.loc["paced_oracle", "vs_paced_oracle"] == 1.0
    r = df.loc["paced_uniform"]
    assert r["vs_paced_oracle"] == pytest.approx(
        r["freshness_weighted"] / df.loc["paced_oracle", "freshness_weighted"], rel=1e-12
    )
    assert r["vs_paced_oracle_lo"] <= r["vs_paced_oracle"] <= r["vs_paced_oracle_hi"]


def test_registered_as_hindsight_references():
    for name, pace in (("index_oracle", "collection"), ("paced_oracle", "pages")):
        assert name in POLICY_NAMES
        pol = POLICIES[name]()
        assert pol.oracle and pol.budgeted and pol.pace == pace and pol.name == name


def test_without_true_rates_it_raises():
    class _NotGiven(HindsightIndexPolicy):
        oracle = False  # the engine gives true rates only to oracle policies

    changes, win = _poisson_pages([0.5, 1.0], 10, seed=0)
    pages = pages_from_table(changes, window=win)
    with pytest.raises(ValueError, match=r"hindsight reference and needs each page's true rate.*got None"):
        run_replay(pages, _NotGiven(name="x"), budget=1.0, dt_ms=3_600_000, epoch_steps=24, rng=0)


def test_known_rates_bad_input():
    with pytest.raises(ValueError, match="`rates`"):
        KnownRates([0.1, -1.0])
    with pytest.raises(ValueError, match="`rates`"):
        KnownRates([[0.1, 0.2]])
    with pytest.raises(ValueError, match="`rates`"):
        KnownRates([0.1, np.nan])
    with pytest.raises(TypeError, match="`rates`"):
        KnownRates(["a"])
