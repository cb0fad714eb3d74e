"""`gate bundle`: the harness and its dependencies as wheels, the agent's wheels per client
Python, a CJK font, the Debian package list, install.sh, and the manifest, in one tar.gz.

Layout (TOP = gate-bundle-VERSION):
    TOP/manifest.json, TOP/SHA256SUMS            written first in the archive
    TOP/install.sh, TOP/debian-packages.txt, TOP/README.txt
    TOP/wheels/py3.11-manylinux_2_36_x86_64/     gate-harness[fast] and every dependency
    TOP/agent/py3.9-manylinux_2_36_x86_64/       gate-agent and its dependencies
    TOP/fonts/wqy-microhei.ttc, TOP/fonts/LICENSE-wqy-microhei
The playbooks and the report's templates, CSS and translations are inside the harness
wheel (harness.playbooks, harness.reports), so an installed gate finds them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.utils import parse_wheel_filename

from harness import __version__
from harness.bundle.agent_wheel import AGENT_NAME, build_agent_wheel
from harness.bundle.manifest import MANIFEST, SUMS, write_manifest
from harness.bundle.targets import Target, agent_targets, running_target
from harness.bundle.wheels import fetch_complete
from harness.errors import UsageError

HARNESS_MIN_PYTHON = (3, 11)
# A CJK font whose licence allows shipping it. WenQuanYi Micro Hei is dual-licensed
# "Apache-2.0 or GPL-3+ with font exception" (Debian's copyright file): shipped under
# Apache-2.0, with that file beside it. Noto CJK (OFL) would do too but subsets 5-10x slower.
FONT = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
FONT_LICENCE = Path("/usr/share/doc/fonts-wqy-microhei/copyright")
FONT_PACKAGE = "fonts-wqy-microhei"
# What the gate host needs from Debian to run gate and render PDFs (scripts/setup.sh
# installs these and the test tools); listed for the site, since nothing is fetched there.
DEBIAN_PACKAGES = (
    ("python3", "3.11 or newer, runs gate"),
    ("python3-venv", "install.sh makes a venv"),
    ("fontconfig", "finds the report fonts"),
    ("libpango-1.0-0", "WeasyPrint lays out the PDF"),
    ("libpangoft2-1.0-0", "WeasyPrint lays out the PDF"),
    ("libharfbuzz-subset0", "WeasyPrint subsets fonts (PDFs ~1.8x faster)"),
    ("fonts-dejavu-core", "the report's Latin font"),
)


@dataclass(frozen=True)
class BundleRequest:
    output: Path | None = None
    targets: tuple[Target, ...] = ()  # empty: this machine's platform and Python
    source_root: Path | None = None  # the checkout holding pyproject.toml
    say: Callable[[str], None] = field(default=lambda _: None)


def source_checkout() -> Path:
    """The checkout gate runs from (an editable install); a bundle is built from source."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file() or 'name = "gate-harness"' not in pyproject.read_text():
        raise UsageError("gate bundle builds from the gate source checkout; this gate is "
                         "installed without one", key="gate bundle",
                         hint="run it from the checkout's venv (./scripts/setup.sh)")
    return root


def _harness_wheel(root: Path, dest: Path) -> Path:
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps",
                           "--no-build-isolation", "--disable-pip-version-check", "-q",
                           "-w", str(dest), str(root)], capture_output=True, text=True,
                          timeout=600, check=False)
    found = sorted(dest.glob("gate_harness-*.whl"))
    if proc.returncode != 0 or not found:
        raise UsageError(f"building the gate-harness wheel failed: {proc.stderr.strip()[-300:]}",
                         key="gate bundle", hint="./scripts/setup.sh installs setuptools")
    return found[0]


def _versions(directory: Path) -> dict[str, str]:
    return {str(parse_wheel_filename(w.name)[0]): str(parse_wheel_filename(w.name)[1])
            for w in sorted(directory.glob("*.whl"))}


def _split(targets: tuple[Target, ...], say: Callable[[str], None]
           ) -> tuple[list[Target | None], list[Target]]:
    """(harness targets, None = this machine exactly; agent targets). A target below
    Python 3.11 gets the agent only: gate itself needs 3.11."""
    here = running_target()
    if not targets:
        return [None], agent_targets([here])
    for t in targets:
        say(f"warning: wheels for {t} are chosen by pip on this machine; pip may pick "
            "other versions than an install there would")
    gate = [t for t in targets if t.python_tuple >= HARNESS_MIN_PYTHON]
    return list(gate), agent_targets(list(targets))


def build_bundle(req: BundleRequest) -> Path:
    """Write the bundle and return its path; any wheel a target lacks is a UsageError
    here, before anything is carried to the site."""
    if not FONT.is_file():
        raise UsageError(f"no {FONT} to ship for Chinese reports", key="gate bundle",
                         hint=f"apt-get install {FONT_PACKAGE}")
    root = req.source_root or source_checkout()
    name = f"gate-bundle-{__version__}"
    output = (req.output or Path(f"{name}.tar.gz")).resolve()
    harness_targets, agents = _split(req.targets, req.say)
    here = running_target()
    with tempfile.TemporaryDirectory(prefix="gate-bundle-") as tmp:
        top = Path(tmp) / name
        built = Path(tmp) / "built"
        built.mkdir()
        req.say("building the gate-harness and gate-agent wheels")
        harness_whl = _harness_wheel(root, built)
        agent_whl = build_agent_wheel(built)
        packages: dict[str, dict[str, str]] = {}
        for t in harness_targets:
            d = top / "wheels" / (t or here).key
            d.mkdir(parents=True)
            req.say(f"wheels for gate on {t or here}")
            fetch_complete([f"gate-harness[fast] @ {harness_whl.as_uri()}"],
                           ["gate-harness[fast]"], d, t, t.marker_env() if t else {})
            packages[f"wheels/{d.name}"] = _versions(d)
        for t in agents:
            d = top / "agent" / t.key
            d.mkdir(parents=True)
            req.say(f"wheels for the agent on {t}")
            shutil.copy2(agent_whl, d / agent_whl.name)
            fetch_complete([str(d / agent_whl.name)], [AGENT_NAME], d, t, t.marker_env())
            packages[f"agent/{d.name}"] = _versions(d)
        (top / "fonts").mkdir()
        shutil.copy2(FONT, top / "fonts" / FONT.name)
        shutil.copy2(FONT_LICENCE, top / "fonts" / f"LICENSE-{FONT.stem}")
        (top / "debian-packages.txt").write_text(
            "# Debian packages gate needs on the gate host (install.sh checks them)\n"
            + "".join(f"{p}  # {why}\n" for p, why in DEBIAN_PACKAGES))
        shutil.copy2(Path(__file__).with_name("install.sh"), top / "install.sh")
        (top / "install.sh").chmod(0o755)
        info: dict[str, Any] = {
            "name": "gate-bundle", "version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "built_on": str(here), "packages": packages,
            "font": {"file": f"fonts/{FONT.name}", "licence": "Apache-2.0",
                     "licence_file": f"fonts/LICENSE-{FONT.stem}", "package": FONT_PACKAGE},
            "debian_packages": [p for p, _ in DEBIAN_PACKAGES],
            "agent_python": ">=3.9"}
        write_manifest(top, info)
        req.say(f"writing {output}")
        _tar(top, output)
    return output


def _tar(top: Path, output: Path) -> None:
    """manifest.json and SHA256SUMS first, so a reader knows what to expect before the
    rest; wheels are compressed already, so gzip level 1."""
    first = [top / MANIFEST, top / SUMS]
    rest = [p for p in sorted(top.rglob("*")) if p.is_file() and p not in first]
    partial = output.with_name(output.name + ".partial")
    with tarfile.open(partial, "w:gz", compresslevel=1) as tar:
        for path in [*first, *rest]:
            tar.add(path, arcname=f"{top.name}/{path.relative_to(top).as_posix()}",
                    recursive=False)
    partial.replace(output)
