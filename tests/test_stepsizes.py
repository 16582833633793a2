"""check_sam_stepsizes on each boundary of Theorem 3 (paper Remarks 4, 6 and 7)."""

import dataclasses
import math

import numpy as np
import pytest

from changerate_bayes import check_sam_stepsizes


@pytest.mark.parametrize(
    ("eta", "beta", "regime", "words"),
    [
        # one timescale: η = 2β, β in (1/2, 1]
        (1.2, 0.6, "one-timescale", "η = 1.2 = 2β"),
        (2.0, 1.0, "one-timescale", "one timescale"),  # β = 1 is inside (1/2, 1]
        (1.2 * (1 + 1e-14), 0.6, "one-timescale", "= 2β"),  # within the 1e-12 tolerance
        # two timescales: β < η < 2β
        (0.75, 0.6, "two-timescale", "β = 0.6 < η = 0.75 < 2β = 1.2"),
        (0.6 + 1e-9, 0.6, "two-timescale", "two timescales"),  # just above η = β
        (1.2 - 1e-9, 0.6, "two-timescale", "two timescales"),  # just below η = 2β
        (1.5, 1.0, "two-timescale", "two timescales"),
        # invalid
        (1.0, 0.5, "invalid", "β = 0.5 is not in (1/2, 1]: Σβ_k² = ∞"),  # β = 1/2 excluded
        (0.75, 0.5, "invalid", "not in (1/2, 1]"),
        (0.6, 0.4, "invalid", "β = 0.4 is not in (1/2, 1]"),  # the conjectured range β <= 1/2
        (2.2, 1.1, "invalid", "β = 1.1 is not in (1/2, 1]: Σβ_k < ∞"),
        (0.6, 0.6, "invalid", "Remark 7"),  # η = β: constant momentum
        (0.5, 0.6, "invalid", "race to infinity"),  # η < β
        (1.3, 0.6, "invalid", "η = 1.3 > 2β = 1.2"),  # η > 2β
        (1.2 + 1e-9, 0.6, "invalid", "> 2β"),
        (0.6 - 1e-9, 0.6, "invalid", "race to infinity"),
    ],
)
def test_regimes_on_each_boundary(eta, beta, regime, words):
    check = check_sam_stepsizes(eta, beta)
    assert check.regime == regime
    assert words in check.condition
    assert check.valid == (regime != "invalid")
    assert (check.eta, check.beta, check.omega) == (eta, beta, 1.0)


def test_every_violation_is_listed():
    check = check_sam_stepsizes(0.3, 0.4)
    assert check.regime == "invalid"
    assert "not in (1/2, 1]" in check.condition and "race to infinity" in check.condition


@pytest.mark.parametrize(
    ("eta", "beta", "omega", "limit"),
    [
        (0.75, 0.6, 1.0, 1.0),
        (1.2, 0.6, 2.0, 1.0),
        (0.6, 0.6, 1.0, 0.0),
        (0.7, 0.7, 0.25, 0.75),
        (0.5, 0.6, 1.0, -math.inf),
    ],
)
def test_zeta_limit(eta, beta, omega, limit):
    # ζ_k = (β_k − ω η_k)/β_{k−1} → 1 (η > β), 1 − ω (η = β), −∞ (η < β)
    assert check_sam_stepsizes(eta, beta, omega).zeta_limit == limit
    k = 1e12
    zeta = ((k + 1) ** -beta - omega * (k + 1) ** -eta) / k**-beta
    if np.isfinite(limit):
        assert zeta == pytest.approx(limit, abs=0.05)
    else:
        assert zeta < -10


def test_result_is_frozen():
    check = check_sam_stepsizes(0.75, 0.6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        check.regime = "one-timescale"


@pytest.mark.parametrize("name", ["eta", "beta", "omega"])
@pytest.mark.parametrize("bad", [0.0, -0.5, math.nan, math.inf])
def test_bad_values(name, bad):
    kwargs = {"eta": 0.75, "beta": 0.6, "omega": 1.0, name: bad}
    with pytest.raises(ValueError, match=f"`{name}` must be a finite number > 0"):
        check_sam_stepsizes(**kwargs)


def test_bad_types():
    with pytest.raises(TypeError, match="`eta` must be a real number"):
        check_sam_stepsizes("0.75", 0.6)
    with pytest.raises(TypeError, match="`omega` must be a real number"):
        check_sam_stepsizes(0.75, 0.6, omega=None)
