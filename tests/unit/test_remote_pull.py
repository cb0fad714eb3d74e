"""The pull side's edge cases: the same bytes twice, a partial line, a dropped link, and
the systemd-run unit the agent starts where systemd runs (PID 1 is not systemd here, so
its syntax is checked, not run)."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.errors import MeasurementError, ParseError, UnreachableError, UsageError
from harness.loadgen.records import RequestRecord
from harness.remote import frames, records_file
from harness.remote.agent import read_frames
from harness.remote.detach import phase_argv, systemd_run_argv
from harness.remote.executor import Puller, RemoteExecutor, parse_pull
from harness.remote.ship import choose, parse_probe, ship_agent
from harness.transport.fake import FakeResponse, FakeTransport
from harness.transport.result import CommandResult


def recs(*idx: int) -> list[RequestRecord]:
    return [RequestRecord(idx=i, instance=0, doc_id=i, warmup=False, scheduled=0.0)
            for i in idx]


def file_of(*batches: list[RequestRecord]) -> bytes:
    return frames.HEADER + b"".join(records_file.encode(b) for b in batches)


def test_pulling_the_same_bytes_twice_delivers_nothing_twice() -> None:
    data = file_of(recs(0, 1), recs(2))
    p = Puller()
    assert [r.idx for r in p.take(data[:-3])] == [0, 1]  # a torn last frame waits
    assert [r.idx for r in p.take(data[p.offset:])] == [2] and p.offset == len(data)
    again = Puller(delivered=set(p.delivered))  # a resume that reads from the start
    assert again.take(data) == [] and sorted(again.records) == [0, 1, 2]
    partly = Puller(delivered={1})  # some stored before the gate was killed
    assert [r.idx for r in partly.take(data)] == [0, 2] and sorted(partly.records) == [0, 1, 2]


def test_every_field_survives_the_round_trip() -> None:
    full = RequestRecord(idx=7, instance=3, doc_id=2**40, warmup=True, scheduled=1.25,
                         sent=1.5, ttft=0.125, ttft_text=0.25, e2el=2.0,
                         chunk_times=[0.125, 0.5, 2.0], prompt_tokens=4096,
                         output_tokens=3, usage_reported=True, status=200,
                         finish_reason="length")
    failed = RequestRecord(idx=8, instance=0, doc_id=-1, warmup=False, scheduled=0.0,
                           status=503, error_kind="http", error="服务 unavailable \"x\"\n")
    bare = RequestRecord(idx=9, instance=0, doc_id=0, warmup=False, scheduled=0.0)
    got, used = records_file.decode(file_of([full, failed, bare], []), at_start=True)
    assert got == [full, failed, bare] and used == len(file_of([full, failed, bare], []))
    assert got[2].sent is None and got[2].status is None and got[2].chunk_times == []


def test_a_file_in_another_format_is_refused_not_misread() -> None:
    v1 = b'{"idx":0,"instance":0,"doc_id":0,"warmup":false,"scheduled":0.0}\n'
    with pytest.raises(ParseError, match="format v1"):
        records_file.decode(v1, at_start=True)
    with pytest.raises(ParseError, match="gate-agent records v3"):
        records_file.decode(b"gate-agent records v3\n" + b"\0" * 40, at_start=True)
    with pytest.raises(ParseError, match="damaged"):  # not at a frame boundary
        records_file.decode(file_of(recs(0))[len(frames.HEADER) + 1:])
    assert records_file.decode(frames.HEADER[:5], at_start=True) == ([], 0)  # too early
    old_agent = json.dumps({"status": None, "alive": False, "size": 3, "log": ""}) + "\n{}"
    with pytest.raises(ParseError, match="record format 1; this gate reads 2"):
        parse_pull(old_agent)


def test_the_agent_returns_whole_frames_and_a_large_one_whole(tmp_path: Path) -> None:
    data = file_of(recs(0, 1), recs(*range(2, 40)), recs(40))
    path = tmp_path / frames.NAME
    path.write_bytes(data[:-5])  # the last frame still being written
    first = read_frames(path, 0, 10)  # smaller than the first frame: it comes whole
    assert [r.idx for r in records_file.decode(first, at_start=True)[0]] == [0, 1]
    rest = read_frames(path, len(first), 1 << 20)
    assert [r.idx for r in records_file.decode(rest)[0]] == list(range(2, 40))
    assert read_frames(path, len(first) + len(rest), 1 << 20) == b""  # torn: not yet
    path.write_bytes(b'{"idx": 0}\n')
    with pytest.raises(ParseError, match="format v1"):
        records_file.decode(read_frames(path, 0, 1 << 20), at_start=True)


def test_the_systemd_unit_is_well_formed(tmp_path: Path) -> None:
    argv = systemd_run_argv("gate-phase-run12-g3.TP8_16.b", tmp_path / "s.json", tmp_path)
    assert argv[:3] == ["systemd-run", "--user", "--quiet"]
    sep = argv.index("--")
    assert argv[sep + 1:] == phase_argv(tmp_path / "s.json", tmp_path)
    for opt in argv[3:sep]:
        assert (opt.startswith("--") and "=" in opt) or opt == "--collect", opt
    props = dict(o.removeprefix("--property=").split("=", 1) for o in argv[3:sep]
                 if o.startswith("--property="))
    # systemd.exec(5): append:PATH takes an absolute path; KillMode one of four values
    assert props["StandardOutput"] == f"append:{tmp_path.resolve() / 'agent.log'}"
    assert props["StandardOutput"] == props["StandardError"]
    assert props["KillMode"] in ("control-group", "mixed", "process", "none")
    with pytest.raises(ValueError):
        systemd_run_argv("gate phase; rm -rf /", tmp_path / "s.json", tmp_path)


class FlakyLink:
    """A transport whose first pulls find the link down (the lab test cuts a real one)."""

    host = "client1"

    def __init__(self, answers: list[str], drops: int) -> None:
        self.answers, self.drops, self.calls = answers, drops, 0

    def run(self, argv: Sequence[str], *, timeout: float = 60,
            sudo: bool = False) -> CommandResult:
        self.calls += 1
        if self.drops:
            self.drops -= 1
            raise UnreachableError("link down", host=self.host)
        return CommandResult(self.host, tuple(argv), 0, self.answers.pop(0), "", 0.0, 0.0)


def pull_answer(state: str, data: bytes, size: int, alive: bool | None = None) -> str:
    status = {"state": state, "pid": 1, "outcome": {
        "status": "FINISHED", "health": {}, "wall_time": 1.0, "started_at": 0.0,
        "params": {"endpoints": [{"url": "u", "model": "m", "instance": 0}]}}}
    alive = state == "running" if alive is None else alive
    return json.dumps({"status": status, "alive": alive, "size": size,
                       "format": 2, "log": ""}) + "\n" + base64.b64encode(data).decode()


def test_a_dropped_link_is_retried_and_loses_nothing() -> None:
    data = file_of(recs(0, 1, 2))
    # the link is down for three pulls; then a partial line (offset stays 0), then
    # the whole file from offset 0 with the phase finished
    link = FlakyLink([pull_answer("running", data[:10], 10),
                      pull_answer("finished", data, len(data))], drops=3)
    ex = RemoteExecutor(link, ("gate-agent",), "d", poll=0.0,  # type: ignore[arg-type]
                        sleep=lambda _: None)
    got: list[RequestRecord] = []
    out = ex.attach("d", got.extend)
    assert [r.idx for r in got] == [0, 1, 2] and len(out.records) == 3
    assert link.calls == 3 + 2


def test_an_agent_that_died_writing_a_batch_ends_in_error_with_the_rest_kept() -> None:
    data = file_of(recs(0, 1), recs(2, 3))
    torn = len(data) - 9  # killed mid-write: its last frame never completes
    link = FlakyLink([pull_answer("running", data[:torn - 40], torn, alive=False),
                      pull_answer("running", b"", torn, alive=False),
                      pull_answer("running", b"", torn, alive=False)], drops=0)
    ex = RemoteExecutor(link, ("gate-agent",), "d", sleep=lambda _: None)  # type: ignore[arg-type]
    got: list[RequestRecord] = []
    with pytest.raises(MeasurementError) as e:
        ex.attach("d", got.extend)
    assert [r.idx for r in got] == [0, 1] and "2 requests kept" in e.value.message
    assert "bytes of a batch it was writing lost" in e.value.message and link.calls == 3


def test_an_answer_cut_short_gives_whole_frames_and_the_rest_next_time() -> None:
    data = file_of(recs(0, 1), recs(2, 3))
    answer = pull_answer("running", data, len(data))
    p = Puller()
    for cut in (len(answer) - 7, len(answer) - 6, len(answer) - 5):  # any quantum boundary
        p = Puller()
        assert [r.idx for r in p.take(parse_pull(answer[:cut]).data)] == [0, 1]
    assert [r.idx for r in p.take(data[p.offset:])] == [2, 3]


def test_a_link_down_past_the_reconnect_window_is_an_error() -> None:
    link = FlakyLink([], drops=10**6)
    ex = RemoteExecutor(link, ("gate-agent",), "d", reconnect_for=0.0,  # type: ignore[arg-type]
                        sleep=lambda _: None)
    with pytest.raises(UnreachableError):
        ex.attach("d")


PROBE_OUT = """/usr/bin/python3 3 6 x86_64 28
/usr/bin/python3.9 3 9 x86_64 34
Filesystem 1024-blocks Used Available Capacity Mounted on
/dev/sda1 100000 90000 10000 90% /home
"""


def test_the_probe_names_each_python_and_the_free_space() -> None:
    probe = parse_probe(PROBE_OUT)
    assert [p.version for p in probe.pythons] == [(3, 6), (3, 9)] and probe.free_kb == 10000


def test_the_newest_fitting_wheel_dir_is_chosen(tmp_path: Path) -> None:
    for d in ("py3.9-manylinux_2_17_x86_64", "py3.9-manylinux_2_34_x86_64",
              "py3.9-manylinux_2_36_x86_64", "py3.11-manylinux_2_34_x86_64"):
        (tmp_path / d).mkdir()
    py, chosen = choose(parse_probe(PROBE_OUT), tmp_path, "c1")
    assert py.path == "/usr/bin/python3.9" and chosen.name == "py3.9-manylinux_2_34_x86_64"


def test_no_python_3_9_is_one_line_naming_the_host(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as e:
        choose(parse_probe(PROBE_OUT.splitlines()[0] + "\n"), tmp_path, "c1")
    assert e.value.host == "c1" and "no Python 3.9 or newer" in e.value.one_line()
    assert "/usr/bin/python3 3.6" in e.value.message and e.value.exit_code == 4


def test_too_little_disk_space_is_refused_before_any_copy(tmp_path: Path) -> None:
    wheels = tmp_path / "py3.9-manylinux_2_34_x86_64"
    wheels.mkdir()
    (wheels / "numpy-2.0.2-cp39-cp39-manylinux_2_17_x86_64.whl").write_bytes(b"x" * 1000)
    t = FakeTransport([FakeResponse("sh -c *", stdout=PROBE_OUT),
                       FakeResponse("mkdir *"), FakeResponse("cat *", rc=1)], host="c1")
    with pytest.raises(UsageError) as e:
        ship_agent(t, tmp_path)
    assert e.value.host == "c1" and "MB free in the home directory" in e.value.message
    assert t.uploaded == {}


def test_a_phase_that_finished_before_start_returned_keeps_its_status(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A very fast phase writes `finished` before `gate-agent start` writes `starting`:
    start must not overwrite it (a dead pid under `starting` is read as an agent gone
    without finishing, an ERROR for a phase that measured everything)."""
    from harness.remote import agent, detach

    def fast(spec: Path, directory: Path, unit: str) -> tuple[str, int]:
        agent.write_status(directory, {"state": "finished", "pid": 4242})
        return "setsid", 4242

    monkeypatch.setattr(detach, "start_detached", fast)
    assert agent.start(tmp_path / "spec.json", tmp_path) == 0
    assert agent.read_status(tmp_path) == {"state": "finished", "pid": 4242}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["status.json"]  # no tmp left
    # a phase not yet running: `starting` is written, once
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    monkeypatch.setattr(detach, "start_detached", lambda s, d, u: ("setsid", 4343))
    assert agent.start(fresh / "spec.json", fresh) == 0
    assert (agent.read_status(fresh) or {})["state"] == "starting"
    assert not agent.write_status(fresh, {"state": "x"}, unless_there=True)
