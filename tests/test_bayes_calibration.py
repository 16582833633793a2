"""Simulation-based calibration at reduced size, and the pure parts of the calibration study."""

import numpy as np
import pytest

from changerate_bayes.validation import calibration as cal

# one pytest-xdist worker for the whole group (see tests/conftest.py)
pytestmark = pytest.mark.xdist_group("nuts_posterior")


def _check(rec):
    assert rec["ranks"]["pvalue"] >= cal.UNIFORMITY_ALPHA, rec["ranks"]
    for c in rec["coverage"]:
        assert c["ok"], c  # inside the central 99% binomial interval of the nominal level


@pytest.mark.parametrize(("method", "prior"), [("grid", "gamma"), ("grid", "lognormal"), ("conjugate", "betaprime")])
def test_sbc_grid_and_conjugate_at_200_datasets(method, prior):
    rec = cal.sbc_vectorised(method, prior, 200, seed=17)
    assert rec["n_datasets"] == 200
    _check(rec)


@pytest.mark.slow
def test_sbc_nuts_reduced_and_agreement_with_grid():
    # 48 data sets, 4 pages per compiled model (the model of test_bayes_posterior), with
    # the study's chains and draws: every fit must pass the package's own thresholds
    rec = cal.sbc_nuts(48, batch=4, tune=300, seed=23, progress=lambda msg: None)
    assert rec["n_datasets"] == 48
    _check(rec)
    assert rec["agreement"]["ok"], rec["agreement"]
    assert all(d["ok"] for d in rec["diagnostics"]), rec["diagnostics"]
    assert all(d["n_chains"] == cal.NUTS_CHAINS and d["n_draws"] == cal.NUTS_DRAWS for d in rec["diagnostics"])


def _diag(ok, r_hat=1.004, ess=900.0, div=0):
    return {
        "r_hat_max": r_hat,
        "ess_bulk_min": ess,
        "ess_tail_min": ess,
        "n_divergences": div,
        "n_chains": 4,
        "n_draws": 1000,
        "r_hat_threshold": 1.01,
        "ess_threshold": 400.0,
        "max_divergences": 0,
        "ok": ok,
    }


def test_verdict_takes_the_nuts_convergence_checks_into_account():
    pvalues = [0.4, 0.6, 0.3, 0.8]  # every SBC check passes
    good = cal.nuts_diagnostics_summary([_diag(True)] * 4)
    text, ok = cal.sbc_verdict(pvalues, 0.01, [good])
    assert ok is True and "all 4 NUTS fits pass the convergence thresholds" in text and "calibrated" in text
    bad = cal.nuts_diagnostics_summary([_diag(False, r_hat=1.02)] * 4)
    assert bad["fits_ok"] == 0 and bad["failed_checks"] == "R-hat in 4"
    text, ok = cal.sbc_verdict(pvalues, 0.01, [bad])
    assert ok is False
    assert "but 4 of 4 NUTS fits fail the package's own convergence thresholds (R-hat in 4, worst R-hat 1.020" in text
    assert "calibrated" not in text.replace("do not show that NUTS is calibrated", "")
    one_chain = cal.nuts_diagnostics_summary([_diag(False, r_hat=None)])
    assert one_chain["r_hat_max"] is None and one_chain["failed_checks"] == "R-hat not available in 1"
    assert cal.sbc_verdict(pvalues, 0.01, [])[0].endswith("the posteriors are calibrated")


def test_verdict_fails_a_check_whose_p_equals_the_level():
    # a check is failed at p <= alpha (as the posterior predictive check is); p == alpha is not a pass
    text, ok = cal.sbc_verdict([0.01, 0.5, 0.5, 0.5], 0.01, [])
    assert ok is None and text.startswith("1 of 4 checks fall at or below 0.01")
    text, ok = cal.sbc_verdict([0.0025, 0.5, 0.5, 0.5], 0.01, [])  # = alpha / 4, the Bonferroni level
    assert ok is False and "fails at or beyond the Bonferroni level" in text
    assert cal.sbc_verdict([0.0101, 0.5, 0.5, 0.5], 0.01, [])[1] is True


def _render_quick(sbc):
    """The study's page for the records ``sbc`` beside a small PPC and LLN check, with the study's settings."""
    result = {
        "calibration": {
            "settings": {
                "n_crawls": cal.N_CRAWLS,
                "crawl_rate": cal.CRAWL_RATE,
                "rank_draws": cal.N_RANK_DRAWS,
                "rank_bins": cal.RANK_BINS,
                "levels": list(cal.LEVELS),
                "binomial_level": cal.BINOMIAL_LEVEL,
                "uniformity_alpha": cal.UNIFORMITY_ALPHA,
                "priors": {"gamma": "GammaPrior(2, 2)"},
                "preset": "quick",
            },
            "sbc": sbc,
            "ppc": [cal.ppc_simulated(3)],
            "lln_identity": cal.lln_identity(4),
        }
    }
    return cal.render(result)


def test_render_says_when_nuts_fits_failed_their_diagnostics():
    rec = cal.sbc_vectorised("grid", "gamma", 200, seed=1)
    nuts = dict(
        rec,
        method="nuts",
        label="nuts (50 pages per model), GammaPrior",
        diagnostics=[_diag(False, r_hat=1.016)] * 3 + [_diag(True)],
    )
    html = _render_quick([rec, nuts])
    assert "<strong>Does not hold:</strong> all 8 checks" in html
    assert "but 3 of 4 NUTS fits fail the package&#39;s own convergence thresholds" in html


def test_ranks_and_exact_interval_coverage():
    truth = np.array([0.5, 2.0, 10.0])
    draws = np.tile(np.arange(1.0, 200.0) / 20.0, (3, 1))  # 199 draws 0.05 .. 9.95
    np.testing.assert_array_equal(cal.sbc_ranks(truth, draws), [9, 39, 199])
    # uniform ranks 0..199 (each once): coverage is exactly the nominal level
    ranks = np.arange(200)
    for c in cal.interval_coverage(ranks, 199):
        assert c["covered"] == round(c["level"] * 200) and c["ok"]
    with pytest.raises(ValueError, match="needs"):
        cal.interval_coverage(ranks, 99, levels=(0.95,))  # 2.5 ranks per tail: not a whole set


def test_rank_uniformity_histogram():
    out = cal.rank_uniformity(np.arange(200), 199, 20)
    assert out["counts"] == [10] * 20 and out["pvalue"] == pytest.approx(1.0)
    skewed = cal.rank_uniformity(np.full(200, 199), 199, 20)
    assert skewed["pvalue"] < 1e-10
    with pytest.raises(ValueError, match="cannot be split"):
        cal.rank_uniformity(np.arange(10), 9, 3)


def test_thin_keeps_evenly_spaced_draws_per_page():
    draws = np.arange(2 * 5 * 3, dtype=float).reshape(2, 5, 3)  # (chain, draw, page)
    kept = cal.thin(draws, 4)
    assert kept.shape == (3, 4)
    np.testing.assert_array_equal(kept[0], [0.0, 9.0, 18.0, 27.0])


def test_ppc_accepts_poisson_data_and_rejects_periodic_changes():
    from changerate_bayes import CrawlHistory, GammaPrior, posterior, simulate_history

    rng = np.random.default_rng(4)
    h = simulate_history(1.0, 1.0, 600, rng=1)
    draws = posterior(h, prior=GammaPrior(2.0, 2.0), method="grid", draws=1000, chains=1, rng=2)
    ok = cal.ppc_bins(h.changed, h.intervals, draws.posterior["change_rate"].values.ravel(), rng=rng)
    assert ok["ppp"] > 0.01 and len(ok["bins"]) == cal.PPC_BINS
    assert sum(b["n"] for b in ok["bins"]) == 600
    # a page that changes every hour on the hour: every crawl interval longer than 1 h
    # sees a change, and P(I = 1 | τ) = min(τ, 1) is not 1 − e^{−Δτ} for any Δ
    times = np.arange(1.0, 700.0)
    crawls = np.cumsum(rng.exponential(1.0, 900))
    crawls = crawls[crawls < times[-1]]
    hb = CrawlHistory.from_times(times, crawls)
    db = posterior(hb, prior=GammaPrior(2.0, 2.0), method="grid", draws=1000, chains=1, rng=3)
    bad = cal.ppc_bins(hb.changed, hb.intervals, db.posterior["change_rate"].values.ravel(), rng=rng)
    assert bad["ppp"] < 0.01


def test_render_says_in_words_what_the_numbers_show():
    # a small result assembled from the study's own pieces (grid and conjugate only)
    sbc = [cal.sbc_vectorised("grid", "gamma", 200, seed=1), cal.sbc_vectorised("conjugate", "betaprime", 200, seed=2)]
    html = _render_quick(sbc)
    assert "<strong>Holds:</strong> all 8 checks (rank uniformity and 50/90/95% coverage" in html
    assert "LLN estimate equals the conjugate posterior mean" in html
    assert html.count("<img") == 2
