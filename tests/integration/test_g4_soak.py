"""G4's soak outlives its viewer: the gate process killed mid-soak, `gate resume` re-attaches
and stores every window exactly once while the soak itself never stopped; a soak whose own
process dies is ERROR with every window it wrote kept and the cause named; the demo's soak
scenarios (a TTFT drift, the tier silently off mid-soak) end STOP-LOSS naming the
criterion. All on the simulated site (the accelerated arm, a soak of seconds)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from g3_site import Site, one_cell_site
from gate_testing import GATE

SHORT = {"duration": "16s", "window": "1s", "baseline": "4s", "concurrency": 4}
WINDOWS = 16


@pytest.fixture
def site(tmp_path: Path) -> Site:
    with one_cell_site(tmp_path) as s:
        s.edit({"gates": {"g4": SHORT}})
        yield s  # type: ignore[misc]


def _spool_state(site: Site, run_id: int) -> dict[str, object] | None:
    path = site.root / "artifacts" / f"run-{run_id}" / "g4-soak" / "state.json"
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def _start_g4(site: Site) -> subprocess.Popen[str]:
    return subprocess.Popen([*GATE, "run", "G4", "--force"], cwd=site.root, env=site.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_windows(site: Site, run_id: int, n: int, timeout: float = 120) -> dict[str, object]:
    """The soak's state once it wrote `n` windows."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        state = _spool_state(site, run_id)
        if state is not None and int(str(state.get("windows_written", 0))) >= n:
            return state
        time.sleep(0.2)
    raise AssertionError(f"the soak wrote fewer than {n} windows in {timeout} s")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_the_soak_outlives_its_killed_viewer_and_resume_stores_each_window_once(
        site: Site) -> None:
    viewer = _start_g4(site)
    state = _wait_windows(site, 1, 4)
    viewer.send_signal(signal.SIGKILL)  # the laptop closed: no cleanup at all
    viewer.wait(timeout=30)
    pid = int(str(state["pid"]))
    assert _alive(pid), "the soak died with its viewer"
    stored_before = site.query("SELECT COUNT(*) FROM soak_window WHERE run_id = 1")[0][0]
    assert isinstance(stored_before, int) and stored_before >= 1
    status = site.gate("status")  # says the soak goes on, and how to re-attach
    said = " ".join(status.stdout.split())  # a note wraps between words
    assert "its soak is still running" in said, status.stdout + status.stderr
    assert "`gate resume 1` re-attaches" in said, status.stdout

    resumed = site.gate("resume", "1", timeout=300)
    assert resumed.returncode in (0, 2), resumed.stdout + resumed.stderr
    assert "G4 run 1:" in resumed.stdout, resumed.stdout
    rows = site.query("SELECT idx FROM soak_window WHERE run_id = 1 ORDER BY idx")
    assert [r[0] for r in rows] == list(range(WINDOWS))  # each window once, none missing
    started = site.query("SELECT COUNT(*) FROM event WHERE run_id = 1 "
                         "AND name = 'G4 soak started'")[0][0]
    attached = site.query("SELECT COUNT(*) FROM event WHERE run_id = 1 "
                          "AND name = 'G4 soak attached'")[0][0]
    assert (started, attached) == (1, 1)  # never started twice
    final = _spool_state(site, 1)
    assert final is not None and final["status"] == "done" and final["pid"] == pid
    run = site.run_json(1)
    checks = {c["nodeid"].rpartition("::")[2]: c["outcome"]  # type: ignore[index]
              for c in run["checks"]}  # type: ignore[attr-defined]
    assert checks["test_soak"] == "PASS", checks
    assert checks["test_criterion[engaged]"] == "PASS", checks
    assert checks["test_criterion[engine_clock]"] == "PASS", checks  # the engine agrees
    # a 16 s soak is a weakened setting: at best it needs a reviewer's sign-off (on a
    # busy machine a drift of 16 windows can also be undecided: INCONCLUSIVE either way)
    assert run["verdict"] == "INCONCLUSIVE", run["reason"]
    undecided = [k for k, v in checks.items() if v == "INCONCLUSIVE"]
    drifts_only = bool(undecided) and all(k.endswith("_drift]") for k in undecided)
    assert run["needs_signoff"] or drifts_only, checks


def test_a_soak_whose_process_dies_is_error_with_its_windows_kept(site: Site) -> None:
    viewer = _start_g4(site)
    state = _wait_windows(site, 1, 3)
    os.kill(int(str(state["pid"])), signal.SIGKILL)
    out, _ = viewer.communicate(timeout=120)
    assert viewer.returncode == 3, out  # ERROR
    assert "died after" in out and "windows" in out, out
    kept = site.query("SELECT COUNT(*) FROM soak_window WHERE run_id = 1")[0][0]
    assert isinstance(kept, int) and kept >= 3
    run = site.run_json(1)
    outcomes = {c["outcome"] for c in run["checks"]}  # type: ignore[index]
    assert outcomes == {"ERROR"}, run["checks"]


@pytest.mark.parametrize(("scenario", "criterion", "words"), [
    ("soak-drift", "ttft_drift", "TTFT p50 drift: "),
    ("soak-fallback", "engaged", "accelerator not engaged in window "),
])
def test_the_demos_soak_faults_end_stop_loss_naming_the_criterion(
        tmp_path: Path, scenario: str, criterion: str, words: str) -> None:
    """The scenario's site as `gate demo --scenario` writes it (its 24 s soak, its fault on
    G4's own layout), G4 alone: every request succeeds, and still STOP-LOSS."""
    with one_cell_site(tmp_path, scenario) as s:
        out = s.gate("run", "G4", "--force", timeout=300)
        assert out.returncode == 1, out.stdout + out.stderr  # STOP-LOSS
        run = s.run_json(1)
        checks = {c["nodeid"].rpartition("::")[2]: c  # type: ignore[index]
                  for c in run["checks"]}  # type: ignore[attr-defined]
        missed = checks[f"test_criterion[{criterion}]"]
        assert missed["outcome"] == "STOP-LOSS", missed
        assert str(missed["message"]).startswith(words), missed["message"]
        assert checks["test_criterion[error_rate]"]["outcome"] == "PASS"


# A vendor's hand on the client host: every window file the soak writes says the TTFT and
# the throughput of its first window (the engines' TTFT drifts meanwhile). Loaded into the
# soak's process by Python's own sitecustomize hook, as a modified host would.
FLAT_WINDOWS = """\
from harness.loadgen import soak_spool

_first = {}
_write = soak_spool.Spool.write_window


def _flat(self, index, doc):
    doc = dict(doc)
    for key in ("ttft_p50_s", "ttft_p99_s", "output_tokens"):
        _first.setdefault(key, doc.get(key))
        doc[key] = _first[key]
    clock = dict(doc.get("clock") or {})
    if clock.get("first_tokens"):
        clock["ttft_sum_s"] = clock["first_tokens"] * _first["ttft_p50_s"]
    doc["clock"] = clock
    _write(self, index, doc)


soak_spool.Spool.write_window = _flat
"""


def test_window_files_faked_flat_are_caught_by_the_engines_own_clock(tmp_path: Path) -> None:
    """The drift scenario's engine slows down, and the soak's window files say it did not:
    the gate's own scrapes of the engine's TTFT histogram show the drift (STOP-LOSS by the
    engines' clock), and the soak's TTFT below the engine's own is INCONCLUSIVE."""
    hook = tmp_path / "vendor"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(FLAT_WINDOWS)
    with one_cell_site(tmp_path, "soak-drift") as s:
        out = s.gate("run", "G4", "--force", timeout=300, PYTHONPATH=str(hook))
        assert out.returncode == 1, out.stdout + out.stderr  # STOP-LOSS
        run = s.run_json(1)
        checks = {c["nodeid"].rpartition("::")[2]: c  # type: ignore[index]
                  for c in run["checks"]}  # type: ignore[attr-defined]
        stored = s.query("SELECT ttft_p50_s FROM soak_window WHERE run_id = 1")
        assert len({t for (t,) in stored}) == 1  # the files were faked flat, as stored
        missed = checks["test_criterion[ttft_drift]"]
        assert missed["outcome"] == "STOP-LOSS", missed
        assert str(missed["message"]).startswith(
            "by the engines' own clock: TTFT p50 drift: "), missed["message"]
        assert checks["test_criterion[engine_clock]"]["outcome"] == "INCONCLUSIVE", checks


HW = Path(__file__).resolve().parents[1] / "fixtures" / "hw"
SIMHOSTS = Path(__file__).resolve().parents[1] / "fixtures" / "simhosts"
PACKAGED = Path(__file__).resolve().parents[2] / "harness" / "sim" / "hosts" / "captures"
SOAK_PROFILES = """\
version: 1
profiles:
  soak-gpu:
    description: "the demo's 8x V100S, with a kernel journal and one NVMe device"
    commands:
      - capture: nvidia-smi.xml
        forms: [[nvidia-smi, -q, -x]]
      - capture: journal.txt
        forms: [[journalctl, -k, -b, --no-pager]]
      - capture: nvme-list.json
        forms: [[nvme, list, -o, json]]
      - capture: smart-log.json
        forms: [[nvme, smart-log, "/dev/nvme*", -o, json]]
  soak-storage:
    description: "a storage host's NVMe devices"
    commands:
      - capture: nvme-list.json
        forms: [[nvme, list, -o, json]]
      - capture: smart-log.json
        forms: [[nvme, smart-log, "/dev/nvme*", -o, json]]
"""


def _captures(root: Path) -> Path:
    """One host's hardware captures, as the simulated hosts answer them."""
    root.mkdir()
    (root / "profiles.yaml").write_text(SOAK_PROFILES)
    shutil.copy(PACKAGED / "nvidia-smi-q-x_datakit_8x-v100s-pcie_drv460.xml",
                root / "nvidia-smi.xml")
    shutil.copy(SIMHOSTS / "journalctl-k_linux-insides_ubuntu24.04_boot-start.txt",
                root / "journal.txt")
    shutil.copy(HW / "nvme-list-json_netdata_v2.11_3x-firecuda530.json",
                root / "nvme-list.json")
    shutil.copy(HW / "nvme-smart-log-json_netdata_v2.11.json", root / "smart-log.json")
    return root


def _media_errors(captures: Path) -> None:
    """The storage host's devices report 3 media errors: the real smart-log capture with
    its media_errors counter raised (no capture with media errors > 0 is on hand)."""
    log = json.loads((HW / "nvme-smart-log-json_netdata_v2.11.json").read_text())
    assert log["media_errors"] == 0
    log["media_errors"] = 3
    (captures / "smart-log.json").write_text(json.dumps(log, indent=2))


@pytest.mark.parametrize(("fault", "said"), [
    ("xid", "gpu1: 7 new Xid event(s) in the kernel journal by window "),
    # 3 errors on each of the host's 3 devices (one capture answers for every device)
    ("nvme", "fx100-sim: 9 new NVMe media error(s) by window "),
])
def test_a_hardware_error_mid_soak_is_stop_loss_naming_the_host(
        site: Site, fault: str, said: str) -> None:
    """A fault injected on a simulated host while the soak runs: the GPU host's kernel
    journal gains Xid lines (its capture replaced by a real journal with Xid 45 on four
    GPUs), or the storage host's NVMe devices count media errors. The hardware criterion,
    read by the gate over its own transport, ends G4 STOP-LOSS naming the host."""
    gpu, storage = _captures(site.root / "gpu-captures"), \
        _captures(site.root / "storage-captures")
    hosts = site.root / "hosts.ini"
    hosts.write_text(hosts.read_text()
                     .replace("gate_sim_hardware=gpu-8xv100s",
                              f"gate_sim_hardware=soak-gpu gate_sim_captures={gpu}")
                     .replace("gate_sim_hardware=storage-nvme",
                              f"gate_sim_hardware=soak-storage gate_sim_captures={storage}"))
    cfg = yaml.safe_load(site.config.read_text())
    cfg["gates"]["g4"].pop("unverifiable", None)  # this site reads every source
    site.config.write_text(yaml.safe_dump(cfg, sort_keys=False))

    viewer = _start_g4(site)
    _wait_windows(site, 1, 4)  # its first reading was taken before the first window
    if fault == "xid":
        shutil.copy(SIMHOSTS / "journalctl-k_ogkm-issue1150_xid45.txt", gpu / "journal.txt")
    else:
        _media_errors(storage)
    out, _ = viewer.communicate(timeout=300)
    assert viewer.returncode == 1, out  # STOP-LOSS
    checks = {c["nodeid"].rpartition("::")[2]: c  # type: ignore[index]
              for c in site.run_json(1)["checks"]}  # type: ignore[attr-defined]
    missed = checks["test_criterion[hardware]"]
    assert missed["outcome"] == "STOP-LOSS", missed
    assert str(missed["message"]).startswith(said), missed["message"]
    assert checks["test_criterion[error_rate]"]["outcome"] == "PASS"
    read = site.query("SELECT source, COUNT(*) FROM series WHERE run_id = 1 "
                      "AND metric = 'g4:hw:nvme_media_errors' GROUP BY source")
    assert {str(h) for h, _ in read} == {"gpu1", "fx100-sim"}  # both hosts' devices read


def test_an_engine_restarted_mid_soak_is_seen_by_the_gate_itself(site: Site) -> None:
    """The accelerated engine restarted mid-soak (a new process on the same port): the
    restarts criterion ends G4 STOP-LOSS, and the gate saw the new process itself (its pid
    on the port, not the engine's metrics, which an engine in the vendor's hands writes)."""
    viewer = _start_g4(site)
    _wait_windows(site, 1, 3)
    engine = next((site.root / "engines").glob("accelerated-TP8*-0"))
    subprocess.run([sys.executable, "-m", "harness.sim.control", "restart", "--state-dir",
                    str(engine)], check=True, capture_output=True, timeout=60)
    out, _ = viewer.communicate(timeout=300)
    assert viewer.returncode == 1, out  # STOP-LOSS
    checks = {c["nodeid"].rpartition("::")[2]: c  # type: ignore[index]
              for c in site.run_json(1)["checks"]}  # type: ignore[attr-defined]
    missed = checks["test_criterion[restarts]"]
    assert missed["outcome"] == "STOP-LOSS", missed
    assert "the engine restarted (1 > 0)" in str(missed["message"]), missed["message"]
    seen = site.query("SELECT message FROM event WHERE run_id = 1 "
                      "AND name = 'G4 engine process changed'")
    assert len(seen) == 1 and "pid " in str(seen[0][0]), seen
    procs = site.query("SELECT COUNT(*) FROM engine_process WHERE run_id = 1 "
                       "AND arm = 'accelerated'")[0][0]
    assert procs == 2, procs  # the first engine and the one that replaced it
