"""A throwaway multi-host SSH lab: network namespaces on a bridge, one real sshd each.

Why: the transport, Ansible and every gate's integration tests need real hosts that can
be cut off, killed, re-keyed and reached through a jump host, without Docker. Each lab
host is a network namespace with a veth into a bridge in the root namespace (addresses
in 198.18.0.0/15, the benchmarking range, so nothing real is ever a target); hosts
"behind" a jump host sit on a second bridge that lives inside the jump host's namespace,
so they are reachable only through it. A dedicated user with an empty home logs in
(root's rc files cost ~0.3 s per command). Everything is named with a per-lab id and
recorded in /tmp/gate-netlab, so parallel runs do not collide and a lab left behind by a
killed run is reaped by the next one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import secrets
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tests.lab.labstate import (
    SSHD,
    STATE_DIR,
    accounts_locked,
    comm,
    reap_stale,
    run_cmd,
    skip_reason,
    undo,
)

__all__ = ["BACK", "FRONT", "STATE_DIR", "Lab", "LabFactory", "LabHost", "lab", "reap_stale",
           "skip_reason"]

FRONT = "198.18"  # front bridge: 198.18.<subnet>.0/24, reachable from the root namespace
BACK = "198.19"  # behind a jump host: 198.19.<subnet>.0/24, only inside the jump namespace
LabFactory = Callable[..., "Lab"]  # the lab_factory fixture's type


@dataclass
class LabHost:
    """One lab host: its namespace, address, the link that can be cut, and its sshd."""

    name: str
    ns: str
    address: str
    dir: Path
    jump: str | None = None  # the lab host it is reachable through, if any
    link: str = ""  # the device `cut_link` takes down
    link_ns: str | None = None  # where that device lives (None: the root namespace)
    groups: tuple[str, ...] = ()
    sshd: subprocess.Popen[bytes] | None = None

    @property
    def host_key(self) -> Path:
        return self.dir / "ssh_host_ed25519_key"


@dataclass
class Lab:
    """A running lab; use as a context manager (or call close()) so it is always torn down.

    hosts: names of the directly reachable hosts; behind: name -> the jump host it is
    reachable through (the jump host must be one of `hosts`). groups: name -> inventory
    groups. sudo: "password" (sudo asks for `password`), "nopasswd", or "none".
    """

    hosts: Sequence[str] = ("h1", "h2")
    behind: Mapping[str, str] = field(default_factory=dict)
    groups: Mapping[str, Sequence[str]] = field(default_factory=dict)
    sudo: str = "password"
    lab_id: str = field(default_factory=lambda: secrets.token_hex(3))
    root: Path = field(init=False)
    user: str = field(init=False)
    password: str = field(init=False)
    members: dict[str, LabHost] = field(init=False, default_factory=dict)
    _subnet: int = field(init=False, default=0)
    _made: list[tuple[str, str]] = field(init=False, default_factory=list)

    # ---- life cycle -------------------------------------------------------------------

    def __enter__(self) -> Lab:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        reap_stale()
        STATE_DIR.mkdir(mode=0o755, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix=f"gate-lab-{self.lab_id}-"))
        self.root.chmod(0o755)  # the lab user must reach its home inside it
        self.user = f"gl{self.lab_id}"
        self.password = "pw-" + secrets.token_urlsafe(12)
        self._subnet = self._allocate()
        self._record()
        self._make_user()
        self._make_network()
        self._make_keys()
        for host in self.members.values():
            self.start_sshd(host.name)
        self.write_known_hosts(self.known_hosts)
        self.write_inventory(self.inventory)

    def close(self) -> None:
        """Tear everything down, in reverse; never raises (it runs on failure paths)."""
        for host in getattr(self, "members", {}).values():
            with contextlib.suppress(Exception):
                self.kill_sshd(host.name)
        for kind, name in reversed(self._made):
            with contextlib.suppress(Exception):
                undo(kind, name)
        self._made.clear()
        if getattr(self, "root", None) and self.root.exists():
            shutil.rmtree(self.root, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            (STATE_DIR / f"{self.lab_id}.json").unlink()

    # ---- paths ------------------------------------------------------------------------

    @property
    def key_file(self) -> Path:
        return self.root / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.root / "known_hosts"

    @property
    def inventory(self) -> Path:
        return self.root / "hosts.ini"

    @property
    def home(self) -> Path:
        return self.root / "home"

    def host(self, name: str) -> LabHost:
        return self.members[name]

    # ---- building ---------------------------------------------------------------------

    def _allocate(self) -> int:
        """A /24 index not used by any live lab (under a lock, so parallel runs differ)."""
        with open(STATE_DIR / ".lock", "a+") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            used = set()
            for rec in STATE_DIR.glob("*.json"):
                with contextlib.suppress(Exception):
                    used.add(int(json.loads(rec.read_text())["subnet"]))
            addrs = run_cmd(["ip", "-o", "-4", "addr"], check=False).stdout
            free = [s for s in range(1, 255)
                    if s not in used and f"{FRONT}.{s}." not in addrs]
            subnet = random.choice(free)
            self._subnet = subnet
            self._record()
            return subnet

    def _record(self) -> None:
        state = {"pid": os.getpid(), "subnet": self._subnet, "root": str(self.root),
                 "made": self._made, "user": getattr(self, "user", "")}
        (STATE_DIR / f"{self.lab_id}.json").write_text(json.dumps(state))

    def _remember(self, kind: str, name: str) -> None:
        self._made.append((kind, name))
        self._record()

    def _make_user(self) -> None:
        self.home.mkdir(mode=0o700)
        with accounts_locked():
            run_cmd(["useradd", "--no-create-home", "--home-dir", str(self.home), "--shell",
                     "/bin/bash", "--user-group", self.user])
            self._remember("user", self.user)
            shutil.chown(self.home, self.user, self.user)
            run_cmd(["chpasswd"], input_text=f"{self.user}:{self.password}\n")
        if self.sudo != "none":
            if shutil.which("sudo") is None:
                raise RuntimeError("the SSH lab's sudo tests need sudo: apt-get install -y sudo "
                                   "(or Lab(sudo='none'))")
            rule = "NOPASSWD: ALL" if self.sudo == "nopasswd" else "ALL"
            sudoers = Path(f"/etc/sudoers.d/gate-lab-{self.lab_id}")
            sudoers.write_text(f"Defaults:{self.user} lecture=never\n"
                               f"{self.user} ALL=(ALL:ALL) {rule}\n")
            sudoers.chmod(0o440)
            self._remember("file", str(sudoers))

    def _make_network(self) -> None:
        bridge = f"glb{self.lab_id}"
        run_cmd(["ip", "link", "add", bridge, "type", "bridge"])
        self._remember("link", bridge)
        run_cmd(["ip", "addr", "add", f"{FRONT}.{self._subnet}.1/24", "dev", bridge])
        run_cmd(["ip", "link", "set", bridge, "up"])
        # The back range must never leave this machine by the root namespace's default
        # route: make it unreachable here (only the jump host's namespace routes it).
        run_cmd(["ip", "route", "add", "unreachable", f"{BACK}.{self._subnet}.0/24"])
        self._remember("route", f"{BACK}.{self._subnet}.0/24")
        groups = {n: tuple(g for g, members in self.groups.items() if n in members)
                  for n in [*self.hosts, *self.behind]}
        for i, name in enumerate(self.hosts):
            ns = self._netns(name)
            root_dev, peer = f"gl{self.lab_id}h{i}", f"gl{self.lab_id}p{i}"
            run_cmd(["ip", "link", "add", root_dev, "type", "veth", "peer", "name", peer])
            self._remember("link", root_dev)
            run_cmd(["ip", "link", "set", peer, "netns", ns])
            run_cmd(["ip", "link", "set", root_dev, "master", bridge])
            run_cmd(["ip", "link", "set", root_dev, "up"])
            address = f"{FRONT}.{self._subnet}.{10 + i}"
            self._addr(ns, peer, f"{address}/24")
            self.members[name] = LabHost(name, ns, address, self._host_dir(name),
                                         link=root_dev, groups=groups[name])
        for j, (name, jump) in enumerate(self.behind.items()):
            jump_ns = self.members[jump].ns
            if not self._has_link(jump_ns, "back0"):
                run_cmd(["ip", "link", "add", "back0", "type", "bridge"], ns=jump_ns)
                run_cmd(["ip", "addr", "add", f"{BACK}.{self._subnet}.1/24", "dev", "back0"],
                     ns=jump_ns)
                run_cmd(["ip", "link", "set", "back0", "up"], ns=jump_ns)
            ns = self._netns(name)
            jump_dev, peer = f"gl{self.lab_id}j{j}", f"gl{self.lab_id}q{j}"
            run_cmd(["ip", "link", "add", jump_dev, "type", "veth", "peer", "name", peer])
            run_cmd(["ip", "link", "set", jump_dev, "netns", jump_ns])
            run_cmd(["ip", "link", "set", peer, "netns", ns])
            run_cmd(["ip", "link", "set", jump_dev, "master", "back0"], ns=jump_ns)
            run_cmd(["ip", "link", "set", jump_dev, "up"], ns=jump_ns)
            address = f"{BACK}.{self._subnet}.{10 + j}"
            self._addr(ns, peer, f"{address}/24")
            self.members[name] = LabHost(name, ns, address, self._host_dir(name), jump=jump,
                                         link=jump_dev, link_ns=jump_ns, groups=groups[name])

    def _netns(self, name: str) -> str:
        ns = f"gl{self.lab_id}-{name}"
        run_cmd(["ip", "netns", "add", ns])
        self._remember("netns", ns)
        run_cmd(["ip", "link", "set", "lo", "up"], ns=ns)
        return ns

    @staticmethod
    def _addr(ns: str, dev: str, cidr: str) -> None:
        run_cmd(["ip", "link", "set", dev, "name", "eth0"], ns=ns)
        run_cmd(["ip", "addr", "add", cidr, "dev", "eth0"], ns=ns)
        run_cmd(["ip", "link", "set", "eth0", "up"], ns=ns)

    @staticmethod
    def _has_link(ns: str, dev: str) -> bool:
        return run_cmd(["ip", "link", "show", dev], ns=ns, check=False).returncode == 0

    def _host_dir(self, name: str) -> Path:
        d = self.root / "hosts" / name
        d.mkdir(parents=True)
        return d

    def _make_keys(self) -> None:
        run_cmd(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gate-lab",
              "-f", str(self.key_file)])
        pub = self.key_file.with_suffix(".pub").read_text()
        (self.root / "authorized_keys").write_text(pub)
        for host in self.members.values():
            self.new_host_key(host.name, restart=False)

    def new_host_key(self, name: str, *, restart: bool = True) -> None:
        """Give the host a fresh host key (the known_hosts file keeps the old one)."""
        host = self.members[name]
        host.host_key.unlink(missing_ok=True)
        host.host_key.with_suffix(".pub").unlink(missing_ok=True)
        run_cmd(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name,
              "-f", str(host.host_key)])
        if restart:
            self.kill_sshd(name)
            self.start_sshd(name)

    # ---- sshd -------------------------------------------------------------------------

    def _sshd_config(self, host: LabHost) -> Path:
        cfg = host.dir / "sshd_config"
        cfg.write_text("\n".join([
            "Port 22",
            f"ListenAddress {host.address}",
            f"HostKey {host.host_key}",
            f"PidFile {host.dir / 'sshd.pid'}",
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
            f"AllowUsers {self.user}",
            "StrictModes no",
            "UsePAM no",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PubkeyAuthentication yes",
            "PermitRootLogin no",
            "AllowTcpForwarding yes",
            "UseDNS no",
            "MaxSessions 64",
            "MaxStartups 64:30:128",
            "LogLevel VERBOSE",
            "Subsystem sftp internal-sftp",
            "",
        ]))
        return cfg

    def start_sshd(self, name: str) -> None:
        host = self.members[name]
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir
        log = host.dir / "sshd.log"
        cfg = self._sshd_config(host)
        with open(log, "ab") as out:
            host.sshd = subprocess.Popen(
                ["ip", "netns", "exec", host.ns, SSHD, "-D", "-e", "-f", str(cfg)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if "Server listening" in log.read_text(errors="replace"):
                return
            if host.sshd.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError(f"lab sshd on {name} did not start: {log.read_text()[-800:]}")

    def kill_sshd(self, name: str) -> None:
        """Kill the host's sshd listener and every session process inside its namespace."""
        host = self.members[name]
        for pid in self.ns_pids(name):
            if comm(pid).startswith("sshd"):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if host.sshd is not None:
            with contextlib.suppress(ProcessLookupError):
                host.sshd.kill()
            host.sshd.wait(timeout=10)
            host.sshd = None

    def ns_pids(self, name: str) -> list[int]:
        out = run_cmd(["ip", "netns", "pids", self.members[name].ns], check=False).stdout
        return [int(p) for p in out.split()]

    # ---- faults -----------------------------------------------------------------------

    def cut_link(self, name: str) -> None:
        host = self.members[name]
        run_cmd(["ip", "link", "set", host.link, "down"], ns=host.link_ns)

    def restore_link(self, name: str) -> None:
        host = self.members[name]
        run_cmd(["ip", "link", "set", host.link, "up"], ns=host.link_ns)

    # ---- running things inside a host -------------------------------------------------

    def ns_argv(self, name: str, argv: Sequence[str], *, as_user: bool = False) -> list[str]:
        """argv that runs `argv` inside the host's namespace (as the lab user if asked)."""
        inner = list(argv)
        if as_user:
            inner = ["setpriv", f"--reuid={self.user}", f"--regid={self.user}",
                     "--init-groups", "--", *inner]
        return ["ip", "netns", "exec", self.members[name].ns, *inner]

    def exec(self, name: str, argv: Sequence[str], *, timeout: float = 60,
             as_user: bool = False) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.ns_argv(name, argv, as_user=as_user), capture_output=True,
                              text=True, timeout=timeout)

    def spawn(self, name: str, argv: Sequence[str], *, stdout: IO[Any] | int | None = None,
              stderr: IO[Any] | int | None = None, env: Mapping[str, str] | None = None,
              as_user: bool = False) -> subprocess.Popen[bytes]:
        """Start a long-lived process (e.g. the simulator on the host's address) in the host.

        The caller owns the Popen: terminate it, or let Lab.close() kill what is left.
        """
        return subprocess.Popen(self.ns_argv(name, argv, as_user=as_user), stdout=stdout,
                                stderr=stderr, stdin=subprocess.DEVNULL,
                                env=dict(env) if env is not None else None,
                                start_new_session=True)

    # ---- the harness's view -----------------------------------------------------------

    def load_inventory(self) -> Any:
        """The lab inventory through harness.config (what gates and the CLI see)."""
        from harness.config.inventory import load_inventory

        return load_inventory(self.inventory)

    def transport(self, name: str, *, sudo_password: str | None = None,
                  connect_timeout: float = 5, known_hosts: Path | None = None) -> Any:
        """An SSH Transport to a lab host, hermetic (no ~/.ssh files consulted)."""
        from harness.transport import connect

        inv = self.load_inventory()
        return connect(inv.host(name), known_hosts=known_hosts or self.known_hosts,
                       sudo_password=sudo_password, connect_timeout=connect_timeout,
                       inventory_hosts=inv.hosts, ssh_config=None, user_known_hosts=None)

    # ---- generated files --------------------------------------------------------------

    def known_hosts_lines(self, names: Sequence[str] | None = None) -> list[str]:
        lines = []
        for name in names or list(self.members):
            host = self.members[name]
            kind, blob, *_ = host.host_key.with_suffix(".pub").read_text().split()
            lines.append(f"{host.address} {kind} {blob}")
        return lines

    def write_known_hosts(self, path: Path, names: Sequence[str] | None = None) -> Path:
        path.write_text("\n".join(self.known_hosts_lines(names)) + "\n")
        return path

    def host_vars(self, name: str) -> dict[str, str]:
        host = self.members[name]
        v = {"ansible_host": host.address}
        common = f"-o UserKnownHostsFile={self.known_hosts} -o StrictHostKeyChecking=yes"
        if host.jump:
            jump = self.members[host.jump]
            v["ansible_ssh_common_args"] = f"-o ProxyJump={self.user}@{jump.address} {common}"
        return v

    def write_inventory(self, path: Path, *, extra: Mapping[str, Mapping[str, str]] = {},
                        names: Sequence[str] | None = None) -> Path:
        """An Ansible INI inventory for the lab (extra: host -> more host vars)."""
        common = f"-o UserKnownHostsFile={self.known_hosts} -o StrictHostKeyChecking=yes"
        chosen = list(names or self.members)
        lines = []
        for name in chosen:
            hv = {**self.host_vars(name), **extra.get(name, {})}
            lines.append(name + "".join(f" {k}={_ini_value(v)}" for k, v in hv.items()))
        for group in sorted({g for n in chosen for g in self.members[n].groups}):
            lines += ["", f"[{group}]"]
            lines += [n for n in chosen if group in self.members[n].groups]
        lines += ["", "[all:vars]", f"ansible_user={self.user}",
                  f"ansible_ssh_private_key_file={self.key_file}",
                  f"ansible_ssh_common_args={_ini_value(common)}",
                  "ansible_python_interpreter=/usr/bin/python3", ""]
        path.write_text("\n".join(lines))
        return path


def _ini_value(value: str) -> str:
    """Quote an INI inventory value: Ansible splits a host line with shlex."""
    if "\n" in value:
        raise ValueError("an INI inventory value cannot hold a newline")
    return shlex.quote(value)


@contextlib.contextmanager
def lab(hosts: Sequence[str] = ("h1", "h2"), *, behind: Mapping[str, str] | None = None,
        groups: Mapping[str, Sequence[str]] | None = None, sudo: str = "password") -> Iterator[Lab]:
    """`with lab(["h1", "jump"], behind={"t1": "jump"}) as net: ...` — always torn down."""
    with Lab(hosts=tuple(hosts), behind=dict(behind or {}), groups=dict(groups or {}),
             sudo=sudo) as net:
        yield net
