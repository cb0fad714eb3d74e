"""G2's plan and config checks: four fio jobs per host of a target's group, GPU health per
GPU host, and a raw device refused unless the site says the write job may overwrite it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.baseline import size_bytes
from harness.config.inventory import load_inventory
from harness.config.models import FioTarget, Gdsio, SiteConfig
from harness.errors import UsageError
from harness.g2 import fio, gdsio
from harness.g2.plan import expected_checks, validate, weakened

FULL_SPEC = {"seq_read_mbps": 1000, "seq_write_mbps": 800, "rand_read_iops": 100000,
             "lat_qd1_p99_us": 100}


def site(tmp_path: Path, g2: dict[str, object]) -> tuple[SiteConfig, object]:
    (tmp_path / "hosts.ini").write_text("[gpu]\ng1 ansible_connection=local\n")
    config = SiteConfig.model_validate({"site": {"name": "s"}, "campaign": {"name": "c"},
                                        "inventory": "hosts.ini", "model": {"name": "m"},
                                        "gates": {"g2": g2}})
    return config, load_inventory(tmp_path / "hosts.ini")


def test_plan(tmp_path: Path) -> None:
    config, inv = site(tmp_path, {"fio": [{"name": "fx", "path": "/mnt/fx"}], "gds": True})
    validate(config, inv)  # type: ignore[arg-type]
    assert expected_checks(config, inv) == [  # type: ignore[arg-type]
        "test_fio[g1-fx-seq-read]", "test_fio[g1-fx-seq-write]", "test_fio[g1-fx-rand-read]",
        "test_fio[g1-fx-lat-qd1]", "test_gpu_health[g1]", "test_gds[g1]"]


def test_raw_device_needs_destructive(tmp_path: Path) -> None:
    config, inv = site(tmp_path, {"fio": [{"name": "raw", "path": "/dev/nvme1n1"}]})
    with pytest.raises(UsageError, match="raw device") as err:
        validate(config, inv)  # type: ignore[arg-type]
    assert err.value.key == "gates.g2.fio.0.path" and err.value.exit_code == 4
    config, inv = site(tmp_path, {"fio": [{"name": "raw", "path": "/dev/nvme1n1",
                                           "destructive": True}]})
    validate(config, inv)  # type: ignore[arg-type]


def test_fio_argv_and_bounds() -> None:
    target = FioTarget(name="fx", path="/mnt/fx", size="1G", runtime_s=10,
                       spec={"seq_read_mbps": 1000, "lat_qd1_p99_us": 90})  # type: ignore[arg-type]
    argv = fio.argv(target, "rand-read", 8)
    assert "--filename=/mnt/fx/gate-fio.fx.dat" in argv and "--numjobs=8" in argv
    assert "--iodepth=32" in argv and "--bs=4k" in argv and "--direct=1" in argv
    assert fio.wanted(target, "seq-read", 0.9) == (">= 900 MB/s (90% of 1000)", 900.0)
    assert fio.wanted(target, "lat-qd1", 0.9)[1] == pytest.approx(100.0)
    assert fio.wanted(target, "seq-write", 0.9)[1] is None  # no vendor figure: not judged


def test_a_lower_share_of_the_vendors_figures_makes_a_pass_need_a_sign_off(
        tmp_path: Path) -> None:
    """min_fraction below its default would let a slow drive pass: a reviewer signs it."""
    target = {"name": "fx", "path": "/mnt/fx", "spec": FULL_SPEC}
    config, _ = site(tmp_path, {"fio": [target], "serving": None})
    assert weakened(config) == ["G2 serving baseline not measured (gates.g2.serving: null)"]
    config, _ = site(tmp_path, {"fio": [target], "min_fraction": 0.5, "serving": None})
    assert weakened(config)[0] == "G2 fio: min_fraction 0.5 of the vendor's figures (default 0.9)"


def test_every_unjudged_or_skipped_part_of_g2_needs_a_sign_off(tmp_path: Path) -> None:
    """REVIEW-R3 F2/F3/F5: one vendor figure must not hide three jobs judged on nothing; no
    fio target, no GPU health, dcgmi's deployment-only level, a cache-sized file or a
    seconds-long run each make a real site's PASS need a reviewer."""
    target = {"name": "fx", "path": "/mnt/fx", "spec": {"seq_read_mbps": 1000},
              "size": "1M", "runtime_s": 1}
    config, _ = site(tmp_path, {"fio": [target], "serving": None, "dcgm_level": 1})
    assert weakened(config) == [
        "G2 fio fx seq-write: no vendor figure, measured but not judged",
        "G2 fio fx rand-read: no vendor figure, measured but not judged",
        "G2 fio fx lat-qd1: no vendor figure, measured but not judged",
        "G2 fio fx: size 1M (below 4G: a cache may serve it)",
        "G2 fio fx: runtime_s 1 (below 30 s: a write cache may absorb it)",
        "G2 GPU health: dcgm_level 1 (dcgmi diag -r 1 exercises no GPU; default 2)",
        "G2 serving baseline not measured (gates.g2.serving: null)"]
    config, _ = site(tmp_path, {"fio": [], "gpu_health": False, "gds": True,
                                "serving": None})
    assert weakened(config)[:2] == ["G2 fio: no target (no storage baseline measured)",
                                    "G2 GPU health not checked (gates.g2.gpu_health: false)"]


@pytest.mark.parametrize(("size", "count"), [("4G", 4 << 30), ("4096", 4096), ("8k", 8192),
                                             ("1t", 1 << 40)])
def test_fio_size_in_fios_units(size: str, count: int) -> None:
    assert size_bytes(size) == count
    assert FioTarget(name="fx", path="/mnt/fx", size=size).size == size


@pytest.mark.parametrize("size", ["4GiB", "50%", "4 G", "1.5G", ""])
def test_a_fio_size_g2_cannot_weigh_is_refused(size: str) -> None:
    with pytest.raises(ValueError):
        FioTarget(name="fx", path="/mnt/fx", size=size)


def test_gdsio_planned_per_gpu_host_and_a_device_refused(tmp_path: Path) -> None:
    config, inv = site(tmp_path, {"gpu_health": False, "serving": None,
                                  "gdsio": {"path": "/mnt/fx100"}})
    validate(config, inv)  # type: ignore[arg-type]
    assert expected_checks(config, inv) == ["test_gdsio[g1]"]  # type: ignore[arg-type]
    assert "G2 gdsio: no vendor figure (read_gib_s), measured but not judged" in \
        weakened(config)
    config, inv = site(tmp_path, {"gdsio": {"path": "/dev/nvme1n1"}})
    with pytest.raises(UsageError, match="gdsio reads files") as err:
        validate(config, inv)  # type: ignore[arg-type]
    assert err.value.key == "gates.g2.gdsio.path"


def test_gdsio_argv_env_and_bound() -> None:
    spec = Gdsio(path="/mnt/fx100", threads=8, seconds=60, gpu=2, read_gib_s=10)
    assert gdsio.argv(spec) == ["gdsio", "-D", "/mnt/fx100/gate-gdsio", "-d", "2", "-w", "8",
                                "-s", "4G", "-i", "1M", "-x", "0", "-I", "0", "-T", "60"]
    assert gdsio.env(spec)["CUFILE_LOGFILE_PATH"] == "/mnt/fx100/gate-gdsio/cufile.log"
    expected, bound = gdsio.wanted(spec, 0.9)
    assert bound == 9.0 and expected.startswith("GPUD read >= 9.00 GiB/s (90% of 10)")
    assert gdsio.wanted(Gdsio(path="/v"), 0.9) == ("GPUD read measured (no vendor figure)",
                                                   None)
    from harness.report import reasons
    from harness.report.i18n import translator

    for each in (spec, Gdsio(path="/v")):  # the report's words are the harness's
        assert reasons.say(translator("en"), gdsio.wanted_why(each, 0.9)) == \
            gdsio.wanted(each, 0.9)[0]
