"""``changerate-bayes estimate``: crawl logs in, one row of estimates per page out."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ._outputs import (check_writable_folder, output_lock, refuse_inputs_as_outputs, report_files, resolve_output,
                       write_table)

__all__ = ["register", "run"]


def register(sub) -> None:
    """Add the ``estimate`` parser to the sub-parsers ``sub``."""
    from changerate_bayes.estimators import METHODS
    from changerate_bayes.io import FORMATS

    from ._flags import LOG_ROLES, add_columns_flag

    p = sub.add_parser(
        "estimate",
        help="read crawl logs and estimate every page's change rate",
        description="Read crawl logs (CSV, Parquet, CDX, WARC or Open Terms Archive observations), print the "
        "audit of the rows read, and write one row per page: counts, first/last visit, the recommended change rate "
        "with its credible interval and how it was chosen (changes per day), and the optimal crawl interval.",
    )
    p.add_argument("logs", nargs="+", metavar="LOG", help="log files or folders of log files (read as one log; "
                   "a folder stands for every file under it, e.g. hive-style page_bucket=K/ folders)")
    p.add_argument("--format", default="auto", choices=FORMATS, help="log format (default: from the file names)")
    add_columns_flag(p, LOG_ROLES, "page=url,fetch_time=timestamp,digest=sha1")
    p.add_argument("--methods", nargs="+", default=[], choices=METHODS, metavar="METHOD",
                   help=f"further estimators to report beside the recommended rate, for comparison (any of "
                   f"{', '.join(METHODS)}; default: none)")
    p.add_argument("--all-estimators", action="store_true",
                   help="report all seven estimators beside the recommended rate (as --methods with all of them)")
    p.add_argument("--out", default="estimates.parquet", help="the per-page table, .parquet or .csv "
                   "(default: estimates.parquet)")
    p.add_argument("--report", metavar="DIR", help="also write a self-contained HTML report into DIR")
    p.add_argument("--budget", type=float, metavar="CRAWLS_PER_DAY",
                   help="crawls per day to allocate (default: the crawls per day the log shows)")
    p.add_argument("--level", type=float, default=0.9, help="credible interval probability (default 0.9)")
    p.add_argument("--ota-changed", choices=("filtered", "raw"), default=None,
                   help="Open Terms Archive logs: which change column is I_k (default: filtered)")
    p.add_argument("--page-key", choices=("url", "surt"), default="url",
                   help="CDX logs: name pages by their URL (default; as WARC logs do) or by the SURT key")
    p.add_argument("--engine", choices=("pandas", "dask"), default="pandas",
                   help="pandas (in process, default; CSV and Parquet logs without --report are reduced one "
                   "bucket of pages at a time, in memory bounded by the pages) or dask (one task per file; a "
                   "single CSV or Parquet file is read in blocks)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="dask scheduler address, e.g. tcp://10.0.0.5:8786 (default: a local cluster of 2 workers)")
    p.add_argument("--seed", type=int, default=0, help="seed of the report's Monte Carlo p-values")
    p.set_defaults(func=run)


#: the Python arguments behind this command's flags, for its error messages
FLAGS = {"budget": "--budget", "level": "--level", "methods": "--methods", "out_dir": "--report",
         "format": "--format", "ota_changed": "--ota-changed", "page_key": "--page-key", "paths": "LOG"}


def _err(msg: str) -> int:
    from ._flags import cli_message

    print(f"changerate-bayes: error: {cli_message(msg, FLAGS)}", file=sys.stderr)
    return 2


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
    from changerate_bayes.estimators import METHODS

    return tuple(METHODS) if args.all_estimators else tuple(dict.fromkeys(args.methods))


def _dask_table(args, fmt, files):
    from changerate_bayes._upstream import quiet_dask_logs

    from ._dask import dask_visits

    read = dask_visits(args, fmt, files)
    with quiet_dask_logs():
        return _dask_run(args, read.ddf, read.columns, read.change_from, read.files, fmt)


def _dask_run(args, ddf, columns, change, files, fmt):
    from changerate_bayes.cluster import estimate_files_dask, estimate_pages_dask

    from ._dask import dask_client

    with dask_client(args) as client:
        if files is not None:
            res = estimate_files_dask(files, format=fmt, columns=columns, methods=_methods(args), budget=args.budget,
                                      level=args.level, page_key=args.page_key, client=client)
        else:
            res = estimate_pages_dask(ddf, columns=columns, change_from=change, methods=_methods(args),
                                      budget=args.budget, level=args.level, source=", ".join(args.logs),
                                      npartitions=max(ddf.npartitions, 2), client=client)
        log = None  # read file by file, the busiest pages' visits are not gathered: no diagnostics
        if args.report and files is None:  # the busiest pages' visits, for their diagnostics
            from changerate_bayes.io import read_frame

            top = res.table.sort_values(["n_changes", "rate_per_day"], ascending=False).head(6)["page"]
            page_col = (columns or {}).get("page", "page")
            sub = ddf[ddf[page_col].isin(list(top))].compute()
            log = read_frame(sub.reset_index(drop=True), columns=columns, change_from=change)
        return res.table, res.audit, log


def _plan_line(attrs) -> str:
    """The printed line naming the crawl plan's policy and the pages held at the revisit bound."""
    policy = attrs.get("policy", "?")
    why = {"index_mean": " (the freshness index: it beat round robin in the replay of real pages at budgets from "
                         "the total change rate up)",
           "uniform": " (round robin: below the total change rate the index lost to it in the replay of real pages)",
           }.get(policy, "")
    line = f"crawl plan: {policy}{why}, {attrs.get('budget_per_day', float('nan')):.4g} crawls/day"
    n = int(attrs.get("n_at_revisit_bound", 0))
    if n:
        line += (f"; {n} page(s) would be crawled less often or never and get the revisit bound "
                 f"{attrs['max_interval_h']:.4g} h instead (column `at_revisit_bound`)")
    return line


def run(args) -> int:
    """Run ``estimate`` with parsed arguments ``args``; return the exit status.

    A failure removes the folders this run created for ``--out`` and ``--report`` if
    they are still empty, so that nothing is left behind.
    """
    from changerate_bayes.cli._folders import run_removing_new_folders

    return run_removing_new_folders(_run, args, [Path(args.out).parent, args.report])


def _run(args) -> int:
    import warnings

    from changerate_bayes.io import CrawlLogError, log_files, read_log
    from changerate_bayes.io._formats import common_format
    from changerate_bayes.io._tabular import _as_paths

    t0 = time.perf_counter()
    try:
        files, _ = log_files(args.logs)
        refuse_inputs_as_outputs(files, [("--out", args.out)]
                                 + [("--report", f) for f in (report_files(args.report) if args.report else [])])
        out = _check_out(args.out)
        if args.report:
            from changerate_bayes.report import check_output_dir

            check_output_dir(args.report)
        if args.budget is not None and not (args.budget > 0 and args.budget < float("inf")):
            raise ValueError(f"--budget must be > 0 crawls per day; got {args.budget}")
        from changerate_bayes.io import STANDARD_COLUMNS

        from ._flags import parse_columns

        args.column_map = parse_columns(args.columns, STANDARD_COLUMNS)
        _as_paths(files)  # each an existing file, none given twice
        fmt = args.format
        if fmt == "auto":
            fmt = common_format(files)
        if args.ota_changed is not None and fmt != "ota":
            raise ValueError(f"--ota-changed applies to Open Terms Archive logs (a CSV whose header holds "
                             f"changed_filtered and changed_raw); these logs are {fmt!r}")
        if args.column_map and fmt not in ("csv", "parquet", "auto"):
            raise ValueError(f"--columns maps the columns of CSV and Parquet logs; these logs are {fmt!r}")
    except (ValueError, OSError) as exc:
        return _err(str(exc))
    from changerate_bayes import estimate_pages

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if args.engine == "dask":
                table, audit, log = _dask_table(args, fmt, files)
            elif fmt in ("csv", "parquet") and not args.report:  # bucket by bucket: memory bounded by the pages
                from changerate_bayes import estimate_log

                res = estimate_log(files, format=fmt, columns=args.column_map, methods=_methods(args),
                                   budget=args.budget, level=args.level)
                table, audit, log = res.table, res.audit, None
            else:  # the report's diagnostics of the busiest pages need their visits
                log = read_log(files, format=fmt, ota_changed=args.ota_changed or "filtered",
                               columns=args.column_map, page_key=args.page_key)
                audit = log.audit
                table = estimate_pages(log, methods=_methods(args), budget=args.budget, level=args.level)
        except CrawlLogError as exc:
            return _err(str(exc))
        except ValueError as exc:
            return _err(str(exc))
    print(audit.format())
    print(_plan_line(table.attrs))
    print(f"note: {table.attrs['rate_rule']}")
    for msg in dict.fromkeys([*table.attrs.get("warnings", ()), *(str(w.message) for w in caught)]):
        print(f"note: {msg}")
    html = None
    if args.report:  # built before anything is written: a failure leaves no file behind
        from changerate_bayes.log_report import estimate_report, log_attribution

        html, results = estimate_report(table, audit, log=log, seed=args.seed,
                                        attribution=log_attribution(files, fmt), started=t0)
    with output_lock(resolve_output(out).parent):  # another run's table and report are never mixed with ours
        write_table(table, out)
        print(f"wrote {len(table)} pages to {out}")
        if html is not None:
            from changerate_bayes.report import write_report

            path = write_report(args.report, html=html, results=results)
            print(f"wrote the report {path}")
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0
