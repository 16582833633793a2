"""``changerate-bayes replay``: replay your pages' change times under crawl policies and budgets."""

from __future__ import annotations

import contextlib
import datetime as _dt
import re
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from .._version import __version__
from ..crawllog import url_hosts
from ..replay import DEFAULT_POLICIES, at_search_bound, check_budgets, plot_freshness_budget, replay_policies
from ..report import check_output_dir, figure_to_html, html_table, render_page
from ._common import (
    add_columns_flag,
    add_host_flags,
    check_writable_folder,
    cli_message,
    host_caps,
    output_lock,
    parse_columns,
    refuse_inputs_as_outputs,
    report_files,
    report_written,
    resolve_output,
    runs,
    unknown_hosts_note,
    write_failed,
    write_table,
)

__all__ = ["register"]

#: The policies replayed with --signals when --policies is not given: round robin and
#: clairvoyant (the two ends of the gap), the paced references and the signal policies.
SIGNAL_DEFAULT_POLICIES = (
    "uniform",
    "paced_uniform",
    "paced_index_mean",
    "paced_oracle",
    "paced_on_signal",
    "paced_index_signals",
    "clairvoyant",
)


#: the columns replay reads, in CHANGES.csv and WINDOWS.csv
_ROLES = ("page", "timestamp", "start", "end")

#: the Python arguments behind this command's flags, for its error messages
FLAGS = {name: "--" + name.replace("_", "-") for name in ("budget", "policies", "step", "epoch", "n_boot")} | {
    "window": "--windows/--window",
    "changes": "CHANGES.csv",
    "signals": "--signals",
    "out_dir": "--report",
    "host_budgets": "--host-limit/--host-limits/--host-delay",
}


def register(p) -> None:
    """Add the flags of ``replay`` to its parser ``p``."""
    p.description = (
        "Replay the change times of CHANGES.csv (columns page,timestamp; plus start,end per page "
        "unless --windows or --window is given) under crawl policies with a budget of crawls per day; print "
        "the table of metrics and optionally write a self-contained HTML report."
    )
    p.add_argument("changes", metavar="CHANGES.csv", help="change times: columns page,timestamp[,start,end]")
    p.add_argument("--budget", type=float, nargs="+", required=True, metavar="B", help="crawls per day (one or more)")
    p.add_argument("--policies", nargs="+", metavar="POLICY", help="policy names (default: all the default ones)")
    win = p.add_mutually_exclusive_group()
    win.add_argument("--windows", metavar="WINDOWS.csv", help="observation windows: columns page,start,end")
    win.add_argument("--window", nargs=2, metavar=("START", "END"), help="one window for every page")
    p.add_argument(
        "--signals",
        metavar="SIGNALS.csv",
        help="change signals, CSV or Parquet (columns page,timestamp, the roles of --columns, or page,signal_time as estimate and schedule read them): each policy that reads them "
        "(paced_index_signals, paced_on_signal) sees a signal from the first step at or after it; prints each "
        "policy's share of the round-robin to clairvoyant gap with bootstrap intervals (default policies: "
        + ", ".join(SIGNAL_DEFAULT_POLICIES)
        + ")",
    )
    add_columns_flag(p, _ROLES, "page=url,timestamp=changed_at")
    p.add_argument("--step", default="1h", help="time step (default 1h)")
    p.add_argument("--epoch", default="1D", help="reallocation period of the budgeted policies (default 1D)")
    p.add_argument("--n-boot", type=int, default=200, help="bootstrap resamples of the pages (default 200)")
    p.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    add_host_flags(p, spacing=False)
    p.add_argument("--csv", metavar="OUT.csv", help="also write the table as CSV")
    p.add_argument("--report", metavar="DIR", help="write DIR/index.html and DIR/results.json")
    # a failure removes the folders this run created for --report and --csv if they are still empty
    runs(p, _run, lambda args: [args.report, Path(args.csv).parent if args.csv else None])


def _mapped(frame, column_map: dict):
    """``frame`` with the columns ``--columns`` names renamed to their roles (a role whose
    column this file lacks is left for the library's "lacks column" error)."""
    present = {role: col for role, col in column_map.items() if col in frame.columns}
    shadowed = [role for role, col in present.items() if role in frame.columns and role != col]
    return frame.drop(columns=shadowed).rename(columns={col: role for role, col in present.items()})


def _signals_table(path: str, column_map: dict) -> pd.DataFrame:
    """The --signals file (CSV, optionally compressed, or Parquet) as a table with the columns
    page and timestamp: a file in the signals format of ``estimate`` and ``schedule``
    (``page,signal_time[,source]``) is read as it is; row labels are the CSV's lines."""
    with open(path, "rb") as fh:
        parquet = fh.read(4) == b"PAR1"
    frame = _mapped(pd.read_parquet(path) if parquet else pd.read_csv(path), column_map)
    if "timestamp" not in frame.columns and "signal_time" in frame.columns:
        frame = frame.rename(columns={"signal_time": "timestamp"})
    frame.index = pd.RangeIndex(2, len(frame) + 2)
    return frame


def _file_lines(text: str, path: str, windows: str | None = None, signals: str | None = None) -> str:
    """``text`` with each "row N" of the changes table (labelled by file line) as "line N of PATH",
    each "row N of `window`" as "line N of WINDOWS" and each "row N of `signals`" as "line N of SIGNALS"."""
    if signals is not None:
        text = re.sub(r"\brow (\d+) of `signals`", lambda m: f"line {m.group(1)} of {signals}", text)
    if windows is not None:
        text = re.sub(r"\brow (\d+) of `window`", lambda m: f"line {m.group(1)} of {windows}", text)
    text = text.replace("`window` start", "--window START").replace("`window` end", "--window END")
    return re.sub(r"\brow (\d+)\b(?! of `window`)", lambda m: f"line {m.group(1)} of {path}", text)


def _bound_notes(df) -> list[str]:
    """A note for each tuned schedule whose increase rate stopped at an end of the
    bisection's range: its budget was not matched inside the search, whatever
    within_budget says."""
    if "inc_rate" not in df.columns:
        return []
    return [
        f"{r.policy} at {r.budget:g} crawls/day: the increase rate stopped at the search's bound "
        f"({r.inc_rate:.3g}), so the budget is not matched (it spends {r.crawls_per_day:.3g} crawls/day, "
        f"freshness {r.freshness:.3g}): read within_budget as not tuned"
        for r in df.itertuples()
        if at_search_bound(r.inc_rate)
    ]


def _url_hosts(changes, windows) -> dict:
    """The host name (lower case) of every page of CHANGES.csv and the windows, from its URL."""
    pages = [changes["page"]] if "page" in changes.columns else []
    if isinstance(windows, pd.DataFrame) and "page" in windows.columns:
        pages.append(windows["page"])
    if not pages:
        return {}
    names = pd.Series(pd.unique(pd.concat(pages, ignore_index=True).astype(str)))
    hosts = url_hosts(names, errors="coerce")
    bad = pd.isna(hosts)
    if bad.any():
        raise ValueError(
            f"--host-limit/--host-limits/--host-delay: page {names[bad].iloc[0]!r} is not a URL with a host name "
            f"({int(bad.sum())} pages without one); a page's host is its URL's host name"
        )
    return dict(zip(names, hosts))


def _window_value(x: str):
    try:
        return float(x)
    except ValueError:
        return x


def _report_html(df, *, source: str, args, seconds: float) -> str:
    import matplotlib.pyplot as plt  # optional dependency, heavy: imported when a report is written

    fig, ax = plt.subplots(figsize=(8, 4.5))
    plot_freshness_budget(df, ax=ax)
    cols = [
        c
        for c in (
            "policy",
            "budget",
            "budget_source",
            "inc_rate",
            "freshness",
            "freshness_lo",
            "freshness_hi",
            "freshness_weighted",
            "mean_age_days",
            "crawls_per_day",
            "within_budget",
            "detected_per_crawl",
            "vs_oracle",
            "vs_oracle_lo",
            "vs_oracle_hi",
        )
        if c in df.columns
    ]
    records = [
        {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()} for r in df[cols].to_dict("records")
    ]
    body = (
        f"<p>Replay of {source} with {args.step} steps and reallocation every {args.epoch}; budgets in crawls "
        "per day. Freshness: fraction of page-time the copies equalled the live pages; intervals: bootstrap "
        f"over resampled pages ({args.n_boot} resamples).</p>"
        + (
            f"<p>Per-host caps: {caps.words()} (a page's host is its URL's host name); every policy's crawls "
            "went through a queue per host, and a crawl over the cap waited for room.</p>"
            if (caps := host_caps(args))
            else ""
        )
        + str(figure_to_html(fig, alt="Freshness against crawls per day for each policy"))
        + str(html_table(records, cols, caption="Metrics per policy and budget"))
    )
    meta = {
        "preset": "replay",
        "seed": args.seed,
        "total_seconds": seconds,
        "version": __version__,
        "generated": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "versions": {"numpy": np.__version__, "pandas": pd.__version__},
    }
    return render_page(
        title=f"Crawl replay: {source}",
        sections=[{"id": "replay", "title": "Replay", "html": body, "seconds": seconds}],
        meta=meta,
    )


def _print_gap_shares(df, added) -> None:
    """Print each policy's share of the gap from round robin to clairvoyant, with its interval."""
    cols = [
        c for c in ("policy", "budget", "freshness_weighted", "gap_share", "gap_share_lo", "gap_share_hi") if c in df
    ]
    if "gap_share" not in df:
        return
    print()
    print("share of the freshness gap from round robin (uniform) to clairvoyant, paired page bootstrap:")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(df.loc[df["gap_share"].notna(), cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    if added:
        print(f"note: {' and '.join(added)} added to --policies: the two ends of the gap")


def _run(args) -> int:
    def fail(msg):
        if "lacks column" in msg and not args.columns:
            msg += " (map yours with --columns, e.g. --columns page=url,timestamp=changed_at)"
        print(f"changerate-bayes replay: error: {cli_message(msg, FLAGS)}", file=sys.stderr)
        return 2

    try:
        refuse_inputs_as_outputs(
            [args.changes, args.windows, args.signals],
            [("--csv", args.csv)] + [("--report", f) for f in (report_files(args.report) if args.report else [])],
        )
    except ValueError as exc:
        return fail(str(exc))
    try:
        column_map = parse_columns(args.columns, _ROLES) or {}
    except ValueError as exc:
        return fail(str(exc))
    try:  # before any input is read or output made
        check_budgets(args.budget)
        caps = host_caps(args)
    except ValueError as exc:
        return fail(str(exc))
    if args.report:
        try:
            check_output_dir(args.report)
        except (TypeError, ValueError) as exc:
            return fail(str(exc))
    csv_out = None
    if args.csv:
        csv_out = Path(args.csv)
        if csv_out.is_dir():
            return fail(f"--csv {args.csv!r} is a folder")
        try:
            csv_out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            return fail(f"--csv {args.csv!r}: folder {str(csv_out.parent)!r} cannot be created ({exc.strerror})")
        try:
            check_writable_folder("--csv", args.csv, resolve_output(csv_out).parent)
        except ValueError as exc:
            return fail(str(exc))
    reading = f"CHANGES.csv {args.changes!r}"  # the file an error is about
    try:
        changes = _mapped(pd.read_csv(args.changes), column_map)
        changes.index = pd.RangeIndex(2, len(changes) + 2)  # row labels = lines of the file, for the errors
        windows = None
        if args.windows:
            reading = f"--windows {args.windows!r}"
            windows = _mapped(pd.read_csv(args.windows), column_map)
            windows.index = pd.RangeIndex(2, len(windows) + 2)
        elif args.window:
            windows = tuple(_window_value(x) for x in args.window)
        signals = None
        if args.signals:
            reading = f"--signals {args.signals!r}"
            signals = _signals_table(args.signals, column_map)
    except pd.errors.EmptyDataError:
        return fail(f"{reading}: the file is empty (expected a CSV header line)")
    except (OSError, pd.errors.ParserError) as exc:
        return fail(f"{reading}: cannot be read: {exc}")
    except UnicodeDecodeError as exc:
        return fail(
            f"{reading}: not UTF-8 text ({exc.reason}: byte {exc.object[exc.start]:#04x}); re-encode it as UTF-8"
        )
    except ValueError as exc:
        return fail(str(exc))
    t0 = time.perf_counter()
    hosts = None
    if caps:
        try:
            hosts = _url_hosts(changes, windows)
        except ValueError as exc:
            return fail(str(exc))
    policies = args.policies or list(DEFAULT_POLICIES if signals is None else SIGNAL_DEFAULT_POLICIES)
    added = []
    if signals is not None:  # the two ends of the gap, for the gap shares
        added = [p for p in ("uniform", "clairvoyant") if p not in policies]
        policies = list(policies) + added
    try:
        df = replay_policies(
            changes,
            window=windows,
            budget=args.budget,
            policies=policies,
            step=args.step,
            epoch=args.epoch,
            n_boot=args.n_boot,
            rng=args.seed,
            hosts=hosts,
            host_budgets=caps.host_budgets,
            signals=signals,
        )
    except (TypeError, ValueError) as exc:
        return fail(_file_lines(str(exc), args.changes, args.windows, args.signals))
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(
            df[
                [
                    "policy",
                    "budget",
                    "budget_source",
                    "freshness",
                    "freshness_weighted",
                    "mean_age_days",
                    "crawls_per_day",
                    "within_budget",
                    "detected_per_crawl",
                ]
            ].to_string(index=False)
        )
    if signals is not None:
        _print_gap_shares(df, added)
    for note in _bound_notes(df):
        print(f"note: {note}")
    if caps:
        assert hosts is not None  # set with every cap
        print(
            f"note: {caps.words()}, over the {len(set(hosts.values()))} hosts of the pages: crawls over a host's cap waited in its "
            "queue, and budgets count the crawls ordered"
        )
        unknown = unknown_hosts_note(caps, set(hosts.values()))
        if unknown:
            print(f"note: {unknown}")
    html = None
    if args.report:  # built before anything is written: a failure leaves no file behind
        html = _report_html(df, source=args.changes, args=args, seconds=time.perf_counter() - t0)
        results = {
            "replay": [
                {k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
                for r in df.to_dict("records")
            ]
        }
    lock = output_lock(csv_out.parent) if csv_out is not None else contextlib.nullcontext()
    with lock:  # another run's table and report are never mixed with ours
        if csv_out is not None:
            try:
                write_table(df, csv_out)  # atomic: a temporary file, then a rename
            except OSError as exc:  # a full disk, a file system that refuses the write
                return write_failed("--csv", args.csv, exc)
        if html is not None:
            return report_written(args.report, html=html, results=results, done="report written to {}")
    return 0
