"""Stopping a command on Ctrl-C or SIGTERM with one line and exit status 130."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading

__all__ = ["INTERRUPTED", "interrupted", "stop_on_signals"]

#: Exit status of a command stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
INTERRUPTED = 130
#: Set when Ctrl-C or SIGTERM arrives within :func:`stop_on_signals`.
_SIGNALLED = threading.Event()


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
    signals = [signal.SIGTERM] + (
        [signal.SIGINT] if signal.getsignal(signal.SIGINT) is signal.default_int_handler else []
    )  # an ignored Ctrl-C stays ignored
    previous = {sig: signal.signal(sig, _raise) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
