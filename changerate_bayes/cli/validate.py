"""``changerate-bayes validate``: run the validation studies and write the report."""

from __future__ import annotations

import argparse
import sys

from ..report import check_output_dir
from ._common import cli_message, new_folders, remove_if_empty

__all__ = ["register"]


def register(val) -> None:
    """Add the flags of ``validate`` to its parser ``val``."""
    from changerate_bayes.validation import STUDIES  # the studies' package: imported when the command runs

    val.description = (
        "Run the Monte Carlo and real-trace validation studies; write "
        "OUT/index.html (self-contained) and OUT/results.json."
    )
    val.epilog = "studies (for --only), in report order:\n" + "\n".join(f"  {name}" for name in STUDIES)
    val.formatter_class = argparse.RawDescriptionHelpFormatter
    size = val.add_mutually_exclusive_group()
    size.add_argument(
        "--quick",
        action="store_const",
        const="quick",
        dest="preset",
        help="small studies: about 2 minutes of wall time on 2 idle cores with numba's cache built "
        "(about 4 minutes of CPU), about 3 in a fresh clone (numba compiling cold)",
    )
    size.add_argument(
        "--full",
        action="store_const",
        const="full",
        dest="preset",
        help="the papers' scale: much longer (see the README's timings)",
    )
    val.set_defaults(preset="default", func=run)
    val.add_argument("--out", default="reports", help="output folder (default: reports/)")
    val.add_argument("--seed", type=int, default=20201, help="master seed (default: 20201)")
    val.add_argument(
        "--only",
        nargs="+",
        metavar="STUDY",
        help="run only these studies (names listed below); the report then says it is partial",
    )
    val.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        metavar="N",
        help="studies run at once in separate processes (default: all cores); the results do not depend on it",
    )


def run(args) -> int:
    """Run ``validate`` with parsed arguments ``args``; return the exit status.

    Ctrl-C stops the studies, prints one line, removes the output folder if this run
    created it and it is empty, and returns 130.
    """
    from changerate_bayes.validation import (  # the studies' package: imported when the command runs
        STUDIES,
        run_validation,
    )
    from changerate_bayes.validation.runner import default_jobs

    if args.seed < 0:
        print("changerate-bayes: error: --seed must be >= 0", file=sys.stderr)
        return 2
    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        print(f"changerate-bayes: error: --jobs must be >= 1; got {jobs}", file=sys.stderr)
        return 2
    if args.only:
        unknown = [s for s in args.only if s not in STUDIES]
        if unknown:
            print(f"changerate-bayes: error: unknown study {unknown}; choose from {list(STUDIES)}", file=sys.stderr)
            return 2
    created = new_folders([args.out])
    try:
        check_output_dir(args.out)
    except ValueError as exc:
        print(f"changerate-bayes: error: {cli_message(str(exc), {'out_dir': '--out'})}", file=sys.stderr)
        return 2
    try:
        run_validation(args.out, preset=args.preset, seed=args.seed, only=args.only, jobs=jobs)
    except KeyboardInterrupt:
        remove_if_empty(created)
        print("changerate-bayes: interrupted; no report written", file=sys.stderr, flush=True)
        return 130
    return 0
