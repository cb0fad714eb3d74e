"""Output paths are checked before any work: a report that renders for 15 s and then
cannot be written wastes the time and ends in a traceback; a usage error (exit 4) at once,
naming the path and the option, does not."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from harness.errors import UsageError


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def _probe(directory: Path) -> str | None:
    """Why a file cannot be created in `directory`, or None. A real create and delete:
    os.access says yes to root in an immutable (chattr +i) or read-only-mounted one."""
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".gate-probe-"):
            pass
    except OSError as exc:
        return os.strerror(exc.errno) if exc.errno else str(exc)
    return None


def check_output(path: Path, option: str, *, directory: bool = False) -> Path:
    """`path` (a file to write, or with `directory` a folder to create or fill) is usable;
    else a UsageError naming the path and `option`. Creates nothing."""
    target = path.expanduser()
    where = target if directory else target.parent
    if not directory and target.is_dir():
        raise UsageError("is a directory, not a file to write", file=str(target), key=option,
                         hint="give a file name, e.g. report.pdf")
    if directory and target.exists() and not target.is_dir():
        raise UsageError("exists and is not a directory", file=str(target), key=option)
    base = _nearest_existing(where.absolute())
    if not base.is_dir():
        raise UsageError(f"{base} is a file, so {where} cannot be a directory",
                         file=str(target), key=option)
    reason = _probe(base)
    if reason is None and target.is_file() and not os.access(target, os.W_OK):
        reason = os.strerror(errno.EACCES)
    if reason is not None:
        raise UsageError(f"cannot write here: {reason}", file=str(target), key=option,
                         hint=f"choose another {option}")
    return target
