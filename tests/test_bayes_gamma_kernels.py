"""The compiled gamma sampler of the conjugate posterior (bayes._gamma_kernels).

Exact checks: the random words are NumPy's SFC64 stream; the ziggurat has Marsaglia &
Tsang's tail start and 256 layers of equal area covering the curve; the squeeze only
accepts what the exact test accepts. Statistical checks (seeded; tolerances from
theory): KS tests at level 1e-3 and moments within 4 standard errors for the normal,
gamma (shapes on both sides of 1, at 1/3 + tiny and far in the bulk) and beta-prime
variates against scipy.stats.
"""

import math

import numpy as np
import pytest
from scipy import special, stats

from changerate_bayes.bayes import _gamma_kernels as gk

# the tests that compile the grid posterior's and the summary's kernels run in one pytest-xdist
# worker, so that a fresh checkout compiles them once, not once in every worker at the same time
pytestmark = pytest.mark.xdist_group("grid_kernels")


SHAPES = [0.05, 0.5, 1.0, 1.0 / 3.0 + 1e-9, 2.5, 30.0, 1e4]


def test_the_words_are_numpys_sfc64_stream():
    words = np.empty(5000, dtype=np.uint64)
    state = gk.sfc64_state(np.random.SeedSequence(77))
    gk.raw_fill(state, words)
    np.testing.assert_array_equal(words, np.random.SFC64(np.random.SeedSequence(77)).random_raw(5000))
    more = np.empty(10, dtype=np.uint64)
    gk.raw_fill(state, more)  # the state advanced in place: the stream continues
    np.testing.assert_array_equal(more, np.random.SFC64(np.random.SeedSequence(77)).random_raw(5010)[5000:])


def test_ziggurat_layers_have_equal_areas_and_cover_the_curve():
    w, f, r = gk.ziggurat_tables()
    # Marsaglia & Tsang (2000), 256 layers: r = 3.6541528853610088
    assert r == pytest.approx(3.6541528853610088, rel=1e-12)
    v = r * math.exp(-r * r / 2) + math.sqrt(math.pi / 2) * special.erfc(r / math.sqrt(2))
    areas = w[:-1] * np.diff(f)
    np.testing.assert_allclose(areas, v, rtol=1e-12)
    # heights are f at the layers' edges, the top layer reaches the peak, widths shrink
    np.testing.assert_allclose(f[1:-1], np.exp(-(w[1:-1] ** 2) / 2), rtol=1e-15)
    assert f[-1] >= 1.0 and f[-1] - 1.0 < 1e-12
    assert np.all(np.diff(w) < 0) and w[1] == r and w[-1] == 0.0


def test_squeeze_accepts_only_what_the_exact_test_accepts():
    """(1 − u)(1 + min(t, 0)) > x⁴/(108 d) implies log u < x²/2 + d(1 − v + log v)."""
    gen = np.random.default_rng(4)
    n = 10**6
    d = np.exp(gen.uniform(np.log(2 / 3), np.log(1e6), n))
    c = 1 / np.sqrt(9 * d)
    x = gen.normal(0.0, 2.0, n)
    u = gen.random(n)
    t = c * x
    ok = t > -1
    squeeze = ok & ((1 - u) * (1 + np.minimum(t, 0)) > x**4 / (108 * d))
    v = (1 + t[squeeze]) ** 3
    exact = np.log(u[squeeze]) < x[squeeze] ** 2 / 2 + d[squeeze] * (1 - v + np.log(v))
    assert squeeze.mean() > 0.9  # the squeeze decides most attempts (x has sd 2 here)
    assert exact.all()


def _moments_within(draws, mean, var, mu4):
    """Sample mean and variance within 4 standard errors of the theory (μ4: 4th central moment)."""
    n = draws.size
    assert abs(draws.mean() - mean) < 4 * math.sqrt(var / n)
    assert abs(draws.var() - var) < 4 * math.sqrt((mu4 - var**2) / n)


def test_normal_variates():
    z = np.empty(10**6)
    gk.normal_fill(gk.sfc64_state(3), z)
    assert stats.kstest(z, "norm").pvalue > 1e-3
    _moments_within(z, 0.0, 1.0, 3.0)
    # the tail beyond r (drawn by its own method): binomial frequency within 4 SE
    p_tail = 2 * stats.norm.sf(gk._R)
    assert abs((np.abs(z) > gk._R).mean() - p_tail) < 4 * math.sqrt(p_tail / z.size)
    assert (z > 0).mean() == pytest.approx(0.5, abs=4 * 0.5 / math.sqrt(z.size))


@pytest.mark.parametrize("shape", SHAPES)
def test_gamma_variates(shape):
    g = np.empty((200_000, 1))
    gk.gamma_fill(gk.sfc64_state(int(shape * 1000) + 1), *gk.shape_constants(np.array([shape])), g)
    g = g[:, 0]
    assert np.all(g > 0) and np.all(np.isfinite(g))
    assert stats.kstest(g, stats.gamma(shape).cdf).pvalue > 1e-3
    _moments_within(g, shape, shape, 3 * shape**2 + 6 * shape)


def test_gamma_variates_in_columns_of_different_shapes():
    shapes = np.array(SHAPES)
    g = np.empty((50_000, shapes.size))
    gk.gamma_fill(gk.sfc64_state(12), *gk.shape_constants(shapes), g)
    for j, a in enumerate(shapes):
        assert stats.kstest(g[:, j], stats.gamma(a).cdf).pvalue > 1e-3


def _ratio(a, b, p, n, seed):
    m = a.size
    out = np.empty((n, m))
    gk.ratio_block(gk.sfc64_state(seed), *gk.shape_constants(a), *gk.shape_constants(b), p, np.log(p), out, 0)
    return out


def test_beta_prime_ratio_against_scipy():
    a = np.array([0.3, 1.0, 2.5, 30.0, 0.05, 7.0])
    b = np.array([0.7, 2.5, 4.0, 1e4, 3.0, 0.5])
    p = np.array([1.0, 0.5, 3.0, 1e4, 2.0, 1e-3])
    out = _ratio(a, b, p, 100_000, 5)
    for j in range(a.size):
        assert stats.kstest(out[:, j], stats.betaprime(a[j], b[j], scale=p[j]).cdf).pvalue > 1e-3


def test_beta_prime_ratio_of_a_tiny_shape_is_not_lost_to_underflow():
    """α = 0.005, β = 3, p = 1e200: G_α < 1e-308 with probability 3 %, but Δ = p G_α/G_β
    is below the smallest double (rounds to 0) only with probability
    P(X < 2.5e-324/p) = I_y(α, β) ≈ y^α/(α B(α, β)) = 0.24 % (y → 0; scipy's cdf
    underflows there, so the CDF is written out for X < 1e-300)."""
    a, b, p = 0.005, 3.0, 1e200
    out = _ratio(np.array([a]), np.array([b]), np.array([p]), 100_000, 6)[:, 0]
    log_beta = special.betaln(a, b)

    def cdf(delta):
        with np.errstate(divide="ignore"):
            log_x = np.log(delta) - math.log(p)
        tiny = np.exp(a * log_x - log_beta) / a
        x = np.exp(np.maximum(log_x, -700.0))
        return np.where(log_x < -690.0, tiny, special.betainc(a, b, x / (1 + x)))

    p_zero = float(cdf(np.array(2.5e-324)))
    assert 0.002 < p_zero < 0.003
    assert abs((out == 0).mean() - p_zero) < 4 * math.sqrt(p_zero / out.size)
    assert stats.kstest(out, cdf).pvalue > 1e-3
