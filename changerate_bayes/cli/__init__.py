"""Command-line interface: ``changerate-bayes``.

Each sub-command lives in a module of this package that defines ``register(parser)``:
it adds its flags to the sub-command's parser and sets ``func``, a callable taking the
parsed arguments and returning the exit status. Only the module of the sub-command that
runs is imported (``--version`` and ``--help`` import none).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .._upstream import silence_harmless_upstream_output
from .._version import __version__
from ._signals import interrupted, stop_on_signals

__all__ = ["COMMANDS", "main"]

# Sub-command modules of this package and their one-line help, in the order ``--help`` lists them.
COMMANDS: dict[str, str] = {
    "validate": "run the validation studies and write an HTML report",
    "estimate": "read crawl logs and estimate every page's change rate",
    "schedule": "read crawl logs and write every page's next fetch (CSV, Parquet or a Nutch seed list)",
    "diagnose": "test whether changes are a homogeneous Poisson process",
    "replay": "replay real change times under crawl policies and a crawl budget",
}


def _parser(argv=None) -> argparse.ArgumentParser:
    """The parser; only the sub-command named in ``argv`` (default ``sys.argv[1:]``) gets its flags."""
    parser = argparse.ArgumentParser(
        prog="changerate-bayes",
        description="Estimate how often web pages change, and validate the estimators.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    words = sys.argv[1:] if argv is None else list(argv)
    running = next((w for w in words if not w.startswith("-")), None)
    for name, help in COMMANDS.items():
        p = sub.add_parser(name, help=help, add_help=name == running)  # argparse default: add_help=True
        if name == running:
            importlib.import_module(f"{__name__}.{name}").register(p)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``changerate-bayes`` command; returns the exit status.

    Ctrl-C or SIGTERM stops any command with one line on stderr and status 130; the
    commands write their files atomically and remove the empty folders they created, so
    nothing partial is left.
    """
    silence_harmless_upstream_output()
    with stop_on_signals():
        try:
            args = _parser(argv).parse_args(argv)
            return int(args.func(args))
        except KeyboardInterrupt:
            return interrupted("no partial output is left")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
