"""The per-host caps of ``estimate`` and ``schedule``: ``--host-limit``, ``--host-limits`` and ``--host-delay``.

A production crawler fetches one host's URLs one at a time, a delay apart (Nutch's
``fetcher.server.delay``, 5 s by default: at most 86,400 / 5 = 17,280 fetches per day
per host; robots.txt ``Crawl-delay``): these flags give the allocation the same caps,
in crawls per day per host, so that the schedule written is the one the crawler runs.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "HostCaps",
    "add_host_flags",
    "host_caps",
    "read_host_limits",
    "host_note",
    "no_host_message",
    "unknown_hosts_note",
]

_SECONDS_PER_DAY = 86400.0
_CENTURY_S = 36600 * _SECONDS_PER_DAY  # the longest delay between two fetches of a host
#: the columns of a --host-limits file
LIMIT_COLUMNS = ("host", "crawls_per_day")


def add_host_flags(parser, *, spacing: bool) -> None:
    """Add ``--host-limit``, ``--host-limits`` and ``--host-delay`` to ``parser`` (``spacing``: the
    command also spaces each host's next fetches, as ``schedule`` does)."""
    spaced = (
        " The next fetches of a host are spaced at least 86,400 / CAP seconds apart (or --host-delay)."
        if spacing
        else ""
    )
    parser.add_argument(
        "--host-limit",
        type=float,
        metavar="CRAWLS_PER_DAY",
        help="at most this many crawls per day for every host (a URL's host is its host name; default: no cap)."
        + spaced,
    )
    parser.add_argument(
        "--host-limits",
        metavar="FILE.csv",
        help="a CSV file with the columns host,crawls_per_day: the cap of each host it lists (--host-limit and "
        "--host-delay cap every other host)",
    )
    parser.add_argument(
        "--host-delay",
        type=float,
        metavar="SECONDS",
        help="seconds between two fetches of one host, as the crawler's host queue keeps them (Nutch's "
        "fetcher.server.delay, robots.txt Crawl-delay): a cap of 86,400 / SECONDS crawls per day for every host "
        "(with --host-limit or --host-limits, the smaller cap)"
        + (". The next fetches of a host are spaced at least SECONDS apart" if spacing else ""),
    )


@dataclass(frozen=True)
class HostCaps:
    """The caps the flags give, in crawls per day per host.

    Attributes
    ----------
    default : float or None
        The cap of every host the file does not list: ``--host-limit``, or 86,400 /
        ``--host-delay``, the smaller of the two (None: such hosts are not capped).
    listed : pandas.Series
        The hosts of ``--host-limits`` (index) and their caps (each at most 86,400 /
        ``--host-delay``); empty without the file.
    delay_s : float or None
        ``--host-delay``.
    """

    default: float | None
    listed: pd.Series
    delay_s: float | None

    def __bool__(self) -> bool:
        return self.default is not None or len(self.listed) > 0

    @property
    def host_budgets(self):
        """The library's ``host_budgets``: None, one cap, the file's mapping, or the file's
        mapping with the cap of every other host as its default (a defaultdict)."""
        if not len(self.listed):
            return self.default
        listed = self.listed.to_dict()
        if self.default is None:
            return listed
        return defaultdict(partial(float, self.default), listed)

    def words(self) -> str:
        """The caps in words, for a note or a report ("at most 100 crawls per day per host")."""
        if not len(self.listed):
            return f"at most {self.default:.6g} crawls per day per host"
        listed = f"the caps of --host-limits for {len(self.listed)} host(s)"
        if self.default is None:
            return listed + " (the other hosts uncapped)"
        return listed + f" and at most {self.default:.6g} crawls per day for every other host"

    def caps(self, hosts):
        """The cap of each of ``hosts`` (crawls per day), a Series indexed by the distinct hosts;
        NaN for a host without one."""
        import pandas as pd

        index = pd.Index(pd.unique(pd.Series(hosts, dtype=object)))
        cap = pd.Series(self.listed.reindex(index).to_numpy(dtype=float), index=index)
        return cap if self.default is None else cap.fillna(self.default)

    def delays(self, hosts):
        """Seconds between two next fetches of each of ``hosts`` that has a cap or a delay (a Series
        indexed by host): ``--host-delay`` where it is given, else 86,400 / the host's cap."""
        import pandas as pd

        cap = self.caps(hosts)
        if self.delay_s is not None:
            return pd.Series(self.delay_s, index=cap.index)
        return (_SECONDS_PER_DAY / cap).dropna()


def _positive(value, what: str) -> float:
    if value is None or not (math.isfinite(value) and value > 0):
        raise ValueError(f"{what} must be a finite number > 0; got {value}")
    return float(value)


def read_host_limits(path):
    """The caps of a ``--host-limits`` file: a pandas Series of crawls per day indexed by host.

    The file is a CSV file with a header line and the columns ``host`` and
    ``crawls_per_day`` (others are ignored), one field per column on every line; a host
    is a URL's host name, compared without case and surrounding spaces.

    Raises
    ------
    ValueError
        Naming ``--host-limits``, the file and, for a bad row, its line (the header is
        line 1): a file that cannot be read, lacks a column or lists no host, a line with
        fields too many or too few, an empty host, a cap that is not a number, not finite
        or not > 0, or a host listed twice.
    """
    import pandas as pd  # the parser is built without pandas

    name = f"--host-limits {str(path)!r}"
    if Path(path).is_dir():
        raise ValueError(f"{name} is a folder; give a CSV file with the columns host,crawls_per_day")
    from ..io import check_field_counts

    try:
        if Path(path).is_file():  # pandas would take a row's extra first field as its index
            check_field_counts(path, src=name)
        frame = pd.read_csv(
            path, dtype=str, keep_default_na=False, skipinitialspace=True, skip_blank_lines=False, index_col=False
        )
    except FileNotFoundError:
        raise ValueError(f"{name}: no such file") from None
    except pd.errors.EmptyDataError:
        raise ValueError(f"{name} is empty; it needs a header line host,crawls_per_day") from None
    except (OSError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise ValueError(f"{name} cannot be read as CSV: {exc}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    lacking = [c for c in LIMIT_COLUMNS if c not in frame.columns]
    if lacking:
        raise ValueError(
            f"{name} lacks the column(s) {', '.join(lacking)}: it needs a header line host,crawls_per_day; "
            f"its columns are {', '.join(map(repr, frame.columns)) or 'none'}"
        )
    line = pd.RangeIndex(2, len(frame) + 2)  # the header is line 1 (a quoted field with a line break: approximate)
    filled = (frame.fillna("").apply(lambda column: column.str.strip()) != "").any(axis=1).to_numpy()
    frame, line = frame[filled], line[filled]  # blank lines are skipped, and counted
    if frame.empty:
        raise ValueError(f"{name} lists no host: give a line host,crawls_per_day for each host to cap")
    hosts = frame["host"].str.strip().str.lower()
    text = frame["crawls_per_day"].str.strip()
    caps = pd.to_numeric(text, errors="coerce")
    for bad, why in (
        (hosts == "", lambda i: "has no host"),
        (caps.isna(), lambda i: f"crawls_per_day {text.iloc[i]!r} is not a number"),
        (~(caps > 0) | ~caps.abs().lt(float("inf")), lambda i: f"crawls_per_day {text.iloc[i]} must be finite and > 0"),
    ):
        if bad.any():
            i = int(bad.to_numpy().nonzero()[0][0])
            raise ValueError(f"{name} line {line[i]}: {why(i)}")
    twice = hosts.duplicated(keep=False)
    if twice.any():
        host = hosts[twice].iloc[0]
        lines = [str(n) for n in line[(hosts == host).to_numpy()]]
        raise ValueError(f"{name}: host {host!r} is listed twice (lines {' and '.join(lines)}); give it one cap")
    return pd.Series(caps.to_numpy(dtype=float), index=pd.Index(hosts.to_numpy(dtype=object), name="host"))


def host_caps(args) -> HostCaps:
    """The caps the parsed flags give; ValueError naming the flag (or file and line) for bad input."""
    limit = None if args.host_limit is None else _positive(args.host_limit, "--host-limit (crawls per day per host)")
    delay = None if args.host_delay is None else _positive(args.host_delay, "--host-delay (seconds)")
    if limit is not None and limit < _SECONDS_PER_DAY / _CENTURY_S:
        raise ValueError(
            f"--host-limit (crawls per day per host) must be at least one crawl per century per host "
            f"({_SECONDS_PER_DAY / _CENTURY_S:.3g} per day); got {limit:g}"
        )
    if delay is not None and delay > _CENTURY_S:
        raise ValueError(f"--host-delay (seconds) must be at most a century ({_CENTURY_S:.6g} s); got {delay:g}")
    if args.host_limits is None:
        import pandas as pd

        listed = pd.Series([], dtype=float, index=pd.Index([], dtype=object, name="host"))
    else:
        listed = read_host_limits(args.host_limits)
    by_delay = None if delay is None else _SECONDS_PER_DAY / delay
    default = min((c for c in (limit, by_delay) if c is not None), default=None)
    if by_delay is not None:
        listed = listed.clip(upper=by_delay)
    return HostCaps(default=default, listed=listed, delay_s=delay)


def unknown_hosts_note(caps: HostCaps, hosts) -> str | None:
    """The note on the hosts of ``--host-limits`` that the log lacks (None if it has them all)."""
    unknown = sorted(set(caps.listed.index) - set(hosts))
    if not unknown:
        return None
    shown = ", ".join(unknown[:5]) + (", ..." if len(unknown) > 5 else "")
    return f"{len(unknown)} host(s) of --host-limits are not in the log (their caps are unused): {shown}"


def space_fetches(schedule, caps: HostCaps):
    """``schedule`` (of an allocation within ``caps``: column ``host``) with each capped host's next
    fetches spaced by its delay (:func:`~changerate_bayes.crawllog.fetch_schedule.space_host_fetches`);
    unchanged without caps."""
    if not caps:
        return schedule
    from ..crawllog.fetch_schedule import space_host_fetches

    hosts = schedule["host"]
    try:
        return space_host_fetches(schedule, hosts.to_numpy(dtype=object), caps.delays(hosts))
    except ValueError as err:
        if "reach past" not in str(err) and "`delay_s`" not in str(err):
            raise
        text = str(err).replace(", `delay_s` apart,", ", spaced by its cap's delay,").replace("`delay_s`", "the delay")
        raise ValueError(f"--host-limit, --host-limits or --host-delay: {text}; give larger caps") from None


def host_lines(table, caps: HostCaps) -> list[str]:
    """The lines a command prints on the hosts: the hosts at their cap, and (a schedule) the fetches
    the host delays moved. Empty without caps."""
    if not caps:
        return []
    hosts = table["host"]
    lines = []  # the hosts of --host-limits the log lacks: the allocation's warning (host_note)
    n_hosts = int(hosts.nunique())
    if "host_at_cap" in table.columns:
        at_cap = int(hosts[table["host_at_cap"].to_numpy(dtype=bool)].nunique())
        lines.append(f"{at_cap} of {n_hosts} host(s) at their cap (column host_at_cap)")
    if "host_delay_s" in table.columns:
        a = table.attrs
        lines.append(
            f"host delays: {a['n_host_delayed']} next fetch(es) moved later so that no host is fetched twice "
            f"within its delay (the largest move: {a['max_host_delay_s']:.6g} s; column host_delay_s)"
        )
    return lines


_UNMATCHED = re.compile(r"^(?P<n>\d+) key\(s\) of `host_budgets` match no page's host")


def host_note(message: str) -> str:
    """A library note on keys of ``host_budgets`` that match no page's host, put in the terms of
    ``--host-limits`` (the only mapping the flags give); others unchanged."""
    return _UNMATCHED.sub(r"\g<n> host(s) of --host-limits are not in the log", message)


_NO_HOST = re.compile(r"row \d+ \((?P<page>.*)\) is not a URL with a host name")


def no_host_message(message: str) -> str:
    """A library message on a page without a host, or on a cap so low that a next fetch is past
    2262, put in the flags' terms (others unchanged)."""
    if "its host's cap gives it" in message:  # a cap so low the next fetch is past 2262
        return f"--host-limit, --host-limits or --host-delay: {message.replace(' (`host_budgets`)', '')}"
    found = _NO_HOST.search(message)
    if found is None:
        return message
    return (
        f"the log's page {found['page']} has no host name: --host-limit, --host-limits and --host-delay cap the "
        "crawls of each host, so every page must be a URL such as https://example.com/path"
    )
