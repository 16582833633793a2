"""``changerate-bayes estimate``: crawl logs in, one row of estimates per page out."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..crawllog import estimate
from ..crawllog.report import estimate_report, log_attribution
from ..estimators import METHODS
from ..io import CrawlLogError, log_files
from ..report import check_output_dir
from ._common import (
    LOG_FLAGS,
    LOG_FORMATS,
    add_host_flags,
    add_log_flags,
    add_signals_flag,
    check_writable_folder,
    fail,
    host_caps,
    host_lines,
    host_note,
    log_arguments,
    no_host_message,
    output_lock,
    plan_line,
    refuse_inputs_as_outputs,
    report_files,
    report_written,
    resolve_output,
    runs,
    signal_files,
    with_notes,
    write_failed,
    write_table,
)

__all__ = ["register"]


def register(p) -> None:
    """Add the flags of ``estimate`` to its parser ``p``."""
    p.description = (
        "Read crawl logs (CSV, Parquet, CDX, WARC or Open Terms Archive observations), print the "
        "audit of the rows read, and write one row per page: counts, first/last visit, the recommended "
        "change rate with its credible interval and how it was chosen (changes per day), and the optimal "
        "crawl interval."
    )
    add_log_flags(
        p,
        engine_help="pandas (in process, the whole log in memory), buckets (CSV and Parquet logs reduced "
        "one bucket of pages at a time, in memory bounded by the pages) or dask (one task per file; a single "
        "CSV or Parquet file is read in blocks). Default: buckets for CSV and Parquet logs without --report, "
        "dask with --scheduler, else pandas",
    )
    p.add_argument("--format", choices=LOG_FORMATS, dest="format_alias", help="deprecated: --log-format")
    p.add_argument(
        "--methods",
        nargs="+",
        default=[],
        choices=METHODS,
        metavar="METHOD",
        help=f"further estimators to report beside the recommended rate, for comparison (any of "
        f"{', '.join(METHODS)}; default: none)",
    )
    p.add_argument(
        "--all-estimators",
        action="store_true",
        help="report all seven estimators beside the recommended rate (as --methods with all of them)",
    )
    p.add_argument(
        "--out", default="estimates.parquet", help="the per-page table, .parquet or .csv (default: estimates.parquet)"
    )
    p.add_argument("--report", metavar="DIR", help="also write a self-contained HTML report into DIR")
    p.add_argument("--level", type=float, default=0.9, help="credible interval probability (default 0.9)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the report's Monte Carlo p-values and of the signals' sampler"
    )
    add_signals_flag(p)
    add_host_flags(p, spacing=False)
    runs(p, _run, lambda args: [Path(args.out).parent, args.report])


#: the Python arguments behind this command's flags, for its error messages
FLAGS = {"level": "--level", "methods": "--methods", "out_dir": "--report", **LOG_FLAGS}


def _check_out(path: str) -> Path:
    out = Path(path)
    if out.suffix not in (".parquet", ".csv"):
        raise ValueError(f"--out must end in .parquet or .csv; got {path!r}")
    if out.is_dir():
        raise ValueError(f"--out {path!r} is a folder")
    try:
        target = resolve_output(out)  # a symbolic link is written through
    except ValueError as exc:
        raise ValueError(f"--out {exc}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    check_writable_folder("--out", path, target.parent)
    return out


def _methods(args) -> tuple:
    """The estimators asked for beside the recommended rate: ``--all-estimators`` or ``--methods``."""
    return tuple(METHODS) if args.all_estimators else tuple(dict.fromkeys(args.methods))


def _run(args) -> int:
    t0 = time.perf_counter()
    if args.format_alias is not None:
        print("changerate-bayes estimate: note: --format is deprecated; use --log-format", file=sys.stderr)
        args.log_format = args.format_alias
    try:
        files, _ = log_files(args.logs)  # listed once: the log is these files
        refuse_inputs_as_outputs(
            files + signal_files(args),
            [("--out", args.out)] + [("--report", f) for f in (report_files(args.report) if args.report else [])],
        )
        out = _check_out(args.out)
        if args.report:
            check_output_dir(args.report)
        if args.budget is not None and not (args.budget > 0 and args.budget < float("inf")):
            raise ValueError(f"--budget must be > 0 crawls per day; got {args.budget}")
        caps = host_caps(args)
        res, notes = with_notes(
            estimate,
            files,
            host_budgets=caps.host_budgets,
            **log_arguments(args),
            methods=_methods(args),
            level=args.level,
            keep_log=bool(args.report),
            **({"signals": signal_files(args)} if args.signals else {}),
            rng=args.seed,
        )
    except (CrawlLogError, ValueError, OSError) as exc:
        return fail(no_host_message(str(exc)), FLAGS)
    table = res.table
    print(res.audit.format())
    if res.signal_audit is not None:
        print(res.signal_audit.format())
        print(
            "note: signal_recall is the share of a page's changes that its signals announce, signal_precision the "
            "share of its signals that are changes (posterior means and intervals at --level, Gibbs sampling under "
            "a prior pooled over the pages); n_signals counts the signals kept"
        )
    print(plan_line(table.attrs))
    print(f"note: {table.attrs['rate_rule']}")
    for msg in table.attrs.get("notes", ()):  # the pages whose rate the data bound on one side only
        print(f"note: {msg}")
    for msg in dict.fromkeys([*table.attrs.get("warnings", ()), *map(host_note, notes)]):
        print(f"note: {msg}")
    for line in host_lines(table, caps):
        print(line)
    html = None
    if args.report:  # built before anything is written: a failure leaves no file behind
        html, results = estimate_report(
            table, res.audit, log=res.log, seed=args.seed, attribution=log_attribution(files, res.format), started=t0
        )
    with output_lock(resolve_output(out).parent):  # another run's table and report are never mixed with ours
        try:
            write_table(table, out)
        except OSError as exc:  # a full disk, a file system that refuses the write: the temporary file is removed
            return write_failed("--out", args.out, exc)
        print(f"wrote {len(table)} pages to {out}")
        if html is not None and (status := report_written(args.report, html=html, results=results)):
            return status
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0
