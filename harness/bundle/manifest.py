"""The bundle's manifest: what is inside, at which version, with the sha256 of each file.

manifest.json is for people and `gate bundle verify`; SHA256SUMS holds the same digests
in the format `sha256sum --check` reads, so install.sh verifies with coreutils alone,
before any Python of the bundle runs. Neither is signed: they catch a damaged copy (a
USB stick, a truncated transfer), not a forger.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.digests import parse_sums, sha256_file, sums_text

MANIFEST, SUMS = "manifest.json", "SHA256SUMS"
FORMAT = 1


def digests(root: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under root but the manifest and sums."""
    return {rel: sha256_file(p) for p in sorted(root.rglob("*"))
            if p.is_file() and (rel := p.relative_to(root).as_posix()) not in (MANIFEST, SUMS)}


def write_manifest(root: Path, info: dict[str, Any]) -> dict[str, Any]:
    """Write manifest.json (info + files) and SHA256SUMS under root; returns the manifest."""
    files = digests(root)
    manifest = {"format": FORMAT, **info, "files": files}
    (root / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    (root / SUMS).write_text(sums_text(files))
    return manifest


@dataclass(frozen=True)
class Problem:
    path: str
    what: str  # "changed", "missing", "unlisted", or SHA256SUMS disagreeing


def check(on_disk: dict[str, str], listed: dict[str, str], sums_file: str) -> list[Problem]:
    """Every file listed is present (on_disk: relative path -> sha256) with its digest,
    nothing unlisted is present, and SHA256SUMS says the same as the manifest."""
    problems = []
    for name, want in sorted(listed.items()):
        got = on_disk.get(name)
        if got is None:
            problems.append(Problem(name, "missing"))
        elif got != want:
            problems.append(Problem(name, "changed"))
    problems += [Problem(n, "unlisted") for n in sorted(set(on_disk) - set(listed))]
    sums = parse_sums(sums_file)
    if sums != listed:
        bad = sorted({n for n in set(sums) | set(listed) if sums.get(n) != listed.get(n)})
        problems.append(Problem(bad[0] if bad else SUMS, f"{SUMS} disagrees with {MANIFEST}"))
    return problems

