"""Shared pieces of the sub-commands: the flags of the commands that read crawl logs, the
``--columns`` option, error lines that name command-line flags (not the Python arguments
behind them), and stopping on Ctrl-C or SIGTERM with one line and exit status 130."""

from __future__ import annotations

import contextlib
import re
import signal
import sys
import threading

from ._folders import run_removing_new_folders

__all__ = ["add_columns_flag", "add_log_flags", "cli_message", "error", "fail", "interrupted", "parse_columns",
           "runs", "stop_on_signals"]

#: Exit status of a command stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
INTERRUPTED = 130
#: Set when Ctrl-C or SIGTERM arrives within :func:`stop_on_signals`.
_SIGNALLED = threading.Event()

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
            raise ValueError(f"--columns takes ROLE=COLUMN pairs separated by commas, e.g. "
                             f"'page=url,fetch_time=timestamp'; got {item.strip()!r}")
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
    parser.add_argument("--columns", metavar="ROLE=COLUMN,...",
                        help=f"your column names, e.g. {example} (roles: {', '.join(roles)}; "
                             "default: columns named after the roles)")


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
    parser.add_argument("logs", nargs="+", metavar="LOG", help="log files or folders of log files (read as one log; "
                        "a folder stands for every file under it, e.g. hive-style page_bucket=K/ folders)")
    parser.add_argument("--log-format", default="auto", choices=LOG_FORMATS,
                        help="log format (default: from the file names, which all logs must share)")
    add_columns_flag(parser, LOG_ROLES, "page=url,fetch_time=timestamp,digest=sha1")
    parser.add_argument("--page-key", choices=("url", "surt"), default="url",
                        help="CDX logs: name pages by their URL (default; as WARC logs do) or by the SURT key")
    parser.add_argument("--ota-changed", choices=("filtered", "raw"), default=None,
                        help="Open Terms Archive logs: which change column is I_k (default: filtered)")
    parser.add_argument("--budget", type=float, metavar="CRAWLS_PER_DAY",
                        help="crawls per day to share between the pages (default: the crawls per day the log shows)")
    parser.add_argument("--engine", choices=ENGINES, default=None, help=engine_help)
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="dask scheduler address for --engine dask, e.g. tcp://10.0.0.5:8786 (default: a local "
                        "cluster of 2 workers)")


def runs(parser, run, folders) -> None:
    """Make ``run(args)`` the command of ``parser``; a failure removes the output folders it
    created (``folders(args)``, :func:`run_removing_new_folders`) if they are still empty."""
    parser.set_defaults(func=lambda args: run_removing_new_folders(run, args, folders(args)))


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


def interrupted(what: str = "nothing written") -> int:
    """Print the one line of a stopped command to stderr; return :data:`INTERRUPTED`."""
    print(f"changerate-bayes: interrupted; {what}", file=sys.stderr, flush=True)
    return INTERRUPTED


@contextlib.contextmanager
def stop_on_signals():
    """Within this block SIGTERM stops the command as Ctrl-C does: it raises
    KeyboardInterrupt in the main thread, so that the same clean-up runs (worker
    processes stopped, new empty folders removed, one line printed, exit 130)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        _SIGNALLED.set()
        raise KeyboardInterrupt

    _SIGNALLED.clear()
    signals = [signal.SIGTERM] + ([signal.SIGINT] if signal.getsignal(signal.SIGINT) is signal.default_int_handler
                                  else [])  # an ignored Ctrl-C stays ignored
    previous = {sig: signal.signal(sig, _raise) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
