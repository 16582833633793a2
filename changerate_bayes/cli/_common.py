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
import os
import re
import stat
import sys
import tempfile
import warnings
from pathlib import Path

from ..report import REPORT_FILES, folder_lock, write_report
from ._signals import _SIGNALLED

__all__ = [
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


def add_log_flags(parser, *, engine_help: str) -> None:
    """Add the flags of a command that reads crawl logs: LOG..., ``--log-format``, ``--columns``,
    ``--page-key``, ``--ota-changed``, ``--budget``, ``--engine`` and ``--scheduler``."""
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
    parser.add_argument("--engine", choices=ENGINES, default=None, help=engine_help)
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="dask scheduler address for --engine dask, e.g. tcp://10.0.0.5:8786 (default: a local "
        "cluster of 2 workers)",
    )


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
