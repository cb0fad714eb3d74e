"""Layers point one way, and the load agent's imports stay slim.

Why a test: an import that points upward (transport -> simulator, simulator -> command
line) is one line and looks harmless, and each one drags the layers above along: a load
agent on a client host would ship the simulator, the report's pandas and the CLI. The
table below is the picture of docs/design.md ("Layers"); a higher layer may import a lower
one or its own, never one above. Every `import` / `from` counts, those inside functions
and under TYPE_CHECKING included.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ROOT = "harness"  # in the tables: harness/__init__.py itself, not the whole package

# Highest first. A module belongs to the entry with its longest matching prefix.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cli", ("harness.cli", "harness.__main__")),
    ("workflow", ("harness.runner", "harness.campaign", "harness.demo", "harness.workflow")),
    ("gates", ("harness.gates", "harness.pytest_plugin", "harness.pytest_args")),
    ("gate libraries", ("harness.g1", "harness.g2", "harness.g3", "harness.g4")),
    # engines and load shared by G2, G3 and G4: what two gate libraries share lives here
    ("serving", ("harness.serving",)),
    # harness.registry (the gate registry) names each gate's config model, so it imports
    # harness.config: the lowest layer where that import points down, and every reader
    # of the registry (report, runner, CLI) sits at or above it.
    ("libraries", ("harness.loadgen", "harness.transport", "harness.config", "harness.store",
                   "harness.stats", "harness.probes", "harness.ansible", "harness.secrets",
                   "harness.registry", "harness.suite_hooks", "harness.remote",
                   "harness.bundle", "harness.plan")),
    ("foundation", ("harness.errors", "harness.verdict", "harness.entry", "harness.liblog",
                    "harness.digests", "harness.labels", "harness.progress_log",
                    "harness.reasons", ROOT)),
)

# Inside the libraries layer, highest first: a package imports only packages of a lower
# row (a load agent ships remote's closure, so loadgen stays below it and above nothing
# that pulls Ansible; the store and the probes both sit on the transport and the config).
LIBRARY_ROWS: tuple[tuple[str, ...], ...] = (
    ("harness.remote",),
    ("harness.ansible", "harness.registry", "harness.suite_hooks", "harness.loadgen"),
    ("harness.bundle", "harness.store", "harness.probes", "harness.plan", "harness.stats"),
    ("harness.transport",),
    ("harness.config", "harness.secrets"),
)
GATE_LIBRARIES = dict(LAYERS)["gate libraries"]

# Leaves: only the command line and the workflow may import them; each imports only what
# its entry allows (its own package always).
SIM, REPORT = "harness.sim", "harness.report"
FOUNDATION = dict(LAYERS)["foundation"]
LEAVES: dict[str, tuple[str, ...]] = {
    # python -m harness.sim takes the sudo password out of its environment, as gate does
    SIM: (*FOUNDATION, "harness.secrets"),
    # the simulator's transport backend, registered by entry point (harness.transport.backends)
    "harness.sim.hardware_transport": (SIM, *FOUNDATION, "harness.transport"),
    REPORT: (*FOUNDATION, *dict(LAYERS)["libraries"], *dict(LAYERS)["serving"],
             *GATE_LIBRARIES),
}
LEAF_USERS = ("cli", "workflow")

# Edges named on their own, whatever the layers say (importer prefix, imported prefix).
FORBIDDEN: tuple[tuple[str, str, str], ...] = (
    ("harness.transport", SIM, "backends register themselves; transport finds them"),
    (SIM, "harness.cli", "the engine is its own program (harness.sim.command)"),
    ("harness.demo", "harness.cli", "the workflow is called by the CLI, not the reverse"),
    ("harness.loadgen", SIM, "the load agent runs on a client host without the simulator"),
    ("harness.loadgen", REPORT, "the load agent runs without the report's pandas"),
    ("harness.loadgen", "harness.ansible", "the load agent runs without Ansible"),
    ("harness.gates", "harness.store", "suites record through the plugin's recorder"),
    ("harness.plan", SIM, "the planner's model must not be the simulator's under another name"),
    *((a, b, "gate libraries never import one another: what two share lives in "
                "harness.serving or below")
      for a in GATE_LIBRARIES for b in GATE_LIBRARIES if a != b),
)
# The store is the only door to the gate's database: its libraries are imported there only.
STORE, STORE_ONLY = "harness.store", ("sqlalchemy", "alembic")

def _module_name(path: Path) -> str:
    """gates/ installs as harness.gates (pyproject.toml package-dir)."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[0] == "gates":
        parts = ["harness", "gates", *parts[1:]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str) -> bool:
    rel = name.split(".")
    if rel[:2] == ["harness", "gates"]:
        rel = ["gates", *rel[2:]]
    base = REPO.joinpath(*rel)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    where: str  # path:line


def _imports(path: Path) -> Iterator[Edge]:
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    rel = path.relative_to(REPO)
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Edge(module, alias.name, f"{rel}:{node.lineno}")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, *([base] if base else [])])
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                sub = f"{base}.{alias.name}"
                yield Edge(module, sub if _is_module(sub) else base, f"{rel}:{node.lineno}")


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    """Every import in harness/ and gates/ (parsed once for the tests below)."""
    files = [*sorted((REPO / "harness").rglob("*.py")), *sorted((REPO / "gates").rglob("*.py"))]
    return [edge for path in files for edge in _imports(path)]


def _within(module: str, prefix: str) -> bool:
    """module is prefix or inside it; ROOT is harness/__init__.py alone."""
    if prefix == ROOT:
        return module == ROOT
    return module == prefix or module.startswith(prefix + ".")


def _longest(module: str, prefixes: tuple[str, ...]) -> str | None:
    found = [p for p in prefixes if _within(module, p)]
    return max(found, key=len) if found else None


def _layer(module: str) -> int:
    """The layer's rank, 0 = top; a module outside the table is a failure to classify."""
    best: tuple[int, int] | None = None
    for rank, (_, prefixes) in enumerate(LAYERS):
        hit = _longest(module, prefixes)
        if hit is not None and (best is None or len(hit) > best[1]):
            best = (rank, len(hit))
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS ({__file__})")
    return best[0]


def _row(module: str) -> tuple[int, str] | None:
    """(row, package) of a module in LIBRARY_ROWS, or None outside the libraries."""
    for rank, row in enumerate(LIBRARY_ROWS):
        hit = _longest(module, row)
        if hit is not None:
            return rank, hit
    return None


def _leaf(module: str) -> str | None:
    return _longest(module, tuple(LEAVES))


def _broken_rule(edge: Edge) -> str | None:
    """Why the edge is not allowed, or None."""
    src, dst = edge.importer, edge.imported
    for importer, imported, why in FORBIDDEN:
        if _within(src, importer) and _within(dst, imported):
            return f"{importer} may not import {imported}: {why}"
    if dst.partition(".")[0] in STORE_ONLY and not _within(src, STORE):
        return f"only {STORE} imports {dst.partition('.')[0]}: the store is the only door"
    if dst.partition(".")[0] != ROOT:
        return None
    rows = [_row(src), _row(dst)]
    if rows[0] is not None and rows[1] is not None and rows[0][1] != rows[1][1] \
            and rows[1][0] <= rows[0][0]:
        return (f"{rows[0][1]} may not import {rows[1][1]}: not below it in LIBRARY_ROWS")
    src_leaf, dst_leaf = _leaf(src), _leaf(dst)
    if src_leaf is not None:
        home = _longest(src, (SIM, REPORT)) or src_leaf
        if _within(dst, home) or _longest(dst, LEAVES[src_leaf]) is not None:
            return None
        return f"{src_leaf} may import only its own package and {', '.join(LEAVES[src_leaf])}"
    if dst_leaf is not None:
        if LAYERS[_layer(src)][0] not in LEAF_USERS:
            return f"{dst_leaf} is a leaf: only {' and '.join(LEAF_USERS)} may import it"
        return None
    if _layer(dst) < _layer(src):
        return (f"{LAYERS[_layer(src)][0]} may not import {LAYERS[_layer(dst)][0]} "
                "(a layer above it)")
    return None


def _violations(edges: list[Edge]) -> dict[tuple[str, str], str]:
    found: dict[tuple[str, str], str] = {}
    for edge in edges:
        why = _broken_rule(edge)
        if why is not None:
            found.setdefault((edge.importer, edge.imported), f"{edge.where}: {why}")
    return found


def test_every_module_has_a_layer(edges: list[Edge]) -> None:
    modules = {e.importer for e in edges}
    assert "harness.gates.g3_main.conftest" in modules and "harness.cli" in modules
    for module in sorted(modules):
        assert _leaf(module) is not None or _layer(module) >= 0


def test_every_library_package_has_a_row() -> None:
    """A library package missing from LIBRARY_ROWS would escape the order unnoticed."""
    assert sorted(p for row in LIBRARY_ROWS for p in row) == sorted(dict(LAYERS)["libraries"])


def test_imports_point_down_the_layers(edges: list[Edge]) -> None:
    found = _violations(edges)
    assert not found, "imports against the layers:\n" + "\n".join(sorted(found.values()))


@pytest.mark.parametrize(("importer", "imported", "allowed"), [
    ("harness.transport.pool", "harness.sim.hosts", False),
    ("harness.sim.__main__", "harness.cli", False),
    ("harness.sim.hardware_transport", "harness.transport.base", True),
    ("harness.sim.engine", "harness.transport.base", False),
    ("harness.store.db", "harness.cli.common", False),
    ("harness.g3.session", "harness.runner", False),
    ("harness.runner", "harness.g3.session", True),
    ("harness.pytest_plugin", "harness.report", False),
    ("harness.demo", "harness.report", True),
    ("harness.report.build", "harness.g3.plan", True),
    ("harness.g2.serving_run", "harness.g3.plan", False),
    ("harness.g2.serving_run", "harness.serving.arms", True),
    ("harness.serving.engines", "harness.g3.plan", False),
    ("harness.loadgen.bench", "harness.store.db", True),
    ("harness.store.db", "harness.loadgen.records", False),
    ("harness.transport.pool", "harness.probes.process", False),
    ("harness.report.build", "harness.serving.identity", True),
    ("harness.report.build", "harness.runner", False),
    ("harness.errors", "harness.config", False),
    ("harness.gates.g3_main.test_g3", "harness.store.writer", False),
    ("harness.loadgen.engine", "harness.ansible", False),
    ("harness.cli.db_cmd", "sqlalchemy", False),
    ("harness.plan.formulas", "harness.sim.profiles", False),
    ("harness.plan.predict", "harness.g3.plan", False),
    ("harness.cli.plan_cmd", "harness.plan", True),
    ("harness.store.db", "sqlalchemy", True),
])
def test_the_rules_judge_edges_as_the_table_says(importer: str, imported: str,
                                                 allowed: bool) -> None:
    assert (_broken_rule(Edge(importer, imported, "x")) is None) is allowed


# -- the load agent's import closure ----------------------------------------------------
HEAVY = ("pandas", "matplotlib", "weasyprint", "ansible", "ansible_runner", SIM, REPORT)
AGENT = ("harness.transport", "harness.config", "harness.loadgen")  # lowest first


@pytest.fixture(scope="module")
def agent_loads() -> dict[str, list[str]]:
    """Per package of AGENT, imported in that order in a fresh interpreter: the HEAVY
    modules that importing it added (so a package is blamed only for its own)."""
    code = ("import importlib, json, sys\n"
            "added = {}\n"
            f"for name in {list(AGENT)!r}:\n"
            "    before = set(sys.modules)\n"
            "    importlib.import_module(name)\n"
            "    added[name] = sorted(set(sys.modules) - before)\n"
            "print(json.dumps(added))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, cwd=REPO, check=True)
    added: dict[str, list[str]] = json.loads(out.stdout)
    return {name: [m for m in loaded if any(_within(m, h) for h in HEAVY)]
            for name, loaded in added.items()}


@pytest.mark.parametrize("package", AGENT)
def test_the_load_agent_imports_nothing_heavy(package: str,
                                              agent_loads: dict[str, list[str]]) -> None:
    """harness.loadgen + harness.transport + harness.config is what a load agent on the
    site's client host imports: none of the report's, Ansible's or the simulator's."""
    assert set(agent_loads) == set(AGENT)
    assert agent_loads[package] == []


# Modules that may name a gate ("G3") in code: the registry that lists the gates, the
# gates' config models, and what is one gate's own (its suite, library and report section).
GATE_NAMING: dict[str, str] = {
    "harness.registry": "the one list of the gates",
    "harness.config.models": "the gates' config models (their names)",
    "harness.config.soak": "G4's config model",
    # moved from harness.workflow.plan_g2: the G3 report's plan section reads G2's
    # figures too, and a leaf may not import the workflow
    "harness.plan.g2": "the planner reads G2's host facts (gate plan, G3's plan section)",
    **{lib: "a gate's own library" for lib in GATE_LIBRARIES},
    "harness.gates": "the gates' suites",
    **{f"harness.report.sections.g{n}": "a gate's report section" for n in range(1, 5)},
    "harness.report.sections.g3_page1": "what G3's report shows on page 1",
}


def _gate_names(path: Path) -> Iterator[int]:
    """Lines of `path` with a string constant that is a gate's id (docstrings aside)."""
    import re

    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and re.fullmatch(r"G[1-9]", node.value):
            yield node.lineno


def test_generic_code_names_no_gate() -> None:
    """The runner, the campaign, the CLI, the store and the report ask the registry or a
    suite's hooks, never `if gate == "G3"`: a new gate is its suite, library, spec, config
    model and catalogue words (docs/gates.md), and nothing generic learns its name."""
    files = [*sorted((REPO / "harness").rglob("*.py")), *sorted((REPO / "gates").rglob("*.py"))]
    found = [f"{p.relative_to(REPO)}:{line}" for p in files
             if not any(_within(_module_name(p), m) for m in GATE_NAMING)
             for line in _gate_names(p)]
    assert found == [], "a gate named in generic code (ask harness.registry instead)"


def test_the_gate_name_rule_sees_a_named_gate(tmp_path: Path) -> None:
    bad = tmp_path / "x.py"
    bad.write_text('def f(gate: str) -> bool:\n    """G3 here is prose."""\n'
                   '    return gate == "G3"\n')
    assert list(_gate_names(bad)) == [3]
