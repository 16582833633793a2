"""The compiled moment-matching final value against its equation solved independently."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from changerate_bayes import CrawlHistory, final_estimates
from changerate_bayes.estimators._rootkinds import MM_KIND
from changerate_bayes.estimators._rootsolve import solve_robust

# the tests that compile the estimators' kernels run in one pytest-xdist worker, so that a
# fresh checkout compiles them once, not once in every worker at the same time
pytestmark = pytest.mark.xdist_group("estimator_kernels")


def _mm_reference(changed, tau):
    """Δ with Σ_j e^{−Δτ_j} = n0 (the MM equation), by Brent's method on s = log Δ.

    f(e^s) = Σ_j e^{−e^s τ_j} − n0 decreases from n1 > 0 to −n0 < 0; brentq with xtol
    1e-15 in s leaves a relative error ~1e-15 in Δ (the equation is well conditioned for
    intervals within a few decades of each other).
    """
    changed, tau = np.asarray(changed), np.asarray(tau, dtype=float)
    n0 = float(np.sum(changed == 0))
    f = lambda s: math.fsum(math.exp(-math.exp(s) * t) for t in tau) - n0  # noqa: E731
    lo, hi = -60.0, 60.0
    return math.exp(optimize.brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500))


def _history(pages):
    changed = np.concatenate([c for c, _ in pages]).astype(np.int8)
    tau = np.concatenate([t for _, t in pages])
    return CrawlHistory.from_segments(changed, tau, lengths=[len(c) for c, _ in pages], crawl_rate=1.0)


@st.composite
def _pages(draw):
    n = draw(st.integers(1, 6))
    pages = []
    for _ in range(n):
        k = draw(st.integers(2, 40))
        changed = np.array(draw(st.lists(st.integers(0, 1), min_size=k, max_size=k)))
        if changed.min() == changed.max():  # some crawls changed, some did not
            changed[draw(st.integers(0, k - 1))] = 1 - changed[0]
        tau = np.array(draw(st.lists(st.floats(0.05, 20.0), min_size=k, max_size=k)))
        pages.append((changed, tau))
    return pages


@settings(max_examples=40, deadline=None)
@given(pages=_pages())
def test_mm_final_solves_the_moment_equation(pages):
    got = final_estimates(_history(pages), "mm")
    for (changed, tau), value in zip(pages, np.atleast_1d(got)):
        assert 0 < changed.sum() < changed.size
        assert value == pytest.approx(_mm_reference(changed, tau), rel=1e-12)


def test_mm_final_matches_the_log_space_solver_across_scales():
    """Intervals from 1e-150 to 1e150 (the compiled range), against the bracketed log-space solver."""
    rng = np.random.default_rng(4)
    pages = []
    for scale in (1e-150, 1e-20, 1e-3, 1.0, 1e3, 1e40, 1e150):
        for _ in range(30):
            k = int(rng.integers(2, 80))
            tau = scale * np.exp(rng.normal(0, 2, k))
            changed = (rng.random(k) < 0.4).astype(np.int8)
            changed[0], changed[1] = 1, 0
            pages.append((changed, tau))
    h = _history(pages)
    got = final_estimates(h, "mm")
    m = max(len(c) for c, _ in pages)
    changed = np.zeros((len(pages), m))
    tau = np.ones((len(pages), m))
    inside = np.zeros((len(pages), m), dtype=bool)
    for i, (c, t) in enumerate(pages):
        changed[i, : len(c)], tau[i, : len(t)], inside[i, : len(c)] = c, t, True
    expect = solve_robust(MM_KIND, changed, tau, inside, np.full(len(pages), np.nan))
    np.testing.assert_allclose(got, expect, rtol=1e-12, atol=0)


def test_mm_final_hand_values_and_edges():
    # 1 = 2 e^{−Δ}: Δ = ln 2; no change: 0.0; every crawl changed: inf
    h = CrawlHistory.from_segments(
        [0, 1, 0, 0, 1, 1], [1.0, 1.0, 2.0, 3.0, 1.0, 1.0], lengths=[2, 2, 2], crawl_rate=1.0
    )
    got = final_estimates(h, "mm")
    assert got[0] == pytest.approx(math.log(2.0), rel=1e-14)
    assert got[1] == 0.0 and got[2] == math.inf
