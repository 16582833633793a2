"""Change signals in the replay: the table's checks, when each policy sees a signal, the
signal-aware index rule, its reduction without signals, and a case where signals pay."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from changerate_bayes.replay import (
    POLICY_NAMES,
    GridLearner,
    HindsightSignalIndexPolicy,
    IndexPolicy,
    OldestFirst,
    SignalFirstPolicy,
    SignalIndexPolicy,
    effective_elapsed,
    hindsight_signal_parameters,
    pages_from_table,
    replay_policies,
    run_replay,
    signal_times,
)
from changerate_bayes.replay._engine import ReplayContext
from changerate_bayes.signals import unchanged_given_signals


def _pages(n_pages=8, days=40.0, seed=0):
    """Poisson change times of pages with rates from 0.05 to 1 per day, windows [0, days]."""
    gen = np.random.default_rng(seed)
    rates = np.geomspace(0.05, 1.0, n_pages)
    rows = []
    for i, r in enumerate(rates):  # a test fixture: a loop over a few pages
        k = gen.poisson(r * days)
        rows += [(f"p{i}", t) for t in np.sort(gen.uniform(0.0, days, k))]
    changes = pd.DataFrame(rows, columns=["page", "timestamp"])
    window = pd.DataFrame({"page": [f"p{i}" for i in range(n_pages)], "start": 0.0, "end": days})
    return changes, window


def _noisy_signals(changes, window, *, recall, false_rate, seed):
    """The change times kept with probability ``recall``, plus Poisson(false_rate) false signals per page."""
    gen = np.random.default_rng(seed)
    kept = changes[gen.random(len(changes)) < recall]
    rows = []
    for p, s, e in window[["page", "start", "end"]].itertuples(index=False):  # a fixture loop over pages
        k = gen.poisson(false_rate * (e - s))
        rows += [(p, t) for t in gen.uniform(s, e, k)]
    return pd.concat([kept, pd.DataFrame(rows, columns=["page", "timestamp"])], ignore_index=True)


# ----------------------------------------------------------------------------- the rule
def test_effective_elapsed_matches_the_hand_derivation_and_the_model():
    # Δ = 0.5, q = 0.5, ν = 0.25: qΔ + ν = 0.5, J = log(0.5/0.25)/0.5 = 2 log 2
    t, n = np.array([10.0, 10.0, 3.0, 0.0]), np.array([0, 1, 2, 0])
    got = effective_elapsed(t, n, 0.5, 0.5, 0.25)
    assert got == pytest.approx([5.0, 5.0 + 2 * math.log(2), 1.5 + 4 * math.log(2), 0.0], rel=1e-13)
    # e^{-Δ t_eff} is the model's P(unchanged | t, n)
    assert np.exp(-0.5 * got) == pytest.approx(unchanged_given_signals(t, n, 0.5, 0.5, 0.25), rel=1e-12)


def test_effective_elapsed_limits():
    t = np.array([4.0, 4.0, 4.0, 4.0])
    # q = 0: t exactly, whatever n; ν = 0 < q: one signal makes the page due (capped); Δ -> 0: J -> q/ν
    got = effective_elapsed(t, [3, 0, 1, 2], [0.3, 0.3, 0.3, 0.0], [0.0, 0.8, 0.8, 0.5], [0.1, 0.0, 0.0, 0.25])
    assert got[0] == 4.0
    assert got[1] == pytest.approx(0.2 * 4.0)
    assert got[2] == 1e7
    assert got[3] == pytest.approx(0.5 * 4.0 + 2 * 0.5 / 0.25)


def _context(n, *, budget=2.0, n_steps=100, dt=0.25, epoch_steps=1000):
    return ReplayContext(
        n_pages=n,
        dt=dt,
        n_steps=n_steps,
        first_step=np.ones(n, dtype=np.int64),
        last_step=np.full(n, n_steps, dtype=np.int64),
        start=np.zeros(n),
        weights=np.ones(n),
        budget=budget,
        epoch_steps=epoch_steps,
        rng=np.random.default_rng(0),
    )


def test_signal_index_is_the_crawl_index_at_the_effective_elapsed_time():
    pol = SignalIndexPolicy()
    pol.reset(_context(3))
    reference = GridLearner(3)
    for learner in (pol.learner, reference):  # the same crawls seen
        learner.update(np.array([True, False, True]), np.array([2.0, 3.0, 1.0]), np.ones(3, dtype=bool))
    pol.change_rate[:] = [0.5, 0.2, 0.1]
    pol.recall[:] = [0.5, 0.9, 0.7]
    pol.false_rate[:] = [0.25, 0.05, 0.0]
    pol.signals.receive(np.array([0, 2, 2], dtype=np.int64), np.array([1.0, 1.5, 2.0]))
    pol.signals.ever[1] = True  # page 1: signalled before, none since its crawl
    elapsed = np.array([10.0, 4.0, 3.0])
    t_eff = np.array([5.0 + 2 * math.log(2), 0.1 * 4.0, 1e7])  # J = 2 log 2; n = 0; ν = 0 < q, two signals
    assert pol._index(1, elapsed.copy()) == pytest.approx(reference.freshness_index(t_eff), rel=1e-12)
    # a page never signalled keeps the plain index at t, exactly
    pol.signals.ever[1] = False
    assert pol._index(1, elapsed.copy())[1] == reference.freshness_index(elapsed)[1]


# ----------------------------------------------------------------------------- reductions
@pytest.mark.slow
def test_every_policy_without_signals_is_unchanged_and_blind_to_them():
    changes, window = _pages(n_pages=5, days=12.0)
    sig = _noisy_signals(changes, window, recall=0.8, false_rate=0.5, seed=1)
    kw = dict(window=window, budget=1.5, step="6h", n_boot=10, tune_iterations=2, rng=5)
    policies = list(POLICY_NAMES)
    base = replay_policies(changes, policies=policies, **kw)  # signals=None: the default
    told = replay_policies(changes, policies=policies, signals=sig, **kw)
    pd.testing.assert_frame_equal(base, told, check_exact=True)  # no built-in policy reads signals


@pytest.mark.parametrize(
    ("signal_policy", "plain"),
    [
        ("paced_index_signals", "paced_index_mean"),
        ("paced_index_signals_rate", "paced_index_mean"),
        ("paced_on_signal", "paced_uniform"),
        ("paced_hindsight_signals", "paced_oracle"),
    ],
)
def test_signal_policies_without_signals_are_their_plain_versions(signal_policy, plain):
    changes, window = _pages(seed=2)
    kw = dict(window=window, budget=[0.8, 4.0], step="6h", epoch="2D", match_schedules=False, rng=3)
    a = replay_policies(changes, policies=[plain, signal_policy], **kw)
    empty = pd.DataFrame({"page": pd.Series([], dtype=str), "timestamp": pd.Series([], dtype=float)})
    b = replay_policies(changes, policies=[plain, signal_policy], signals=empty, **kw)
    for df in (a, b):
        x = df[df.policy == plain].drop(columns="policy").reset_index(drop=True)
        y = df[df.policy == signal_policy].drop(columns="policy").reset_index(drop=True)
        pd.testing.assert_frame_equal(x, y, check_exact=True)


def test_the_signal_rate_bound_multiplies_the_crawl_posterior_by_the_signal_count_likelihood():
    pol = SignalIndexPolicy(signal_rate_bound=True)
    pol.reset(_context(4, n_steps=400))
    gen = np.random.default_rng(2)
    crawls = []  # (I, τ) per page, as the reference learner sees them
    t = 0.0
    for k in range(1, 41):  # ten days of steps of 6 h, every page crawled every other step
        t = k * 0.25
        n_sig = gen.poisson([0.2, 0.05, 0.5, 0.0])
        pol.receive_signals(k, np.repeat(np.arange(4), n_sig), np.full(n_sig.sum(), t))
        if k % 2 == 0:
            mask = np.ones(4, dtype=bool)
            changed = gen.random(4) < [0.3, 0.1, 0.2, 0.05]
            pol.signals.crawled(mask)
            pol.observe(k, t, changed, np.full(4, 0.5), mask)
            crawls.append((changed, 0.5))
    pol._fit(t)
    assert pol.fits == 1
    grid = pol.learner.grid
    for i in range(4):  # the definition, page by page: S log(qΔ + ν) − (qΔ + ν) E on the grid
        q = pol.recall[i] if pol.signals.ever[i] else 0.0
        lam = q * grid + pol.false_rate[i]
        want = np.array([pol.signals.total[i] * math.log(x) - x * t for x in lam]) if q > 0 else np.zeros(grid.size)
        assert pol.learner.extra[i] == pytest.approx(want, rel=1e-12, abs=1e-12)
        # the posterior mean the index reads: prior × crawls × signal count, on the grid
        log_w = pol.learner.log_prior + want
        for changed, tau in crawls:
            log_w = log_w + (np.log(-np.expm1(-grid * tau)) if changed[i] else -grid * tau)
        w = np.exp(log_w - log_w.max())
        assert pol.learner.rate[i] == pytest.approx((w @ grid) / w.sum(), rel=1e-9)
    assert not pol.signals.ever[3] and not pol.learner.extra[3].any()  # never signalled: the crawls only
    with pytest.raises(TypeError, match="`signal_rate_bound` must be a bool"):
        SignalIndexPolicy(signal_rate_bound=1)


# ----------------------------------------------------------------------------- the hindsight reference
def test_hindsight_parameters_are_the_counts_of_matched_and_unmatched_signals():
    # page 0 (T = 10 d): changes at 1, 2, 3 ms-days, signals at 2, 3 (true) and 7, 8 (false)
    # page 1 (T = 5 d): one change at 4, no signal; page 2 (T = 2 d): a false signal only
    d, q, nu = hindsight_signal_parameters(
        [0, 0, 0, 1], [1, 2, 3, 4], [0, 0, 0, 0, 2], [2, 3, 7, 8, 4], [10.0, 5.0, 2.0]
    )
    assert d.tolist() == [0.3, 0.2, 0.0]
    assert q.tolist() == [2 / 3, 0.0, 0.0]
    assert nu.tolist() == [0.2, 0.0, 0.5]
    # a signal of another page at the same instant is not a match
    _, q2, nu2 = hindsight_signal_parameters([0], [5], [1], [5], [1.0, 1.0])
    assert q2.tolist() == [0.0, 0.0] and nu2.tolist() == [0.0, 1.0]
    # an empty window: no rate at all
    assert hindsight_signal_parameters([], [], [], [], [0.0])[2].tolist() == [0.0]
    with pytest.raises(ValueError, match="`signal_page` must hold page positions 0 .. 1"):
        hindsight_signal_parameters([0], [1], [2], [1], [1.0, 1.0])
    with pytest.raises(ValueError, match="`change_page` and `change_ms` must have the same length"):
        hindsight_signal_parameters([0, 0], [1], [], [], [1.0])
    with pytest.raises(ValueError, match="`window_days`"):
        hindsight_signal_parameters([], [], [], [], [1.0, -1.0])


def test_hindsight_signal_index_with_signals_that_never_match_a_change_is_the_paced_oracle():
    changes, window = _pages(seed=4)
    false = _noisy_signals(changes.iloc[:0], window, recall=0.0, false_rate=2.0, seed=5)  # q = 0 on every page
    kw = dict(window=window, budget=[0.8, 4.0], step="6h", epoch="2D", match_schedules=False, rng=3)
    df = replay_policies(changes, policies=["paced_oracle", "paced_hindsight_signals"], signals=false, **kw)
    x = df[df.policy == "paced_oracle"].drop(columns="policy").reset_index(drop=True)
    y = df[df.policy == "paced_hindsight_signals"].drop(columns="policy").reset_index(drop=True)
    pd.testing.assert_frame_equal(x, y, check_exact=True)


def test_hindsight_signal_index_counts_its_parameters_from_the_replay():
    changes, window = _pages(n_pages=4, days=20.0, seed=6)
    sig = _noisy_signals(changes, window, recall=0.5, false_rate=1.0, seed=7)
    pages = pages_from_table(changes, window=window)
    pol = HindsightSignalIndexPolicy()
    run_replay(pages, pol, budget=2.0, dt_ms=6 * 3_600_000, rng=0, signals=signal_times(sig, pages))
    true = sig.merge(changes, on=["page", "timestamp"])
    for i, name in enumerate(pages.names):  # a check over four pages
        n_i = int((changes["page"] == name).sum())
        m_i = int((true["page"] == name).sum())
        f_i = int((sig["page"] == name).sum()) - m_i
        assert pol.recall[i] == pytest.approx(m_i / n_i if n_i else 0.0, rel=1e-12)
        assert pol.false_rate[i] == pytest.approx(f_i / 20.0, rel=1e-12)
        assert pol.change_rate[i] == pytest.approx(n_i / 20.0, rel=1e-12)


# ----------------------------------------------------------------------------- delivery
class _Recorder(IndexPolicy):
    def __init__(self):
        super().__init__(OldestFirst, name="recorder")
        self.got: list = []

    def receive_signals(self, k, page, t):
        self.got.append((k, page.tolist(), t.tolist()))


def test_a_signal_is_visible_from_the_first_step_at_or_after_it():
    changes = pd.DataFrame({"page": ["a", "b"], "timestamp": [3.0, 5.0]})
    window = pd.DataFrame({"page": ["a", "b"], "start": [0.0, 0.0], "end": [10.0, 10.0]})
    pages = pages_from_table(changes, window=window)
    one_ms = 1 / 86_400_000
    sig = pd.DataFrame({"page": ["a", "b", "a"], "timestamp": [2.0, 2.0 + one_ms, 0.5]})
    pol = _Recorder()
    run_replay(pages, pol, budget=48.0, dt_ms=3_600_000 * 6, rng=0, signals=signal_times(sig, pages))
    # steps of 6 h: 0.5 d is step 2, 2.0 d step 8 exactly, 1 ms later step 9
    assert pol.got == [(2, [0], [0.5]), (8, [0], [2.0]), (9, [1], [2.0 + one_ms])]


def test_crawl_on_signal_serves_signalled_pages_first_oldest_signal_first():
    pol = SignalFirstPolicy(pace="collection")
    pol.reset(_context(4, budget=4.0, dt=0.25))  # one crawl a step
    pol.signals.receive(np.array([2, 1], dtype=np.int64), np.array([0.3, 0.2]))
    active = np.ones(4, dtype=bool)
    first = pol.select(2, 0.5, active, 1)
    second = pol.select(3, 0.75, active, 1)
    third = pol.select(4, 1.0, active, 1)  # no signal left: the oldest copy (page 0, then 3)
    assert np.flatnonzero(first).tolist() == [1]
    assert np.flatnonzero(second).tolist() == [2]
    assert np.flatnonzero(third).tolist() in ([0], [3])


# ----------------------------------------------------------------------------- signals pay
def test_perfect_signals_beat_the_paced_hindsight_oracle():
    changes, window = _pages(n_pages=30, days=120.0, seed=7)
    rate = len(changes) / 120.0
    df = replay_policies(
        changes,
        window=window,
        budget=rate,
        policies=[
            "uniform",
            "paced_oracle",
            "paced_index_signals",
            "paced_on_signal",
            "paced_hindsight_signals",
            "clairvoyant",
        ],
        signals=changes,  # recall 1, no false signal
        step="6h",
        epoch="1D",
        n_boot=200,
        rng=11,
    )
    for name in ("paced_index_signals", "paced_hindsight_signals"):
        sig = df.set_index("policy").loc[name]
        # the paired page-bootstrap interval of the ratio to the paced oracle lies above 1
        assert sig["vs_paced_oracle_lo"] > 1.0
        assert sig["gap_share_lo"] > 0.5  # more than half of the gap from round robin to clairvoyant
        assert sig["within_budget"]


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("table", "message"),
    [
        (pd.DataFrame({"page": ["a"], "time": [1.0]}), r"`signals` lacks column\(s\) \['timestamp'\]"),
        (pd.DataFrame({"page": ["a", "zz"], "timestamp": [1.0, 2.0]}), r"column 'page': page 'zz' is not among"),
        (pd.DataFrame({"page": ["x", "y"], "timestamp": [1.0, 2.0]}), r"none of its 2 rows names a replayed page"),
        (pd.DataFrame({"page": ["a", "a"], "timestamp": [1.0, 1.0]}), r"page 'a' has two signals at timestamp 1.0"),
        (pd.DataFrame({"page": ["a"], "timestamp": [-1.0]}), r"column 'timestamp': -1.0 of page 'a' is before"),
        (pd.DataFrame({"page": ["b"], "timestamp": [11.0]}), r"column 'timestamp': 11.0 of page 'b' is after"),
        (pd.DataFrame({"page": ["a"], "timestamp": ["soon"]}), r"row 0 of `signals`.*not a finite number"),
    ],
)
def test_bad_signal_tables_are_refused_by_name(table, message):
    changes = pd.DataFrame({"page": ["a", "b"], "timestamp": [3.0, 5.0]})
    window = pd.DataFrame({"page": ["a", "b"], "start": [0.0, 0.0], "end": [10.0, 10.0]})
    with pytest.raises(ValueError, match=message):
        replay_policies(changes, window=window, budget=1.0, policies=["paced_on_signal"], signals=table)


def test_signals_outside_a_single_window_are_left_out_and_caps_are_refused():
    changes = pd.DataFrame({"page": ["a", "b"], "timestamp": [3.0, 5.0]})
    pages = pages_from_table(changes, window=(0.0, 10.0))
    sig = pd.DataFrame({"page": ["a", "a", "b", "b"], "timestamp": [-1.0, 0.0, 4.0, 12.0]})
    page, t_ms = signal_times(sig, pages, per_page_windows=False)
    assert page.tolist() == [1] and t_ms.tolist() == [4 * 86_400_000]
    with pytest.raises(TypeError, match="`signals` must be a pandas DataFrame"):
        replay_policies(changes, window=(0.0, 10.0), budget=1.0, policies=["uniform"], signals=[1, 2])
    with pytest.raises(ValueError, match="`signals` cannot be combined with `host_budgets`"):
        replay_policies(
            changes,
            window=(0.0, 10.0),
            budget=1.0,
            policies=["uniform"],
            signals=sig.iloc[2:3],
            hosts={"a": "h", "b": "h"},
            host_budgets=1.0,
        )


def test_signal_policy_arguments_are_checked():
    with pytest.raises(ValueError, match="`draws` must be an integer >= 1"):
        SignalIndexPolicy(draws=0)
    with pytest.raises(ValueError, match="`prior_growth` must be a finite number >= 1"):
        SignalIndexPolicy(prior_growth=0.5)


def test_a_credit_grid_policy_that_reads_signals_is_fed_at_every_step_it_acts():
    from changerate_bayes.replay import UniformPolicy

    class Listening(UniformPolicy):
        def receive_signals(self, k, page, t):
            self.heard = getattr(self, "heard", []) + page.tolist()

    changes = pd.DataFrame({"page": ["a", "b"], "timestamp": [3.0, 5.0]})
    pages = pages_from_table(changes, window=(0.0, 10.0))
    sig = pd.DataFrame({"page": ["a", "b", "b"], "timestamp": [1.0, 2.0, 7.5]})
    pol = Listening(name="listening")
    quiet = run_replay(pages, UniformPolicy(), budget=4.0, dt_ms=3_600_000, rng=0)
    heard = run_replay(pages, pol, budget=4.0, dt_ms=3_600_000, rng=0, signals=signal_times(sig, pages))
    assert pol.heard == [0, 1, 1]
    assert (quiet.fresh_days == heard.fresh_days).all() and (quiet.crawls == heard.crawls).all()


@pytest.mark.parametrize("policy", [SignalIndexPolicy, SignalFirstPolicy])
def test_signal_policies_spend_the_crawls_of_the_paced_index_at_every_step(policy):
    from changerate_bayes.replay import POLICIES

    changes, window = _pages(n_pages=12, days=30.0, seed=4)
    pages = pages_from_table(changes, window=window)
    # a burst of signals on half the pages: the crawls move between pages, never add up
    sig = _noisy_signals(changes, window, recall=1.0, false_rate=2.0, seed=5)
    kw = dict(budget=3.0, dt_ms=6 * 3_600_000, epoch_steps=4, rng=0)
    logs: dict = {"plain": [], "signals": []}
    run_replay(pages, POLICIES["paced_index_mean"](), fetch_log=logs["plain"], **kw)
    run_replay(pages, policy(), fetch_log=logs["signals"], signals=signal_times(sig, pages), **kw)
    per_step = {k: {int(s[0]): len(p) for s, p in v} for k, v in logs.items()}
    assert per_step["plain"] == per_step["signals"]


def test_a_crawl_without_interval_leaves_the_other_crawls_to_learn_from():
    """A crawl at its window's first step (interval 0) carries no information: it is left out of
    the fit's data, and the other crawls are kept (page 0: τ = 2, changed, 1 signal; page 1: τ = 1)."""
    from changerate_bayes.replay._signals import _SignalCounts

    counts = _SignalCounts(3)
    counts.at_crawl[:] = [1, 0, 4]
    counts.record(np.array([1, 0, 1]), np.array([2.0, 1.0, 0.0]), np.array([True, True, True]))
    data, seen = counts.data(np.zeros(3))
    assert seen.tolist() == [0, 1]
    assert data.intervals.tolist() == [2.0, 1.0]
    assert data.changed.tolist() == [1, 0]
    assert data.signals.tolist() == [1, 0]
    only_zero = _SignalCounts(2)
    only_zero.record(np.array([0, 1]), np.array([0.0, 0.0]), np.array([True, True]))
    assert only_zero.data(np.zeros(2)) is None
