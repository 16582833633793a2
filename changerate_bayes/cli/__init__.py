"""Command-line interface: ``changerate-bayes``.

Each sub-command lives in a module of this package that defines
``register(subparsers)``: it adds its parser and sets ``func``, a callable taking the
parsed arguments and returning the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys

__all__ = ["main"]

# Sub-command modules of this package, in the order ``--help`` lists them.
_COMMANDS: tuple[str, ...] = (
    "validate",
    "estimate",
    "diagnose",
    "replay",
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="changerate-bayes",
        description="Estimate how often web pages change, and validate the estimators.",
    )
    from changerate_bayes import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in _COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(sub)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``changerate-bayes`` command; returns the exit status.

    Ctrl-C or SIGTERM stops any command with one line on stderr and status 130; the
    commands write their files atomically and remove the empty folders they created, so
    nothing partial is left.
    """
    from .._upstream import silence_harmless_upstream_output
    from ._flags import interrupted, stop_on_signals

    silence_harmless_upstream_output()
    with stop_on_signals():
        try:
            args = _parser().parse_args(argv)
            return int(args.func(args))
        except KeyboardInterrupt:
            return interrupted("no partial output is left")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
