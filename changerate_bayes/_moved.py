"""Old module paths kept as aliases of names that moved: each name warns, then resolves to its new home."""

from __future__ import annotations

import importlib
import warnings

__all__ = ["moved_names"]


def moved_names(old: str, new: dict):
    """``(__getattr__, __dir__)`` of the old module ``old`` whose names ``new`` maps to their new
    modules: reading a name issues one DeprecationWarning naming the new path, and returns the
    object itself (the same object as the new path's)."""

    def __getattr__(name):
        if name not in new:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(f"{old}.{name} is deprecated; use {new[name]}.{name}", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(new[name]), name)

    def __dir__():
        return sorted(new)

    return __getattr__, __dir__
