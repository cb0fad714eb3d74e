"""The gate-agent wheel: the load generator and the phase seam, nothing else.

A pip extra cannot remove the harness's base dependencies (pandas, WeasyPrint, Ansible),
so the agent is its own distribution. Its modules are exactly the harness modules that
the agent's entry (harness.remote.agent) imports, found by reading their imports, so the
wheel cannot drift from the code; AGENT_REQUIRES are the only third-party packages they
may import (tests/unit/test_agent_wheel.py checks that).
"""

from __future__ import annotations

import ast
import base64
import hashlib
import zipfile
from pathlib import Path

from harness import __version__

AGENT_ENTRY = "harness.remote.agent"
AGENT_NAME = "gate-agent"
# prometheus-client parses the engines' /metrics for the phase health (harness.loadgen.simlag).
AGENT_REQUIRES = ("aiohttp>=3.8", "numpy>=1.22", "prometheus-client>=0.19")
# Imported only when asked for: the faster loop when present, the progress display.
AGENT_OPTIONAL = ("uvloop", "rich")
AGENT_PYTHON = ">=3.9"
HARNESS_ROOT = Path(__file__).resolve().parents[1]  # .../harness


def _module_path(name: str) -> Path | None:
    rel = name.split(".")[1:]
    base = HARNESS_ROOT.joinpath(*rel)
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _imports(name: str, path: Path) -> set[str]:
    """Every module name an import in this file may load (packages and submodules)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return found


def agent_modules(entry: str = AGENT_ENTRY) -> dict[str, Path]:
    """harness module name -> source file, for the entry and everything it imports (with
    each package's __init__), plus the third-party top-level names they import."""
    todo, found = [entry], {}
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a and a.b first
            sub = ".".join(parts[:i])
            path = _module_path(sub)
            if sub.startswith("harness") and path is not None and sub not in found:
                found[sub] = path
                todo += sorted(m for m in _imports(sub, path) if m.split(".")[0] == "harness")
    return found


def third_party_imports(modules: dict[str, Path]) -> set[str]:
    """Top-level names imported by the modules that are not harness itself."""
    return {m.split(".")[0] for name, path in modules.items() for m in _imports(name, path)
            if m and m.split(".")[0] != "harness"}


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def build_agent_wheel(dest: Path) -> Path:
    """Write gate_agent-VERSION-py3-none-any.whl into dest (reproducible: fixed dates)."""
    dist = f"gate_agent-{__version__}"
    files: dict[str, bytes] = {}
    for path in sorted(agent_modules().values()):
        files[str(path.relative_to(HARNESS_ROOT.parent))] = path.read_bytes()
    files[f"{dist}.dist-info/METADATA"] = "\n".join([
        "Metadata-Version: 2.1", f"Name: {AGENT_NAME}", f"Version: {__version__}",
        "Summary: gate's load agent: runs a load phase on the client host",
        f"Requires-Python: {AGENT_PYTHON}", *[f"Requires-Dist: {r}" for r in AGENT_REQUIRES],
        "License: Apache-2.0", ""]).encode()
    files[f"{dist}.dist-info/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: harness.bundle.agent_wheel\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n")
    files[f"{dist}.dist-info/entry_points.txt"] = (
        f"[console_scripts]\ngate-agent = {AGENT_ENTRY}:main\n").encode()
    record = f"{dist}.dist-info/RECORD"
    lines = [_record_line(n, d) for n, d in files.items()] + [f"{record},,"]
    files[record] = ("\n".join(lines) + "\n").encode()
    wheel = dest / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for arcname, data in files.items():
            info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return wheel
