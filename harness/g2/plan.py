"""G2's plan: per host of a target's group, the four fio jobs; per GPU host, GPU health
and (when asked) GDS and gdsio's read throughput; with gates.g2.serving, the serving
baseline per G3 layout x tier and, per layout it starts, the running engine's version
against the software BOM."""

from __future__ import annotations

from dataclasses import dataclass

from harness.config.baseline import size_bytes
from harness.config.decision import weakened as decision_weakened
from harness.config.inventory import Inventory
from harness.config.models import G2, FioTarget, G2Serving, Layout, SiteConfig
from harness.errors import UsageError
from harness.g2.fio import wanted
from harness.serving.cells import Cell, cells, docs_for, layouts

# Below the default share of the vendor's figures a PASS is weaker: a reviewer signs it.
DEFAULT_MIN_FRACTION: float = G2.model_fields["min_fraction"].default
DEFAULT_MAX_CV: float = G2Serving.model_fields["max_cv"].default
# A smaller file or a shorter run is served by the drive's or the array's cache (a 1 MB
# file re-read for a second, a write that sits in an SLC/DRAM buffer): a reviewer signs it.
MIN_FIO_SIZE = "4G"
MIN_FIO_RUNTIME_S = 30.0
# dcgmi diag -r 1 is the deployment check only (no GPU exercised); -r 2 adds PCIe and memory.
MIN_DCGM_LEVEL = 2

JOBS = ("seq-read", "seq-write", "rand-read", "lat-qd1")


@dataclass(frozen=True)
class FioCell:
    host: str
    target: FioTarget
    job: str

    @property
    def key(self) -> str:
        return f"{self.host}-{self.target.name}-{self.job}"


def fio_cells(config: SiteConfig, inventory: Inventory) -> list[FioCell]:
    return [FioCell(h.name, t, job) for t in config.gates.g2.fio
            for h in inventory.group(t.group) for job in JOBS]


def gpu_hosts(inventory: Inventory) -> list[str]:
    return [h.name for h in inventory.group("gpu")]


def serving_cells(config: SiteConfig) -> list[Cell]:
    """The baseline arm's cells: G3's (gates.g3.layouts x tiers) unless gates.g2.serving
    names its own layouts or tiers."""
    serving = config.gates.g2.serving
    if serving is None or config.arms is None:  # no arms: nothing to serve (weakened)
        return []
    chosen = ([la for name in serving.layouts for la in config.layouts if la.name == name]
              if serving.layouts else layouts(config))  # an unknown name: validate says
    return [Cell(layout, tier) for layout in chosen
            for tier in serving.tiers or config.gates.g3.tiers]


def serving_layouts(config: SiteConfig) -> list[Layout]:
    """The layouts the serving baseline starts: each one's running engine is compared
    with the software BOM (test_engine_version)."""
    return list({c.layout.name: c.layout for c in serving_cells(config)}.values())


def expected_checks(config: SiteConfig, inventory: Inventory) -> list[str]:
    g2 = config.gates.g2
    checks = [f"test_fio[{c.key}]" for c in fio_cells(config, inventory)]
    if g2.gpu_health:
        checks += [f"test_gpu_health[{h}]" for h in gpu_hosts(inventory)]
    if g2.gds:
        checks += [f"test_gds[{h}]" for h in gpu_hosts(inventory)]
    if g2.gdsio is not None:
        checks += [f"test_gdsio[{h}]" for h in gpu_hosts(inventory)]
    checks += [f"test_serving[{c.key}]" for c in serving_cells(config)]
    checks += [f"test_engine_version[{la.name}]" for la in serving_layouts(config)]
    return checks


def weakened(config: SiteConfig) -> list[str]:
    """What a real site left out of G2 or judged more loosely: a PASS then needs a sign-off.
    A simulated site has nothing real to weaken."""
    g2 = config.gates.g2
    out = _fio_weakened(g2) + _gpu_weakened(g2)
    if g2.gdsio is not None and g2.gdsio.read_gib_s is None:
        out.append("G2 gdsio: no vendor figure (read_gib_s), measured but not judged")
    out += _serving_weakened(config)
    return [] if config.simulated else out


def _fio_weakened(g2: G2) -> list[str]:
    if not g2.fio:
        return ["G2 fio: no target (no storage baseline measured)"]
    out = [f"G2 fio {t.name}: direct: false (the page cache may serve reads)"
           for t in g2.fio if not t.direct]
    out += [f"G2 fio {t.name} {job}: no vendor figure, measured but not judged"
            for t in g2.fio for job in JOBS if wanted(t, job, g2.min_fraction)[1] is None]
    out += [f"G2 fio {t.name}: size {t.size} (below {MIN_FIO_SIZE}: a cache may serve it)"
            for t in g2.fio if size_bytes(t.size) < size_bytes(MIN_FIO_SIZE)]
    out += [f"G2 fio {t.name}: runtime_s {t.runtime_s:g} (below {MIN_FIO_RUNTIME_S:g} s: a "
            "write cache may absorb it)" for t in g2.fio if t.runtime_s < MIN_FIO_RUNTIME_S]
    if g2.min_fraction < DEFAULT_MIN_FRACTION:
        out.append(f"G2 fio: min_fraction {g2.min_fraction:g} of the vendor's figures "
                   f"(default {DEFAULT_MIN_FRACTION:g})")
    return out


def _gpu_weakened(g2: G2) -> list[str]:
    if not g2.gpu_health:
        return ["G2 GPU health not checked (gates.g2.gpu_health: false)"]
    if g2.dcgm_level < MIN_DCGM_LEVEL:
        return [f"G2 GPU health: dcgm_level {g2.dcgm_level} (dcgmi diag -r 1 exercises no "
                f"GPU; default {MIN_DCGM_LEVEL})"]
    return []


def _serving_weakened(config: SiteConfig) -> list[str]:
    serving = config.gates.g2.serving
    if serving is None or config.arms is None:
        why = "gates.g2.serving: null" if serving is None else "no arms configured"
        return [f"G2 serving baseline not measured ({why})"]
    out = []
    missing = {c.key for c in cells(config)} - {c.key for c in serving_cells(config)}
    if missing:
        out.append(f"G2 serving: G3's cells {', '.join(sorted(missing))} have no baseline "
                   "(gates.g2.serving.layouts / tiers)")
    if serving.max_cv > DEFAULT_MAX_CV:
        out.append(f"G2 serving: max_cv {serving.max_cv:g} (default {DEFAULT_MAX_CV:g})")
    if serving.max_failed_share > 0:
        out.append(f"G2 serving: max_failed_share {serving.max_failed_share:g} (default 0)")
    workload = config.workload
    short = sorted({c.tier for c in serving_cells(config) if serving.docs and serving.docs
                    < docs_for(c.tier, workload.docs_per_concurrency, workload.min_docs)})
    if short:
        out.append(f"G2 serving: docs {serving.docs} a repetition, fewer than G3 asks at "
                   f"c={', '.join(map(str, short))}")
    # The serving phases are judged with load.health's bounds, as G3's are.
    out += [f"G2 serving: {d.line()}" for d in
            decision_weakened(config.model_dump(mode="json")) if d.key.startswith("load.")]
    return out


def validate(config: SiteConfig, inventory: Inventory) -> None:
    g2 = config.gates.g2
    if g2.serving is not None and config.arms is not None:
        _validate_serving(config, g2.serving)
        from harness.ansible.playbook_vars import check_arms, playbook_texts

        check_arms(config.arms, playbook_texts(config.arms))
    if (not g2.fio and not g2.gpu_health and not g2.gds and g2.gdsio is None
            and not serving_cells(config)):
        raise UsageError("G2 has nothing to measure", key="gates.g2",
                         hint="add fio targets, or gpu_health / gds / gdsio / serving")
    if g2.gdsio is not None and g2.gdsio.path.startswith("/dev/"):
        raise UsageError(f"{g2.gdsio.path} is a device: gdsio reads files in a directory",
                         key="gates.g2.gdsio.path",
                         hint="a directory on the accelerator volume's filesystem")
    seen = set()
    for i, t in enumerate(g2.fio):
        key = f"gates.g2.fio.{i}"
        if t.name in seen:
            raise UsageError(f"two fio targets named {t.name!r}", key=f"{key}.name")
        seen.add(t.name)
        if t.group not in inventory.groups:
            raise UsageError(f"no inventory group {t.group!r}", key=f"{key}.group")
        if t.path.startswith("/dev/") and not t.destructive:
            raise UsageError(f"{t.path} is a raw device: fio's write job would overwrite it",
                             key=f"{key}.path",
                             hint="use a file or directory, or set destructive: true")


def _validate_serving(config: SiteConfig, serving: G2Serving) -> None:
    if not config.layouts:
        raise UsageError("the serving baseline needs the layouts G3 uses",
                         key="gates.g2.serving",
                         hint="add `layouts:`, or set gates.g2.serving: null")
    known = [layout.name for layout in config.layouts]
    for name in serving.layouts:
        if name not in known:
            raise UsageError(f"no layout named {name!r}", key="gates.g2.serving.layouts",
                             hint=f"layouts: {', '.join(known)}")
    if any(t <= 0 for t in serving.tiers):
        raise UsageError("every tier must be a positive concurrency",
                         key="gates.g2.serving.tiers")
