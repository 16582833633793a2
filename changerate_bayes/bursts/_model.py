"""The burst model's parameters: a two-state Markov-modulated Poisson process."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from .._validation import as_float_array

__all__ = ["BurstParameters", "check_scales", "DEFAULT_SCALES", "MAX_RATE"]

#: default per-page rate scales: one shared parameter set
DEFAULT_SCALES = (1.0,)


#: The largest rate accepted, per time unit: the filter multiplies two rates (and a rate by an
#: interval), which must stay finite.
MAX_RATE = 1e150


def _rate(x, name: str, *, positive: bool = False, limit: float | None = MAX_RATE) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"`{name}` must be a real number; got {type(x).__name__}")
    x = float(x)
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise ValueError(f"`{name}` must be {'> 0' if positive else '>= 0'} and finite; got {x!r}")
    if limit is not None and x > limit:
        raise ValueError(
            f"`{name}` must be <= {limit:g} per time unit (the filter multiplies two rates, which "
            f"must stay finite); got {x!r}: give the rates in a longer time unit"
        )
    return x


@dataclass(frozen=True)
class BurstParameters:
    """Rates of a two-state Markov-modulated Poisson process (MMPP), per time unit.

    A page is quiet (state 0) or busy (state 1); it changes at rate ``quiet_rate`` (λ0)
    or ``busy_rate`` (λ1) and switches quiet → busy at rate ``to_busy`` (q01) and busy →
    quiet at rate ``to_quiet`` (q10). All rates are per time unit of the crawl intervals
    (per hour when the intervals are in hours).

    Parameters
    ----------
    quiet_rate, busy_rate : float
        λ0 <= λ1, >= 0 and finite (λ0 = λ1 is a Poisson process of that rate).
    to_busy, to_quiet : float
        q01, q10 >= 0 and finite.

    Raises
    ------
    TypeError
        If a rate is not a real number.
    ValueError
        If a rate is negative, NaN, infinite or above :data:`MAX_RATE` (1e150), if
        ``busy_rate < quiet_rate``, or if all four rates are 0 (a page that neither
        changes nor switches state: no crawl history has a likelihood under it).

    Notes
    -----
    The stationary probability of the busy state is q01/(q01 + q10), the long-run change
    rate (λ0 q10 + λ1 q01)/(q01 + q10), and a busy spell lasts 1/q10 on average.

    References
    ----------
    W. Fischer and K. Meier-Hellstern, "The Markov-modulated Poisson process (MMPP)
    cookbook", Performance Evaluation 18(2), 1993, Sections 2-3.
    """

    quiet_rate: float
    busy_rate: float
    to_busy: float
    to_quiet: float

    def __post_init__(self):
        for name in ("quiet_rate", "busy_rate", "to_busy", "to_quiet"):
            object.__setattr__(self, name, _rate(getattr(self, name), name))
        if self.busy_rate < self.quiet_rate:
            raise ValueError(f"`busy_rate` must be >= `quiet_rate`; got {self.busy_rate!r} < {self.quiet_rate!r}")
        if self.busy_rate == 0 and self.to_busy == 0 and self.to_quiet == 0:
            raise ValueError(
                "`quiet_rate`, `busy_rate`, `to_busy` and `to_quiet` are all 0: a page that neither "
                "changes nor switches state is no burst model; give `busy_rate` or a switching rate > 0"
            )

    @property
    def busy_probability(self) -> float:
        """Stationary P(busy) = q01/(q01 + q10) (1/2 when neither switches)."""
        s = self.to_busy + self.to_quiet
        return self.to_busy / s if s > 0 else 0.5

    @property
    def mean_rate(self) -> float:
        """Long-run change rate, per time unit."""
        pb = self.busy_probability
        return (1.0 - pb) * self.quiet_rate + pb * self.busy_rate

    def scaled(self, factor: float) -> BurstParameters:
        """All four rates times ``factor`` (e.g. 24 turns per-hour rates into per-day rates).

        Raises
        ------
        ValueError
            If ``factor`` is not > 0 and finite.
        """
        f = _rate(factor, "factor", positive=True, limit=None)
        return BurstParameters(self.quiet_rate * f, self.busy_rate * f, self.to_busy * f, self.to_quiet * f)

    def as_tuple(self) -> tuple[float, float, float, float]:
        """(λ0, λ1, q01, q10)."""
        return (self.quiet_rate, self.busy_rate, self.to_busy, self.to_quiet)


def check_params(params) -> BurstParameters:
    if not isinstance(params, BurstParameters):
        raise TypeError(f"`params` must be a BurstParameters; got {type(params).__name__}")
    return params


def check_rates_per_page(params: BurstParameters, inv_time_scale: np.ndarray) -> tuple:
    """``params.as_tuple()``, once each rate divided by a page's ``time_scale`` is checked to stay <= MAX_RATE."""
    top = max(params.as_tuple()) * float(np.max(inv_time_scale, initial=0.0))
    if not top <= MAX_RATE:
        raise ValueError(
            f"`time_scale` is so small that a rate per page's time unit reaches {top:g}, above "
            f"{MAX_RATE:g} (the filter multiplies two rates); give `time_scale` in a larger unit"
        )
    return params.as_tuple()


def check_scales(scales) -> tuple[np.ndarray, np.ndarray]:
    """Scales (K,) > 0, distinct, and the uniform log prior over them."""
    if isinstance(scales, (bool, str, bytes)):
        raise TypeError(f"`scales` must be a sequence of numbers > 0; got {type(scales).__name__}")
    arr = np.atleast_1d(as_float_array(scales, name="scales", positive=True, ndim=(0, 1))).copy()
    if np.unique(arr).size != arr.size:
        raise ValueError(f"`scales` must be distinct; got {arr.tolist()}")
    return arr, np.full(arr.size, -math.log(arr.size))
