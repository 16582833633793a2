"""optimal_crawl_rates: hand-derived values, scipy.optimize, KKT certificates, invariants."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from changerate_bayes.scheduling import crawl_objective, optimal_crawl_rates
from changerate_bayes.scheduling._optimal_rates import _binary_freshness_rows
from changerate_bayes.validation.scheduling_rates import reference_crawl_rates

OBJECTIVES = ("binary_freshness", "harmonic_staleness")


# ----------------------------------------------------------------- exact values
def test_binary_freshness_hand_derived():
    # Δ = (1, 4), w = 1, B = 4: all active, s = (B + ΣΔ)/Σ sqrt(wΔ) = 9/3 = 3,
    # p = s sqrt(wΔ) - Δ = (2, 2); λ = 1/9 = wΔ/(p+Δ)^2 for both pages.
    np.testing.assert_allclose(optimal_crawl_rates([1.0, 4.0], [1.0, 1.0], 4.0), [2.0, 2.0], rtol=1e-14)
    # Δ = (1, 100), B = 1: page 1 alone gives p = 1, λ = 1/4 > w/Δ = 1/100 for page 2.
    np.testing.assert_allclose(optimal_crawl_rates([1.0, 100.0], 1.0, 1.0), [1.0, 0.0], rtol=1e-14)
    # equal pages share equally
    np.testing.assert_allclose(optimal_crawl_rates([3.0] * 4, 2.0, 10.0), [2.5] * 4, rtol=1e-14)


def test_harmonic_staleness_hand_derived():
    # p(p + Δ) = wΔs: Δ = (1, 2), s = 2 gives p1 = 1 and p2^2 + 2 p2 - 4 = 0, p2 = √5 - 1;
    # so B = √5.
    p = optimal_crawl_rates([1.0, 2.0], 1.0, np.sqrt(5.0), objective="harmonic_staleness")
    np.testing.assert_allclose(p, [1.0, np.sqrt(5.0) - 1.0], rtol=1e-13)
    # weights double: p(p+Δ) = wΔs with w = (2, 1), Δ = (1, 1), s = 1: p1 = 1, p2 = (√5 - 1)/2
    p = optimal_crawl_rates([1.0, 1.0], [2.0, 1.0], (1 + np.sqrt(5.0)) / 2, objective="harmonic_staleness")
    np.testing.assert_allclose(p, [1.0, (np.sqrt(5.0) - 1) / 2], rtol=1e-13)


def test_crawl_objective_values():
    assert crawl_objective([2.0, 2.0], [1.0, 4.0], 1.0) == pytest.approx(1.0)
    # Δ = 0 counts as fresh, p = 0 < Δ as stale
    assert crawl_objective([0.0, 0.0], [0.0, 1.0], [3.0, 5.0]) == pytest.approx(3.0)
    h = crawl_objective([1.0, 1.0], [1.0, 3.0], [1.0, 2.0], objective="harmonic_staleness")
    assert h == pytest.approx(np.log(2.0) + 2 * np.log(4.0))
    assert crawl_objective([0.0], [1.0], 1.0, objective="harmonic_staleness") == np.inf


# ----------------------------------------------------------- against scipy.optimize
def _scipy_solution(delta, w, budget, objective):
    """SLSQP on the same problem (the independent check shared with the study)."""
    rates, success = reference_crawl_rates(delta, w, budget, objective, maxiter=1000)
    assert success
    return rates


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_scipy_optimize(objective, seed):
    gen = np.random.default_rng(seed)
    n = 4 + seed
    delta = gen.lognormal(0.0, 1.5, n)
    w = gen.lognormal(0.0, 1.0, n)
    budget = float(gen.uniform(0.2, 3.0) * delta.sum())
    ours = optimal_crawl_rates(delta, w, budget, objective=objective)
    ref = _scipy_solution(delta, w, budget, objective)
    val = lambda p: crawl_objective(p, delta, w, objective=objective)
    sign = 1.0 if objective == "binary_freshness" else -1.0
    # ours is at least as good as SLSQP's, and they agree to SLSQP's accuracy
    assert sign * (val(ours) - val(ref)) >= -1e-10 * abs(val(ref))
    np.testing.assert_allclose(ours, ref, atol=1e-5 * budget)


@given(st.integers(2, 40), st.integers(0, 2**31 - 1), st.floats(0.01, 50.0))
def test_binary_freshness_kkt_certificate(n, seed, budget_scale):
    # Sufficient optimality conditions of the concave problem: one λ for all active pages,
    # inactive pages have w/Δ <= λ.
    gen = np.random.default_rng(seed)
    delta = gen.lognormal(0.0, 2.0, n)
    w = gen.lognormal(0.0, 1.0, n)
    budget = budget_scale * float(np.median(delta))
    p = optimal_crawl_rates(delta, w, budget)
    active = p > 0
    lam = w * delta / (p + delta) ** 2
    lam_star = lam[active].mean()
    np.testing.assert_allclose(lam[active], lam_star, rtol=1e-8)
    assert np.all(w[~active] / delta[~active] <= lam_star * (1 + 1e-8))


@given(st.integers(2, 40), st.integers(0, 2**31 - 1), st.floats(0.01, 50.0))
def test_harmonic_staleness_kkt_certificate(n, seed, budget_scale):
    gen = np.random.default_rng(seed)
    delta = gen.lognormal(0.0, 2.0, n)
    w = gen.lognormal(0.0, 1.0, n)
    p = optimal_crawl_rates(delta, w, budget_scale * float(np.median(delta)), objective="harmonic_staleness")
    assert np.all(p > 0)
    lam = w * delta / (p * (p + delta))
    np.testing.assert_allclose(lam, lam.mean(), rtol=1e-8)


# ------------------------------------------------------------------- invariants
rates = st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=30)


@given(rates, st.integers(0, 2**31 - 1), st.floats(1e-3, 1e4), st.sampled_from(OBJECTIVES))
def test_budget_spent_and_nonnegative(delta, seed, budget, objective):
    delta = np.array(delta)
    w = np.random.default_rng(seed).lognormal(0.0, 1.0, delta.size)
    p = optimal_crawl_rates(delta, w, budget, objective=objective)
    assert p.shape == delta.shape
    assert np.all(p >= 0)
    assert abs(p.sum() - budget) <= 1e-9 * budget


@given(rates, st.integers(0, 2**31 - 1), st.floats(1e-2, 1e3), st.floats(1.0, 10.0), st.sampled_from(OBJECTIVES))
def test_monotone_in_own_weight(delta, seed, budget, factor, objective):
    # p_i(s, w_i) is non-decreasing in w_i and in s = λ^{-1/2}; if w_i grows and s does
    # not drop, p_i grows; if s drops, every other page gives budget to page i.
    delta = np.array(delta)
    w = np.random.default_rng(seed).lognormal(0.0, 1.0, delta.size)
    i = seed % delta.size
    p0 = optimal_crawl_rates(delta, w, budget, objective=objective)
    w2 = w.copy()
    w2[i] *= factor
    p1 = optimal_crawl_rates(delta, w2, budget, objective=objective)
    assert p1[i] >= p0[i] * (1 - 1e-9) - 1e-12 * budget
    others = np.arange(delta.size) != i
    assert np.all(p1[others] <= p0[others] * (1 + 1e-9) + 1e-12 * budget)


@given(rates, st.integers(0, 2**31 - 1), st.floats(1e-2, 1e3), st.floats(1.0, 10.0))
def test_harmonic_monotone_in_own_change_rate(delta, seed, budget, factor):
    # dp/dΔ = (ws - p)/(2p + Δ) > 0 at fixed s: p_i is non-decreasing in Δ_i.
    delta = np.array(delta)
    w = np.random.default_rng(seed).lognormal(0.0, 1.0, delta.size)
    i = seed % delta.size
    p0 = optimal_crawl_rates(delta, w, budget, objective="harmonic_staleness")
    d2 = delta.copy()
    d2[i] *= factor
    p1 = optimal_crawl_rates(d2, w, budget, objective="harmonic_staleness")
    assert p1[i] >= p0[i] * (1 - 1e-9)


def test_binary_freshness_is_not_monotone_in_change_rate():
    # p_i(s) = s sqrt(w_i Δ_i) - Δ_i rises then falls in Δ_i; past w_i/λ the page is dropped.
    others = np.ones(5)
    p_of = lambda d: optimal_crawl_rates(np.append(others, d), 1.0, 5.0)[-1]
    values = np.array([p_of(d) for d in (0.1, 0.5, 2.0, 10.0, 100.0)])
    assert values[1] > values[0]  # rising
    assert values[3] < values[2]  # falling
    assert values[4] == 0.0  # dropped: λ = 1/(1+1.0...)^2 > w/Δ = 0.01


def test_zero_change_rate_and_zero_weight_pages():
    p = optimal_crawl_rates([0.0, 1.0, 2.0, 3.0], [1.0, 0.0, 1.0, 1.0], 6.0)
    assert p[0] == 0.0 and p[1] == 0.0
    assert p.sum() == pytest.approx(6.0, rel=1e-12)
    np.testing.assert_allclose(p[2:], optimal_crawl_rates([2.0, 3.0], 1.0, 6.0), rtol=1e-14)
    h = optimal_crawl_rates([0.0, 1.0, 2.0], [1.0, 1.0, 0.0], 2.0, objective="harmonic_staleness")
    np.testing.assert_allclose(h, [0.0, 2.0, 0.0])


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_nothing_to_gain_splits_budget_equally(objective):
    np.testing.assert_allclose(optimal_crawl_rates([0.0, 0.0, 5.0], [1.0, 2.0, 0.0], 3.0, objective=objective), 1.0)


def test_shape_is_kept_and_ties_are_shared():
    delta = np.full((2, 3), 2.0)
    p = optimal_crawl_rates(delta, 1.0, 12.0)
    assert p.shape == (2, 3)
    np.testing.assert_allclose(p, 2.0)


def test_row_solver_matches_one_problem_per_row():
    gen = np.random.default_rng(4)
    delta = gen.lognormal(0.0, 1.0, (4, 50))
    w = gen.lognormal(0.0, 1.0, (4, 50))
    delta[0, :3] = 0.0
    w[1] = 0.0
    w[2, 7] = 0.0
    budgets = np.array([1.0, 2.0, 30.0, 0.01])
    rows = _binary_freshness_rows(delta, w, budgets)
    for r in range(4):
        np.testing.assert_allclose(rows[r], optimal_crawl_rates(delta[r], w[r], budgets[r]), rtol=1e-12, atol=1e-15)


def test_large_problem_budget_identity():
    gen = np.random.default_rng(5)
    delta = gen.pareto(1.2, 200_000) + 1e-3
    w = gen.lognormal(0.0, 2.0, 200_000)
    p = optimal_crawl_rates(delta, w, 5e4)
    assert abs(p.sum() / 5e4 - 1) < 1e-9
    assert 0 < np.count_nonzero(p) < p.size


# ---------------------------------------------- numerical edges: any magnitude
def _decimal_water_filling(delta, w, budget, digits=60):
    """Textbook water-filling in 60-digit decimal arithmetic (independent reference).

    Pages sorted by breakpoint w/Δ (descending); the first m are active for the largest m
    whose s = (B + Σ_{i<=m} Δ_i)/Σ_{i<=m} √(w_i Δ_i) leaves page m crawled
    (s √(w_m Δ_m) > Δ_m); p_i = s √(w_i Δ_i) - Δ_i. O(N^2); small N only.
    """
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = digits
        d = [Decimal(float(x)) for x in delta]
        ww = [Decimal(float(x)) for x in w]
        order = sorted(range(len(d)), key=lambda i: ww[i] / d[i], reverse=True)
        best = None
        for m in range(1, len(d) + 1):
            act = order[:m]
            s = (Decimal(float(budget)) + sum(d[i] for i in act)) / sum((ww[i] * d[i]).sqrt() for i in act)
            if s * (ww[act[-1]] * d[act[-1]]).sqrt() - d[act[-1]] > 0:
                best = (act, s)
        act, s = best
        p = np.zeros(len(d))
        for i in act:
            p[i] = float(s * (ww[i] * d[i]).sqrt() - d[i])
    return p


def test_budget_tiny_against_change_rates_is_spent_exactly():
    # Newcomer report: [1.49e-8, 0] (49% over budget). F_2 = Δ_1 (√(λ_1/λ_2) - 1) = 1e8 (√2 - 1)
    # > B, so page 1 alone is crawled, at p = B; s √(wΔ) - Δ lost B to rounding (B/Δ = 1e-16).
    np.testing.assert_allclose(optimal_crawl_rates([1e8, 2e8], [1.0, 1.0], 1e-8), [1e-8, 0.0], rtol=1e-12, atol=0)
    # several pages with breakpoints within 1e-12 of each other share a budget 1e-12 of Δ
    gen = np.random.default_rng(8)
    delta = 1e8 * (1 + 1e-13 * gen.random(6))
    w = 1 + 1e-12 * gen.random(6)
    p = optimal_crawl_rates(delta, w, 1e-4)
    ref = _decimal_water_filling(delta, w, 1e-4)
    assert 1 < np.count_nonzero(ref) and abs(p.sum() / 1e-4 - 1) < 1e-12
    # p_i moves by about Δ_i ε when the breakpoint ratios move by ε (here p/Δ = 1e-13, an
    # ill-conditioned problem): a few ulps of Δ is the floor for float arithmetic
    np.testing.assert_allclose(p, ref, rtol=0, atol=4 * np.finfo(float).eps * delta.max())


@pytest.mark.parametrize("budget", [1e-9, 1e-3, 1.0, 40.0, 1e4])
def test_binary_freshness_matches_decimal_reference(budget):
    gen = np.random.default_rng(int(np.log10(budget) + 20))
    delta = gen.lognormal(0.0, 2.0, 12)
    w = gen.lognormal(0.0, 1.0, 12)
    np.testing.assert_allclose(
        optimal_crawl_rates(delta, w, budget), _decimal_water_filling(delta, w, budget), rtol=1e-11, atol=1e-15 * budget
    )


@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("scale", [1e-300, 1e-155, 1e-20, 1e20, 1e154, 1e155, 1e300])
def test_scale_invariance_at_extreme_magnitudes(objective, scale):
    # Newcomer report: harmonic staleness gave [nan, nan] from about 1e155 on (w Δ s overflowed).
    # Multiplying Δ and B by c multiplies p by c; multiplying w by c changes nothing.
    delta, w, budget = np.array([1.0, 2.0, 30.0]), np.array([1.0, 1.0, 2.0]), 3.0
    ref = optimal_crawl_rates(delta, w, budget, objective=objective)
    np.testing.assert_allclose(
        optimal_crawl_rates(delta * scale, w, budget * scale, objective=objective) / scale, ref, rtol=1e-12, atol=1e-15
    )
    np.testing.assert_allclose(optimal_crawl_rates(delta, w * scale, budget, objective=objective), ref, rtol=1e-12)


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_huge_change_rates_against_a_unit_budget(objective):
    # Newcomer report: [0, 0] (budget not spent). Equal pages share B equally.
    np.testing.assert_allclose(
        optimal_crawl_rates([1e300, 1e300], [1.0, 1.0], 1.0, objective=objective), [0.5, 0.5], rtol=1e-12
    )
    np.testing.assert_allclose(
        optimal_crawl_rates([1e300, 1e300], 1.0, 1e-300, objective=objective), [5e-301, 5e-301], rtol=1e-12
    )


def test_the_exact_active_set_check_corrects_any_first_guess(monkeypatch):
    # The O(N) guess of the active-set size may be off near ties; the probes must recover
    # the same solution from any guess (here: 1, N and the middle).
    from changerate_bayes.scheduling import _optimal_rates as mod

    gen = np.random.default_rng(9)
    delta = gen.lognormal(0.0, 2.0, (3, 40))
    w = gen.lognormal(0.0, 1.0, (3, 40))
    budgets = np.array([0.05, 3.0, 80.0])
    ref = mod._binary_freshness_rows(delta, w, budgets)
    assert np.all((np.count_nonzero(ref, axis=1) > 1) & (np.count_nonzero(ref, axis=1) < 40))
    for guess in (1, 40, 20):
        monkeypatch.setattr(mod, "_binary_freshness_active_guess", lambda key, ld, g=guess: np.full(key.shape[0], g))
        np.testing.assert_allclose(mod._binary_freshness_rows(delta, w, budgets), ref, rtol=1e-13, atol=1e-16)


magnitudes = st.floats(-100.0, 100.0)  # decimal exponents


@given(st.lists(st.tuples(magnitudes, magnitudes), min_size=1, max_size=20), magnitudes, st.sampled_from(OBJECTIVES))
def test_any_magnitudes_spend_the_budget_and_satisfy_kkt(pairs, log_budget, objective):
    # Δ, w and B anywhere in 1e-100 .. 1e100: finite, >= 0, Σ p = B, and the optimality
    # certificate, in logs so that it cannot overflow: a common log λ for every crawled
    # page, and (binary freshness) log(w/Δ) <= log λ for the pages left out.
    delta = 10.0 ** np.array([a for a, _ in pairs])
    w = 10.0 ** np.array([b for _, b in pairs])
    budget = 10.0**log_budget
    p = optimal_crawl_rates(delta, w, budget, objective=objective)
    assert np.all(np.isfinite(p)) and np.all(p >= 0)
    assert abs(p.sum() / budget - 1) <= 1e-9
    normal = p >= np.finfo(float).tiny
    assert normal.any()
    with np.errstate(divide="ignore"):
        lp = np.log(p)
    if objective == "binary_freshness":
        log_lam = np.log(w) + np.log(delta) - 2 * np.logaddexp(lp, np.log(delta))
        lam = log_lam[normal].max()
        assert np.all(np.log(w[p == 0]) - np.log(delta[p == 0]) <= lam + 1e-9)
    else:
        log_lam = np.log(w) + np.log(delta) - lp - np.logaddexp(lp, np.log(delta))
    assert np.ptp(log_lam[normal]) <= 1e-9


@given(
    st.lists(st.tuples(magnitudes, magnitudes), min_size=1, max_size=20),
    magnitudes,
    st.integers(-150, 150),
    st.integers(-150, 150),
    st.sampled_from(OBJECTIVES),
)
def test_exact_scale_invariance_under_powers_of_two(pairs, log_budget, k, j, objective):
    # Powers of two scale floats exactly, so the solver, which works with Δ/B and
    # w/max(w), must return exactly 2^k p for (2^k Δ, 2^j w, 2^k B).
    delta = 10.0 ** np.array([a for a, _ in pairs])
    w = 10.0 ** np.array([b for _, b in pairs])
    budget = 10.0**log_budget
    p = optimal_crawl_rates(delta, w, budget, objective=objective)
    p2 = optimal_crawl_rates(np.ldexp(delta, k), np.ldexp(w, j), np.ldexp(budget, k), objective=objective)
    assert np.all(np.isfinite(p)) and np.all(np.isfinite(p2))
    np.testing.assert_allclose(np.ldexp(p2, -k), p, rtol=1e-12, atol=1e-15 * budget)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "match"),
    [
        (([1.0, -1.0], 1.0, 1.0), {}, ValueError, r"`change_rates` must be >= 0; got -1.0 at index 1"),
        (([1.0, np.nan], 1.0, 1.0), {}, ValueError, r"`change_rates` must be finite; got nan at index 1"),
        (([1.0, 2.0], [1.0, -2.0], 1.0), {}, ValueError, r"`weights` must be >= 0; got -2.0 at index 1"),
        (([1.0, 2.0], [1.0, np.inf], 1.0), {}, ValueError, r"`weights` must be finite; got inf at index 1"),
        (([1.0, 2.0], [1.0, 2.0, 3.0], 1.0), {}, ValueError, r"`weights` must be a scalar or have the shape"),
        (([1.0], 1.0, 0.0), {}, ValueError, r"`budget` must be a finite number > 0; got 0.0"),
        (([1.0], 1.0, -3.0), {}, ValueError, r"`budget` must be a finite number > 0; got -3.0"),
        (([1.0], 1.0, np.nan), {}, ValueError, r"`budget` must be a finite number > 0; got nan"),
        (([1.0], 1.0, "5"), {}, TypeError, r"`budget` must be a real number; got str"),
        (([], 1.0, 1.0), {}, ValueError, r"`change_rates` must not be empty"),
        ((["a"], 1.0, 1.0), {}, TypeError, r"`change_rates` must be numeric"),
        (([1.0], 1.0, 1.0), {"objective": "max"}, ValueError, r"`objective` must be one of"),
    ],
)
def test_bad_input(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        optimal_crawl_rates(*args, **kwargs)


def test_crawl_objective_bad_input():
    with pytest.raises(ValueError, match=r"`crawl_rates` must be >= 0; got -1.0 at index 0"):
        crawl_objective([-1.0], [1.0], 1.0)
    with pytest.raises(ValueError, match=r"`crawl_rates` must have the shape of `change_rates`"):
        crawl_objective([1.0, 2.0], [1.0], 1.0)


# ------------------------------------- the selection kernel against the sorted solver
def _against_sorted_solver(delta, w, budget, *, fast=True):
    """The selection solver equals the sorted log-domain solver to 1e-12 relative.

    Beyond 1e-12 p_i, the floor is a few ulps of Δ_i: both evaluate p_i = Δ_i (e_i + t g_i)
    from the rounded breakpoints w/Δ, whose last bit moves p_i by about Δ_i ε. With
    ``fast`` the selection kernel itself must have found the answer (no fallback).
    """
    from changerate_bayes.scheduling import _optimal_rates as mod

    new = mod._binary_freshness_select(delta, w, budget) if fast else optimal_crawl_rates(delta, w, budget)
    assert new is not None  # ordinary magnitudes: no fallback
    old = _binary_freshness_rows(delta[None, :], w[None, :], np.array([budget]))[0]
    tol = 1e-12 * old + 8 * np.finfo(float).eps * delta
    assert np.all(np.abs(new - old) <= tol), np.max(np.abs(new - old) / tol)
    assert np.array_equal(new > 0, old > 0)
    return new


@pytest.mark.parametrize("n", [2, 3, 17, 100, 1000, 50_000])
@pytest.mark.parametrize("budget_share", [1e-9, 1e-3, 0.5, 20.0])
def test_selection_kernel_matches_the_sorted_solver(n, budget_share):
    gen = np.random.default_rng(n + int(1e3 * budget_share))
    delta = gen.pareto(1.2, n) + 1e-3
    w = gen.lognormal(0.0, 2.0, n)
    p = _against_sorted_solver(delta, w, budget_share * n)
    assert abs(p.sum() / (budget_share * n) - 1) < 1e-12


def test_selection_kernel_with_ties_and_near_ties():
    gen = np.random.default_rng(4)
    # many equal breakpoints (one value per block of 1000 pages): the pivot ties
    delta = np.repeat(gen.lognormal(0.0, 1.0, 40), 1000)
    w = 2.0 * delta * np.repeat(gen.lognormal(0.0, 1.0, 40), 1000)
    for budget in (1e-6, 3.0, 1e3, 1e6):
        p = _against_sorted_solver(delta, w, budget)
        blocks = p.reshape(40, 1000)
        assert np.all(blocks.max(axis=1) == blocks.min(axis=1))  # tied pages are treated alike
    # breakpoints within 1e-12 of each other and a budget 1e-16 of ΣΔ: the selection's
    # sums cancel, its active set fails the KKT check and the sorted solver answers
    delta = 1e8 * (1 + 1e-13 * gen.random(5000))
    w = 1 + 1e-12 * gen.random(5000)
    _against_sorted_solver(delta, w, 1e-4, fast=False)


def test_selection_kernel_hands_over_outside_its_range(monkeypatch):
    from changerate_bayes.scheduling import _optimal_rates as mod

    delta, w = np.array([1.0, 2.0, 30.0]), np.array([1.0, 1.0, 2.0])
    assert mod._binary_freshness_select(delta * 1e305, w, 3e305) is None  # Δ/B fine, w/Δ = 1e-305 not
    assert mod._binary_freshness_select(delta, w, 3e-160) is None  # Δ/B = 1e160
    assert mod._binary_freshness_select(delta, w, 3.0) is not None
    # a failed quickselect (unlucky pivots) or a rejected active set falls back to the sorted solver
    ref = optimal_crawl_rates(delta, w, 3.0)
    monkeypatch.setattr(mod, "select_level", lambda r, sq, d: (np.nan, np.nan, False))
    np.testing.assert_allclose(optimal_crawl_rates(delta, w, 3.0), ref, rtol=1e-13)
    monkeypatch.setattr(mod, "select_level", lambda r, sq, d: (r.min(), 0.0, True))  # every page: t < 0
    np.testing.assert_allclose(optimal_crawl_rates(delta, w, 3.0), ref, rtol=1e-13)
    assert mod._binary_freshness_select(delta, w, 3.0) is None
