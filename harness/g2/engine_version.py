"""The running engine vs the software BOM: what the baseline arm's engines report (their
/version etc., read when G2's serving baseline starts them) against the version G1's
software BOM orders for the engine's host (gates.g1.bom.<group>.software.packages).

Why both: G1 reads the packages installed for the engine's interpreter, which is not
proof that the process serving is that install (another venv, a container, a stale
process). A mismatch is a STOP-LOSS; what cannot be compared (the engine reports no
version, or the BOM names none for it) is said in words and is ERROR, or SKIPPED where the
site lists test_engine_version as optional, never a PASS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness.config.inventory import Inventory
from harness.config.models import SiteConfig

# The Python distribution each engine profile is installed as: the name a software BOM
# lists. Engines that are not a Python distribution (llama.cpp, TGI's router, Ollama)
# cannot be ordered through that BOM.
DISTRIBUTIONS: dict[str, str] = {"vllm": "vllm", "sglang": "sglang",
                                 "llama-cpp-python": "llama-cpp-python"}
# gate's simulated engine answers /version with "gate-sim <gate-harness version>".
SIMULATOR = ("gate-sim ", "gate-harness")


@dataclass(frozen=True)
class RunningEngine:
    """One instance of the arm, as its endpoint answered."""

    url: str
    host: str
    engine: str  # the detected (or configured) engine profile
    version: str | None  # as the engine reports it; None: it reports none


def identity(found: RunningEngine) -> tuple[str | None, str | None]:
    """(distribution, version) the running engine says it is."""
    prefix, distribution = SIMULATOR
    if found.version is not None and found.version.startswith(prefix):
        return distribution, found.version.removeprefix(prefix)
    return DISTRIBUTIONS.get(found.engine), found.version


@dataclass(frozen=True)
class Ordered:
    """What the BOM orders for a host's software, and where it says so."""

    key: str  # gates.g1.bom.<group>.software.packages, or where it would be
    packages: Mapping[str, str] | None  # None: no software BOM covers the host


def ordered(config: SiteConfig, inventory: Inventory, host: str) -> Ordered:
    for group, bom in config.gates.g1.bom.items():
        if host in {h.name for h in inventory.group(group)}:
            key = f"gates.g1.bom.{group}.software.packages"
            return Ordered(key, bom.software.packages if bom.software else None)
    return Ordered(f"gates.g1.bom (no group with a BOM holds {host})", None)


@dataclass(frozen=True)
class Comparison:
    expected: str
    found: str
    mismatch: tuple[str, ...]  # STOP-LOSS
    unknown: tuple[str, ...]  # nothing to compare: ERROR, or SKIPPED where optional


def compare(running: Sequence[RunningEngine], orders: Mapping[str, Ordered]) -> Comparison:
    """Each instance against its host's order (`orders`: host -> Ordered)."""
    expected, found, mismatch, unknown = [], [], [], []
    for one in running:
        distribution, version = identity(one)
        order = orders[one.host]
        want = (order.packages or {}).get(distribution) if distribution else None
        expected.append(f"{one.host}: {distribution or one.engine} {want or '?'}")
        found.append(f"{one.url}: {distribution or one.engine} {version or '?'}")
        if distribution is None:
            unknown.append(f"{one.url}: {one.engine} is not a Python distribution a software "
                           "BOM can order")
        elif version is None:
            unknown.append(f"{one.url}: {one.engine} reports no version")
        elif order.packages is None:
            unknown.append(f"{one.host}: no software BOM orders its engine ({order.key})")
        elif want is None:
            unknown.append(f"{one.host}: the BOM orders no {distribution} ({order.key})")
        elif version != want:
            mismatch.append(f"{one.url} runs {distribution} {version}, the BOM orders {want}")
    return Comparison("; ".join(dict.fromkeys(expected)), "; ".join(found), tuple(mismatch),
                      tuple(unknown))
