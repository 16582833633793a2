"""Compiled gamma variates and beta-prime ratios for the conjugate posterior (numba).

Imported (and compiled, or loaded from numba's on-disk cache: ``cache=True``) on first
use only, by :func:`._conjugate.conjugate_posterior_draws`.

Randomness: NumPy's SFC64 generator (Doty-Humphrey's small fast counting generator,
``numpy.random.SFC64``) written out inline, so a kernel started from the state of
``numpy.random.SFC64(seed)`` reads the very words ``SFC64(seed).random_raw()`` returns.
A uniform on [0, 1) is the top 53 bits of a word times 2^-53 (as NumPy's ``random``).

Normal variates: the ziggurat method of Marsaglia & Tsang (2000, Journal of Statistical
Software 5(8), "The ziggurat method for generating random variables") with 256 layers of
equal area under f(x) = exp(−x²/2): a layer, a sign and a position are read from one
word; a point left of the next layer's edge is under the curve (returned at once, 98.8 %
of draws); a point in a wedge is kept iff a uniform height lies under f, else the whole
draw restarts; the base layer's overhang is the tail x > r, drawn exactly by Marsaglia's
(1964) method (x = −log(U₁)/r kept iff −2 log U₂ > x²). Each layer is a rectangle of
area v covering the curve over its heights, so the point is uniform under f: exact.

Gamma(α) variates: Marsaglia & Tsang (2000, ACM Transactions on Mathematical Software
26(3):363-372, "A simple method for generating gamma variables"): for α ≥ 1, with
d = α − 1/3 and c = 1/√(9d), draw a normal x and a uniform u until v = (1 + c x)³ > 0
and u < 1 − 0.0331 x⁴ (squeeze) or log u < x²/2 + d(1 − v + log v); return d v. For
α < 1 their boost: Gamma(α) = Gamma(α + 1) · U^{1/α}, applied in logarithms so that
a tiny variate is not lost to underflow before the ratio is formed.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np
from scipy import optimize, special

__all__ = [
    "LAYERS",
    "ziggurat_tables",
    "sfc64_state",
    "shape_constants",
    "raw_fill",
    "normal_fill",
    "gamma_fill",
    "ratio_block",
]

_OPTS = dict(cache=True, nogil=True, error_model="numpy")

#: layers of the ziggurat (a power of two: the layer is the low bits of a word)
LAYERS = 256
_U53 = 1.0 / 9007199254740992.0  # 2^-53
_THIRD = 1.0 / 3.0


def _layer_edges(r: float) -> tuple[np.ndarray, float]:
    """Edges x_0 = r > x_1 > ... > x_254 of the layers above the base and their common area v.

    v = r f(r) + ∫_r^∞ f (the base layer with its tail); x_{k+1} = f⁻¹(f(x_k) + v/x_k), so
    the rectangle [0, x_k) × [f(x_k), f(x_{k+1})) has area v (0 once the heights pass 1).
    """
    v = r * math.exp(-0.5 * r * r) + math.sqrt(0.5 * math.pi) * special.erfc(r / math.sqrt(2.0))
    x = np.zeros(LAYERS - 1)
    x[0] = r
    for k in range(1, LAYERS - 1):
        y = math.exp(-0.5 * x[k - 1] ** 2) + v / x[k - 1]
        if y >= 1.0:
            break
        x[k] = math.sqrt(-2.0 * math.log(y))
    return x, v


def _top_gap(r: float) -> float:
    """f(x_254) + v/x_254 − 1: the top of the top layer minus the curve's peak (1)."""
    x, v = _layer_edges(r)
    if x[-1] <= 0.0:
        return 1.0  # the layers passed the peak before the last one: r too small
    return math.exp(-0.5 * x[-1] ** 2) + v / x[-1] - 1.0


def ziggurat_tables() -> tuple[np.ndarray, np.ndarray, float]:
    """The ziggurat: widths ``w`` (LAYERS + 1,), heights ``f`` (LAYERS + 1,) and the tail start r.

    Layer k (0 <= k < LAYERS) is the rectangle [0, w[k]) × [f[k], f[k + 1]) of area v;
    w[k + 1] is its inner edge (the curve lies above the layer left of it). The base
    layer (k = 0) has width v/f(r): the part beyond r stands for the tail. r solves
    f(x_254) + v/x_254 = 1 (the top layer ends at the peak); it is taken on the side
    where the top layer reaches at least the peak, and the top layer's height is
    v/x_254, so the layers cover the curve with equal areas whatever the rounding of r.
    """
    r = optimize.brentq(_top_gap, 3.0, 4.0, xtol=1e-15)
    while _top_gap(r) < 0.0:  # the covering side
        r = math.nextafter(r, 0.0)
    x, v = _layer_edges(r)
    w = np.empty(LAYERS + 1)
    f = np.empty(LAYERS + 1)
    w[0], f[0] = v / math.exp(-0.5 * r * r), 0.0
    w[1:LAYERS] = x
    f[1:LAYERS] = np.exp(-0.5 * x**2)
    w[LAYERS] = 0.0  # no inner part in the top layer
    f[LAYERS] = f[LAYERS - 1] + v / x[-1]  # >= 1
    return w, f, r


#: the ziggurat of the kernels (constants compiled into them)
_W, _F, _R = ziggurat_tables()


@nb.njit(inline="always", **_OPTS)
def _next(s):
    """(next state, word) of the SFC64 state ``s`` = (a, b, c, counter), as NumPy's SFC64.

    The state is a tuple of four uint64 passed by value (kept in registers; no array
    to count references to in the inner loops).
    """
    a, b, c, k = s
    out = a + b + k
    return (
        b ^ (b >> np.uint64(11)),
        c + (c << np.uint64(3)),
        ((c << np.uint64(24)) | (c >> np.uint64(40))) + out,
        k + np.uint64(1),
    ), out


@nb.njit(inline="always", **_OPTS)
def _uniform(s):
    """(state, uniform on [0, 1)): the top 53 bits of a word."""
    s, word = _next(s)
    return s, float(np.int64(word >> np.uint64(11))) * _U53


@nb.njit(inline="always", **_OPTS)
def _uniform_open0(s):
    """(state, uniform on (0, 1]): 1 − a uniform on [0, 1) (safe under log)."""
    s, word = _next(s)
    return s, 1.0 - float(np.int64(word >> np.uint64(11))) * _U53


@nb.njit(**_OPTS)
def _outside(s, k, x):
    """(state, |normal|) given a first point of layer k at x >= 0 beyond its inner edge.

    The tail beyond r for the base layer (Marsaglia 1964); else the wedge test, and on
    rejection new points (layer and position from a word) until one is kept.
    """
    w, f, r = _W, _F, _R
    while True:
        if k == 0:
            while True:
                s, u1 = _uniform_open0(s)
                s, u2 = _uniform_open0(s)
                t = -math.log(u1) / r
                if -2.0 * math.log(u2) > t * t:
                    return s, r + t
        s, u = _uniform(s)
        if f[k] + u * (f[k + 1] - f[k]) < math.exp(-0.5 * x * x):
            return s, x
        s, word = _next(s)
        k = int(word & np.uint64(LAYERS - 1))
        x = float(np.int64(word >> np.uint64(11))) * _U53 * w[k]
        if x < w[k + 1]:
            return s, x


@nb.njit(inline="always", **_OPTS)
def _normal(s):
    """(state, standard normal variate) by the ziggurat.

    The sign is bit 8 of the first word; no decision reads that bit, so it is
    independent of the magnitude (whatever restarts the magnitude needed).
    """
    w = _W
    s, word = _next(s)
    k = int(word & np.uint64(LAYERS - 1))
    x = float(np.int64(word >> np.uint64(11))) * _U53 * w[k]
    if x >= w[k + 1]:
        s, x = _outside(s, k, x)
    return s, x * (1.0 - 2.0 * float((word >> np.uint64(8)) & np.uint64(1)))


@nb.njit(inline="always", **_OPTS)
def _attempt(s, d, c, q):
    """One attempt of :func:`_gamma` with its squeeze: (state, normal x, uniform u, whether
    the squeeze accepts, d v; v = (1 + c x)³ when accepted, else 0)."""
    s, x = _normal(s)
    s, u = _uniform(s)
    t = c * x
    x2 = x * x
    if t > -1.0 and (1.0 - u) * (1.0 + min(t, 0.0)) > q * (x2 * x2):
        return s, x, u, True, d * ((1.0 + t) * (1.0 + t) * (1.0 + t))
    return s, x, u, False, 0.0


@nb.njit(**_OPTS)
def _gamma_rest(s, d, c, q, x, u):
    """(state, Gamma(d + 1/3)) given a first attempt (normal x, uniform u) that the squeeze
    did not accept: its logarithmic test, then new attempts until one is accepted."""
    while True:
        t = c * x
        # log u < x²/2 + d(1 − v + log v) = 3d ρ(t), ρ(t) = log1p(t) − t + t²/2 − t³/3
        # (the x²/2 cancels against d · (−9t²/2) exactly, as d c² = 1/9)
        if t > -1.0 and math.log(u) < 3.0 * d * (math.log1p(t) - t * (1.0 - t * (0.5 - t * _THIRD))):
            return s, d * ((1.0 + t) * (1.0 + t) * (1.0 + t))
        s, x, u, accepted, g = _attempt(s, d, c, q)
        if accepted:
            return s, g


@nb.njit(inline="always", **_OPTS)  # inlined into the loops: 35% less time per draw, measured
def _gamma(s, d, c, q):
    """(state, Gamma(d + 1/3) variate) for d >= 2/3, c = 1/√(9d), q = 1/(108 d).

    Marsaglia & Tsang (2000): an attempt reads a normal x, then a uniform u (also when
    v = (1 + c x)³ <= 0, where it is rejected whatever u: the stream stays aligned and
    the law is the same), and returns d v iff log u < x²/2 + d(1 − v + log v) = 3d ρ(t)
    with t = c x and ρ(t) = log1p(t) − t + t²/2 − t³/3. Squeeze: ρ(t) >= −t⁴/(4(1 + min(t, 0)))
    (alternating series for t >= 0, geometric bound of −Σ_{k>=4}|t|^k/k for t < 0) and
    log u <= u − 1, so (1 − u)(1 + min(t, 0)) > q x⁴ implies acceptance; it decides
    all but ~ x⁴/(108 d) of the attempts (MT's own squeeze, 1 − 0.0331 x⁴, all but
    ~10 %), and the exact test decides the rest: the same accepted set. The first
    attempt's squeeze is here (no loop, inlined into the callers' loops); the rest in
    :func:`_gamma_rest`.
    """
    s, x, u, accepted, g = _attempt(s, d, c, q)
    if accepted:
        return s, g
    return _gamma_rest(s, d, c, q, x, u)


def shape_constants(shape: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(d, c, q, inv) per shape α > 0: Gamma(α) = Gamma(d + 1/3) · U^inv, inv = 1/α if α < 1 else 0;
    c = 1/√(9d) and q = 1/(108 d) (the constants of :func:`_gamma`)."""
    shape = np.asarray(shape, dtype=np.float64)
    boost = shape < 1.0
    d = np.where(boost, shape + 1.0, shape) - _THIRD
    with np.errstate(divide="ignore"):
        inv = np.where(boost, 1.0 / shape, 0.0)
    return d, 1.0 / np.sqrt(9.0 * d), 1.0 / (108.0 * d), inv


def sfc64_state(seed) -> np.ndarray:
    """The state (a, b, c, counter) of ``numpy.random.SFC64(seed)`` as a uint64 array (4,)."""
    return np.array(np.random.SFC64(seed).state["state"]["state"], dtype=np.uint64)


@nb.njit(**_OPTS)
def _load(state):
    return (state[0], state[1], state[2], state[3])


@nb.njit(**_OPTS)
def _store(state, s):
    state[0], state[1], state[2], state[3] = s


@nb.njit(inline="always", **_OPTS)
def _fill(state, out, normal):
    """Fill the 1-d ``out`` from the SFC64 ``state`` (advanced in place): with its standard
    normal variates if ``normal``, else with its raw words."""
    s = _load(state)
    for i in range(out.size):
        if normal:
            s, out[i] = _normal(s)
        else:
            s, out[i] = _next(s)
    _store(state, s)


@nb.njit(**_OPTS)
def raw_fill(state, out):
    """Fill the uint64 ``out`` with the words of the SFC64 ``state`` (advanced in place)."""
    _fill(state, out, False)


@nb.njit(**_OPTS)
def normal_fill(state, out):
    """Fill the 1-d ``out`` with standard normal variates from the SFC64 ``state`` (advanced)."""
    _fill(state, out, True)


@nb.njit(**_OPTS)
def gamma_fill(state, d, c, q, inv, out):
    """Fill ``out`` (n, m) with Gamma(α_j) variates in column j (constants of :func:`shape_constants`).

    Row by row, column by column; a boosted variate (α < 1) is
    exp(log Gamma(α + 1) + inv · log U) with U on (0, 1] drawn right after it.
    """
    s = _load(state)
    n, m = out.shape
    for i in range(n):
        for j in range(m):
            s, g = _gamma(s, d[j], c[j], q[j])
            if inv[j] > 0.0:
                s, u = _uniform_open0(s)
                g = math.exp(math.log(g) + inv[j] * math.log(u))
            out[i, j] = g
    _store(state, s)


@nb.njit(**_OPTS)
def ratio_block(state, da, ca, qa, ia, db, cb, qb, ib, p, log_p, out, lo):
    """out[i, lo + j] = p_j · G_α/G_β for every row i and the block's pages j = 0..m−1.

    Per variate: G_α, then G_β (as :func:`gamma_fill`), then the boost uniforms of α and
    of β (when α < 1, β < 1). Without a boost, p · (G_α/G_β); with one, the ratio is
    formed in logarithms, exp(log p + log G_{α(+1)} − log G_{β(+1)} + inv_α log U_α −
    inv_β log U_β), so that it is lost to underflow only when Δ itself is below the
    smallest double. ``state`` (SFC64, uint64 (4,)) is advanced in place.
    """
    s = _load(state)
    n = out.shape[0]
    m = da.size
    for i in range(n):
        for j in range(m):
            s, ga = _gamma(s, da[j], ca[j], qa[j])
            s, gb = _gamma(s, db[j], cb[j], qb[j])
            if ia[j] == 0.0 and ib[j] == 0.0:
                out[i, lo + j] = p[j] * (ga / gb)
            else:
                e = log_p[j] + math.log(ga) - math.log(gb)
                if ia[j] > 0.0:
                    s, u = _uniform_open0(s)
                    e += ia[j] * math.log(u)
                if ib[j] > 0.0:
                    s, u = _uniform_open0(s)
                    e -= ib[j] * math.log(u)
                out[i, lo + j] = math.exp(e)
    _store(state, s)
