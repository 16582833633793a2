"""pooled_posterior(): structure, bad input, and pooling lowering the RMSE at small k."""

import warnings

import numpy as np
import pytest

from changerate_bayes import CrawlHistory, estimate_path, pooled_posterior, sampler_diagnostics, simulate_history
from changerate_bayes._validation import StatisticalWarning
from changerate_bayes.validation.pooling import draw_rates, paired_mse

# one pytest-xdist worker for the whole group (see tests/conftest.py)
pytestmark = pytest.mark.xdist_group("nuts_pooled")


@pytest.fixture(scope="module")
def pooled_small_k():
    """600 pages, log-normal rates (sd 1 on the log scale), k = 2 Poisson crawls (p = 1)."""
    gen = np.random.default_rng(2021)
    delta = draw_rates("lognormal", 600, gen)
    h = simulate_history(delta, 1.0, 2, n_pages=600, rng=gen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatisticalWarning)
        idata = pooled_posterior(h, population="lognormal", draws=500, tune=500, chains=2, rng=3)
    return delta, h, idata


@pytest.mark.slow
def test_pooling_lowers_rmse_against_per_page_lln_and_mle_at_small_k(pooled_small_k):
    delta, h, idata = pooled_small_k
    pooled = idata.posterior["change_rate"].mean(("chain", "draw")).values
    lln = estimate_path(h, "lln", alpha=1.0)[:, -1]
    m = paired_mse(pooled, lln, delta)
    # MSE(LLN) − MSE(pooled) over pages, with the Monte Carlo SE of the paired differences
    assert m["diff"] > 3 * m["diff_se"], m
    mle = estimate_path(h, "mle")[:, -1]
    assert np.isinf(mle).any() and (mle == 0).any()  # per-page MLE: 0 or ∞ on many pages at k = 2
    assert np.isfinite(pooled).all() and (pooled > 0).all()


@pytest.mark.slow
def test_pooled_posterior_layout_and_diagnostics(pooled_small_k):
    _, _, idata = pooled_small_k
    post = idata.posterior
    assert post["change_rate"].dims == ("chain", "draw", "page") and post["change_rate"].shape == (2, 500, 600)
    assert post["population_log_median"].dims == ("chain", "draw")
    assert post["population_sigma"].dims == ("chain", "draw")
    assert post.attrs["method"] == "pooled" and post.attrs["population"] == "lognormal"
    # the population sd is learned near the truth (1.0) from 600 pages × 2 crawls
    assert abs(float(post["population_sigma"].mean()) - 1.0) < 3 * float(post["population_sigma"].std()) + 0.05
    diag = sampler_diagnostics(idata)
    assert diag.r_hat.size == 600 + 2 and diag.n_divergences == 0
    assert idata.sample_stats.attrs["n_divergences"] == 0
    # the warning and the stored summary check what NUTS sampled: the two hyperparameters
    hyper = sampler_diagnostics(idata, var_names=["population_log_median", "population_sigma"])
    assert idata.sample_stats.attrs["r_hat_max"] == hyper.r_hat_max
    assert idata.sample_stats.attrs["ess_bulk_min"] == hyper.ess_bulk_min


H2 = CrawlHistory([[1, 0], [0, 0]], [[1.0, 2.0], [0.5, 0.5]], crawl_rate=1.0)


@pytest.mark.parametrize(
    ("history", "kwargs", "error", "match"),
    [
        (CrawlHistory([1, 0], [1.0, 2.0]), {}, ValueError, "must hold at least 2 pages"),
        (CrawlHistory([[1, 0], [0, 1]], crawl_rate=1.0), {}, ValueError, "method 'pooled' needs the crawl intervals"),
        (H2, {"population": "pareto"}, ValueError, r"`population` must be one of \('lognormal', 'gamma'\)"),
        (H2, {"population": 1}, TypeError, "`population` must be one of"),
        (H2, {"method": "laplace"}, ValueError, r"`method` must be one of \('marginal', 'joint'\)"),
        (H2, {"rate_scale": 0.0}, ValueError, "`rate_scale` must be a finite number > 0"),
        (H2, {"rate_scale": "1"}, TypeError, "`rate_scale` must be a real number"),
        (H2, {"draws": 0}, ValueError, "`draws` must be >= 1"),
        (H2, {"chains": 2.0}, TypeError, "`chains` must be an integer"),
        (H2, {"nuts_sampler": "jax"}, ValueError, "`nuts_sampler` must be one of"),
        (H2, {"target_accept": 0.0}, ValueError, r"`target_accept` must be in \(0, 1\)"),
        (H2, {"target_accept": "0.9"}, TypeError, r"`target_accept` must be a real number in \(0, 1\); got str"),
        (H2, {"tune": 0}, ValueError, r"`tune` must be >= 10 for pooled_posterior \(fewer warm-up draws"),
        (H2, {"tune": 9, "method": "joint"}, ValueError, r"`tune` must be >= 10 for pooled_posterior.*; got 9"),
        ({"changed": [[1]]}, {}, TypeError, "`history` must be a CrawlHistory; got dict"),
    ],
)
def test_bad_input(history, kwargs, error, match):
    with pytest.raises(error, match=match):
        pooled_posterior(history, **kwargs)


def test_render_reports_wins_losses_and_diagnostics_in_words():
    from changerate_bayes.validation import pooling

    rows = []
    for k, (z, ratio) in {1: (5.0, 0.9), 2: (-3.0, 1.1)}.items():
        rows.append(
            {
                "truth": "lognormal",
                "k": k,
                "estimator": "LLN (α = 1)",
                "n_pages": 10,
                "rmse": 1.0,
                "rmse_ratio_to_lln": 1.0,
                "mse_gain_vs_lln": 0.0,
                "mse_gain_se": 0.0,
                "z": None,
                "n_zero_or_inf": 0,
            }
        )
        rows.append(
            {
                "truth": "lognormal",
                "k": k,
                "estimator": "MLE",
                "n_pages": 10,
                "rmse": None,
                "rmse_ratio_to_lln": None,
                "mse_gain_vs_lln": None,
                "mse_gain_se": None,
                "z": None,
                "n_zero_or_inf": 7,
            }
        )
        rows.append(
            {
                "truth": "lognormal",
                "k": k,
                "estimator": "pooled, lognormal population",
                "n_pages": 10,
                "rmse": ratio,
                "rmse_ratio_to_lln": ratio,
                "mse_gain_vs_lln": 0.1 * z,
                "mse_gain_se": 0.1,
                "z": z,
                "n_zero_or_inf": 0,
            }
        )
    diag = {
        "truth": "lognormal",
        "replication": 0,
        "k": 1,
        "population": "lognormal",
        "r_hat_max": 1.02,
        "ess_bulk_min": 90.0,
        "ess_tail_min": 150.0,
        "n_divergences": 0,
        "n_chains": 2,
        "n_draws": 300,
        "r_hat_threshold": 1.01,
        "ess_threshold": 200.0,
        "max_divergences": 0,
        "ok": False,
        "hyper_r_hat_max": 1.02,
        "hyper_ess_bulk_min": 90.0,
        "page_r_hat_max": 1.015,
        "page_frac_r_hat_over": 0.02,
        "page_ess_bulk_min": 400.0,
    }
    settings = {
        "truths": ["lognormal"],
        "populations": ["lognormal"],
        "pages": 10,
        "ks": [1, 2],
        "reps": 1,
        "draws": 300,
        "tune": 300,
        "crawl_rate": 1.0,
        "z_win": 2.0,
        "preset": "quick",
    }
    html = pooling.render({"pooling": {"settings": settings, "rows": rows, "diagnostics": [diag]}})
    assert "Lower than the LLN by more than 2 SE at k = 1; higher at k = 2" in html  # no Python lists in prose
    assert "7 pages at k=1" in html and "population hyperparameters miss a threshold" in html
    assert "bulk ESS 90 &lt; 200, R-hat 1.020 &gt; 1.01" in html and "2 chains of 300 draws" in html
    assert "Mixed:" in html
