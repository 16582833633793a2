"""Folders a command creates for its output, removed again when the command fails."""

from __future__ import annotations

from pathlib import Path

__all__ = ["new_folders", "remove_if_empty", "run_removing_new_folders"]


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


def run_removing_new_folders(run, args, folders) -> int:
    """``run(args)``; if it fails (status != 0 or an exception), remove those of ``folders``
    (and their parents) that did not exist before and are still empty."""
    created = new_folders(folders)
    status = 1
    try:
        status = run(args)
    finally:
        if status != 0:
            remove_if_empty(created)
    return status
