#!/usr/bin/python
"""Ansible module: start / stop / restart a background process tracked by a pidfile.

Why a module and not shell: the argv must reach exec literally (no shell), the process
must leave the Ansible session (new session, output to a log), a stale pidfile (reused
pid) must not be mistaken for a running engine, and stop must end the whole group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: gate_process
short_description: Run an argv in the background with a pidfile (gate's serve.yml)
options:
  state: {type: str, choices: [started, stopped, restarted, status], default: started}
  command: {type: list, elements: str, description: argv; required to start}
  pidfile: {type: path, required: true}
  log: {type: path, description: stdout and stderr are appended here}
  env: {type: dict, default: {}}
  chdir: {type: path}
  stop_timeout: {type: float, default: 30}
  startup_check: {type: float, default: 1.0, description: seconds the process must survive}
"""


def _start_time(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def read_pidfile(path: str) -> tuple[int | None, str | None]:
    """(pid, start time) recorded in the pidfile, or (None, None)."""
    try:
        with open(path) as f:
            words = f.read().split()
    except OSError:
        return None, None
    if not words or not words[0].isdigit():
        return None, None
    return int(words[0]), (words[1] if len(words) > 1 else None)


def running(path: str) -> int | None:
    """The pid if the pidfile names a live process that is still the one we started."""
    pid, started = read_pidfile(path)
    if pid is None:
        return None
    now = _start_time(pid)
    if now is None or (started is not None and now != started):
        return None
    return pid


def tail(path: str | None, lines: int = 30) -> str:
    if not path:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 8192))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def start(p: dict[str, Any]) -> dict[str, Any]:
    pid = running(p["pidfile"])
    if pid is not None:
        return {"changed": False, "pid": pid, "running": True, "msg": "already running"}
    if not p["command"]:
        return {"failed": True, "msg": "command (argv list) is required to start"}
    env = dict(os.environ)
    env.update({str(k): str(v) for k, v in (p["env"] or {}).items()})
    log = p["log"] or os.devnull
    for path in (p["pidfile"], log):
        parent = os.path.dirname(path)
        if parent:
            os.makedirs(parent, exist_ok=True)
    with open(log, "ab") as out:
        try:
            proc = subprocess.Popen(p["command"], cwd=p["chdir"], env=env,
                                    stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True,
                                    close_fds=True)
        except OSError as exc:
            return {"failed": True, "msg": f"cannot start {p['command'][0]}: {exc}"}
    tmp = p["pidfile"] + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{proc.pid} {_start_time(proc.pid) or ''}\n")
    os.replace(tmp, p["pidfile"])
    deadline = time.monotonic() + p["startup_check"]
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            os.unlink(p["pidfile"])
            return {"failed": True, "rc": proc.returncode,
                    "msg": f"exited with {proc.returncode} right after start; log tail:\n"
                           + tail(p["log"])}
        time.sleep(0.05)
    return {"changed": True, "pid": proc.pid, "running": True}


def stop(p: dict[str, Any]) -> dict[str, Any]:
    pid = running(p["pidfile"])
    if pid is None:
        if os.path.exists(p["pidfile"]):
            os.unlink(p["pidfile"])
        return {"changed": False, "running": False, "msg": "not running"}
    for sig, wait in ((signal.SIGTERM, p["stop_timeout"]), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            break
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _start_time(pid) is not None:
            if _zombie(pid):
                break
            time.sleep(0.05)
        if _start_time(pid) is None or _zombie(pid):
            break
    if os.path.exists(p["pidfile"]):
        os.unlink(p["pidfile"])
    return {"changed": True, "running": False, "pid": pid}


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "default": "started",
                      "choices": ["started", "stopped", "restarted", "status"]},
            "command": {"type": "list", "elements": "str"},
            "pidfile": {"type": "path", "required": True},
            "log": {"type": "path"},
            "env": {"type": "dict", "default": {}},
            "chdir": {"type": "path"},
            "stop_timeout": {"type": "float", "default": 30.0},
            "startup_check": {"type": "float", "default": 1.0},
        },
        supports_check_mode=False,
    )
    p: dict[str, Any] = module.params
    result: dict[str, Any]
    if p["state"] == "status":
        pid = running(p["pidfile"])
        result = {"changed": False, "running": pid is not None, "pid": pid}
    elif p["state"] == "stopped":
        result = stop(p)
    elif p["state"] == "restarted":
        stopped = stop(p)
        result = start(p)
        result["changed"] = True
        result["stopped_pid"] = stopped.get("pid")
    else:
        result = start(p)
    if result.get("failed"):
        module.fail_json(**result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
