"""Shared pieces of the sub-commands.

- Flags: those of the commands that read crawl logs, the ``--columns`` option, error
  lines that name command-line flags (not the Python arguments behind them).
- Files a command writes: never one of its inputs (:func:`refuse_inputs_as_outputs`,
  checked before any work), created as the umask says, written atomically
  (:func:`write_table`); :func:`output_lock` is held while a table and a report that
  belong together are put into place.
- Folders a command creates for its output are removed again when it fails
  (:func:`run_removing_new_folders`).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import stat
import sys
import tempfile
import warnings
from collections import defaultdict
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..report import REPORT_FILES, folder_lock, write_report
from ._signals import _SIGNALLED

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "HostCaps",
    "add_host_flags",
    "host_caps",
    "host_lines",
    "host_note",
    "no_host_message",
    "read_host_limits",
    "space_fetches",
    "unknown_hosts_note",
    "add_columns_flag",
    "add_log_flags",
    "check_writable_folder",
    "cli_message",
    "error",
    "fail",
    "log_arguments",
    "new_folders",
    "longest_interval",
    "output_lock",
    "parse_columns",
    "plan_line",
    "refuse_inputs_as_outputs",
    "remove_if_empty",
    "report_files",
    "report_written",
    "resolve_output",
    "run_removing_new_folders",
    "runs",
    "with_notes",
    "write_failed",
    "write_table",
]


#: the columns of a crawl log, as ``changerate_bayes.io.STANDARD_COLUMNS`` (repeated here so
#: that building the parser does not import pandas; a test checks that they agree)
LOG_ROLES = ("page", "fetch_time", "status", "digest", "changed", "last_modified")


def parse_columns(text: str | None, roles) -> dict | None:
    """``"page=url,fetch_time=ts"`` as ``{"page": "url", "fetch_time": "ts"}``.

    Parameters
    ----------
    text : str or None
        The value of ``--columns``: comma-separated ``ROLE=COLUMN`` pairs (None: no mapping).
    roles : sequence of str
        The roles this command reads (e.g. ``page``, ``fetch_time``, ``digest``).

    Raises
    ------
    ValueError
        Naming ``--columns``: a pair without ``=``, an empty role or column, a role not in
        ``roles``, a role given twice, or one file column given for two roles.

    Examples
    --------
    >>> parse_columns("page=url, fetch_time=ts", ("page", "fetch_time"))
    {'page': 'url', 'fetch_time': 'ts'}
    """
    if text is None:
        return None
    out: dict = {}
    for item in str(text).split(","):
        role, eq, column = (s.strip() for s in item.partition("="))
        if not eq or not role or not column:
            raise ValueError(
                f"--columns takes ROLE=COLUMN pairs separated by commas, e.g. "
                f"'page=url,fetch_time=timestamp'; got {item.strip()!r}"
            )
        if role not in roles:
            raise ValueError(f"--columns: unknown role {role!r}; the roles are {', '.join(roles)}")
        if role in out:
            raise ValueError(f"--columns gives role {role!r} twice")
        if column in out.values():
            other = next(r for r, c in out.items() if c == column)
            raise ValueError(f"--columns maps column {column!r} to two roles, {other!r} and {role!r}")
        out[role] = column
    return out


def add_columns_flag(parser, roles, example: str) -> None:
    """Add ``--columns ROLE=COLUMN,...`` to ``parser`` for the roles ``roles``."""
    parser.add_argument(
        "--columns",
        metavar="ROLE=COLUMN,...",
        help=f"your column names, e.g. {example} (roles: {', '.join(roles)}; default: columns named after the roles)",
    )


# Python-argument wording of the library's messages and what the command line calls it.
_PHRASES = (
    ("`window` is None, so `changes` needs", "without --window or --windows, CHANGES.csv needs"),
    ("map yours with `columns=`", "map yours with --columns ROLE=COLUMN,..., e.g. --columns page=url,fetch_time=ts"),
)
_NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)=?`")


def cli_message(text: str, flags: dict) -> str:
    """A library error message with its Python argument names put as command-line flags.

    Parameters
    ----------
    text : str
        The message (e.g. of a ValueError raised by the library).
    flags : dict
        Python argument name -> what the user typed for it (``{"budget": "--budget"}``).
        ``columns`` always becomes ``--columns``.

    Examples
    --------
    >>> cli_message("`budget` must be > 0; got -1", {"budget": "--budget"})
    '--budget must be > 0; got -1'
    """
    for old, new in _PHRASES:
        text = text.replace(old, new)
    flags = {"columns": "--columns", **flags}
    return _NAME.sub(lambda m: flags.get(m.group(1), m.group(0)), text)


#: The log formats (``changerate_bayes.io.FORMATS``, repeated so that building the parser does not
#: import the readers; a test checks that they agree).
LOG_FORMATS = ("csv", "parquet", "cdx", "warc", "ota", "auto")
#: The engines of ``changerate_bayes.crawllog`` (``ENGINES``; checked by a test likewise).
ENGINES = ("pandas", "buckets", "dask")


def add_log_flags(parser, *, engine_help: str, engines: tuple[str, ...] = ENGINES) -> None:
    """Add the flags of a command that reads crawl logs: LOG..., ``--log-format``, ``--columns``,
    ``--page-key``, ``--ota-changed``, ``--budget``, ``--engine`` (one of ``engines``, the
    command's) and ``--scheduler``."""
    parser.add_argument(
        "logs",
        nargs="+",
        metavar="LOG",
        help="log files or folders of log files (read as one log; "
        "a folder stands for every file under it, e.g. hive-style page_bucket=K/ folders)",
    )
    parser.add_argument(
        "--log-format",
        default="auto",
        choices=LOG_FORMATS,
        help="log format (default: from the file names, which all logs must share)",
    )
    add_columns_flag(parser, LOG_ROLES, "page=url,fetch_time=timestamp,digest=sha1")
    parser.add_argument(
        "--page-key",
        choices=("url", "surt"),
        default="url",
        help="CDX logs: name pages by their URL (default; as WARC logs do) or by the SURT key",
    )
    parser.add_argument(
        "--ota-changed",
        choices=("filtered", "raw"),
        default=None,
        help="Open Terms Archive logs: which change column is I_k (default: filtered)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        metavar="CRAWLS_PER_DAY",
        help="crawls per day to share between the pages (default: the crawls per day the log shows)",
    )
    parser.add_argument("--engine", choices=engines, default=None, help=engine_help)
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="dask scheduler address for --engine dask, e.g. tcp://10.0.0.5:8786 (default: a local "
        "cluster of 2 workers)",
    )


def add_signals_flag(parser) -> None:
    """Add ``--signals FILE...``: change-indicating signals beside the log (``estimate``, ``schedule``)."""
    parser.add_argument(
        "--signals",
        nargs="+",
        metavar="FILE",
        default=None,
        help="change-indicating signals (sitemaps, feeds, pings): CSV or Parquet files with the columns page, "
        "signal_time and optionally source (the log's own rows whose signal column is 1 are signals too, "
        "without this flag); each page's signal recall and precision are learned (Gibbs sampling, --seed)",
    )


def signal_files(args) -> list:
    """The files of ``--signals`` (none without it)."""
    return [Path(f) for f in (getattr(args, "signals", None) or [])]


#: The Python arguments behind the flags of :func:`add_log_flags`, for the library's error messages
#: (``--columns`` is :func:`cli_message`'s own).
LOG_FLAGS = {
    "budget": "--budget",
    "format": "--log-format",
    "ota_changed": "--ota-changed",
    "page_key": "--page-key",
    "paths": "LOG",
    "engine": "--engine",
    "client": "--scheduler",
    "signals": "--signals",
}


def log_arguments(args) -> dict:
    """The keyword arguments of :func:`changerate_bayes.crawllog.estimate` and ``schedule`` that the
    flags of :func:`add_log_flags` give; ValueError naming the flag for ``--scheduler`` without
    ``--engine dask`` or a bad ``--columns``."""
    if args.scheduler and args.engine != "dask":
        raise ValueError("--scheduler needs --engine dask")
    return {
        "engine": args.engine,
        "format": args.log_format,
        "columns": parse_columns(args.columns, LOG_ROLES),
        "ota_changed": args.ota_changed,
        "page_key": args.page_key,
        "budget": args.budget,
        "client": args.scheduler,
    }


def runs(parser, run, folders) -> None:
    """Make ``run(args)`` the command of ``parser``; a failure removes the output folders it
    created (``folders(args)``, :func:`run_removing_new_folders`) if they are still empty."""
    parser.set_defaults(func=lambda args: run_removing_new_folders(run, args, folders(args)))


def with_notes(call, *args, **kwargs):
    """``(call(*args, **kwargs), notes)``: the library call's result and the messages of the warnings
    it issued, each once and in order (the command prints them as notes)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call(*args, **kwargs)
    return result, list(dict.fromkeys(str(w.message) for w in caught))


def fail(msg: str, flags: dict, command: str | None = None) -> int:
    """:func:`error` of a library message with its argument names put as the command's ``flags``.

    If Ctrl-C or SIGTERM came first, the error is what the interrupt left (a reader that
    turns it into a parse error, as pandas' C parser does): it raises KeyboardInterrupt
    instead, so that the command stops as interrupted.
    """
    if _SIGNALLED.is_set():
        raise KeyboardInterrupt
    return error(cli_message(msg, flags), command)


def error(msg: str, command: str | None = None) -> int:
    """Print ``changerate-bayes[ COMMAND]: error: MSG`` to stderr; return 2."""
    prog = "changerate-bayes" if command is None else f"changerate-bayes {command}"
    print(f"{prog}: error: {msg}", file=sys.stderr)
    return 2


# What a command prints


def plan_line(attrs) -> str:
    """The printed line naming the crawl plan's policy and the pages held at the revisit bound."""
    policy = attrs.get("policy", "?")
    why = {
        "index_mean": " (the freshness index: it beat round robin in the replay of real pages at budgets from "
        "the total change rate up)",
        "uniform": " (round robin: below the total change rate the index lost to it in the replay of real pages)",
    }.get(policy, "")
    line = f"crawl plan: {policy}{why}, {attrs.get('budget_per_day', float('nan')):.4g} crawls/day"
    n = int(attrs.get("n_at_revisit_bound", 0))
    if n:
        line += (
            f"; {n} page(s) would be crawled less often or never and get the revisit bound "
            f"{attrs['max_interval_h']:.4g} h instead (column `at_revisit_bound`)"
        )
    held = int(attrs.get("n_host_cap_beyond_bound") or 0)
    if held:
        line += (
            f"; the host caps hold {held} page(s) beyond the revisit bound {attrs['max_interval_h']:.4g} h, "
            f"at intervals up to {attrs['host_cap_longest_interval_h']:.6g} h (column `host_at_cap`)"
        )
    return line


def longest_interval(attrs) -> str:
    """What sets a schedule's longest interval (``attrs`` of ``crawl_schedule``): the allocation's
    revisit bound 4·N/B (``attrs["revisit_bound_h"]``) or ``--max-interval-h``, whichever is shorter."""
    bound, limit = attrs.get("revisit_bound_h"), attrs["max_interval_h"]
    if bound is None or not bound < limit:
        return f"longest interval: {limit:.4g} h, set by --max-interval-h"
    return (
        f"longest interval: {bound:.4g} h, set by the allocation's revisit bound 4·N/B "
        f"(N = {attrs.get('n_pages', '?')} pages, B = {attrs['budget_per_day']:.4g} crawls/day), "
        f"below --max-interval-h {limit:.4g} h: a page that never changes is fetched that often; "
        "a smaller --budget lengthens it"
    )


# Files a command writes


def write_failed(flag: str, path, exc: OSError) -> int:
    """:func:`error` for a file that could not be written (a full disk, a file system that
    refuses the write): one line naming ``flag``, the file and the system's reason; return 2.

    The writers of this package write to a temporary file first and remove it on failure,
    so nothing partial is left where the file goes.
    """
    if _SIGNALLED.is_set():
        raise KeyboardInterrupt
    reason = exc.strerror or str(exc) or type(exc).__name__
    return error(f"{flag} {str(path)!r}: could not write it ({reason}); nothing was written there")


def report_written(folder, *, html: str, results: dict, done: str = "wrote the report {}") -> int:
    """Write the report ``folder`` (``index.html`` and ``results.json``) and print ``done`` with its
    path; return 0, or 2 with :func:`write_failed`'s line for ``--report`` if it could not be written."""
    try:
        path = write_report(folder, html=html, results=results)
    except OSError as exc:  # a full disk, a file system that refuses the write: nothing partial is left
        return write_failed("--report", folder, exc)
    print(done.format(path))
    return 0


def report_files(folder) -> list[Path]:
    """The files a report folder receives (``index.html`` and ``results.json``)."""
    return [Path(folder) / name for name in REPORT_FILES]


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)  # st_dev and st_ino: hard links and symlinks included
    except OSError:  # one of them does not exist (yet): it cannot be the other
        return False


def refuse_inputs_as_outputs(inputs, outputs) -> None:
    """Refuse to write any output that is one of the inputs.

    Parameters
    ----------
    inputs : iterable of path
        The files the command reads.
    outputs : iterable of (str, path)
        Each file the command would write, with the flag that names it (e.g.
        ``("--out", "estimates.parquet")``).

    Raises
    ------
    ValueError
        If an output is an input: the same path, or the same file through a symbolic
        or hard link (same device and inode).
    """
    inputs = [p for p in inputs if p is not None]
    for flag, out in outputs:
        if out is None:
            continue
        for inp in inputs:
            if _same_file(inp, out):
                how = "" if os.path.abspath(inp) == os.path.abspath(out) else " (through a link)"
                raise ValueError(
                    f"{flag} {str(out)!r} is the input file {str(inp)!r}{how}: writing it would "
                    f"destroy the input; choose another {flag}"
                )


def resolve_output(path) -> Path:
    """Where a file written to ``path`` goes: a symbolic link at ``path`` is written through.

    The link stays, and the file it points to is replaced; so a link kept to the latest
    table keeps working.

    Raises
    ------
    ValueError
        If ``path`` is a link whose target's folder does not exist.
    """
    out = Path(path)
    if not out.is_symlink():
        return out
    target = Path(os.path.realpath(out))
    if not target.parent.is_dir():
        raise ValueError(f"{str(out)!r} is a symbolic link to {str(target)!r}, whose folder does not exist")
    return target


def _umask() -> int:
    """The process's umask, read without changing it where the system tells it (Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore at once
    os.umask(mask)
    return mask


def check_writable_folder(flag: str, path, folder) -> None:
    """Check, before any work, that a file can be created in ``folder`` (the folder of the
    output ``path`` given by ``flag``), by creating and removing a temporary file there.

    ``os.access`` alone is not enough: it is always true for root and does not see
    read-only mounts or pseudo file systems such as ``/proc``.

    Raises
    ------
    ValueError
        Naming ``flag``, ``path`` and the reason when the folder cannot be written.
    """
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise ValueError(
            f"{flag} {str(path)!r}: folder {str(folder)!r} is not writable ({exc.strerror or exc})"
        ) from None


def write_table(table, out) -> Path:
    """Write ``table`` to ``out`` (.parquet, else CSV) atomically; return the file written.

    The table goes to a temporary file in the same folder, which then replaces ``out``
    (:func:`os.replace`): a reader never sees a partial file, and a failure leaves none.
    The file gets the mode of the file it replaces, or, for a new file, the mode the
    umask gives (``0o666 & ~umask``), as any file the user creates. A symbolic link at
    ``out`` is written through (:func:`resolve_output`).
    """
    out = resolve_output(out)
    try:
        mode = stat.S_IMODE(os.stat(out).st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}-", dir=out.parent)  # mkstemp creates it 0600
    os.close(fd)
    try:
        if out.suffix == ".parquet":
            table.to_parquet(tmp, index=False)
        else:
            table.to_csv(tmp, index=False)
        os.chmod(tmp, mode)
        os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return out


@contextlib.contextmanager
def output_lock(folder):
    """Hold an exclusive lock on ``folder`` (``fcntl.flock`` of the folder itself: no lock file).

    Two runs that write the same table and report each put their pair into place while
    holding the lock on the table's folder, so the table and the report left on disk come
    from one run. The lock is :func:`changerate_bayes.report.folder_lock`, the one
    the report writer takes: re-entrant within a thread, so a report written into the
    table's own folder does not wait for itself.
    """
    with folder_lock(folder):
        yield


# Folders a command creates


def _missing(path) -> list[Path]:
    out = []
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        out.append(p)
        p = p.parent
    return out


def new_folders(folders) -> list[Path]:
    """Those of ``folders`` and their parents that do not exist yet, deepest first."""
    created: list[Path] = []
    for folder in folders:
        if folder is not None and str(folder).strip():
            created += [p for p in _missing(folder) if p not in created]
    created.sort(key=lambda p: len(p.parts), reverse=True)
    return created


def remove_if_empty(folders) -> None:
    """Remove each of ``folders`` (deepest first) that is still empty."""
    for folder in folders:
        try:
            folder.rmdir()  # only succeeds on an empty folder
        except OSError:
            pass


def _make_folders(folder) -> list[Path]:
    """Create ``folder`` and its missing parents, one level at a time, outermost first; return
    those this call created (a level another process creates first is not ours)."""
    made = []
    for p in reversed(_missing(folder)):
        try:
            p.mkdir()
        except FileExistsError:
            continue
        made.append(p)
    return made


#: the prefix of the file that marks a folder as in use by a run (removed when the run ends)
IN_USE_PREFIX = ".changerate-bayes-in-use-"


def _claim(folder, created: list[Path], tries: int = 20) -> Path | None:
    """Put a marker file into ``folder`` (creating it and its parents if needed, adding those this
    run created to ``created``), so that no other run's clean-up removes it while this run needs it.

    A folder removed by another run between its creation and the marker is created again.
    Returns the marker, or None if the folder cannot be created or written (the command
    itself then reports why).
    """
    for _ in range(tries):
        try:
            created += [p for p in _make_folders(folder) if p not in created]
            fd, marker = tempfile.mkstemp(prefix=IN_USE_PREFIX, dir=folder)
        except FileNotFoundError:  # removed by another run's clean-up in between: create it again
            continue
        except OSError:
            return None
        os.close(fd)
        return Path(marker)
    return None


def run_removing_new_folders(run, args, folders) -> int:
    """``run(args)``; if it fails (status != 0 or an exception), remove those of ``folders``
    (and their parents) that this run created and that are still empty.

    Each folder is created before the run, level by level, so that the run knows which
    ones it created (a level that another process created first is not its own), and
    holds a marker file (``.changerate-bayes-in-use-*``) while the run lasts: a folder is
    removed with :func:`os.rmdir`, which fails on a folder that is not empty, so two runs
    writing into the same new folder never remove it under each other. The markers are
    removed when the run ends, whatever its outcome.
    """
    created: list[Path] = []
    markers = []
    for folder in dict.fromkeys(Path(f) for f in folders if f is not None and str(f).strip()):
        marker = _claim(folder, created)
        if marker is not None:
            markers.append(marker)
    status = 1
    try:
        status = run(args)
    finally:
        for marker in markers:
            with contextlib.suppress(OSError):
                marker.unlink()
        if status != 0:
            created.sort(key=lambda p: len(p.parts), reverse=True)
            remove_if_empty(created)
    return status


# The per-host caps of estimate, schedule and replay: --host-limit, --host-limits and --host-delay.
#
# A production crawler fetches one host's URLs one at a time, a delay apart (Nutch's
# ``fetcher.server.delay``, 5 s by default: at most 86,400 / 5 = 17,280 fetches per day
# per host; robots.txt ``Crawl-delay``): these flags give the allocation the same caps,
# in crawls per day per host, so that the schedule written is the one the crawler runs.

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
