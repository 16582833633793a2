"""Study presets and progress reporting."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TextIO

__all__ = ["Preset", "Progress", "PRESETS"]

PRESETS = ("quick", "default", "full")


@dataclass(frozen=True)
class Preset:
    """How big the studies are.

    ``"quick"``: CI and newcomer sized, the whole validation in about 2 minutes of wall time
    on 2 cores with numba's cache built, about 5 in a fresh clone (numba compiling cold).
    ``"default"``: larger. ``"full"``: the papers' scale (see the README's timings).
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
    """Progress of a validation run: timestamped lines, and a bar on a terminal.

    Lines go to ``stream`` (stderr by default). :meth:`bar` shows a tqdm bar with an
    ETA when ``stream`` is a terminal (``bar="auto"``), and nothing more than the
    lines otherwise (a log file or a pipe gets plain lines, no control characters).

    Parameters
    ----------
    stream : file-like, default sys.stderr
    prefix : str, default ""
        Put before every line (see :meth:`child`).
    quiet : bool, default False
        Print nothing.
    bar_mode : {"auto", "on", "off"}, default "auto"
        Whether :meth:`bar` draws a bar: on a terminal only, always, or never.
    """

    stream: TextIO = field(default_factory=lambda: sys.stderr)
    prefix: str = ""
    _t0: float = field(default_factory=time.perf_counter)
    quiet: bool = False
    bar_mode: str = "auto"
    _active: list = field(default_factory=lambda: [None], repr=False)  # the open bar, shared with children

    def __post_init__(self):
        if self.bar_mode not in ("auto", "on", "off"):
            raise ValueError(f"`bar_mode` must be 'auto', 'on' or 'off'; got {self.bar_mode!r}")

    def __call__(self, message: str) -> None:
        if self.quiet:
            return
        line = f"[{time.perf_counter() - self._t0:7.1f} s] {self.prefix}{message}"
        bar = self._active[0]
        if bar is not None:
            bar.write(line, file=self.stream)  # printed above the bar, which is redrawn
        else:
            print(line, file=self.stream, flush=True)

    def child(self, prefix: str) -> Progress:
        """A progress printer sharing this one's clock and bar, with a prefix."""
        return Progress(
            stream=self.stream,
            prefix=prefix,
            _t0=self._t0,
            quiet=self.quiet,
            bar_mode=self.bar_mode,
            _active=self._active,
        )

    def draws_bar(self) -> bool:
        """True if :meth:`bar` draws a bar: ``bar_mode`` "on", or "auto" and a terminal."""
        if self.quiet or self.bar_mode == "off":
            return False
        if self.bar_mode == "on":
            return True
        try:
            return bool(self.stream.isatty())
        except (AttributeError, ValueError):  # no isatty, or a closed stream
            return False

    @contextmanager
    def bar(self, total: int, *, desc: str = "", unit: str = "study"):
        """Context manager yielding a bar with ``update(n)``; a no-op bar if none is drawn."""
        if not self.draws_bar():
            yield _NoBar()
            return
        from tqdm import tqdm  # tqdm: only for a bar on a terminal; keeps the command line's start light

        with tqdm(total=total, desc=desc, unit=unit, file=self.stream, dynamic_ncols=True, leave=True) as bar:
            self._active[0] = bar
            try:
                yield bar
            finally:
                self._active[0] = None


class _NoBar:
    """Stands in for a tqdm bar when none is drawn."""

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass
