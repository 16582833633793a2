"""``changerate-bayes schedule``: crawl logs in, the next fetch of every page out (CSV, Parquet or Nutch seeds)."""

from __future__ import annotations

import math
import os
import re
import sys
import time
from pathlib import Path

__all__ = ["register", "run"]

from ._outputs import refuse_inputs_as_outputs, resolve_output

_BY_SUFFIX = {".csv": "csv", ".parquet": "parquet"}


def register(sub) -> None:
    """Add the ``schedule`` parser to the sub-parsers ``sub``."""
    from changerate_bayes.crawl_schedule import MAX_INTERVAL_H, SCHEDULE_FORMATS
    from changerate_bayes.io import FORMATS

    from ._flags import LOG_ROLES, add_columns_flag

    p = sub.add_parser(
        "schedule",
        help="read crawl logs and write every page's next fetch (CSV, Parquet or a Nutch seed list)",
        description="Read crawl logs, share the crawl budget between the pages (the allocation of `estimate`), "
        "and write one row per page: the next fetch time (UTC, the last fetch plus the interval), the interval "
        "in hours, the page's recommended change rate (changes per day) and the probability that it will have "
        "changed by the next fetch. A page the allocation does not crawl, or crawls less often than "
        "--max-interval-h, is scheduled at --max-interval-h and marked interval_source=max_interval. "
        "--format nutch-seeds writes `url<TAB>nutch.fetchInterval.fixed=<seconds>` lines for Nutch's injector.",
    )
    p.add_argument("logs", nargs="+", metavar="LOG", help="log files (read as one log)")
    p.add_argument("--out", required=True, help="the schedule: .csv, .parquet, or any name with --format")
    p.add_argument("--format", choices=SCHEDULE_FORMATS, dest="out_format",
                   help="output format (default: from the --out extension, .csv or .parquet)")
    p.add_argument("--budget", type=float, metavar="CRAWLS_PER_DAY",
                   help="crawls per day to share (default: the crawls per day the log shows)")
    p.add_argument("--max-interval-h", type=float, default=MAX_INTERVAL_H, metavar="HOURS",
                   help=f"revisit limit in hours (default {MAX_INTERVAL_H:g}: 90 days, Nutch's "
                   "db.fetch.interval.max)")
    p.add_argument("--log-format", default="auto", choices=FORMATS, help="log format (default: from the file names)")
    add_columns_flag(p, LOG_ROLES, "page=url,fetch_time=timestamp,digest=sha1")
    p.add_argument("--page-key", choices=("url", "surt"), default="url",
                   help="CDX logs: name pages by their URL (default; as WARC logs do) or by the SURT key")
    p.add_argument("--ota-changed", choices=("filtered", "raw"), default="filtered",
                   help="Open Terms Archive logs: which change column is I_k (default: filtered)")
    p.add_argument("--engine", choices=("pandas", "dask"), default="pandas",
                   help="pandas (in process, default) or dask (one task per file for CDX, CDXJ, WARC and several "
                   "CSV or Parquet files; a single CSV or Parquet file, or OTA logs, read in blocks)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="dask scheduler address (default with --engine dask: a local cluster of 2 workers)")
    p.set_defaults(func=run)


#: the Python arguments behind this command's flags, for the library's error messages
FLAGS = {"budget": "--budget", "max_interval_h": "--max-interval-h", "format": "--log-format",
         "page_key": "--page-key", "paths": "LOG"}


def _err(msg: str) -> int:
    from ._flags import cli_message

    print(f"changerate-bayes: error: {cli_message(msg, FLAGS)}", file=sys.stderr)
    return 2


def _check_args(args, files) -> tuple[Path, str]:
    """The output path and format (``files``: the logs' files); ValueError naming the flag for any bad choice."""
    out = Path(args.out)
    if out.is_dir():
        raise ValueError(f"--out {args.out!r} is a folder")
    fmt = args.out_format
    if fmt is None:
        fmt = _BY_SUFFIX.get(out.suffix)
        if fmt is None:
            raise ValueError(f"--out {args.out!r}: end it in .csv or .parquet, or give --format "
                             "(csv, parquet or nutch-seeds)")
    elif out.suffix in _BY_SUFFIX and _BY_SUFFIX[out.suffix] != fmt:
        raise ValueError(f"--format {fmt} does not match --out {args.out!r} (a {_BY_SUFFIX[out.suffix]} name)")
    refuse_inputs_as_outputs(files, [("--out", args.out)])  # also through links
    out = resolve_output(out)  # a symbolic link at --out is written through
    if args.budget is not None and not (args.budget > 0 and math.isfinite(args.budget)):
        raise ValueError(f"--budget must be > 0 and finite (crawls per day); got {args.budget}")
    limit = args.max_interval_h
    if not (math.isfinite(limit) and limit * 3600 >= 1):
        raise ValueError(f"--max-interval-h must be finite and at least 1/3600 (one second); got {limit}")
    if fmt == "nutch-seeds" and round(limit * 3600) > 2**31 - 1:
        raise ValueError(f"--max-interval-h {limit:g} is beyond what Nutch reads (2^31 - 1 seconds, "
                         f"{(2**31 - 1) / 3600:.0f} h)")
    if args.scheduler and args.engine != "dask":
        raise ValueError("--scheduler needs --engine dask")
    return out, fmt


def _dask_schedule(args, fmt):
    from changerate_bayes.crawl_schedule import schedule_files_dask, schedule_pages_dask
    from changerate_bayes.io import log_files

    from ._dask import dask_client, dask_visits

    files, _ = log_files(args.logs)
    read = dask_visits(args, fmt, files)
    with dask_client(args) as client:
        if read.files is not None:  # one task per file
            return schedule_files_dask(read.files, format=fmt, columns=read.columns, change_from=read.change_from,
                                       page_key=args.page_key, budget=args.budget,
                                       max_interval_h=args.max_interval_h, client=client)
        return schedule_pages_dask(read.ddf, columns=read.columns, change_from=read.change_from, budget=args.budget,
                                   max_interval_h=args.max_interval_h, source=", ".join(args.logs),
                                   npartitions=max(read.ddf.npartitions, 2), client=client)


def run(args) -> int:
    """Run ``schedule`` with parsed arguments ``args``; return the exit status.

    A failure (Ctrl-C and SIGTERM included: :func:`changerate_bayes.cli.main` prints their
    one line) removes the folder this run created for ``--out`` if it is still empty.
    """
    from changerate_bayes.cli._folders import run_removing_new_folders

    return run_removing_new_folders(_run, args, [Path(args.out).parent])


def _run(args) -> int:
    import warnings

    from changerate_bayes.io import CrawlLogError, detect_format, log_files, read_log

    t0 = time.perf_counter()
    try:
        files, _ = log_files(args.logs)  # a folder stands for every file under it
        out, out_format = _check_args(args, files)
        from ._flags import LOG_ROLES, parse_columns

        args.column_map = parse_columns(args.columns, LOG_ROLES)
        fmt = args.log_format
        if fmt == "auto":
            kinds = {detect_format(p) for p in files}
            fmt = kinds.pop() if len(kinds) == 1 else "auto"
        if args.column_map and fmt not in ("csv", "parquet", "auto"):
            raise ValueError(f"--columns maps the columns of CSV and Parquet logs; these logs are {fmt!r}")
        out.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(out.parent, os.W_OK):
            raise ValueError(f"--out {args.out!r}: folder {str(out.parent)!r} is not writable")
    except (ValueError, OSError) as exc:
        return _err(str(exc))
    from changerate_bayes.crawl_schedule import schedule_pages, write_schedule

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if args.engine == "dask":
                schedule, audit = _dask_schedule(args, fmt)
            else:
                log = read_log(files, format=fmt, ota_changed=args.ota_changed, columns=args.column_map,
                               page_key=args.page_key)
                audit = log.audit
                schedule = schedule_pages(log, budget=args.budget, max_interval_h=args.max_interval_h)
        except (CrawlLogError, ValueError) as exc:
            return _err(str(exc))
    print(audit.format())
    for msg in dict.fromkeys(str(w.message) for w in caught):
        print(f"note: {msg}")
    a = schedule.attrs
    print(f"note: {a['rate_rule']}")
    if a["n_max_interval"]:
        print(f"note: {a['n_max_interval']} page(s) get no crawl (or a longer interval) from the allocation: "
              f"they are scheduled at the revisit limit, --max-interval-h {a['max_interval_h']:g} "
              "(interval_source=max_interval)")
    if a["n_revisit_bound"]:
        print(f"note: the allocation holds {a['n_revisit_bound']} page(s) at its revisit bound "
              "(interval_source=revisit_bound)")
    left_out = audit.single_visit_pages + audit.pages_without_usable_visit
    if left_out:
        print(f"note: {left_out} page(s) of the log are not in the schedule: {audit.single_visit_pages} with a "
              f"single usable visit (nothing to compare it with, so no change rate) and "
              f"{audit.pages_without_usable_visit} with none; give them their crawler's own first interval")
    print(f"budget {a['budget_per_day']:.6g} crawls/day; the schedule spends {a['crawls_per_day']:.6g}")
    try:
        path = write_schedule(schedule, out, format=out_format)
    except ValueError as exc:  # a URL Nutch cannot read back: the log's page, whatever its row in the schedule
        return _err(re.sub(r"^`schedule` row \d+: url ", "--format nutch-seeds: the log's page ", str(exc)))
    print(f"wrote the schedule of {len(schedule)} pages to {path} ({out_format})")
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0
