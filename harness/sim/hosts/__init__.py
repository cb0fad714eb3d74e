"""Simulated hosts' hardware: captured real tool outputs, by profile (see catalog.py)."""

from harness.sim.hosts.catalog import (
    HARDWARE_TOOLS,
    PACKAGED,
    Answer,
    CapturedCommand,
    Catalog,
    HardwareProfile,
    load_catalog,
)

__all__ = [
    "HARDWARE_TOOLS",
    "PACKAGED",
    "Answer",
    "CapturedCommand",
    "Catalog",
    "HardwareProfile",
    "load_catalog",
]
