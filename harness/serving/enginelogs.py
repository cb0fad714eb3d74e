"""The engines' own log files, fetched into the run's evidence after each arm stops.

An arm names its log files (`arms.<arm>.logs`, paths on each instance's host with
`{layout}`, `{instance}`, `{port}`, `{tp}` and `{arm}` filled in). After the arm's stop
action, G3 and G2's serving baseline fetch each file over the Transport (the host's own
SSH / local connection: no Ansible, no copy tool) and record it as an artifact with its
sha256, so `gate export` carries it in the evidence pack.

Engine logs are appended to across starts (and runs): each fetch keeps only what was
written since this run's previous fetch of that file, and at most `TAIL_BYTES` of it, the
end (where an engine says why it failed). A shortened copy says so in its artifact kind
("engine-log tail"), and an event names how much was left out. A log that cannot be read
is an event, never a failed check: the measurement does not depend on it.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from harness.config.models import Layout, SiteConfig
from harness.errors import GateError
from harness.serving.arms import EventSink
from harness.store import Store
from harness.store import runs as store_runs
from harness.transport import TransportPool

TAIL_BYTES = 1 << 20  # what one fetch keeps of a log at most: its last MiB
TIMEOUT = 60.0
KIND, KIND_TAIL = "engine-log", "engine-log tail"


def fill(path: str, values: Mapping[str, str]) -> str:
    """A configured path with `{layout}`-style fields filled in; unknown fields stay."""
    out = path
    for k, v in values.items():
        out = out.replace("{" + k + "}", v)
    return out


def window(size: int, offset: int, limit: int = TAIL_BYTES) -> tuple[int, int]:
    """(first byte, bytes) to fetch of a log now `size` long, `offset` already fetched:
    what is new, at most its last `limit` bytes; a shorter file (rotated, truncated) is
    read from its start."""
    start = offset if 0 <= offset <= size else 0
    if size - start > limit:
        start = size - limit
    return start, size - start


@dataclass
class EngineLogs:
    """Fetches and records one run's engine logs; remembers how far each file was read."""

    config: SiteConfig
    pool: TransportPool
    store: Store
    run_id: int
    event: EventSink
    into: Path  # the run's artifact directory
    tail_bytes: int = TAIL_BYTES
    offsets: dict[tuple[str, str], int] = field(default_factory=dict)
    count: int = 0

    def collect(self, arm: str, layout: Layout) -> None:
        """Fetch every configured log of `arm` on each instance of `layout`."""
        arms = self.config.arms
        spec = getattr(arms, arm, None) if arms is not None else None
        paths = list(spec.logs) if spec is not None else []
        for i, inst in enumerate(layout.instances):
            values = {"arm": arm, "layout": layout.name, "tp": str(layout.tp),
                      "instance": str(i), "port": str(inst.port), "host": inst.host}
            for raw in paths:
                path = fill(raw, values)
                try:
                    self._fetch(inst.host, path, f"{arm}-{layout.name}-{i}")
                except GateError as exc:  # evidence, not a result: say it and go on
                    self.event(source="harness", name=f"fetch engine log {path}",
                               host=inst.host, status="failed", message=exc.one_line())

    def _fetch(self, host: str, path: str, where: str) -> None:
        t = self.pool.get(host)
        q = shlex.quote(path)
        size_out = t.run_shell(f"stat -c %s {q}", timeout=TIMEOUT)
        if size_out.rc != 0 or not size_out.stdout.strip().isdigit():
            self.event(source="harness", name=f"fetch engine log {path}", host=host,
                       status="failed", message=(size_out.stderr.strip() or "not found")[-300:])
            return
        size = int(size_out.stdout.strip())
        key = (host, path)
        before = self.offsets.get(key, 0)
        start, n = window(size, before, self.tail_bytes)
        self.offsets[key] = size
        if n == 0:
            return
        got = t.run_shell(f"tail -c +{start + 1} {q} | head -c {n}", timeout=TIMEOUT)
        if got.rc != 0:
            self.event(source="harness", name=f"fetch engine log {path}", host=host,
                       status="failed", message=got.stderr.strip()[-300:])
            return
        self.count += 1
        name = PurePosixPath(path).name or "engine.log"
        # the arm / layout / instance in the name too: an evidence pack keeps file names
        out = self.into / "engine-logs" / where / f"{self.count:03d}-{where}-{name}"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(got.stdout, encoding="utf-8")
        left_out = start - (before if 0 <= before <= size else 0)
        store_runs.add_artifact(self.store, self.run_id, out,
                                kind=KIND_TAIL if left_out > 0 else KIND, host=host)
        if left_out > 0:
            self.event(source="harness", name=f"engine log {path} shortened", host=host,
                       status="changed", message=f"kept its last {n} bytes; {left_out} "
                       f"earlier bytes are left out (the log is {size} bytes)")
