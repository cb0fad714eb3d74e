"""`gate report` and `gate export` as a user runs them: subprocesses on a real store."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from report_support import fill
from sqlalchemy import func, select

from harness.store import runs
from harness.store.db import Store
from harness.store.schema import BenchmarkRow, RequestRow

GATE = [sys.executable, "-m", "harness"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    root = tmp_path_factory.mktemp("cli")
    store = Store(f"sqlite:///{root / 'gate.db'}")
    ids = fill.campaign(store).ids
    stop, _ = fill.g3_run(store, fill.STOP_PLANS, campaign="other-1")
    ids["other"] = stop
    artifact = root / "fio-seq-read.json"
    artifact.write_text(json.dumps({"jobs": [{"read": {"bw": 6_800_000}}]}))
    runs.add_artifact(store, ids["G3"], artifact, kind="fio-json", host="st1")
    store.close()
    return root, ids


def gate(root: Path, *args: str,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "GATE_DB": f"sqlite:///{root / 'gate.db'}"}
    full.pop("GATE_CONFIG", None)
    full.update(env or {})
    return subprocess.run([*GATE, *args], cwd=root, capture_output=True, text=True,
                          timeout=300, env=full)


def pdf_text(pdf: Path) -> str:
    return subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout


def test_report_run_both_formats(site: tuple[Path, dict[str, int]]) -> None:
    root, ids = site
    res = gate(root, "report", str(ids["G3"]), "-o", str(root / "g3.pdf"), "--format", "both")
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [str(root / "g3.pdf"), str(root / "g3.html")]
    assert "PASS" in pdf_text(root / "g3.pdf")
    assert "<html" in (root / "g3.html").read_text()


def test_default_output_is_next_to_the_store_with_the_date(
        site: tuple[Path, dict[str, int]], tmp_path: Path) -> None:
    root, _ids = site
    res = gate(root, "report", "--campaign", "acme-2026q1", "--lang", "zh", env={
        "GATE_DB": f"sqlite:///{root / 'gate.db'}"})
    assert res.returncode == 0, res.stderr
    out = Path(res.stdout.strip())
    day = time.strftime("%Y%m%d", time.gmtime())
    assert out.parent == root and out.name == f"gate-report-acme-2026q1-{day}-zh.pdf"
    assert "通过 (PASS)" in " ".join(pdf_text(out).split())


def test_language_and_format_from_the_config(site: tuple[Path, dict[str, int]],
                                             tmp_path: Path) -> None:
    root, ids = site
    cfg = tmp_path / "site.yaml"
    cfg.write_text("site: {name: acme-sh}\ncampaign: {name: acme-2026q1}\nmodel: {name: m}\n"
                   "report: {lang: zh, format: html}\n")
    res = gate(root, "report", str(ids["other"]), "-c", str(cfg), "-o", str(tmp_path / "o"))
    assert res.returncode == 0, res.stderr
    page = (tmp_path / "o.html").read_text()
    assert 'lang="zh"' in page and "止损 (STOP-LOSS)" in page
    missing = gate(root, "report", str(ids["other"]), "-c", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 4 and "config file not found" in missing.stderr


@pytest.mark.parametrize("args,message", [
    ((), "give a run id or --campaign NAME"),
    (("1", "--campaign", "acme-2026q1"), "give a run id or --campaign NAME"),
    (("424242",), "no run 424242"),
    (("--campaign", "no-such"), "no campaign 'no-such'"),
])
def test_bad_requests_are_one_line_exit_4(site: tuple[Path, dict[str, int]],
                                          args: tuple[str, ...], message: str) -> None:
    root, _ = site
    res = gate(root, "report", *args)
    assert res.returncode == 4
    assert message in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_chinese_without_cjk_font_says_which_package(site: tuple[Path, dict[str, int]],
                                                     tmp_path: Path) -> None:
    root, ids = site
    (tmp_path / "fonts").mkdir()
    conf = tmp_path / "fonts.conf"
    conf.write_text(f"<?xml version='1.0'?><fontconfig><dir>{tmp_path / 'fonts'}</dir>"
                    f"<cachedir>{tmp_path / 'cache'}</cachedir></fontconfig>")
    res = gate(root, "report", str(ids["G3"]), "--lang", "zh",
               env={"FONTCONFIG_FILE": str(conf)})
    assert res.returncode == 4
    assert "install fonts-wqy-microhei (apt-get install fonts-wqy-microhei)" in res.stderr


def test_export_pack_verifies_and_tampering_is_named(site: tuple[Path, dict[str, int]],
                                                     tmp_path: Path) -> None:
    root, ids = site
    pack = tmp_path / "pack.tar.gz"
    res = gate(root, "export", str(ids["G3"]), "-o", str(pack))
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str(pack)
    with tarfile.open(pack) as tar:
        names = {m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()}
        manifest = json.load(tar.extractfile("pack/manifest.json"))  # type: ignore[arg-type]
        tar.extractall(tmp_path / "x", filter="data")
    assert {"manifest.json", "store.sqlite", "report/report.pdf", "report/report.html",
            "report/report-model.json", f"artifacts/run{ids['G3']}/fio-seq-read.json"} <= names
    assert set(manifest["files"]) == names - {"manifest.json"}
    assert manifest["runs"] == [ids["G3"]] and manifest["artifacts"][0]["status"] == "ok"
    packed = Store(f"sqlite:///{tmp_path / 'x' / 'pack' / 'store.sqlite'}")
    source = Store(f"sqlite:///{root / 'gate.db'}")
    try:
        assert [r.id for r in runs.runs(packed)] == [ids["G3"]]

        def count(store: Store) -> int:
            q = (select(func.count()).select_from(RequestRow).join(BenchmarkRow)
                 .where(BenchmarkRow.run_id == ids["G3"]))
            with store.engine.connect() as conn:
                return int(conn.scalar(q) or 0)

        assert count(packed) == count(source) > 0
        assert manifest["rows"]["request"] == count(source)
    finally:
        packed.close()
        source.close()
    ok = gate(root, "export", "verify", str(pack))
    assert ok.returncode == 0 and "ok:" in ok.stdout

    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(pack) as src, tarfile.open(bad, "w:gz") as dst:
        for m in src.getmembers():
            data = src.extractfile(m).read() if m.isfile() else None  # type: ignore[union-attr]
            if m.name.endswith("report/report.html") and data is not None:
                data = data.replace(b"PASS", b"FAIL", 1)
                m.size = len(data)
            dst.addfile(m, io.BytesIO(data) if data is not None else None)
    res = gate(root, "export", "verify", str(bad))
    assert res.returncode == 3
    assert "report/report.html (sha256 differs)" in res.stderr


def test_export_campaign_and_usage(site: tuple[Path, dict[str, int]], tmp_path: Path) -> None:
    root, ids = site
    pack = tmp_path / "camp.tar.gz"
    res = gate(root, "export", "--campaign", "acme-2026q1", "-o", str(pack))
    assert res.returncode == 0, res.stderr
    with tarfile.open(pack) as tar:
        manifest = json.load(tar.extractfile("camp/manifest.json"))  # type: ignore[arg-type]
    assert manifest["runs"] == [ids["G1"], ids["G2"], ids["G3"], ids["G4"]]
    assert "run_lock" in manifest["tables_not_copied"]
    assert gate(root, "export", "verify", str(pack)).returncode == 0
    assert gate(root, "export", "verify").returncode == 4
    assert gate(root, "export", "abc").returncode == 4
    junk = tmp_path / "junk.tar.gz"
    junk.write_text("not a tar")
    assert gate(root, "export", "verify", str(junk)).returncode == 4


def page1_text(pdf: Path) -> str:
    out = subprocess.run(["pdftotext", "-f", "1", "-l", "1", str(pdf), "-"],
                         capture_output=True, text=True, check=True).stdout
    return " ".join(out.split())


@pytest.mark.parametrize(("kind", "verdict", "en", "zh"), [
    ("bench", None, "Benchmark (not a gate)", "基准测试（不是关口）"),
    ("import", None, "Import of a vllm bench result (not a gate)",
     "导入的 vllm bench 结果（不是关口）"),
    ("bench", "PASS", "Benchmark (not a gate)", "基准测试（不是关口）"),  # an older harness's
])
def test_bench_and_import_reports_say_what_they_are_and_carry_no_pass(
        tmp_path: Path, kind: str, verdict: str | None, en: str, zh: str) -> None:
    """The cover of a run that is not a gate names it, shows its own `recorded` badge and
    no gate's badge or criterion: never a PASS, whatever verdict is stored on it."""
    store = Store(f"sqlite:///{tmp_path / 'gate.db'}")
    fill.campaign(store)  # the campaign's gates passed: their badges must not show here
    rid = runs.start_run(store, runs.NewRun(campaign="acme-2026q1", site="acme-sh",
                                            customer="ACME", kind=kind))
    runs.finish_run(store, rid, verdict=verdict,
                    reason="12 requests completed")
    store.close()
    for lang, what, word, other in (("en", en, "recorded (no verdict)", "PASS"),
                                    ("zh", zh, "已记录，无判定 (recorded)", "通过")):
        pdf = tmp_path / f"r-{lang}.pdf"
        res = gate(tmp_path, "report", str(rid), "--lang", lang, "-o", str(pdf))
        assert res.returncode == 0, res.stderr
        page = page1_text(pdf)
        assert what in page and word in page, page
        assert other not in page and "PASS" not in page, page
        assert "12 requests completed" in page
    body = " ".join(pdf_text(tmp_path / "r-en.pdf").split()).split("Appendix: evidence")[0]
    assert "PASS" not in body and "not a gate" in body, body  # (the glossary defines PASS)
