"""A crawl log already in memory as a pandas DataFrame."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._errors import CrawlLogError
from ._semantics import CrawlLog, build_log, check_digest_not_empty, compact_frame
from ._tabular import _plan, check_columns

__all__ = ["read_frame"]


def read_frame(
    frame,
    *,
    columns=None,
    change_from="auto",
    source="<dataframe>",
    rows=None,
    empty_ok: bool = False,
    time_kinds: dict | None = None,
) -> CrawlLog:
    """Read a crawl log held in a pandas DataFrame (one row per visit, in log order).

    Same columns, change rules, result and errors as :func:`read_csv`; "row" numbers in
    errors count the frame's rows from 1 (or are ``rows``, an int array of one number per
    row, e.g. the rows of the whole log a partition comes from). A boolean
    ``not_modified`` column (HTTP 304 / WARC revisit) is honoured if present, and rows whose
    ``signal`` column is 1 are signals, not visits: left out (:mod:`changerate_bayes.io._signals`).

    Parameters
    ----------
    frame : pandas.DataFrame
    columns, change_from
        As :func:`read_csv`.
    source : str, default "<dataframe>"
        Name used in error messages and in the audit.
    rows : array_like of int, optional
        Row numbers used in error messages.
    empty_ok : bool, default False
        Return a CrawlLog with ``history=None`` (and the audit) instead of raising
        when no page has two usable visits (a partition of a cluster run).
    time_kinds : dict, optional
        For a partition of a cluster run: naive and time-zone-aware times are not
        refused here but recorded into this dict (time column -> kind -> (row, value) of
        its first time), to be checked over the whole log
        (:func:`changerate_bayes.io._times.check_kinds`).

    Raises
    ------
    TypeError
        If ``frame`` is not a pandas DataFrame.
    CrawlLogError (a ValueError)
        As :func:`read_csv`, or for a frame without rows (unless ``empty_ok``).

    Examples
    --------
    >>> import pandas as pd
    >>> from changerate_bayes.io import read_frame
    >>> df = pd.DataFrame({"page": ["a", "a", "a", "b"],
    ...                    "fetch_time": ["2024-01-01T00:00Z", "2024-01-01T02:00Z", "2024-01-01T03:00Z",
    ...                                   "2024-01-01T00:00Z"],
    ...                    "changed": [0, 1, 0, 0]})
    >>> log = read_frame(df)
    >>> log.history.flat_changed.tolist(), log.audit.single_visit_pages
    ([1, 0], 1)
    """
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"`frame` must be a pandas DataFrame; got {type(frame).__name__}")
    mapping = check_columns(columns)
    if len(frame) == 0 and not empty_ok:
        raise CrawlLogError(f"{source}: no visits: the frame has no rows")
    plan, kind = _plan([str(c) for c in frame.columns], mapping, source=source, change_from=change_from)
    inv = {v: s for s, v in plan.items()}
    cols = list(plan.values()) + [
        c for c in ("not_modified", "signal") if c in frame.columns and c not in plan.values()
    ]
    std = frame[cols].rename(columns=inv)
    state = {} if time_kinds is None else {"defer": True, "kinds": time_kinds}
    part, labels = compact_frame(
        std,
        source=source,
        first_line=1,
        line_word="row",
        labels=pd.Index([], dtype=object),
        state=state,
        names=plan,
        lines=None if rows is None else np.asarray(rows, dtype=np.int64),
    )
    if kind == "digest":
        check_digest_not_empty(part, source=source, column=plan["digest"])
    return build_log(part, labels, change_from=kind, sources=(source,), empty_ok=empty_ok)
