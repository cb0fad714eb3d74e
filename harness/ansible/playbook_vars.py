"""What an arm's playbook action passes, held against what the playbook takes, before
anything starts: a misspelt var (`pid_file`) or a missing one (`name`) is otherwise found
by Ansible on the host, minutes into a run, as an ERROR attempt.

A shipped playbook declares its vars in its header (`# Vars`: one `#   name  words` line
each, `(required)` on the ones every call needs); a site's own playbook has no such header
and is not checked. serve.yml's process mode needs more than its header can say (a pidfile;
a command to start), and an arm whose start runs a process but whose stop names no mode
would stop a systemd unit of the same name instead: both are said here, naming the key.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.config.models import Arms, PlaybookAction
from harness.errors import ConfigError

# What gate passes with every action itself (harness.serving.arms, harness.ansible.runner)
GATE_VARS = frozenset({"arm", "layout", "tp", "instance", "port", "host", "address", "url",
                       "gate_artifact_dir"})
_VAR = re.compile(r"#\s{2,4}([a-z_][a-z0-9_]*)\s{2,}\S")
SERVE = "serve.yml"
ACTIONS = ("start", "stop", "restart")


@dataclass(frozen=True)
class PlaybookVars:
    """A playbook's declared vars; `required`: those every call must pass."""

    names: frozenset[str]
    required: frozenset[str]


def declared(text: str) -> PlaybookVars | None:
    """The vars a playbook's `# Vars` header declares; None when it has none."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("# Vars")), None)
    if start is None:
        return None
    names, required = set(), set()
    for line in lines[start + 1:]:
        if not line.startswith("#"):
            break
        m = _VAR.match(line)
        if m:
            names.add(m[1])
            if line.rstrip().endswith("(required)"):
                required.add(m[1])
    return PlaybookVars(frozenset(names), frozenset(required))


def serve_mode(values: Mapping[str, Any]) -> str:
    """The mode serve.yml runs an action in (its `serve_mode`)."""
    return str(values.get("mode") or ("process" if "command" in values else "systemd"))


def missing(playbook: str, known: PlaybookVars, values: Mapping[str, Any]) -> list[str]:
    """The vars this call lacks, in the playbook's terms."""
    need = sorted(known.required - set(values))
    if playbook == SERVE and serve_mode(values) == "process":
        need += [k for k in ("pidfile",) if k not in values]
        if values.get("action") in ("start", "restart") and "command" not in values:
            need.append("command")
    return need


def playbook_texts(arms: Arms) -> dict[str, str]:
    """The text of every playbook the arms' actions name (a playbook that is neither a
    file nor shipped is a UsageError naming it, as the run would give minutes later)."""
    from harness.ansible.runner import playbook_path

    names = {a.playbook for arm in ("baseline", "accelerated") for which in ACTIONS
             if isinstance(a := getattr(getattr(arms, arm), which), PlaybookAction)}
    return {name: playbook_path(name).read_text(errors="replace") for name in sorted(names)}


def check_arms(arms: Arms, read: Mapping[str, str]) -> None:
    """Every playbook action of both arms against its playbook's header (`read`: shipped
    playbook name -> its text). ConfigError naming the key: a var the playbook does not
    take (with the closest it does), one it needs, or serve.yml modes that disagree."""
    for arm in ("baseline", "accelerated"):
        spec = getattr(arms, arm)
        modes: dict[str, str] = {}
        for which in ACTIONS:
            action = getattr(spec, which)
            if not isinstance(action, PlaybookAction):
                continue
            name = Path(action.playbook).name
            text = read.get(action.playbook)
            known = declared(text) if text is not None else None
            if known is None:
                continue
            key = f"arms.{arm}.{which}.vars"
            for var in sorted(set(action.vars) - known.names - GATE_VARS):
                close = difflib.get_close_matches(var, sorted(known.names), n=1)
                raise ConfigError(
                    f"{action.playbook} takes no var {var!r}", key=f"{key}.{var}",
                    hint=(f"did you mean {close[0]!r}? " if close else "")
                    + f"it takes {', '.join(sorted(known.names))}")
            lacking = missing(name, known, action.vars)
            if lacking:
                raise ConfigError(f"{action.playbook} needs {', '.join(lacking)} for "
                                  f"{which}" + (f" in {serve_mode(action.vars)} mode"
                                                if name == SERVE else ""), key=key,
                                  hint=f"add {', '.join(lacking)} under {key}")
            if name == SERVE:
                modes[which] = serve_mode(action.vars)
        if len(set(modes.values())) > 1:
            said = ", ".join(f"{w} {m}" for w, m in modes.items())
            raise ConfigError(f"serve.yml runs this arm's actions in different modes ({said})",
                              key=f"arms.{arm}",
                              hint="give every action the same `mode:` (a stop or status of "
                                   "a process needs mode: process and its pidfile)")
