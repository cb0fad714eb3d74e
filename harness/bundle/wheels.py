"""Wheels for a target: fetched with pip on the connected machine, then checked complete.

pip judges some environment markers by the machine it runs on, not by --python-version
(`async-timeout; python_version < "3.11"` is skipped on 3.11 when fetching for 3.9), so
after pip the closure is checked here against the target's own markers and what is
missing is fetched by name; what still cannot be found is an error now, not at the site.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename

from harness.bundle.targets import Target
from harness.errors import UsageError

PIP_TIMEOUT = 900.0


def pip_download(requirements: list[str], dest: Path, target: Target | None,
                 no_deps: bool = False) -> None:
    """`pip download` into dest: for the running interpreter when target is None."""
    argv = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check",
            "--no-input", "-q", "-d", str(dest)]
    argv += target.pip_args() if target is not None else ["--only-binary=:all:"]
    if no_deps:
        argv.append("--no-deps")
    proc = subprocess.run([*argv, *requirements], capture_output=True, text=True,
                          timeout=PIP_TIMEOUT, check=False)
    if proc.returncode != 0:
        tail = [ln for ln in proc.stderr.splitlines() if ln.startswith("ERROR")] or \
            proc.stderr.splitlines()[-3:]
        raise UsageError(f"no wheels for {', '.join(requirements)}: {' '.join(tail)}",
                         key=f"--target {target}" if target else "gate bundle",
                         hint="pick a target the packages publish wheels for, or build "
                              "the wheel there and add it to pip's find-links")


def wheel_requires(wheel: Path) -> list[Requirement]:
    """Requires-Dist of a wheel, read from its METADATA."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist()
                    if re.fullmatch(r"[^/]+\.dist-info/METADATA", n))
        text = zf.read(meta).decode("utf-8")
    return [Requirement(r) for r in Parser().parsestr(text).get_all("Requires-Dist") or []]


def missing_requirements(wheel_dir: Path, roots: list[str],
                         env: dict[str, str]) -> list[Requirement]:
    """Requirements reached from `roots` (canonical names, with extras "name[x]") whose
    marker holds in env but that no wheel in wheel_dir provides (by name and version)."""
    have = {}
    for w in wheel_dir.glob("*.whl"):
        name, version, _, _ = parse_wheel_filename(w.name)
        have[name] = (version, w)
    marker_env = {**{k: str(v) for k, v in default_environment().items()}, **env}
    missing: dict[str, Requirement] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [Requirement(r) for r in roots]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if (name, frozenset(req.extras)) in seen:
            continue
        seen.add((name, frozenset(req.extras)))
        found = have.get(name)
        if found is None or not req.specifier.contains(found[0], prereleases=True):
            missing[name] = req
            continue
        for sub in wheel_requires(found[1]):
            extras = req.extras or {""}
            if sub.marker is None or any(
                    sub.marker.evaluate({**marker_env, "extra": e}) for e in extras):
                todo.append(sub)
    return sorted(missing.values(), key=lambda r: r.name)


def fetch_complete(pip_roots: list[str], roots: list[str], dest: Path,
                   target: Target | None, env: dict[str, str]) -> None:
    """Download pip_roots with their dependencies, then whatever pip's markers skipped,
    until the closure of `roots` (requirement names) is complete; a requirement that
    cannot be fetched for the target is a UsageError now."""
    pip_download(pip_roots, dest, target)
    for _ in range(5):
        missing = missing_requirements(dest, roots, env)
        if not missing:
            return
        pip_download([str(r).split(";")[0] for r in missing], dest, target)
    missing = missing_requirements(dest, roots, env)
    if missing:
        raise UsageError(f"wheels still missing for {target or 'this machine'}: "
                         + ", ".join(str(r) for r in missing), key="gate bundle")
