"""The freshness index, the index policies and the clairvoyant reference of the replay."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize

from changerate_bayes.replay import (
    POLICIES,
    ClairvoyantPolicy,
    GridLearner,
    IndexPolicy,
    OldestFirst,
    freshness_index,
    pages_from_table,
    predictive_freshness_index,
    replay_metrics,
    replay_policies,
    run_replay,
)


# ------------------------------------------------------------------ the closed form
def test_index_hand_values():
    # Δ = 1, t = 1: 1 − e^{−1}(1 + 1) = 1 − 2/e; Δ = 2, t = 0.5, w = 3: 3 (1 − 2/e) / 2
    assert float(freshness_index(1.0, 1.0)) == pytest.approx(1.0 - 2.0 / math.e, rel=1e-14)
    assert float(freshness_index(2.0, 0.5, weight=3.0)) == pytest.approx(1.5 * (1.0 - 2.0 / math.e), rel=1e-14)
    # Δ = 0: the copy never goes stale, nothing to gain; t = 0: nothing to gain
    assert float(freshness_index(0.0, 5.0)) == 0.0
    assert float(freshness_index(3.0, 0.0)) == 0.0
    # the limit t → ∞ is 1/Δ
    assert float(freshness_index(0.25, 1e4)) == pytest.approx(4.0, rel=1e-14)


@pytest.mark.parametrize("rate, t", [(1.0, 0.3), (0.01, 2.0), (5.0, 4.0), (1e-5, 3.0), (2e-4, 1.0), (1e-3, 1.0)])
def test_index_is_the_integral_of_s_dF(rate, t):
    # ν(t) = ∫_0^t s dF(s) with dF = Δ e^{−Δs} ds (either side of the series threshold Δt = 1e-3)
    ref, _ = integrate.quad(lambda s: s * rate * math.exp(-rate * s), 0.0, t, epsabs=0, epsrel=1e-13)
    assert float(freshness_index(rate, t)) == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("rate, w, lam", [(1.0, 1.0, 0.1), (0.2, 2.0, 1.5), (3.0, 0.5, 0.05)])
def test_index_at_the_lagrangian_optimum_equals_the_price(rate, w, lam):
    # Cho & Garcia-Molina: a page crawled every I has freshness (1 − e^{−ΔI})/(ΔI); under a
    # price λ per crawl the best I maximises w(1 − e^{−ΔI})/(ΔI) − λ/I. Its stationarity
    # condition is w ν(I) = λ: the index at the optimal interval equals the price.
    res = optimize.minimize_scalar(
        lambda logi: -(w * -math.expm1(-rate * math.exp(logi)) / (rate * math.exp(logi)) - lam / math.exp(logi)),
        bounds=(-10, 10),
        method="bounded",
        options={"xatol": 1e-12},
    )
    best = math.exp(res.x)
    assert float(freshness_index(rate, best, weight=w)) == pytest.approx(lam, rel=1e-6)


def test_index_input_errors():
    with pytest.raises(ValueError, match="`rate`"):
        freshness_index(-1.0, 1.0)
    with pytest.raises(ValueError, match="`elapsed`"):
        freshness_index(1.0, np.nan)
    with pytest.raises(ValueError, match="`weight`"):
        freshness_index(1.0, 1.0, weight=-2.0)
    with pytest.raises(ValueError, match="broadcast"):
        freshness_index([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="`rate`"):
        freshness_index("a", 1.0)
    with pytest.raises(ValueError, match="`form`"):
        IndexPolicy(GridLearner, name="x", form="median")
    with pytest.raises(ValueError, match="`max_interval_factor`"):
        IndexPolicy(GridLearner, name="x", max_interval_factor=0.5)


# ------------------------------------------------------------------ learners' indices
def _trained_grid(n=6, seed=3):
    rng = np.random.default_rng(seed)
    g = GridLearner(n)
    for _ in range(5):
        g.update(rng.random(n) < 0.4, rng.uniform(0.1, 10.0, n), np.ones(n, dtype=bool))
    return g, rng


def test_grid_learner_index_is_the_posterior_mean_of_the_poisson_index():
    g, rng = _trained_grid()
    t = rng.uniform(0.01, 300.0, 6)
    got = g.freshness_index(t)
    post = g._post  # the posterior on the grid nodes, brought up to date by the read
    exact = np.array([np.sum(post[i] * freshness_index(g.grid, t[i])) for i in range(6)])
    np.testing.assert_allclose(got, exact, rtol=1e-4)
    # the predictive: 1 − E[e^{−Δt}], elapsed in days (the replay's unit)
    expected = [np.sum(post[i] * -np.expm1(-g.grid * t[i])) for i in range(6)]
    np.testing.assert_allclose(g.prob_change_within(t), expected, rtol=1e-12)


def test_quadrature_index_of_a_predictive_matches_the_closed_form():
    g, rng = _trained_grid(seed=5)
    t = rng.uniform(0.01, 5.0, 6)
    np.testing.assert_allclose(predictive_freshness_index(g.prob_change_within, t), g.freshness_index(t), rtol=1e-4)


# ------------------------------------------------------------------ the policy
def _pages(n_pages, days, seed, rate=0.3):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_pages):
        t = np.sort(rng.uniform(0, days, rng.poisson(rate * days * (i + 1) / n_pages)))
        rows += [(f"p{i}", x) for x in t if 0 < x <= days]
    changes = (
        pd.DataFrame(rows, columns=["page", "timestamp"])
        if rows
        else pd.DataFrame({"page": pd.Series([], dtype=object), "timestamp": pd.Series([], dtype=float)})
    )
    win = pd.DataFrame({"page": [f"p{i}" for i in range(n_pages)], "start": 0.0, "end": float(days)})
    return pages_from_table(changes, window=win)


@pytest.mark.parametrize(
    "name",
    [
        "index_mean",
        "index_thompson",
        "paced_index_mean",
        "paced_index_thompson",
        "dynamic_index_mean",
        "dynamic_index_thompson",
        "burst_index_mean",
        "burst_index_thompson",
    ],
)
def test_index_policy_spends_the_budget(name):
    pages = _pages(8, 60, seed=1)
    budget = 2.5
    res = run_replay(pages, POLICIES[name](), budget=budget, dt_ms=3_600_000, epoch_steps=24, rng=0)
    # every token is used: ⌊B·T⌋ crawls over the T = 60 days (all pages always crawlable)
    assert int(res.crawls.sum()) == math.floor(budget * 60)


class _Recording(IndexPolicy):
    def reset(self, ctx):
        super().reset(ctx)
        self.times = [[s] for s in ctx.start]

    def select(self, k, t, active, allowed):
        mask = super().select(k, t, active, allowed)
        for i in np.flatnonzero(mask):
            self.times[i].append(t)
        return mask


#: the replays of the property tests of the revisit bound: up to 7 pages, 5 to 40 days
REVISIT_CASES = {
    "n_pages": st.integers(1, 7),
    "days": st.integers(5, 40),
    "budget": st.floats(0.2, 6.0),
    "form": st.sampled_from(["mean", "thompson"]),
    "seed": st.integers(0, 1000),
    "late": st.lists(st.floats(0.0, 0.8), min_size=7, max_size=7),
}


def _fast_and_slow_pages(rng, draw_from, draw_to, starts, ends):
    """Pages p0, p1, ... in the windows [starts[i], ends[i]] days: the even ones change very often
    (20 a day: their index saturates at w/Δ), the odd ones rarely (0.05 a day); page i's changes
    are Poisson times drawn on [draw_from[i], draw_to[i]], those up to starts[i] dropped."""
    rows = []
    for i in range(len(starts)):
        rate = 20.0 if i % 2 == 0 else 0.05
        t = np.sort(rng.uniform(draw_from[i], draw_to[i], rng.poisson(rate * (draw_to[i] - draw_from[i]))))
        rows += [(f"p{i}", x) for x in t if x > starts[i]]
    changes = (
        pd.DataFrame(rows, columns=["page", "timestamp"])
        if rows
        else pd.DataFrame({"page": pd.Series([], dtype=object), "timestamp": pd.Series([], dtype=float)})
    )
    win = pd.DataFrame({"page": [f"p{i}" for i in range(len(starts))], "start": starts, "end": ends})
    return pages_from_table(changes, window=win)


def _assert_no_revisit_exceeds(pol, pages):
    """No page waits longer than the policy's stated bound between crawls, or after its last one."""
    bound = pol.max_revisit_days
    end = (pages.end_ms - pages.start_ms.min()) / 86_400_000
    for i in range(pages.n_pages):
        gaps = np.diff(np.append(pol.times[i], end[i]))
        assert gaps.max() <= bound + 1e-9, (i, gaps.max(), bound)


@settings(max_examples=25, deadline=None)
@given(**REVISIT_CASES, factor=st.floats(1.0, 5.0))
def test_no_revisit_exceeds_the_stated_bound(n_pages, days, budget, factor, form, seed, late):
    starts = [late[i] * days for i in range(n_pages)]
    pages = _fast_and_slow_pages(np.random.default_rng(seed), [0] * n_pages, [days] * n_pages, starts, float(days))
    pol = _Recording(GridLearner, name="rec", form=form, max_interval_factor=factor)
    res = run_replay(pages, pol, budget=budget, dt_ms=3_600_000, epoch_steps=24, rng=seed)
    assert pol.max_revisit_days == pytest.approx(factor * n_pages / budget + (n_pages + 1) / budget + 2 / 24)
    _assert_no_revisit_exceeds(pol, pages)
    assert int(res.crawls.sum()) <= math.floor(budget * days + 1e-9)


# ------------------------------------------------------------------ the clairvoyant reference
def test_clairvoyant_on_a_hand_made_replay():
    # Window [0, 10] days, 1-day steps, budget 0.5/day: crawls are allowed at days 2, 4, 6, 8, 10
    # (at most ⌊0.5 t⌋ by day t), unused ones are kept. Page a changes at 1.5 and 6.5, page b at
    # 2.5 and 8.2. The clairvoyant crawls a at 2 (stale from 1.5), b at 4 (only one crawl
    # by day 3), a at 7 (the token of day 6 kept), b at 9: stale 0.5 + 1.5 + 0.5 + 0.8 = 3.3 of
    # 20 page-days. No schedule does better: a and b cannot both be crawled by day 3, and
    # each change is seen at the first whole day after it at the earliest.
    changes = pd.DataFrame({"page": ["a", "a", "b", "b"], "timestamp": [1.5, 6.5, 2.5, 8.2]})
    window = pd.DataFrame({"page": ["a", "b"], "start": [0.0, 0.0], "end": [10.0, 10.0]})
    names = [
        "uniform",
        "index_mean",
        "index_thompson",
        "dynamic_index_mean",
        "dynamic_index_thompson",
        "burst_index_mean",
        "burst_index_thompson",
        "posterior_mean",
        "thompson",
        "oracle",
        "oracle_proportional",
        "clairvoyant",
    ]
    df = replay_policies(
        changes, window=window, budget=0.5, policies=names, step="1D", epoch="1D", match_schedules=False, rng=0
    )
    f = df.set_index("policy")["freshness"]
    assert f["clairvoyant"] == pytest.approx(16.7 / 20, abs=1e-12)
    assert (f.drop("clairvoyant") <= f["clairvoyant"] + 1e-12).all()
    assert df["within_budget"].all()


def test_clairvoyant_sees_every_change_with_a_large_budget():
    pages = _pages(5, 30, seed=2)
    res = run_replay(pages, ClairvoyantPolicy(), budget=200.0, dt_ms=3_600_000, rng=0)
    # each change is caught at the first step after it: stale < 1 hour per change
    m = replay_metrics(res)
    assert res.detected.sum() == res.changes.sum()
    assert 1.0 - m["freshness"] <= res.changes.sum() / 24.0 / res.window_days.sum() + 1e-12


def test_burst_index_closed_form_matches_the_integral_of_its_predictive():
    # ν(t) = t F(t) − ∫_0^t F by quadrature of the filter's own predictive (8-point Gauss-Legendre
    # over [0, t], exact to ~1e-10 for these smooth F at t <= 3 days) against the signed mixture
    from changerate_bayes.bursts import BurstParameters
    from changerate_bayes.replay._learners import burst_learner

    rng = np.random.default_rng(4)
    f = burst_learner(8, params=BurstParameters(0.05, 3.0, 0.1, 1.5), scales=(0.3, 1.0, 3.0))
    for _ in range(4):
        f.update(rng.random(8) < 0.5, rng.uniform(0.05, 3.0, 8), rng.random(8) < 0.8)
    t = rng.uniform(0.02, 3.0, 8)
    np.testing.assert_allclose(f.freshness_index(t), predictive_freshness_index(f.prob_change_within, t), rtol=2e-4)


# ------------------------------------------------------------------ the pace of the crawls
def _allowance_by_definition(first, last, n_steps, budget, dt):
    """Crawls allowed by each step k = 0 .. n_steps with pace="pages", from the definition: at most
    ⌊b Σ_{j<=k} n_j dt⌋ and at most ⌊B k dt⌋, b = B K dt / (Σ_j n_j dt), n_j the pages crawlable at step j."""
    n = [sum(1 for f, last_step in zip(first, last) if f <= j <= last_step) for j in range(n_steps + 1)]
    b = budget * n_steps * dt / (sum(n) * dt)
    out, acc = [], 0.0
    for k in range(n_steps + 1):
        acc += b * n[k] * dt
        out.append(min(math.floor(acc + 1e-9), math.floor(budget * k * dt + 1e-9)))
    return out


class _Counting(IndexPolicy):
    def reset(self, ctx):
        super().reset(ctx)
        self.by_step = {}

    def select(self, k, t, active, allowed):
        mask = super().select(k, t, active, allowed)
        self.by_step[k] = int(mask.sum())
        return mask


def test_paced_crawls_follow_the_pages_in_the_crawl():
    # Page a is in the crawl on days (0, 10], page b on (5, 10]; 1-day steps, B = 0.75/day: 7.5
    # crawls over 15 page-days, b = 0.5 per page-day. Allowed by step k (hand-computed): ⌊0.5 k⌋ up
    # to day 5 (one page), then ⌊2.5 + (k − 5)⌋, and never more than ⌊0.75 k⌋:
    # 0, 1, 1, 2, 2, 3, 4, 5, 6, 7 for k = 1 .. 10. Unpaced, the same budget gives ⌊0.75 k⌋ capped
    # by one crawl a step while only page a is crawlable: 0, 1, 2, 3, 3, 4, 5, 6, 6, 7.
    changes = pd.DataFrame({"page": ["a", "b"], "timestamp": [3.5, 7.5]})
    win = pd.DataFrame({"page": ["a", "b"], "start": [0.0, 5.0], "end": [10.0, 10.0]})
    pages = pages_from_table(changes, window=win)
    hand = [0, 1, 1, 2, 2, 3, 4, 5, 6, 7]
    assert _allowance_by_definition([1, 6], [10, 10], 10, 0.75, 1.0)[1:] == hand
    bounds = {}
    for pace, want in (("pages", hand), ("collection", [0, 1, 2, 3, 3, 4, 5, 6, 6, 7])):
        pol = _Counting(GridLearner, name="c", pace=pace)
        res = run_replay(pages, pol, budget=0.75, dt_ms=86_400_000, epoch_steps=1, rng=0)
        cum = np.cumsum([pol.by_step.get(k, 0) for k in range(1, 11)])
        assert cum.tolist() == want, pace
        assert int(res.crawls.sum()) == 7
        bounds[pace] = pol.max_revisit_days
    # M + (N + 1)/B + 2 dt with M = 4 N/B; paced: M = 4/b and the slowest allowance min(B, b n_min) = 0.5
    assert bounds["collection"] == pytest.approx(4.0 * 2 / 0.75 + 3 / 0.75 + 2.0)
    assert bounds["pages"] == pytest.approx(4.0 / 0.5 + 3 / 0.5 + 2.0)


@settings(max_examples=25, deadline=None)
@given(**REVISIT_CASES, early=st.lists(st.floats(0.3, 1.0), min_size=7, max_size=7))
def test_paced_spend_matches_its_definition_and_keeps_the_revisit_bound(n_pages, days, budget, form, seed, late, early):
    starts = [late[i] * days * 0.5 for i in range(n_pages)]
    ends = [max(starts[i] + 1.0, early[i] * days) for i in range(n_pages)]
    pages = _fast_and_slow_pages(np.random.default_rng(seed), starts, ends, starts, ends)

    class _Both(_Recording, _Counting):
        pass

    pol = _Both(GridLearner, name="rec", form=form, pace="pages")
    run_replay(pages, pol, budget=budget, dt_ms=3_600_000, epoch_steps=24, rng=seed)
    ctx = pol.ctx
    allowed = _allowance_by_definition(ctx.first_step.tolist(), ctx.last_step.tolist(), ctx.n_steps, budget, ctx.dt)
    cum = np.cumsum([pol.by_step.get(k, 0) for k in range(ctx.n_steps + 1)])
    assert (cum <= np.asarray(allowed)).all()
    _assert_no_revisit_exceeds(pol, pages)


def test_bad_pace():
    with pytest.raises(ValueError, match="`pace` must be 'collection' or 'pages'; got 'days'"):
        IndexPolicy(GridLearner, name="x", pace="days")


def test_paced_uniform_is_round_robin():
    # 3 pages always in the crawl, B = 1/day, 1-day steps: oldest copy first gives each page a
    # crawl every N/B = 3 days once every page has been crawled once (pacing changes nothing here)
    changes = pd.DataFrame({"page": ["a", "b", "c"], "timestamp": [1.5, 4.5, 7.5]})
    win = pd.DataFrame({"page": ["a", "b", "c"], "start": 0.0, "end": 30.0})
    pages = pages_from_table(changes, window=win)
    pol = _Recording(OldestFirst, name="paced_uniform", pace="pages")
    res = run_replay(pages, pol, budget=1.0, dt_ms=86_400_000, epoch_steps=1, rng=0)
    for times in pol.times:
        assert np.diff(times[1:]).tolist() == [3.0] * (len(times) - 2)
    assert res.crawls.tolist() == [10, 10, 10]
    assert POLICIES["paced_uniform"]().pace == "pages"
