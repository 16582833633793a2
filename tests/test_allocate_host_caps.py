"""Per-host politeness caps in the crawl allocation of a page table (Kolobov et al. 2019)."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.stats import norm

from changerate_bayes.crawllog import allocate_crawls, estimate, schedule
from changerate_bayes.scheduling import capped_index_intervals, optimal_crawl_rates

POLICIES = ["uniform", "plug_in", "index_mean"]
_XI, _A = np.polynomial.hermite_e.hermegauss(16)
_A = _A / _A.sum()


def _table(mean, hosts=None, width=1.8, level=0.9):
    mean = np.asarray(mean, dtype=float)
    t = pd.DataFrame(
        {
            "page": [f"https://{h}/p{i}" for i, h in enumerate(hosts)] if hosts is not None else range(mean.size),
            "posterior_mean": mean,
            "posterior_lower": mean / width,
            "posterior_upper": mean * width,
        }
    )
    t.attrs["level"] = level
    return t


def _posterior(table):
    """median and sd of log Δ of the log-normal matched to each page's interval at the table's level."""
    lo, hi = table["posterior_lower"].to_numpy(), table["posterior_upper"].to_numpy()
    z = norm.ppf(0.5 + 0.5 * table.attrs["level"])
    return np.sqrt(lo * hi), np.log(hi / lo) / (2.0 * z)


def _index(t, median, sd):
    """w ν̄(t), ν_Δ(t) = (1 − e^{−Δt}(1 + Δt))/Δ averaged over log Δ ~ N(log median, sd²)."""
    delta = median * np.exp(sd * _XI)
    return float(np.sum(_A * (-np.expm1(-delta * t) - delta * t * np.exp(-delta * t)) / delta))


def _interval(price, median, sd, cap, t_min=1e-4):
    """The root of ν̄(t) = price in [t_min, cap] (days; the allocation's shortest interval t_min),
    cap where the index stays below the price."""
    if _index(cap, median, sd) <= price:
        return cap
    if _index(t_min, median, sd) >= price:
        return t_min
    return brentq(lambda t: _index(t, median, sd) - price, t_min, cap, xtol=1e-300, rtol=1e-15, maxiter=500)


def _reference(table, hosts, caps, budget, cap):
    """The index allocation under caps from its definition: λ solves Σ_h min(c_h, S_h(λ)) = B,
    a host with S_h(λ) > c_h gets the μ_h >= λ with S_h(μ_h) = c_h (nested root finding)."""
    median, sd = _posterior(table)
    labels = sorted(set(hosts))
    groups = {h: [i for i, x in enumerate(hosts) if x == h] for h in labels}

    def spend(h, log_price):
        return sum(1.0 / _interval(np.exp(log_price), median[i], sd[i], cap) for i in groups[h])

    def total(log_lam):
        return sum(min(caps.get(h, np.inf), spend(h, log_lam)) for h in labels) - budget

    log_lam = brentq(total, -60.0, 10.0, xtol=1e-15, rtol=1e-15, maxiter=500)
    intervals = np.zeros(len(hosts))
    for h in labels:
        log_mu = log_lam
        if spend(h, log_lam) > caps.get(h, np.inf):
            log_mu = brentq(lambda z, h=h: spend(h, z) - caps[h], log_lam, 10.0, xtol=1e-15, rtol=1e-15, maxiter=500)
        for i in groups[h]:
            intervals[i] = _interval(np.exp(log_mu), median[i], sd[i], cap)
    return intervals, np.exp(log_lam)


@pytest.mark.parametrize("policy", POLICIES)
def test_caps_that_never_bind_change_nothing(policy):
    rng = np.random.default_rng(3)
    mean = rng.gamma(0.7, 1.0, 300)
    t = _table(mean, [f"h{k}.example" for k in rng.integers(0, 7, 300)])
    budget = 2.0 * mean.sum()
    plain = allocate_crawls(t, budget, policy=policy)
    for caps in (10.0 * budget, {"h1.example": budget, "nowhere.example": 1.0}):
        if isinstance(caps, dict):  # a cap for a host without pages is unused, and said so
            with pytest.warns(UserWarning, match="1 key.* match no page's host.*nowhere.example"):
                capped = allocate_crawls(t, budget, policy=policy, host_budgets=caps)
        else:
            capped = allocate_crawls(t, budget, policy=policy, host_budgets=caps)
        for col in ("crawls_per_day", "crawl_interval_h", "at_revisit_bound"):
            np.testing.assert_array_equal(capped[col].to_numpy(), plain[col].to_numpy())
        assert capped.attrs["n_hosts_at_cap"] == 0 and not capped["host_at_cap"].any()
        assert capped.attrs.get("price") == plain.attrs.get("price")
    assert "host" not in plain and "host_at_cap" not in plain and "n_hosts_at_cap" not in plain.attrs


def test_hosts_from_urls_lower_cased_or_given():
    t = _table([1.0, 1.0, 1.0], ["A.example.com:8080", "user@a.example.com", "b.example.com"])
    out = allocate_crawls(t, 3.0, host_budgets=1.0)
    assert out["host"].tolist() == ["a.example.com", "a.example.com", "b.example.com"]
    by_page = dict(zip(t["page"], ["x", "y", "x"]))
    out = allocate_crawls(t, 3.0, hosts=by_page, host_budgets={"y": 0.5})
    assert out["host"].tolist() == ["x", "y", "x"]
    np.testing.assert_allclose(out["crawls_per_day"], [1.25, 0.5, 1.25], rtol=1e-12)
    out = allocate_crawls(t, 3.0, hosts=np.array([7, 8, 7]), host_budgets={8: 0.5}, policy="uniform")
    np.testing.assert_allclose(out["crawls_per_day"], [1.25, 0.5, 1.25], rtol=1e-15)


def test_uniform_within_caps_by_hand():
    # host a: 2 pages capped at 1/day; host b: 3 pages uncapped; budget 7/day.
    # equal level ℓ = 7/5 > 1/2 = a's cap per page: a's pages 1/2 each, b's (7 − 1)/3 = 2 each
    t = _table(np.ones(5), ["a"] * 2 + ["b"] * 3)
    out = allocate_crawls(t, 7.0, policy="uniform", host_budgets={"a": 1.0})
    np.testing.assert_allclose(out["crawls_per_day"], [0.5, 0.5, 2.0, 2.0, 2.0], rtol=1e-15)
    assert out["host_at_cap"].tolist() == [True, True, False, False, False]
    assert out.attrs["n_hosts_at_cap"] == 1
    assert out.attrs["host_budgets"] == {"n_hosts": 2, "n_capped": 1, "min": 1.0, "max": 1.0}
    # every host capped at 1/day: Σ caps = 2 < 7, each host spends its cap
    out = allocate_crawls(t, 7.0, policy="uniform", host_budgets=1.0)
    np.testing.assert_allclose(out["crawls_per_day"], [0.5, 0.5, 1 / 3, 1 / 3, 1 / 3], rtol=1e-15)
    assert out.attrs["host_budgets"] == 1.0 and out.attrs["n_hosts_at_cap"] == 2


def test_plug_in_is_the_capped_optimum():
    # binary freshness, w = 1, Δ = 1: host a (2 pages, cap 1) gets its cap, b the rest: 2
    # (f' = 1/(p + 1)^2 = 1/9 on b, 4/9 on a); the revisit bound M = 4·3/3 = 4 days holds none
    t = _table([1.0, 1.0, 1.0], ["a", "a", "b"])
    out = allocate_crawls(t, 3.0, policy="plug_in", host_budgets={"a": 1.0})
    np.testing.assert_allclose(out["crawls_per_day"], [0.5, 0.5, 2.0], rtol=1e-14)
    rng = np.random.default_rng(5)
    mean = rng.uniform(1.0, 1.5, 40)  # similar pages: every rate > 0, none at the bound
    hosts = [f"h{k}" for k in rng.integers(0, 4, 40)]
    caps = {"h0": 0.3 * mean.sum(), "h1": 0.2 * mean.sum()}
    out = allocate_crawls(_table(mean, hosts), 3 * mean.sum(), policy="plug_in", host_budgets=caps)
    direct = optimal_crawl_rates(mean, 1.0, 3 * mean.sum(), hosts=hosts, host_budgets=caps)
    assert out.attrs["n_hosts_at_cap"] == 2
    assert not out["at_revisit_bound"].any()
    np.testing.assert_allclose(out["crawls_per_day"], direct, rtol=1e-12)


def test_index_mean_two_hosts_by_hand():
    # point masses Δ = 1 (lower = upper), two pages on a capped at 1, one on b: a's pages every
    # 2 days, b's every 1/2 day (budget 3); prices ν_1(1/2) and ν_1(2)
    t = pd.DataFrame({"page": ["https://a/1", "https://a/2", "https://b/1"], "posterior_mean": [1.0, 1.0, 1.0]})
    out = allocate_crawls(t, 3.0, policy="index_mean", host_budgets={"a": 1.0})
    np.testing.assert_allclose(out["crawl_interval_h"], [48.0, 48.0, 12.0], rtol=1e-13)
    assert out.attrs["price"] == pytest.approx(1 - np.exp(-0.5) * 1.5, rel=1e-13)
    res = capped_index_intervals([1.0] * 3, [0.0] * 3, 3.0, hosts=["a", "a", "b"], host_budgets={"a": 1.0})
    assert res.price + res.host_prices[0] == pytest.approx(1 - 3 * np.exp(-2.0), rel=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_index_mean_matches_the_definition(seed):
    rng = np.random.default_rng(seed)
    n = 12
    mean = rng.gamma(1.5, 1.0, n)
    hosts = list(rng.permutation(["a", "b", "c"] * (n // 3)))  # c uncapped: the budget is spent
    t = _table(mean, hosts, width=1.0 + rng.uniform(0.2, 2.0))
    budget = 2.0 * mean.sum()
    caps = {"a": 0.15 * budget, "b": 0.3 * budget}
    factor = 1e4  # M far beyond every root: the reference need not know the bound
    out = allocate_crawls(t, budget, policy="index_mean", host_budgets=caps, max_interval_factor=factor)
    assert out.attrs["n_hosts_at_cap"] >= 1
    ref, lam = _reference(t, hosts, caps, budget, factor * n / budget)
    np.testing.assert_allclose(out["crawl_interval_h"] / 24.0, ref, rtol=1e-9)
    assert out.attrs["price"] == pytest.approx(lam, rel=1e-9)


def _kkt_table(data):
    n = data.draw(st.integers(2, 25))
    n_hosts = data.draw(st.integers(1, 4))
    mean = np.array(data.draw(st.lists(st.floats(0.01, 20.0), min_size=n, max_size=n)))
    hosts = [f"h{k}" for k in data.draw(st.lists(st.integers(0, n_hosts - 1), min_size=n, max_size=n))]
    budget = mean.sum() * data.draw(st.floats(1.0, 5.0))
    fracs = data.draw(st.lists(st.floats(0.05, 1.0), min_size=n_hosts, max_size=n_hosts))
    caps = {f"h{k}": f * budget for k, f in enumerate(fracs) if data.draw(st.booleans())}
    return _table(mean, hosts, width=data.draw(st.floats(1.0, 4.0))), hosts, budget, caps


@pytest.mark.filterwarnings("ignore:.*match no page's host:UserWarning")  # drawn hosts without pages
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), policy=st.sampled_from(POLICIES))
def test_caps_hold_budget_spent_and_kkt(data, policy):
    t, hosts, budget, caps = _kkt_table(data)
    if not caps:
        caps = {hosts[0]: 0.3 * budget}
    out = allocate_crawls(t, budget, policy=policy, host_budgets=caps)
    spend = out.groupby("host")["crawls_per_day"].sum()
    for h, s in spend.items():
        assert s <= caps.get(h, np.inf) * (1 + 1e-9)
        assert out.loc[out["host"] == h, "host_at_cap"].all() == (h in caps and s >= caps[h] * (1 - 1e-9))
    has_room = [h for h in spend.index if h not in caps or spend[h] < caps[h] * (1 - 1e-9)]
    if has_room:
        assert out["crawls_per_day"].sum() == pytest.approx(budget, rel=1e-9)
    if policy != "index_mean":
        return
    # KKT: the pages of the free hosts (off the revisit bound) share one price λ; a host at its
    # cap prices its pages at λ + η_h >= λ
    median, sd = _posterior(t)
    lam = out.attrs["price"]
    idx = np.array([_index(i / 24.0, m, s) for i, m, s in zip(out["crawl_interval_h"], median, sd)])
    inner = ~out["at_revisit_bound"].to_numpy()
    free = ~out["host_at_cap"].to_numpy()
    np.testing.assert_allclose(idx[inner & free], lam, rtol=1e-9)
    assert np.all(idx[inner & ~free] >= lam * (1 - 1e-9))
    for h in set(out.loc[~free, "host"]):
        on = (out["host"] == h).to_numpy() & inner
        if on.any():  # one price per host at its cap
            np.testing.assert_allclose(idx[on], idx[on][0], rtol=1e-9)


def test_cap_below_the_revisit_bound_wins():
    # 4 pages on a capped at 0.5/day: at the bound M = 4·5/5 = 4 days they would spend 1/day;
    # the cap wins (each page every 8 days), the rest goes to b
    t = _table(np.ones(5), ["a"] * 4 + ["b"])
    for policy in POLICIES:
        out = allocate_crawls(t, 5.0, policy=policy, host_budgets={"a": 0.5})
        np.testing.assert_allclose(out["crawls_per_day"], [0.125] * 4 + [4.5], rtol=1e-12)
        # held by the cap beyond the bound, not at it
        assert out["at_revisit_bound"].tolist() == [False] * 5
        assert out["host_at_cap"].tolist() == [True] * 4 + [False]
        assert out.attrs["n_at_revisit_bound"] == 0
        assert out.attrs["n_host_cap_beyond_bound"] == 4
        assert out.attrs["host_cap_longest_interval_h"] == pytest.approx(8 * 24.0, rel=1e-12)


@pytest.mark.parametrize("policy", POLICIES)
def test_one_host_at_its_cap_is_not_at_the_revisit_bound(policy):
    # 50 pages on one host capped at 10/day, budget 100: M = 4·50/100 = 2 days = 48 h, but the cap
    # gives each page 10/50 = 0.2 crawls per day, every 120 h
    t = _table(np.ones(50), ["one.example"] * 50)
    out = allocate_crawls(t, 100.0, policy=policy, host_budgets=10.0)
    np.testing.assert_allclose(out["crawl_interval_h"], 120.0, rtol=1e-12)
    assert not out["at_revisit_bound"].any()
    assert out.attrs["n_at_revisit_bound"] == 0
    assert out.attrs["n_host_cap_beyond_bound"] == 50
    assert out.attrs["host_cap_longest_interval_h"] == pytest.approx(120.0, rel=1e-12)


def test_cap_keys_match_url_hosts_without_case_and_spaces():
    t = _table(np.ones(3), ["a.example", "a.example", "b.example"])
    want = allocate_crawls(t, 3.0, policy="uniform", host_budgets={"a.example": 1.0})
    for keys in ({"A.EXAMPLE": 1.0}, {" a.Example ": 1.0}, pd.Series({"A.example": 1.0})):
        out = allocate_crawls(t, 3.0, policy="uniform", host_budgets=keys)
        np.testing.assert_allclose(out["crawls_per_day"], [0.5, 0.5, 2.0], rtol=1e-12)
        assert out["host_at_cap"].tolist() == want["host_at_cap"].tolist() == [True, True, False]
    with pytest.raises(ValueError, match="'a.example' and 'A.EXAMPLE' are one host"):
        allocate_crawls(t, 3.0, host_budgets={"a.example": 1.0, "A.EXAMPLE": 2.0})


def test_cap_keys_that_match_no_host_are_named_in_a_warning():
    t = _table(np.ones(3), ["a.example", "a.example", "b.example"])
    with pytest.warns(
        UserWarning, match=r"^2 key\(s\) of `host_budgets` match no page's host .*: x.example, y.example$"
    ):
        out = allocate_crawls(t, 3.0, policy="uniform", host_budgets={"x.example": 1.0, "y.example": 1.0})
    np.testing.assert_allclose(out["crawls_per_day"], 1.0)  # nothing capped


def test_host_budgets_as_a_series_is_a_mapping():
    t = _table(np.ones(3), ["a.example", "a.example", "b.example"])
    caps = pd.Series({"a.example": 1.0, "b.example": 0.5})
    out = allocate_crawls(t, 3.0, policy="uniform", host_budgets=caps)
    np.testing.assert_allclose(out["crawls_per_day"], [0.5, 0.5, 0.5], rtol=1e-12)
    labels = ["a.example", "a.example", "b.example"]
    by_labels = allocate_crawls(t, 3.0, policy="uniform", hosts=labels, host_budgets=caps)
    np.testing.assert_allclose(by_labels["crawls_per_day"], [0.5, 0.5, 0.5], rtol=1e-12)


def test_bad_caps_and_hosts():
    t = _table([1.0, 2.0], ["a.example", "b.example"])
    for bad in (0.0, -1.0, float("nan"), float("inf"), {"a.example": 0.0}):
        with pytest.raises(ValueError, match="host_budgets"):
            allocate_crawls(t, 3.0, host_budgets=bad)
    for bad in ("many", [1.0, 2.0], True):
        with pytest.raises(TypeError, match="host_budgets"):
            allocate_crawls(t, 3.0, host_budgets=bad)
    with pytest.raises(ValueError, match="`hosts`.*2 labels; got 3"):
        allocate_crawls(t, 3.0, hosts=["a", "b", "c"], host_budgets=1.0)
    with pytest.raises(ValueError, match="`hosts` must not hold None"):
        allocate_crawls(t, 3.0, hosts=["a", None], host_budgets=1.0)
    with pytest.raises(TypeError, match="`hosts`"):
        allocate_crawls(t, 3.0, hosts="host", host_budgets=1.0)
    for page in ("not a url", "mailto:someone@example.com", "http:///path", 7):
        u = t.copy()
        u["page"] = ["https://ok.example/", page]
        with pytest.raises(ValueError, match=r"`hosts`.*row 1"):
            allocate_crawls(u, 3.0, host_budgets=1.0)
        allocate_crawls(u, 3.0)  # hosts are derived only for caps
    with pytest.raises(ValueError, match="no host .*'https://b.example/p1'"):
        allocate_crawls(_table([1.0, 2.0], ["a", "b.example"]), 3.0, hosts={"https://a/p0": "a"}, host_budgets=1.0)
    with pytest.raises(ValueError, match="no `page` column"):
        allocate_crawls(t.drop(columns="page"), 3.0, host_budgets=1.0)


def _visits(n_per_host=4, hosts=("a.example", "B.example")):
    rng = np.random.default_rng(0)
    frames = []
    for h in hosts:
        for i in range(n_per_host):
            frames.append(
                pd.DataFrame(
                    {
                        "page": f"https://{h}/p{i}",
                        "changed": rng.integers(0, 2, 12),
                        "fetch_time": pd.date_range("2024-01-01", periods=12, freq="6h", tz="UTC"),
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("budget", [8.0, 40.0])  # below the total change rate (uniform), above (index)
def test_estimate_and_schedule_pass_the_caps(budget):
    v = _visits()
    caps = {"a.example": 0.3 * budget}
    plain = estimate(v, budget=budget).table
    got = estimate(v, budget=budget, host_budgets=caps).table
    expect = allocate_crawls(plain, budget, host_budgets=caps)
    np.testing.assert_array_equal(got["crawls_per_day"].to_numpy(), expect["crawls_per_day"].to_numpy())
    assert got["host"].tolist() == ["a.example"] * 4 + ["b.example"] * 4
    assert got["host_at_cap"].tolist() == [True] * 4 + [False] * 4
    assert got.loc[got["host"] == "a.example", "crawls_per_day"].sum() == pytest.approx(0.3 * budget, rel=1e-12)
    assert got["crawls_per_day"].sum() == pytest.approx(budget, rel=1e-12)
    s = schedule(v, budget=budget, host_budgets=caps).schedule
    assert s["interval_source"].tolist() == ["host_cap"] * 4 + ["allocation"] * 4  # a.example at its cap
    np.testing.assert_allclose(s["interval_h"], got["crawl_interval_h"], rtol=0, atol=1 / 3600)  # whole seconds
    with pytest.raises(ValueError, match="host_budgets"):  # before the log is read
        estimate("no/such/log.csv", host_budgets=-1.0)


def test_the_dask_engine_schedules_within_the_caps(tmp_path):
    from _helpers import local_dask_client

    v = _visits()
    caps = {"a.example": 2.0}
    path = tmp_path / "log.csv"
    v.assign(fetch_time=v["fetch_time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")).to_csv(path, index=False)
    expect = schedule(path, budget=8.0, host_budgets=caps, engine="pandas").schedule.set_index("url")
    import dask.dataframe as dd

    with local_dask_client(processes=False) as client:
        for source in ([path], dd.from_pandas(pd.read_csv(path), npartitions=2)):
            got = schedule(source, budget=8.0, host_budgets=caps, engine="dask", client=client).schedule
            got = got.set_index("url").loc[expect.index]
            np.testing.assert_allclose(got["interval_h"], expect["interval_h"], rtol=1e-12)
