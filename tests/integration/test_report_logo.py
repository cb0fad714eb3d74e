"""report.logo on the first page of a real PDF, rendered by `gate report` as a user runs it
(the logo comes from the config at hand; the PDF carries the image itself)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image
from report_support import fill

from harness.store.db import Store

GATE = [sys.executable, "-m", "harness"]
CONFIG = "site: {name: acme-sh}\ncampaign: {name: acme-2026q1}\nmodel: {name: m}\n"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    root = tmp_path_factory.mktemp("logo")
    store = Store(f"sqlite:///{root / 'gate.db'}")
    rid = fill.new_run(store, "G1")
    fill.add_checks(store, rid, fill.G1_CHECKS)
    fill.finish_from_checks(store, rid)
    store.close()
    (root / "brand").mkdir()
    Image.new("RGB", (123, 45), (18, 49, 79)).save(root / "brand" / "logo.png")
    return root, rid


def gate(root: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GATE_DB": f"sqlite:///{root / 'gate.db'}"}
    env.pop("GATE_CONFIG", None)
    return subprocess.run([*GATE, *args], cwd=cwd or root, capture_output=True, text=True,
                          timeout=300, env=env)


def images(pdf: Path, page: int) -> list[tuple[int, int]]:
    """(width, height) of every raster image on `page`, from poppler's pdfimages."""
    out = subprocess.run(["pdfimages", "-list", "-f", str(page), "-l", str(page), str(pdf)],
                         capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in out.splitlines()[2:]]
    return [(int(r[3]), int(r[4])) for r in rows if len(r) > 4 and r[2] == "image"]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_logo_is_on_page_one(site: tuple[Path, int], tmp_path: Path, lang: str) -> None:
    root, rid = site
    cfg = root / f"gate-{lang}.yaml"
    cfg.write_text(CONFIG + f"report: {{lang: {lang}, logo: brand/logo.png}}\n")
    pdf = tmp_path / "with.pdf"
    res = gate(root, "report", str(rid), "-c", str(cfg), "-o", str(pdf), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert images(pdf, 1) == [(123, 45)]
    assert all(images(pdf, p) == [] for p in (2, 3))  # page 1 only
    plain = root / "plain.yaml"
    plain.write_text(CONFIG + f"report: {{lang: {lang}}}\n")
    without = tmp_path / "without.pdf"
    assert gate(root, "report", str(rid), "-c", str(plain), "-o", str(without)).returncode == 0
    assert images(without, 1) == []


def test_html_report_embeds_the_logo(site: tuple[Path, int], tmp_path: Path) -> None:
    root, rid = site
    cfg = root / "gate-html.yaml"
    cfg.write_text(CONFIG + "report: {format: html, logo: brand/logo.png}\n")
    res = gate(root, "report", str(rid), "-c", str(cfg), "-o", str(tmp_path / "r"))
    assert res.returncode == 0, res.stderr
    page = (tmp_path / "r.html").read_text()
    assert re.search(r'<img class="logo" src="data:image/png;base64,[A-Za-z0-9+/=]+"', page)
    assert "brand/logo.png" not in page  # self-contained: no path to a file


def test_a_missing_logo_is_one_line_exit_4(site: tuple[Path, int]) -> None:
    root, rid = site
    cfg = root / "gate-missing.yaml"
    cfg.write_text(CONFIG + "report: {logo: brand/nope.png}\n")
    res = gate(root, "report", str(rid), "-c", str(cfg))
    assert res.returncode == 4, res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert "report.logo: brand/nope.png not found" in res.stderr
