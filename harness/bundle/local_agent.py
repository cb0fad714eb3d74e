"""The load agent's wheels made from this gate's own install, for a gate without a bundle.

`load.placement: client` ships gate-agent and its dependencies as wheels (a bundle's
`agent/` directory). A checkout install has none, and nothing is downloaded at run time,
so they are made here, offline, once: gate-agent by harness.bundle.agent_wheel (from
the source it would ship), and each dependency repacked from the files this gate's own
venv installed for it (its RECORD lists them; `pip wheel` cannot rebuild an installed
distribution and a checkout has no wheels of them). Such wheels fit only a client whose
Python, CPU and glibc the gate's own wheels fit; any other client needs a bundle made for
it (harness.remote.ship says which, with the `gate bundle --target` that adds it).

The result is cached under ~/.cache/gate/agent-wheels/DIGEST/ (XDG_CACHE_HOME), keyed by
the agent wheel's bytes and every repacked distribution's RECORD: a changed checkout or
venv makes a new directory, an unchanged one reuses its wheels (the agent on the client
host is then not reinstalled either).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.metadata as metadata
import io
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness.bundle.agent_wheel import AGENT_NAME, AGENT_REQUIRES, build_agent_wheel
from harness.bundle.targets import OLDEST_MANYLINUX, running_target
from harness.bundle.wheels import missing_requirements
from harness.errors import UsageError

MARK = "FROM-THIS-GATE.json"  # in a root made here: what it holds and why (ship's hint)
# What pip writes into an installed .dist-info beside the wheel's own files.
INSTALLER_FILES = frozenset({"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"})
KEY = "gate bundle, or load.agent_wheels"
HINT = ("make a bundle on a connected machine (`gate bundle`) and set load.agent_wheels "
        "to its agent/ directory")
# Optional imports worth shipping when this venv has them: the load client's faster loop
# (harness.loadgen.engine.loop_factory; without it the agent's client does more per chunk
# than the gate's in-process one). ship installs it beside gate-agent (OPTIONAL_WHEELS).
OPTIONAL = ("uvloop",)
_GLIBC = re.compile(r"^manylinux_2_(\d+)_")
LEGACY_MANYLINUX = {"manylinux1": 5, "manylinux2010": 12, "manylinux2014": 17}


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gate" / "agent-wheels"


@dataclass(frozen=True)
class Installed:
    """One distribution of the agent's closure, as this gate's venv installed it."""

    dist: metadata.Distribution
    name: str  # canonical
    version: str
    record: bytes  # its installed RECORD


def closure(requires: tuple[str, ...] = AGENT_REQUIRES,
            optional: tuple[str, ...] = OPTIONAL) -> list[Installed]:
    """The installed distributions the agent's requirements reach on this Python, and
    the optional ones installed here (ship installs those it finds among the wheels)."""
    env = {k: str(v) for k, v in default_environment().items()}
    found: dict[str, Installed] = {}
    todo = [Requirement(r) for r in requires]
    for name in optional:
        try:
            todo.append(Requirement(f"{name}=={metadata.version(name)}"))
        except metadata.PackageNotFoundError:
            continue
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in found:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            raise UsageError(f"cannot make the load agent's wheels: {req} is not installed "
                             f"in {sys.prefix}", key=KEY, hint=HINT) from None
        if not req.specifier.contains(dist.version, prereleases=True):
            raise UsageError(f"cannot make the load agent's wheels: {req} is wanted, "
                             f"{dist.version} is installed in {sys.prefix}", key=KEY,
                             hint=HINT)
        record = dist.read_text("RECORD")
        direct = json.loads(dist.read_text("direct_url.json") or "{}")
        if record is None or direct.get("dir_info", {}).get("editable"):
            raise UsageError(f"cannot make the load agent's wheels: {dist.metadata['Name']} "
                             "is installed without a RECORD or editable, so its files are "
                             "not known", key=KEY, hint=HINT)
        found[name] = Installed(dist, name, dist.version, record.encode())
        extras = req.extras or {""}
        todo += [sub for sub in map(Requirement, dist.requires or [])
                 if sub.marker is None
                 or any(sub.marker.evaluate({**env, "extra": e}) for e in extras)]
    return sorted(found.values(), key=lambda i: i.name)


def _tags(dist: metadata.Distribution) -> list[str]:
    text = dist.read_text("WHEEL") or ""
    tags = [ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Tag:")]
    if not tags:
        raise UsageError(f"cannot make the load agent's wheels: {dist.metadata['Name']} was "
                         "not installed from a wheel (no WHEEL tags)", key=KEY, hint=HINT)
    return tags


def _glibc(tags: list[str]) -> int:
    """The oldest glibc minor a wheel with these tags runs on (0: any platform)."""
    found = []
    for tag in tags:
        plat = tag.split("-")[2]
        if plat == "any":
            return 0
        m = _GLIBC.match(plat)
        legacy = LEGACY_MANYLINUX.get(plat.split("_")[0])
        if m is not None:
            found.append(int(m.group(1)))
        elif legacy is not None:
            found.append(legacy)
        else:  # linux_x86_64, built here: this machine's glibc
            found.append(running_target().glibc_minor)
    return min(found)


def _record_line(name: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def repack(item: Installed, dest: Path) -> tuple[Path, int]:
    """A wheel of the files `item` installed into site-packages (no .pyc, no scripts, no
    installer files), written reproducibly into dest; with the oldest glibc it runs on."""
    dist = item.dist
    tags = _tags(dist)
    info = next(str(f).split("/")[0] for f in dist.files or []
                if str(f).split("/")[0].endswith(".dist-info"))
    files: dict[str, bytes] = {}
    for row in csv.reader(io.StringIO(item.record.decode())):
        if not row:
            continue
        name = row[0]
        parts = name.split("/")
        if parts[0] == ".." or "__pycache__" in parts or name.endswith(".pyc") or (
                parts[0] == info and parts[-1] in INSTALLER_FILES):
            continue
        files[name] = Path(str(dist.locate_file(name))).read_bytes()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for name, data in files.items():
        writer.writerow(_record_line(name, data))
    writer.writerow([f"{info}/RECORD", "", ""])
    files[f"{info}/RECORD"] = out.getvalue().encode()
    pys = ".".join(dict.fromkeys(t.split("-")[0] for t in tags))
    abis = ".".join(dict.fromkeys(t.split("-")[1] for t in tags))
    plats = ".".join(dict.fromkeys(t.split("-")[2] for t in tags))
    stem = info.removesuffix(".dist-info")
    wheel = dest / f"{stem}-{pys}-{abis}-{plats}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files, key=lambda n: (n.startswith(info), n)):  # dist-info last
            zinfo = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            zinfo.external_attr = 0o644 << 16
            zinfo.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zinfo, files[name], compresslevel=1)  # 1/2.5 the CPU, +15 % size
    return wheel, _glibc(tags)


def local_agent_wheels(cache: Path | None = None) -> Path:
    """A root holding one wheel dir (`py3.11-manylinux_2_27_x86_64/`, as a bundle's
    agent/ does) for this gate's own Python, made once per digest (see the module)."""
    cache = cache or cache_root()
    here = running_target()
    items = closure()
    with tempfile.TemporaryDirectory(prefix="gate-agent-") as tmp:
        agent = build_agent_wheel(Path(tmp))
        h = hashlib.sha256(agent.read_bytes())
        for item in items:
            h.update(f"\n{item.name} {item.version}\n".encode() + item.record)
        h.update(f"\n{here.key}".encode())
        root = cache / h.hexdigest()[:20]
        if (root / MARK).is_file():
            return root
        try:
            cache.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix=".building-", dir=cache))
        except OSError as exc:
            raise UsageError(f"cannot make the load agent's wheels in {cache}: "
                             f"{exc.strerror}", key=KEY, hint=HINT + ", or set "
                             "XDG_CACHE_HOME to a writable directory") from None
        try:
            return _build(work, root, agent, items)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _build(work: Path, root: Path, agent: Path, items: list[Installed]) -> Path:
    here = running_target()
    wheels = work / "wheels"
    wheels.mkdir()
    shutil.copy2(agent, wheels / agent.name)
    glibc = max([OLDEST_MANYLINUX, *(repack(item, wheels)[1] for item in items)])
    env = {k: str(v) for k, v in default_environment().items()}
    missing = missing_requirements(wheels, [AGENT_NAME], env)
    if missing:
        raise UsageError("cannot make the load agent's wheels: still missing "
                         + ", ".join(map(str, missing)), key=KEY, hint=HINT)
    key = f"py{here.python}-manylinux_2_{glibc}_{here.arch}"
    wheels.rename(work / key)
    (work / MARK).write_text(json.dumps({
        "made_from": sys.prefix, "python": here.python, "dir": key,
        "wheels": sorted(p.name for p in (work / key).glob("*.whl"))}, indent=1) + "\n")
    try:
        work.rename(root)  # whole or not at all; a second gate beside this one made it too
    except OSError:
        if not (root / MARK).is_file():
            raise
    return root


def made_here(root: Path) -> dict[str, object] | None:
    """What MARK says of a root made by local_agent_wheels, or None (a bundle's)."""
    try:
        doc = json.loads((root / MARK).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
