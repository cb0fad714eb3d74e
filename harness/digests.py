"""sha256 of files, and the `sha256sum` line format: one helper for every place that
hashes a file it ships or checks (the offline bundle's manifest and SHA256SUMS, the load
agent's wheels on the client host, evidence packs)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import IO

CHUNK = 1 << 20  # read a MiB at a time: a 100 MB wheel or store never sits in memory


def sha256_stream(f: IO[bytes]) -> str:
    h = hashlib.sha256()
    while chunk := f.read(CHUNK):
        h.update(chunk)
    return h.hexdigest()


def sha256_file(path: Path) -> str:
    with path.open("rb") as f:
        return sha256_stream(f)


def sums_text(files: Mapping[str, str]) -> str:
    """name -> sha256 as `sha256sum --check` reads it: `DIGEST  NAME` a line, by name."""
    return "".join(f"{digest}  {name}\n" for name, digest in sorted(files.items()))


def parse_sums(text: str) -> dict[str, str]:
    """sums_text's inverse: name -> sha256 (lines without two spaces are passed over)."""
    out = {}
    for line in text.splitlines():
        digest, _, name = line.partition("  ")
        if name:
            out[name] = digest
    return out
