"""posterior(): one return type, every bad input, and NUTS vs grid vs conjugate agreement.

NUTS runs are few and small: one compiled model (4 pages, Gamma prior family) serves
every NUTS test of this module (the compiled-model cache is per process).
"""

import numpy as np
import pytest
from scipy import stats

from changerate_bayes import (
    BetaPrimePrior,
    CrawlHistory,
    GammaPrior,
    LogNormalPrior,
    StatisticalWarning,
    posterior,
    sampler_diagnostics,
    simulate_history,
)
from changerate_bayes.bayes import R_HAT_MAX
from changerate_bayes.bayes._grid import fit_grid
from changerate_bayes.bayes._likelihood import ExactLikelihood

# one pytest-xdist worker for the whole group (see tests/conftest.py)
pytestmark = pytest.mark.xdist_group("nuts_posterior")

PRIOR = GammaPrior(2.0, 1.0)


def _four_pages():
    """All changed, none changed, τ from 1e-6 to 1e6, and a simulated page; k = 12."""
    tau_wide = np.logspace(-6, 6, 12)
    sim = simulate_history(1.5, 1.0, 12, rng=4)
    changed = np.array([np.ones(12), np.zeros(12), np.tile([1, 0], 6), sim.changed])
    tau = np.array([np.full(12, 0.4), np.full(12, 0.4), tau_wide, sim.intervals])
    return CrawlHistory(changed, tau, crawl_rate=1.0)


@pytest.fixture(scope="module")
def four_pages():
    return _four_pages()


@pytest.fixture(scope="module")
def nuts_fit(four_pages):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)
        return posterior(four_pages, prior=PRIOR, method="nuts", draws=1000, tune=600, chains=2, rng=11)


@pytest.fixture(scope="module")
def grid_fit(four_pages):
    return posterior(four_pages, prior=PRIOR, method="grid", draws=2000, chains=2, rng=12)


def _mean_and_mcse(idata, mcse_from="arviz"):
    import arviz as az

    x = idata.posterior["change_rate"]
    mean = x.mean(("chain", "draw")).values
    if mcse_from == "arviz":
        se = az.mcse(idata, var_names=["change_rate"], method="mean")["change_rate"].values
    else:  # i.i.d. draws
        flat = x.values.reshape(-1, *x.shape[2:])
        se = flat.std(axis=0, ddof=1) / np.sqrt(flat.shape[0])
    return mean, se


# ------------------------------------------------------------------ agreement
def test_nuts_agrees_with_grid_within_3_mcse(nuts_fit, grid_fit):
    m_n, se_n = _mean_and_mcse(nuts_fit, "arviz")
    m_g, se_g = _mean_and_mcse(grid_fit, "draws")
    z = (m_n - m_g) / np.sqrt(se_n**2 + se_g**2)
    assert (np.abs(z) < 3).all(), z


def test_nuts_and_grid_agree_with_the_quadrature_mean(four_pages, nuts_fit):
    lik = ExactLikelihood(four_pages.changed, four_pages.intervals)
    exact = fit_grid(lik, PRIOR.coefficients().as_arrays(4)).mean()
    m_n, se_n = _mean_and_mcse(nuts_fit, "arviz")
    assert (np.abs(m_n - exact) < 3 * se_n).all(), (m_n, exact, se_n)


def test_nuts_diagnostics_are_returned_as_data(nuts_fit):
    diag = sampler_diagnostics(nuts_fit)
    assert diag.r_hat.shape == (4,) and diag.ess_bulk.shape == (4,)
    assert diag.n_divergences == 0
    assert diag.r_hat_max <= R_HAT_MAX
    assert diag.ess_threshold == 200.0  # 100 per chain, 2 chains
    attrs = nuts_fit.sample_stats.attrs
    assert attrs["r_hat_threshold"] == R_HAT_MAX and attrs["n_divergences"] == 0
    assert "diverging" in nuts_fit.sample_stats


def test_nuts_at_k_equal_1_matches_the_closed_form():
    # k = 1: π(Δ | I = 1) ∝ Δ^{a−1} e^{−bΔ}(1 − e^{−τΔ}) has mean
    # a [b^{−a−1} − (b+τ)^{−a−1}] / [b^{−a} − (b+τ)^{−a}]; π(Δ | I = 0) = Gamma(a, b + τ).
    # Same compiled 4-page model as above, new data with k = 1.
    import warnings

    h = CrawlHistory([[1], [0], [1], [0]], [[0.7], [0.7], [1e-6], [1e6]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)
        idata = posterior(h, prior=PRIOR, method="nuts", draws=1000, tune=600, chains=2, rng=5)
    a, b = PRIOR.shape, PRIOR.rate

    def changed_mean(t):
        return a * (b ** (-a - 1) - (b + t) ** (-a - 1)) / (b**-a - (b + t) ** -a)

    exact = np.array([changed_mean(0.7), a / (b + 0.7), changed_mean(1e-6), a / (b + 1e6)])
    m, se = _mean_and_mcse(idata, "arviz")
    assert (np.abs(m - exact) < 3 * se).all(), (m, exact, se)


def test_poor_nuts_diagnostics_warn(four_pages):
    with pytest.warns(StatisticalWarning, match="ESS"):
        posterior(four_pages, prior=PRIOR, method="nuts", draws=20, tune=100, chains=2, rng=1)


@pytest.mark.slow
def test_pymc_sampler_fallback_agrees_with_grid(four_pages, grid_fit):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = posterior(
            four_pages, prior=PRIOR, method="nuts", draws=500, tune=500, chains=2, rng=2, nuts_sampler="pymc"
        )
    assert idata.posterior.attrs["sampler"] == "pymc"
    m_n, se_n = _mean_and_mcse(idata, "arviz")
    m_g, se_g = _mean_and_mcse(grid_fit, "draws")
    assert (np.abs(m_n - m_g) < 3 * np.sqrt(se_n**2 + se_g**2)).all()


def test_conjugate_draws_match_the_closed_form():
    h = simulate_history(np.array([0.5, 2.0, 8.0]), np.array([1.0, 2.0, 4.0]), 25, n_pages=3, rng=9)
    prior = BetaPrimePrior(1.0, 3.0)
    idata = posterior(h, prior=prior, method="conjugate", draws=4000, chains=2, rng=3)
    s = h.changed.sum(axis=1)
    exact = stats.betaprime(1.0 + s, 3.0 + 25 - s, scale=h.crawl_rate).mean()
    m, se = _mean_and_mcse(idata, "draws")
    assert (np.abs(m - exact) < 3 * se).all()


# ------------------------------------------------------------------ return type
@pytest.mark.parametrize("method", ["grid", "conjugate"])
def test_one_return_type_and_layout(method):
    import arviz as az

    one = CrawlHistory([1, 0, 1], [0.5, 1.0, 2.0], crawl_rate=1.0)
    many = CrawlHistory([[1, 0, 1], [0, 0, 1]], [[0.5, 1.0, 2.0]] * 2, crawl_rate=1.0)
    a = posterior(one, method=method, draws=50, chains=3, rng=1)
    b = posterior(many, method=method, draws=50, chains=3, rng=1)
    for idata in (a, b):
        assert isinstance(idata, az.InferenceData)
        assert idata.posterior.attrs["method"] == method
        assert "BetaPrimePrior(a=1.0, b=2.0)" in idata.posterior.attrs["prior"]  # the default prior
        np.testing.assert_array_equal(idata.observed_data["changed"].values, (one if idata is a else many).changed)
    assert a.posterior["change_rate"].dims == ("chain", "draw")
    assert a.posterior["change_rate"].shape == (3, 50)
    assert b.posterior["change_rate"].dims == ("chain", "draw", "page")
    assert b.posterior["change_rate"].shape == (3, 50, 2)


def test_same_seed_same_draws():
    h = CrawlHistory([1, 0, 1], [0.5, 1.0, 2.0], crawl_rate=1.0)
    for method in ("grid", "conjugate"):
        x = posterior(h, method=method, draws=20, chains=1, rng=4).posterior["change_rate"].values
        y = posterior(h, method=method, draws=20, chains=1, rng=4).posterior["change_rate"].values
        np.testing.assert_array_equal(x, y)


# ------------------------------------------------------------------ bad input
H = CrawlHistory([1, 0, 1], [0.5, 1.0, 2.0], crawl_rate=1.0)
NO_TAU = CrawlHistory([1, 0, 1], crawl_rate=1.0)
NO_P = CrawlHistory([1, 0, 1], [0.5, 1.0, 2.0])


@pytest.mark.parametrize(
    ("history", "kwargs", "error", "match"),
    [
        (H, {"method": "mcmc"}, ValueError, r"`method` must be one of \('nuts', 'grid', 'conjugate'\); got 'mcmc'"),
        (H, {"method": None}, TypeError, "`method` must be one of"),
        (NO_TAU, {"method": "grid"}, ValueError, "method 'grid' needs the crawl intervals"),
        (NO_TAU, {"method": "nuts"}, ValueError, "method 'nuts' needs the crawl intervals"),
        (
            NO_P,
            {"method": "conjugate", "prior": BetaPrimePrior(1.0, 2.0)},
            ValueError,
            "method 'conjugate' needs the crawl rate",
        ),  # what is missing, before any prior is checked
        (NO_P, {"method": "grid"}, ValueError, "`prior` is required when the history has no crawl_rate"),
        (
            H,
            {"method": "conjugate", "prior": GammaPrior(1.0, 1.0)},
            ValueError,
            "`prior` must be a BetaPrimePrior for method 'conjugate'",
        ),
        (H, {"prior": "gamma"}, TypeError, "`prior` must be a GammaPrior, LogNormalPrior or BetaPrimePrior; got str"),
        (H, {"prior": stats.gamma(2.0)}, TypeError, "`prior` must be a GammaPrior"),
        ([1, 0, 1], {}, TypeError, "`history` must be a CrawlHistory; got list"),
        (H, {"draws": 0}, ValueError, "`draws` must be >= 1; got 0"),
        (H, {"draws": 10.0}, TypeError, "`draws` must be an integer; got float"),
        (H, {"chains": -1}, ValueError, "`chains` must be >= 1; got -1"),
        (H, {"tune": -5}, ValueError, "`tune` must be >= 0; got -5"),
        (H, {"method": "grid", "tune": -5}, ValueError, "`tune` must be >= 0; got -5"),
        # nutpie aborts the interpreter at tune = 0 (a Rust panic) and diverges below ~8
        (H, {"tune": 0}, ValueError, r"`tune` must be >= 10 for method 'nuts' \(fewer warm-up draws"),
        (H, {"tune": 5}, ValueError, r"`tune` must be >= 10 for method 'nuts'.*; got 5"),
        (H, {"grid_size": 4}, ValueError, "`grid_size` must be >= 8; got 4"),
        (H, {"nuts_sampler": "stan"}, ValueError, "`nuts_sampler` must be one of"),
        (H, {"target_accept": 1.5}, ValueError, r"`target_accept` must be in \(0, 1\); got 1.5"),
        (H, {"target_accept": "0.9"}, TypeError, r"`target_accept` must be a real number in \(0, 1\); got str"),
        (H, {"rng": 1.5}, TypeError, "`rng` must be an int seed"),
        (H, {"rng": -1}, ValueError, "`rng` must be a non-negative integer seed"),
    ],
)
def test_bad_input(history, kwargs, error, match):
    with pytest.raises(error, match=match):
        posterior(history, **kwargs)


def test_conjugate_without_crawl_rate_is_refused_even_with_a_gamma_prior():
    with pytest.raises(ValueError, match="needs the crawl rate"):
        posterior(NO_P, prior=GammaPrior(1.0, 1.0), method="conjugate")


def test_lognormal_prior_needs_no_crawl_rate():
    d = posterior(NO_P, prior=LogNormalPrior(0.0, 1.0), method="grid", draws=30, chains=1, rng=0)
    assert np.isfinite(d.posterior["change_rate"].values).all()


def test_sampler_falls_back_to_pymc_when_nutpie_cannot_be_imported(monkeypatch):
    from changerate_bayes.bayes import _nuts

    assert _nuts.resolve_sampler("pymc") == "pymc"
    monkeypatch.setattr(_nuts, "_nutpie_importable", lambda: False)
    assert _nuts.resolve_sampler("auto") == "pymc"
    with pytest.raises(ValueError, match="nutpie cannot be imported"):
        _nuts.resolve_sampler("nutpie")


def test_tune_is_ignored_by_the_exact_methods():
    d = posterior(H, prior=GammaPrior(1.0, 1.0), method="grid", tune=0, draws=10, chains=1, rng=0)
    assert d.posterior.attrs["method"] == "grid"


def test_one_chain_reports_r_hat_as_not_available_in_words(four_pages, capfd):
    with pytest.warns(StatisticalWarning, match="R-hat needs ≥ 2 chains \\(got 1\\)") as rec:
        idata = posterior(four_pages, prior=PRIOR, method="nuts", draws=300, tune=300, chains=1, rng=3)
    assert not any("nan" in str(w.message) for w in rec)
    diag = sampler_diagnostics(idata)
    assert diag.r_hat is None and diag.r_hat_max is None and not diag.ok
    assert diag.to_record()["r_hat_max"] is None and np.isfinite(diag.ess_bulk_min)
    assert "r_hat_max" not in idata.sample_stats.attrs  # None is not stored
    assert "Shape validation failed" not in capfd.readouterr().err  # ArviZ's log stays quiet


def test_too_few_draws_for_ess_are_reported_in_words():
    d = posterior(H, prior=GammaPrior(1.0, 1.0), method="grid", draws=3, chains=2, rng=0)
    diag = sampler_diagnostics(d)
    assert diag.ess_bulk is None and diag.r_hat is None
    assert "bulk ESS needs ≥ 4 draws per chain (got 3)" in diag.problems


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        (("x",), TypeError, "`idata` must be an arviz.InferenceData as returned by posterior"),
        ((None,), TypeError, "`idata` must be an arviz.InferenceData"),
        (("GRID", "foo"), ValueError, r"`var_names` must name posterior variables \['change_rate'\]; got \['foo'\]"),
        (("GRID", 3), TypeError, "`var_names` must be a str or a list of str; got 3"),
        (("GRID", []), ValueError, "`var_names` must name posterior variables"),
    ],
)
def test_sampler_diagnostics_bad_input(grid_fit, args, error, match):
    args = tuple(grid_fit if a == "GRID" else a for a in args)
    with pytest.raises(error, match=match):
        sampler_diagnostics(*args)
