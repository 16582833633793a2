"""The error raised for a malformed crawl log."""

from __future__ import annotations

__all__ = ["CrawlLogError", "where", "plain"]


class CrawlLogError(ValueError):
    """A crawl log that cannot be read: the message names the file, the line and the column."""


def where(source: str, line_word: str, line, column: str | None = None) -> str:
    """``"log.csv: line 12, column 'fetch_time'"``."""
    text = f"{source}: {line_word} {int(line)}"
    return text if column is None else f"{text}, column {column!r}"


def plain(value):
    """``value`` as the Python scalar a message should show: ``1704067``, not ``np.int64(1704067)``."""
    item = getattr(value, "item", None)
    if item is not None and type(value).__module__ == "numpy":
        return item()
    return value
