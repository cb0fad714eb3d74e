"""FakeTransport answers from captured real outputs and records what was asked."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.errors import CommandTimeoutError, TransportError
from harness.transport import FakeResponse, FakeTransport, Transport

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transport"
NVSMI = FIXTURES / "nvidia-smi-q-x_telegraf_tesla-t4_drv515.xml"
NVME = FIXTURES / "nvme-list-json_netdata_v2.11_3x-firecuda530.json"


def test_answers_from_captured_files_by_glob_and_regex() -> None:
    fake = FakeTransport([
        FakeResponse("nvidia-smi -q -x", stdout_file=NVSMI),
        FakeResponse(re.compile(r"^nvme list\b"), stdout_file=NVME),
    ], host="gpu1")
    assert isinstance(fake, Transport)
    xml = fake.run(["nvidia-smi", "-q", "-x"]).check().stdout
    assert "<product_name>Tesla T4</product_name>" in xml
    listing = json.loads(fake.run(["nvme", "list", "-o", "json"]).stdout)
    assert listing == json.loads(NVME.read_text())
    assert fake.commands() == ["nvidia-smi -q -x", "nvme list -o json"]


def test_first_match_wins_and_calls_are_recorded() -> None:
    fake = FakeTransport([
        FakeResponse("nvme smart-log /dev/nvme0*", stdout='{"critical_warning": 0}'),
        FakeResponse("nvme *", rc=1, stderr="nvme: no such device"),
    ])
    assert fake.run(["nvme", "smart-log", "/dev/nvme0n1"], sudo=True).ok
    failed = fake.run(["nvme", "smart-log", "/dev/nvme9n1"], env={"LC_ALL": "C"}, stdin="x")
    assert failed.rc == 1 and failed.stderr == "nvme: no such device"
    first, second = fake.calls
    assert first.sudo and not second.sudo
    assert second.env == {"LC_ALL": "C"} and second.stdin == b"x"


def test_unmatched_commands_raise_unless_a_default_is_given() -> None:
    with pytest.raises(TransportError, match="no fake response") as info:
        FakeTransport([], host="st1").run(["ibstat"])
    assert info.value.host == "st1" and info.value.command == "ibstat"
    absent = FakeTransport([], default=FakeResponse("*", rc=127, stderr="not found"))
    assert absent.run(["ibstat"]).rc == 127


def test_errors_and_files() -> None:
    fake = FakeTransport([FakeResponse("sleep *", error=CommandTimeoutError(
        "timed out", host="gpu1", command="sleep 9"))], files={"/etc/os-release": b"ID=debian\n"})
    with pytest.raises(CommandTimeoutError):
        fake.run(["sleep", "9"])
    assert fake.read_file("/etc/os-release") == b"ID=debian\n"
    with fake as t:
        t.put(NVME, "/tmp/up.json")
    assert fake.read_file("/tmp/up.json") == NVME.read_bytes() and fake.closed
