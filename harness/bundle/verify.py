"""`gate bundle verify FILE`: is the archive whole, and what is inside.

Read straight from the tar.gz (nothing is extracted): every member must sit under the one
top directory as a plain file, match the manifest's sha256, and the manifest must list
nothing that is absent; SHA256SUMS (what install.sh checks) must say the same.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from harness.bundle.manifest import MANIFEST, SUMS, Problem, check
from harness.errors import UsageError


@dataclass(frozen=True)
class BundleContents:
    path: Path
    manifest: dict[str, Any]
    problems: tuple[Problem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        info = {k: v for k, v in self.manifest.items() if k != "files"}
        return {"file": str(self.path), "ok": self.ok, "files": len(self.manifest["files"]),
                "problems": [{"path": p.path, "what": p.what} for p in self.problems], **info}


def _read_all(path: Path) -> tuple[dict[str, str], bytes | None, bytes | None, list[Problem]]:
    """(digest per relative path, manifest bytes, sums bytes, unsafe members)."""
    on_disk: dict[str, str] = {}
    manifest = sums = None
    unsafe: list[Problem] = []
    top: str | None = None
    with tarfile.open(path, "r:gz") as tar:
        for member in tar:
            parts = PurePosixPath(member.name).parts
            top = top or parts[0]
            if member.isdir():
                continue
            if (not member.isfile() or member.name.startswith("/") or ".." in parts
                    or parts[0] != top or len(parts) < 2):
                unsafe.append(Problem(member.name, "not a plain file under the top dir"))
                continue
            rel = "/".join(parts[1:])
            f = tar.extractfile(member)
            assert f is not None
            data = f.read()
            if rel == MANIFEST:
                manifest = data
            elif rel == SUMS:
                sums = data
            else:
                on_disk[rel] = hashlib.sha256(data).hexdigest()
    return on_disk, manifest, sums, unsafe


def verify_bundle(path: Path) -> BundleContents:
    """The manifest and every problem found; an unreadable archive is a UsageError."""
    try:
        on_disk, raw_manifest, raw_sums, unsafe = _read_all(path)
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise UsageError(f"not a readable gate bundle: {exc}", file=str(path),
                         hint="copy it again from where it was made") from exc
    if raw_manifest is None:
        raise UsageError(f"no {MANIFEST} inside: not a gate bundle", file=str(path))
    try:
        manifest: dict[str, Any] = json.loads(raw_manifest)
        listed = {str(k): str(v) for k, v in manifest["files"].items()}
    except (ValueError, KeyError, AttributeError) as exc:
        raise UsageError(f"{MANIFEST} is damaged ({exc})", file=str(path),
                         hint="copy the bundle again") from exc
    problems = [*unsafe, *check(on_disk, listed, (raw_sums or b"").decode("utf-8", "replace"))]
    return BundleContents(path=path, manifest=manifest, problems=tuple(problems))
