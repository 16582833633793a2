"""``changerate-bayes schedule``: crawl logs in, the next fetch of every page out (CSV, Parquet or Nutch seeds)."""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path

from ..crawllog import MAX_INTERVAL_H, SCHEDULE_FORMATS, schedule, write_schedule
from ..io import CrawlLogError, log_files
from ._common import (
    LOG_FLAGS,
    add_host_flags,
    add_log_flags,
    add_signals_flag,
    fail,
    host_caps,
    host_lines,
    host_note,
    log_arguments,
    longest_interval,
    no_host_message,
    plan_line,
    refuse_inputs_as_outputs,
    resolve_output,
    runs,
    signal_files,
    space_fetches,
    with_notes,
    write_failed,
)

__all__ = ["register"]

_BY_SUFFIX = {".csv": "csv", ".parquet": "parquet"}


def register(p) -> None:
    """Add the flags of ``schedule`` to its parser ``p``."""
    p.description = (
        'Read crawl logs, share the crawl budget between the pages (the allocation of `estimate`, "auto": the '
        "freshness index's mean form from a budget of the total estimated change rate up, round robin below, the "
        "fixed schedule the replay of real pages supports), "
        "and write one row per page: the next fetch time (UTC, the page's last fetch attempt in the log plus the interval), the interval "
        "in hours, the page's recommended change rate (changes per day) and the probability that it will have "
        "changed by the next fetch. A page the allocation does not crawl, or crawls less often than "
        "--max-interval-h, is scheduled at --max-interval-h and marked interval_source=max_interval. "
        "--format nutch-seeds writes `url<TAB>nutch.fetchInterval.fixed=<seconds>` lines for Nutch's injector."
    )
    add_log_flags(
        p,
        engine_help="pandas (in process) or dask (one task per file for CDX, CDXJ, WARC and several "
        "CSV or Parquet files; a single CSV or Parquet file, or OTA logs, read in blocks). Default: pandas",
        engines=("pandas", "dask"),
    )
    p.add_argument("--out", required=True, help="the schedule: .csv, .parquet, or any name with --format")
    p.add_argument(
        "--format",
        choices=SCHEDULE_FORMATS,
        dest="out_format",
        help="output format (default: from the --out extension, .csv or .parquet)",
    )
    p.add_argument(
        "--max-interval-h",
        type=float,
        default=MAX_INTERVAL_H,
        metavar="HOURS",
        help=f"revisit limit in hours (default {MAX_INTERVAL_H:g}: 90 days, Nutch's db.fetch.interval.max). "
        "The allocation has its own revisit bound, 4·N/B days (N pages, B the --budget), which is shorter on "
        "a small site with a large budget (7 pages at --budget 100: 6.7 h): the longest interval is the shorter "
        "of the two, and the printed crawl plan says which one set it",
    )
    add_host_flags(p, spacing=True)
    add_signals_flag(p)
    p.add_argument("--seed", type=int, default=0, help="seed of the signals' sampler (with signals; default 0)")
    runs(p, _run, lambda args: [Path(args.out).parent])


#: the Python arguments behind this command's flags, for the library's error messages
FLAGS = {"max_interval_h": "--max-interval-h", **LOG_FLAGS}


def _check_args(args, files) -> tuple[Path, str]:
    """The output path and format (``files``: the logs' files); ValueError naming the flag for any bad choice."""
    out = Path(args.out)
    if out.is_dir():
        raise ValueError(f"--out {args.out!r} is a folder")
    fmt = args.out_format
    if fmt is None:
        fmt = _BY_SUFFIX.get(out.suffix)
        if fmt is None:
            raise ValueError(
                f"--out {args.out!r}: end it in .csv or .parquet, or give --format (csv, parquet or nutch-seeds)"
            )
    elif out.suffix in _BY_SUFFIX and _BY_SUFFIX[out.suffix] != fmt:
        raise ValueError(f"--format {fmt} does not match --out {args.out!r} (a {_BY_SUFFIX[out.suffix]} name)")
    refuse_inputs_as_outputs(files + signal_files(args), [("--out", args.out)])  # also through links
    out = resolve_output(out)  # a symbolic link at --out is written through
    if args.budget is not None and not (args.budget > 0 and math.isfinite(args.budget)):
        raise ValueError(f"--budget must be > 0 and finite (crawls per day); got {args.budget}")
    limit = args.max_interval_h
    if not (math.isfinite(limit) and limit * 3600 >= 1):
        raise ValueError(f"--max-interval-h must be finite and at least 1/3600 (one second); got {limit}")
    if fmt == "nutch-seeds" and round(limit * 3600) > 2**31 - 1:
        raise ValueError(
            f"--max-interval-h {limit:g} is beyond what Nutch reads (2^31 - 1 seconds, {(2**31 - 1) / 3600:.0f} h)"
        )
    return out, fmt


def _run(args) -> int:
    t0 = time.perf_counter()
    try:
        files, _ = log_files(args.logs)  # listed once: the log is these files (a folder: every file under it)
        out, out_format = _check_args(args, files)
        log_args = log_arguments(args)
        caps = host_caps(args)
        out.parent.mkdir(parents=True, exist_ok=True)
        if not os.access(out.parent, os.W_OK):
            raise ValueError(f"--out {args.out!r}: folder {str(out.parent)!r} is not writable")
        res, notes = with_notes(
            schedule,
            files,
            host_budgets=caps.host_budgets,
            **log_args,
            max_interval_h=args.max_interval_h,
            **({"signals": signal_files(args)} if args.signals else {}),
            rng=args.seed,
        )
        table = space_fetches(res.schedule, caps)
    except (CrawlLogError, ValueError, OSError) as exc:
        return fail(no_host_message(str(exc)), FLAGS)
    audit = res.audit
    print(audit.format())
    if res.signal_audit is not None:
        print(res.signal_audit.format())
    for msg in notes:
        print(f"note: {host_note(msg)}")
    a = table.attrs
    plan = {
        "policy": a.get("policy"),
        "budget_per_day": a["budget_per_day"],
        "n_at_revisit_bound": a.get("n_revisit_bound", 0),
        "max_interval_h": a.get("revisit_bound_h"),
    }
    print(f"{plan_line(plan)}; {longest_interval(a)}")
    print(f"note: {a['rate_rule']}")
    if a["n_max_interval"]:
        print(
            f"note: {a['n_max_interval']} page(s) get no crawl (or a longer interval) from the allocation: "
            f"they are scheduled at the revisit limit, --max-interval-h {a['max_interval_h']:g} "
            "(interval_source=max_interval)"
        )
    if a["n_revisit_bound"]:
        print(
            f"note: the allocation holds {a['n_revisit_bound']} page(s) at its revisit bound "
            "(interval_source=revisit_bound)"
        )
    if a.get("n_host_cap_beyond_max"):
        print(
            f"note: the host caps hold {a['n_host_cap_beyond_max']} page(s) beyond --max-interval-h "
            f"{a['max_interval_h']:g}: they keep the interval their host's cap gives, as the crawler enforces "
            "the cap (interval_source=host_cap)"
        )
    if a.get("n_min_interval"):
        print(
            f"note: the allocation gives {a['n_min_interval']} page(s) less than half a second: they are "
            "scheduled at the shortest interval, 1 s (interval_source=min_interval)"
        )
    left_out = audit.single_visit_pages + audit.pages_without_usable_visit
    if left_out:
        print(
            f"note: {left_out} page(s) of the log are not in the schedule: {audit.single_visit_pages} with a "
            f"single usable visit (nothing to compare it with, so no change rate) and "
            f"{audit.pages_without_usable_visit} with none; give them their crawler's own first interval"
        )
    for line in host_lines(table, caps):
        print(line)
    print(f"budget {a['budget_per_day']:.6g} crawls/day; the schedule spends {a['crawls_per_day']:.6g}")
    if res.signal_audit is not None:
        print(
            f"signals: next fetch by fetch_trigger: on_signal {a['n_on_signal']}, index {a['n_index']}, both "
            f"{a['n_both']}; due now (at the log's end): {a['n_due_now']}"
        )
        print(
            f"signals: the budget counts index crawls; with signals the expected rate is "
            f"{a['crawls_per_day_with_signals']:.6g} crawls/day (Poisson signals at each page's q̂Δ̂ + ν̂; "
            "next fetch = last fetch + (interval_h - signals_since_last_visit * signal_jump_h) / (1 - signal_recall))"
        )
    try:
        path = write_schedule(table, out, format=out_format)
    except ValueError as exc:  # a URL Nutch cannot read back: the log's page, whatever its row in the schedule
        return fail(re.sub(r"^`schedule` row \d+: url ", "--format nutch-seeds: the log's page ", str(exc)), FLAGS)
    except OSError as exc:  # a full disk, a file system that refuses the write: the temporary file is removed
        return write_failed("--out", args.out, exc)
    print(f"wrote the schedule of {len(table)} pages to {path} ({out_format})")
    print(f"done in {time.perf_counter() - t0:.1f} s")
    return 0
