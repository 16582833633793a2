"""The random-walk kernel of the dynamic filter (``lattice_kernel``) against a 60-digit
reference, and the start order of its Miller recurrence (``miller_start``) against the
error bound it is chosen from.

k(n) = I_n(t) / (I_0(t) + 2 Σ_{m=1..B} I_m(t)) for |n| <= B, B = min(bmax, ⌈6√t⌉ + 3).
The reference runs the same downward recurrence in 60-digit decimal arithmetic from an
order far enough that the truncation bound of ``miller_start``'s docstring (with the factor
min(1, t²/(4n(n+1))) per order) is below 1e-50, and is itself checked against scipy's
``ive``. The float64 kernel's tolerance is its rounding bound: at most 4 roundings per
recurrence step (2/t, n·(2/t), the product, the sum) over N + 1 steps, B + 1 in the
normalising sum, 2 in the reciprocal and the product, plus twice the truncation error δ of
the start N (δ from scipy's I and K, or the bound MILLER_EPS)."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import special

from changerate_bayes.dynamic import _kernels

U = 2.0**-53  # unit roundoff of float64


def _b_full(t):
    return int(math.ceil(_kernels.KERNEL_SDS * math.sqrt(t))) + 3


def _reference_taps(t, b):
    """Normalised I_n(t), n <= b, by the downward recurrence in 60 digits."""
    with localcontext() as ctx:
        ctx.prec = 60
        td = Decimal(t)  # the exact binary value of t
        log_bound, n = 0.0, max(b, 1)
        while log_bound > -50 * math.log(10.0):  # Π min(1, t²/(4n(n+1))) over n >= b
            log_bound += min(0.0, 2.0 * math.log(t) - math.log(4.0 * n * (n + 1.0)))
            n += 1
        y_next, y = Decimal(0), Decimal(1)
        vals = [Decimal(0)] * (b + 1)
        if n <= b:
            vals[n] = y
        for m in range(n, 0, -1):  # decimal exponents do not overflow: no rescaling
            y, y_next = (2 * m / td) * y + y_next, y
            if m - 1 <= b:
                vals[m - 1] = y
        s = vals[0] + 2 * sum(vals[1:], Decimal(0))
        return np.array([float(v / s) for v in vals])


def _truncation_error(t, b, start):
    """δ = (I_{N+1}/I_B)(K_B/K_{N+1}), the relative error bound of Miller's start N at n <= B."""
    return (special.ive(start + 1, t) / special.ive(b, t)) * (special.kve(b, t) / special.kve(start + 1, t))


def _tolerance(t, b, start):
    delta = _truncation_error(t, b, start) if b >= 1 else 0.0
    return U * (4 * (start + 1) + b + 3) + 2.0 * delta / (1.0 - delta)


@pytest.mark.parametrize("t", [1e-6, 0.19, 3.0, 150.0, 4000.0])
def test_reference_equals_scipy_ive(t):
    b = _b_full(t)
    ref = special.ive(np.arange(b + 1), t)
    ref /= ref[0] + 2.0 * ref[1:].sum()
    np.testing.assert_allclose(_reference_taps(t, b), ref, rtol=1e-13, atol=0)


TS = list(np.geomspace(1e-8, 1e4, 25)) + [1e-30, float(np.nextafter(1e-30, 1.0)), 1e-12, 1e-9]


@pytest.mark.parametrize("bmax", [10**6, 199, 5, 1, 0])
@pytest.mark.parametrize("t", TS, ids=lambda t: f"t={t:.3g}")
def test_taps_equal_the_high_precision_reference(t, bmax):
    out = np.full(max(bmax, _b_full(t)) + 2, np.nan)
    b = _kernels.lattice_kernel(t, bmax, out)
    assert b == min(bmax, _b_full(t))  # the half-width, cut at bmax
    start = _kernels.miller_start(t, b, _b_full(t))
    ref = _reference_taps(t, b)
    np.testing.assert_allclose(out[: b + 1], ref, rtol=_tolerance(t, b, start), atol=0)
    assert out[0] + 2.0 * out[1 : b + 1].sum() == pytest.approx(1.0, rel=(b + 3) * U)


@pytest.mark.parametrize("bmax", [10**6, 1, 0])
@pytest.mark.parametrize(
    "t", [1e-31, 1e-60, 1e-100, 1e-147, 1e-160, 1e-200, 1e-300, 5e-324], ids=lambda t: f"t={t:.3g}"
)
def test_taps_at_tiny_times_are_finite_and_equal_the_reference(t, bmax):
    """At t <= SERIES_T the taps are the series' leading terms (t/2)^n/n!, normalised: one
    rounding for t/(2n) and one for the product per order, B + 3 in the normalisation,
    and the neglected terms, below t²/4 relative. Taps in the subnormal range (below
    2^-1022) carry an absolute error of a few of the smallest subnormal instead. The
    recurrence's factors 2n/t would overflow here before its rescaling."""
    out = np.full(max(bmax, _b_full(t)) + 2, np.nan)
    b = _kernels.lattice_kernel(t, bmax, out)
    assert b == min(bmax, _b_full(t))
    k = out[: b + 1]
    assert np.all(np.isfinite(k)) and k[0] == pytest.approx(1.0, rel=(b + 3) * U)
    np.testing.assert_allclose(
        k, _reference_taps(t, b), rtol=U * (3 * b + 3) + t * t / 4.0, atol=(2 * b + 2) * 2.0**-1074
    )


@pytest.mark.parametrize("t", TS, ids=lambda t: f"t={t:.3g}")
def test_miller_start_meets_its_bound(t):
    """Where q = t²/(4B(B+1)) <= 1/2 the start's truncation error δ is at most MILLER_EPS;
    the start is never above the fixed rule B_full + ⌈2√t⌉ + 30, nor below B."""
    for bmax in (10**6, 199, 5, 1):
        b_full = _b_full(t)
        b = min(bmax, b_full)
        start = _kernels.miller_start(t, b, b_full)
        fixed = b_full + int(math.ceil(2.0 * math.sqrt(t))) + 30
        assert b <= start <= fixed
        if t * t / (4.0 * b * (b + 1.0)) <= 0.5:
            assert _truncation_error(t, b, start) <= _kernels.MILLER_EPS
            if start > b:  # the least such start: one order less misses the bound q^m
                q = t * t / (4.0 * b * (b + 1.0))
                assert q ** (start - b) > _kernels.MILLER_EPS
        else:
            assert start == fixed


def test_miller_start_shortens_the_recurrence_at_the_benchmark_scale():
    """σ = 0.03 per √h, τ = 1 h on the 200-node lattice of 1e-4..1e2: t ≈ 0.19, B = 6."""
    h = math.log(1e6) / 199
    t = 0.03**2 * 1.0 / h**2
    b = _b_full(t)
    assert b == 6
    assert _kernels.miller_start(t, b, b) == 10  # q ≈ 2e-4: q^5 <= 1e-18 < q^4 (the fixed rule: 39)


@given(st.floats(-8.0, 4.0), st.integers(0, 700))
def test_kernel_properties(log10_t, bmax):
    """Taps non-negative, decreasing in |n|, summing to one, and equal to the reference."""
    t = 10.0**log10_t
    out = np.empty(701)
    b = _kernels.lattice_kernel(t, bmax, out)
    k = out[: b + 1]
    assert b == min(bmax, _b_full(t))
    assert np.all(k > 0) and np.all(np.diff(k) <= 0)
    assert k[0] + 2.0 * k[1:].sum() == pytest.approx(1.0, rel=(b + 3) * U)
    start = _kernels.miller_start(t, b, _b_full(t))
    np.testing.assert_allclose(k, _reference_taps(t, b), rtol=_tolerance(t, b, start), atol=0)


def test_zero_time_is_the_identity():
    out = np.full(4, np.nan)
    assert _kernels.lattice_kernel(0.0, 199, out) == 0
    assert out[0] == 1.0
