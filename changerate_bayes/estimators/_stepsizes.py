"""Which convergence regime of Theorem 3 a choice of SAM stepsizes is in."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._validation import check_positive_scalar

__all__ = ["SAMStepsizeCheck", "check_sam_stepsizes"]

_REL = 1e-12  # relative tolerance for the boundaries η = 2β and η = β


@dataclass(frozen=True)
class SAMStepsizeCheck:
    """The regime of SAM stepsizes η_k = (k+1)^(−eta), β_k = (k+1)^(−beta).

    Attributes
    ----------
    eta, beta, omega : float
        The checked exponents and ω.
    regime : {"one-timescale", "two-timescale", "invalid"}
        The case of Theorem 3 the choice satisfies, or ``"invalid"``.
    condition : str
        In words: the condition that holds, or every condition that is violated.
    zeta_limit : float
        lim ζ_k: 1 when η > β, 1 − ω when η = β (Remark 7), −inf when η < β.
    """

    eta: float
    beta: float
    omega: float
    regime: str
    condition: str
    zeta_limit: float

    @property
    def valid(self) -> bool:
        """True when Theorem 3 guarantees z_k → Δ a.s."""
        return self.regime != "invalid"


def check_sam_stepsizes(eta, beta, omega=1.0) -> SAMStepsizeCheck:
    """Classify SAM stepsizes by the conditions of Theorem 3 (paper Remark 4).

    Parameters
    ----------
    eta : float
        Exponent of the main stepsize η_k = (k + 1)^(−eta), > 0.
    beta : float
        Exponent of β_k = (k + 1)^(−beta) in the momentum ζ_k = (β_k − ω η_k)/β_{k−1}, > 0.
    omega : float, default 1.0
        ω > 0.

    Returns
    -------
    SAMStepsizeCheck
        ``regime`` is ``"one-timescale"`` (η = 2β, β in (1/2, 1]), ``"two-timescale"``
        (β < η < 2β, β in (1/2, 1]) or ``"invalid"``, and ``condition`` says why.

    Raises
    ------
    ValueError
        If an argument is not a finite number > 0.
    TypeError
        If an argument is not a real number.

    Notes
    -----
    With γ_k = η_k/β_k, Theorem 3 needs Σβ_k = ∞ and Σβ_k² < ∞ (β in (1/2, 1]) and
    either β_k = γ_k (η = 2β, one timescale) or Σγ_k = ∞, Σγ_k² < ∞ and β_k/γ_k → 0
    (β < η < 2β, two timescales). Outside: η < β makes ζ_k → −∞ and the iterates race to
    infinity; η = β keeps γ_k = 1 and the momentum constant, ζ_k → 1 − ω (Remark 7);
    η > 2β makes z the fast iterate, γ_k/β_k → 0 (the reversed timescales of Remark 6,
    for which the paper's simulations suggest that the iterates race to infinity). The
    boundaries η = 2β and η = β are compared with a relative tolerance of 1e-12.

    References
    ----------
    Avrachenkov, Patil & Thoppe, "Online algorithms for estimating change rates of web
    pages", Theorem 3, Remarks 4, 6 and 7 (Remark 4 gives the two regimes, Remark 6 the
    reversed timescales, Remark 7 the constant momentum).

    Examples
    --------
    >>> from changerate_bayes import check_sam_stepsizes
    >>> check_sam_stepsizes(0.75, 0.6).regime
    'two-timescale'
    >>> check_sam_stepsizes(1.2, 0.6).regime
    'one-timescale'
    >>> print(check_sam_stepsizes(0.5, 0.6).condition)
    η = 0.5 < β = 0.6: γ_k = η_k/β_k → ∞ and ζ_k → −∞, the iterates race to infinity
    """
    eta = check_positive_scalar(eta, name="eta")
    beta = check_positive_scalar(beta, name="beta")
    omega = check_positive_scalar(omega, name="omega")
    e, b = f"η = {eta:g}", f"β = {beta:g}"
    on_2b = math.isclose(eta, 2 * beta, rel_tol=_REL)
    on_b = math.isclose(eta, beta, rel_tol=_REL)

    problems = []
    if beta <= 0.5:
        problems.append(f"{b} is not in (1/2, 1]: Σβ_k² = ∞")
    elif beta > 1:
        problems.append(f"{b} is not in (1/2, 1]: Σβ_k < ∞")
    if on_b:
        problems.append(
            f"{e} = β: γ_k = η_k/β_k = 1 does not vanish (Σγ_k² = ∞); the momentum ζ_k → 1 − ω = "
            f"{1 - omega:g} stays constant (Remark 7), outside Theorem 3"
        )
    elif eta < beta:
        problems.append(f"{e} < {b}: γ_k = η_k/β_k → ∞ and ζ_k → −∞, the iterates race to infinity")
    elif eta > 2 * beta and not on_2b:
        problems.append(
            f"{e} > 2β = {2 * beta:g}: β_k/γ_k → ∞, z becomes the fast iterate (the reversed "
            "timescales of Remark 6), outside Theorem 3"
        )
    zeta_limit = 1.0 - omega if on_b else (-math.inf if eta < beta else 1.0)
    if problems:
        return SAMStepsizeCheck(eta, beta, omega, "invalid", "; ".join(problems), zeta_limit)
    if on_2b:
        cond = f"{e} = 2β with {b} in (1/2, 1]: β_k = γ_k, one timescale (Theorem 3.1)"
        return SAMStepsizeCheck(eta, beta, omega, "one-timescale", cond, zeta_limit)
    cond = f"{b} < {e} < 2β = {2 * beta:g} with β in (1/2, 1]: β_k/γ_k → 0, two timescales (Theorem 3.2)"
    return SAMStepsizeCheck(eta, beta, omega, "two-timescale", cond, zeta_limit)
