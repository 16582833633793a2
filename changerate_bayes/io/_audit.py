"""The audit of a crawl log: what was read, what was kept, and why rows were dropped."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

__all__ = ["Audit", "DROP_REASONS"]

#: Why a row of a log is not used, in the order the rules are applied.
DROP_REASONS: tuple[str, ...] = (
    "not_a_capture",  # WARC revisit of another profile; unparsable CDX capture kind
    "missing_status",  # status column present, value missing (not a 304/revisit)
    "failed_status",  # HTTP status >= 400, or not an HTTP status (< 100, fractional)
    "redirect",  # 3xx other than 304: the redirect's body, not the page's content
    "missing_digest",  # digests decide changes and this visit has none
    "missing_changed",  # the 0/1 ``changed`` column decides and is empty here
    "last_modified_unreliable",  # last_modified decides and the page's server reports the fetch time
    "missing_last_modified",  # last_modified decides and is missing or not before the fetch
    "duplicate",  # same page, same time as a visit kept before it
    "not_modified_before_reference",  # a 304/revisit before the page's first copy with a digest
)


class _DropCounts:
    """What an audit's ``dropped`` field offers: totals, a count by reason, a plain ``dict``.

    A subclass is a frozen dataclass with a ``dropped`` field of (reason, count) pairs in
    the order of its ``_reasons``.
    """

    _reasons: ClassVar[tuple[str, ...]]
    dropped: tuple

    @property
    def dropped_total(self) -> int:
        """Rows (visits, or signals in a :class:`SignalAudit`) dropped for any reason."""
        return int(sum(n for _, n in self.dropped))

    def dropped_by(self, reason: str) -> int:
        """Rows (or signals) dropped for ``reason``: one of :data:`DROP_REASONS` (:data:`SIGNAL_DROP_REASONS`).

        Raises
        ------
        ValueError
            If ``reason`` is not one of them.
        """
        table = dict(self.dropped)
        if reason not in table:
            raise ValueError(f"`reason` must be one of {list(self._reasons)}; got {reason!r}")
        return table[reason]

    def as_dict(self) -> dict:
        """Plain ``dict`` (JSON-ready): ``dropped`` becomes a mapping reason -> count."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]
        for name, value in out.items():
            if isinstance(value, tuple):
                out[name] = list(value)
        out["dropped"] = dict(self.dropped)
        out["dropped_total"] = self.dropped_total
        return out


@dataclass(frozen=True)
class Audit(_DropCounts):
    """What a reader did with every row of a crawl log.

    Every row read is accounted for once:
    ``rows_read == visits_kept + reference_visits + sum(dropped)``.

    Attributes
    ----------
    sources : tuple of str
        The files read (or ``"<dataframe>"``).
    change_source : str
        What decided "changed": ``"digest"``, ``"changed"`` or ``"last_modified"``.
    rows_read : int
        Visits (rows, CDX lines, WARC response/revisit records) read.
    pages : int
        Distinct pages among the rows read.
    pages_kept : int
        Pages with at least two usable visits: the pages of the history.
    visits_kept : int
        Observations in the history: usable visits after each page's first.
    reference_visits : int
        Each page's first usable visit (the reference copy, not an observation),
        including those of single-visit pages.
    dropped : tuple of (str, int)
        Rows not used, by reason (:data:`DROP_REASONS`, in that order; every reason
        listed, zeros included).
    out_of_order : int
        Rows earlier than the previous row of the same page in file order (they are
        sorted, not dropped).
    single_visit_pages : int
        Pages with exactly one usable visit (a reference copy and nothing to compare
        it with): reported, not in the history.
    pages_without_usable_visit : int
        Pages whose every row was dropped.
    last_modified_ignored : int
        ``last_modified`` values at or after their own fetch time (servers and sitemaps
        that always say "now"), ignored.
    truncated_records : int, default 0
        WARC records cut short by the end of their file (a download or copy that
        stopped early): dropped, not counted in ``rows_read``.
    truncated_files : tuple of str, default ()
        The files that end in such a record.
    records_without_page : int, default 0
        WARC response/revisit records without a ``WARC-Target-URI``: they belong to no
        page and are skipped, not counted in ``rows_read``.
    last_modified_unreliable_pages : int, default 0
        Pages whose ``last_modified`` is not used: on at least 3 of the successful
        visits that carry one, and at least 4 in 5 of them, it is no earlier than a
        minute before the fetch time (a server that reports "now"; rule 7 of
        :mod:`changerate_bayes.io._semantics`), or, where digests decide, it says
        "changed" while the content is the same on more than half of the visits where
        it says so. Where ``last_modified`` decides changes, the "now" pages' rows are
        dropped (``dropped`` reason ``last_modified_unreliable``: the rows affected),
        unless the log has a digest (or ETag) or ``changed`` column, which then decides
        their changes (``last_modified_fallback``); elsewhere the pages are kept and only
        their dates are set aside (no ``lm_rate``).
    last_modified_fallback : {"", "digest", "changed"}, default ""
        Where ``last_modified`` decides changes: the column that decides them instead on
        the pages of ``last_modified_unreliable_pages`` ("" if none, their rows dropped).
    """

    sources: tuple
    change_source: str
    rows_read: int
    pages: int
    pages_kept: int
    visits_kept: int
    reference_visits: int
    dropped: tuple
    out_of_order: int
    single_visit_pages: int
    pages_without_usable_visit: int
    last_modified_ignored: int
    truncated_records: int = 0
    truncated_files: tuple = ()
    records_without_page: int = 0
    last_modified_unreliable_pages: int = 0
    last_modified_fallback: str = ""

    _reasons: ClassVar[tuple[str, ...]] = DROP_REASONS

    def format(self) -> str:
        """A few lines of plain text, as the ``estimate`` command prints them."""
        lines = [
            f"read {self.rows_read} rows of {self.pages} pages from {len(self.sources)} file(s); "
            f"changes decided by {self.change_source}",
            f"kept {self.visits_kept} visits of {self.pages_kept} pages "
            f"(+ {self.reference_visits} reference copies: each page's first visit)",
            f"dropped {self.dropped_total} rows"
            + (": " + ", ".join(f"{r} {n}" for r, n in self.dropped if n) if self.dropped_total else ""),
            f"out-of-order rows sorted: {self.out_of_order}; single-visit pages: {self.single_visit_pages}; "
            f"pages with no usable visit: {self.pages_without_usable_visit}; "
            f"last_modified at/after fetch time ignored: {self.last_modified_ignored}",
        ]
        if self.truncated_records:
            lines.append(
                f"WARNING: {self.truncated_records} record(s) cut short by the end of the file, dropped "
                f"(truncated: {', '.join(self.truncated_files)})"
            )
        if self.records_without_page:
            lines.append(f"skipped {self.records_without_page} WARC record(s) without WARC-Target-URI")
        if self.last_modified_unreliable_pages:
            dropped = dict(self.dropped).get("last_modified_unreliable", 0)
            lines.append(
                f"Last-Modified ignored on {self.last_modified_unreliable_pages} page(s) whose server "
                "reports the fetch time, or a change the content does not show, on most visits"
                + (
                    f"; Last-Modified alone decided their changes, so their {dropped} row(s) are dropped "
                    "(last_modified_unreliable)"
                    if dropped
                    else ""
                )
                + (
                    f"; their changes are decided by the {self.last_modified_fallback} column instead"
                    if self.last_modified_fallback
                    else ""
                )
            )
        return "\n".join(lines)

    @staticmethod
    def combine(parts, *, sources=None) -> Audit:
        """Sum the audits of disjoint sets of pages (e.g. the partitions of a cluster run).

        Raises
        ------
        ValueError
            If ``parts`` is empty or the parts used different change sources.
        """
        parts = list(parts)
        if not parts:
            raise ValueError("`parts` must hold at least one Audit")
        kinds = {a.change_source for a in parts}
        if len(kinds) > 1:
            raise ValueError(f"the audits used different change sources: {sorted(kinds)}")
        counts = {}
        for name in (
            "rows_read",
            "pages",
            "pages_kept",
            "visits_kept",
            "reference_visits",
            "out_of_order",
            "single_visit_pages",
            "pages_without_usable_visit",
            "last_modified_ignored",
            "truncated_records",
            "records_without_page",
            "last_modified_unreliable_pages",
        ):
            counts[name] = int(sum(getattr(a, name) for a in parts))
        dropped = tuple((r, int(sum(dict(a.dropped)[r] for a in parts))) for r in DROP_REASONS)
        src = tuple(sources) if sources is not None else parts[0].sources
        truncated = tuple(dict.fromkeys(f for a in parts for f in a.truncated_files))
        fallback = next((a.last_modified_fallback for a in parts if a.last_modified_fallback), "")
        return Audit(
            sources=src,
            change_source=parts[0].change_source,
            dropped=dropped,
            truncated_files=truncated,
            last_modified_fallback=fallback,
            **counts,
        )
