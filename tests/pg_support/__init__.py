"""A throwaway PostgreSQL cluster for the store's tests (issue 28 item 2).

One cluster per test session: `initdb` into a temp dir, `pg_ctl start` on a unix socket
in that dir only (no TCP), `fsync=off`, stopped and removed at session end. initdb
refuses to run as root, so the server runs as the `postgres` OS user (`runuser`) when the
tests run as root. Each test that asks gets a database of its own (`pg_url`). A session
killed before its teardown leaves its server running: the next session stops and removes
it (its owner.pid names a process that is gone).

Skips, with the reason, when it cannot run: the PostgreSQL server binaries are missing
(Debian: `apt-get install postgresql`), psycopg is missing (`pip install 'psycopg>=3.1'`),
or the tests run as root and there is no `postgres` user to run the server as (nothing
is created). `.ci/run` installs both (scripts/setup.sh), so CI never skips.

Registered for every test by `pytest_plugins` in tests/conftest.py.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE_HINT = "install the PostgreSQL server (Debian/Ubuntu: apt-get install postgresql)"
SUPERUSER = "postgres"  # the cluster's superuser (initdb -U), trusted on the socket


def server_bin() -> Path | None:
    """The directory holding initdb / pg_ctl: PG_BIN, else the newest Debian install,
    else PATH."""
    given = os.environ.get("PG_BIN")
    if given:
        return Path(given) if (Path(given) / "initdb").exists() else None
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return Path(on_path).parent if on_path else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgCluster:
    """A running throwaway cluster: its socket dir and port, and fresh databases in it."""

    base: Path
    port: int
    bin: Path
    as_user: list[str] = field(default_factory=list)  # runuser prefix when root

    @property
    def sockdir(self) -> Path:
        return self.base / "sock"

    def url(self, database: str = "postgres", user: str = SUPERUSER) -> str:
        return (f"postgresql+psycopg://{user}@/{database}"
                f"?host={self.sockdir}&port={self.port}")

    def admin(self, sql: str) -> None:
        """Run one statement as the superuser, outside a transaction (CREATE DATABASE)."""
        import psycopg

        with psycopg.connect(host=str(self.sockdir), port=self.port, user=SUPERUSER,
                             dbname="postgres", autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]  # test-made statements

    def new_database(self) -> str:
        """A new empty database; its SQLAlchemy URL."""
        name = "gate_" + uuid.uuid4().hex[:12]
        self.admin(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def password_database(self, password: str) -> str:
        """A new database owned by a new role that must give `password` (scram, only that
        role: every other one stays trusted); its URL, without the password."""
        role = "pw_" + uuid.uuid4().hex[:10]
        self.admin(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        self.admin(f"CREATE DATABASE {role} OWNER {role}")
        hba = self.base / "data" / "pg_hba.conf"
        hba.write_text(f"local all {role} scram-sha-256\n" + hba.read_text())
        reload = self.run(str(self.bin / "pg_ctl"), "-D", str(self.base / "data"), "reload")
        assert reload.returncode == 0, reload.stderr
        return self.url(role, user=role)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.as_user, *args], capture_output=True, text=True,
                              timeout=120, check=False)


def _owner_alive(base: Path) -> bool:
    """Whether the test session that made the cluster in `base` still runs."""
    try:
        os.kill(int((base / "owner.pid").read_text()), 0)
    except (OSError, ValueError):
        return False
    return True


def _reap(bindir: Path, as_user: list[str]) -> None:
    """Stop and remove the clusters of sessions that were killed before their teardown
    (a SIGKILLed pytest leaves its server running); a live session's are left alone."""
    for base in Path("/tmp").glob("gatepg-*"):
        if not (base / "owner.pid").exists() or _owner_alive(base):
            continue
        if (base / "data" / "postmaster.pid").exists():
            subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(base / "data"),
                            "-m", "immediate", "-w", "stop"], capture_output=True,
                           timeout=60, check=False)
        shutil.rmtree(base, ignore_errors=True)


def _start() -> tuple[PgCluster | None, str]:
    """(cluster, "") or (None, why it cannot run)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "psycopg missing: pip install 'psycopg>=3.1'"
    bindir = server_bin()
    if bindir is None:
        return None, f"PostgreSQL server binaries (initdb, pg_ctl) not found: {PACKAGE_HINT}"
    as_user: list[str] = []
    owner: pwd.struct_passwd | None = None
    if os.geteuid() == 0:  # initdb refuses root: run the server as the postgres user
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            return None, ("running as root and there is no 'postgres' OS user to run the "
                          f"server as (initdb refuses root): {PACKAGE_HINT} creates it")
        runuser = shutil.which("runuser")
        if runuser is None:
            return None, "running as root and runuser (util-linux) is missing"
        as_user = [runuser, "-u", "postgres", "--"]
    _reap(bindir, as_user)
    # Short path: a unix socket's path must stay under ~107 bytes.
    base = Path(tempfile.mkdtemp(prefix="gatepg-", dir="/tmp"))
    (base / "owner.pid").write_text(str(os.getpid()))
    (base / "sock").mkdir()
    if owner is not None:
        for p in (base, base / "sock"):
            os.chown(p, owner.pw_uid, owner.pw_gid)
    cluster = PgCluster(base=base, port=_free_port(), bin=bindir, as_user=as_user)
    data = base / "data"
    init = cluster.run(str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER,
                       "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
    if init.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        return None, f"initdb failed: {(init.stderr or init.stdout).strip()[-500:]}"
    opts = (f"-c listen_addresses='' -c unix_socket_directories={base / 'sock'} "
            f"-p {cluster.port} -c fsync=off -c synchronous_commit=off "
            f"-c full_page_writes=off -c max_connections=60")
    start = cluster.run(str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-w",
                        "-t", "60", "-l", str(base / "server.log"), "start")
    if start.returncode != 0:
        log = (base / "server.log").read_text(errors="replace")[-800:] \
            if (base / "server.log").exists() else ""
        shutil.rmtree(base, ignore_errors=True)
        return None, f"pg_ctl start failed: {start.stderr.strip()[-300:]} {log}"
    return cluster, ""


def _stop(cluster: PgCluster) -> None:
    cluster.run(str(cluster.bin / "pg_ctl"), "-D", str(cluster.base / "data"), "-m",
                "immediate", "-w", "stop")
    shutil.rmtree(cluster.base, ignore_errors=True)


@contextlib.contextmanager
def database_url(url: str | None) -> Iterator[str]:
    """For the benchmarks: `url` as given (--pg-url), else a database on a throwaway
    cluster started as the tests start it, stopped afterwards; exits saying why when none
    can run."""
    if url is not None:
        yield url
        return
    cluster, why = _start()
    if cluster is None:
        raise SystemExit(f"no PostgreSQL: {why} (or pass --pg-url)")
    try:
        yield cluster.new_database()
    finally:
        _stop(cluster)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """The session's PostgreSQL cluster; the test is skipped (with why) if none can run."""
    cluster, why = _start()
    if cluster is None:
        pytest.skip(f"no PostgreSQL for this test: {why}")
    try:
        yield cluster
    finally:
        _stop(cluster)


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> str:
    """A fresh, empty database on the session's cluster (its SQLAlchemy URL)."""
    return pg_cluster.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new store's URL, once on SQLite (a file) and once on PostgreSQL (a fresh
    database): for the store tests that must hold on both."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'gate.db'}"
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    return cluster.new_database()


