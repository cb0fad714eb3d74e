"""An arm's playbook vars held against what the shipped playbook takes (its header), before
anything starts: a misspelt or missing var is one line naming the key, not an Ansible
failure minutes into a run; `gate init`'s own arms pass."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.ansible.playbook_vars import check_arms, declared, playbook_texts
from harness.config.models import Arms
from harness.config.template import template
from harness.errors import ConfigError, UsageError

SERVE = Path(str(resources.files("harness.playbooks").joinpath("serve.yml"))).read_text()
START = {"action": "start", "name": "e", "mode": "process", "command": ["e", "--port", "{port}"],
         "pidfile": "/tmp/e.pid"}
STOP = {"action": "stop", "name": "e", "mode": "process", "pidfile": "/tmp/e.pid"}


def arms(start: dict[str, Any], stop: dict[str, Any] | None = None,
         playbook: str = "serve.yml") -> Arms:
    arm = {"start": {"playbook": playbook, "vars": start},
           "stop": {"playbook": playbook, "vars": stop if stop is not None else STOP}}
    return Arms.model_validate({"baseline": arm, "accelerated": arm})


def test_serve_yml_declares_its_vars_and_the_required_ones() -> None:
    known = declared(SERVE)
    assert known is not None
    assert {"action", "name", "command", "pidfile", "log", "env", "chdir", "health_url",
            "health_timeout", "stop_timeout", "mode", "unit", "serve_become"} == known.names
    assert known.required == {"action", "name"}
    # every var the header declares is one the play reads (a stale header would let a
    # misspelling through)
    for name in known.names:
        assert f"{name} " in SERVE.split("tasks:", 1)[1] or f"{name})" in SERVE


def test_a_misspelt_var_names_its_key_and_the_closest_one() -> None:
    bad = arms({**START, "pid_file": "/tmp/e.pid"})
    with pytest.raises(ConfigError) as info:
        check_arms(bad, {"serve.yml": SERVE})
    assert info.value.key == "arms.baseline.start.vars.pid_file"
    assert "takes no var 'pid_file'" in info.value.message
    assert "did you mean 'pidfile'" in (info.value.hint or "")


@pytest.mark.parametrize(("start", "stop", "key", "words"), [
    ({k: v for k, v in START.items() if k != "name"}, None, "arms.baseline.start.vars",
     "needs name for start in process mode"),
    ({k: v for k, v in START.items() if k != "pidfile"}, None, "arms.baseline.start.vars",
     "needs pidfile for start in process mode"),
    ({k: v for k, v in START.items() if k != "command"}, None, "arms.baseline.start.vars",
     "needs command for start in process mode"),
    (START, {"action": "stop", "name": "e"}, "arms.baseline",
     "different modes (start process, stop systemd)"),
])
def test_what_serve_yml_needs_is_said_before_the_run(start: dict[str, Any],
                                                     stop: dict[str, Any] | None, key: str,
                                                     words: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_arms(arms(start, stop), {"serve.yml": SERVE})
    assert info.value.key == key
    assert words in info.value.message


def test_gates_own_values_and_a_sites_own_playbook_are_not_refused(tmp_path: Path) -> None:
    check_arms(arms({**START, "port": "{port}"}), {"serve.yml": SERVE})  # gate passes it too
    own = tmp_path / "mine.yml"
    own.write_text("- hosts: all\n  tasks: []\n")
    mine = arms({"anything": 1}, {"else": 2}, playbook=str(own))
    check_arms(mine, playbook_texts(mine))  # no `# Vars` header: not checked


def test_a_playbook_that_does_not_exist_is_named() -> None:
    with pytest.raises(UsageError, match=r"playbook nosuch\.yml not found"):
        playbook_texts(arms(START, playbook="nosuch.yml"))


def test_gate_inits_arms_pass(tmp_path: Path) -> None:
    raw = yaml.safe_load(template())
    site = Arms.model_validate({k: v for k, v in raw["arms"].items()
                                if k in ("baseline", "accelerated")})
    check_arms(site, playbook_texts(site))
