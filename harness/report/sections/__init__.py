"""The report's section registry: each gate contributes the section its GateSpec names
(harness.registry, `report_section`).

A gate that lands its own report section adds a SectionBuilder here (a build function
frames -> Contribution, a metrics function for trends, and a template under
reports/templates/sections/) and names it in its spec. The others use "generic", the
checks section.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from harness.registry import GATE_IDS, gate_spec
from harness.report.sections.arrival import G1_SECTION, G2_SECTION
from harness.report.sections.base import Context, Contribution, SectionBuilder, TrendMetric
from harness.report.sections.g3 import G3
from harness.report.sections.g4 import G4
from harness.report.sections.generic import GENERIC

SECTIONS: Mapping[str, SectionBuilder] = MappingProxyType({
    "generic": GENERIC,
    "g3": G3,
    "g1": G1_SECTION,
    "g2": G2_SECTION,
    "g4": G4,
})


def builder_for(gate: str | None) -> SectionBuilder:
    """The section of a gate's run; runs that are not a gate's get the generic one."""
    if gate not in GATE_IDS:
        return GENERIC
    return SECTIONS[gate_spec(gate).report_section]


__all__ = ["SECTIONS", "Context", "Contribution", "SectionBuilder", "TrendMetric",
           "builder_for"]
