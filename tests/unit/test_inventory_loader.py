"""The inventory is read with Ansible's own loader; group vars layer under host vars."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.inventory import load_inventory
from harness.errors import InventoryError

REPO = Path(__file__).resolve().parents[2]


def test_example_inventory_has_the_realistic_site() -> None:
    inv = load_inventory(REPO / "inventory.example.ini")
    assert [h.name for h in inv.group("gpu")] == ["gpu1", "gpu2"]
    gpu1 = inv.host("gpu1")
    assert (gpu1.address, gpu1.user, gpu1.jump) == ("10.20.0.11", "gate",
                                                   "gate@203.0.113.10:2222")
    assert inv.host("fx100-a").user == "admin"  # host var beats [all:vars]
    assert inv.host("bastion").port == 2222 and inv.host("bastion").jump is None


def test_missing_group_names_the_inventory(tmp_path: Path) -> None:
    p = tmp_path / "hosts.ini"
    p.write_text("[gpu]\ng1\n")
    with pytest.raises(InventoryError, match=r"group \[storage\]") as err:
        load_inventory(p).group("storage")
    assert err.value.file == str(p.resolve())


def test_unparseable_and_missing_inventory(tmp_path: Path) -> None:
    bad = tmp_path / "hosts.ini"
    bad.write_text("[gpu\nfoo = = =\n")
    with pytest.raises(InventoryError, match="cannot parse"):
        load_inventory(bad)
    with pytest.raises(InventoryError, match="not found"):
        load_inventory(tmp_path / "none.ini")


def test_a_broken_line_and_a_word_for_a_port_are_named(tmp_path: Path) -> None:
    bad = tmp_path / "hosts.ini"
    bad.write_text("# site\n[gpu]\ng1 ansible_connection=local\n[weird\n")
    with pytest.raises(InventoryError) as err:
        load_inventory(bad)
    assert err.value.key == "line 4" and "'[weird'" in err.value.message
    bad.write_text("[gpu]\ng1\n[gpu:vars]\nansible_port = twenty\n")
    with pytest.raises(InventoryError) as err:
        load_inventory(bad)
    assert (err.value.key, err.value.host) == ("line 4: ansible_port", "g1")


def test_a_gate_group_without_hosts_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "hosts.ini"
    p.write_text("[storage]\nst1\n\n[gpu]\n# none yet\n")
    with pytest.raises(InventoryError, match=r"group \[gpu\] has no hosts") as err:
        load_inventory(p)
    assert err.value.key == "line 4"
