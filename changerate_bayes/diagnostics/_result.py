"""The result of one diagnostic test, and how its reading is worded."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["DiagnosticResult", "format_pvalue"]

_STATUSES = ("ok", "insufficient data", "not applicable")


@dataclass(frozen=True)
class DiagnosticResult:
    """One test of the Poisson assumption.

    Attributes
    ----------
    name : str
        Key of the test in :attr:`PoissonGOFResult.tests`, e.g. ``"laplace_trend"``.
    statistic : float or None
        The test statistic; None when the test could not be run (see ``status``).
    pvalue : float or None
        The p-value in [0, 1]; None when the test could not be run. Some p-values are
        bounded by a table (``details["pvalue_bound"]`` says which side).
    reading : str
        What the result says, in plain words.
    status : {"ok", "insufficient data", "not applicable"}
        Whether the test ran.
    details : Mapping
        Anything else the test yields (degrees of freedom, counts, estimates); a
        read-only mapping of JSON-able values.
    """

    name: str
    statistic: float | None
    pvalue: float | None
    reading: str
    status: str = "ok"
    details: Mapping = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in _STATUSES:
            raise ValueError(f"`status` must be one of {_STATUSES}; got {self.status!r}")
        if self.status == "ok":
            if self.pvalue is None or not (0.0 <= self.pvalue <= 1.0):
                raise ValueError(f"test {self.name}: `pvalue` must be in [0, 1]; got {self.pvalue}")
            if self.statistic is None or math.isnan(self.statistic):
                raise ValueError(f"test {self.name}: `statistic` must be a number; got {self.statistic}")
            object.__setattr__(self, "statistic", float(self.statistic))
            object.__setattr__(self, "pvalue", float(self.pvalue))
        elif self.statistic is not None or self.pvalue is not None:
            raise ValueError(f"test {self.name}: a test with status {self.status!r} has no statistic or p-value")
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def ran(self) -> bool:
        """True if the test ran (``status == "ok"``)."""
        return self.status == "ok"

    def rejects(self, alpha: float = 0.05) -> bool | None:
        """True if the p-value is <= ``alpha``; None if the test did not run."""
        if not self.ran:
            return None
        assert self.pvalue is not None  # a test that ran has a p-value (checked at construction)
        return bool(self.pvalue <= alpha)

    def to_dict(self) -> dict:
        """JSON-able ``{"statistic", "pvalue", "status", "reading"}`` (None for missing)."""
        stat = self.statistic
        if stat is not None and math.isinf(stat):
            stat = None
        return {"statistic": stat, "pvalue": self.pvalue, "status": self.status, "reading": self.reading}


def format_pvalue(p: float, bound: str | None = None) -> str:
    """``"p = 0.032"``, ``"p < 0.001"``; with a table ``bound`` ("upper"/"lower") the
    p-value is only known to be <= or >= the value shown."""
    if bound == "upper":
        return f"p <= {p:.3g} (table limit)"
    if bound == "lower":
        return f"p >= {p:.3g} (table limit)"
    if p < 0.001:
        return "p < 0.001"
    return f"p = {p:.3f}" if p < 0.1 else f"p = {p:.2f}"


def insufficient(name: str, why: str, **details) -> DiagnosticResult:
    """A result for a test that has too little data to run."""
    return DiagnosticResult(name, None, None, f"insufficient data: {why}", "insufficient data", details)


def not_applicable(name: str, why: str, **details) -> DiagnosticResult:
    """A result for a test that does not apply to these data."""
    return DiagnosticResult(name, None, None, f"not applicable: {why}", "not applicable", details)


def verdict_words(p: float, alpha: float, *, reject: str, keep: str, bound: str | None = None) -> str:
    """``"<p-value>: <reject or keep sentence>"``."""
    return f"{format_pvalue(p, bound)}: {reject if p <= alpha else keep}"
