"""Folders a command creates for its output, removed again when the command fails."""

from __future__ import annotations

from pathlib import Path

__all__ = ["run_removing_new_folders"]


def _missing(path) -> list[Path]:
    out = []
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        out.append(p)
        p = p.parent
    return out


def run_removing_new_folders(run, args, folders) -> int:
    """``run(args)``; if it fails (status != 0 or an exception), remove those of ``folders``
    (and their parents) that did not exist before and are still empty."""
    created: list[Path] = []
    for folder in folders:
        if folder is not None and str(folder).strip():
            created += [p for p in _missing(folder) if p not in created]
    created.sort(key=lambda p: len(p.parts), reverse=True)  # deepest first
    status = 1
    try:
        status = run(args)
    finally:
        if status != 0:
            for folder in created:
                try:
                    folder.rmdir()  # only succeeds on an empty folder
                except OSError:
                    pass
    return status
