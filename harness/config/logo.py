"""report.logo: the site's or the customer's logo on the report's first page.

Checked at config load (a missing or non-image file is a one-line error naming the key
and the path, not a report without its logo weeks later) and embedded as a data: URI,
so the PDF stays self-contained and the renderer never opens a file or a URL (the report
renderer accepts data: URIs only). The kind is told from the file's first bytes, not its
name; no image library is imported here (harness.config stays light for the load agent).
"""

from __future__ import annotations

import base64
from pathlib import Path

from harness.errors import ConfigError

MAX_BYTES = 2 * 1024 * 1024  # a cover logo; more would only bloat every report
KINDS = "PNG, JPEG, GIF or SVG"
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
          (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"))


def image_type(data: bytes) -> str | None:
    """The MIME type of an image in `data`, from its signature (None: not one we embed)."""
    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    head = data[:2048].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if (head.startswith(b"<svg") or head.startswith(b"<?xml")) and b"<svg" in head:
        return "image/svg+xml"
    return None


def read_logo(path: Path) -> tuple[str, bytes]:
    """(MIME type, bytes) of the logo at `path`; ValueError says what is wrong with it."""
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise ValueError("is not a file")
        if size > MAX_BYTES:
            raise ValueError(f"is {size / 1e6:.1f} MB; a logo may be at most "
                             f"{MAX_BYTES // (1024 * 1024)} MiB")
        data = path.read_bytes()
    except FileNotFoundError:
        raise ValueError("not found") from None
    except OSError as exc:
        raise ValueError(f"cannot be read: {exc.strerror or exc}") from None
    mime = image_type(data)
    if mime is None:
        raise ValueError(f"is not an image gate can embed ({KINDS})")
    return mime, data


def logo_data_uri(path: Path, written: str) -> str:
    """The logo as data:<mime>;base64,...; a ConfigError on report.logo otherwise
    (`written` is the path as the config has it)."""
    try:
        mime, data = read_logo(path)
    except ValueError as exc:
        raise ConfigError(f"{written} {exc}", key="report.logo",
                          hint=f"resolved to {path}; a {KINDS} file, a relative path is "
                               "relative to the config file") from None
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
