"""Where wheels must install: a platform (glibc + CPU) and a Python version.

A target is written `manylinux_2_34_x86_64/3.9`: the site's glibc 2.34 on x86_64 (RHEL 9)
with Python 3.9. pip takes only exact platform tags, and a wheel built for an older glibc
(manylinux2014 = 2.17) runs on a newer one, so a target expands to every manylinux tag up
to its own.
"""

from __future__ import annotations

import platform
import re
import sys
from dataclasses import dataclass

from harness.errors import UsageError

_TARGET = re.compile(r"^manylinux_2_(?P<glibc>\d+)_(?P<arch>x86_64|aarch64)/3\.(?P<minor>\d+)$")
OLDEST_MANYLINUX = 17  # manylinux2014
# What client hosts run (RHEL 9: 3.9, Ubuntu 22.04: 3.10, 24.04: 3.12) and the gate's own.
AGENT_PYTHONS = ("3.9", "3.10", "3.11", "3.12")
AGENT_MIN_PYTHON = (3, 9)


@dataclass(frozen=True, order=True)
class Target:
    glibc_minor: int
    arch: str
    python: str  # "3.9"

    @property
    def key(self) -> str:
        """The directory name inside the bundle: py3.9-manylinux_2_34_x86_64."""
        return f"py{self.python}-manylinux_2_{self.glibc_minor}_{self.arch}"

    @property
    def python_tuple(self) -> tuple[int, int]:
        major, minor = self.python.split(".")
        return int(major), int(minor)

    def __str__(self) -> str:
        return f"manylinux_2_{self.glibc_minor}_{self.arch}/{self.python}"

    def platform_tags(self) -> list[str]:
        tags = [f"manylinux_2_{m}_{self.arch}"
                for m in range(OLDEST_MANYLINUX, self.glibc_minor + 1)]
        return [*tags, f"manylinux2014_{self.arch}"]

    def pip_args(self) -> list[str]:
        """pip download flags that fetch wheels for this target (binary only)."""
        args = ["--only-binary=:all:", "--implementation", "cp",
                "--python-version", self.python]
        for tag in self.platform_tags():
            args += ["--platform", tag]
        return args

    def marker_env(self) -> dict[str, str]:
        """The environment markers a requirement is judged by on the target (pip judges
        some by the machine it runs on, so the bundle checks them itself)."""
        return {"python_version": self.python, "python_full_version": f"{self.python}.0",
                "implementation_name": "cpython", "platform_python_implementation": "CPython",
                "sys_platform": "linux", "os_name": "posix", "platform_system": "Linux",
                "platform_machine": self.arch}


def parse_target(text: str) -> Target:
    """`manylinux_2_34_x86_64/3.9` -> Target; anything else is a usage error."""
    m = _TARGET.match(text.strip())
    if m is None:
        raise UsageError(f"target {text!r} is not PLATFORM/PYTHON",
                         key="--target",
                         hint="e.g. manylinux_2_34_x86_64/3.9 for RHEL 9, "
                              "manylinux_2_35_x86_64/3.10 for Ubuntu 22.04")
    glibc = int(m["glibc"])
    if glibc < OLDEST_MANYLINUX:
        raise UsageError(f"target {text!r}: glibc older than 2.{OLDEST_MANYLINUX} is not "
                         "supported", key="--target")
    return Target(glibc_minor=glibc, arch=m["arch"], python=f"3.{m['minor']}")


def running_target() -> Target:
    """The platform and Python this process runs on."""
    libc, version = platform.libc_ver()
    if libc != "glibc" or not version:
        raise UsageError("gate bundle needs a glibc Linux to build on", key="gate bundle",
                         hint="name the site with --target PLATFORM/PYTHON")
    return Target(glibc_minor=int(version.split(".")[1]), arch=platform.machine(),
                  python=f"{sys.version_info[0]}.{sys.version_info[1]}")


def agent_targets(harness_targets: list[Target]) -> list[Target]:
    """The agent goes to client hosts whose Python may be older: for each harness platform,
    every Python in AGENT_PYTHONS and the harness target's own."""
    found = {Target(t.glibc_minor, t.arch, p) for t in harness_targets for p in AGENT_PYTHONS}
    found |= set(harness_targets)
    return sorted(found, key=lambda t: (t.arch, t.glibc_minor, t.python_tuple))
