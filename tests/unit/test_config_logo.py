"""report.logo: refused at load unless it is an image gate can embed; embedded as data:."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from harness.config.loader import load_config
from harness.config.logo import MAX_BYTES, image_type
from harness.errors import ConfigError

BASE = "site: {name: s}\ncampaign: {name: c}\nmodel: {name: m}\n"
# A 1x1 PNG.
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAE"
                       "hQGAhKmMIQAAAABJRU5ErkJggg==")
SVG = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="8" height="8"/>'


def site(tmp_path: Path, logo: str | None) -> Path:
    (tmp_path / "site").mkdir(exist_ok=True)
    cfg = tmp_path / "site" / "gate.yaml"
    cfg.write_text(BASE + (f"report: {{logo: {logo!r}}}\n" if logo is not None else ""))
    return cfg


def test_a_relative_logo_is_found_next_to_the_config_not_the_cwd(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = site(tmp_path, "brand/logo.png")
    (tmp_path / "site" / "brand").mkdir()
    (tmp_path / "site" / "brand" / "logo.png").write_bytes(PNG)
    monkeypatch.chdir(tmp_path)
    uri = load_config(cfg).logo_uri()
    assert uri == "data:image/png;base64," + base64.b64encode(PNG).decode()


def test_svg_and_an_absolute_path(tmp_path: Path) -> None:
    (tmp_path / "logo.svg").write_bytes(SVG)
    uri = load_config(site(tmp_path, str(tmp_path / "logo.svg"))).logo_uri()
    assert uri is not None and uri.startswith("data:image/svg+xml;base64,")


def test_no_logo(tmp_path: Path) -> None:
    assert load_config(site(tmp_path, None)).logo_uri() is None
    assert load_config(site(tmp_path, "")).logo_uri() is None


@pytest.mark.parametrize(("name", "content", "words"), [
    ("missing.png", None, "missing.png not found"),
    ("logo.png", b"not an image at all", "is not an image gate can embed (PNG, JPEG, GIF or SVG)"),
    ("logo.txt", b"<html><body>hi</body></html>", "is not an image"),
    ("big.png", PNG + b"\0" * MAX_BYTES, "a logo may be at most 2 MiB"),
    ("adir", "dir", "is not a file"),
])
def test_a_bad_logo_is_refused_at_load(tmp_path: Path, name: str, content: bytes | str | None,
                                       words: str) -> None:
    target = tmp_path / "site" / name
    cfg = site(tmp_path, name)
    if content == "dir":
        target.mkdir()
    elif isinstance(content, bytes):
        target.write_bytes(content)
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    line = err.value.one_line()
    assert line.startswith(f"{cfg}: report.logo: "), line
    assert words in line and str(target) in line and "\n" not in line
    assert err.value.exit_code == 4


def test_an_unreadable_logo_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = site(tmp_path, "logo.png")
    target = tmp_path / "site" / "logo.png"
    target.write_bytes(PNG)

    def denied(self: Path) -> bytes:  # chmod 0 does not stop root, who may run the tests
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert err.value.key == "report.logo"
    assert "logo.png cannot be read: Permission denied" in err.value.message


def test_a_logo_given_by_set_is_blamed_on_the_set(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(site(tmp_path, None), ["report.logo=nope.svg"])
    assert err.value.key == "--set report.logo" and "nope.svg not found" in err.value.message


@pytest.mark.parametrize(("data", "mime"), [
    (PNG, "image/png"), (b"\xff\xd8\xff\xe0rest", "image/jpeg"), (b"GIF89a...", "image/gif"),
    (b"\xef\xbb\xbf  <svg xmlns='x'/>", "image/svg+xml"), (SVG, "image/svg+xml"),
    (b"<?xml version='1.0'?><html/>", None), (b"", None),
])
def test_image_type_reads_the_signature(data: bytes, mime: str | None) -> None:
    assert image_type(data) == mime
