"""The values of signal rows: the ``signal`` flag of a log's rows, and a signal's page and time.

The readers of crawl logs (:mod:`._semantics`) and of signals files (:mod:`._signals`) both
parse these; this module depends on neither.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._errors import CrawlLogError, plain, where
from ._times import parse_time_column

__all__ = ["signal_flags", "signal_frame"]

_TRUE = {"1", "true", "1.0"}
_FALSE = {"0", "false", "", "0.0"}


def signal_flags(values: pd.Series, *, source: str, column: str, lines, line_word: str) -> np.ndarray:
    """The ``signal`` column as booleans: 1/true a signal, 0/false or empty a visit.

    Raises
    ------
    CrawlLogError
        For any other value, naming the line and column.
    """
    if pd.api.types.is_bool_dtype(values.dtype):
        return values.fillna(False).to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(values.dtype):
        num = values.to_numpy(dtype=np.float64)
        bad = ~(np.isnan(num) | (num == 0) | (num == 1))
        yes = num == 1
    else:
        text = values.astype("string").str.strip().str.lower().fillna("")
        yes = text.isin(_TRUE).to_numpy(dtype=bool)
        bad = ~(yes | text.isin(_FALSE).to_numpy(dtype=bool))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CrawlLogError(
            f"{where(source, line_word, lines[i], column)}: a signal flag must be 0 or 1 (or true/false, or empty "
            f"for a visit); got {plain(values.iloc[i])!r}"
        )
    return np.asarray(yes, dtype=bool)


def signal_frame(rows: pd.DataFrame, *, source, page_col, time_col, lines, line_word, state):
    """(page labels, UTC ns) of the signal rows ``rows``, refusing missing pages and bad times by line.

    ``rows[page_col]`` and ``rows[time_col]`` are the rows' pages and times (the column
    names are those of the messages), ``lines`` their line (or row) numbers in ``source``,
    ``state`` the time parser's state across the chunks of one file.

    Raises
    ------
    CrawlLogError
        For a missing page or an unparsable or missing time, naming the line and column.
    """
    pages, times = rows[page_col], rows[time_col]
    blank = pages.isna().to_numpy(dtype=bool) | (pages.astype("string").str.strip() == "").fillna(True).to_numpy(
        dtype=bool
    )
    if blank.any():
        i = int(np.flatnonzero(blank)[0])
        raise CrawlLogError(f"{where(source, line_word, lines[i], page_col)}: missing page")
    ns = parse_time_column(
        times.reset_index(drop=True),
        source=source,
        column=time_col,
        lines=lines,
        line_word=line_word,
        required=True,
        state=state,
    )
    return pages.to_numpy(dtype=object), ns
