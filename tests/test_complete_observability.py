"""Crawl probabilities for pages that signal every change, and the split of one budget
between them and pages crawled blindly: hand-derived optima, the KKT conditions, a
generic constrained solver, a brute-force search over the split, and bad input."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from changerate_bayes.scheduling import (
    complete_observability_crawl_probabilities,
    optimal_crawl_rates,
    split_crawl_budget,
)

SQRT5 = 5**0.5


# ----------------------------------------------------------------------------------------
# hand-derived optima
# ----------------------------------------------------------------------------------------


def test_harmonic_one_page_saturates():
    # Δ = (1, 4), μ = (2, 1), R = 2. Unsaturated, λ = Σμ/R = 3/2 would give p_1 = 4/3 > 1:
    # page 1 saturates, spends 1, and page 2 takes the rest: λ = μ_2/(R − Δ_1) = 1,
    # p_2 = μ_2/(λ Δ_2) = 1/4; page 1 is worth μ_1/Δ_1 = 2 >= λ at p = 1.
    p = complete_observability_crawl_probabilities([1.0, 4.0], [2.0, 1.0], 2.0)
    np.testing.assert_allclose(p, [1.0, 0.25], rtol=1e-15)
    split = split_crawl_budget([1.0, 4.0], [2.0, 1.0], 2.0, np.array([True, True]))
    assert split.price == pytest.approx(1.0, rel=1e-14)
    np.testing.assert_allclose(split.crawl_probabilities, [1.0, 0.25], rtol=1e-15)
    np.testing.assert_allclose(split.crawl_rates, [1.0, 1.0], rtol=1e-15)


def test_harmonic_none_saturates():
    # Δ = (1, 4), μ = (1, 3), R = 3: λ = 4/3, p = (3/4, 9/16); spend 3/4 + 9/4 = 3.
    p = complete_observability_crawl_probabilities([1.0, 4.0], [1.0, 3.0], 3.0)
    np.testing.assert_allclose(p, [0.75, 0.5625], rtol=1e-15)


def test_binary_fills_by_value_per_crawl():
    # μ/Δ = (1, 3/4): page 1 full (1 crawl/day), page 2 the remaining 2 of its 4: p = 1/2.
    p = complete_observability_crawl_probabilities([1.0, 4.0], [1.0, 3.0], 3.0, objective="binary_freshness")
    np.testing.assert_allclose(p, [1.0, 0.5], rtol=1e-15)
    # a budget beyond every change: all pages at p = 1, budget left over
    p = complete_observability_crawl_probabilities([1.0, 4.0], [1.0, 3.0], 9.0, objective="binary_freshness")
    np.testing.assert_array_equal(p, [1.0, 1.0])


def test_binary_tied_pages_share_the_remainder():
    # every μ/Δ = 1: one value of p for all, R/ΣΔ = 2/4; with a blind page of μ/Δ = 4
    # (ρ(1) = √4 − 1 = 1 at λ = 1) the signalled pages share what it leaves, (3 − 1)/4.
    p = complete_observability_crawl_probabilities([1.0, 1.0, 2.0], [1.0, 1.0, 2.0], 2.0, objective="binary_freshness")
    np.testing.assert_allclose(p, [0.5, 0.5, 0.5], rtol=1e-15)
    mask = np.array([True, True, True, False])
    split = split_crawl_budget([1.0, 1.0, 2.0, 1.0], [1.0, 1.0, 2.0, 4.0], 3.0, mask, objective="binary_freshness")
    assert split.price == 1.0
    np.testing.assert_allclose(split.crawl_rates, [0.5, 0.5, 1.0, 1.0], rtol=1e-15)


def test_zero_rate_and_zero_weight_pages():
    p = complete_observability_crawl_probabilities([0.0, 1.0, 2.0], [1.0, 0.0, 1.0], 1.0)
    np.testing.assert_allclose(p, [1.0, 0.0, 0.5], rtol=1e-15)  # Δ = 0: free; μ = 0: skipped


def test_split_harmonic_by_hand():
    # signalled Δ = 1, μ = 1; blind Δ = 1, μ = 2; R = √5/2. At λ = 2: p = 1/(2·1) = 1/2 and
    # ρ = (−1 + √(1 + 4·2·1/2))/2 = (√5 − 1)/2, spending 1/2 + (√5 − 1)/2 = √5/2.
    split = split_crawl_budget([1.0, 1.0], [1.0, 2.0], SQRT5 / 2, np.array([True, False]))
    assert split.price == pytest.approx(2.0, rel=1e-13)
    np.testing.assert_allclose(split.crawl_probabilities, [0.5], rtol=1e-13)
    np.testing.assert_allclose(split.crawl_rates, [0.5, (SQRT5 - 1) / 2], rtol=1e-13)
    assert split.complete_budget == pytest.approx(0.5, rel=1e-13)
    expected = -np.log(0.5) - 2.0 * np.log(((SQRT5 - 1) / 2) / ((SQRT5 + 1) / 2))
    assert split.objective == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize(
    ("budget", "price", "p", "rho"),
    [
        (1.5, 1.0, 0.5, 1.0),  # λ at the signalled page's breakpoint μ/Δ = 1; it gets what is left
        (0.5, 16 / 9, 0.0, 0.5),  # λ = μΔ/(ρ+Δ)² = 4/1.5² > 1: the signalled page is not worth it
        (3.0, 4 / 9, 1.0, 2.0),  # λ < 1: the signalled page is full, the blind one takes the rest
    ],
)
def test_split_binary_by_hand(budget, price, p, rho):
    # signalled Δ = 1, μ = 1 (μ/Δ = 1); blind Δ = 1, μ = 4: ρ(λ) = max(0, √(4/λ) − 1).
    split = split_crawl_budget([1.0, 1.0], [1.0, 4.0], budget, np.array([True, False]), objective="binary_freshness")
    assert split.price == pytest.approx(price, rel=1e-13)
    np.testing.assert_allclose(split.crawl_probabilities, [p], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(split.crawl_rates, [p, rho], rtol=1e-13, atol=1e-15)
    assert split.objective == pytest.approx(p + 4 * rho / (rho + 1), rel=1e-13)


# ----------------------------------------------------------------------------------------
# a reference from the definition: saturate, recompute, repeat
# ----------------------------------------------------------------------------------------


def _saturation_reference(delta, mu, budget):
    """Harmonic optimum over signalled pages by rounds: p = R' μ/(Δ Σμ') over the pages not
    yet at 1; pages above 1 are set to 1 and their Δ taken off the budget; repeat."""
    p = np.zeros(len(delta))
    free = np.ones(len(delta), dtype=bool)
    left = budget
    while True:
        guess = left * mu / (delta * mu[free].sum())
        over = free & (guess >= 1.0)
        if not over.any():
            p[free] = guess[free]
            return p
        p[over] = 1.0
        left -= delta[over].sum()
        free &= ~over
        if not free.any():
            return p


@given(
    st.integers(1, 40),
    st.integers(0, 2**32 - 1),
    st.floats(0.01, 0.99),
)
@settings(max_examples=60, deadline=None)
def test_harmonic_matches_saturation_rounds(n, seed, share):
    rng = np.random.default_rng(seed)
    delta = rng.lognormal(0.0, 1.5, n)
    mu = rng.lognormal(0.0, 1.0, n)
    budget = share * delta.sum()
    p = complete_observability_crawl_probabilities(delta, mu, budget)
    np.testing.assert_allclose(p, _saturation_reference(delta, mu, budget), rtol=1e-11)
    assert np.sum(p * delta) == pytest.approx(budget, rel=1e-12)


# ----------------------------------------------------------------------------------------
# KKT conditions of the split
# ----------------------------------------------------------------------------------------


def _instance(n, seed, share, complete_share=0.5):
    rng = np.random.default_rng(seed)
    delta = rng.lognormal(0.0, 1.5, n)
    mu = rng.lognormal(0.0, 1.0, n)
    mask = rng.random(n) < complete_share
    return delta, mu, mask, share * delta.sum()


@given(st.integers(1, 30), st.integers(0, 2**32 - 1), st.floats(0.01, 2.0))
@settings(max_examples=80, deadline=None)
def test_split_harmonic_kkt(n, seed, share):
    delta, mu, mask, budget = _instance(n, seed, share)
    split = split_crawl_budget(delta, mu, budget, mask)
    p, lam = split.crawl_probabilities, split.price
    dc, mc, di, mi = delta[mask], mu[mask], delta[~mask], mu[~mask]
    rho = split.crawl_rates[~mask]
    assert np.all((p > 0) & (p <= 1))
    assert np.all(rho > 0)
    np.testing.assert_allclose(split.crawl_rates[mask], p * dc, rtol=1e-15)
    if (~mask).any() or dc.sum() > budget:  # some page not saturated: the whole budget is spent
        assert split.complete_budget + split.incomplete_budget == pytest.approx(budget, rel=1e-12)
        # equal marginal value per crawl per day λ on both kinds of pages
        np.testing.assert_allclose(mi * di / (rho * (rho + di)), lam, rtol=1e-9)
        inner = p < 1
        np.testing.assert_allclose(mc[inner] / (p[inner] * dc[inner]), lam, rtol=1e-9)
        assert np.all(mc[~inner] / dc[~inner] >= lam * (1 - 1e-9))
    else:  # every signalled page at 1, budget left over
        np.testing.assert_array_equal(p, 1.0)
        assert lam == 0.0


@given(st.integers(1, 30), st.integers(0, 2**32 - 1), st.floats(0.01, 2.0))
@settings(max_examples=80, deadline=None)
def test_split_binary_kkt(n, seed, share):
    delta, mu, mask, budget = _instance(n, seed, share)
    split = split_crawl_budget(delta, mu, budget, mask, objective="binary_freshness")
    p, lam = split.crawl_probabilities, split.price
    dc, mc, di, mi = delta[mask], mu[mask], delta[~mask], mu[~mask]
    rho = split.crawl_rates[~mask]
    assert np.all((p >= 0) & (p <= 1)) and np.all(rho >= 0)
    if (~mask).any() or dc.sum() > budget:
        assert split.complete_budget + split.incomplete_budget == pytest.approx(budget, rel=1e-12)
        ratio = mc / dc
        assert np.all(ratio[p == 1] >= lam * (1 - 1e-12))
        assert np.all(ratio[p == 0] <= lam * (1 + 1e-12))
        np.testing.assert_allclose(ratio[(p > 0) & (p < 1)], lam, rtol=1e-12)
        on = rho > 0
        np.testing.assert_allclose(mi[on] * di[on] / (rho[on] + di[on]) ** 2, lam, rtol=1e-9)
        assert np.all(mi[~on] / di[~on] <= lam * (1 + 1e-9))
    else:
        np.testing.assert_array_equal(p, 1.0)


# ----------------------------------------------------------------------------------------
# a generic constrained solver
# ----------------------------------------------------------------------------------------


def _value(objective, x, dc, mc, di, mi):
    p, rho = x[: dc.size], x[dc.size :]
    if objective == "harmonic_staleness":
        return -np.sum(mc * np.log(p)) + np.sum(mi * np.log1p(di / rho))
    return -(np.sum(mc * p) + np.sum(mi * rho / (rho + di)))  # minimised: negative freshness


def _gradient(objective, x, dc, mc, di, mi):
    p, rho = x[: dc.size], x[dc.size :]
    if objective == "harmonic_staleness":
        return np.concatenate((-mc / p, -mi * di / (rho * (rho + di))))
    return np.concatenate((-mc, -mi * di / (rho + di) ** 2))


@pytest.mark.parametrize("objective", ["harmonic_staleness", "binary_freshness"])
@pytest.mark.parametrize("seed", range(6))
def test_split_agrees_with_slsqp(objective, seed):
    delta, mu, mask, budget = _instance(6, seed, 0.4)
    mask[:2], mask[2:4] = True, False  # both kinds present
    dc, mc, di, mi = delta[mask], mu[mask], delta[~mask], mu[~mask]
    split = split_crawl_budget(delta, mu, budget, mask, objective=objective)
    low = 1e-9
    x0 = np.concatenate((np.full(dc.size, 0.5 * budget / (2 * dc.sum())), np.full(di.size, 0.25 * budget / di.size)))
    grad = lambda x: _gradient(objective, x, dc, mc, di, mi)  # noqa: E731
    spend = np.concatenate((dc, np.ones(di.size)))
    res = optimize.minimize(
        lambda x: _value(objective, x, dc, mc, di, mi),
        x0,
        jac=grad,
        method="SLSQP",
        bounds=[(low, 1.0)] * dc.size + [(low if objective == "harmonic_staleness" else 0.0, None)] * di.size,
        constraints=[{"type": "ineq", "fun": lambda x: budget - spend @ x, "jac": lambda x: -spend}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    # 8: no descent direction left at the point (converged to rounding)
    assert res.status in (0, 8), res.message
    ours = _value(objective, np.concatenate((split.crawl_probabilities, split.crawl_rates[~mask])), dc, mc, di, mi)
    sign = 1.0 if objective == "harmonic_staleness" else -1.0
    assert sign * split.objective == pytest.approx(ours, rel=1e-14)
    # at least as good as the generic solver, once its overspend (within its constraint
    # tolerance) is charged at the price of the budget
    overspend = max(0.0, spend @ res.x - budget)
    assert ours <= res.fun + split.price * overspend + 1e-13 * abs(ours)
    assert res.fun - ours <= 1e-9 * max(1.0, abs(ours))  # and the same optimum


# ----------------------------------------------------------------------------------------
# the split against a brute-force search over it
# ----------------------------------------------------------------------------------------


def _value_of_split(budget_c, objective, dc, mc, di, mi, budget):
    """The best objective (minimised) when the signalled pages get budget_c crawls/day."""
    if budget_c > 0:
        p = complete_observability_crawl_probabilities(dc, mc, budget_c, objective=objective)
    else:
        p = np.zeros_like(dc)
    rest = budget - np.sum(p * dc)
    rho = optimal_crawl_rates(di, mi, rest, objective=objective) if rest > 0 else np.zeros_like(di)
    with np.errstate(divide="ignore"):
        return _value(objective, np.concatenate((p, rho)), dc, mc, di, mi)


@pytest.mark.parametrize("objective", ["harmonic_staleness", "binary_freshness"])
@pytest.mark.parametrize("seed", range(4))
def test_split_equals_brute_force_search(objective, seed):
    delta, mu, mask, budget = _instance(40, 100 + seed, 0.3)
    dc, mc, di, mi = delta[mask], mu[mask], delta[~mask], mu[~mask]
    split = split_crawl_budget(delta, mu, budget, mask, objective=objective)
    top = min(budget, dc.sum())
    grid = np.linspace(0.0, top, 401)[1:-1]
    values = np.array([_value_of_split(b, objective, dc, mc, di, mi, budget) for b in grid])
    k = int(np.argmin(values))
    tol = 0.005 * budget
    res = optimize.minimize_scalar(
        _value_of_split,
        bounds=(grid[max(k - 1, 0)], grid[min(k + 1, grid.size - 1)]),
        args=(objective, dc, mc, di, mi, budget),
        method="bounded",
        options={"xatol": tol},
    )
    assert abs(split.complete_budget - res.x) <= tol
    ours = _value_of_split(split.complete_budget, objective, dc, mc, di, mi, budget)
    sign = 1.0 if objective == "harmonic_staleness" else -1.0
    assert sign * split.objective == pytest.approx(ours, rel=1e-12)
    assert ours <= min(res.fun, values.min()) + 1e-12 * abs(ours)


# ----------------------------------------------------------------------------------------
# the boundaries: no signalled pages, only signalled pages
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("objective", ["harmonic_staleness", "binary_freshness"])
def test_no_complete_pages_is_optimal_crawl_rates(objective):
    delta, mu, _, budget = _instance(50, 7, 0.3)
    split = split_crawl_budget(delta, mu, budget, np.zeros(50, dtype=bool), objective=objective)
    np.testing.assert_array_equal(split.crawl_rates, optimal_crawl_rates(delta, mu, budget, objective=objective))
    assert split.crawl_probabilities.shape == (0,)
    assert split.complete_budget == 0.0


@pytest.mark.parametrize("objective", ["harmonic_staleness", "binary_freshness"])
def test_only_complete_pages(objective):
    delta, mu, _, budget = _instance(50, 8, 0.3)
    split = split_crawl_budget(
        delta.reshape(5, 10), mu.reshape(5, 10), budget, np.ones((5, 10), bool), objective=objective
    )
    p = complete_observability_crawl_probabilities(delta, mu, budget, objective=objective)
    np.testing.assert_array_equal(split.crawl_probabilities, p)
    assert split.crawl_rates.shape == (5, 10)
    assert split.incomplete_budget == 0.0


@pytest.mark.parametrize("objective", ["harmonic_staleness", "binary_freshness"])
@pytest.mark.parametrize(("time_scale", "weight_scale"), [(1e-100, 1.0), (1e100, 1e-150), (3.0, 1e200)])
def test_units_do_not_matter(objective, time_scale, weight_scale):
    # changes and crawls per day -> per (day × time_scale): the same schedule; weights scaled: the same
    delta, mu, mask, budget = _instance(30, 11, 0.3)
    base = split_crawl_budget(delta, mu, budget, mask, objective=objective)
    scaled = split_crawl_budget(delta * time_scale, mu * weight_scale, budget * time_scale, mask, objective=objective)
    np.testing.assert_allclose(scaled.crawl_probabilities, base.crawl_probabilities, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(scaled.crawl_rates, base.crawl_rates * time_scale, rtol=1e-12, atol=1e-300)
    assert scaled.price == pytest.approx(base.price * weight_scale / time_scale, rel=1e-12)


# ----------------------------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"change_rates": [1.0, -1.0]}, ValueError, "change_rates"),
        ({"change_rates": [1.0, np.nan]}, ValueError, "change_rates"),
        ({"weights": [1.0, np.nan]}, ValueError, "weights"),
        ({"weights": [1.0, -2.0]}, ValueError, "weights"),
        ({"weights": [1.0, 1.0, 1.0]}, ValueError, "weights"),
        ({"budget": 0.0}, ValueError, "budget"),
        ({"budget": -1.0}, ValueError, "budget"),
        ({"budget": np.inf}, ValueError, "budget"),
        ({"budget": "1"}, TypeError, "budget"),
        ({"change_rates": []}, ValueError, "change_rates"),
        ({"objective": "freshness"}, ValueError, "objective"),
    ],
)
def test_bad_input(kwargs, error, match):
    args = {"change_rates": [1.0, 2.0], "weights": [1.0, 1.0], "budget": 1.0} | kwargs
    n = np.asarray(args["change_rates"]).shape
    with pytest.raises(error, match=match):
        complete_observability_crawl_probabilities(**args)
    with pytest.raises(error, match=match):
        split_crawl_budget(**args, complete=np.ones(n, dtype=bool))


def test_bad_mask():
    with pytest.raises(TypeError, match="complete"):
        split_crawl_budget([1.0, 2.0], 1.0, 1.0, [1, 0])
    with pytest.raises(ValueError, match="complete"):
        split_crawl_budget([1.0, 2.0], 1.0, 1.0, [True, False, True])


# ----------------------------------------------------------------------------------------
# the ends of the floating-point range
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("objective", ["harmonic_staleness", "binary_freshness"])
@pytest.mark.parametrize(
    ("delta", "mu", "budget", "expected"),
    [
        # Δ = (1, 2), μ = (1, 1): λ = Σμ/R, p = μ/(λΔ) = (R/2, R/4); knapsack: page 1 first
        ([1.0, 2.0], [1.0, 1.0], 1e-280, {"harmonic_staleness": [5e-281, 2.5e-281], "binary_freshness": [1e-280, 0]}),
        # equal pages: p = R/ΣΔ = 1/2 for both objectives (ΣΔ = 2e308 is beyond the floats)
        ([1e308, 1e308], [1.0, 1.0], 1e308, {"harmonic_staleness": [0.5, 0.5], "binary_freshness": [0.5, 0.5]}),
        # μ_1/μ_2 = 1e-600 is 0 in the floats: page 2 takes the whole budget, p_2 = R/Δ_2
        ([1.0, 2.0], [1e-300, 1e300], 1.0, {"harmonic_staleness": [0.0, 0.5], "binary_freshness": [0.0, 0.5]}),
        # Δ_1/Δ_2 = 5e-321: page 1's changes cost nothing, page 2 gets R/Δ_2
        ([1e-320, 2.0], [1.0, 1.0], 1.0, {"harmonic_staleness": [1.0, 0.5], "binary_freshness": [1.0, 0.5]}),
    ],
)
def test_extreme_rates_and_budgets_spend_the_budget_without_warnings(delta, mu, budget, expected, objective):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = complete_observability_crawl_probabilities(delta, mu, budget, objective=objective)
    np.testing.assert_allclose(p, expected[objective], rtol=1e-14)
    spent = sum(pi * di for pi, di in zip(p.tolist(), delta))
    assert spent == pytest.approx(budget, rel=1e-12)


@pytest.mark.parametrize("objective", ["harmonic_staleness", "binary_freshness"])
def test_a_budget_below_the_floats_of_the_probabilities_is_refused(objective):
    with pytest.raises(ValueError, match=r"`budget` must be at least 1e-290 times the largest change rate \(2 per"):
        complete_observability_crawl_probabilities([1.0, 2.0], [1.0, 1.0], 1e-320, objective=objective)
