"""Find the shipped report assets (templates, CSS, catalogs) in the harness.reports package.

The repo's reports/ directory is installed as the package `harness.reports`. An editable
install made before reports/ had an __init__.py does not map it yet, so fall back to the
source tree next to the harness package rather than failing.
"""

from __future__ import annotations

import importlib.resources
from importlib.resources.abc import Traversable
from pathlib import Path

from harness.errors import UsageError


def assets() -> Traversable:
    """The root of the report assets (a Traversable, maybe inside a wheel)."""
    try:
        return importlib.resources.files("harness.reports")
    except ModuleNotFoundError:
        import harness

        source = Path(harness.__file__).resolve().parent.parent / "reports"
        if (source / "templates").is_dir():
            return source
        raise UsageError("report templates not found (package harness.reports is missing)",
                         hint="reinstall gate-harness") from None


def read_text(*parts: str) -> str:
    node = assets()
    for part in parts:
        node = node / part
    return node.read_text(encoding="utf-8")
