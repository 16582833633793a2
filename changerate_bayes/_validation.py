"""Small input-validation helpers used at the public boundary.

Messages name the argument, the rule and what was seen, e.g.
"`intervals` must be > 0; got 0.0 at index 17".
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable

import numpy as np

__all__ = [
    "StatisticalWarning",
    "as_float_array",
    "check_at_least",
    "check_choice",
    "check_finite_real",
    "check_open_unit",
    "check_positive_scalar",
    "check_positive_int",
    "check_real",
    "first_bad_index",
    "page_vector",
]


class StatisticalWarning(UserWarning):
    """A statistical caveat: the result is computed but should be read with care."""


def first_bad_index(mask: np.ndarray) -> str:
    """Human-readable position of the first True entry of ``mask``."""
    idx = np.argwhere(np.asarray(mask))[0]
    return str(int(idx[0])) if idx.size == 1 else str(tuple(int(i) for i in idx))


def as_float_array(
    x,
    *,
    name: str,
    positive: bool = False,
    nonnegative: bool = False,
    finite: bool = True,
    ndim: Iterable[int] | None = None,
    allow_empty: bool = False,
) -> np.ndarray:
    """Convert ``x`` to a float64 array and check it.

    Raises
    ------
    TypeError
        If ``x`` is not numeric (strings, objects, booleans are refused).
    ValueError
        If a value is NaN/inf (when ``finite``), <= 0 (when ``positive``), < 0 (when
        ``nonnegative``), the number of dimensions is not allowed, or it is empty.
    """
    try:
        arr = np.asarray(x)
    except ValueError:  # ragged nested sequences
        raise ValueError(f"`{name}` must be a rectangular numeric array (rows of equal length)") from None
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise TypeError(f"`{name}` must be numeric; got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if ndim is not None and arr.ndim not in tuple(ndim):
        raise ValueError(f"`{name}` must have {' or '.join(map(str, ndim))} dimension(s); got shape {arr.shape}")
    if arr.size == 0 and not allow_empty:
        raise ValueError(f"`{name}` must not be empty")
    if finite:
        bad = ~np.isfinite(arr)
        if bad.any():
            raise ValueError(f"`{name}` must be finite; got {arr[bad].flat[0]} at index {first_bad_index(bad)}")
    else:
        bad = np.isnan(arr)
        if bad.any():
            raise ValueError(f"`{name}` must not be NaN; got NaN at index {first_bad_index(bad)}")
    if positive:
        bad = ~(arr > 0)
        if bad.any():
            raise ValueError(f"`{name}` must be > 0; got {arr[bad].flat[0]} at index {first_bad_index(bad)}")
    if nonnegative:
        bad = ~(arr >= 0)
        if bad.any():
            raise ValueError(f"`{name}` must be >= 0; got {arr[bad].flat[0]} at index {first_bad_index(bad)}")
    return arr


def page_vector(
    x, n: int, *, name: str, binary: bool = False, positive: bool = False, nonnegative: bool = False
) -> np.ndarray:
    """``x`` as one contiguous value per page, shape ``(n,)``; a scalar is repeated.

    With ``binary``, the values must be 0/1 numbers or booleans and a bool array is
    returned; otherwise a finite float64 array, checked as :func:`as_float_array` does.

    Raises
    ------
    TypeError
        If ``binary`` values are not numbers or booleans, or other values are not numeric.
    ValueError
        If a ``binary`` value is not 0 or 1, a value breaks :func:`as_float_array`'s checks,
        or the shape is neither a scalar nor ``(n,)``.
    """
    if binary:
        arr = np.asarray(x)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"`{name}` must hold 0/1 numbers or booleans; got dtype {arr.dtype}")
        bad = (arr != 0) & (arr != 1)
        if np.any(bad):
            raise ValueError(f"`{name}` must be 0 or 1; got {arr[bad].flat[0]!r}")
        arr = arr.astype(bool)
    else:
        arr = as_float_array(x, name=name, positive=positive, nonnegative=nonnegative, ndim=(0, 1))
    if arr.ndim == 0:
        arr = np.full(n, arr.item(), dtype=arr.dtype)
    if arr.shape != (n,):
        raise ValueError(f"`{name}` must have shape ({n},) (one value per page); got {arr.shape}")
    return np.ascontiguousarray(arr)


def check_real(x, *, name: str, what: str = "a real number"):
    """Return ``x`` unchanged after checking it is a real number (not a bool); the
    TypeError says ``name`` must be ``what``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"`{name}` must be {what}; got {type(x).__name__}")
    return x


def check_finite_real(x, *, name: str, rule: str = "finite") -> float:
    """Return ``x`` as a float after checking it is a finite real number; the ValueError
    says ``name`` must be ``rule``."""
    x = float(check_real(x, name=name))
    if not math.isfinite(x):
        raise ValueError(f"`{name}` must be {rule}; got {x}")
    return x


def check_positive_scalar(x, *, name: str, allow_inf: bool = False) -> float:
    """Return ``x`` as a float after checking it is a real number > 0."""
    check_real(x, name=name)
    try:
        x = float(x)
    except OverflowError:  # a Python int beyond the float range
        raise ValueError(f"`{name}` must be a finite number > 0; got an integer too large for a float") from None
    if np.isnan(x) or x <= 0 or (np.isinf(x) and not allow_inf):
        raise ValueError(f"`{name}` must be a finite number > 0; got {x}")
    return x


def check_at_least(x, *, name: str, minimum: float) -> float:
    """Return ``x`` as a float after checking it is a finite real number >= ``minimum`` (a
    ValueError otherwise, also for a bool or a value that is not a number)."""
    real = isinstance(x, numbers.Real) and not isinstance(x, bool)
    if not (real and math.isfinite(x) and x >= minimum):
        raise ValueError(f"`{name}` must be a finite number >= {minimum:g}; got {x!r}")
    return float(x)


def check_open_unit(x, *, name: str) -> float:
    """Return ``x`` as a float after checking it is a real number in (0, 1) (a probability
    such as a credible level)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"`{name}` must be a real number in (0, 1); got {type(x).__name__}")
    if not 0 < x < 1:
        raise ValueError(f"`{name}` must be in (0, 1); got {x!r}")
    return float(x)


def check_positive_int(x, *, name: str, minimum: int = 1) -> int:
    """Return ``x`` as an int after checking it is an integer >= ``minimum``."""
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"`{name}` must be an integer; got {type(x).__name__}")
    if x < minimum:
        raise ValueError(f"`{name}` must be >= {minimum}; got {x}")
    return int(x)


def check_choice(x, *, name: str, choices: Iterable[str]) -> str:
    """Check that ``x`` is one of the strings ``choices``."""
    choices = tuple(choices)
    if not isinstance(x, str):
        raise TypeError(f"`{name}` must be one of {choices}; got {type(x).__name__}")
    if x not in choices:
        raise ValueError(f"`{name}` must be one of {choices}; got {x!r}")
    return x
