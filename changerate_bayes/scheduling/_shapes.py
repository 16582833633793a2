"""Broadcasting of the scheduling functions' array arguments, with errors that name them."""

from __future__ import annotations

import numpy as np

__all__ = ["broadcast_together", "broadcast_weights"]


def broadcast_together(**arrays: np.ndarray) -> list[np.ndarray]:
    """The arrays (keyword: argument name) broadcast against each other, in order.

    Raises
    ------
    ValueError
        If they do not broadcast, naming every argument and its shape.
    """
    try:
        return list(np.broadcast_arrays(*arrays.values()))
    except ValueError:
        names = [f"`{name}`" for name in arrays]
        shapes = ", ".join(str(a.shape) for a in arrays.values())
        raise ValueError(
            f"{', '.join(names[:-1])} and {names[-1]} must broadcast together; got shapes {shapes}"
        ) from None


def broadcast_weights(w: np.ndarray, delta: np.ndarray, *, requirement: str) -> np.ndarray:
    """``weights`` ``w`` broadcast to the shape of ``change_rates`` ``delta`` (a read-only view).

    Raises
    ------
    ValueError
        If they do not broadcast: "`weights` must <requirement> `change_rates` <shape>; got <shape>".
    """
    try:
        return np.broadcast_to(w, delta.shape)
    except ValueError:
        raise ValueError(f"`weights` must {requirement} `change_rates` {delta.shape}; got {w.shape}") from None
