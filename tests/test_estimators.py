"""Tests of the six change-rate estimators (paper eq. 1, 2, 3, 15 and Section 3.4)."""

import math
import warnings
import zlib
from decimal import Context, Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.optimize import brentq

from changerate_bayes import (
    CrawlHistory,
    LLNEstimator,
    MLEEstimator,
    MomentMatchingEstimator,
    NaiveEstimator,
    RegularCrawlEstimator,
    SAEstimator,
    SAMEstimator,
    StatisticalWarning,
    estimate_path,
    simulate_history,
)
from changerate_bayes.estimators import ESTIMATORS, METHODS, StreamingEstimator, _rootpath, _rootsolve
from changerate_bayes.estimators._crawlcheck import dkw_threshold, poisson_distance_segments

# the tests that compile the estimators' kernels run in one pytest-xdist worker, so that a
# fresh checkout compiles them once, not once in every worker at the same time
pytestmark = pytest.mark.xdist_group("estimator_kernels")


# ----------------------------------------------------------------------------- helpers

# Non-default parameters for each method, so the contract test exercises them.
CONTRACT_PARAMS = {
    "naive": [{}],
    "lln": [{}, {"alpha": "log"}, {"alpha": "sqrt"}, {"alpha": lambda k: k**0.9}],
    "sa": [{}, {"eta": 1.0, "initial": 2.0}, {"eta": 0.5}],
    "sam": [{}, {"eta": 1.2, "beta": 0.6}, {"eta": 0.75, "beta": 0.75, "omega": 0.5, "initial": 1.0}],
    "mle": [{}],
    "mm": [{}],
    "regular": [{}],
}


def _rate_before_any_crawl(method, params):
    """What each class documents for ``rate`` at k = 0 (NaN only where undefined)."""
    if method in ("sa", "sam"):
        return params.get("initial", 0.0)  # y_0 / z_0
    if method == "lln":  # p·0/(0 + α_0): 0 for a constant α, 0/0 for "log", "sqrt", undefined for a callable
        return 0.0 if isinstance(params.get("alpha", 1.0), float) else math.nan
    if method == "regular":  # −p log(0.5/0.5)
        return 0.0
    return math.nan  # naive: 0/0; mle, mm: flat likelihood / equation


def _concrete_subclasses(cls):
    out = set()
    for sub in cls.__subclasses__():
        if getattr(sub, "method", ""):
            out.add(sub)
        out |= _concrete_subclasses(sub)
    return out


def _history(shape, seed, delta=2.0, p=3.0, pattern=None, regular=False):
    """A random history (Poisson crawls, or every τ = 1/p if ``regular``); ``pattern``
    forces a prefix ("ones"/"zeros") on every page."""
    gen = np.random.default_rng(seed)
    rate = p if len(shape) == 1 else np.linspace(p, 2 * p, shape[0])
    scale = 1 / np.asarray(rate, dtype=float)
    scale = scale[:, None] if scale.ndim else scale
    tau = np.broadcast_to(scale, shape).copy() if regular else gen.exponential(1.0, size=shape) * scale
    changed = (gen.random(shape) < -np.expm1(-delta * tau)).astype(np.int8)
    if pattern == "ones":
        changed[..., :5] = 1
    elif pattern == "zeros":
        changed[..., :5] = 0
    return CrawlHistory(changed, tau, rate)


def _brentq_root(changed, tau, method):
    """Reference root by scipy's brentq, or the exact limits 0.0 / inf."""
    n1, n0 = changed.sum(), (1 - changed).sum()
    if n1 == 0:
        return 0.0
    if n0 == 0:
        return math.inf
    if method == "mle":

        def g(d):
            return np.sum(changed * tau * np.exp(-d * tau) / -np.expm1(-d * tau)) - np.sum((1 - changed) * tau)
    else:  # split so that no term cancels: Σ_{I=1} e^{-Δτ} = Σ_{I=0} (1 - e^{-Δτ})

        def g(d):
            return np.sum(changed * np.exp(-d * tau)) + np.sum((1 - changed) * np.expm1(-d * tau))

    lo, hi = 1.0, 1.0
    while g(hi) > 0:
        hi *= 2.0
    while g(lo) < 0:
        lo /= 2.0
    return brentq(g, lo, hi, xtol=1e-300, rtol=1e-15, maxiter=500)


# ----------------------------------------------------------------- hand-computed values


def test_naive_hand_values():
    h = CrawlHistory([1, 0, 1, 1], crawl_rate=3.0)
    # w_k = p Î_k / k: 3·1/1, 3·1/2, 3·2/3, 3·3/4
    assert estimate_path(h, "naive").tolist() == [3.0, 1.5, 2.0, 2.25]


def test_lln_hand_values():
    h = CrawlHistory([1, 0, 1, 1], crawl_rate=3.0)
    # x_k = p Î_k/(k + 1 − Î_k): 3/(1+1−1), 3/(2+1−1), 6/(3+1−2), 9/(4+1−3)
    assert estimate_path(h, "lln").tolist() == [3.0, 1.5, 3.0, 4.5]
    one = CrawlHistory([1], crawl_rate=3.0)
    assert estimate_path(one, "lln", alpha="sqrt")[0] == pytest.approx(3.0, rel=1e-15)  # 3/(1+1-1)
    two = CrawlHistory([1, 1], crawl_rate=3.0)
    # k = 2: 3·2/(2 + √2 − 2) = 6/√2 = 3√2
    assert estimate_path(two, "lln", alpha="sqrt")[1] == pytest.approx(3 * math.sqrt(2), rel=1e-15)
    # "log" is α_k = log(k + 1): k = 1 gives 3/(1 + log 2 − 1) = 3/log 2
    assert estimate_path(one, "lln", alpha="log")[0] == pytest.approx(3 / math.log(2), rel=1e-15)
    assert estimate_path(two, "lln", alpha=lambda k: 2.0 * k)[1] == pytest.approx(6 / 4, rel=1e-15)


def test_sa_hand_values():
    h = CrawlHistory([1, 0, 1], crawl_rate=3.0)
    # η = 1: y1 = 0 + 1·(0 + 3) = 3; y2 = 3 + (0 − 3)/2 = 1.5; y3 = 1.5 + (4.5 − 1.5)/3 = 2.5
    assert_allclose(estimate_path(h, "sa", eta=1.0), [3.0, 1.5, 2.5], rtol=1e-15)
    # η = 0.5, y0 = 1: y1 = 1 + (4 − 1) = 4; y2 = 4 + 2^{-1/2}(0 − 4) = 4 − 2√2
    assert_allclose(estimate_path(h, "sa", eta=0.5, initial=1.0)[:2], [4.0, 4 - 2 * math.sqrt(2)], rtol=1e-15)


def test_sam_hand_values():
    h = CrawlHistory([1, 1, 0], crawl_rate=3.0)
    # η = β = 1, ω = 0.5: z1 = 3 (ζ0 = 0); ζ1 = (1/2 − 0.5/2)/1 = 1/4, z2 = 3 + (6 − 3)/2 + 3/4 = 5.25;
    # ζ2 = (1/3 − 0.5/3)/(1/2) = 1/3, z3 = 5.25 + (0 − 5.25)/3 + (5.25 − 3)/3 = 4.25
    assert_allclose(estimate_path(h, "sam", eta=1.0, beta=1.0, omega=0.5), [3.0, 5.25, 4.25], rtol=1e-15)


def test_mle_hand_values():
    # [1, 0], τ = [0.4, 0.2]: 0.4/(e^{0.4Δ} − 1) = 0.2, so Δ = log(3)/0.4
    h = CrawlHistory([1, 0], intervals=[0.4, 0.2])
    assert estimate_path(h, "mle").tolist()[0] == math.inf
    assert estimate_path(h, "mle")[1] == pytest.approx(math.log(3) / 0.4, rel=1e-13)
    # [1, 1, 0], τ = 1: 2/(e^Δ − 1) = 1, so Δ = log 3
    h = CrawlHistory([1, 1, 0], intervals=[1.0, 1.0, 1.0])
    assert estimate_path(h, "mle")[2] == pytest.approx(math.log(3), rel=1e-13)
    h = CrawlHistory([0, 0, 1], intervals=[1.0, 2.0, 1.0])  # e^Δ − 1 = 1/3
    assert estimate_path(h, "mle").tolist()[:2] == [0.0, 0.0]
    assert estimate_path(h, "mle")[2] == pytest.approx(math.log(4 / 3), rel=1e-13)


def test_regular_hand_values():
    h = CrawlHistory([1, 0, 1, 1], crawl_rate=2.0)
    # −p log((k − Î + 0.5)/(k + 0.5)): −2 log(0.5/1.5), −2 log(1.5/2.5), −2 log(1.5/3.5), −2 log(1.5/4.5)
    ref = [2 * math.log(3), 2 * math.log(5 / 3), 2 * math.log(7 / 3), 2 * math.log(3)]
    assert_allclose(estimate_path(h, "regular"), ref, rtol=1e-15)
    assert estimate_path(CrawlHistory([0, 0], crawl_rate=2.0), "regular").tolist() == [0.0, 0.0]
    # every crawl changed: finite, p log(2k + 1)
    assert_allclose(estimate_path(CrawlHistory([1, 1, 1], crawl_rate=2.0), "regular"), 2 * np.log([3, 5, 7]))


def test_mm_hand_values():
    # [0, 1], τ = 1: 1 = 2 e^{−Δ}, Δ = log 2; [1, 0, 0]: 2 = 3 e^{−Δ}, Δ = log 1.5
    h = CrawlHistory([0, 1], intervals=[1.0, 1.0])
    assert estimate_path(h, "mm")[0] == 0.0
    assert estimate_path(h, "mm")[1] == pytest.approx(math.log(2), rel=1e-13)
    h = CrawlHistory([1, 0, 0], intervals=[1.0, 1.0, 1.0])
    assert estimate_path(h, "mm").tolist()[0] == math.inf
    assert estimate_path(h, "mm")[2] == pytest.approx(math.log(1.5), rel=1e-13)


# ------------------------------------------------------------- the formulas, every step


@pytest.mark.parametrize("seed", [0, 1])
def test_recursions_follow_the_paper_at_every_step(seed):
    h = _history((300,), seed)
    changed, p, k = h.changed.astype(float), h.crawl_rate, h.n_crawls
    ones = np.cumsum(changed)
    kk = np.arange(1, k + 1)
    assert_allclose(estimate_path(h, "naive"), p * ones / kk, rtol=1e-14)
    for alpha, seq in ((2.5, np.full(k, 2.5)), ("log", np.log(kk + 1.0)), ("sqrt", np.sqrt(kk))):
        assert_allclose(estimate_path(h, "lln", alpha=alpha), p * ones / (kk + seq - ones), rtol=1e-14)
    # eq. 2, literally
    y, ys = 0.7, []
    for j in range(k):
        y = y + (j + 1) ** -0.6 * (changed[j] * (y + p) - y)
        ys.append(y)
    assert_allclose(estimate_path(h, "sa", eta=0.6, initial=0.7), ys, rtol=1e-12)
    # eq. 3 with eq. 10, literally
    eta, beta, omega = 0.8, 0.55, 1.3
    z_prev = z = 0.2
    zs = []
    for j in range(k):
        zeta = 0.0 if j == 0 else ((j + 1) ** -beta - omega * (j + 1) ** -eta) / j**-beta
        z, z_prev = z + (j + 1) ** -eta * (changed[j] * (z + p) - z) + zeta * (z - z_prev), z
        zs.append(z)
    assert_allclose(estimate_path(h, "sam", eta=eta, beta=beta, omega=omega, initial=0.2), zs, rtol=1e-12)


@pytest.mark.parametrize("method", ["mle", "mm"])
@pytest.mark.parametrize("pattern", [None, "ones", "zeros"])
@pytest.mark.parametrize("rates", [(2.0, 3.0), (300.0, 3.0), (0.05, 3.0)])
def test_roots_match_brentq_at_every_step(method, pattern, rates):
    h = _history(
        (120,), seed=zlib.crc32(repr((method, pattern, rates)).encode()), delta=rates[0], p=rates[1], pattern=pattern
    )
    path = estimate_path(h, method)
    changed, tau = h.changed.astype(float), h.intervals
    ref = np.array([_brentq_root(changed[: j + 1], tau[: j + 1], method) for j in range(h.n_crawls)])
    special = ~np.isfinite(ref) | (ref == 0)
    # the limits are exact: inf while every crawl saw a change, 0.0 while none did
    assert path[special].tolist() == ref[special].tolist()
    assert_allclose(path[~special], ref[~special], rtol=1e-12)
    if pattern == "ones":
        assert np.isinf(path[:5]).all()
    if pattern == "zeros":
        assert (path[:5] == 0.0).all()


@pytest.mark.parametrize("method", ["mle", "mm"])
def test_roots_all_changed_and_none_changed(method):
    assert np.isinf(estimate_path(CrawlHistory(np.ones(50), np.full(50, 0.3)), method)).all()
    assert (estimate_path(CrawlHistory(np.zeros(50), np.full(50, 0.3)), method) == 0.0).all()


@pytest.mark.parametrize("method", ["mle", "mm"])
def test_roots_long_path_match_brentq_at_checkpoints(method):
    # the Taylor tracking across many re-anchors stays exact (here k = 3000)
    h = simulate_history(5.0, 3.0, 3000, rng=3)
    path = estimate_path(h, method)
    changed, tau = h.changed.astype(float), h.intervals
    for j in (99, 499, 1499, 2999):
        assert path[j] == pytest.approx(_brentq_root(changed[: j + 1], tau[: j + 1], method), rel=1e-12)


# ------------------------------------------------------------------- contract (all classes)


def test_every_streaming_class_is_registered():
    assert set(ESTIMATORS) == set(METHODS)
    assert {cls for cls in _concrete_subclasses(StreamingEstimator)} == set(ESTIMATORS.values())


def _cases():
    for method, cls in sorted(ESTIMATORS.items()):
        for i, params in enumerate(CONTRACT_PARAMS[method]):
            for shape in ((60,), (4, 60)):
                yield pytest.param(cls, params, shape, id=f"{cls.__name__}-{i}-{len(shape)}d")


@pytest.mark.parametrize(("cls", "params", "shape"), list(_cases()))
def test_streaming_rate_equals_path_after_every_update(cls, params, shape):
    h = _history(shape, seed=11, pattern="ones", regular=cls.method == "regular")
    path = estimate_path(h, cls.method, **params)
    n_pages = None if len(shape) == 1 else shape[0]
    est = cls(crawl_rate=h.crawl_rate, n_pages=n_pages, **params)
    rate0 = est.rate
    assert np.shape(rate0) == (() if n_pages is None else (n_pages,))
    assert_allclose(rate0, _rate_before_any_crawl(cls.method, params), rtol=0, atol=0)
    for j in range(h.n_crawls):
        assert est.update(h.changed[..., j], interval=h.intervals[..., j]) is None
        rate = est.rate
        if n_pages is None:
            assert isinstance(rate, float)
        else:
            assert rate.shape == (n_pages,)
        assert_allclose(rate, path[..., j], rtol=1e-12, atol=0)
    assert est.n_crawls_ == h.n_crawls


def test_pages_are_independent():
    for method in METHODS:
        h = _history((5, 80), seed=4, regular=method == "regular")
        path = estimate_path(h, method)
        for i in range(5):
            assert_allclose(path[i], estimate_path(h.page(i), method), rtol=1e-12)


# --------------------------------------------------------------------------- merge


@pytest.mark.parametrize(
    "cls", [NaiveEstimator, LLNEstimator, MLEEstimator, MomentMatchingEstimator, RegularCrawlEstimator]
)
def test_merge_equals_one_estimator_over_all_crawls(cls):
    h = _history((3, 40), seed=5)
    a, b, whole = (cls(crawl_rate=h.crawl_rate, n_pages=3) for _ in range(3))
    for j in range(40):
        (a if j < 15 else b).update(h.changed[:, j], h.intervals[:, j])
        whole.update(h.changed[:, j], h.intervals[:, j])
    merged = a.merge(b)
    assert merged.n_crawls_ == 40
    assert_allclose(merged.rate, whole.rate, rtol=1e-12)
    with pytest.raises(ValueError, match="n_pages"):
        a.merge(cls(crawl_rate=h.crawl_rate[0], n_pages=None))
    with pytest.raises(TypeError, match="merge"):
        a.merge(SAEstimator(crawl_rate=1.0))


def test_merge_refuses_different_alpha():
    with pytest.raises(ValueError, match="parameters differ"):
        LLNEstimator(crawl_rate=1.0, alpha=1.0).merge(LLNEstimator(crawl_rate=1.0, alpha="log"))


# ---------------------------------------------------------------- SAM race to infinity


def test_sam_race_to_infinity_is_reported_without_overflow_warnings():
    h = simulate_history(5.0, 3.0, 3000, rng=1)
    with pytest.warns(StatisticalWarning, match="race to infinity"):
        path = estimate_path(h, "sam", eta=0.4, beta=0.6)  # pytest turns RuntimeWarnings into errors
    assert np.isinf(path[-1])
    first = int(np.argmax(~np.isfinite(path)))
    assert np.isinf(path[first:]).all() and np.isfinite(path[:first]).all()
    assert (np.sign(path[first:]) == np.sign(path[first])).all()
    est = SAMEstimator(crawl_rate=3.0, eta=0.4, beta=0.6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for j in range(h.n_crawls):
            est.update(h.changed[j])
    assert sum(issubclass(w.category, StatisticalWarning) for w in caught) == 1
    assert not any(issubclass(w.category, RuntimeWarning) for w in caught)
    assert est.diverged_ and est.rate == path[-1]


def test_sam_valid_regime_converges():
    h = simulate_history(5.0, 3.0, 20000, rng=2)
    assert estimate_path(h, "sam")[-1] == pytest.approx(5.0, rel=0.15)


# ------------------------------------------------------------------- property tests

_crawls = st.lists(
    st.tuples(st.integers(0, 1), st.floats(1e-3, 10.0, allow_nan=False, allow_infinity=False)),
    min_size=1,
    max_size=40,
)


@given(_crawls)
def test_mle_mm_solve_their_equations(crawls):
    changed = np.array([c for c, _ in crawls], dtype=float)
    tau = np.array([t for _, t in crawls])
    h = CrawlHistory(changed, tau)
    for method in ("mle", "mm"):
        path = estimate_path(h, method)
        ref = np.array([_brentq_root(changed[: j + 1], tau[: j + 1], method) for j in range(len(crawls))])
        special = ~np.isfinite(ref) | (ref == 0)
        assert path[special].tolist() == ref[special].tolist()
        assert_allclose(path[~special], ref[~special], rtol=1e-10)
        # a change seen never lowers the MLE/MM, no change never raises it
        fin = np.isfinite(path[1:]) & np.isfinite(path[:-1])
        step = np.where(fin, np.diff(np.where(np.isfinite(path), path, 0.0)), 0.0)
        assert (step[fin & (changed[1:] == 1)] >= -1e-12 * path[1:][fin & (changed[1:] == 1)]).all()
        assert (step[fin & (changed[1:] == 0)] <= 1e-12 * path[1:][fin & (changed[1:] == 0)]).all()


@given(
    st.lists(st.integers(0, 1), min_size=1, max_size=60),
    st.floats(0.1, 100.0),
    st.floats(0.05, 1.0),
    st.floats(0.0, 50.0),
)
def test_naive_lln_sa_bounds(changed, p, eta, initial):
    h = CrawlHistory(changed, crawl_rate=p)
    naive = estimate_path(h, "naive")
    assert ((naive >= 0) & (naive <= p * (1 + 1e-15))).all()
    lln = estimate_path(h, "lln")
    assert (lln >= naive - 1e-12 * p).all()  # the LLN corrects the Naive estimate upwards
    sa = estimate_path(h, "sa", eta=eta, initial=initial)
    bound = initial + p * np.cumsum(np.arange(1, len(changed) + 1) ** -eta)
    assert ((sa >= 0) & (sa <= bound * (1 + 1e-12))).all()


@given(st.lists(st.integers(0, 1), min_size=2, max_size=60), st.integers(1, 59))
def test_lln_merge_any_split(changed, split):
    split = min(split, len(changed) - 1)
    a, b, whole = (LLNEstimator(crawl_rate=2.0, alpha="sqrt") for _ in range(3))
    for j, c in enumerate(changed):
        (a if j < split else b).update(c)
        whole.update(c)
    assert a.merge(b).rate == pytest.approx(whole.rate, rel=1e-14)


# ------------------------------------------------------------------------ bad input


def test_bad_history_values_are_refused():
    with pytest.raises(ValueError, match="`changed` must be 0 or 1"):
        CrawlHistory([0, 2, 1], crawl_rate=1.0)
    for bad in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="`intervals`"):
            CrawlHistory([0, 1], intervals=[1.0, bad])
    with pytest.raises(ValueError, match="same shape"):
        CrawlHistory([0, 1], intervals=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="`crawl_rate`"):
        CrawlHistory([0, 1], crawl_rate=0.0)


def test_estimate_path_bad_arguments():
    h = CrawlHistory([1, 0, 1], intervals=[1.0, 1.0, 1.0], crawl_rate=2.0)
    with pytest.raises(TypeError, match="`history` must be a CrawlHistory"):
        estimate_path([1, 0, 1], "naive")
    with pytest.raises(ValueError, match="`method` must be one of"):
        estimate_path(h, "median")
    with pytest.raises(TypeError, match="does not take parameter"):
        estimate_path(h, "sa", beta=0.6)
    with pytest.raises(TypeError, match="does not take parameter"):
        estimate_path(h, "mle", alpha=1.0)
    for alpha in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="`alpha` must be a finite number > 0"):
            estimate_path(h, "lln", alpha=alpha)
    with pytest.raises(ValueError, match="`alpha` must be a float > 0, one of"):
        estimate_path(h, "lln", alpha="cube")
    with pytest.raises(TypeError, match="`alpha`"):
        estimate_path(h, "lln", alpha=[1.0])
    with pytest.raises(ValueError, match=r"`alpha\(k\)` must be finite and > 0; got 0.0 at k=1"):
        estimate_path(h, "lln", alpha=lambda k: k - 1.0)
    with pytest.raises(ValueError, match=r"`alpha\(k\)` must return an array broadcastable"):
        estimate_path(h, "lln", alpha=lambda k: np.ones(7))
    for eta in (0.0, -0.5, 1.5, np.nan):
        with pytest.raises(ValueError, match="`eta` must be"):
            estimate_path(h, "sa", eta=eta)
    with pytest.raises(TypeError, match="`eta` must be a real number"):
        estimate_path(h, "sa", eta="0.75")
    with pytest.raises(ValueError, match="`initial` must be finite"):
        estimate_path(h, "sa", initial=np.nan)
    for name in ("eta", "beta", "omega"):
        for bad in (0.0, -1.0, np.inf):
            with pytest.raises(ValueError, match=f"`{name}` must be a finite number > 0"):
                estimate_path(h, "sam", **{name: bad})


def test_missing_intervals_and_crawl_rate():
    no_tau = CrawlHistory([1, 0], crawl_rate=2.0)
    for method in ("mle", "mm"):
        with pytest.raises(ValueError, match=f"method '{method}' needs the crawl intervals"):
            estimate_path(no_tau, method)
    no_p = CrawlHistory([1, 0], intervals=[1.0, 1.0])
    for method in ("naive", "lln", "sa", "sam", "regular"):
        with pytest.raises(ValueError, match=f"method '{method}' needs the crawl rate"):
            estimate_path(no_p, method)
    with pytest.raises(TypeError, match="method 'regular' does not take parameter"):
        estimate_path(CrawlHistory([1, 0], crawl_rate=2.0), "regular", alpha=1.0)
    for cls in (NaiveEstimator, LLNEstimator, SAEstimator, SAMEstimator, RegularCrawlEstimator):
        with pytest.raises(ValueError, match="needs the crawl rate"):
            cls()


def test_streaming_bad_input():
    est = NaiveEstimator(crawl_rate=2.0)
    with pytest.raises(ValueError, match="`changed` must be 0 or 1; got 2"):
        est.update(2)
    with pytest.raises(ValueError, match=r"`changed` must have shape \(\)"):
        est.update([1, 0])
    with pytest.raises(TypeError, match="`changed`"):
        est.update("1")
    for bad in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="`interval` must be"):
            est.update(1, interval=bad)
    pages = SAEstimator(crawl_rate=[1.0, 2.0, 3.0], n_pages=3)
    with pytest.raises(ValueError, match=r"`changed` must have shape \(3,\)"):
        pages.update([1, 0])
    with pytest.raises(ValueError, match="`changed` must be 0 or 1; got 3 at index 1"):
        pages.update([1, 3, 0])
    with pytest.raises(ValueError, match=r"`interval` must have shape \(3,\)"):
        pages.update([1, 0, 1], interval=[1.0, 1.0])
    with pytest.raises(ValueError, match="method 'mle' needs the crawl interval"):
        MLEEstimator().update(1)
    with pytest.raises(ValueError, match="`crawl_rate` must be a finite number > 0"):
        NaiveEstimator(crawl_rate=0.0)
    with pytest.raises(ValueError, match=r"`crawl_rate` must be a scalar or have shape \(n_pages,\)"):
        NaiveEstimator(crawl_rate=[1.0, 2.0], n_pages=3)
    with pytest.raises(ValueError, match="`n_pages` must be >= 1"):
        NaiveEstimator(crawl_rate=1.0, n_pages=0)
    with pytest.raises(ValueError, match="`eta` must be in"):
        SAEstimator(crawl_rate=1.0, eta=2.0)
    with pytest.raises(ValueError, match="`beta` must be a finite number > 0"):
        SAMEstimator(crawl_rate=1.0, beta=0.0)
    # state is untouched by a refused update
    assert est.n_crawls_ == 0


def test_mle_root_at_the_rounding_noise_floor():
    # Regression: crawls of the Hacker News trace (Poisson crawls at twice its rate, 2000
    # crawls) on which the exact solver used to cycle between ±1 ulp of F at the root and
    # raise "did not converge". Reference roots from scipy.optimize.brentq.
    from pathlib import Path

    data = np.load(Path(__file__).parent / "data" / "mle_noise_floor.npz")
    ch, tau = data["changed"], data["intervals"]
    path = estimate_path(CrawlHistory(ch, tau), "mle")
    for k in (50, 500, 1000, 1994, 2000):
        c, t = ch[:k].astype(float), tau[:k]

        def score(d):
            with np.errstate(over="ignore"):
                return np.sum(c * t / np.expm1(d * t)) - np.sum((1 - c) * t)

        ref = brentq(score, 1e-9, 1e3, xtol=1e-300)
        assert abs(path[k - 1] - ref) <= 1e-12 * ref


# ---------------------------------------------------------------- the crawling model


@pytest.mark.parametrize("method", ["naive", "lln", "sa", "sam"])
def test_poisson_crawl_methods_warn_on_a_fixed_schedule(method):
    # every τ = 1/p: E[I] = 1 − e^{−Δ/p}, not Δ/(Δ + p), and LLN tends to p(e^{Δ/p} − 1) = 12.9
    h = simulate_history(5.0, 3.0, 2000, crawl="regular", rng=1)
    with pytest.warns(StatisticalWarning, match="assumes Poisson crawling") as record:
        estimate_path(h, method)
    (w,) = [w for w in record if issubclass(w.category, StatisticalWarning)]
    text = str(w.message)
    assert "exponential with mean 1/p" in text and "eq. 4" in text
    assert "'mle' or 'mm'" in text and "'regular'" in text  # the alternatives
    assert "coefficient of variation 0.000" in text
    assert w.filename == __file__  # stacklevel: the warning points at the caller


def test_poisson_crawls_are_not_flagged_and_a_wrong_rate_is():
    h = simulate_history(5.0, 3.0, 400, n_pages=200, rng=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StatisticalWarning)
        for method in ("naive", "lln", "sa", "sam"):
            estimate_path(h, method)
        estimate_path(CrawlHistory(h.changed, crawl_rate=3.0), "lln")  # no intervals: nothing to check
    # intervals of a crawl at rate 2 declared as p = 3: mean p·τ = 1.5
    wrong = CrawlHistory(h.changed, h.intervals * 1.5, crawl_rate=3.0)
    with pytest.warns(StatisticalWarning, match=r"mean p·τ = 1\.49"):
        estimate_path(wrong, "lln")


def test_poisson_check_false_alarm_rate_is_bounded_by_dkw():
    # The check flags when the distance exceeds dkw_threshold(alpha, n), which a Poisson
    # sample exceeds with probability <= alpha (DKW-Massart); the binned distance is at
    # most the KS distance. At alpha = 0.05 (so that it can be measured) the share of
    # 4000 Poisson pages of 40 crawls above it must not exceed 0.05 by more than 3
    # binomial standard errors (0.0103).
    gen = np.random.default_rng(2024)
    per_page, pooled = poisson_distance_segments(
        CrawlHistory(np.zeros((4000, 40)), gen.exponential(size=(4000, 40)), crawl_rate=1.0)
    )
    share = float((per_page > dkw_threshold(0.05, 40)).mean())
    assert share <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 4000)
    assert pooled <= dkw_threshold(0.05, 4000 * 40)
    # a fixed schedule is at distance 1 − e^{−1} (up to the 1/64 binning)
    per_page, _ = poisson_distance_segments(CrawlHistory(np.zeros((1, 30)), np.ones((1, 30)), crawl_rate=1.0))
    assert per_page[0] == pytest.approx(1 - math.exp(-1), abs=1 / 64)


def test_regular_estimator_on_regular_and_poisson_crawls():
    # With every τ = 1/p, Δ̂ → Δ; the delta method gives sd(Δ̂) = p √((1 − q)/(q k)),
    # q = e^{−Δ/p}: 0.044 at k = 20000 (tolerance 4 sd).
    h = simulate_history(5.0, 3.0, 20000, crawl="regular", rng=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StatisticalWarning)
        est = estimate_path(h, "regular")[-1]
    q = math.exp(-5 / 3)
    assert abs(est - 5.0) <= 4 * 3 * math.sqrt((1 - q) / (q * 20000))
    poisson = simulate_history(5.0, 3.0, 2000, rng=3)
    with pytest.warns(StatisticalWarning, match="method 'regular' assumes crawls on a fixed schedule"):
        estimate_path(poisson, "regular")


def test_rate_before_any_crawl():
    assert SAEstimator(crawl_rate=2.0, initial=1.5).rate == 1.5  # y_0, as documented
    assert SAMEstimator(crawl_rate=2.0, initial=1.5).rate == 1.5
    assert SAEstimator(crawl_rate=[1.0, 2.0], initial=0.5, n_pages=2).rate.tolist() == [0.5, 0.5]
    assert LLNEstimator(crawl_rate=2.0).rate == 0.0  # p·0/(0 + α)
    assert math.isnan(LLNEstimator(crawl_rate=2.0, alpha="log").rate)  # 0/0
    assert RegularCrawlEstimator(crawl_rate=2.0).rate == 0.0
    for est in (NaiveEstimator(crawl_rate=2.0), MLEEstimator(), MomentMatchingEstimator()):
        assert math.isnan(est.rate)


# ------------------------------------------------------------ the three root regimes


@pytest.mark.parametrize("method", ["mle", "mm"])
def test_roots_do_not_depend_on_page_chunks(method, monkeypatch):
    # 200 crawls: the exact first crawls, the hand-over and the Taylor tracking. Bit for bit:
    # the Monte Carlo engine relies on it (serial = chunked = parallel).
    h = _history((7, 200), seed=8)
    ref = estimate_path(h, method)
    monkeypatch.setattr(_rootpath, "PAGE_CHUNK", 3)
    monkeypatch.setattr(_rootpath, "REANCHOR_ELEMENTS", 300)  # re-anchors one or two pages at a time
    monkeypatch.setattr(_rootsolve, "ROW_BLOCK", 2)
    assert np.array_equal(estimate_path(h, method), ref)


@pytest.mark.parametrize("method", ["mle", "mm"])
def test_streaming_roots_across_the_hand_over(method):
    h = _history((3, 300), seed=9)
    path = estimate_path(h, method)
    est = ESTIMATORS[method](n_pages=3)
    for j in range(300):
        est.update(h.changed[:, j], interval=h.intervals[:, j])
        assert_allclose(est.rate, path[:, j], rtol=1e-12)


@pytest.mark.parametrize("method", ["mle", "mm"])
def test_robust_regime_agrees_with_the_fast_regimes(method):
    # The root scales as 1/s when every interval is multiplied by s. With s = 2^-700 the
    # intervals leave the fast regimes' range, so every prefix is solved in log space.
    h = _history((250,), seed=10)
    fast = estimate_path(h, method)
    tiny = estimate_path(CrawlHistory(h.changed, np.ldexp(h.intervals, -700)), method)
    special = ~np.isfinite(fast) | (fast == 0)
    assert np.array_equal(tiny[special], fast[special])
    assert_allclose(np.ldexp(tiny[~special], -700), fast[~special], rtol=2e-13)


def _decimal_sides(method, changed, tau, delta):
    """The two sides of the equation in 40-digit decimal arithmetic, written without cancellation.

    MLE: Σ_{I=1} τ/(e^{Δτ} − 1) and Σ_{I=0} τ. MM: Σ_j e^{−x_j} = n0 with every term kept
    below 1/2: Σ_{x >= ln 2} e^{−x} + (m − n0) = Σ_{x < ln 2} (1 − e^{−x}), m = #{x < ln 2}
    (1 − e^{−x} from its series for tiny x), so the tiny deviations of terms from 1 survive.
    """
    left = right = Decimal(0)
    half = Decimal(2).ln()
    count = -int(len(changed) - np.sum(changed))  # m − n0, added once, exactly
    for c, t in zip(changed, tau):
        t = Decimal(float(t))
        x = delta * t
        if method == "mle":
            if c:
                em1 = x + x * x / 2 + x * x * x / 6 if x < Decimal("1e-15") else x.exp() - 1
                left += t / em1
            else:
                right += t
        elif x < half:
            right += x - x * x / 2 + x * x * x / 6 if x < Decimal("1e-15") else 1 - (-x).exp()
            count += 1
        else:
            left += (-x).exp()
    if method == "mm":
        left, right = (left + count, right) if count >= 0 else (left, right - count)
    return left, right


_DEC = Context(prec=40, Emin=-(10**15), Emax=10**15, traps=[])


@settings(max_examples=30)
@given(st.lists(st.tuples(st.integers(0, 1), st.floats(-300.0, 300.0)), min_size=2, max_size=10))
def test_roots_for_intervals_from_1e_minus_300_to_1e300(crawls):
    # No RuntimeWarning (pytest turns those of changerate_bayes into errors), no NaN, and
    # every root bracketed in 40-digit arithmetic: the equation changes sign between
    # Δ̂(1 − δ) and Δ̂(1 + δ), δ = 64 ulp of log Δ̂ (log Δ is resolved to a few ulp). The
    # final root also agrees with scipy's brentq in s = log Δ on the decimal equation.
    changed = np.array([c for c, _ in crawls], dtype=float)
    tau = 10.0 ** np.array([e for _, e in crawls])
    h = CrawlHistory(changed, tau)
    with localcontext(_DEC):
        for method in ("mle", "mm"):
            path = estimate_path(h, method)
            assert not np.isnan(path).any()
            for j in range(len(crawls)):
                c, t = changed[: j + 1], tau[: j + 1]
                if c.sum() == 0 or c.sum() == j + 1:
                    assert path[j] == (0.0 if c.sum() == 0 else math.inf)
                    continue
                root = Decimal(float(path[j]))
                assert 0 < path[j] < math.inf
                d = Decimal(64 * np.finfo(float).eps * max(1.0, abs(math.log(path[j]))))
                lo_left, lo_right = _decimal_sides(method, c, t, root * (1 - d))
                hi_left, hi_right = _decimal_sides(method, c, t, root * (1 + d))
                assert lo_left > lo_right and hi_left < hi_right, (method, j)
            if 0 < changed.sum() < len(crawls):

                def g(s):
                    left, right = _decimal_sides(method, changed, tau, Decimal(s).exp())
                    return float((left - right) / (left + right))

                s_ref = brentq(g, -800.0, 800.0, xtol=1e-13, rtol=4 * np.finfo(float).eps, maxiter=300)
                assert math.log(path[-1]) == pytest.approx(s_ref, abs=1e-12, rel=0)
