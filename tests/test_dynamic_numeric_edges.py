"""The dynamic filter at the edges of float64: huge intervals and volatilities, kernels
wider than the lattice, priors a default lattice cannot hold, ragged histories.

Calls that used to crash the interpreter (segfault) or never return run in a
subprocess with a generous timeout, so that such a fault fails the test instead of
killing pytest. Their answers are the limits derived in each test's docstring.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from decimal import Decimal, localcontext

import numpy as np
import pytest
from _helpers import TWO_PAGE_LOG, write_log

from changerate_bayes import CrawlHistory, DynamicRateFilter, GammaPrior, dynamic_posterior, posterior_mean_path
from changerate_bayes.dynamic import _kernels
from changerate_bayes.io import read_log

# the tests that compile the dynamic filter's kernels run in one pytest-xdist worker, so that a
# fresh checkout compiles them once, not once in every worker at the same time (conftest.py)
pytestmark = pytest.mark.xdist_group("dynamic_kernels")

#: seconds a subprocess may take (compiling the kernels on a cold cache included)
SUBPROCESS_TIMEOUT = 240
GRID = np.geomspace(1e-4, 1e2, 50)


#: the code each subprocess test runs (it sets ``result``, a dict of JSON values), by test
SNIPPETS: dict[str, str] = {}

#: runs every snippet in one fresh interpreter, each in its own namespace; a snippet that
#: raises gives its traceback (its test fails), a crash or hang fails every test
_RUNNER = """
import json, sys, traceback
out = {}
for name, code in json.loads(sys.stdin.read()).items():
    namespace = {}
    try:
        exec(code, namespace)
        out[name] = {"result": namespace["result"]}
    except Exception:
        out[name] = {"error": traceback.format_exc()}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def _subprocess_results() -> dict:
    """Every snippet of ``SNIPPETS`` run in one fresh interpreter (one start-up and one import
    of the package for all of them)."""
    code = {name: textwrap.dedent(snippet) for name, snippet in SNIPPETS.items()}
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps(code),
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert proc.returncode == 0, f"exit status {proc.returncode}:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _run(results: dict, name: str) -> dict:
    """The ``result`` of snippet ``name`` in the fresh interpreter."""
    got = results[name]
    assert "error" not in got, got.get("error")
    return got["result"]


def _uniform_mean(rates):
    return float(np.mean(rates))


# ------------------------------------------------------------------ the kernel's taps


def _decimal_taps(t: float, b: int) -> np.ndarray:
    """Normalised e^{−t} I_n(t), n <= b, from the recurrence I_{n−1} = (2n/t) I_n + I_{n+1}
    that defines the ratios of the modified Bessel functions, run downward in 50 digits
    from an order N = b + ⌈10√t⌉ + 60 (I_N/I_b below e^{−50}: far past the kernel's
    spread √t), where starting from (1, 0) costs nothing visible."""
    with localcontext() as ctx:
        ctx.prec = 50
        td = Decimal(t)
        n0 = b + int(math.ceil(10.0 * math.sqrt(t))) + 60
        y_next, y = Decimal(0), Decimal(1)
        vals = [Decimal(0)] * (b + 1)
        for m in range(n0, 0, -1):
            y, y_next = (2 * m / td) * y + y_next, y
            if m - 1 <= b:
                vals[m - 1] = y
        s = vals[0] + 2 * sum(vals[1:], Decimal(0))
        return np.array([float(v / s) for v in vals])


def _asymptotic_taps(t: float, b: int) -> np.ndarray:
    """For t >= 1e10 and b < 200: from the first terms of Hankel's expansion
    (Abramowitz & Stegun 9.7.1), I_n(t)/I_0(t) = 1 − n²/(2t) + n⁴/(8t²) + O(n²/t²)
    = e^{−n²/(2t)} (1 + O(n²/t²)), i.e. to below 1e-15 relative; t = ∞ gives 1."""
    n = np.arange(b + 1, dtype=np.float64)
    k = np.exp(-n * n / (2.0 * t))
    return k / (k[0] + 2.0 * k[1:].sum())


@pytest.mark.parametrize("t", [40_000.0, 1e5, 1e6, 1e8])
def test_kernel_wider_than_the_lattice_equals_the_reference(t):
    """√t > G: the taps come from the upward recurrence; they equal the 50-digit reference."""
    out = np.full(200, np.nan)
    b = _kernels.lattice_kernel(t, 199, out)
    assert b == 199
    np.testing.assert_allclose(out[:200], _decimal_taps(t, 199), rtol=1e-13, atol=0)


@pytest.mark.parametrize("t", [1e10, 1e12])
def test_kernel_of_large_times_equals_the_asymptotic_reference(t):
    out = np.full(200, np.nan)
    b = _kernels.lattice_kernel(t, 199, out)
    assert b == 199
    np.testing.assert_allclose(out[:200], _asymptotic_taps(t, 199), rtol=1e-14, atol=0)


SNIPPETS["huge_times"] = """
        import math, numpy as np
        from changerate_bayes.dynamic import _kernels
        taps = []
        for t in (1e20, 1e60, 1e300, math.inf):
            out = np.full(200, np.nan)
            b = _kernels.lattice_kernel(t, 199, out)
            taps.append(out[:b + 1].tolist())
        result = {"taps": taps}
"""


def test_kernel_of_huge_times_tends_to_uniform(_subprocess_results):
    """t → ∞: every tap → 1/(2B + 1), so each renormalised column of the transition is 1/G
    (in a subprocess: the work used to grow like √t)."""
    ts = [1e20, 1e60, 1e300, math.inf]
    res = _run(_subprocess_results, "huge_times")
    for t, taps in zip(ts, res["taps"]):
        assert len(taps) == 200
        np.testing.assert_allclose(taps, _asymptotic_taps(t, 199), rtol=1e-14, atol=0)


def test_bessel_ratio_large_equals_the_reference():
    for t in (64.0, 100.0, 1e3, 1e6):
        ref = _decimal_taps(t, 1)
        assert _kernels.bessel_ratio_large(t) == pytest.approx(ref[1] / ref[0], rel=1e-15)
    assert _kernels.bessel_ratio_large(math.inf) == 1.0


# ------------------------------------------------------------------ the filter's limits


SNIPPETS["huge_interval_update"] = """
        from changerate_bayes import DynamicRateFilter
        f = DynamicRateFilter(sigma=0.1)
        p = float(f.predict_change_probability(1e300))
        f.update(1, 1e60)
        result = {"p": p, "w": f.node_probabilities().tolist(), "rate": float(f.rate),
                          "grid": f.grid.tolist()}
"""


def test_huge_interval_update_is_the_uniform_limit(_subprocess_results):
    """update(1, 1e60) with σ = 0.1: the walk's spread σ√τ = 1e29 dwarfs the lattice, so
    the predicted weights are uniform on the lattice, and 1 − e^{−Δ·1e60} = 1 at every
    node: the posterior is uniform, its mean the mean of the lattice's rates. Also
    P(I = 1) of a crawl after 1e300 is Σ w (1 − e^{−Δ·1e300}) = 1."""
    res = _run(_subprocess_results, "huge_interval_update")
    assert res["p"] == pytest.approx(1.0, rel=1e-12)
    g = len(res["grid"])
    np.testing.assert_allclose(res["w"], np.full(g, 1.0 / g), rtol=1e-12)
    assert res["rate"] == pytest.approx(_uniform_mean(res["grid"]), rel=1e-12)


SNIPPETS["huge_interval_posterior"] = """
        import numpy as np
        from changerate_bayes import dynamic_posterior
        grid = np.geomspace(1e-4, 1e2, 50)
        idata = dynamic_posterior(([[1], [1]], [[1e40], [1e16]]), sigma=0.1, grid=grid)
        post = idata.posterior
        result = {"f": post["filtered_mean"].values.ravel().tolist(),
                          "s": post["smoothed_mean"].values.ravel().tolist(),
                          "p": idata.predictions["change_probability"].values.ravel().tolist()}
"""


def test_huge_interval_in_dynamic_posterior_is_the_uniform_limit(_subprocess_results):
    """One crawl after 1e40 (and, on a second page, 1e16) seeing a change, σ = 0.1:
    filtered and smoothed means are the uniform lattice mean, the predictive is 1."""
    res = _run(_subprocess_results, "huge_interval_posterior")
    mean = _uniform_mean(GRID)
    np.testing.assert_allclose(res["f"], mean, rtol=1e-9)
    np.testing.assert_allclose(res["s"], mean, rtol=1e-9)
    np.testing.assert_allclose(res["p"], 1.0, rtol=1e-12)


SNIPPETS["huge_volatility"] = """
        import numpy as np
        from changerate_bayes import DynamicRateFilter
        grid = np.geomspace(1e-4, 1e2, 50)
        f = DynamicRateFilter(sigma=1e7, grid=grid)
        f.update(1, 1.0)
        g = DynamicRateFilter(3, sigma=0.1, grid=grid)
        result = {"rate": float(f.rate), "p": g.predict_change_probability([1e20, 1e30, 1e300]).tolist()}
"""


def test_huge_volatility_and_interval_finish_with_the_limit_answer(_subprocess_results):
    """σ = 1e7 with τ = 1: σ²τ/h² ≈ 1.3e15 ≫ G², the transition is uniform, and after a
    crawl that saw a change the posterior is ∝ 1 − e^{−Δ_i} at node i. The predictives
    after 1e20, 1e30 and 1e300 (σ = 0.1) are 1. Bounded work: these calls return."""
    res = _run(_subprocess_results, "huge_volatility")
    lik = -np.expm1(-GRID)
    assert res["rate"] == pytest.approx(float(np.sum(GRID * lik) / np.sum(lik)), rel=1e-9)
    np.testing.assert_allclose(res["p"], 1.0, rtol=1e-12)


@pytest.mark.parametrize("shape", [1e-20, 1e-4, 1e-3, 1e-2])
def test_prior_a_default_lattice_cannot_hold_is_refused(shape):
    """Gamma(a, 1) with small a: log Δ has a left tail of about 1/a units, and the 30
    units around its median hold about 30a of the mass (or the median underflows):
    a ValueError names `prior` and `grid`, for the filter and the batch posterior."""
    for make in (
        lambda: DynamicRateFilter(prior=GammaPrior(shape, 1.0)),
        lambda: dynamic_posterior(([[1]], [[1.0]]), prior=GammaPrior(shape, 1.0)),
    ):
        with pytest.raises(ValueError, match=r"`prior` GammaPrior.*`grid`"):
            make()


SNIPPETS["tiny_shape"] = """
        import numpy as np
        from changerate_bayes import DynamicRateFilter, GammaPrior
        f = DynamicRateFilter(sigma=0.0, prior=GammaPrior(1e-20, 1.0), grid=np.geomspace(1e-4, 1e2, 50))
        f.update(1, 1.0)
        result = {"w": f.node_probabilities().tolist()}
"""


def test_prior_with_tiny_shape_works_on_a_given_grid(_subprocess_results):
    """On an explicit lattice the prior is evaluated at its nodes (finite in log form):
    Gamma(1e-20, 1) ∝ Δ^{−1} e^{−Δ}, uniform in log Δ times e^{−Δ}; after one change in
    τ = 1 the node weights are ∝ e^{−Δ_i}(1 − e^{−Δ_i}) (σ = 0)."""
    res = _run(_subprocess_results, "tiny_shape")
    w = np.exp(-GRID) * -np.expm1(-GRID)
    np.testing.assert_allclose(
        res["w"], w / w.sum(), rtol=1e-9, atol=1e-30
    )  # nodes below 1e-30 of the largest are zero


# ------------------------------------------------------------------ ragged histories


@pytest.fixture
def ragged_log(tmp_path):
    history = read_log(write_log(tmp_path, TWO_PAGE_LOG)).history
    assert history.is_ragged
    return history


def test_dynamic_posterior_takes_a_ragged_history(ragged_log):
    """Each page of a ragged history gives what it gives alone; after its last crawl, NaN."""
    idata = dynamic_posterior(ragged_log, sigma=(0.0, 0.1))
    f = idata.posterior["filtered_mean"].values
    p = idata.predictions["change_probability"].values
    lengths = ragged_log.lengths
    assert f.shape == (2, int(lengths.max()))
    for i in range(2):
        lo, hi = ragged_log.offsets[i], ragged_log.offsets[i + 1]
        alone = dynamic_posterior(
            CrawlHistory(ragged_log.flat_changed[lo:hi], intervals=ragged_log.flat_intervals[lo:hi]), sigma=(0.0, 0.1)
        )
        np.testing.assert_allclose(f[i, : lengths[i]], alone.posterior["filtered_mean"].values, rtol=1e-12)
        np.testing.assert_allclose(
            idata.posterior["smoothed_mean"].values[i, : lengths[i]],
            alone.posterior["smoothed_mean"].values,
            rtol=1e-12,
        )
        np.testing.assert_allclose(p[i, : lengths[i]], alone.predictions["change_probability"].values, rtol=1e-12)
        assert np.isnan(f[i, lengths[i] :]).all()


@pytest.mark.parametrize("likelihood", ["conjugate", "exact"])
def test_posterior_mean_path_takes_a_ragged_history(ragged_log, likelihood):
    h = CrawlHistory.from_segments(
        ragged_log.flat_changed, ragged_log.flat_intervals, lengths=ragged_log.lengths, crawl_rate=0.1
    )
    prior = None if likelihood == "conjugate" else GammaPrior(1.0, 1.0)
    path = posterior_mean_path(h, prior=prior, likelihood=likelihood)
    assert path.shape == (2, int(h.lengths.max()))
    for i in range(2):
        lo, hi = h.offsets[i], h.offsets[i + 1]
        alone = posterior_mean_path(
            CrawlHistory(h.flat_changed[lo:hi], intervals=h.flat_intervals[lo:hi], crawl_rate=0.1),
            prior=prior,
            likelihood=likelihood,
        )
        np.testing.assert_allclose(path[i, : hi - lo], alone, rtol=1e-12)
        assert np.isnan(path[i, hi - lo :]).all()


# ------------------------------------------------------------------ chunks of pages


def test_page_chunks_cover_the_pages_in_order():
    from changerate_bayes.dynamic._model import MAX_CALL_PAGES, page_chunks

    for n, work in ((1, 10), (1000, 1), (20_000, 20_000), (50_000, 10**9), (7, 10**12)):
        chunks = page_chunks(n, work)
        assert chunks[0][0] == 0 and chunks[-1][1] == n
        assert all(b0 == a1 for (_, b0), (a1, _) in zip(chunks, chunks[1:]))
        assert all(0 < b - a <= MAX_CALL_PAGES for a, b in chunks)


def test_chunked_kernels_equal_one_call(monkeypatch):
    """Pages are independent: the compiled kernels run on chunks of a few pages (control back in
    Python, where Ctrl-C is acted on, between chunks) give what one call gives, bit for bit."""
    from changerate_bayes.dynamic import _model

    rng = np.random.default_rng(3)
    n, k = 11, 6
    changed = rng.random((n, k)) < 0.4
    tau = rng.exponential(2.0, (n, k))
    mask = rng.random((n, k)) < 0.8

    def run():
        idata = dynamic_posterior((changed, tau, mask), sigma=(0.0, 0.1), grid=GRID)
        f = DynamicRateFilter(n, sigma=(0.0, 0.1), grid=GRID)
        preds = []
        for c in range(k):
            preds.append(f.predict_change_probability(tau[:, c]))
            f.update(changed[:, c], tau[:, c], mask=mask[:, c])
        return [idata.posterior[v].values for v in ("filtered_mean", "smoothed_quantiles", "sigma_weights")] + [
            idata.predictions["change_probability"].values,
            f.node_probabilities(),
            np.array(preds),
        ]

    whole = run()
    monkeypatch.setattr(_model, "CALL_WORK", 1)
    monkeypatch.setattr(_model, "PAGES_PER_THREAD_CALL", 1)
    monkeypatch.setattr(_model, "MAX_CALL_PAGES", 3)
    assert len(_model.page_chunks(n, 100)) >= 4  # chunks of 2 or 3 pages (1 per thread, at most 3)
    for a, b in zip(run(), whole):
        np.testing.assert_array_equal(a, b)
