"""The load agent's wheels made from this gate's own install (harness/bundle/local_agent.py,
`placement: client` without a bundle): real wheels in a real cache directory, read back
as the gate reads shipped wheels (their RECORD against their bytes), made once per digest,
made again when the checkout changes; a client whose Python they do not fit is one exit-4
line naming what to do."""

from __future__ import annotations

import base64
import csv
import hashlib
import importlib.util
import io
import sys
import zipfile
from pathlib import Path

import pytest

from harness.bundle import local_agent
from harness.bundle.agent_wheel import AGENT_NAME, build_agent_wheel
from harness.bundle.targets import running_target
from harness.bundle.wheels import missing_requirements
from harness.errors import UsageError
from harness.remote.ship import Probe, RemotePython, choose
from harness.remote.verify import shipped


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return local_agent.local_agent_wheels(tmp_path_factory.mktemp("cache"))


def _wheel_dir(root: Path) -> Path:
    (only,) = [d for d in root.iterdir() if d.is_dir()]
    return only


def test_the_wheels_are_the_agents_closure_for_this_python(made: Path) -> None:
    here = running_target()
    wheels = _wheel_dir(made)
    assert wheels.name.startswith(f"py{here.python}-manylinux_2_")
    assert wheels.name.endswith(f"_{here.arch}")
    names = {p.name.split("-")[0].lower() for p in wheels.glob("*.whl")}
    assert {"gate_agent", "aiohttp", "numpy", "prometheus_client", "yarl"} <= names
    if importlib.util.find_spec("uvloop") is not None:  # the load client's faster loop
        assert "uvloop" in names
    env = {"python_version": here.python, "platform_machine": here.arch}
    assert missing_requirements(wheels, [AGENT_NAME], env) == []
    assert local_agent.made_here(made) is not None  # ship's hint tells it from a bundle's


def test_every_repacked_file_is_what_its_record_says(made: Path) -> None:
    """The gate verifies the client's venv against these RECORDs (harness.remote.verify):
    each must hash the bytes the wheel installs, and hold no .pyc or installer file."""
    wheels = sorted(_wheel_dir(made).glob("*.whl"))
    ship = shipped(wheels)
    assert ship.agent_files and len(ship.dist_infos) == len(wheels)
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
            rows = [r for r in csv.reader(io.StringIO(z.read(record).decode())) if r]
            assert {r[0] for r in rows} == set(z.namelist()), wheel.name
            for name, digest, size in rows:
                if name == record:
                    continue
                data = z.read(name)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()) \
                    .rstrip(b"=").decode()
                assert (digest, int(size)) == (f"sha256={want}", len(data)), name
                assert not name.endswith(".pyc") and "__pycache__" not in name
                assert name.rpartition("/")[2] not in ("INSTALLER", "REQUESTED",
                                                       "direct_url.json")


def test_made_once_per_digest_and_again_when_the_checkout_changes(
        made: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = made.parent
    stamp = (made / local_agent.MARK).stat().st_mtime_ns
    assert local_agent.local_agent_wheels(cache) == made  # the same inputs: reused
    assert (made / local_agent.MARK).stat().st_mtime_ns == stamp

    def edited(dest: Path) -> Path:  # the checkout with one more module
        wheel = build_agent_wheel(dest)
        with zipfile.ZipFile(wheel, "a") as z:
            z.writestr("harness/remote/edited.py", "X = 1\n")
        return wheel

    monkeypatch.setattr(local_agent, "build_agent_wheel", edited)
    again = local_agent.local_agent_wheels(cache)
    assert again != made and again.parent == cache and (again / local_agent.MARK).is_file()


def test_a_client_python_they_do_not_fit_is_one_line_naming_what_to_do(made: Path) -> None:
    here = running_target()
    other = "3.9" if here.python != "3.9" else "3.10"
    probe = Probe((RemotePython("/usr/bin/python3", (3, int(other[2:])), here.arch, 34),),
                  10 ** 7)
    with pytest.raises(UsageError) as err:
        choose(probe, made, "c1")
    line = err.value.one_line()
    assert "c1" in line and f"Python {other}" in line and "load.agent_wheels" in line
    assert f"gate bundle --target manylinux_2_34_{here.arch}/{other}" in line
    fits = Probe((RemotePython(sys.executable, sys.version_info[:2], here.arch,
                               here.glibc_minor),), 10 ** 7)
    assert choose(fits, made, "c1")[1] == _wheel_dir(made)
