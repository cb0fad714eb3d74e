"""`gate hosts check --engines`: the arms' endpoints probed as `gate probe` probes a URL.

Why: a campaign that learns on its first phase that an engine serves another model, or
that nothing on it proves a tier read, has lost the night its hosts check was for. G3
starts and stops the engines itself, so one that is not up now is said, not a problem.
Arms that share an endpoint (they run one at a time) are probed once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.config.inventory import Inventory
    from harness.config.models import SiteConfig
    from harness.loadgen.capabilities import Assessment


@dataclass(frozen=True)
class EngineCheck:
    arm: str
    layout: str
    instance: int
    url: str
    up: bool
    assessment: Assessment | None = None
    problem: str = ""  # down: why; up: what keeps G3 from using it (a model not served)

    def to_dict(self) -> dict[str, Any]:
        return {"arm": self.arm, "layout": self.layout, "instance": self.instance,
                "url": self.url, "up": self.up, "problem": self.problem or None,
                "assessment": self.assessment.to_dict() if self.assessment else None}

    def line(self) -> str:
        where = f"{self.arm} {self.layout}#{self.instance} {self.url}"
        if not self.up:
            return f"{where}: not up ({self.problem})"
        if self.assessment is None:
            return f"{where}: {self.problem}"
        a = self.assessment
        said = "G3 could decide here" if a.g3_can_decide else \
            next((g for g in a.g3 if "cannot" in g or "INCONCLUSIVE" in g), a.g3[-1])
        return f"{where}: {a.engine}" + (f" {a.version}" if a.version else "") + f"; {said}"


def check_engines(cfg: SiteConfig, inventory: Inventory, timeout: float) -> list[EngineCheck]:
    """Every arm x layout x instance endpoint of the config, each distinct URL probed once."""
    from harness.cli.probe_cmd import assess_url
    from harness.errors import EndpointError, UsageError
    from harness.serving.arms import endpoints

    if cfg.arms is None:
        return []
    seen: dict[str, tuple[bool, Assessment | None, str]] = {}
    out = []
    for layout in cfg.layouts:
        for arm in ("baseline", "accelerated"):
            for ep in endpoints(cfg, inventory, arm, layout):
                if ep.url not in seen:
                    try:
                        seen[ep.url] = (True, assess_url(
                            ep.url, cfg.model.name, cfg.engine, timeout,
                            cfg.gates.g3.evidence.allow_storage_evidence), "")
                    except EndpointError as exc:
                        seen[ep.url] = (False, None, str(exc))
                    except UsageError as exc:
                        seen[ep.url] = (True, None, str(exc))
                up, assessment, problem = seen[ep.url]
                out.append(EngineCheck(arm, layout.name, ep.instance, ep.url, up,
                                       assessment, problem))
    return out
