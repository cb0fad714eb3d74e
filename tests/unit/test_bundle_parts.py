"""The offline bundle's pure parts: targets, the manifest check, the requirement closure.

The whole path (build, verify, install with every index unusable) is
tests/integration/test_bundle.py; these pin the edge cases it cannot reach cheaply.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from harness.bundle.manifest import SUMS, Problem, check, digests, write_manifest
from harness.bundle.targets import Target, agent_targets, parse_target
from harness.bundle.wheels import missing_requirements
from harness.errors import UsageError


def test_a_target_expands_to_every_older_manylinux_tag() -> None:
    t = parse_target("manylinux_2_34_x86_64/3.9")
    assert t == Target(34, "x86_64", "3.9") and t.key == "py3.9-manylinux_2_34_x86_64"
    tags = t.platform_tags()
    assert tags[0] == "manylinux_2_17_x86_64" and "manylinux_2_34_x86_64" in tags
    assert "manylinux2014_x86_64" in tags and "manylinux_2_35_x86_64" not in tags
    args = t.pip_args()
    assert args[args.index("--python-version") + 1] == "3.9" and "--only-binary=:all:" in args
    assert t.marker_env()["python_version"] == "3.9"


@pytest.mark.parametrize("text", ["rhel9", "manylinux_2_34_x86_64", "manylinux_2_34_x86_64/2.7",
                                  "manylinux_2_12_x86_64/3.9", "win_amd64/3.11"])
def test_a_bad_target_is_a_usage_error_naming_the_option(text: str) -> None:
    with pytest.raises(UsageError) as e:
        parse_target(text)
    assert e.value.key == "--target" and e.value.exit_code == 4


def test_the_agent_covers_client_pythons_from_3_9() -> None:
    found = agent_targets([Target(36, "x86_64", "3.11"), Target(34, "x86_64", "3.13")])
    assert Target(34, "x86_64", "3.9") in found and Target(36, "x86_64", "3.10") in found
    assert Target(34, "x86_64", "3.13") in found and len(found) == len(set(found))


def _tree(root: Path) -> None:
    (root / "wheels").mkdir(parents=True)
    (root / "wheels" / "a.whl").write_bytes(b"wheel a")
    (root / "install.sh").write_text("#!/bin/sh\n")


def test_the_manifest_catches_a_changed_missing_or_added_file(tmp_path: Path) -> None:
    _tree(tmp_path)
    listed = write_manifest(tmp_path, {"version": "x"})["files"]
    sums = (tmp_path / SUMS).read_text()
    assert set(listed) == {"wheels/a.whl", "install.sh"}
    assert check(digests(tmp_path), listed, sums) == []
    (tmp_path / "wheels" / "a.whl").write_bytes(b"wheel A")
    (tmp_path / "install.sh").unlink()
    (tmp_path / "extra").write_text("x")
    assert check(digests(tmp_path), listed, sums) == [
        Problem("install.sh", "missing"), Problem("wheels/a.whl", "changed"),
        Problem("extra", "unlisted")]


def test_sums_that_disagree_with_the_manifest_are_a_problem(tmp_path: Path) -> None:
    _tree(tmp_path)
    listed = write_manifest(tmp_path, {})["files"]
    sums = (tmp_path / SUMS).read_text().replace(listed["install.sh"], "0" * 64)
    problems = check(digests(tmp_path), listed, sums)
    assert [p.path for p in problems] == ["install.sh"] and SUMS in problems[0].what


def _wheel(d: Path, name: str, version: str, *requires: str) -> None:
    meta = "\n".join(["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
                      *[f"Requires-Dist: {r}" for r in requires], ""])
    with zipfile.ZipFile(d / f"{name}-{version}-py3-none-any.whl", "w") as zf:
        zf.writestr(f"{name}-{version}.dist-info/METADATA", meta)


def test_the_closure_judges_markers_by_the_target_not_this_machine(tmp_path: Path) -> None:
    """aiohttp needs async-timeout below 3.11 only: pip running on 3.11 skips it when
    fetching for 3.9; the closure check must not."""
    _wheel(tmp_path, "agent", "1", "aiohttp>=3", "extra-only; extra == 'fast'")
    _wheel(tmp_path, "aiohttp", "3.13", "async-timeout<6,>=4; python_version < '3.11'")
    on_39 = missing_requirements(tmp_path, ["agent"], {"python_version": "3.9"})
    assert [r.name for r in on_39] == ["async-timeout"]
    assert missing_requirements(tmp_path, ["agent"], {"python_version": "3.11"}) == []
    assert [r.name for r in missing_requirements(tmp_path, ["agent[fast]"],
                                                 {"python_version": "3.11"})] == ["extra-only"]


def test_a_wheel_at_the_wrong_version_counts_as_missing(tmp_path: Path) -> None:
    _wheel(tmp_path, "agent", "1", "numpy>=2")
    _wheel(tmp_path, "numpy", "1.26.4")
    assert [str(r) for r in missing_requirements(tmp_path, ["agent"], {})] == ["numpy>=2"]


def test_the_one_file_hash_agrees_with_sha256sum_and_reads_its_own_lines(
        tmp_path: Path) -> None:
    """harness.digests serves the bundle, the agent's wheels and evidence packs alike."""
    import hashlib
    import subprocess

    from harness.digests import parse_sums, sha256_file, sums_text

    data = bytes(range(256)) * 9000  # past one read of CHUNK bytes
    (tmp_path / "b.whl").write_bytes(data)
    (tmp_path / "a b.txt").write_bytes(b"")
    files = {p.name: sha256_file(p) for p in tmp_path.iterdir()}
    assert files["b.whl"] == hashlib.sha256(data).hexdigest()
    (tmp_path / SUMS).write_text(sums_text(files))
    assert parse_sums((tmp_path / SUMS).read_text()) == files
    checked = subprocess.run(["sha256sum", "--check", SUMS], cwd=tmp_path,
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
