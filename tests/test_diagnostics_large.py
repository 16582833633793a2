"""Long traces: the grouped Bayesian blocks and the fixed-size Monte Carlo nulls that
bound the cost of poisson_gof above 10^4 events (timings: benchmarks/bench_poisson_gof_scaling.py)."""

import numpy as np
import pytest
from astropy.stats import bayesian_blocks

from changerate_bayes.diagnostics import poisson_gof
from changerate_bayes.diagnostics._exponential import NULL_SIZE
from changerate_bayes.diagnostics._segments import EXACT_BLOCKS_MAX, fit_segments, grouped_blocks


def test_grouped_blocks_with_groups_of_one_is_astropy():
    g = np.random.default_rng(1)
    t = np.sort(
        np.concatenate([g.uniform(0, 100, 150), g.uniform(100, 110, 150), np.round(g.uniform(110, 200, 100), 1)])
    )  # with ties
    for p0 in (0.01, 0.05, 0.3):
        np.testing.assert_array_equal(grouped_blocks(t, p0=p0), bayesian_blocks(t, fitness="events", p0=p0))


def test_grouped_blocks_edges_fall_between_groups():
    g = np.random.default_rng(2)
    t = np.sort(g.uniform(0, 1000, 2000))
    t = np.sort(np.concatenate([t, g.uniform(400, 420, 800)]))
    edges = grouped_blocks(t, p0=0.05, group_size=7)
    u = np.unique(t)
    cell = np.concatenate([u[:1], 0.5 * (u[1:] + u[:-1]), u[-1:]])[::7]
    assert np.all(np.isin(edges[1:-1], cell))
    assert edges[0] == t[0] and edges[-1] == t[-1]
    # the burst on (400, 420) is found to within a group (about 7 / 41 per time unit)
    inner = edges[1:-1]
    assert np.min(np.abs(inner - 400)) < 1.0 and np.min(np.abs(inner - 420)) < 1.0


def test_long_trace_is_segmented_in_groups_and_tested():
    n = 3 * EXACT_BLOCKS_MAX
    g = np.random.default_rng(5)
    # rate 1 over (0, n/2), then rate 3 over (n/2, n/2 + n/6): change at n/2
    t = np.sort(np.concatenate([g.uniform(0, n / 2, n // 2), g.uniform(n / 2, n / 2 + n / 6, n // 2)]))
    seg = fit_segments(t)
    assert seg.group_size > 1 and seg.n_segments == 2
    assert abs(seg.edges[1] - n / 2) < 5 * seg.group_size  # within a few groups of the change
    np.testing.assert_allclose(seg.rates, [1.0, 3.0], rtol=0.05)  # 5 standard errors at 1.5e4 events
    res = poisson_gof(t, n_resamples=99, rng=0)
    assert res.segments.group_size == seg.group_size
    # a piecewise-constant Poisson process: the within-segment tests keep it at the 1% level,
    # the homogeneous gap tests reject it
    assert res.tests["time_rescaling"].pvalue > 0.01
    assert str(NULL_SIZE) in res.tests["time_rescaling"].details["null"]
    assert res.tests["ks_bootstrap"].pvalue == pytest.approx(1 / 100)
    assert str(NULL_SIZE) in res.tests["ks_bootstrap"].details["null"]


def test_fixed_size_bootstrap_has_its_size_under_h0():
    """Above NULL_SIZE gaps the bootstrap null is simulated at NULL_SIZE: on Poisson data
    the KS, gap-CV and time-rescaling Monte Carlo p-values are uniform on {0.01, ..., 1};
    with 8 seeded traces of 1.5e4 events and 99 resamples, P(p <= 0.02) = 0.02 per test,
    so of 24 p-values at most 3 are that small (binomial probability of 4 or more: 1.3e-3)."""
    g = np.random.default_rng(11)
    p = []
    for i in range(8):
        t = np.cumsum(g.exponential(1.0, int(1.5 * NULL_SIZE)))
        res = poisson_gof(t, n_resamples=99, rng=i)
        p += [res.tests[k].pvalue for k in ("ks_bootstrap", "gap_cv", "time_rescaling")]
    assert sum(x <= 0.02 for x in p) <= 3
    assert 0.25 < np.mean(p) < 0.75  # mean of 24 uniforms: 0.5, standard deviation 0.059
