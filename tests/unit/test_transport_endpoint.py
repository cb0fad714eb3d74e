"""Inventory HostSpec + ~/.ssh/config -> Endpoint, as OpenSSH would resolve it."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.config.inventory import HostSpec
from harness.errors import InventoryError
from harness.transport.endpoint import resolve, split_hop


def test_split_hop() -> None:
    assert split_hop("ops@bastion:2222") == ("ops", "bastion", 2222)
    assert split_hop("ssh://bastion") == (None, "bastion", None)
    assert split_hop("[fd00::1]:22") == (None, "fd00::1", 22)
    with pytest.raises(InventoryError):
        split_hop("bastion:ssh")


def test_inventory_wins_and_ssh_config_fills_the_rest(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text("Host gpu1.site\n  HostName 10.1.0.7\n  Port 2200\n  User ops\n"
                   "  IdentityFile ~/.ssh/site_key\n")
    ep = resolve(HostSpec("gpu1", "gpu1.site"), ssh_config=cfg)
    assert (ep.hostname, ep.port, ep.user) == ("10.1.0.7", 2200, "ops")
    assert ep.key_files == (str(Path("~/.ssh/site_key").expanduser()),)
    ep = resolve(HostSpec("gpu1", "gpu1.site", port=2022, user="gate", key_file="/k"),
                 ssh_config=cfg)
    assert (ep.port, ep.user, ep.key_files[0]) == (2022, "gate", "/k")


def test_jump_hop_from_the_inventory_uses_that_hosts_user_and_key() -> None:
    jump = HostSpec("bastion", "198.18.0.2", user="jumper", key_file="/keys/jump")
    target = HostSpec("gpu1", "198.19.0.9", user="gate", key_file="/keys/gate",
                      jump="bastion")
    ep = resolve(target, ssh_config=None, inventory_hosts={"bastion": jump, "gpu1": target})
    (hop,) = ep.jumps
    assert (hop.name, hop.hostname, hop.user, hop.key_files) == (
        "bastion", "198.18.0.2", "jumper", ("/keys/jump",))
    ep = resolve(HostSpec("gpu1", "198.19.0.9", user="gate", key_file="/keys/gate",
                          jump="ops@10.9.9.9:2222,198.18.0.2"), ssh_config=None,
                 inventory_hosts={"bastion": jump})
    first, second = ep.jumps
    assert (first.user, first.hostname, first.port, first.key_files) == (
        "ops", "10.9.9.9", 2222, ("/keys/gate",))
    assert second.name == "bastion" and second.user == "jumper"


def test_proxyjump_from_ssh_config(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text("Host 198.19.*\n  ProxyJump ops@bastion\n")
    ep = resolve(HostSpec("gpu1", "198.19.0.9", user="gate"), ssh_config=cfg)
    assert [j.label() for j in ep.jumps] == ["ops@bastion:22"] and ep.proxy_command is None
