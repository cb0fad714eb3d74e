"""Host keys on record: unknown / trusted / changed, TOFU recording, both files read."""

from __future__ import annotations

import subprocess
from pathlib import Path

import paramiko
import pytest

from harness.errors import ChangedHostKeyError, UnknownHostKeyError
from harness.transport.hostkeys import KnownHosts, entry_name, fingerprint


def _key(tmp_path: Path, name: str) -> paramiko.PKey:
    path = tmp_path / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return paramiko.Ed25519Key.from_private_key_file(str(path))


def test_fingerprint_matches_ssh_keygen(tmp_path: Path) -> None:
    key = _key(tmp_path, "k")
    shown = subprocess.run(["ssh-keygen", "-l", "-f", str(tmp_path / "k.pub")],
                           capture_output=True, text=True, check=True).stdout.split()[1]
    assert fingerprint(key) == shown


def test_entry_names_follow_openssh() -> None:
    assert entry_name("10.0.0.1", 22) == "10.0.0.1"
    assert entry_name("10.0.0.1", 2222) == "[10.0.0.1]:2222"


def test_unknown_then_recorded_then_trusted(tmp_path: Path) -> None:
    key = _key(tmp_path, "k")
    kh = KnownHosts(site=tmp_path / "site" / "known_hosts", user=None)
    with pytest.raises(UnknownHostKeyError) as info:
        kh.verify("gpu1", "198.18.0.5", 22, key)
    assert fingerprint(key) in info.value.message
    assert "gate hosts trust gpu1" in (info.value.hint or "")
    assert kh.record("gpu1", "198.18.0.5", 22, key) == fingerprint(key)
    text = kh.site.read_text()
    assert "# gate hosts trust: gpu1 (198.18.0.5) ssh-ed25519 " + fingerprint(key) in text
    assert f"198.18.0.5 ssh-ed25519 {key.get_base64()}" in text
    kh.verify("gpu1", "198.18.0.5", 22, key)  # no raise
    assert kh.record("gpu1", "198.18.0.5", 22, key) == fingerprint(key)
    assert kh.site.read_text() == text  # already trusted: nothing appended
    assert kh.check("198.18.0.5", 2222, key).status == "unknown"  # the port is part of it


def test_changed_key_is_refused_with_both_fingerprints(tmp_path: Path) -> None:
    old, new = _key(tmp_path, "old"), _key(tmp_path, "new")
    kh = KnownHosts(site=tmp_path / "known_hosts", user=None)
    kh.record("gpu1", "198.18.0.5", 22, old)
    with pytest.raises(ChangedHostKeyError) as info:
        kh.verify("gpu1", "198.18.0.5", 22, new)
    assert fingerprint(old) in info.value.message and fingerprint(new) in info.value.message
    with pytest.raises(ChangedHostKeyError):
        kh.record("gpu1", "198.18.0.5", 22, new)
    kh.record("gpu1", "198.18.0.5", 22, new, replace=True)
    kh.verify("gpu1", "198.18.0.5", 22, new)
    assert old.get_base64() not in kh.site.read_text()


def test_user_file_is_read_first_and_never_edited(tmp_path: Path) -> None:
    old, new = _key(tmp_path, "old"), _key(tmp_path, "new")
    user = tmp_path / "user_known_hosts"
    hashed = paramiko.HostKeys.hash_host("198.18.0.5")
    user.write_text(f"{hashed} ssh-ed25519 {old.get_base64()}\n")
    kh = KnownHosts(site=tmp_path / "known_hosts", user=user)
    assert kh.check("198.18.0.5", 22, old).status == "trusted"  # hashed entries work
    assert kh.preferred_algorithms("198.18.0.5", 22) == ["ssh-ed25519"]
    with pytest.raises(ChangedHostKeyError, match="ssh-keygen -R"):
        kh.record("gpu1", "198.18.0.5", 22, new, replace=True)
    assert user.read_text().startswith(hashed)
