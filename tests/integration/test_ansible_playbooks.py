"""The shipped playbooks through run_playbook against the lab: facts, serve, drop caches,
logs; hostile vars; failure vs unreachable; the become password stored nowhere."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
from pathlib import Path

import pytest

from harness.ansible import AnsibleEvent, PlaybookFailure, PlaybookResult, run_playbook
from harness.errors import PlaybookError
from harness.store import Store
from harness.store.runs import NewRun, add_event, start_run
from tests.lab.netlab import Lab, LabFactory

pytest_plugins = ["tests.lab.fixtures"]
pytestmark = [pytest.mark.lab, pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transport"
HOSTILE = "semi; $(touch /tmp/gate-pwned-ansible) `id` 'sq' \"dq\" 世界 * ~ $HOME \\ end"


def _run(lab: Lab, book: str | Path, tmp_path: Path, limit: str | None = None,
         events: list[AnsibleEvent] | None = None, password: str | None = None,
         inventory: Path | None = None, **extravars: object) -> PlaybookResult:
    return run_playbook(book, inventory=inventory or lab.inventory, known_hosts=lab.known_hosts,
                        limit=limit, extravars=extravars, artifact_dir=tmp_path,
                        on_event=events.append if events is not None else None,
                        become_password=password, timeout=300)


def test_facts_reports_tools_present_and_absent(ssh_lab: Lab, tmp_path: Path) -> None:
    events: list[AnsibleEvent] = []
    result = _run(ssh_lab, "facts.yml", tmp_path, limit="h1,t1", events=events)
    assert result.status == "successful" and result.events == events
    for host in ("h1", "t1"):
        facts = result.facts[host]
        assert facts["system"] == "Linux"  # the setup task's facts
        probes = facts["gate_probes"]
        assert probes["nvidia-smi-q-x"] == {"present": False, "rc": 127, "argv": [
            "nvidia-smi", "-q", "-x"], "file": None, "sha256": None, "size": None}
        assert not probes["ibstat"]["present"] and not probes["gdscheck"]["present"]
        lsblk = probes["lsblk"]
        assert lsblk["present"] and lsblk["rc"] == 0
        saved = Path(lsblk["file"])
        assert saved == tmp_path / "facts" / host / "lsblk.json"
        assert hashlib.sha256(saved.read_bytes()).hexdigest() == lsblk["sha256"]
        assert "blockdevices" in json.loads(saved.read_text())
        manifest = json.loads((saved.parent / "manifest.json").read_text())
        assert manifest["host"] == host and manifest["probes"]["lsblk"] == lsblk
    assert {e.host for e in events} == {"h1", "t1"}
    assert not [e for e in events if e.status in ("failed", "unreachable")]


def _serve_vars(lab: Lab, host: str, **more: object) -> dict[str, object]:
    www = lab.home / f"www-{host}"
    www.mkdir(exist_ok=True)
    (www / "health").write_text("ok\n")
    shutil.chown(www, lab.user, lab.user)
    address = lab.host(host).address
    return {"name": "web " + HOSTILE, "pidfile": str(lab.home / f"{host}.pid"),
            "log": str(lab.home / f"{host}.log"), "chdir": str(www),
            "command": ["python3", "-m", "http.server", "--bind", address, "8123"],
            "health_url": f"http://{address}:8123/health", "health_timeout": 30, **more}


def _pids(lab: Lab, host: str, pattern: str) -> list[str]:
    """Live (not zombie: no init reaps here) processes whose command line matches."""
    found = lab.exec(host, ["pgrep", "-f", pattern]).stdout.split()
    return [p for p in found if _state(p) not in ("Z", "")]


def _state(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


def test_serve_starts_stops_restarts_a_background_process(ssh_lab: Lab, tmp_path: Path) -> None:
    base = _serve_vars(ssh_lab, "t1")
    pattern = "http.server --bind " + ssh_lab.host("t1").address
    started = _run(ssh_lab, "serve.yml", tmp_path, limit="t1", action="start", **base)
    first = started.facts["t1"]["gate_serve"]
    assert first["running"] and first["health_seconds"] is not None
    assert _pids(ssh_lab, "t1", pattern) == [str(first["pid"])]
    again = _run(ssh_lab, "serve.yml", tmp_path, limit="t1", action="start", **base)
    assert again.facts["t1"]["gate_serve"]["pid"] == first["pid"]  # idempotent
    assert not [e for e in again.events if e.status == "changed" and "process" in e.task]
    restarted = _run(ssh_lab, "serve.yml", tmp_path, limit="t1", action="restart", **base)
    second = restarted.facts["t1"]["gate_serve"]["pid"]
    assert second != first["pid"] and _pids(ssh_lab, "t1", pattern) == [str(second)]
    status = _run(ssh_lab, "serve.yml", tmp_path, limit="t1", action="status", **base)
    assert status.facts["t1"]["gate_serve"]["running"]
    _run(ssh_lab, "serve.yml", tmp_path, limit="t1", action="stop", **base)
    assert _pids(ssh_lab, "t1", pattern) == []
    assert not Path(str(base["pidfile"])).exists()
    stopped = _run(ssh_lab, "serve.yml", tmp_path, limit="t1", action="stop", **base)
    assert stopped.facts["t1"]["gate_serve"]["running"] is False


def test_serve_reports_an_engine_that_dies_at_start(ssh_lab: Lab, tmp_path: Path) -> None:
    crash = _serve_vars(ssh_lab, "h1", command=["python3", "-c",
                        "import sys; print('engine: cannot bind'); sys.exit(3)"])
    with pytest.raises(PlaybookError) as info:
        _run(ssh_lab, "serve.yml", tmp_path, limit="h1", action="start", **crash)
    exc = info.value
    assert exc.host == "h1" and not exc.unreachable
    assert exc.task == "start web " + HOSTILE + " as a background process"
    assert "exited with 3" in exc.message and "engine: cannot bind" in exc.message


def test_serve_health_timeout_names_the_url(ssh_lab: Lab, tmp_path: Path) -> None:
    naptime = f"120.{os.getpid()}"  # unique: pgrep sees every process on the machine
    mute = _serve_vars(ssh_lab, "h2", command=["sleep", naptime], health_timeout=2)
    try:
        with pytest.raises(PlaybookFailure) as info:
            _run(ssh_lab, "serve.yml", tmp_path, limit="h2", action="start", **mute)
        assert "not healthy after 2s" in info.value.message
        assert str(mute["health_url"]) in info.value.message
        assert info.value.result.hosts("failed") == ["h2"]
    finally:
        _run(ssh_lab, "serve.yml", tmp_path, limit="h2", action="stop", **mute)
    assert _pids(ssh_lab, "h2", f"sleep {naptime}") == []


def test_drop_caches_with_sudo_and_reported_when_not_permitted(ssh_lab: Lab,
                                                               tmp_path: Path) -> None:
    done = _run(ssh_lab, "drop_caches.yml", tmp_path, limit="h1", password=ssh_lab.password)
    dropped = done.facts["h1"]["gate_drop_caches"]
    assert dropped["dropped"] in (True, False)  # a container may refuse even root
    if not dropped["dropped"]:
        assert dropped["reason"] != "ok"
    refused = _run(ssh_lab, "drop_caches.yml", tmp_path, limit="h1", drop_caches_become=False)
    fact = refused.facts["h1"]["gate_drop_caches"]
    assert fact["dropped"] is False and "Permission denied" in fact["reason"]


def test_collect_logs_fetches_what_exists_and_lists_what_is_missing(ssh_lab: Lab,
                                                                    tmp_path: Path) -> None:
    log = ssh_lab.home / "engine.log"
    log.write_text("line 1\nline 2\n")
    result = _run(ssh_lab, "collect_logs.yml", tmp_path, limit="h1",
                  log_paths=[str(log), "/nonexistent/gate.log"])
    facts = result.facts["h1"]["gate_logs"]
    assert facts["fetched"] == [str(log)] and facts["missing"] == ["/nonexistent/gate.log"]
    saved = tmp_path / "logs" / "h1" / str(log).lstrip("/").replace("/", "__")
    assert saved.read_text() == "line 1\nline 2\n"
    assert isinstance(facts["kernel_log"], bool)  # dmesg may be restricted to root
    assert (tmp_path / "logs" / "h1" / "dmesg.log").exists()  # saved either way, with its error


def test_hostile_host_vars_extra_vars_and_file_names_arrive_literally(
        ssh_lab: Lab, tmp_path: Path) -> None:
    inventory = ssh_lab.write_inventory(tmp_path / "hosts.ini",
                                        extra={"h1": {"gate_note": HOSTILE}})
    extra = "{{ lookup('pipe', 'id') }} " + HOSTILE
    file_name = "out ; $(id) `x` 'q' \"d\" 世界.txt"
    result = _run(ssh_lab, FIXTURES / "echo_vars.yml", tmp_path, limit="h1",
                  inventory=inventory, extra_note=extra, file_name=file_name,
                  target_dir=str(ssh_lab.home))
    assert result.facts["h1"]["gate_echoed"].split("\0")[:2] == [HOSTILE, extra]
    assert (ssh_lab.home / file_name).read_text() == HOSTILE
    assert not Path("/tmp/gate-pwned-ansible").exists()


def test_unreachable_is_distinct_from_failed(lab_factory: LabFactory, tmp_path: Path) -> None:
    lab = lab_factory(["h1", "h2"])
    lab.cut_link("h2")
    events: list[AnsibleEvent] = []
    with pytest.raises(PlaybookFailure) as info:
        _run(lab, "drop_caches.yml", tmp_path, events=events, drop_caches_become=False)
    exc = info.value
    assert exc.unreachable and exc.host == "h2" and "unreachable" in exc.message
    assert exc.result.hosts("unreachable") == ["h2"]
    assert "h1" in exc.result.facts  # the reachable host still ran
    assert any(e.host == "h2" and e.status == "unreachable" for e in events)


def test_become_password_is_in_no_log_store_row_or_artifact(
        ssh_lab: Lab, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)
    store = Store(f"sqlite:///{tmp_path / 'gate.db'}")
    run_id = start_run(store, NewRun(campaign="c", site="s", customer="", kind="gate", gate="G3",
                                     artifact_dir=str(tmp_path / "art")))

    def record(ev: AnsibleEvent) -> None:
        add_event(store, run_id, source="ansible", name=ev.task, host=ev.host, status=ev.status,
                  message=ev.message + json.dumps(dict(ev.result), default=str),
                  duration=ev.duration)

    art = tmp_path / "art"
    art.mkdir()
    run_playbook("drop_caches.yml", inventory=ssh_lab.inventory, known_hosts=ssh_lab.known_hosts,
                 limit="h1,t1", extravars={}, artifact_dir=art, on_event=record, verbose=True,
                 become_password=ssh_lab.password)
    with ssh_lab.transport("h1", sudo_password=ssh_lab.password) as t:
        t.run(["true"], sudo=True).check()
        t.run(["cat"], sudo=True, stdin="x").check()
    store.close()
    secret = ssh_lab.password.encode()
    leaks = [p for p in tmp_path.rglob("*") if p.is_file() and secret in p.read_bytes()]
    assert leaks == []
    assert any(p.name.startswith("gate.db") for p in tmp_path.iterdir())
    out, err = capfd.readouterr()
    assert ssh_lab.password not in caplog.text + out + err
    assert "TASK [Write 3 to /proc/sys/vm/drop_caches]" in err  # -v output went to stderr


def test_serve_with_become_runs_the_harness_python(ssh_lab: Lab, tmp_path: Path) -> None:
    """How a G3 test starts the simulator in a lab host: this venv's python (under /root,
    which the lab user cannot read) via serve_become, bound to the host's address."""
    address = ssh_lab.host("h2").address
    www = _serve_vars(ssh_lab, "h2")
    base = {**www, "command": [sys.executable, "-m", "http.server", "--bind", address, "8124"],
            "health_url": f"http://{address}:8124/health", "serve_become": True}
    started = _run(ssh_lab, "serve.yml", tmp_path, limit="h2", password=ssh_lab.password,
                   action="start", **base)
    pid = started.facts["h2"]["gate_serve"]["pid"]
    try:
        owner = ssh_lab.exec("h2", ["ps", "-o", "user=", "-p", str(pid)]).stdout.strip()
        assert owner == "root"
    finally:
        _run(ssh_lab, "serve.yml", tmp_path, limit="h2", password=ssh_lab.password,
             action="stop", **base)
    assert _pids(ssh_lab, "h2", "--bind " + address + " 8124") == []
