"""Host keys on record: ~/.ssh/known_hosts plus the site's known_hosts, and explicit trust.

Why here and not paramiko's policies: the harness must refuse an unknown key with its
fingerprint (so `gate hosts trust` can be run knowingly), refuse a changed key showing
both fingerprints, and record a trusted key in the one site file that Ansible reads too.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import getpass
import hashlib
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import paramiko

from harness.errors import ChangedHostKeyError, UnknownHostKeyError

log = logging.getLogger("harness.transport")

# paramiko's known_hosts key names -> the host-key algorithms that present such a key.
_ALGORITHMS = {
    "ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"),
    "ssh-ed25519": ("ssh-ed25519",),
    "ecdsa-sha2-nistp256": ("ecdsa-sha2-nistp256",),
    "ecdsa-sha2-nistp384": ("ecdsa-sha2-nistp384",),
    "ecdsa-sha2-nistp521": ("ecdsa-sha2-nistp521",),
}


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's form: `SHA256:` + unpadded base64 of the key blob's SHA-256."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def describe_key(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {fingerprint(key)}"


def entry_name(hostname: str, port: int) -> str:
    """The known_hosts name OpenSSH uses: `addr` on port 22, else `[addr]:port`."""
    return hostname if port == 22 else f"[{hostname}]:{port}"


@dataclass(frozen=True)
class KeyCheck:
    status: str  # "trusted" | "unknown" | "changed"
    presented: paramiko.PKey
    on_record: paramiko.PKey | None = None
    source: Path | None = None


def _load(path: Path) -> paramiko.HostKeys:
    keys = paramiko.HostKeys()
    if path.is_file():
        keys.load(str(path))
    return keys


@dataclass(frozen=True)
class KnownHosts:
    """The two files a key may be on record in, user file first (as OpenSSH reads them)."""

    site: Path
    user: Path | None = Path("~/.ssh/known_hosts")

    def files(self) -> list[Path]:
        out = [self.user.expanduser()] if self.user else []
        return [*out, self.site.expanduser()]

    def lookup(self, hostname: str, port: int) -> tuple[dict[str, paramiko.PKey], Path | None]:
        """Keys on record for the host (type -> key) and the file they came from."""
        name = entry_name(hostname, port)
        for path in self.files():
            found = _load(path).lookup(name)
            if found:
                return {k: found[k] for k in found}, path
        return {}, None

    def preferred_algorithms(self, hostname: str, port: int) -> list[str]:
        """Host-key algorithms to offer first, so the server presents a key we have."""
        keys, _ = self.lookup(hostname, port)
        return [alg for kind in keys for alg in _ALGORITHMS.get(kind, (kind,))]

    def check(self, hostname: str, port: int, key: paramiko.PKey) -> KeyCheck:
        keys, source = self.lookup(hostname, port)
        if not keys:
            return KeyCheck("unknown", key)
        same_type = keys.get(key.get_name())
        if same_type is not None and same_type == key:
            return KeyCheck("trusted", key, same_type, source)
        expected = same_type if same_type is not None else next(iter(keys.values()))
        return KeyCheck("changed", key, expected, source)

    def verify(self, name: str, hostname: str, port: int, key: paramiko.PKey) -> None:
        """Raise Unknown/ChangedHostKeyError unless the presented key is the one on record."""
        result = self.check(hostname, port, key)
        if result.status == "unknown":
            raise UnknownHostKeyError(
                f"host key not on record: {describe_key(key)} (looked in "
                f"{', '.join(str(p) for p in self.files())})",
                host=name, stage="host key",
                hint=f"verify the fingerprint out of band, then `gate hosts trust {name}`")
        if result.status == "changed":
            assert result.on_record is not None
            raise ChangedHostKeyError(
                f"HOST KEY CHANGED, refusing to connect: on record {describe_key(result.on_record)}"
                f" in {result.source}, presented {describe_key(key)}",
                host=name, stage="host key",
                hint="someone may be intercepting the connection; if the host was reinstalled, "
                     f"verify the new fingerprint, then `gate hosts trust --replace {name}`")

    def record(self, name: str, hostname: str, port: int, key: paramiko.PKey, *,
               replace: bool = False) -> str:
        """Append the key to the site file (after a comment saying who and when); TOFU.

        A key already on record and equal is left alone. A different key is refused unless
        `replace`, which drops the site file's old entries for the host first; a
        conflicting entry in ~/.ssh/known_hosts is never edited by the harness.
        """
        result = self.check(hostname, port, key)
        fp = fingerprint(key)
        if result.status == "trusted":
            log.info("host %s (%s) key %s already trusted", name, hostname, describe_key(key))
            return fp
        site = self.site.expanduser()
        if result.status == "changed" and (not replace or result.source != site):
            hint = (f"remove the old entry with `ssh-keygen -R {entry_name(hostname, port)} "
                    f"-f {result.source}` after verifying the new key"
                    if replace else f"`gate hosts trust --replace {name}` after verifying it")
            assert result.on_record is not None
            raise ChangedHostKeyError(
                f"HOST KEY CHANGED: on record {describe_key(result.on_record)} in "
                f"{result.source}, presented {describe_key(key)}", host=name,
                stage="host key", hint=hint)
        entry = entry_name(hostname, port)
        with _locked(site) as handle:
            lines = handle.read().splitlines()
            if result.status == "changed":
                lines = [ln for ln in lines if not _names_host(ln, entry)]
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            lines.append(f"# gate hosts trust: {name} ({entry}) {describe_key(key)} "
                         f"by {getpass.getuser()} at {stamp}")
            lines.append(f"{entry} {key.get_name()} {key.get_base64()}")
            handle.seek(0)
            handle.truncate()
            handle.write("\n".join(lines) + "\n")
        log.warning("trusted host %s (%s): %s recorded in %s", name, entry, describe_key(key),
                    site)
        return fp


def _names_host(line: str, entry: str) -> bool:
    if not line.strip() or line.lstrip().startswith("#"):
        return False
    hosts = line.split()[0]
    if hosts.startswith("|1|"):
        return _hashed_match(hosts, entry)
    return entry in hosts.split(",")


def _hashed_match(hashed: str, entry: str) -> bool:
    return paramiko.HostKeys.hash_host(entry, hashed) == hashed


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[IO[str]]:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o644, exist_ok=True)
    with open(path, "r+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield handle
