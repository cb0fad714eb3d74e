"""What a gate run reads on this machine, and the digest `gate resume` compares.

A run resumes only as it was started: the config (its validated values and the --set
overrides: LoadedConfig.digest), the inventory's text, every playbook an arm's action
runs and, with `load.placement: client`, the load agent's wheels. Any of them changed
since the start and the resumed half would measure something else than the first: the
resume is refused naming what changed. Not covered: known_hosts (a trust store that
`gate hosts trust` appends to; a changed host key is refused by the transport anyway)
and report.logo (read by the report only). Remote paths (the hosts' files, the model)
are the hosts' business: G3's engine identity compares them between the arms.

The digest is versioned, `v2:<config 20 hex>:<the other inputs 40 hex>` (64 characters,
the run row's column): the first part alone says whether the config changed; the run's
artifact `run-inputs.json` (whose digest is this one) names the other file.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.config.loader import LoadedConfig
from harness.config.models import CommandAction

FORM = "v2"
MANIFEST = "run-inputs.json"  # in the run's artifact directory
ARTIFACT_KIND = "run inputs"
CONFIG = "config"


@dataclass(frozen=True)
class RunInput:
    role: str  # "config", "inventory", "playbook arms.baseline.start", "load agent wheels"
    path: str
    sha256: str  # "" when the file is not there


def _file_digest(path: Path) -> str:
    """sha256 of a file, or of every file under a directory (names and contents)."""
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest()
    if not path.is_dir():
        return ""
    h = hashlib.sha256()
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(f.relative_to(path).as_posix().encode() + b"\0")
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def _playbooks(loaded: LoadedConfig) -> list[tuple[str, str]]:
    """(role, playbook as written) of every arm action that runs a playbook."""
    arms = loaded.config.arms
    found: list[tuple[str, str]] = []
    if arms is None:
        return found
    for arm in ("baseline", "accelerated"):
        for which in ("start", "stop", "restart"):
            action = getattr(getattr(arms, arm), which)
            if action is not None and not isinstance(action, CommandAction):
                found.append((f"playbook arms.{arm}.{which}", action.playbook))
    return found


def _playbook_file(name: str) -> Path | None:
    """Where the run finds the playbook (harness.ansible's own rule), or None."""
    from harness.ansible.runner import playbook_path
    from harness.errors import UsageError

    try:
        return playbook_path(name)
    except UsageError:
        return None


def run_inputs(loaded: LoadedConfig, inventory_path: Path | None = None) -> tuple[RunInput, ...]:
    """Every local input of a run of this config, each with its digest."""
    inventory = Path(inventory_path) if inventory_path else loaded.inventory_path
    found = [RunInput(CONFIG, str(loaded.path), loaded.digest()),
             RunInput("inventory", str(inventory.resolve()), _file_digest(inventory))]
    for role, name in _playbooks(loaded):
        path = _playbook_file(name)
        found.append(RunInput(role, str(path) if path else name,
                              _file_digest(path) if path else ""))
    if loaded.config.load.placement == "client":
        from harness.remote.placement import default_agent_root

        wheels = loaded.config.load.agent_wheels
        root = loaded.resolve(wheels) if wheels else default_agent_root()
        found.append(RunInput("load agent wheels", str(root), _file_digest(root)))
    return tuple(found)


def manifest_text(inputs: Sequence[RunInput]) -> str:
    """The canonical text stored beside the run (and hashed into its digest)."""
    return json.dumps([asdict(i) for i in inputs], sort_keys=True, indent=1) + "\n"


def parse_manifest(text: str) -> tuple[RunInput, ...]:
    return tuple(RunInput(str(d["role"]), str(d["path"]), str(d["sha256"]))
                 for d in json.loads(text))


def digest(inputs: Sequence[RunInput]) -> str:
    """`v2:<config>:<the rest>`, 64 characters. Contents only: the same inventory given
    by another path (`-i`), or a playbook found from another directory, is the same."""
    config = next((i.sha256 for i in inputs if i.role == CONFIG), "")
    rest = sorted((i.role, i.sha256) for i in inputs if i.role != CONFIG)
    text = json.dumps(rest).encode()
    return f"{FORM}:{config[:20]}:{hashlib.sha256(text).hexdigest()[:40]}"


def config_changed(stored: str, inputs: Sequence[RunInput]) -> bool:
    """Whether the config part of a stored v2 digest differs from the config now."""
    return stored.split(":")[1:2] != digest(inputs).split(":")[1:2]


def changed(before: Sequence[RunInput], now: Sequence[RunInput]) -> list[RunInput]:
    """The inputs (as they are now) that differ from the record, by role; an input that
    is new or gone counts as changed too (named as now, or as it was)."""
    old = {i.role: i.sha256 for i in before}
    new = {i.role for i in now}
    return ([i for i in now if old.get(i.role) != i.sha256]
            + [i for i in before if i.role not in new])
