"""Random number generator handling (SPEC 7).

Every stochastic function in the package takes one keyword, ``rng``, which is
normalised here at the public boundary.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["as_generator", "replication_generators", "seed_sequence"]

RngLike = int | np.random.Generator | np.random.SeedSequence | None


def as_generator(rng: RngLike, *, name: str = "rng") -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``rng``.

    Parameters
    ----------
    rng : int, numpy.random.Generator, numpy.random.SeedSequence or None
        A seed, an existing generator (returned as is) or None (fresh entropy).

    Raises
    ------
    TypeError
        If ``rng`` is of another type (a float seed, a legacy ``RandomState``).
    """
    if rng is None or isinstance(rng, (np.random.Generator, np.random.SeedSequence)):
        return np.random.default_rng(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"`{name}` must be a non-negative integer seed; got {rng}")
        return np.random.default_rng(int(rng))
    raise TypeError(f"`{name}` must be an int seed, a numpy.random.Generator or None; got {type(rng).__name__}")


def seed_sequence(seed: int | np.random.SeedSequence | None, *, name: str = "seed") -> np.random.SeedSequence:
    """Return a :class:`numpy.random.SeedSequence` for an integer ``seed``.

    Raises
    ------
    TypeError
        If ``seed`` is not a non-negative int, a SeedSequence or None.
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None:
        return np.random.SeedSequence()
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed >= 0:
        return np.random.SeedSequence(int(seed))
    raise TypeError(f"`{name}` must be a non-negative int seed, a SeedSequence or a numpy Generator; got {seed!r}")


def replication_generators(
    rng, n_replications: int, *, start: int = 0, stop: int | None = None
) -> list[np.random.Generator]:
    """Generators for Monte Carlo replications ``start, ..., stop - 1``.

    With an int seed (or a SeedSequence), replication ``i`` always uses
    ``SeedSequence(seed).spawn(n_replications)[i]``, so a study gives the same numbers
    whether its replications run in one process or are split into chunks across
    processes or machines. A Generator spawns ``n_replications`` fresh children
    (``Generator.spawn``) on every call: reproducible from the generator's state, but
    chunks of one study must then be taken from a single call (use an int seed to split
    a study across processes).

    Parameters
    ----------
    rng : int, SeedSequence or numpy.random.Generator
        The study's seed or generator.
    n_replications : int
        Total number of replications R of the study.
    start, stop : int
        The chunk of replications wanted (default: all of them).

    Raises
    ------
    TypeError
        If ``rng`` is of another type.
    ValueError
        For a negative seed, R < 1 or a chunk outside [0, R].
    """
    if isinstance(n_replications, bool) or not isinstance(n_replications, numbers.Integral) or n_replications < 1:
        raise ValueError(f"`n_replications` must be a positive integer; got {n_replications!r}")
    stop = n_replications if stop is None else stop
    if not 0 <= start <= stop <= n_replications:
        raise ValueError(f"need 0 <= start <= stop <= n_replications; got start={start}, stop={stop}")
    if isinstance(rng, np.random.Generator):
        return rng.spawn(n_replications)[start:stop]
    children = seed_sequence(rng, name="rng").spawn(n_replications)[start:stop]
    return [np.random.default_rng(c) for c in children]
