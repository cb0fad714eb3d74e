"""Store faults as a user meets them: one line naming the file, exit 3, never a traceback,
never exit 1 (STOP-LOSS), never a SIGBUS. Real `gate` subprocesses on real SQLite files.

Some faults need root: an immutable file (chattr +i) and a full disk (a small tmpfs).
Those tests skip where that cannot be arranged and say why.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from loadgen_support.server import ServerConfig, running_server

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "loadgen"
RESULT = FIX / "vllm-bench-serve-result_er0080_v0.25.1_opt125m.json"
GATE = [sys.executable, "-m", "harness"]
RESTORE = ("(restore it from a backup or a `gate export` pack, or point --db / GATE_DB at "
           "another store)")


def env_for(db: Path) -> dict[str, str]:
    env = {**os.environ, "GATE_DB": f"sqlite:///{db}"}
    env.pop("GATE_CONFIG", None)
    return env


def gate(db: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GATE, *args], capture_output=True, text=True, timeout=timeout,
                          env=env_for(db), cwd=db.parent, check=False)


def one_error_line(out: subprocess.CompletedProcess[str], code: int = 3) -> str:
    assert out.returncode == code, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    lines = [x for x in out.stderr.splitlines() if x.startswith("gate: ")]
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("gate: error: "), lines[0]
    return lines[0]


def real_store(tmp_path: Path) -> Path:
    """A store made by `gate` itself: an import run, WAL checkpointed on close."""
    db = tmp_path / "gate.db"
    assert gate(db, "import", "vllm-bench", str(RESULT)).returncode == 0
    assert not Path(f"{db}-wal").exists()  # everything is in the main file
    return db


@pytest.mark.parametrize("damage", ["truncated to half", "random bytes"])
def test_damaged_store_is_one_line_exit_3(tmp_path: Path, damage: str) -> None:
    db = real_store(tmp_path)
    if damage == "truncated to half":
        with db.open("r+b") as f:
            f.truncate(db.stat().st_size // 2)
    else:
        db.write_bytes(random.Random(7).randbytes(64 * 1024))
    for args in (("runs", "list"), ("status", "--campaign", "bench"),
                 ("import", "vllm-bench", str(RESULT)), ("report", "1")):
        line = one_error_line(gate(db, *args))
        assert line.startswith(f"gate: error: {db}: is not a SQLite database or is damaged: ")
        assert line.endswith(RESTORE), line


# --- files that stop being writable ------------------------------------------------------

def chattr(flag: str, path: Path) -> None:
    subprocess.run(["chattr", flag, str(path)], check=True, capture_output=True)


@contextmanager
def immutable(*paths: Path) -> Iterator[None]:
    """chattr +i, undone on the way out whatever happens (else tmp cleanup fails)."""
    done: list[Path] = []
    try:
        for p in paths:
            chattr("+i", p)
            done.append(p)
        yield
    finally:
        for p in done:
            chattr("-i", p)


def need_chattr(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    probe.touch()
    try:
        chattr("+i", probe)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("chattr +i needs root and a filesystem with inode flags")
    chattr("-i", probe)
    probe.unlink()


def test_read_only_store_reads_and_refuses_writes_in_one_line(tmp_path: Path) -> None:
    need_chattr(tmp_path)
    db = real_store(tmp_path)
    with immutable(db):
        listed = gate(db, "runs", "list", "--json")
        assert listed.returncode == 0, listed.stderr  # reading an archived store still works
        assert len(json.loads(listed.stdout)) == 1
        line = one_error_line(gate(db, "import", "vllm-bench", str(RESULT)))
        assert line == (f"gate: error: {db}: cannot write: gate.db is immutable (chattr +i) "
                        "(undo that (chattr -i / remount rw), or point --db / GATE_DB at "
                        "another store)")
    # read-only media: the file and its directory, where SQLite can make no -wal / -shm
    # (opened with mode=ro and immutable=1: harness.store.db.read_only_uri)
    fresh, out = tmp_path / "sub", tmp_path / "out"
    fresh.mkdir()
    out.mkdir()
    db = real_store(fresh)
    with immutable(db, fresh):
        for args in (("status", "--campaign", "bench"),
                     ("report", "1", "--format", "html", "-o", str(out / "r.html")),
                     ("export", "1", "-o", str(out / "pack.tar.gz"))):
            done = gate(db, *args)
            assert done.returncode == 0, (args, done.stderr)
        assert json.loads(gate(db, "runs", "show", "1", "--json").stdout)["id"] == 1
        line = one_error_line(gate(db, "import", "vllm-bench", str(RESULT)))
        assert line.startswith(f"gate: error: {db}: cannot write: gate.db is immutable"), line
        assert sorted(p.name for p in fresh.iterdir()) == ["gate.db"]
    assert sorted(p.name for p in out.iterdir()) == ["pack.tar.gz", "r.html"]


@pytest.mark.slow
@pytest.mark.parametrize("frozen", ["gate.db-shm", "gate.db"])
def test_store_frozen_mid_run_is_a_store_error_not_a_sigbus(tmp_path: Path, frozen: str) -> None:
    """`chattr +i` under a running `gate bench`: SQLite's -shm is mmap()ed, and a write to
    an immutable mapping is SIGBUS (exit 135, the run left RUNNING, not a word said). gate
    checks before each use of the store and stops with one line naming the file."""
    need_chattr(tmp_path)
    db = tmp_path / "gate.db"
    with running_server(ServerConfig(itl=0.005)) as (url, srv):
        proc = subprocess.Popen(
            [*GATE, "bench", "--url", url, "--model", "test-model", "--docs", "8",
             "--doc-tokens", "100", "--question-tokens", "5", "--concurrency", "4",
             "--requests", "100000", "--duration", "12", "--max-tokens", "8",
             "--metrics-interval", "0.2", "--no-progress"],
            env=env_for(db), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        try:
            deadline = time.monotonic() + 30
            while srv.arrivals < 60 and time.monotonic() < deadline:  # batches are stored
                time.sleep(0.05)
            assert Path(f"{db}-shm").exists() and srv.arrivals >= 60
            with immutable(tmp_path / frozen):
                _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 3, (proc.returncode, err)  # not -7 / 135 (SIGBUS)
    line = one_error_line(subprocess.CompletedProcess([], 3, "", err))
    assert line.startswith(f"gate: error: {db}: cannot write: {frozen} is immutable "
                           "(chattr +i) since gate opened it"), line
    assert "run 1 is left RUNNING: `gate runs abort 1` ends it once the store is writable" \
        in line
    # writable again: the run is RUNNING, its process gone; abort ends it, nothing is lost
    (run,) = json.loads(gate(db, "runs", "list", "--json").stdout)
    assert run["status"] == "RUNNING"
    assert gate(db, "runs", "abort", "1").returncode == 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT status FROM run").fetchone() == ("ABORTED",)
        # what was stored before the freeze is kept (at most the batch in flight is not)
        assert conn.execute("SELECT count(*) FROM request").fetchone()[0] > 0


@contextmanager
def small_filesystem(path: Path, size: str) -> Iterator[Path]:
    path.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {res.stderr.strip()}")
    try:
        yield path
    finally:
        for _ in range(50):
            if subprocess.run(["umount", str(path)], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)


@pytest.mark.slow
def test_disk_full_mid_run_is_one_line_exit_3(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "small", "512k") as fs, \
            running_server(ServerConfig()) as (url, _):
        db = fs / "gate.db"
        out = gate(db, "bench", "--url", url, "--model", "test-model", "--docs", "8",
                   "--doc-tokens", "400", "--question-tokens", "5", "--concurrency", "4",
                   "--requests", "20000", "--max-tokens", "64", "--no-progress",
                   timeout=300)
        line = one_error_line(out)
        assert line.startswith(f"gate: error: {db}: cannot write: the disk is full "
                               "(free space on its filesystem; what was stored before is kept"
                               ), line
        listed = gate(db, "runs", "list", "--json")  # reading needs no space
        assert listed.returncode == 0, listed.stderr
        (run,) = json.loads(listed.stdout)
        # the run ended ABORTED, or (no room even for that) the line says how to end it
        assert run["status"] == "ABORTED" or "run 1 is left RUNNING" in line, (run, line)


# --- two first opens at once ------------------------------------------------------------

OPENER = """
import os, sys, time
from harness.store.db import Store
print("ready", flush=True)
while not os.path.exists(sys.argv[2]):
    time.sleep(0.0005)
try:
    Store(sys.argv[1]).close()
    print("ok", flush=True)
except BaseException as exc:
    print(f"{type(exc).__name__}: {exc}", flush=True)
"""


def test_processes_opening_a_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    """The first open of a store creates its tables: two at the same moment used to both
    try ("table site already exists"). Real processes, held at a barrier (each says ready,
    then waits for the go file) and released together; three times over."""
    from harness.store.db import Store, current_revision, known_revisions

    n = 5
    for rep in range(3):
        db, go = tmp_path / f"new-{rep}.db", tmp_path / f"go-{rep}"
        procs = [subprocess.Popen([sys.executable, "-c", OPENER, f"sqlite:///{db}", str(go)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for _ in range(n)]
        try:
            for p in procs:
                assert p.stdout is not None and p.stdout.readline().strip() == "ready"
            go.touch()
            outcomes = [p.communicate(timeout=120)[0].strip() for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        assert outcomes == ["ok"] * n, (rep, outcomes)
        store = Store(f"sqlite:///{db}", migrate=False)
        assert current_revision(store.engine) == known_revisions()[1]
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT count(*) FROM alembic_version").scalar() == 1
        store.close()
