"""A detached soak's spool directory: how the soak and its viewers talk without talking.

The soak (harness/loadgen/soak.py) outlives the gate process that started it, every SSH
drop and the engineer's laptop, so nothing passes between them but files in one
directory, each written whole (a temporary name, then an atomic rename):

  spec.json            what to run (SoakSpec), written by the gate before the start
  state.json           the soak's own word: pid, start (epoch), status, error, windows
  windows/000042.json  window 42 as measured on the soak's side (requests, latencies,
                       the engines' counters at its edges), written once when final
  stop                 a viewer's request to end the soak early (its content: why)

A viewer (`gate run G4`, `gate resume`) reads new window files and stores them by (run,
window), so reading one twice never counts it twice. Plain files on purpose: the same
layout works in a local directory (`placement: local`) and on the client host, where the
load agent runs the soak and `gate-agent soak-pull` reads it for the gate over SSH
(`placement: client`, harness/remote/soak_agent.py). Here, not in harness.g4, because the
agent ships it: it runs on the client host's own Python 3.9+.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from harness.errors import InfrastructureError
from harness.loadgen.records import Endpoint, RequestSpec

SPEC = "spec.json"
STATE = "state.json"
STOP = "stop"
WINDOWS = "windows"

Status = Literal["starting", "running", "done", "stopped", "failed"]
ENDED: frozenset[str] = frozenset({"done", "stopped", "failed"})


@dataclass(frozen=True)
class SoakSpec:
    """Everything the detached soak needs: the accelerated arm's endpoints, the documents
    it asks about in turn (a working set larger than the GPU's prefix cache keeps the
    tier serving), the closed loop's concurrency, how long, and the window length."""

    endpoints: tuple[Endpoint, ...]
    documents: tuple[RequestSpec, ...]
    concurrency: int
    duration_s: float
    window_s: float
    timeout_s: float = 1800.0  # per request
    api: Literal["completions", "chat"] = "completions"
    tag: str = "gate-g4"
    extra_body: Mapping[str, Any] | None = None
    run_uid: str = ""  # the gate run that owns it (a viewer checks it is reading its own)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["endpoints"] = [asdict(e) for e in self.endpoints]
        d["documents"] = [asdict(r) for r in self.documents]
        d["extra_body"] = dict(self.extra_body) if self.extra_body is not None else None
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SoakSpec:
        return cls(
            endpoints=tuple(Endpoint(str(e["url"]), str(e["model"]), int(e["instance"]))
                            for e in d["endpoints"]),
            documents=tuple(RequestSpec(str(r["prompt"]), int(r["max_tokens"]),
                                        int(r["doc_id"]), r.get("prompt_tokens"))
                            for r in d["documents"]),
            concurrency=int(d["concurrency"]), duration_s=float(d["duration_s"]),
            window_s=float(d["window_s"]), timeout_s=float(d.get("timeout_s", 1800.0)),
            api="chat" if d.get("api") == "chat" else "completions",
            tag=str(d.get("tag", "gate-g4")), extra_body=d.get("extra_body"),
            run_uid=str(d.get("run_uid", "")))

    @property
    def windows(self) -> int:
        """How many whole windows the soak measures."""
        return max(int(self.duration_s // self.window_s), 0)


@dataclass(frozen=True)
class SoakState:
    """What the soak says of itself (state.json)."""

    status: Status
    pid: int
    started_at: float  # epoch s: window k spans started_at + k * window_s onwards
    updated_at: float
    windows_written: int = 0
    error: str = ""
    stop_reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ended(self) -> bool:
        return self.status in ENDED

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SoakState:
        status = str(d.get("status", "failed"))
        return cls(status=status if status in ("starting", "running", "done", "stopped")
                   else "failed",  # type: ignore[arg-type]
                   pid=int(d.get("pid", 0)), started_at=float(d.get("started_at", 0.0)),
                   updated_at=float(d.get("updated_at", 0.0)),
                   windows_written=int(d.get("windows_written", 0)),
                   error=str(d.get("error", "")), stop_reason=str(d.get("stop_reason", "")),
                   extra=dict(d.get("extra") or {}))


def write_json(path: Path, doc: Mapping[str, Any]) -> None:
    """`path` written whole or not at all: a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, separators=(",", ":")))
    os.replace(tmp, path)


def read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InfrastructureError(f"cannot read {path.name} of the soak: {exc}",
                                  stage="g4 spool", hint=f"the soak's directory is {path.parent}"
                                  ) from None
    if not isinstance(doc, dict):
        raise InfrastructureError(f"{path.name} of the soak is not a JSON object",
                                  stage="g4 spool")
    return doc


def window_name(index: int) -> str:
    return f"{index:06d}.json"


class Spool:
    """One soak's directory, as the soak writes it and a local viewer reads it."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def create(self, spec: SoakSpec) -> None:
        (self.root / WINDOWS).mkdir(parents=True, exist_ok=True)
        write_json(self.root / SPEC, spec.to_dict())

    def spec(self) -> SoakSpec:
        return SoakSpec.from_dict(read_json(self.root / SPEC))

    def state(self) -> SoakState | None:
        """None before the soak wrote its first state."""
        if not (self.root / STATE).exists():
            return None
        return SoakState.from_dict(read_json(self.root / STATE))

    def set_state(self, state: SoakState) -> None:
        write_json(self.root / STATE, asdict(state))

    def write_window(self, index: int, doc: Mapping[str, Any]) -> None:
        write_json(self.root / WINDOWS / window_name(index), doc)

    def window_indices(self) -> list[int]:
        """The windows written so far, in order (a file still being written is hidden)."""
        out = []
        for p in (self.root / WINDOWS).glob("*.json"):
            if p.stem.isdigit():
                out.append(int(p.stem))
        return sorted(out)

    def read_window(self, index: int) -> dict[str, Any]:
        return read_json(self.root / WINDOWS / window_name(index))

    def request_stop(self, why: str) -> None:
        (self.root / STOP).write_text(why)

    def stop_requested(self) -> str | None:
        try:
            return (self.root / STOP).read_text() or "stop requested"
        except FileNotFoundError:
            return None

