"""Engines forked from the pre-imported spawner (harness.sim.spawner): real spawner and
engine processes, a real AF_UNIX socket. A forked engine serves, restarts cold (a new
process, counters from zero), stops; one that dies at start is reported with its log; a
spawner that is gone falls back to a new interpreter and says so; SIGTERM to the spawner
leaves its engines running; no zombies pile up; a bad request gets an error answer."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sim_support import get_json, metrics, post_json, total

from harness.errors import UsageError
from harness.sim.control import (
    SPAWNER,
    EngineProcessError,
    _read_pid,
    engine_status,
    engine_url,
    restart_engine,
    start_engine,
    stop_engine,
)
from harness.sim.procs import alive
from harness.sim.spawn_client import SpawnerError, ask, start_spawner, stop_spawner
from harness.sim.spec import EngineSpec

FALLBACK = "starting a new interpreter instead"


def _proc_stat(pid: int) -> list[str]:
    """Fields after the command name: [0] state, [1] ppid, [19] start ticks."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _ppid(pid: int) -> int:
    return int(_proc_stat(pid)[1])


def _zombie_children(parent: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = _proc_stat(int(entry.name))
            except (OSError, IndexError):
                continue
            if int(fields[1]) == parent and fields[0] == "Z":
                out.append(int(entry.name))
    return out


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """AF_UNIX paths are at most 107 bytes: pytest's tmp_path can be longer."""
    d = Path(tempfile.mkdtemp(prefix="spw", dir="/tmp"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def spawner(short_dir: Path) -> Iterator[tuple[Path, int]]:
    sock = short_dir / "s.sock"
    pid = start_spawner(sock, short_dir / "spawner.log")
    try:
        yield sock, pid
    finally:
        stop_spawner(sock)


def test_forked_engine_serves_restarts_cold_and_stops(
        tmp_path: Path, spawner: tuple[Path, int]) -> None:
    sock, spawner_pid = spawner
    state = tmp_path / "e"
    pid = start_engine(EngineSpec(port=0, speed=1000.0, tp=8), state, spawner=sock)
    assert _ppid(pid) == spawner_pid  # forked, not a new interpreter of ours
    assert (state / SPAWNER).read_text().strip() == str(sock)
    url = engine_url(state)
    card = get_json(url + "/v1/models")["data"][0]
    assert card["gate_sim"]["simulated"] is True and card["gate_sim"]["tp"] == 8
    status, body = post_json(url + "/v1/completions", {"prompt": "the kv cache", "max_tokens": 2})
    assert status == 200 and body["usage"]["completion_tokens"] == 2
    before = metrics(url)
    assert total(before, "vllm:prompt_tokens_total") > 0
    # the modelled engine's RSS (the profile's host memory), not the fork's own
    assert total(before, "process_resident_memory_bytes") == 40 * 2**30
    ticks = int(_proc_stat(pid)[19])

    new = restart_engine(state)  # remembers the spawner
    assert new != pid and _ppid(new) == spawner_pid
    assert not alive(pid, ticks)
    url = engine_url(state)
    m = metrics(url)
    assert total(m, "vllm:prompt_tokens_total") == 0  # a new process: counters restarted
    # the real process's start: a restart (a fork of the same spawner) moves it
    assert total(m, "process_start_time_seconds") > total(before, "process_start_time_seconds")
    assert FALLBACK not in (state / "engine.log").read_text()

    assert stop_engine(state) is True
    assert not engine_status(state).running
    assert stop_engine(state) is False


def test_engine_dying_at_start_is_reported_with_its_log(
        tmp_path: Path, spawner: tuple[Path, int]) -> None:
    sock, _ = spawner
    t0 = time.monotonic()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(EngineProcessError) as exc:
            start_engine(EngineSpec(port=port), tmp_path / "busy", timeout=30, spawner=sock)
    assert "engine exited with code 3 at start" in exc.value.message
    assert "cannot listen" in exc.value.message
    assert _read_pid(tmp_path / "busy") is None
    # spec.check() lets it through, the engine's command line refuses it (exit 4)
    with pytest.raises(EngineProcessError) as bad:
        start_engine(EngineSpec(port=0, tier_reset=True), tmp_path / "bad", spawner=sock)
    assert "exited with code 4" in bad.value.message and "--tier-reset" in bad.value.message
    assert time.monotonic() - t0 < 10  # reported, not a 30 s timeout


def test_spawner_gone_falls_back_to_a_new_interpreter(
        tmp_path: Path, short_dir: Path) -> None:
    sock = short_dir / "s.sock"
    spawner_pid = start_spawner(sock, short_dir / "spawner.log")
    state = tmp_path / "e"
    control = [sys.executable, "-m", "harness.sim.control"]
    r = subprocess.run([*control, "start", "--state-dir", str(state), "--port", "0",
                        "--spawner", str(sock)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert _ppid(int(r.stdout.split()[2])) == spawner_pid
    assert stop_spawner(sock) is True
    assert not sock.exists() and stop_spawner(sock) is False

    r = subprocess.run([*control, "restart", "--state-dir", str(state)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    log = (state / "engine.log").read_text()
    assert log.count(FALLBACK) == 1 and f"spawner {sock} did not serve" in log
    stop_engine(state)

    # a stale socket file (nobody listening) is the same: fall back, say so
    with socket.socket(socket.AF_UNIX) as stale:
        stale.bind(str(sock))
    pid = start_engine(EngineSpec(port=0), state, spawner=sock)
    assert _ppid(pid) != spawner_pid
    assert (state / "engine.log").read_text().count(FALLBACK) == 2
    stop_engine(state)


def test_sigterm_leaves_the_engines_running(tmp_path: Path, short_dir: Path) -> None:
    sock = short_dir / "s.sock"
    spawner_pid = start_spawner(sock, short_dir / "spawner.log")
    states = [tmp_path / "a", tmp_path / "b"]
    try:
        pids = [start_engine(EngineSpec(port=0, instance=i), s, spawner=sock)
                for i, s in enumerate(states)]
        subprocess.run(["kill", "-TERM", str(spawner_pid)], check=True)
        deadline = time.monotonic() + 10
        while alive(spawner_pid, 0) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not alive(spawner_pid, 0) and not sock.exists()
        for pid, s in zip(pids, states, strict=True):
            assert engine_status(s).pid == pid
            get_json(engine_url(s) + "/v1/models")
        assert "2 engine(s) left running" in (short_dir / "spawner.log").read_text()
    finally:
        for s in states:
            stop_engine(s)


def test_no_zombies_after_start_stop_cycles(
        tmp_path: Path, spawner: tuple[Path, int]) -> None:
    sock, spawner_pid = spawner
    state = tmp_path / "e"
    for _ in range(4):
        start_engine(EngineSpec(port=0), state, spawner=sock)
        restart_engine(state)
        stop_engine(state)
    with pytest.raises(EngineProcessError):
        start_engine(EngineSpec(port=0, tier_reset=True), tmp_path / "bad", spawner=sock)
    deadline = time.monotonic() + 3
    while _zombie_children(spawner_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _zombie_children(spawner_pid) == []
    assert ask(sock, {"op": "ping"})["children"] == 0


def test_bad_requests_are_answered_and_the_spawner_keeps_serving(
        tmp_path: Path, spawner: tuple[Path, int]) -> None:
    sock, spawner_pid = spawner

    def raw(line: bytes) -> str:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(str(sock))
            s.sendall(line)
            return s.recv(4096).decode()

    assert '"ok": false' in raw(b"not json\n")
    assert "protocol version 2" in raw(b'{"v": 2, "op": "ping"}\n')
    assert "unknown op" in raw(b'{"v": 1, "op": "fork-bomb"}\n')
    assert "argv" in raw(b'{"v": 1, "op": "spawn", "argv": "--port 0"}\n')
    assert "absolute" in raw(b'{"v": 1, "op": "spawn", "argv": [], "log": "x", "cwd": "/"}\n')
    with pytest.raises(SpawnerError, match="runs python"):
        ask(sock, {"op": "spawn", "argv": [], "log": str(tmp_path / "l"), "cwd": "/",
                   "python": "/elsewhere/python"})
    with socket.socket(socket.AF_UNIX) as mute:  # says nothing, then goes away
        mute.connect(str(sock))
    assert ask(sock, {"op": "ping"})["pid"] == spawner_pid
    assert _zombie_children(spawner_pid) == [] and ask(sock, {"op": "ping"})["children"] == 0


def test_one_spawner_per_socket_and_usage_errors(
        short_dir: Path, spawner: tuple[Path, int]) -> None:
    sock, _ = spawner
    with pytest.raises(SpawnerError, match="already answers"):
        start_spawner(sock, short_dir / "second.log")
    with pytest.raises(UsageError, match="longer than 107"):
        start_spawner(short_dir / ("x" * 120), short_dir / "long.log")
    r = subprocess.run([sys.executable, "-m", "harness.sim.spawner"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 4 and r.stderr.count("\n") == 1 and "--socket" in r.stderr


def test_idle_exit(short_dir: Path) -> None:
    sock = short_dir / "idle.sock"
    pid = start_spawner(sock, short_dir / "idle.log", idle_exit=0.5)
    deadline = time.monotonic() + 10
    while alive(pid, 0) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(pid, 0) and not sock.exists()
    assert "idle for 0.5 s" in (short_dir / "idle.log").read_text()


def test_forked_engine_has_a_new_interpreters_signals_and_session(
        tmp_path: Path, spawner: tuple[Path, int]) -> None:
    """The engine's signal dispositions are a new interpreter's, not the spawner's."""
    sock, _ = spawner
    forked = start_engine(EngineSpec(port=0), tmp_path / "f", spawner=sock)
    # A runner under nohup ignores SIGHUP and a plain child inherits that; the reference
    # is a new interpreter from a parent with default dispositions.
    previous = signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        plain = start_engine(EngineSpec(port=0), tmp_path / "p")
    finally:
        signal.signal(signal.SIGHUP, previous)
    try:
        def masks(pid: int) -> dict[str, str]:
            lines = Path(f"/proc/{pid}/status").read_text().splitlines()
            return {k: v.strip() for k, v in (ln.split(":", 1) for ln in lines)
                    if k in ("SigBlk", "SigIgn", "SigCgt")}

        assert masks(forked) == masks(plain)
        assert int(_proc_stat(forked)[3]) == forked  # its own session (stat field 6)
    finally:
        stop_engine(tmp_path / "f")
        stop_engine(tmp_path / "p")
