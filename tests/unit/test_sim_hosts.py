"""Simulated hardware: the packaged captures' licences and checksums, the profiles' answers
(byte-exact captures, loud refusals), catalogs of one's own, and the transport wrapper."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from harness.errors import ConfigError, InventoryError
from harness.sim.hardware_transport import SimulatedHardwareTransport
from harness.sim.hosts import PACKAGED, load_catalog
from harness.transport import FakeResponse, FakeTransport, LocalTransport

TEST_CAPTURES = Path(__file__).resolve().parent.parent / "fixtures" / "simhosts"
PERMISSIVE = {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause"}


def _sources_rows(path: Path) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] not in ("file", "---") and "." in cells[0]:
            rows[cells[0]] = cells
    return rows


def test_every_packaged_capture_is_listed_permissive_and_unchanged() -> None:
    rows = _sources_rows(PACKAGED / "SOURCES.md")
    files = {p.name for p in PACKAGED.iterdir() if p.name not in ("SOURCES.md",
                                                                  "profiles.yaml")}
    assert files == set(rows), "every shipped capture has a SOURCES.md row and vice versa"
    for name, (_, _command, _source, licence, digest, _notes) in rows.items():
        assert licence in PERMISSIVE, f"{name}: {licence} may not ship in the package"
        actual = hashlib.sha256((PACKAGED / name).read_bytes()).hexdigest()[:16]
        assert actual == digest, f"{name} differs from the capture recorded in SOURCES.md"


def test_test_only_captures_are_not_in_the_package() -> None:
    shipped = {p.name for p in PACKAGED.iterdir()}
    test_only = set(_sources_rows(TEST_CAPTURES / "SOURCES.md"))
    assert test_only and not shipped & test_only


def test_every_profile_command_answers_its_capture_byte_for_byte() -> None:
    catalog = load_catalog()
    assert {"gpu-a100", "gpu-t4", "storage-nvme", "client"} <= set(catalog.profiles)
    for profile in catalog.profiles.values():
        for cmd in profile.commands:
            raw = (PACKAGED / cmd.capture).read_text(encoding="utf-8")
            expected = "".join(raw.splitlines(keepends=True)[cmd.skip_lines:])
            for form in cmd.forms:
                argv = [w.replace("*", "n1") for w in form]  # a device that matches the glob
                answer = profile.answer(argv, "h")
                assert (answer.rc, answer.capture) == (0, cmd.capture), (profile.name, argv)
                assert answer.stdout == expected and answer.stderr == ""


def test_skip_lines_drops_only_the_line_the_publisher_added() -> None:
    ethtool = load_catalog().profiles["client"].answer(["ethtool", "eth0"], "c")
    raw = (PACKAGED / "ethtool_node-exporter_e1000e_eth0.txt").read_text(encoding="utf-8")
    assert raw.startswith("# ethtool eth0\n")
    assert ethtool.stdout == raw.removeprefix("# ethtool eth0\n")
    assert ethtool.stdout.startswith("Settings for eth0:")


def test_program_path_is_ignored_and_device_globs_match() -> None:
    catalog = load_catalog()
    a100 = catalog.profiles["gpu-a100"].answer(["/usr/bin/nvidia-smi", "-x", "-q"], "g")
    assert a100.rc == 0 and "<product_name>NVIDIA A100-SXM4-80GB</product_name>" in a100.stdout
    nvme = catalog.profiles["storage-nvme"].answer(
        ["nvme", "id-ctrl", "/dev/nvme0n1", "-o", "json"], "s")
    assert nvme.rc == 0 and '"mn" : "WDC PC SN730' in nvme.stdout
    assert catalog.simulates(["/usr/sbin/lspci", "-vvv"]) and catalog.simulates(["lsblk"])
    assert not catalog.simulates(["echo", "nvme"]) and not catalog.simulates([])
    other = catalog.profiles["storage-nvme"].answer(
        ["nvme", "id-ctrl", "/dev/nvme1", "-o", "json"], "s")
    assert other.rc == 127  # only nvme0 was captured


def test_a_command_without_capture_is_refused_naming_what_is_answered() -> None:
    answer = load_catalog().profiles["gpu-a100"].answer(["nvidia-smi", "topo", "-m"], "gpu1")
    assert answer.rc == 127 and answer.stdout == "" and answer.capture is None
    assert "gpu1" in answer.stderr and "gpu-a100" in answer.stderr
    assert "`nvidia-smi topo -m`" in answer.stderr and "nvidia-smi -q -x" in answer.stderr


def test_a_catalog_of_ones_own_layers_over_the_packaged_one() -> None:
    catalog = load_catalog(TEST_CAPTURES)
    assert "gpu-a100" in catalog.profiles and "lab-gpu-h100" in catalog.profiles
    gds = catalog.profiles["lab-gpu-h100"].answer(
        ["/usr/local/cuda-12.8/gds/tools/gdscheck", "-p"], "h")
    assert gds.rc == 0 and "GDS release version" in gds.stdout
    assert "gdscheck" in catalog.tools and "ibstat" in catalog.tools


def test_bad_manifests_are_config_errors_naming_file_and_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no profiles\.yaml"):
        load_catalog(tmp_path)
    (tmp_path / "profiles.yaml").write_text(
        "profiles:\n  p:\n    description: d\n    commands:\n"
        "      - {capture: missing.txt, forms: [[nvme, list]]}\n")
    with pytest.raises(ConfigError) as missing:
        load_catalog(tmp_path)
    assert missing.value.key == "profiles.p.commands.0.capture"
    (tmp_path / "missing.txt").write_text("x")
    (tmp_path / "profiles.yaml").write_text(
        "profiles:\n  p:\n    description: d\n    commands:\n"
        "      - {capture: missing.txt, forms: [[/usr/bin/nvme, list]]}\n")
    with pytest.raises(ConfigError, match="plain name") as glob_first:
        load_catalog(tmp_path)
    assert glob_first.value.key is not None and "forms" in glob_first.value.key
    (tmp_path / "profiles.yaml").write_text("profiles: {p: {description: d, commandz: []}}\n")
    with pytest.raises(ConfigError):
        load_catalog(tmp_path)


def _wrapped(inner: FakeTransport | LocalTransport,
             profile: str = "gpu-a100") -> tuple[SimulatedHardwareTransport, list[int]]:
    catalog = load_catalog(TEST_CAPTURES)
    seen: list[int] = []
    wrapper = SimulatedHardwareTransport(inner, catalog.profiles[profile], catalog,
                                         on_simulated=lambda: seen.append(1))
    return wrapper, seen


def test_hardware_never_reaches_the_real_host_and_the_rest_always_does() -> None:
    inner = FakeTransport([FakeResponse("*", stdout="real\n")], host="gpu1")
    host, seen = _wrapped(inner)
    smi = host.run(["nvidia-smi", "-q", "-x"], sudo=True)
    assert smi.simulated and smi.ok and smi.host == "gpu1" and smi.capture.endswith(".xml")
    lsblk = host.run(["lsblk", "-J"])  # a hardware tool this profile has no capture for
    assert lsblk.simulated and lsblk.rc == 127
    echo = host.run(["echo", "hi"])
    assert not echo.simulated and echo.stdout == "real\n"
    assert inner.commands() == ["echo hi"] and len(seen) == 2


def test_a_shell_script_calling_a_hardware_tool_is_refused() -> None:
    inner = FakeTransport([FakeResponse("*", stdout="ok\n")], host="gpu1")
    host, seen = _wrapped(inner)
    for script in ("nvidia-smi -q | grep Serial", "x=$(/usr/sbin/lspci -vvv)",
                   "sudo nvme list -o json"):
        refused = host.run_shell(script)
        assert refused.rc == 127 and refused.simulated and "argv" in refused.stderr, script
    for script in ("sync && echo 3 > /proc/sys/vm/drop_caches", "cat /tmp/nvme-notes.txt",
                   "echo my-nvidia-smi-wrapper"):
        assert host.run_shell(script).stdout == "ok\n", script
    assert len(inner.calls) == 3 and len(seen) == 3


def test_on_a_real_local_host_only_hardware_is_simulated(tmp_path: Path) -> None:
    host, _ = _wrapped(LocalTransport("gpu1"), "storage-nvme")
    real = host.run(["sh", "-c", "echo $((6 * 7))"])
    assert real.stdout == "42\n" and not real.simulated
    listed = host.run(["nvme", "id-ctrl", "/dev/nvme0", "--output-format=json"])
    assert listed.simulated and re.search(r'"sn" : "\S+', listed.stdout)
    (tmp_path / "f").write_text("data")
    assert host.read_file(str(tmp_path / "f")) == b"data"


def test_an_unknown_profile_in_the_inventory_is_a_usage_error(tmp_path: Path) -> None:
    from harness.config.inventory import load_inventory
    from harness.transport import TransportPool

    (tmp_path / "hosts.ini").write_text(
        "[gpu]\ngpu1 ansible_connection=local gate_sim_hardware=gpu-h200\n"
        f"gpu2 ansible_connection=local gate_sim_hardware=lab-gpu-h100 "
        f"gate_sim_captures={TEST_CAPTURES.name}\n")
    (tmp_path / TEST_CAPTURES.name).symlink_to(TEST_CAPTURES)
    with TransportPool(load_inventory(tmp_path / "hosts.ini"),
                       known_hosts=tmp_path / "kh") as pool:
        with pytest.raises(InventoryError, match=r"gpu1.*gpu-h200") as bad:
            pool.get("gpu1")
        assert bad.value.hint is not None and "gpu-a100" in bad.value.hint
        # A relative captures directory is found beside the inventory, not the cwd.
        assert pool.get("gpu2").run(["ibstat"]).capture.startswith("ibstat_")
