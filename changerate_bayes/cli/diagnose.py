"""``changerate-bayes diagnose``: Poisson diagnostics of exact change times."""

from __future__ import annotations

import sys

__all__ = ["register", "run"]


def register(sub) -> None:
    """Add the ``diagnose`` parser to the sub-parsers ``sub``."""
    p = sub.add_parser(
        "diagnose",
        help="test whether change times are a homogeneous Poisson process",
        description="Run changerate_bayes.diagnostics.poisson_gof on exact change times: a CSV with a time "
        "column (ISO-8601 or numbers) and, for many pages, a 'page' column. Writes DIR/index.html and "
        "DIR/results.json.",
    )
    p.add_argument("events", metavar="EVENTS.csv")
    p.add_argument("--time-column", default=None, help="column of the times (default: time, timestamp or fetch_time)")
    p.add_argument("--page-column", default="page", help="column of the pages, if any (default: page)")
    p.add_argument("--report", default="reports/diagnose", metavar="DIR", help="report folder")
    p.add_argument("--max-pages", type=int, default=20, help="pages tested, those with most events (default 20)")
    p.add_argument("--n-resamples", type=int, default=199, help="Monte Carlo samples per p-value (default 199)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=run)


def _err(msg: str) -> int:
    print(f"changerate-bayes: error: {msg}", file=sys.stderr)
    return 2


def run(args) -> int:
    """Run ``diagnose`` with parsed arguments ``args``; return the exit status.

    A failure removes the report folders this run created if they are still empty.
    """
    from changerate_bayes.cli._folders import run_removing_new_folders

    return run_removing_new_folders(_run, args, [args.report])


def _run(args) -> int:
    import warnings

    import pandas as pd

    from changerate_bayes.diagnostics import poisson_gof
    from changerate_bayes.log_report import diagnose_report
    from changerate_bayes.report import check_output_dir, write_report

    from changerate_bayes.cli._outputs import refuse_inputs_as_outputs, report_files

    try:
        refuse_inputs_as_outputs([args.events], [("--report", f) for f in report_files(args.report)])
        check_output_dir(args.report)
        if args.max_pages < 1 or args.n_resamples < 1:
            raise ValueError("--max-pages and --n-resamples must be >= 1")
        frame = pd.read_csv(args.events, dtype=str, keep_default_na=False)
    except (ValueError, OSError) as exc:
        return _err(str(exc))
    col = args.time_column
    if col is None:
        col = next((c for c in ("time", "timestamp", "fetch_time") if c in frame.columns), None)
    if col is None or col not in frame.columns:
        return _err(f"{args.events}: line 1: missing time column {args.time_column or 'time'!r}; "
                    f"the file has {list(frame.columns)} (choose one with --time-column)")
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
        return _err(f"{args.events}: column {col!r} mixes numbers (line {i + 2}: {times.iloc[i]!r}) and "
                    f"non-numbers (line {j + 2}: {times.iloc[j]!r}): give every time as a number or every "
                    "time as an ISO-8601 datetime")
    values = numeric if is_num.all() else times
    has_pages = args.page_column in frame.columns
    pages = frame[args.page_column] if has_pages else pd.Series(["(all)"] * len(frame))
    order = pages.value_counts(sort=True).index[: args.max_pages]
    results = []
    for page in order:  # each page is its own trace for poisson_gof
        sel = (pages == page).to_numpy()
        rows = frame.index[sel].to_numpy()
        vals = values[sel].to_list()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = poisson_gof(vals, n_resamples=args.n_resamples, rng=args.seed)
        except (ValueError, TypeError) as exc:
            text = str(exc)
            return _err(f"{args.events}: page {page!r} (rows {rows[0] + 2}..{rows[-1] + 2} of the file), column "
                        f"{col!r}: {text}")
        results.append((page, res))
        rej = res.rejected(0.05)
        print(f"{page}: {res.n_events} events; rejected at 5% (Holm): {', '.join(rej) if rej else 'none'}")
    html, payload = diagnose_report(results, sources=[args.events], seed=args.seed)
    path = write_report(args.report, html=html, results=payload)
    print(f"wrote the report {path}")
    return 0
