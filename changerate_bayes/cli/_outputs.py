"""Files a command writes: never one of its inputs, created as the umask says, written atomically.

Every command that writes files checks them with :func:`refuse_inputs_as_outputs` before
any work, writes a table with :func:`write_table`, and holds :func:`output_lock` while it
puts a table and a report that belong together into place.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from ..report import REPORT_FILES, folder_lock

__all__ = ["check_writable_folder", "output_lock", "refuse_inputs_as_outputs", "report_files", "resolve_output",
           "write_table"]


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
                raise ValueError(f"{flag} {str(out)!r} is the input file {str(inp)!r}{how}: writing it would "
                                 f"destroy the input; choose another {flag}")


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
        raise ValueError(f"{flag} {str(path)!r}: folder {str(folder)!r} is not writable "
                         f"({exc.strerror or exc})") from None


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
