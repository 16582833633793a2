"""Optimal crawl rates under per-host politeness caps (Kolobov et al. SIGIR 2019)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from changerate_bayes.scheduling import capped_crawl_rates, crawl_objective, optimal_crawl_rates

OBJECTIVES = ("binary_freshness", "harmonic_staleness")


# --- a reference written from the definition: nested bisection, a loop over hosts ---


def _page_rates(d, w, mu, objective):
    """Unconstrained optimal rate of each page at the price mu."""
    if objective == "binary_freshness":
        return np.maximum(0.0, np.sqrt(w * d / mu) - d)
    return 0.5 * (-d + np.sqrt(d * d + 4.0 * w * d / mu))


def _bisect_log(fun, lo, hi, iters=300):
    """Root of a decreasing fun on [lo, hi] (fun(lo) > 0 > fun(hi)), bisection in log."""
    a, b = math.log(lo), math.log(hi)
    for _ in range(iters):
        m = 0.5 * (a + b)
        if fun(math.exp(m)) > 0:
            a = m
        else:
            b = m
    return math.exp(0.5 * (a + b))


def _reference(d, w, host_of, caps, budget, objective):
    hosts = sorted(set(host_of))
    members = {h: np.array([i for i, x in enumerate(host_of) if x == h]) for h in hosts}

    def host_price(h, lam):
        idx = members[h]
        cap = caps.get(h, math.inf)
        if _page_rates(d[idx], w[idx], lam, objective).sum() <= cap:
            return lam
        return _bisect_log(lambda mu: _page_rates(d[idx], w[idx], mu, objective).sum() - cap, lam, 1e12)

    def spend(lam):
        return sum(
            min(caps.get(h, math.inf), _page_rates(d[members[h]], w[members[h]], lam, objective).sum()) for h in hosts
        )

    lam = _bisect_log(lambda x: spend(x) - budget, 1e-12, 1e12)
    p = np.zeros(d.size)
    for h in hosts:
        p[members[h]] = _page_rates(d[members[h]], w[members[h]], host_price(h, lam), objective)
    return p, lam


def _instance(seed):
    rng = np.random.default_rng(seed)
    n_hosts = int(rng.integers(2, 5))
    n = int(rng.integers(max(3, n_hosts), 11))
    host_of = rng.integers(0, n_hosts, size=n)
    host_of[:n_hosts] = np.arange(n_hosts)  # every host has a page
    d = rng.lognormal(0.0, 1.0, size=n)
    w = rng.lognormal(0.0, 0.7, size=n)
    budget = float(rng.uniform(1.0, 2.0 * d.sum()))
    caps = {h: float(rng.uniform(0.05, 0.8) * budget) for h in range(n_hosts) if rng.random() < 0.8}
    return d, w, host_of, caps, budget


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("seed", range(8))
def test_matches_nested_bisection(seed, objective):
    d, w, host_of, caps, budget = _instance(seed)
    if sum(caps.values()) <= budget and len(caps) == len(set(host_of)):
        caps[0] = 2.0 * budget  # keep λ > 0 so that the bisection on λ has a root
    res = capped_crawl_rates(d, w, budget, objective=objective, hosts=host_of, host_budgets=caps)
    p_ref, lam_ref = _reference(d, w, list(host_of), caps, budget, objective)
    np.testing.assert_allclose(res.rates, p_ref, rtol=0, atol=1e-10 * max(1.0, budget))
    assert res.price == pytest.approx(lam_ref, rel=1e-9)


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("seed", range(6))
def test_matches_generic_solver(seed, objective):
    d, w, host_of, caps, budget = _instance(100 + seed)
    res = capped_crawl_rates(d, w, budget, objective=objective, hosts=host_of, host_budgets=caps)
    ours = crawl_objective(res.rates, d, w, objective=objective)
    sign = -1.0 if objective == "binary_freshness" else 1.0  # minimise

    def fun(p):
        if objective == "binary_freshness":
            return -np.sum(w * p / (p + d))
        return np.sum(w * np.log1p(d / p))

    def jac(p):
        if objective == "binary_freshness":
            return -w * d / (p + d) ** 2
        return -w * d / (p * (p + d))

    cons = [{"type": "ineq", "fun": lambda p: budget - p.sum(), "jac": lambda p: -np.ones_like(p)}]
    for h, c in caps.items():
        mask = (host_of == h).astype(float)
        cons.append({"type": "ineq", "fun": lambda p, m=mask, c=c: c - m @ p, "jac": lambda p, m=mask: -m})
    n = d.size
    start = np.full(n, 1e-3 * budget / n)
    sol = minimize(
        fun,
        start,
        jac=jac,
        method="SLSQP",
        bounds=[(1e-12, None)] * n,
        constraints=cons,
        options={"ftol": 1e-15, "maxiter": 2000},
    )
    assert sol.success, sol.message
    theirs = sign * sol.fun
    # the generic solver's point is feasible to its tolerance, and ours is at least as good
    assert abs(ours - theirs) <= 1e-9 * abs(ours)


# --- properties ---


@st.composite
def problems(draw):
    n_hosts = draw(st.integers(1, 5))
    n = draw(st.integers(1, 25))
    host_of = np.array(draw(st.lists(st.integers(0, n_hosts - 1), min_size=n, max_size=n)))
    floats = st.floats(1e-3, 1e3)
    d = np.array(draw(st.lists(floats, min_size=n, max_size=n)))
    w = np.array(draw(st.lists(floats, min_size=n, max_size=n)))
    budget = draw(floats)
    present = sorted(set(host_of.tolist()))
    caps = {h: draw(floats) for h in present if draw(st.booleans())}
    return d, w, host_of, caps, budget, draw(st.sampled_from(OBJECTIVES))


@settings(max_examples=300, deadline=None)
@given(problems())
def test_kkt_conditions(problem):
    d, w, host_of, caps, budget, objective = problem
    res = capped_crawl_rates(d, w, budget, objective=objective, hosts=host_of, host_budgets=caps)
    p = res.rates
    assert np.all(p >= 0)
    cap_arr = np.array([caps.get(h, np.inf) for h in res.hosts])
    spend = np.array([p[host_of == h].sum() for h in res.hosts])
    assert np.all(spend <= cap_arr * (1 + 1e-12))  # no host over its cap
    np.testing.assert_allclose(spend[res.at_cap], cap_arr[res.at_cap], rtol=1e-12)  # at cap: spends c_h
    assert np.all(res.host_prices >= 0)
    assert np.all(res.host_prices[~res.at_cap] == 0)
    room = ~res.at_cap
    if room.any():  # the budget is spent whenever some host has room
        assert p.sum() == pytest.approx(budget, rel=1e-11)
        assert res.price > 0
    else:
        assert p.sum() <= budget * (1 + 1e-12)
    lam = res.price
    if objective == "binary_freshness":
        marginal = w * d / (p + d) ** 2
    else:
        marginal = np.where(p > 0, w * d / (p * np.maximum(p + d, 1e-300)), np.inf)
    for k, h in enumerate(res.hosts):
        on = host_of == h
        price = lam + res.host_prices[k]
        pos = on & (p > 0)
        # equal marginal value λ + η_h at the host's positive rates, <= it at its idle pages
        np.testing.assert_allclose(marginal[pos], price, rtol=1e-8)
        assert np.all(marginal[on & (p == 0)] <= price * (1 + 1e-8))
        if res.at_cap[k]:
            assert np.all(marginal[pos] >= lam * (1 - 1e-8))


# --- limits ---


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_caps_that_never_bind_give_todays_answer(objective):
    rng = np.random.default_rng(7)
    d = rng.lognormal(0, 1.5, size=2000)
    w = rng.lognormal(0, 1.0, size=2000)
    host_of = rng.choice(np.array(["a.org", "b.org", "c.net", "d.com"]), size=2000)
    plain = optimal_crawl_rates(d, w, 500.0, objective=objective)
    capped = optimal_crawl_rates(d, w, 500.0, objective=objective, hosts=host_of, host_budgets=1e6)
    assert np.array_equal(plain, capped)
    mapped = optimal_crawl_rates(
        d, w, 500.0, objective=objective, hosts=host_of, host_budgets={"a.org": 1e6, "zzz": 1.0}
    )  # "zzz" has no page
    assert np.array_equal(plain, mapped)
    assert np.array_equal(plain, optimal_crawl_rates(d, w, 500.0, objective=objective, hosts=host_of))
    res = capped_crawl_rates(d, w, 500.0, objective=objective, hosts=host_of, host_budgets=1e6)
    assert not res.at_cap.any() and np.all(res.host_prices == 0)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_one_host_capped_everywhere(objective):
    """A single host whose cap is below the budget: the host's own water-filling at c."""
    rng = np.random.default_rng(3)
    d = rng.lognormal(0, 1, size=50)
    w = rng.lognormal(0, 1, size=50)
    res = capped_crawl_rates(d, w, 100.0, objective=objective, hosts=np.zeros(50, dtype=int), host_budgets=10.0)
    np.testing.assert_allclose(res.rates, optimal_crawl_rates(d, w, 10.0, objective=objective), rtol=1e-13)
    assert res.rates.sum() == pytest.approx(10.0, rel=1e-13)
    assert res.at_cap.tolist() == [True] and res.price == 0.0 and res.host_prices[0] > 0


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_caps_below_budget_leave_budget_unspent(objective):
    d = np.array([1.0, 2.0, 3.0, 4.0])
    host_of = np.array(["x", "x", "y", "y"])
    res = capped_crawl_rates(d, 1.0, 100.0, objective=objective, hosts=host_of, host_budgets={"x": 3.0, "y": 5.0})
    np.testing.assert_allclose(res.rates[:2], optimal_crawl_rates(d[:2], 1.0, 3.0, objective=objective))
    np.testing.assert_allclose(res.rates[2:], optimal_crawl_rates(d[2:], 1.0, 5.0, objective=objective))
    assert res.at_cap.all() and res.price == 0.0


def test_hand_solved_example():
    # binary freshness, Δ = 1, w = 1: host "a" (two pages) capped at 1, B = 3;
    # "a": 0.5 each, price 1/(1.5)^2 = 4/9; "b": 2, price λ = 1/9; η_a = 1/3
    res = capped_crawl_rates([1.0, 1.0, 1.0], 1.0, 3.0, hosts=["a", "a", "b"], host_budgets={"a": 1.0})
    np.testing.assert_allclose(res.rates, [0.5, 0.5, 2.0], rtol=1e-15)
    assert res.price == pytest.approx(1 / 9, rel=1e-14)
    np.testing.assert_allclose(res.host_prices, [1 / 3, 0.0], rtol=1e-14, atol=0)


def test_cap_binding_only_after_the_price_falls():
    """Host "b" is under its cap without caps but reaches it once "a" is capped."""
    d = np.ones(3)
    # without caps: 1 each (B = 3); with a capped at 0.2, the rest is 2.8 for b, c → 1.4 each
    res = capped_crawl_rates(d, 1.0, 3.0, hosts=["a", "b", "c"], host_budgets={"a": 0.2, "b": 1.2})
    np.testing.assert_allclose(res.rates, [0.2, 1.2, 1.6], rtol=1e-14)
    assert res.at_cap.tolist() == [True, True, False]


def test_cap_equal_to_budget():
    """The capped host takes the whole budget; λ is its level (the idle host's pages must
    not be worth more than λ)."""
    d = np.ones(4)
    w = np.array([1.0, 1.0, 106.0, 43.0])
    res = capped_crawl_rates(d, w, 1.5, hosts=[0, 0, 1, 1], host_budgets={1: 1.5})
    np.testing.assert_allclose(res.rates, [0, 0, *optimal_crawl_rates(d[2:], w[2:], 1.5)], rtol=1e-14)
    assert res.price >= 1.0 and res.host_prices[0] == 0


def test_integer_and_string_labels_agree():
    rng = np.random.default_rng(11)
    d, w = rng.lognormal(size=300), rng.lognormal(size=300)
    ints = rng.integers(5, 40, size=300) * 3
    caps = {int(h): 2.0 for h in np.unique(ints)[::2]}
    by_int = capped_crawl_rates(d, w, 200.0, hosts=ints, host_budgets=caps)
    by_str = capped_crawl_rates(
        d, w, 200.0, hosts=ints.astype(str).astype(object), host_budgets={str(h): c for h, c in caps.items()}
    )
    np.testing.assert_array_equal(by_int.hosts, np.unique(ints))
    np.testing.assert_array_equal(by_int.rates, by_str.rates)
    assert by_int.at_cap.any()


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("scale", [2.0**-600, 1e-100, 1e100, 2.0**600])
def test_extreme_magnitudes(objective, scale):
    """Multiplying Δ, B and the caps by s multiplies the rates by s (w only by a constant
    factor: nothing changes), even beyond the range of the compiled selection solver."""
    rng = np.random.default_rng(1)
    d, w, host_of = rng.lognormal(0, 1, 40), rng.lognormal(0, 1, 40), rng.integers(0, 4, 40)
    caps = {0: 3.0, 1: 2.0, 2: 5.0}
    base = capped_crawl_rates(d, w, 12.0, objective=objective, hosts=host_of, host_budgets=caps)
    assert base.at_cap.sum() >= 2
    res = capped_crawl_rates(
        d * scale,
        w * 1e150,
        12.0 * scale,
        objective=objective,
        hosts=host_of,
        host_budgets={h: c * scale for h, c in caps.items()},
    )
    np.testing.assert_allclose(res.rates / scale, base.rates, rtol=1e-12, atol=1e-14)
    assert res.rates.sum() == pytest.approx(12.0 * scale, rel=1e-13)
    np.testing.assert_array_equal(res.at_cap, base.at_cap)
    assert np.all(res.host_prices >= 0) and not np.isnan(res.price)


def test_no_page_changes_split_equally_within_caps():
    res = capped_crawl_rates(np.zeros(4), 1.0, 4.0, hosts=["a", "a", "a", "b"], host_budgets={"a": 0.3})
    np.testing.assert_allclose(res.rates, [0.1, 0.1, 0.1, 3.7], rtol=1e-14)


# --- bad input ---


@pytest.mark.parametrize(
    "caps, exc, match",
    [
        (0.0, ValueError, "host_budgets.*> 0"),
        (-1.0, ValueError, "host_budgets.*> 0"),
        (float("nan"), ValueError, "host_budgets.*finite"),
        (float("inf"), ValueError, "host_budgets.*finite"),
        ("5", TypeError, "host_budgets.*real number"),
        ([1.0, 2.0], TypeError, "host_budgets.*mapping"),
        ({"a": 0.0}, ValueError, r"host_budgets\['a'\].*> 0"),
        ({"a": "x"}, TypeError, r"host_budgets\['a'\].*real number"),
        ({"a": float("inf")}, ValueError, r"host_budgets\['a'\].*finite"),
    ],
)
def test_bad_caps(caps, exc, match):
    with pytest.raises(exc, match=match):
        optimal_crawl_rates([1.0, 2.0], 1.0, 1.0, hosts=["a", "b"], host_budgets=caps)


def test_bad_hosts():
    with pytest.raises(ValueError, match="hosts.*shape"):
        optimal_crawl_rates([1.0, 2.0], 1.0, 1.0, hosts=["a"], host_budgets=1.0)
    with pytest.raises(ValueError, match="hosts.*None"):
        optimal_crawl_rates([1.0, 2.0], 1.0, 1.0, hosts=["a", None], host_budgets=1.0)
    with pytest.raises(ValueError, match="hosts.*None or NaN"):
        optimal_crawl_rates([1.0, 2.0], 1.0, 1.0, hosts=[1.0, float("nan")], host_budgets=1.0)
    with pytest.raises(ValueError, match="host_budgets.*needs `hosts`"):
        optimal_crawl_rates([1.0, 2.0], 1.0, 1.0, host_budgets=1.0)


def test_guess_of_capped_hosts_corrected(monkeypatch):
    """The first-order guess of the hosts at cap can hold one too many; the KKT check
    must then start again, and the answer still matches the reference."""
    import changerate_bayes.scheduling._host_caps as hc

    rounds = []
    grow = hc._grow
    monkeypatch.setattr(hc, "_grow", lambda *a, **k: rounds.append(1) or grow(*a, **k))
    rng = np.random.default_rng(0)
    found = 0
    for s in range(400):
        n, n_hosts = int(rng.integers(2, 30)), int(rng.integers(1, 6))
        d, w, host_of = rng.lognormal(0, 2, n), rng.lognormal(0, 2, n), rng.integers(0, n_hosts, n)
        budget = float(rng.uniform(0.1, 3) * d.sum())
        caps = {k: float(rng.uniform(0.01, 1) * budget) for k in range(n_hosts) if rng.random() < 0.8}
        objective = OBJECTIVES[s % 2]
        rounds.clear()
        res = capped_crawl_rates(d, w, budget, objective=objective, hosts=host_of, host_budgets=caps)
        if len(rounds) == 2:  # the guess was rejected
            found += 1
            p_ref, _ = _reference(d, w, list(host_of), caps, budget, objective)
            np.testing.assert_allclose(res.rates, p_ref, rtol=0, atol=1e-10 * budget)
    assert found >= 1
