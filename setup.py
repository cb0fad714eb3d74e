"""Package list for setuptools: harness/ plus the top-level dirs shipped inside it.

gates/, playbooks/ and reports/ sit at the top of the repo (DESIGN.md) and install as
harness.gates, harness.playbooks and harness.reports (see package-dir in pyproject.toml).
"""

from setuptools import find_packages, setup


def mapped(package: str, where: str) -> list[str]:
    return [package] + [f"{package}.{sub}" for sub in find_packages(where)]


setup(
    packages=find_packages(include=["harness", "harness.*"])
    + mapped("harness.gates", "gates")
    + mapped("harness.playbooks", "playbooks")
    + mapped("harness.reports", "reports"),
)
