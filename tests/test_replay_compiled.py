"""The compiled replay paths (engine scoring, credit grid, grid learner) against the replay
written out from its definition: ``_replay_by_definition`` visits every step, asks the policy
which pages it crawls, shows each crawled page only I = 1{a change since its last crawl} and
τ, and scores each page from its crawl times (fresh for min(first change, next crawl) − crawl,
age (next crawl − first change)²/2); ``_GridByDefinition`` keeps each page's crawls and reads
the grid posterior, its MLE and its draws from the likelihood on the documented grid. The
compiled replay equals both bit for bit for every built-in policy, at budgets that bind and
that do not, with pages entering and leaving their windows; user policies and misbehaving
policies take the same path. The built-in policies' results are also checked exactly against
arrays stored in tests/data/replay_reference.npz (made by tests/data/make_replay_reference.py),
which pin the credit grid's own kernels. Nutch's and StormCrawler's compiled updates are
checked against their Python path (their rules: ``tests/test_replay_baselines.py``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _helpers import staggered_pages
from hypothesis import given, settings
from hypothesis import strategies as st

from changerate_bayes.replay import _engine as new_engine
from changerate_bayes.replay import _kernels as new_kernels
from changerate_bayes.replay import _learners as new_learners
from changerate_bayes.replay import _policies as new_policies
from changerate_bayes.replay import _replay as new_replay
from changerate_bayes.replay import pages_from_table
from changerate_bayes.replay._engine import ReplayContext
from changerate_bayes.replay._pages import MS_PER_DAY, ReplayPages

_DATA = Path(__file__).parent / "data"
_spec = importlib.util.spec_from_file_location("make_replay_reference", _DATA / "make_replay_reference.py")
stored = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stored)
STORED = np.load(_DATA / "replay_reference.npz")

HOUR_MS = stored.HOUR_MS
FIELDS = ("window_days", "fresh_days", "age_area", "crawls", "detected", "changes", "weights")
SCHEDULES = ("nutch", "nutch_nosync", "stormcrawler")


# ----------------------------------------------------------------- the replay by its definition
def _replay_by_definition(
    pages: ReplayPages, policy, *, budget=None, dt_ms: int = HOUR_MS, epoch_steps: int = 24, rng=None
) -> new_engine.ReplayResult:
    """Every step k = 1..K at t_k = t0 + k·dt; a budgeted policy may have crawled
    floor(B·(t_k − t0)) pages by t_k; page i is crawlable at the steps with s_i < t_k <= e_i."""
    n, t0 = pages.n_pages, int(pages.start_ms.min())
    start, end = pages.start_ms - t0, pages.end_ms - t0
    first, last = start // dt_ms + 1, end // dt_ms
    n_steps = -(-int(end.max()) // dt_ms)
    ctx = ReplayContext(
        n_pages=n,
        dt=dt_ms / MS_PER_DAY,
        n_steps=n_steps,
        first_step=first,
        last_step=last,
        start=start / MS_PER_DAY,
        weights=pages.weights,
        budget=float(budget) if policy.budgeted else None,
        epoch_steps=int(epoch_steps),
        rng=np.random.default_rng(rng),
        true_rates=pages.true_rates if getattr(policy, "oracle", False) else None,
    )
    policy.reset(ctx)
    changes = [pages.change_ms[pages.offsets[i] : pages.offsets[i + 1]] - t0 for i in range(n)]
    crawled = [[int(s)] for s in start]  # each page's crawl times (ms after t0), the first copy first
    spent = 0
    for k in range(1, n_steps + 1):
        t = k * dt_ms
        active = (first <= k) & (k <= last)
        allowed = int(np.floor(ctx.budget * (t / MS_PER_DAY) + 1e-9)) - spent if policy.budgeted else None
        mask = policy.select(k, t / MS_PER_DAY, active.copy(), allowed)
        idx = np.flatnonzero(mask)
        if not idx.size:
            continue
        if not active[idx].all():
            raise RuntimeError(f"policy {policy.name!r} crawled a page outside its window at step {k}")
        if allowed is not None and idx.size > allowed:
            raise RuntimeError(
                f"policy {policy.name!r} overspent its budget at step {k}: {idx.size} crawls, {allowed} allowed"
            )
        changed, interval = np.zeros(n, dtype=bool), np.zeros(n)
        for i in idx:
            changed[i] = np.any((changes[i] > crawled[i][-1]) & (changes[i] <= t))
            interval[i] = (t - crawled[i][-1]) / MS_PER_DAY
            crawled[i].append(t)
        spent += idx.size
        policy.observe(k, t / MS_PER_DAY, changed, interval, mask)
    fresh, age = np.zeros(n), np.zeros(n)
    for i in range(n):
        for a, b in zip(crawled[i], crawled[i][1:] + [int(end[i])]):
            c = int(changes[i][changes[i] > a].min(initial=np.iinfo(np.int64).max))  # first change after a
            fresh[i] += (min(c, b) - a) / MS_PER_DAY
            late = (b - c) / MS_PER_DAY if c < b else 0.0
            age[i] += 0.5 * late * late
    return new_engine.replay_result(
        policy,
        ctx,
        pages,
        fresh,
        age,
        np.array([len(c) - 1 for c in crawled], dtype=np.int64),
        np.array(
            [sum(np.any((ch > a) & (ch <= b)) for a, b in zip(cr, cr[1:])) for ch, cr in zip(changes, crawled)],
            dtype=np.int64,
        ),
    )


def _assert_same_result(new, ref):
    assert new.policy == ref.policy and new.budget == ref.budget and new.span_days == ref.span_days
    for f in FIELDS:
        a, b = getattr(new, f), getattr(ref, f)
        assert a.dtype == b.dtype and np.array_equal(a, b), f


def _assert_stored(result, label, name):
    for f in stored.FIELDS:
        want = STORED[f"{label}/{name}/{f}"]
        got = getattr(result, f)
        assert got.dtype == want.dtype and np.array_equal(got, want), (label, name, f)


def _replay_both(pages, name, **kw):
    """The compiled replay of a built-in policy, checked against the replay by definition."""
    new = new_engine.run_replay(pages, new_policies.POLICIES[name](), **kw)
    _assert_same_result(new, _replay_by_definition(pages, new_policies.POLICIES[name](), **kw))
    return new


class _CountBinding:
    """Wraps a RatePolicy: counts the steps where more pages are due than allowed."""

    def __init__(self, policy):
        self.policy, self.binds = policy, 0

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def select(self, k, t, active, allowed):
        if k >= self.policy.next_alloc or k >= self.policy.next_change:
            self.policy._allocate(k, active)
        self.binds += int((self.policy.due <= k).sum() > allowed)
        return self.policy.select(k, t, active, allowed)


# ----------------------------------------------------------------- built-in policies
@pytest.mark.parametrize("case", stored.CASES, ids=[f"{c[0]}h-epoch{c[1]}-B{c[2]}" for c in stored.CASES])
def test_every_builtin_policy_replays_as_defined_and_as_stored(case):
    hours, epoch, budget, seed, binding = case
    label = f"{hours}h-epoch{epoch}-B{budget}"
    pages = staggered_pages(seed)
    binds = {}
    for name in stored.BUDGETED:
        kw = dict(budget=budget, dt_ms=hours * HOUR_MS, epoch_steps=epoch, rng=seed)
        new = new_engine.run_replay(pages, new_policies.POLICIES[name](), **kw)
        ref_policy = _CountBinding(new_policies.POLICIES[name]())
        _assert_same_result(new, _replay_by_definition(pages, ref_policy, **kw))
        _assert_stored(new, label, name)
        binds[name] = ref_policy.binds
        assert new.crawls.sum() <= budget * pages.span_days + 1e-9
    # the budget-binding "most credit first" branch was exercised (or never, as expected)
    assert all((binds[p] > 0) == binding for p in ("uniform", "thompson", "oracle")), binds


def test_compiled_steps_hand_the_learner_its_crawls_in_small_batches(monkeypatch):
    """The compiled steps keep room for one step of crawls only: they stop and resume often."""
    monkeypatch.setattr(new_engine, "_EVENT_STEPS", 1)
    pages = staggered_pages(12)
    for name in ["thompson", "lln", "mle"]:
        _assert_stored(
            _replay_both(pages, name, budget=4.0, dt_ms=6 * HOUR_MS, epoch_steps=40, rng=12), "batches", name
        )


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_pages=st.integers(1, 6),
    hours=st.sampled_from([1, 5, 24]),
    budget=st.floats(0.1, 8.0),
    epoch=st.integers(1, 6),
    name=st.sampled_from(["uniform", "lln", "mle", "thompson", "oracle", "oracle_proportional"]),
)
def test_small_replays_equal_the_replay_by_definition(seed, n_pages, hours, budget, epoch, name):
    pages = staggered_pages(seed, n_pages=n_pages, days=6.0, n_quiet=min(1, n_pages - 1))
    _replay_both(pages, name, budget=budget, dt_ms=hours * HOUR_MS, epoch_steps=epoch, rng=seed)


def _eager_subclass(base):
    class Eager(base):
        """A user RatePolicy whose allocation makes the pages outside their windows due at the next step."""

        def __init__(self):
            super().__init__("eager")

        def _rates(self, a):
            return np.full(a.size, self.ctx.budget / a.size)

        def _allocate(self, k, active):
            super()._allocate(k, active)
            self.due[~active] = k + 1

    return Eager()


def test_a_rate_policy_crawling_outside_the_windows_raises_as_defined():
    pages = staggered_pages(13)
    kw = dict(budget=50.0, dt_ms=6 * HOUR_MS, epoch_steps=4, rng=0)
    with pytest.raises(RuntimeError) as new:
        new_engine.run_replay(pages, _eager_subclass(new_policies.RatePolicy), **kw)
    with pytest.raises(RuntimeError) as ref:
        _replay_by_definition(pages, _eager_subclass(new_policies.RatePolicy), **kw)
    assert str(new.value) == str(ref.value) and "outside its window at step 2" in str(new.value)


@pytest.mark.parametrize("name", ["dynamic_mean", "dynamic_thompson"])
def test_dynamic_policies_replay_as_defined_and_as_stored(name):
    pages = staggered_pages(4, n_pages=10, days=20.0)
    _assert_stored(_replay_both(pages, name, budget=1.5, dt_ms=6 * HOUR_MS, epoch_steps=4, rng=4), "dynamic", name)


def test_pages_that_never_change_replay_as_defined():
    changes = pd.DataFrame({"page": pd.Series([], dtype=str), "timestamp": pd.Series([], dtype=float)})
    win = pd.DataFrame({"page": ["a", "b", "c"], "start": [0.0, 2.0, 5.0], "end": [10.0, 7.0, 10.0]})
    pages = pages_from_table(changes, window=win)
    assert pages.change_ms.size == 0
    for name in ["uniform", "thompson"]:
        new = _replay_both(pages, name, budget=1.0, dt_ms=12 * HOUR_MS, epoch_steps=2, rng=0)
        # never stale: fresh throughout, no age, no change detected
        np.testing.assert_array_equal(new.fresh_days, new.window_days)
        assert not new.age_area.any() and not new.detected.any() and new.crawls.sum() > 0


def test_replay_policies_table_is_as_defined_and_as_stored(monkeypatch):
    changes, kw = stored.table_inputs()
    new = new_replay.replay_policies(changes, **kw)
    for col in new.columns:
        want = STORED[f"table/{col}"]
        got = new[col].to_numpy()
        if got.dtype == object:
            assert np.array_equal(got.astype(str), want), col
        else:
            assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=got.dtype.kind == "f"), col
    np.testing.assert_array_equal(new.index.to_numpy(), STORED["table/index"])
    # the same table from the replay by definition
    monkeypatch.setattr(new_replay, "run_replay", _replay_by_definition)
    pd.testing.assert_frame_equal(new, new_replay.replay_policies(changes, **kw), check_exact=True)


# ----------------------------------------------------------------- user policies
def _proportional_subclass(base):
    class Proportional(base):
        """A user RatePolicy: rates ∝ weight, learning nothing."""

        def __init__(self):
            super().__init__("proportional")

        def _rates(self, a):
            w = self.ctx.weights[a]
            return self.ctx.budget * w / w.sum()

    return Proportional()


def _python_path(base):
    """A user schedule subclass that changes nothing: it takes the Python ``_update`` path."""

    class Same(base):
        def _update(self, i, t, changed):
            super()._update(i, t, changed)

    return Same


@pytest.mark.parametrize("seed", [10, 11])
def test_schedules_compiled_update_equals_their_python_path(seed):
    pages = staggered_pages(seed)
    n = pages.n_pages
    for hours in (1, 6):
        kw = dict(dt_ms=hours * HOUR_MS, rng=0)
        for cls, overrides in [
            (new_policies.NutchPolicy, {}),
            (new_policies.NutchPolicy, dict(sync_delta=False)),
            (new_policies.NutchPolicy, dict(version="1.21", max_interval=2.0, initial_interval=1.0)),
            (new_policies.NutchPolicy, dict(inc_rate=np.linspace(0.1, 3.0, n), max_fetch_interval=5.0)),
            (new_policies.StormCrawlerPolicy, {}),
            (new_policies.StormCrawlerPolicy, dict(inc_rate=np.linspace(0.1, 3.0, n), min_interval=0.3)),
        ]:
            fast = new_engine.run_replay(pages, cls(**overrides), **kw)
            slow = new_engine.run_replay(pages, _python_path(cls)(**overrides), **kw)
            _assert_same_result(fast, slow)
            assert fast.crawls.sum() > 0


class _RandomCrawler:
    """A user protocol object: crawls a random subset of the active pages, within the budget."""

    budgeted = True
    oracle = False
    name = "random"

    def reset(self, ctx):
        self.ctx, self.seen = ctx, []

    def next_step(self, k):
        return k

    def select(self, k, t, active, allowed):
        a = np.flatnonzero(active & (self.ctx.rng.random(self.ctx.n_pages) < 0.3))
        mask = np.zeros(self.ctx.n_pages, dtype=bool)
        mask[a[:allowed]] = True
        return mask

    def observe(self, k, t, changed, interval, mask):
        self.seen.append((k, t, changed.copy(), interval.copy(), mask.copy()))


def test_user_policies_replay_as_defined():
    pages = staggered_pages(6)
    weights = np.random.default_rng(6).uniform(0.5, 2.0, pages.n_pages)
    pages = ReplayPages(
        pages.names, pages.start_ms, pages.end_ms, pages.change_ms, pages.offsets, weights, pages.origin
    )
    kw = dict(budget=1.2, dt_ms=6 * HOUR_MS, epoch_steps=4, rng=6)
    _assert_same_result(
        new_engine.run_replay(pages, _proportional_subclass(new_policies.RatePolicy), **kw),
        _replay_by_definition(pages, _proportional_subclass(new_policies.RatePolicy), **kw),
    )
    a, b = _RandomCrawler(), _RandomCrawler()
    _assert_same_result(new_engine.run_replay(pages, a, **kw), _replay_by_definition(pages, b, **kw))
    assert len(a.seen) == len(b.seen) > 0
    for x, y in zip(a.seen, b.seen):
        assert x[:2] == y[:2] and all(np.array_equal(u, v) for u, v in zip(x[2:], y[2:]))


class _Misbehaving(_RandomCrawler):
    def __init__(self, fault):
        self.fault = fault

    def select(self, k, t, active, allowed):
        if self.fault == "outside":
            return ~active if (~active).any() else np.zeros(self.ctx.n_pages, dtype=bool)
        return active.copy()  # every active page, whatever the budget


@pytest.mark.parametrize("fault", ["outside", "overspend"])
def test_misbehaving_policies_raise_the_defined_error(fault):
    pages = staggered_pages(7)
    kw = dict(budget=0.5, dt_ms=6 * HOUR_MS, epoch_steps=4, rng=0)
    with pytest.raises(RuntimeError) as new:
        new_engine.run_replay(pages, _Misbehaving(fault), **kw)
    with pytest.raises(RuntimeError) as ref:
        _replay_by_definition(pages, _Misbehaving(fault), **kw)
    assert str(new.value) == str(ref.value)
    assert ("outside its window" if fault == "outside" else "overspent its budget") in str(new.value)


# ----------------------------------------------------------------- the grid learner alone
class _GridByDefinition:
    """GridLearner's reads from its documentation: the crawls of each page are kept; the
    log-likelihood Σ_j I_j log(1 − e^{−Δτ_j}) − Δ Σ_j (1 − I_j) τ_j on 128 nodes uniform in
    log Δ over log(1/30) ± 4.5·2; ``rate`` the posterior mean under the log-normal prior
    (median 1/30, σ = 2) or the grid argmax of the likelihood refined by the parabola through
    its neighbours in log Δ (0 without a change, the end node at an end); ``sample`` the
    inverse CDF of the posterior on the nodes, uniform within a cell in log Δ."""

    def __init__(self, n, estimate="mean"):
        self.log_grid = np.log(1 / 30) + 2.0 * np.linspace(-4.5, 4.5, 128)
        self.grid, self.step = np.exp(self.log_grid), self.log_grid[1] - self.log_grid[0]
        self.crawls = [[] for _ in range(n)]
        self.estimate = estimate

    def update(self, changed, interval, mask):
        changed, interval, mask = np.broadcast_arrays(np.asarray(changed, dtype=bool), interval, mask)
        for i in np.flatnonzero(mask):
            self.crawls[i].append((bool(changed[i]), float(interval[i])))

    @property
    def loglik_changed(self):
        out = np.zeros((len(self.crawls), self.grid.size))
        for i, crawls in enumerate(self.crawls):
            for c, tau in crawls:
                if c:
                    out[i] += np.log(-np.expm1(-tau * self.grid))
        return out

    def _loglik(self):
        exposure = np.array([sum(tau for c, tau in crawls if not c) for crawls in self.crawls])
        return self.loglik_changed - exposure[:, None] * self.grid

    def _posterior(self):
        logp = self._loglik() - 0.5 * ((self.log_grid - np.log(1 / 30)) / 2.0) ** 2
        w = np.exp(logp - logp.max(axis=1, keepdims=True))
        return w / w.sum(axis=1, keepdims=True)

    def _mle(self, y, n_changed):
        if n_changed == 0:
            return 0.0
        j = int(np.argmax(y))
        if j in (0, y.size - 1):
            return float(self.grid[j])
        curvature = y[j - 1] - 2 * y[j] + y[j + 1]
        shift = min(1.0, max(-1.0, 0.5 * (y[j - 1] - y[j + 1]) / curvature)) if curvature < 0 else 0.0
        return float(np.exp(self.log_grid[j] + shift * self.step))

    @property
    def rate(self):
        if self.estimate == "mean":
            return np.array([p @ self.grid for p in self._posterior()])
        return np.array([self._mle(y, sum(c for c, _ in crawls)) for y, crawls in zip(self._loglik(), self.crawls)])

    def sample(self, rng):
        cdf = np.cumsum(self._posterior(), axis=1)
        u, jitter = rng.random(len(self.crawls)), rng.random(len(self.crawls))
        j = np.minimum([np.sum(row < x) for row, x in zip(cdf, u)], self.grid.size - 1)
        return np.exp(self.log_grid[j] + (jitter - 0.5) * self.step)

    def counts(self):
        return (
            np.array([sum(tau for c, tau in crawls if not c) for crawls in self.crawls]),
            np.array([sum(c for c, _ in crawls) for crawls in self.crawls], dtype=float),
            np.array([sum(not c for c, _ in crawls) for crawls in self.crawls], dtype=float),
        )


def _assert_reads(new, ref, what, rng_seed=None):
    if what == "rate":
        np.testing.assert_allclose(new.rate, ref.rate, rtol=RATE_RTOL, atol=0)
    elif what == "sample":
        np.testing.assert_allclose(
            new.sample(np.random.default_rng(rng_seed)),
            ref.sample(np.random.default_rng(rng_seed)),
            rtol=RATE_RTOL,
            atol=0,
        )
    else:
        assert np.array_equal(new.loglik_changed, ref.loglik_changed)


def _crawl_rounds(learners, n, *, seed, steps, p_crawl, p_changed, tau_mean):
    """Feed the same random crawls to every learner, one round per step; yields the step."""
    rng = np.random.default_rng(seed)
    for step in range(steps):
        mask, changed, tau = rng.random(n) < p_crawl, rng.random(n) < p_changed, rng.exponential(tau_mean, n)
        for learner in learners:
            learner.update(changed, tau, mask)
        yield step


#: the posterior mean is a matrix-vector product over the rows read together (its rounding
#: depends on that set of rows), the definition's a dot product per row: a few ulp apart
RATE_RTOL = 4 * np.finfo(float).eps


@pytest.mark.parametrize("estimate", ["mean", "mle"])
def test_grid_learner_reads_as_defined_between_updates(estimate):
    n = 40
    new, ref = new_learners.GridLearner(n, estimate=estimate), _GridByDefinition(n, estimate)
    # pages hit several times between reads, reads of every kind
    for step in _crawl_rounds([new, ref], n, seed=8, steps=60, p_crawl=0.3, p_changed=0.4, tau_mean=2.0):
        if step % 7 == 3:
            _assert_reads(new, ref, "rate")
        if step % 5 == 4:
            _assert_reads(new, ref, "sample", step)
        if step % 11 == 10:
            _assert_reads(new, ref, "loglik")
    _assert_reads(new, ref, "loglik")
    for f, want in zip(("exposure", "n_changed", "n_unchanged"), ref.counts()):
        np.testing.assert_allclose(getattr(new, f), want, rtol=1e-15, atol=0, err_msg=f)


def test_grid_learner_takes_scalars_and_lists():
    new, ref = new_learners.GridLearner(3), _GridByDefinition(3)
    calls = [(True, np.array([1.0, 2.0, 3.0]), [True, False, True]), ([0, 1, 1], np.array([0.5, 0.5, 4.0]), True)]
    for c, tau, m in calls:
        new.update(c, tau, m)
        ref.update(c, tau, m)
    _assert_reads(new, ref, "loglik")
    _assert_reads(new, ref, "rate")
    with pytest.raises(ValueError, match="shape"):
        new.update(np.zeros(4, bool), np.ones(4), np.ones(4, bool))


def test_count_below_counts_like_numpy_on_cumulative_weights():
    rng = np.random.default_rng(9)
    w = rng.exponential(1.0, (200, 16)) * (rng.random((200, 16)) < 0.7)  # zero weights: flat runs
    w[5] = np.nan  # a row that is NaN throughout
    w[6, 9:] = np.nan  # NaN from the middle on
    cdf = np.cumsum(w / np.nansum(w, axis=1, keepdims=True), axis=1)
    u = rng.random(200)
    u[:40] = cdf[np.arange(40), rng.integers(0, 16, 40)]  # u equal to an entry (ties)
    u[6] = 0.999
    got = new_kernels.count_below(cdf, u)
    assert np.array_equal(got, (cdf < u[:, None]).sum(axis=1))


def test_grid_learner_read_both_ways_is_as_defined():
    """An MLE learner that is also sampled: every read of either kind as defined."""
    n = 30
    new, ref, mean = new_learners.GridLearner(n, estimate="mle"), _GridByDefinition(n, "mle"), _GridByDefinition(n)
    for step in _crawl_rounds([new, ref, mean], n, seed=11, steps=50, p_crawl=0.4, p_changed=0.5, tau_mean=1.0):
        if step % 3 == 0:
            _assert_reads(new, ref, "rate")
        if step % 4 == 1:
            _assert_reads(new, ref, "sample", step)
    new.sample(np.random.default_rng(0))
    np.testing.assert_allclose(new._mean, mean.rate, rtol=RATE_RTOL, atol=0)
