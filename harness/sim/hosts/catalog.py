"""Simulated hardware: captured real outputs that answer a simulated host's hardware tools.

Why: G1 and G2 read a host's hardware through its tools (nvidia-smi, nvme, lspci, dcgmi,
ethtool ...). In the simulated lab there is no such hardware, and this machine's own tools
would describe the wrong machine, so a simulated host answers from a profile of captured
real outputs (never invented text), and refuses loudly what it has no capture for.

A catalog is a directory with `profiles.yaml` (format in captures/profiles.yaml) and the
captures it names. The packaged one holds only permissively licensed captures; a site or
a test adds a directory of its own (`gate_sim_captures`), whose profiles come first.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.errors import ConfigError

PACKAGED = Path(__file__).parent / "captures"
MANIFEST = "profiles.yaml"

# Tools that describe the machine they run on. On a simulated host they are answered from
# captures or refused, never run for real: this machine's GPUs, disks and NICs are not the
# simulated host's. Tools named in a loaded catalog are added to these.
HARDWARE_TOOLS = frozenset({
    "nvidia-smi", "dcgmi", "gdscheck", "gdsio", "nvme", "smartctl", "lsblk", "lspci", "lshw",
    "dmidecode", "ipmitool", "ibstat", "ibstatus", "ibv_devinfo", "ethtool", "mst",
    "mlxlink", "mlxconfig", "mlxfwmanager",
    # the kernel's log is this machine's, not the simulated host's (its Xid, its boot)
    "dmesg", "journalctl",
})


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CapturedCommand(_Frozen):
    """One command a profile answers: the argv forms that reach it and the capture."""

    capture: str
    forms: list[list[str]] = Field(min_length=1)
    skip_lines: int = Field(default=0, ge=0)

    @field_validator("forms")
    @classmethod
    def _program_first(cls, forms: list[list[str]]) -> list[list[str]]:
        for form in forms:
            if not form or not re.fullmatch(r"[\w.+-]+", form[0]):
                raise ValueError("each form starts with a program's plain name "
                                 f"(no path, no glob): {form}")
        return forms

    def matches(self, argv: Sequence[str]) -> bool:
        words = [PurePosixPath(argv[0]).name, *argv[1:]] if argv else []
        return any(len(form) == len(words)
                   and all(fnmatch.fnmatchcase(w, pat) for w, pat in zip(words, form,
                                                                         strict=True))
                   for form in self.forms)


class _ProfileSpec(_Frozen):
    description: str
    commands: list[CapturedCommand]


class _Manifest(_Frozen):
    version: int = 1
    profiles: dict[str, _ProfileSpec]


@dataclass(frozen=True)
class Answer:
    """What a simulated tool prints. `capture` is None when the profile had no capture."""

    rc: int
    stdout: str
    stderr: str
    capture: str | None


@dataclass(frozen=True)
class HardwareProfile:
    """One simulated machine's hardware: the commands it answers, from one directory."""

    name: str
    description: str
    commands: tuple[CapturedCommand, ...]
    directory: Path

    def answer(self, argv: Sequence[str], host: str) -> Answer:
        """The capture for argv, or exit 127 naming what this profile does answer."""
        for cmd in self.commands:
            if cmd.matches(argv):
                text = (self.directory / cmd.capture).read_text(encoding="utf-8")
                if cmd.skip_lines:
                    text = "".join(text.splitlines(keepends=True)[cmd.skip_lines:])
                return Answer(0, text, "", cmd.capture)
        return Answer(127, "", f"gate sim: {host} has simulated hardware ({self.name}) and no "
                      f"captured output for `{shlex.join(argv)}`; it answers: "
                      f"{'; '.join(self.answers())}\n", None)

    def answers(self) -> list[str]:
        """The first form of each command, as a user would type it."""
        return [shlex.join(cmd.forms[0]) for cmd in self.commands]


@dataclass(frozen=True)
class Catalog:
    profiles: dict[str, HardwareProfile]

    def get(self, name: str) -> HardwareProfile | None:
        return self.profiles.get(name)

    @property
    def tools(self) -> frozenset[str]:
        """Every program a simulated host must not run for real."""
        named = {cmd.forms[0][0] for p in self.profiles.values() for cmd in p.commands}
        return HARDWARE_TOOLS | named

    def simulates(self, argv: Sequence[str]) -> bool:
        """Whether argv runs a hardware tool (answered from captures, never for real)."""
        return bool(argv) and PurePosixPath(argv[0]).name in self.tools


def _read_manifest(directory: Path) -> dict[str, HardwareProfile]:
    path = directory / MANIFEST
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("no profiles.yaml in the captures directory", file=str(path)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"unreadable YAML: {exc}".splitlines()[0], file=str(path)) from None
    try:
        manifest = _Manifest.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise ConfigError(first["msg"], file=str(path), key=key) from None
    profiles: dict[str, HardwareProfile] = {}
    for name, spec in manifest.profiles.items():
        for i, cmd in enumerate(spec.commands):
            if not (directory / cmd.capture).is_file():
                raise ConfigError(f"capture {cmd.capture} is not in {directory}",
                                  file=str(path), key=f"profiles.{name}.commands.{i}.capture")
        profiles[name] = HardwareProfile(name, spec.description, tuple(spec.commands),
                                         directory)
    return profiles


def load_catalog(extra: Path | None = None) -> Catalog:
    """The packaged profiles, under those of `extra` (a directory of one's own captures)."""
    profiles = _read_manifest(PACKAGED)
    if extra is not None:
        profiles = {**profiles, **_read_manifest(extra)}
    return Catalog(profiles)
