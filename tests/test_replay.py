"""Replay engine, metrics, crawler schedules and the public replay_policies."""

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from _helpers import replay_learners

from changerate_bayes.replay import (
    NUTCH_DEFAULTS,
    NUTCH_MODIFIED,
    NUTCH_NOTMODIFIED,
    POLICY_NAMES,
    STORMCRAWLER_DEFAULTS,
    GridLearner,
    LLNLearner,
    nutch_update,
    pages_from_table,
    replay_metrics,
    replay_policies,
    run_replay,
    stormcrawler_update,
)

DAY_MS = 86_400_000


class FixedSteps:
    """A schedule that crawls page i at the given steps (for hand-computed metrics)."""

    budgeted = False
    oracle = False
    name = "fixed"

    def __init__(self, steps):
        self.steps = steps

    def reset(self, ctx):
        self.ctx = ctx
        self.seen = []

    def next_step(self, k):
        later = [s for ss in self.steps for s in ss if s >= k]
        return min(later) if later else self.ctx.n_steps + 1

    def select(self, k, t, active, allowed):
        return np.array([k in ss for ss in self.steps])

    def observe(self, k, t, changed, interval, mask):
        self.seen.append((k, changed.copy(), interval.copy(), mask.copy()))


def _pages(changes, windows, weights=None):
    ch = pd.DataFrame(changes, columns=["page", "timestamp"])
    win = pd.DataFrame(windows, columns=["page", "start", "end"])
    return pages_from_table(ch, window=win, weights=weights)


def _close(x, frac):
    assert x == pytest.approx(float(frac), rel=0, abs=1e-12)


# ----------------------------------------------------------------------------- metrics by hand
def test_metrics_one_page_by_hand():
    # window [0, 10] days, change at day 2, crawls at days 5 and 10:
    # fresh [0, 2) and [5, 10] -> 7/10; stale on [2, 5): ∫ (t - 2) dt = 9/2 -> mean age 9/20
    pages = _pages([("a", 2.0)], [("a", 0.0, 10.0)])
    pol = FixedSteps([[5, 10]])
    m = replay_metrics(run_replay(pages, pol, dt_ms=DAY_MS))
    _close(m["freshness"], Fraction(7, 10))
    _close(m["freshness_weighted"], Fraction(7, 10))
    _close(m["mean_age_days"], Fraction(9, 20))
    assert m["crawls"] == 2 and m["detected"] == 1 and m["changes"] == 1
    _close(m["detected_per_crawl"], Fraction(1, 2))
    # the policy saw I = 1 after τ = 5 days, then I = 0 after τ = 5 days; nothing else
    (k1, c1, t1, m1), (k2, c2, t2, m2) = pol.seen
    assert (k1, bool(c1[0]), t1[0], k2, bool(c2[0]), t2[0]) == (5, True, 5.0, 10, False, 5.0)


def test_metrics_two_pages_weighted_by_hand():
    # page a, window [0, 4], changes 1, 1.5, 3, crawls at 2 and 4: fresh [0,1) + [2,3) = 2;
    #   age: ∫_1^2 (t-1) + ∫_3^4 (t-3) = 1/2 + 1/2 = 1; both crawls see a change.
    # page b, window [1, 3], never changes, crawls at 2 and 3: fresh 2, age 0.
    # weights a = 1, b = 3: weighted (2 + 3·2)/(4 + 3·2) = 4/5; unweighted 4/6 = 2/3.
    pages = _pages(
        [("a", 1.0), ("a", 1.5), ("a", 3.0)], [("a", 0.0, 4.0), ("b", 1.0, 3.0)], weights={"a": 1.0, "b": 3.0}
    )
    m = replay_metrics(run_replay(pages, FixedSteps([[2, 4], [2, 3]]), dt_ms=DAY_MS))
    _close(m["freshness"], Fraction(2, 3))
    _close(m["freshness_weighted"], Fraction(4, 5))
    _close(m["mean_age_days"], Fraction(1, 6))
    assert (m["crawls"], m["detected"], m["changes"]) == (4, 2, 3)
    _close(m["detected_per_crawl"], Fraction(1, 2))
    _close(m["changes_caught"], Fraction(2, 3))


def test_change_at_the_crawl_instant_is_seen_and_at_the_start_is_the_initial_copy():
    # change at exactly day 5 = a crawl time: seen by that crawl, the copy is never stale;
    # a change at the window start is part of the first copy
    pages = _pages([("a", 0.0), ("a", 5.0)], [("a", 0.0, 10.0)])
    m = replay_metrics(run_replay(pages, FixedSteps([[5]]), dt_ms=DAY_MS))
    assert m["changes"] == 1 and m["detected"] == 1
    _close(m["freshness"], 1)
    _close(m["mean_age_days"], 0)


def test_never_crawled_page_is_stale_from_its_first_change():
    # window [0, 8], changes at 2 and 6, never crawled: fresh 2/8, age ∫_2^8 (t - 2) = 18 -> 18/8
    pages = _pages([("a", 2.0), ("a", 6.0)], [("a", 0.0, 8.0)])
    m = replay_metrics(run_replay(pages, FixedSteps([[]]), dt_ms=DAY_MS))
    _close(m["freshness"], Fraction(1, 4))
    _close(m["mean_age_days"], Fraction(9, 4))
    assert m["crawls"] == 0 and np.isnan(m["detected_per_crawl"])


# ----------------------------------------------------------------------------- budget and round robin
def test_uniform_is_round_robin_within_budget():
    # 4 pages, 40 days, B = 2 crawls/day: each page every 2 days (19 or 20 crawls), total <= 80
    changes = pd.DataFrame({"page": ["p0"], "timestamp": [3.0]})
    win = pd.DataFrame({"page": [f"p{i}" for i in range(4)], "start": 0.0, "end": 40.0})
    pages = pages_from_table(changes, window=win)
    res = run_replay(
        pages, __import__("changerate_bayes.replay", fromlist=["UniformPolicy"]).UniformPolicy(), budget=2.0, rng=3
    )
    assert res.crawls.sum() <= 80
    assert res.crawls.max() - res.crawls.min() <= 1
    assert res.crawls.min() >= 19


def test_budget_is_never_exceeded_by_any_budgeted_policy():
    rng = np.random.default_rng(5)
    rows = []
    starts = rng.uniform(0, 10, 30)
    for i in range(30):
        t = np.sort(rng.uniform(starts[i], 60, rng.poisson(rng.lognormal(1, 1.5))))
        rows += [(f"p{i}", x) for x in t]
    changes = pd.DataFrame(rows, columns=["page", "timestamp"])
    win = pd.DataFrame({"page": [f"p{i}" for i in range(30)], "start": starts, "end": 60.0})
    budgeted = [
        p for p in POLICY_NAMES if p not in ("nutch", "nutch_nosync", "stormcrawler") and not p.endswith("_tuned")
    ]
    df = replay_policies(
        changes, window=win, budget=[0.7, 5.0], policies=budgeted, step="2h", rng=1, match_schedules=False
    )
    assert len(df) == 2 * len(budgeted)
    assert df["within_budget"].all()
    span = 60.0 - win["start"].min()
    assert (df["crawls"] <= np.floor(df["budget"] * span + 1e-9)).all()


# ----------------------------------------------------------------------------- Nutch and StormCrawler rules
NUTCH = {k: v for k, v in NUTCH_DEFAULTS.items() if k != "initial_interval"}
STORM = {k: v for k, v in STORMCRAWLER_DEFAULTS.items() if k != "initial_interval"}


def test_stormcrawler_update_follows_the_documented_rule():
    a = lambda x: np.array([x], dtype=float)
    m = 1.0 / 24.0  # 60 minutes
    i, nxt = stormcrawler_update(a(1.0), 5.0, a(1), **STORM)  # (int)(0.5·1440 + 0.5·60) = 750 min
    assert (i[0], nxt[0]) == pytest.approx((750 / 1440, 5.0 + 750 / 1440))
    i, nxt = stormcrawler_update(a(2.0), 5.0, a(0), **STORM)
    assert (i[0], nxt[0]) == pytest.approx((3.0, 8.0))
    i, _ = stormcrawler_update(a(10.0), 5.0, a(0), **STORM)
    assert i[0] == pytest.approx(14.0)  # capped at 14 days
    i, _ = stormcrawler_update(a(m), 5.0, a(1), **STORM)
    assert i[0] == pytest.approx(m)  # never below the minimum


def _settled_fraction(update, initial, *, delta=1.0, n_pages=6000, n_crawls=300, seed=0):
    """I at crawl ``n_crawls`` of independent Poisson(Δ) pages scheduled by ``update``."""
    rng = np.random.default_rng(seed)
    interval = np.full(n_pages, float(initial))
    changed = np.zeros(n_pages, dtype=bool)
    for _ in range(n_crawls):  # a loop over crawls, vectorised over pages
        changed = rng.random(n_pages) < -np.expm1(-delta * interval)  # memoryless changes
        interval = update(interval, changed)
    return changed.mean()


@pytest.mark.parametrize("initial", [0.01, 1.0, 100.0])
def test_nutch_settles_where_a_crawl_sees_a_change_with_probability_log_ratio(initial):
    # log interval is a random walk: + log 1.4 without a change, + log 0.8 with one, so it is
    # stationary where (1 - f) log 1.4 + f log 0.8 = 0: f = log 1.4 / (log 1.4 - log 0.8) = 0.601
    f = np.log(1.4) / (np.log(1.4) - np.log(0.8))
    par = {**NUTCH, "sync_delta": False}
    upd = lambda iv, ch: nutch_update(
        iv, np.zeros_like(iv), 0.0, np.where(ch, NUTCH_MODIFIED, NUTCH_NOTMODIFIED), **par
    )[0]
    n = 6000
    got = _settled_fraction(upd, initial, n_pages=n)
    assert abs(got - f) < 4.0 * np.sqrt(f * (1 - f) / n)  # binomial standard error, pages independent


def test_stormcrawler_settles_at_log_ratio_without_its_minimum():
    # with a 1-minute minimum a change nearly halves the interval (0.5·I + 0.5 min, I ≈ 700 min
    # here): f = log 1.5 / (log 1.5 + log 2) = 0.369, off by < 0.001 for the minute and the
    # whole-minute truncation. (With a 0-minute minimum StormCrawler's int interval would stick at 0.)
    f = np.log(1.5) / (np.log(1.5) + np.log(2.0))
    par = {**STORM, "min_interval": 1 / 1440, "max_interval": 1e6}
    n = 6000
    got = _settled_fraction(lambda iv, ch: stormcrawler_update(iv, 0.0, ch, **par)[0], 1.0, n_pages=n)
    assert abs(got - f) < 4.0 * np.sqrt(f * (1 - f) / n)


def test_stormcrawler_defaults_settle_near_0_40_on_a_daily_page():
    # with the 60-minute minimum a change multiplies the interval by 0.5 + 0.5 m/I; at the settled
    # interval I* = -log(1 - f)/Δ the zero-drift condition f = log 1.5 / (log 1.5 - log(0.5 + 0.5 m/I*))
    # has the fixed point f* ≈ 0.40 (Δ = 1/day). The fixed point treats I at a change as I*;
    # allow 0.01 for that on top of 4 binomial standard errors.
    from scipy.optimize import brentq

    m = 1.0 / 24.0
    g = lambda f: f - np.log(1.5) / (np.log(1.5) - np.log(0.5 + 0.5 * m / (-np.log(1 - f))))
    f_star = brentq(g, 0.2, 0.6)
    assert 0.39 < f_star < 0.41
    n = 6000
    got = _settled_fraction(lambda iv, ch: stormcrawler_update(iv, 0.0, ch, **STORM)[0], 1.0, n_pages=n)
    assert abs(got - f_star) < 0.01 + 4.0 * np.sqrt(f_star * (1 - f_star) / n)


# ----------------------------------------------------------------------------- learners
def test_learners_respect_the_mask_and_match_their_formulas():
    lln = LLNLearner(2)
    for c, tau in [(1, 1.0), (0, 3.0), (1, 2.0), (1, 2.0)]:
        lln.update(np.array([c, 1]), np.array([tau, 9.0]), np.array([True, False]))
    # p̂ = 4/8, rate = 0.5 · 3/(4 + 1 - 3) = 0.75; page 1 was never crawled: 0
    assert lln.rate.tolist() == [0.75, 0.0]
    g = GridLearner(2, estimate="mle")
    g.update(np.array([1, 1]), np.array([1.0, 1.0]), np.array([True, False]))
    g.update(np.array([0, 1]), np.array([1.0, 1.0]), np.array([True, False]))
    # 1/(e^Δ - 1) = 1 -> Δ = log 2 (grid of step 0.14 in log Δ, refined by a parabola)
    assert g.rate[0] == pytest.approx(np.log(2.0), rel=2e-2)
    assert g.rate[1] == 0.0  # no crawl: no change seen
    post = GridLearner(1, prior_median=1.0, prior_sigma=0.5)
    assert post.rate[0] == pytest.approx(np.exp(0.125), rel=1e-3)  # log-normal prior mean e^{σ²/2}
    draws = np.array([post.sample(np.random.default_rng(i))[0] for i in range(4000)])
    se = np.sqrt(np.exp(0.25) * (np.exp(0.25) - 1) / 4000)
    assert abs(draws.mean() - np.exp(0.125)) < 4 * se + 0.005  # + the within-cell jitter


def test_any_learner_plugs_in_and_sees_only_its_crawls():
    class Recorder:
        def __init__(self, n):
            self.n, self.log = n, []

        def update(self, changed, interval, mask):
            self.log.append((changed.copy(), interval.copy(), mask.copy()))

        @property
        def rate(self):
            return np.full(self.n, 0.5)

        def sample(self, rng):
            return rng.gamma(2.0, 0.25, self.n)

    changes = pd.DataFrame({"page": ["a", "a", "b"], "timestamp": [1.5, 3.2, 2.0]})
    df, made = replay_learners(Recorder, "mine", changes)
    assert df["policy"].tolist() == ["mine", "mine_ts"]
    for rec in made:
        assert rec.log
        for changed, interval, mask in rec.log:
            assert mask.any() and (interval[mask] > 0).all()
            assert not changed[~mask].any() and (interval[~mask] == 0).all()


def test_same_seed_same_table():
    changes = pd.DataFrame({"page": ["a", "a", "b", "c"], "timestamp": [1.5, 3.2, 2.0, 0.7]})
    win = pd.DataFrame({"page": ["a", "b", "c"], "start": 0.0, "end": 6.0})
    kw = dict(window=win, budget=[1.0, 4.0], policies=["thompson", "uniform", "stormcrawler"], n_boot=50)
    a = replay_policies(changes, rng=7, **kw)
    b = replay_policies(changes, rng=7, **kw)
    pd.testing.assert_frame_equal(a, b)
    assert set(a["budget_source"]) == {"given", "own schedule", "spent by stormcrawler"}
    assert (a["freshness_lo"] <= a["freshness"] + 1e-12).all() and (a["freshness"] <= a["freshness_hi"] + 1e-12).all()


def test_tuned_schedule_spends_its_budget():
    # 20 pages, 2 changes/day in all; StormCrawler's floor is 20 pages / 14 days = 1.4 crawls/day
    rng = np.random.default_rng(2)
    rows = [(f"p{i}", x) for i in range(20) for x in np.sort(rng.uniform(0, 200, rng.poisson(20)))]
    changes = pd.DataFrame(rows, columns=["page", "timestamp"])
    win = pd.DataFrame({"page": [f"p{i}" for i in range(20)], "start": 0.0, "end": 200.0})
    df = replay_policies(
        changes, window=win, budget=[3.0, 6.0], policies=["stormcrawler_tuned"], step="6h", tune_iterations=14, rng=0
    )
    assert df["within_budget"].all()
    assert (df["crawls_per_day"] > 0.9 * df["budget"]).all()  # bisection spends nearly all of it
    assert df["inc_rate"].iloc[0] > df["inc_rate"].iloc[1]  # a smaller budget needs longer intervals


# ----------------------------------------------------------------------------- bad input
def _ok():
    changes = pd.DataFrame({"page": ["a", "a", "b"], "timestamp": ["2024-01-02", "2024-01-05", "2024-01-03"]})
    win = pd.DataFrame({"page": ["a", "b", "c"], "start": "2024-01-01", "end": "2024-01-10"})
    return changes, win


@pytest.mark.parametrize("budget", [0.0, -1.0, float("nan"), float("inf"), [1.0, 0.0]])
def test_bad_budget(budget):
    changes, win = _ok()
    with pytest.raises(ValueError, match="budget"):
        replay_policies(changes, window=win, budget=budget, policies=["uniform"])
    with pytest.raises(TypeError, match="budget"):
        replay_policies(changes, window=win, budget="3", policies=["uniform"])


def test_bad_tables_name_the_row():
    changes, win = _ok()
    bad = changes.copy()
    bad.loc[1, "timestamp"] = "2024-01-01T00:30"  # before the page's previous change
    with pytest.raises(ValueError, match=r"row 1.*sorted"):
        replay_policies(bad, window=win, budget=1.0, policies=["uniform"])
    bad = changes.copy()
    bad.loc[2, "timestamp"] = "yesterday-ish"
    with pytest.raises(ValueError, match=r"row 2.*parsable"):
        replay_policies(bad, window=win, budget=1.0, policies=["uniform"])
    with pytest.raises(ValueError, match=r"page 'b' has no window"):
        replay_policies(changes, window=win[win.page != "b"], budget=1.0, policies=["uniform"])
    with pytest.raises(ValueError, match=r"empty window"):
        replay_policies(changes, window=win.assign(end="2024-01-01"), budget=1.0, policies=["uniform"])
    with pytest.raises(ValueError, match=r"outside its window"):
        replay_policies(changes, window=win.assign(end="2024-01-04"), budget=1.0, policies=["uniform"])
    with pytest.raises(ValueError, match=r"unknown policy 'nutchy'; valid policies: uniform, nutch"):
        replay_policies(changes, window=win, budget=1.0, policies=["nutchy"])


def test_page_that_never_changes_is_valid():
    changes, win = _ok()
    df = replay_policies(changes, window=win, budget=1.0, policies=["uniform", "oracle"], rng=0)
    assert df["changes"].tolist() == [3, 3]
    assert ((df["freshness"] > 0) & (df["freshness"] <= 1)).all()
