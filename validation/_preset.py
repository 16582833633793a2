"""Study presets and progress reporting."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

__all__ = ["Preset", "Progress", "PRESETS"]

PRESETS = ("quick", "default", "full")


@dataclass(frozen=True)
class Preset:
    """How big the studies are.

    ``"quick"``: CI and newcomer sized, the whole validation in under 5 minutes on 2 cores.
    ``"default"``: larger, a few more minutes. ``"full"``: the papers' scale, under 20 minutes.
    Each study keeps its own table of sizes per preset.
    """

    name: str = "default"

    def __post_init__(self):
        if self.name not in PRESETS:
            raise ValueError(f"`name` must be one of {PRESETS}; got {self.name!r}")

    def pick(self, *, quick, default, full):
        """The value for this preset."""
        return {"quick": quick, "default": default, "full": full}[self.name]


@dataclass
class Progress:
    """Prints timestamped progress lines to a stream (stderr by default)."""

    stream: object = field(default_factory=lambda: sys.stderr)
    prefix: str = ""
    _t0: float = field(default_factory=time.perf_counter)
    quiet: bool = False

    def __call__(self, message: str) -> None:
        if not self.quiet:
            print(f"[{time.perf_counter() - self._t0:7.1f} s] {self.prefix}{message}", file=self.stream, flush=True)

    def child(self, prefix: str) -> "Progress":
        """A progress printer sharing this one's clock, with a prefix."""
        return Progress(stream=self.stream, prefix=prefix, _t0=self._t0, quiet=self.quiet)
