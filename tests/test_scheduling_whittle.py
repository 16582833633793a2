"""Whittle index: closed form against the numerically solved subsidy problem, indexability."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from changerate_bayes.scheduling import check_indexability, whittle_index, whittle_index_numerical


def _grid(a, u, n):
    return u * (1 - a ** (np.arange(n) + 1)) / (1 - a)


# ----------------------------------------------------------------- exact values
def test_hand_derived_values():
    # γ(u) = (1-α)u/C, γ(x_n) = (x_n - (n+1)uα^{n+1})/C, γ(u*) = u*/C
    a, u, c = 0.5, 2.0, 4.0
    xn = _grid(a, u, 6)
    expected = (xn - (np.arange(6) + 1) * u * a ** (np.arange(6) + 1)) / c
    np.testing.assert_allclose(whittle_index(xn, alpha=a, inflow=u, cost=c), expected, rtol=1e-14)
    assert whittle_index(u / (1 - a), alpha=a, inflow=u, cost=c) == pytest.approx(u / (1 - a) / c, rel=1e-14)
    assert whittle_index(u, alpha=a, inflow=u, cost=c) == pytest.approx((1 - a) * u / c, rel=1e-14)


def test_piecewise_linear_between_grid_points():
    # on (x_{n-1}, x_n] the slope is (n+1)(1-α)/C
    a, u = 0.6, 1.0
    xn = _grid(a, u, 5)
    x = np.linspace(xn[2] + 1e-9, xn[3], 7)
    g = whittle_index(x, alpha=a, inflow=u)
    np.testing.assert_allclose(np.diff(g) / np.diff(x), 4 * (1 - a), rtol=1e-6)


# ------------------------------------------------------- the independent checks
@pytest.mark.parametrize(
    ("alpha", "inflow", "cost"),
    [(0.05, 1.0, 1.0), (0.5, 2.0, 0.5), (0.8, 3.0, 2.5), (0.95, 1.0, 1.0), (0.99, 0.3, 1.7)],
)
def test_closed_form_matches_policy_search(alpha, inflow, cost):
    ustar = inflow / (1 - alpha)
    gen = np.random.default_rng(int(alpha * 100))
    x = np.concatenate([[inflow, ustar], _grid(alpha, inflow, 4), gen.uniform(inflow, ustar, 6)])
    num = whittle_index_numerical(x, alpha=alpha, inflow=inflow, cost=cost)
    np.testing.assert_allclose(whittle_index(x, alpha=alpha, inflow=inflow, cost=cost), num, rtol=0, atol=1e-8)


@pytest.mark.parametrize(("alpha", "inflow", "cost"), [(0.3, 5.0, 0.7), (0.7, 1.0, 1.0)])
def test_closed_form_matches_value_iteration(alpha, inflow, cost):
    ustar = inflow / (1 - alpha)
    x = np.array([inflow, 0.5 * (inflow + ustar), 0.97 * ustar])
    num = whittle_index_numerical(x, alpha=alpha, inflow=inflow, cost=cost, method="value_iteration")
    np.testing.assert_allclose(whittle_index(x, alpha=alpha, inflow=inflow, cost=cost), num, rtol=0, atol=1e-8)


@pytest.mark.parametrize("method", ["policy_search", "value_iteration"])
@pytest.mark.parametrize(("alpha", "inflow"), [(0.2, 1.0), (0.6, 3.0)])
def test_indexable(method, alpha, inflow):
    res = check_indexability(
        alpha=alpha,
        inflow=inflow,
        method=method,
        subsidies=None if method == "policy_search" else np.linspace(0.0, 1.2 * inflow / (1 - alpha), 15),
        states=None if method == "policy_search" else np.linspace(inflow, inflow / (1 - alpha), 12),
    )
    assert res.indexable and res.statistic == 0
    # passive sets run from empty to everything across the subsidy range
    assert not res.passive[0].any() and res.passive[-1].all()
    # and the switch point of each state is its index
    lam_switch = res.subsidies[np.argmax(res.passive, axis=0)]
    g = whittle_index(res.states, alpha=alpha, inflow=inflow)
    step = np.diff(res.subsidies).max()
    assert np.all((lam_switch >= g - 1e-9) & (lam_switch <= g + step + 1e-9))


@given(
    st.floats(0.01, 0.99),
    st.floats(0.01, 100.0),
    st.floats(0.1, 10.0),
    st.lists(st.floats(0, 1), min_size=2, max_size=20),
)
def test_increasing_in_state_and_between_bounds(alpha, inflow, cost, fractions):
    ustar = inflow / (1 - alpha)
    x = np.sort(inflow + np.array(fractions) * (ustar - inflow))
    g = whittle_index(x, alpha=alpha, inflow=inflow, cost=cost)
    assert np.all(np.diff(g) >= -1e-9 * ustar / cost)
    assert np.all(g >= (1 - alpha) * inflow / cost * (1 - 1e-12))
    assert np.all(g <= ustar / cost * (1 + 1e-12))


def test_broadcasting_over_sources():
    g = whittle_index([[1.0], [2.0]], alpha=[0.5, 0.5], inflow=1.0)
    assert g.shape == (2, 2)
    np.testing.assert_allclose(g, [[0.5, 0.5], [2.0, 2.0]])
    assert isinstance(whittle_index(1.0, alpha=0.5, inflow=1.0), float)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("state", "kwargs", "match"),
    [
        (1.0, {"alpha": 1.0, "inflow": 1.0}, r"`alpha` must be in \(0, 1\); got 1.0"),
        (1.0, {"alpha": 0.0, "inflow": 1.0}, r"`alpha` must be in \(0, 1\); got 0.0"),
        (1.0, {"alpha": np.nan, "inflow": 1.0}, r"`alpha` must be finite; got nan"),
        (1.0, {"alpha": 0.5, "inflow": 0.0}, r"`inflow` must be > 0; got 0.0"),
        (1.0, {"alpha": 0.5, "inflow": 1.0, "cost": -1.0}, r"`cost` must be > 0; got -1.0"),
        (
            [1.0, 0.5],
            {"alpha": 0.5, "inflow": 1.0},
            r"`state` must lie in \[inflow, inflow/\(1-alpha\)\].*got 0.5 at index 1",
        ),
        (2.5, {"alpha": 0.5, "inflow": 1.0}, r"`state` must lie in .*got 2.5 .*interval is \[1.0, 2.0\]"),
        (np.nan, {"alpha": 0.5, "inflow": 1.0}, r"`state` must be finite; got nan"),
        ([1.0, 1.5], {"alpha": [0.5, 0.5, 0.5], "inflow": 1.0}, r"must broadcast together"),
    ],
)
def test_bad_input(state, kwargs, match):
    with pytest.raises(ValueError, match=match):
        whittle_index(state, **kwargs)


def test_numerical_bad_input():
    with pytest.raises(ValueError, match=r"`method` must be one of"):
        whittle_index_numerical(1.0, alpha=0.5, inflow=1.0, method="lp")
    with pytest.raises(ValueError, match=r"`alpha` must be in \(0, 1\)"):
        whittle_index_numerical(1.0, alpha=1.5, inflow=1.0)
    with pytest.raises(ValueError, match=r"`subsidies` must be strictly increasing"):
        check_indexability(alpha=0.5, inflow=1.0, subsidies=[1.0, 0.5])
