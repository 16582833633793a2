"""``changerate-bayes diagnose``: Poisson diagnostics of exact change times or of a crawl log."""

from __future__ import annotations

import re
import time
import warnings

import pandas as pd

from ..crawllog.report import crawl_diagnostics, diagnose_report
from ..diagnostics import poisson_gof
from ..io import STANDARD_COLUMNS, CrawlLogError, read_log
from ..report import check_output_dir
from ._common import (
    LOG_ROLES,
    add_columns_flag,
    fail,
    parse_columns,
    refuse_inputs_as_outputs,
    report_files,
    report_written,
    runs,
)

__all__ = ["register"]


#: columns whose presence makes the file a crawl log (visits), not a list of change times
CRAWL_COLUMNS = ("changed", "digest", "status")

#: the Python arguments behind this command's flags, for its error messages
FLAGS = {"n_resamples": "--n-resamples", "out_dir": "--report", "event_times": "EVENTS.csv", "window": "--window"}


def register(p) -> None:
    """Add the flags of ``diagnose`` to its parser ``p``."""
    p.description = (
        "Test the Poisson model on EVENTS.csv. Exact change times (a time column, ISO-8601 or "
        "numbers, and for many pages a 'page' column) get every test of changerate_bayes.diagnostics.poisson_gof. "
        "A crawl log (visits with a 'changed', 'digest' or 'status' column) is read as visits: the crawls that saw "
        "a change are tested on their crawl grid, and the crawl interval calibration P(I = 1 | τ) = 1 − e^(−Δτ) is "
        "tested per page; tests for exact times never run on crawl detections. Writes DIR/index.html and "
        "DIR/results.json (DIR from --report)."
    )
    p.add_argument("events", metavar="EVENTS.csv")
    p.add_argument("--time-column", default=None, help="column of the times (default: time, timestamp or fetch_time)")
    p.add_argument("--page-column", default="page", help="column of the pages, if any (default: page)")
    add_columns_flag(p, ("time", *LOG_ROLES), "page=url,time=ts (a crawl log: page=url,fetch_time=ts,digest=sha1)")
    p.add_argument(
        "--report", default="reports/diagnose", metavar="DIR", help="report folder (default: reports/diagnose)"
    )
    p.add_argument(
        "--max-pages", type=int, default=20, help="pages tested, those with most events or changes seen (default 20)"
    )
    p.add_argument("--n-resamples", type=int, default=199, help="Monte Carlo samples per p-value (default 199)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--window",
        nargs=2,
        metavar=("START", "END"),
        help="the observation window, in the times' unit (numbers, or ISO-8601 datetimes); it must hold every "
        "event. Without it the tests see only the span from the first to the last event, so a burst followed by "
        "a long quiet stretch looks regular; with it the gap CV (burstiness) takes the spacings from START to "
        "END. Exact change times only",
    )
    runs(p, _run, lambda args: [args.report])  # a failure removes the report folders it created, if empty


def _err(msg: str) -> int:
    return fail(msg, FLAGS)


def _columns(args, header: list) -> tuple[dict, bool]:
    """The role -> file column map (``--columns``, ``--time-column``, ``--page-column``)
    and whether the file is a crawl log."""
    mapping = parse_columns(args.columns, ("time", *STANDARD_COLUMNS)) or {}
    if args.time_column is not None:
        mapping.setdefault("time", args.time_column)
    mapping.setdefault("page", args.page_column)
    crawl = any(mapping.get(c, c) in header for c in CRAWL_COLUMNS)
    return mapping, crawl


def _run(args) -> int:
    t0 = time.perf_counter()
    try:
        refuse_inputs_as_outputs([args.events], [("--report", f) for f in report_files(args.report)])
        check_output_dir(args.report)
        if args.max_pages < 1:
            raise ValueError(f"--max-pages must be >= 1; got {args.max_pages}")
        if args.n_resamples < 19:  # poisson_gof's minimum: fewer cannot give a p-value below 0.05
            raise ValueError(f"--n-resamples must be >= 19; got {args.n_resamples}")
        header = list(pd.read_csv(args.events, dtype=str, nrows=0).columns)
        mapping, crawl = _columns(args, header)
        # a crawl log is read by read_log (its own errors); change times here, as text
        frame = None if crawl else pd.read_csv(args.events, dtype=str, keep_default_na=False)
    except (ValueError, OSError) as exc:
        return _err(str(exc))
    if crawl:
        if args.window is not None:
            return _err("--window applies to exact change times, not to a crawl log (visits)")
        return _run_crawl(args, mapping, header, t0)
    return _run_events(args, frame, mapping, t0)


def _report_goes_to(args) -> None:
    """Say where the report goes, once the input was read (an input error comes without it)."""
    print(f"the report goes to {args.report}/index.html (choose the folder with --report)")


def _tested_line(n_tested: int, n_pages: int, what: str) -> str:
    if n_tested < n_pages:
        return (
            f"tested the {n_tested} pages with most {what} of {n_pages} (--max-pages {n_tested}); the other "
            f"{n_pages - n_tested} pages are not detailed"
        )
    return f"tested all {n_pages} page(s)"


def _run_crawl(args, mapping: dict, header: list, t0: float) -> int:
    """A crawl log: crawl-grid tests of the detections and the interval calibration."""
    columns = {role: col for role, col in mapping.items() if role != "time"}
    if "time" in mapping:
        columns.setdefault("fetch_time", mapping["time"])
    elif "fetch_time" not in columns and "fetch_time" not in header:  # the time column as for change times
        found = next((c for c in ("time", "timestamp") if c in header), None)
        if found is not None:
            columns["fetch_time"] = found
    columns = {role: col for role, col in columns.items() if col != role}
    try:
        log = read_log(args.events, format="csv", columns=columns or None)
    except (CrawlLogError, ValueError) as exc:
        return _err(str(exc))
    _report_goes_to(args)
    print(log.audit.format())
    print(
        "a crawl log (it has a 'changed', 'digest' or 'status' column): each row is a visit, not a change. "
        "The visits that saw a change are tested on their crawl grid, and P(I = 1 | τ) = 1 − e^(−Δτ) is tested "
        "per page; tests for exact change times are not run on crawl detections."
    )
    rows = crawl_diagnostics(log, max_pages=args.max_pages, seed=args.seed, n_resamples=args.n_resamples)
    print(_tested_line(len(rows), len(log.page_ids), "changes seen"))
    for r in rows:
        print(
            f"{r['page']}: {r['visits']} visits, {r['detections']} changes seen, crawl step {r['step']:.3g} h; "
            f"rejected at 5% (Holm): {r['rejected']}; interval calibration p = {_p(r['calibration_p'])}"
        )
    html, payload = diagnose_report(
        rows, sources=[args.events], seed=args.seed, kind="crawl", n_pages=len(log.page_ids), started=t0
    )
    return report_written(args.report, html=html, results=payload)


def _p(p) -> str:
    return f"{p:.3g}" if isinstance(p, float) else str(p)


def _file_lines(text: str, lines) -> str:
    """``text`` with each "row i" of one page's times (0-based, as ``poisson_gof`` counts
    them) replaced by that time's line in the file, ``lines[i]``."""
    return re.sub(r"(?:`event_times` )?\brow (\d+)\b", lambda m: f"line {lines[int(m.group(1))]}", text)


def _run_events(args, frame, mapping: dict, t0: float) -> int:
    """Exact change times: every test of ``poisson_gof``."""
    col = mapping.get("time")
    if col is None:
        col = next((c for c in ("time", "timestamp", "fetch_time") if c in frame.columns), None)
    if col is None or col not in frame.columns:
        return _err(
            f"{args.events}: line 1: missing time column {mapping.get('time') or 'time'!r}; "
            f"the file has {list(frame.columns)} (choose one with --time-column or --columns time=COLUMN)"
        )
    if frame.empty:
        return _err(f"{args.events}: no rows")
    times = frame[col]
    blank = (times.str.strip() == "").to_numpy()
    if blank.any():
        return _err(f"{args.events}: line {int(blank.argmax()) + 2}, column {col!r}: missing time")
    numeric = pd.to_numeric(times, errors="coerce")
    is_num = numeric.notna().to_numpy()
    if is_num.any() and not is_num.all():
        i, j = int(is_num.argmax()), int((~is_num).argmax())
        return _err(
            f"{args.events}: column {col!r} mixes numbers (line {i + 2}: {times.iloc[i]!r}) and "
            f"non-numbers (line {j + 2}: {times.iloc[j]!r}): give every time as a number or every "
            "time as an ISO-8601 datetime"
        )
    values = numeric if is_num.all() else times
    window = args.window
    if window is not None and is_num.all():
        try:
            window = [float(w) for w in window]
        except ValueError:
            return _err(f"--window takes two numbers for numeric times; got {' '.join(args.window)}")
    _report_goes_to(args)
    page_col = mapping["page"]
    has_pages = page_col in frame.columns
    pages = frame[page_col] if has_pages else pd.Series(["(all)"] * len(frame))
    counts = pages.value_counts(sort=True)
    order = counts.index[: args.max_pages]
    print(_tested_line(len(order), len(counts), "events"))
    results = []
    for page in order:  # each page is its own trace for poisson_gof
        sel = (pages == page).to_numpy()
        rows = frame.index[sel].to_numpy()
        vals = values[sel].to_list()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = poisson_gof(vals, n_resamples=args.n_resamples, rng=args.seed, window=window)
        except (ValueError, TypeError) as exc:
            text = _file_lines(str(exc), rows + 2)
            return _err(
                f"{args.events}: page {page!r} (lines {rows[0] + 2}..{rows[-1] + 2} of the file), column "
                f"{col!r}: {text}"
            )
        results.append((page, res))
        if not any(r.ran for r in res.tests.values()):  # too few or degenerate: say so, not "rejected: none"
            print(f"{page}: {res.summary()}")
            continue
        rej = res.rejected(0.05)
        print(f"{page}: {res.n_events} events; rejected at 5% (Holm): {', '.join(rej) if rej else 'none'}")
    html, payload = diagnose_report(results, sources=[args.events], seed=args.seed, n_pages=len(counts), started=t0)
    return report_written(args.report, html=html, results=payload)
