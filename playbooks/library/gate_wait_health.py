#!/usr/bin/python
"""Ansible module: wait until a health URL answers 200, failing fast if the engine died.

Why not `uri` with retries: an engine that crashes at start would be waited on for the
whole health timeout (often 15 minutes); this module watches the pidfile too and puts
the log tail in the failure message.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: gate_wait_health
short_description: Wait for an HTTP health endpoint (gate's serve.yml)
options:
  url: {type: str, required: true}
  timeout: {type: float, default: 900}
  interval: {type: float, default: 0.5}
  pidfile: {type: path, description: fail as soon as this process is gone}
  log: {type: path, description: its tail goes into the failure message}
"""


def _alive(pidfile: str) -> bool:
    try:
        with open(pidfile) as f:
            words = f.read().split()
        pid = int(words[0])
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError, IndexError):
        return False
    if state[0] == "Z":
        return False
    return len(words) < 2 or state[19] == words[1]


def _tail(path: str | None, lines: int = 30) -> str:
    if not path:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 8192))
            return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])
    except OSError:
        return ""


def probe(url: str, timeout: float) -> tuple[int | None, str]:
    """(status code or None, short reason)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no site proxy
    try:
        with opener.open(url, timeout=timeout) as resp:
            return resp.status, "ok"
    except urllib.error.HTTPError as exc:
        return exc.code, str(exc.reason)
    except (urllib.error.URLError, OSError) as exc:
        return None, str(getattr(exc, "reason", exc))


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "timeout": {"type": "float", "default": 900.0},
            "interval": {"type": "float", "default": 0.5},
            "pidfile": {"type": "path"},
            "log": {"type": "path"},
        },
        supports_check_mode=True,
    )
    p = module.params
    t0 = time.monotonic()
    deadline = t0 + p["timeout"]
    last = "no answer yet"
    while True:
        code, reason = probe(p["url"], min(10.0, max(1.0, p["interval"] * 4)))
        if code == 200:
            module.exit_json(changed=False, elapsed=round(time.monotonic() - t0, 3), status=200)
        last = f"HTTP {code}" if code else reason
        if p["pidfile"] and not _alive(p["pidfile"]):
            module.fail_json(msg=f"the process died before {p['url']} answered ({last}); "
                                 f"log tail:\n{_tail(p['log'])}",
                             elapsed=round(time.monotonic() - t0, 3))
        if time.monotonic() >= deadline:
            module.fail_json(msg=f"{p['url']} not healthy after {p['timeout']:g}s ({last}); "
                                 f"log tail:\n{_tail(p['log'])}",
                             elapsed=round(time.monotonic() - t0, 3))
        time.sleep(p["interval"])


if __name__ == "__main__":
    main()
