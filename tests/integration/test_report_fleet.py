"""`gate report --fleet` on a real store, read back as the customer keeps it: PDFs through
pdftotext (rows, verdict words in each language, the SIMULATED stamp on every page, the
figure), a filter narrowing the rows, and the command as a user runs it (a subprocess;
a bad --since is one line and exit 4). The store is built through the store API
(harness.store.runs / writer), no gate is run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from harness.report.fleet import local_day, render_fleet_report
from harness.store import Store, writer
from harness.store import runs as store_runs
from harness.store.fleet import Filters

GATE = [sys.executable, "-m", "harness"]
DAY = 86400.0
NOW = time.time()
OLD = NOW - 40 * DAY  # the campaign the --since filter leaves out


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        self.t += 1.0
        return self.t


Cells = dict[tuple[str, int], tuple[float, float]]


def run(store: Store, site: str, campaign: str, gate: str, verdict: str | None, *,
        customer: str = "", vendor: str = "FastKV", cells: Cells | None = None,
        needs_signoff: bool = False, partial: bool = False, **kw: Any) -> int:
    """A gate run finished with `verdict` (None: still running), G3 `cells` as
    (layout, tier) -> (drop, gain)."""
    rid = store_runs.start_run(store, store_runs.NewRun(
        campaign=campaign, site=site, customer=customer, kind="gate", gate=gate,
        config_json={"site": {"name": site, "vendor": vendor}}, **kw))
    for (layout, tier), (drop, gain) in (cells or {}).items():
        writer.upsert_cell(store, rid, {"layout": layout, "tier": tier, "verdict": "PASS",
                                        "drop": drop, "drop_lo": drop - 0.04,
                                        "drop_hi": drop + 0.04, "gain": gain,
                                        "gain_lo": gain - 0.03, "gain_hi": gain + 0.03})
    if verdict is not None:
        store_runs.finish_run(store, rid, verdict=verdict, reason="",
                              needs_signoff=needs_signoff, partial=partial)
    return rid


def fill(store: Store) -> None:
    """Five campaigns in three sites: a clean PASS; a simulated one; a weakened G3 not
    yet signed (above band); a STOP-LOSS with a forced G1, a later partial run and a G4
    in progress; a weakened G3 signed (PASS) whose runs are 40 days old."""
    with mock.patch("harness.store.runs._now", Clock(NOW - 2 * DAY)):
        for gate in ("G1", "G2", "G4"):
            run(store, "acme-sh", "poc-1", gate, "PASS", customer="ACME")
        run(store, "acme-sh", "poc-1", "G3", "PASS", customer="ACME", cells={
            ("TP8", 4): (0.38, 0.33), ("TP8", 8): (0.36, 0.34), ("TP4x2", 4): (0.35, 0.32)})
        run(store, "acme-sh", "sim-1", "G1", "PASS", customer="ACME", simulated=True)
        run(store, "acme-sh", "sim-1", "G3", "PASS", customer="ACME", simulated=True,
            cells={("TP8", 4): (0.30, 0.31), ("TP8", 16): (0.33, 0.30)})
        run(store, "globex-bj", "weak-1", "G3", "INCONCLUSIVE", customer="Globex Ltd",
            vendor="SlowKV", needs_signoff=True, cells={("TP8", 4): (0.27, 0.45)})
        run(store, "globex-bj", "stop-1", "G1", "STOP-LOSS", customer="Globex Ltd",
            vendor="SlowKV", forced=True)
        run(store, "globex-bj", "stop-1", "G2", "PASS", customer="Globex Ltd", vendor="SlowKV")
        run(store, "globex-bj", "stop-1", "G2", "ERROR", customer="Globex Ltd",
            vendor="SlowKV", partial=True)
        run(store, "globex-bj", "stop-1", "G3", "STOP-LOSS", customer="Globex Ltd",
            vendor="SlowKV", cells={("TP8", 4): (0.10, 0.33), ("TP8", 8): (0.36, 0.34)})
        run(store, "globex-bj", "stop-1", "G4", None, customer="Globex Ltd", vendor="SlowKV")
    with mock.patch("harness.store.runs._now", Clock(OLD)):
        signed = run(store, "initech-gz", "signed-1", "G3", "INCONCLUSIVE",
                     customer="Initech", needs_signoff=True, cells={("TP8", 4): (0.40, 0.55)})
        store_runs.add_signoff(store, signed, role="reviewer", name="Dr. Li", note="fine")


@pytest.fixture(scope="module")
def fleet_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, Path]]:
    root = tmp_path_factory.mktemp("fleet")
    store = Store(f"sqlite:///{root / 'gate.db'}")
    fill(store)
    yield store, root
    store.close()


def text(pdf: Path, page: int | None = None) -> str:
    args = ["pdftotext", "-layout"] + (["-f", str(page), "-l", str(page)] if page else [])
    return subprocess.run([*args, str(pdf), "-"], capture_output=True, text=True,
                          check=True).stdout


def pages(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True)
    found = re.search(r"^Pages:\s+(\d+)", info.stdout, re.M)
    assert found is not None
    return int(found.group(1))


def flat(s: str) -> str:
    return " ".join(s.split())


REFS = ("acme-sh/poc-1", "acme-sh/sim-1", "globex-bj/stop-1", "globex-bj/weak-1",
        "initech-gz/signed-1")


def test_english_pdf_rows_words_stamp_and_figure(fleet_db: tuple[Store, Path],
                                                 tmp_path: Path) -> None:
    store, _ = fleet_db
    pdf, html = render_fleet_report(store, tmp_path / "fleet", "en", "both")
    assert (pdf.suffix, html.suffix) == (".pdf", ".html")
    for p in range(1, pages(pdf) + 1):
        assert "SIMULATED" in text(pdf, p), f"page {p} lacks the SIMULATED stamp"
    whole = flat(text(pdf))
    assert "SIMULATED: Fleet: every site and campaign" in whole
    assert "5 campaign(s) in 3 site(s)" in whole and "none (every campaign)" in whole
    assert [r for r in REFS if r in whole] == list(REFS)
    assert whole.index("acme-sh/poc-1") < whole.index("globex-bj/stop-1")
    for word in ("PASS", "STOP-LOSS", "INCONCLUSIVE", "not run", "FORCED",
                 "WEAKENED (unsigned)", "WEAKENED (signed)", "RUNNING #", "PARTIAL #"):
        assert word in whole, word
    assert "drop 35.0 % TP4x2 c=4" in whole and "gain 32.0 % TP4x2 c=4" in whole
    assert "drop 10.0 % c=4" in whole and "gain 33.0 % c=4" in whole
    assert local_day(NOW - 2 * DAY) in whole and local_day(OLD) in whole
    assert "vendor SlowKV" in whole and "Globex Ltd" in whole
    assert "G3 across the fleet" in whole and "One point per campaign" in whole
    page = html.read_text()
    assert '<img src="data:image/svg+xml;base64,' in page and 'class="stamp"' in page


def test_chinese_pdf_words_and_stamp(fleet_db: tuple[Store, Path], tmp_path: Path) -> None:
    store, _ = fleet_db
    (pdf,) = render_fleet_report(store, tmp_path / "fleet-zh.pdf", "zh", "pdf")
    for p in range(1, pages(pdf) + 1):
        assert "SIMULATED（模拟）" in text(pdf, p)
    whole = flat(text(pdf))
    assert "模拟：总览：全部站点与测试项目" in whole
    assert "3 个站点中的 5 个测试项目" in whole
    for word in ("通过 (PASS)", "止损 (STOP-LOSS)", "无法判定", "未运行", "强制运行 (FORCED)",
                 "尚未签核", "已签核", "进行中 (RUNNING)", "部分运行 (PARTIAL)",
                 "降幅 35.0 % TP4x2 并发 4", "加速器厂商 SlowKV"):
        assert word in whole, word
    assert "全部测试项目的 G3" in whole and "每个有 G3 数据的测试项目一个点" in whole
    for english in ("campaign(s)", "vendor SlowKV", "drop 35.0", "Filters", "Generated"):
        assert english not in whole


def test_a_filter_narrows_the_rows(fleet_db: tuple[Store, Path], tmp_path: Path) -> None:
    store, _ = fleet_db
    since = time.mktime(time.strptime(local_day(NOW - 10 * DAY), "%Y-%m-%d"))
    (pdf,) = render_fleet_report(store, tmp_path / "globex.pdf", "en", "pdf",
                                 filters=Filters(customer="GLOBEX", since=since))
    whole = flat(text(pdf))
    assert [r for r in REFS if r in whole] == ["globex-bj/stop-1", "globex-bj/weak-1"]
    assert "2 campaign(s) in 1 site(s)" in whole
    assert "customer contains “GLOBEX”" in whole
    assert "SIMULATED" not in whole  # the simulated campaign is not listed
    (none,) = render_fleet_report(store, tmp_path / "none.html", "en", "html",
                                  filters=Filters(accelerator="nope"))
    assert "No campaign matches the filters." in none.read_text()


def gate(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GATE_DB": f"sqlite:///{root / 'gate.db'}"}
    env.pop("GATE_CONFIG", None)
    return subprocess.run([*GATE, *args], cwd=root, capture_output=True, text=True,
                          timeout=300, env=env)


def test_the_command(fleet_db: tuple[Store, Path], tmp_path: Path) -> None:
    _, root = fleet_db
    out = tmp_path / "fleet.html"
    res = gate(root, "report", "--fleet", "--site", "acme-sh", "--format", "html",
               "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == [str(out)]
    page = out.read_text()
    assert "acme-sh/poc-1" in page and "globex-bj" not in page and "<img" in page
    bad = gate(root, "report", "--fleet", "--since", "last week", "--format", "html",
               "-o", str(tmp_path / "x.html"))
    assert bad.returncode == 4 and bad.stdout == ""
    (said,) = bad.stderr.strip().splitlines()
    assert said.startswith("gate: error: --since: not a date: 'last week'"), said
    assert not (tmp_path / "x.html").exists()
    alone = gate(root, "report", "--site", "acme-sh")
    assert alone.returncode == 4 and "only with --fleet" in alone.stderr
