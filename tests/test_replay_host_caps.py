"""Per-host politeness caps in the replay: host queues with a token bucket per host."""

import math

import numpy as np
import pandas as pd
import pytest

from changerate_bayes.replay import POLICIES, UniformPolicy, pages_from_table, replay_policies, run_replay

HOUR = 3_600_000


def _pages(n_pages=9, days=12.0, seed=3):
    """Poisson changes (rates 0.2 .. 3 a day) of ``n_pages`` pages with windows in [0, days]."""
    rng = np.random.default_rng(seed)
    rows, wins = [], []
    for i in range(n_pages):
        start = float(rng.uniform(0.0, 2.0))
        end = float(days - rng.uniform(0.0, 2.0))
        rate = float(rng.uniform(0.2, 3.0))
        t = start + np.cumsum(rng.exponential(1.0 / rate, size=200))
        t = t[t <= end]
        rows.append(pd.DataFrame({"page": f"p{i}", "timestamp": t}))
        wins.append({"page": f"p{i}", "start": start, "end": end})
    changes = pd.concat(rows, ignore_index=True)
    return changes, pd.DataFrame(wins)


def _host_of(i: int) -> str:
    return ("a", "b", "c")[i % 3]


class _Orders:
    """An own schedule ordering the pages ``orders[k]`` (bool (K + 1, N)) at every step k; with
    ``honour``, only those the engine says are crawlable (the pages waiting are not)."""

    budgeted = False
    oracle = False

    def __init__(self, orders, honour=True):
        self.name = "orders"
        self.orders = orders
        self.honour = honour

    def reset(self, ctx):
        self.ctx = ctx

    def next_step(self, k):
        return k

    def select(self, k, t, active, allowed):
        want = self.orders[min(k, self.orders.shape[0] - 1)]
        if self.honour:
            return want & active
        return want & self.ctx.active(k)  # ignores the waiting pages: those orders merge

    def observe(self, k, t, changed, interval, mask):
        pass


def _reference_queue(orders, first, last, codes, caps, dt, n_steps, honour=True):
    """The host queues from their definition, step by step: per host a FIFO list and a token
    bucket min(C, T + a·(k − u)), C = max(1, ⌈a⌉), full at the start."""
    n_hosts = caps.size
    a = caps * dt
    cap = np.maximum(1.0, np.ceil(a - 1e-9))
    tokens, upd = cap.copy(), np.zeros(n_hosts, dtype=np.int64)
    queues = [[] for _ in range(n_hosts)]
    waiting = np.zeros(codes.size, dtype=bool)
    fetched = []
    for k in range(1, n_steps + 1):
        active = (first <= k) & (k <= last)
        want = orders[min(k, orders.shape[0] - 1)] & active
        if honour:
            want &= ~waiting
        for i in np.flatnonzero(want):
            if not waiting[i]:
                waiting[i] = True
                queues[codes[i]].append(int(i))
        for h in range(n_hosts):
            v = min(cap[h], tokens[h] + a[h] * (k - upd[h]))
            allow = math.floor(v + 1e-9)
            f = 0
            while queues[h] and f < allow:
                i = queues[h].pop(0)
                waiting[i] = False
                if active[i]:
                    fetched.append((k, i))
                    f += 1
            if f:
                tokens[h], upd[h] = v - f, k
    return sorted(fetched)


def _log_pairs(log):
    return sorted((int(s), int(p)) for steps, pages in log for s, p in zip(steps, pages))


def _per_host_step_counts(log, codes, n_hosts, n_steps):
    counts = np.zeros((n_hosts, n_steps + 1), dtype=np.int64)
    for steps, pages in log:
        np.add.at(counts, (codes[pages], steps), 1)
    return counts


def test_hosts_without_caps_and_caps_that_never_bind_change_nothing():
    changes, win = _pages(days=6.0)
    changes["host"] = changes["page"].map(lambda p: _host_of(int(p[1:])))
    pols = ["uniform", "nutch", "stormcrawler", "mle", "thompson", "index_mean", "paced_index_thompson", "oracle"]
    pols += ["index_oracle", "clairvoyant", "nutch_tuned"]
    kw = dict(window=win, budget=8.0, policies=pols, step="1h", epoch="1D", rng=5, tune_iterations=4)
    kw["match_schedules"] = False
    plain = replay_policies(changes.drop(columns="host"), **kw)
    pd.testing.assert_frame_equal(plain, replay_policies(changes, hosts="host", **kw))
    # caps far above any step's fetches: every crawl is fetched when ordered, the plans are the
    # optimum without caps, so every number is the same to the last bit
    roomy = replay_policies(changes, hosts="host", host_budgets=1e6, **kw)
    pd.testing.assert_frame_equal(plain, roomy)


def test_round_robin_on_one_host_at_one_fetch_a_step_alternates():
    # two pages, one host capped at 24/day = one fetch per 1-hour step, budget 48/day: the credit
    # grid orders both pages every step from step 2 on (rate one a step, random phase in [0, 1)),
    # the queue lets one through: page 0 at step 2 (first in the page order), page 1 waits to step
    # 3 while page 0 queues again, and so on
    changes = pd.DataFrame({"page": ["a", "b"], "timestamp": [1.3, 2.6], "host": ["h", "h"]})
    win = pd.DataFrame({"page": ["a", "b"], "start": [0.0, 0.0], "end": [5.0, 5.0]})
    pages = pages_from_table(changes, window=win)
    log: list = []
    res = run_replay(
        pages,
        UniformPolicy(),
        budget=48.0,
        dt_ms=HOUR,
        host_codes=np.zeros(2, np.int64),
        host_caps=[24.0],
        fetch_log=log,
    )
    assert _log_pairs(log) == [(k, (k - 2) % 2) for k in range(2, 121)]
    assert res.crawls.tolist() == [60, 59]
    df = replay_policies(
        changes, window=win, budget=48.0, policies=["uniform"], step="1h", hosts="host", host_budgets=24
    )
    assert df["crawls"].tolist() == [119]


def test_the_queue_delays_over_cap_fetches_and_carries_fractions():
    # three pages of one host ordered once, at step 1; 12/day at 1-hour steps is half a token a
    # step, bucket capacity 1 and full at the start: fetches at steps 1, 3 and 5 in page order
    changes = pd.DataFrame({"page": ["x", "y", "z"], "timestamp": [9.0, 9.0, 9.0]})
    win = pd.DataFrame({"page": ["x", "y", "z"], "start": [0.0] * 3, "end": [10.0] * 3})
    pages = pages_from_table(changes, window=win)
    orders = np.zeros((3, 3), dtype=bool)
    orders[1] = True
    log: list = []
    res = run_replay(
        pages, _Orders(orders), dt_ms=HOUR, host_codes=np.zeros(3, np.int64), host_caps=[12.0], fetch_log=log
    )
    assert _log_pairs(log) == [(1, 0), (3, 1), (5, 2)]
    assert res.crawls.tolist() == [1, 1, 1]
    # 36/day: 1.5 tokens a step, capacity 2: two at step 1, the third at step 2
    log = []
    run_replay(pages, _Orders(orders), dt_ms=HOUR, host_codes=np.zeros(3, np.int64), host_caps=[36.0], fetch_log=log)
    assert _log_pairs(log) == [(1, 0), (1, 1), (2, 2)]
    # a page whose window closes while it waits is not fetched
    win2 = win.assign(end=[10.0, 10.0, 3.0 / 24.0])  # z crawlable at steps 1 .. 3 only
    pages2 = pages_from_table(changes[changes["page"] != "z"], window=win2)
    log = []
    res = run_replay(
        pages2, _Orders(orders), dt_ms=HOUR, host_codes=np.zeros(3, np.int64), host_caps=[12.0], fetch_log=log
    )
    assert _log_pairs(log) == [(1, 0), (3, 1)]
    assert res.crawls.tolist() == [1, 1, 0]


@pytest.mark.parametrize("honour", [True, False])
def test_compiled_queue_matches_a_plain_loop(honour):
    changes, win = _pages(n_pages=10, days=6.0, seed=11)
    pages = pages_from_table(changes, window=win)
    n = pages.n_pages
    dt_ms = 2 * HOUR
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 3, size=n).astype(np.int64)
    caps = np.array([5.0, 17.0, 30.0])  # 0.42, 1.42, 2.5 tokens a step
    n_steps = int(-(-(pages.end_ms.max() - pages.start_ms.min()) // dt_ms))
    orders = rng.random((n_steps + 2, n)) < 0.35
    log: list = []
    run_replay(pages, _Orders(orders, honour), dt_ms=dt_ms, host_codes=codes, host_caps=caps, fetch_log=log)
    t0 = pages.start_ms.min()
    first = (pages.start_ms - t0) // dt_ms + 1
    last = (pages.end_ms - t0) // dt_ms
    ref = _reference_queue(orders, first, last, codes, caps, dt_ms / 86_400_000, n_steps, honour)
    assert len(ref) > 50
    assert _log_pairs(log) == ref


class _PythonUniform(UniformPolicy):
    def select(self, k, t, active, allowed):  # the same choice, through the engine's Python loop
        return super().select(k, t, active, allowed)


def test_compiled_credit_grid_with_queues_matches_its_python_loop():
    changes, win = _pages(n_pages=12, days=8.0, seed=4)
    pages = pages_from_table(changes, window=win)
    codes = (np.arange(12) % 3).astype(np.int64)
    caps = np.array([4.0, 10.0, np.inf])
    kw = dict(budget=30.0, dt_ms=HOUR, epoch_steps=24, host_codes=codes, host_caps=caps)
    log_c: list = []
    log_p: list = []
    fast = run_replay(pages, UniformPolicy(), rng=1, fetch_log=log_c, **kw)
    slow = run_replay(pages, _PythonUniform(), rng=1, fetch_log=log_p, **kw)
    assert _log_pairs(log_c) == _log_pairs(log_p)
    np.testing.assert_array_equal(fast.fresh_days, slow.fresh_days)
    np.testing.assert_array_equal(fast.crawls, slow.crawls)


POLICY_LIST = [p for p in POLICIES if not p.startswith(("dynamic", "burst"))]


@pytest.mark.parametrize("name", POLICY_LIST)
def test_no_host_is_fetched_over_its_cap(name):
    changes, win = _pages(n_pages=9, days=6.0, seed=8)
    pages = pages_from_table(changes, window=win)
    codes = (np.arange(9) % 3).astype(np.int64)
    caps = np.array([3.0, 30.0, 60.0])  # 0.125, 1.25, 2.5 tokens a 1-hour step
    a = caps / 24.0
    capacity = np.maximum(1.0, np.ceil(a))
    # the crawlers' schedules start at 2 hours (their defaults, 30 d and 1 d, would hardly crawl)
    policy = (
        POLICIES[name](initial_interval=2 / 24)
        if name in ("nutch", "nutch_nosync", "stormcrawler")
        else POLICIES[name]()
    )
    log: list = []
    res = run_replay(
        pages, policy, budget=40.0, dt_ms=HOUR, epoch_steps=24, rng=0, host_codes=codes, host_caps=caps, fetch_log=log
    )
    n_steps = int(-(-(pages.end_ms.max() - pages.start_ms.min()) // HOUR))
    counts = _per_host_step_counts(log, codes, 3, n_steps)
    assert counts.sum() == res.crawls.sum() > 0
    assert (counts.max(axis=1) <= capacity).all()
    # in any m consecutive steps at most C + a·(m − 1): S_k − a k never rises by more than C − a
    x = np.cumsum(counts, axis=1) - a[:, None] * np.arange(n_steps + 1)
    rise = x - np.minimum.accumulate(x, axis=1)
    assert (rise.max(axis=1) <= capacity - a + 1e-9).all()


def test_bad_host_arguments_name_the_argument():
    changes, win = _pages(n_pages=3, days=4.0)
    changes["host"] = "h"
    kw = dict(window=win, budget=5.0, policies=["uniform"], step="6h")
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="host_budgets"):
            replay_policies(changes, hosts="host", host_budgets=bad, **kw)
    with pytest.raises(ValueError, match="host_budgets"):
        replay_policies(changes, hosts="host", host_budgets={"h": 0.0}, **kw)
    with pytest.raises(TypeError, match="host_budgets"):
        replay_policies(changes, hosts="host", host_budgets=[1.0, 2.0], **kw)
    with pytest.raises(ValueError, match="`hosts` names column 'site'"):
        replay_policies(changes, hosts="site", host_budgets=1.0, **kw)
    with pytest.raises(ValueError, match="`hosts` maps page 'nope'"):
        replay_policies(changes, hosts={"p0": "h", "p1": "h", "p2": "h", "nope": "h"}, host_budgets=1.0, **kw)
    with pytest.raises(ValueError, match="`hosts` gives no host for page 'p2'"):
        replay_policies(changes, hosts={"p0": "h", "p1": "h"}, host_budgets=1.0, **kw)
    with pytest.raises(ValueError, match="`host_budgets` needs `hosts`"):
        replay_policies(changes, host_budgets=1.0, **kw)
    two = changes.copy()
    two.loc[two.index[0], "host"] = "other"
    with pytest.raises(ValueError, match="more than one host"):
        replay_policies(two, hosts="host", host_budgets=1.0, **kw)
    # a page with no change has no row in `changes`: its host comes from the window table
    quiet = pd.concat([win, pd.DataFrame({"page": ["q"], "start": [0.0], "end": [4.0]})], ignore_index=True)
    with pytest.raises(ValueError, match="`hosts` gives no host for page 'q'"):
        replay_policies(changes, hosts="host", host_budgets=1.0, **{**kw, "window": quiet})
    df = replay_policies(changes, hosts="host", host_budgets=1.0, **{**kw, "window": quiet.assign(host="h")})
    assert 0 < df["crawls"].iloc[0] <= 1 + 1.0 * 4.0  # a full bucket, then 1 a day over the 4-day span


def test_host_caps_study_pieces_on_a_small_population():
    from changerate_bayes.validation import _replay_host_caps as study

    changes, win, hosts = study.synthetic_population(n_pages=60, n_hosts=6, days=5.0, rng=1)
    assert len(win) == 60 and hosts.nunique() == 6 and set(changes["page"]) <= set(win["page"])
    assert (changes["timestamp"] > 0).all() and (changes["timestamp"] <= 5.0).all()
    budget = len(changes) / 5.0
    spend, share = study.host_spend(changes, win, hosts, budget)
    assert math.isclose(spend.sum(), budget, rel_tol=1e-9) and math.isclose(share.sum(), budget, rel_tol=1e-9)
    caps = study.spend_caps(changes, win, hosts, budget, 0.25)
    assert all(math.isclose(caps[h], 0.25 * max(spend[h], share[h])) for h in caps)
    docs = pd.DataFrame({"page": ["contrib:Twitter/Terms.md", "dating:Twitter/Privacy Policy.md", "x:Bumble/Terms.md"]})
    assert study.ota_hosts(docs).tolist() == ["Twitter", "Twitter", "Bumble"]
    rows, info = study.replay_with_caps(changes, win, hosts, budget=budget, step="6h", epoch="1D", seed=0)
    df = pd.DataFrame(rows)
    assert set(df["caps"]) == {"none", "0.5", "0.25", "one"} and set(df["policy"]) == set(study.POLICIES)
    assert math.isclose(info["0.25"]["total_caps"], sum(caps.values()))
    # the caps hold each budgeted policy to at most its hosts' capacity (a full bucket, then c_h a day)
    at_quarter = df[df["caps"] == "0.25"].set_index("policy")["crawls_per_day"]
    span = 5.0 - 0.0
    assert (at_quarter <= (sum(caps.values()) * span + 6 * 1) / span + 1e-9).all()
    settings = dict(
        fractions=list(study.FRACTIONS),
        policies=list(study.POLICIES),
        ota_budget=budget,
        ota_hosts=6,
        ota_caps=info,
        synth_pages=60,
        synth_hosts=6,
        synth_days=5.0,
        synth_step="6h",
        synth_budget=budget,
        synth_caps=info,
    )
    html = "\n".join(study.render({"settings": settings, "ota": rows, "synthetic": rows}))
    assert "Per-host politeness caps" in html and "freshness, caps 0.25×" in html and "one cap" in html
    assert html.count("<tr") >= 2 * (len(study.POLICIES) + 1)


def test_replay_command_host_flags(tmp_path, capsys):
    from changerate_bayes.cli import main

    ch = tmp_path / "changes.csv"
    pages = ["https://a.example/1", "https://a.example/2", "http://user@B.example:8080/x"]
    pd.DataFrame({"page": pages, "timestamp": ["2024-01-02T10:00:00Z"] * 3}).to_csv(ch, index=False)
    args = ["replay", str(ch), "--window", "2024-01-01", "2024-01-11", "--budget", "20", "--policies", "uniform"]
    args += ["--n-boot", "0", "--step", "1h", "--csv", str(tmp_path / "t.csv")]
    assert main(args) == 0
    free = pd.read_csv(tmp_path / "t.csv")
    assert main(args + ["--host-limit", "4"]) == 0
    assert "at most 4 crawls per day per host, over the 2 hosts of the pages" in capsys.readouterr().out
    capped = pd.read_csv(tmp_path / "t.csv")
    limits = tmp_path / "limits.csv"
    limits.write_text("host,crawls_per_day\na.example,4\n")
    assert main(args + ["--host-limits", str(limits)]) == 0
    note = "note: the caps of --host-limits for 1 host(s) (the other hosts uncapped), over the 2 hosts of the pages:"
    assert note in capsys.readouterr().out
    # two hosts (a.example with two pages, b.example) at 4 a day: each at most 1 + 4·10 crawls in 10 days
    assert free["crawls"].iloc[0] > 150
    assert 60 <= capped["crawls"].iloc[0] <= 2 * (1 + 4 * 10)
    # a delay of 21,600 s is 4 a day: the same replay; with both flags the smaller cap
    assert main(args + ["--host-delay", "21600"]) == 0
    pd.testing.assert_frame_equal(capped, pd.read_csv(tmp_path / "t.csv"))
    assert main(args + ["--host-delay", "21600", "--host-limit", "100"]) == 0
    pd.testing.assert_frame_equal(capped, pd.read_csv(tmp_path / "t.csv"))
    capsys.readouterr()
    assert main(args + ["--host-limit", "0"]) == 2
    assert "--host-limit (crawls per day per host) must be a finite number > 0" in capsys.readouterr().err
    assert main(args + ["--host-delay", "nan"]) == 2
    assert "--host-delay (seconds) must be a finite number > 0" in capsys.readouterr().err
    plain = tmp_path / "plain.csv"
    pd.DataFrame({"page": ["not a url"], "timestamp": ["2024-01-02T10:00:00Z"]}).to_csv(plain, index=False)
    assert (
        main(["replay", str(plain), "--window", "2024-01-01", "2024-01-11", "--budget", "2", "--host-limit", "1"]) == 2
    )
    assert "page 'not a url' is not a URL with a host name" in capsys.readouterr().err
