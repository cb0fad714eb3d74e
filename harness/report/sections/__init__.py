"""The gate section registry: each gate contributes its own section through SECTIONS.

A gate that lands its own report section adds a SectionBuilder here (a build function
frames -> Contribution, a metrics function for trends, and a template under
reports/templates/sections/). Gates without one get the generic checks section.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from harness.report.sections.base import Context, Contribution, SectionBuilder, TrendMetric
from harness.report.sections.g3 import G3
from harness.report.sections.generic import GENERIC

SECTIONS: Mapping[str, SectionBuilder] = MappingProxyType({
    "G1": GENERIC,
    "G2": GENERIC,
    "G3": G3,
    "G4": GENERIC,
})


def builder_for(gate: str | None) -> SectionBuilder:
    return SECTIONS.get(gate or "", GENERIC)


__all__ = ["SECTIONS", "Context", "Contribution", "SectionBuilder", "TrendMetric",
           "builder_for"]
