"""What the arms' engines run and where the load goes, against the simulated lab with a
one-cell site (TP8, tier 4, 3-5 pairs, speed 30), as in test_g3_integrity.py: each
route of the adversarial review reproduced, then closed.

1. The honest demo: both arms fork from one checkout, so they run the same code: the
   executable, cwd, libraries and the `harness` package compare equal and G3 decides.
   Read from the README's demo, run once a session (tests/demo_fixtures.py): every
   instance of both layouts, not only TP8's.
2. A baseline started in another working directory whose copy of the engine's code
   shadows the installed one, with argv, environment and server config identical: the
   preflight is ERROR naming the cwd and the package, never PASS.
3. The accelerated arm's `endpoints:` pointing at a proxy in front of another, faster
   engine while the layout's port runs the honest one: ERROR, the endpoint's listener is
   not the inspected engine; declared as a proxy, it is read and differs from the
   baseline (which has none): ERROR again.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from g3_site import Site, one_cell_site
from sim_support.lying_proxy import lying_proxy

from harness.serving.identity import compare_arms

if TYPE_CHECKING:
    from demo_fixtures import Demo

pytest_plugins = ["demo_fixtures"]
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with one_cell_site(tmp_path) as made:
        yield made


def checks(site: Site, run: int = 1) -> dict[str, dict[str, object]]:
    return {str(c["name"]): c for c in site.run_json(run)["checks"]}  # type: ignore


def identities(site: Site) -> dict[str, dict[str, object]]:
    """arm -> the preflight's identity reading of TP8's only instance."""
    rows = site.query("SELECT key, value FROM host_fact WHERE key LIKE 'engine identity %'")
    return {str(k).split()[2]: json.loads(str(v)) for k, v in rows}


def without_spawner(command: list[str]) -> list[str]:
    """The start command with `--spawner PATH` taken out: a new interpreter each start."""
    i = command.index("--spawner")
    return command[:i] + command[i + 2:]


def test_the_honest_demo_arms_run_the_same_code(demo_default: Demo) -> None:
    # what is read of the engines does not depend on how many pairs or cells ran
    out = demo_default.out
    assert out.returncode in (0, 2), out.stdout + out.stderr[-2000:]
    run = demo_default.g3_run()["id"]
    shown = demo_default.run_json(run)["checks"]
    assert isinstance(shown, list)
    found: dict[str, list[dict[str, object]]] = {}
    for c in shown:
        found.setdefault(str(c["name"]), []).append(c)
    differ = found["test_arms_differ_only_by_the_accelerator"]
    assert len(differ) == 2 and all(c["outcome"] == "PASS" for c in differ), differ  # a layout
    assert len(found["test_cell"]) == 6  # 2 layouts x 3 tiers
    for cell in found["test_cell"]:
        assert cell["outcome"] in ("PASS", "INCONCLUSIVE")
        assert "arms differ" not in str(cell["message"]) and "not verified" not in str(
            cell["message"])
    # the preflight's identity reading of every instance: "engine identity ARM TP8#0"
    seen: dict[str, dict[str, dict[str, object]]] = {}
    for key, value in demo_default.query(
            "SELECT key, value FROM host_fact WHERE run_id = ? AND "
            "key LIKE 'engine identity %'", run):
        _, _, arm, instance = str(key).split()
        seen.setdefault(instance, {})[arm] = json.loads(str(value))
    assert sorted(seen) == ["TP4x2#0", "TP4x2#1", "TP8#0"]
    for instance, read in seen.items():
        facts = {arm: dict(read[arm]["facts"])  # type: ignore[call-overload]
                 for arm in ("baseline", "accelerated")}
        for arm in facts:
            assert not read[arm]["problem"], (instance, read[arm]["problem"])
            assert facts[arm]["pkg:harness.location"] == str(REPO / "harness")
            assert facts[arm]["proc:libs"].split()[0].isdigit()
            assert read[arm]["libs"]
        code = [k for k in facts["baseline"] if k.split(":")[0] in ("proc", "pkg")]
        assert {"proc:exe", "proc:exe_sha256", "proc:cwd", "proc:libs",
                "pkg:harness.files"} <= set(code)
        assert all(facts["baseline"][k] == facts["accelerated"][k] for k in code), instance


def test_a_baseline_shadowing_the_engines_code_from_another_cwd_is_error(
        site: Site, tmp_path: Path) -> None:
    """The review's route: argv, environment and server config identical; the baseline
    runs `cd SHADOW && exec python -m harness.sim.control start ...`, and SHADOW/harness,
    a copy of the package with one line changed, is first on its sys.path."""
    shadow = tmp_path / "shadow"
    shutil.copytree(REPO / "harness", shadow / "harness",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with (shadow / "harness" / "sim" / "engine.py").open("a") as f:
        f.write("# the baseline's own copy: it could do anything\n")
    base = without_spawner(list(site.arm("baseline")["start"]["command"]))  # type: ignore
    acc = without_spawner(list(site.arm("accelerated")["start"]["command"]))  # type: ignore
    script = f"cd {shlex.quote(str(shadow))} && exec " + " ".join(shlex.quote(w) for w in base)
    site.edit({"arms": {"baseline": {"start": {"command": ["sh", "-c", script]}},
                        "accelerated": {"start": {"command": acc}}}})
    out = site.gate("run", "G3", "--force")
    assert out.returncode == 3, out.stdout + out.stderr[-2000:]
    seen = identities(site)
    facts = {arm: dict(seen[arm]["facts"]) for arm in seen}  # type: ignore
    # The route: what the gate compared before is the same on both arms ...
    started = {arm: {k: v for k, v in f.items() if k.split(":")[0] in ("argv", "env", "server")}
               for arm, f in facts.items()}
    cfg = site.arm("accelerated")
    assert compare_arms([started["baseline"]], [started["accelerated"]],
                        list(cfg["differs_by"])).equal  # type: ignore[call-overload]
    # ... and what runs is not.
    assert facts["baseline"]["pkg:harness.location"] == str(shadow / "harness")
    assert facts["baseline"]["proc:cwd"] == str(shadow)
    differ = checks(site)["test_arms_differ_only_by_the_accelerator"]
    assert differ["outcome"] == "ERROR"
    message = str(differ["message"])
    for key in ("proc:cwd", "pkg:harness.files", "pkg:harness.location"):
        assert key in message, message
    assert checks(site)["test_cell"]["outcome"] == "ERROR"
    assert site.query("SELECT count(*) FROM request") == [(0,)]


def _fill(word: str, values: dict[str, str]) -> str:
    for k, v in values.items():
        word = word.replace("{" + k + "}", v)
    return word


def test_an_endpoint_served_by_another_process_is_error_declared_or_not(
        site: Site, tmp_path: Path) -> None:
    """Another accelerated engine, twice as fast, behind a forwarding proxy; the
    layout's port runs the honest one, which is what gate reads."""
    start = without_spawner(list(site.arm("accelerated")["start"]["command"]))  # type: ignore
    state = tmp_path / "fast-engine"
    port = str(free_port())
    values = {"port": port, "tp": "8", "instance": "0", "layout": "TP8"}
    fast = [_fill(w, values) for w in start]
    fast[fast.index("--state-dir") + 1] = str(state)
    fast[fast.index("--speed") + 1] = "60"
    up = subprocess.run(fast, capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, up.stderr
    stop = [sys.executable, "-m", "harness.sim.control", "stop", "--state-dir", str(state)]
    try:
        with lying_proxy(f"http://127.0.0.1:{port}") as url:
            site.edit({"arms": {"accelerated": {"endpoints": {"TP8": [url]}}}})
            out = site.gate("run", "G3", "--force")
            assert out.returncode == 3, out.stdout + out.stderr[-2000:]
            differ = checks(site, 1)["test_arms_differ_only_by_the_accelerator"]
            assert differ["outcome"] == "ERROR"
            assert f"endpoint {url}: its listener is not the inspected engine" in str(
                differ["message"])
            assert "a proxy in between must be declared in arms.accelerated.proxies" in str(
                differ["message"])
            assert checks(site, 1)["test_cell"]["outcome"] == "ERROR"
            # Declared, the proxy is read too: the baseline has none, so the arms differ.
            site.edit({"arms": {"accelerated": {"proxies": {url: {}}}}})
            again = site.gate("run", "G3", "--force")
            assert again.returncode == 3, again.stdout + again.stderr[-2000:]
            differ = checks(site, 2)["test_arms_differ_only_by_the_accelerator"]
            assert differ["outcome"] == "ERROR"
            assert "arms differ in proxy:" in str(differ["message"])
            reading = json.loads(str(site.query(
                "SELECT value FROM host_fact WHERE key = 'engine identity accelerated TP8#0' "
                "ORDER BY id DESC LIMIT 1")[0][0]))
            assert reading["facts"]["proxy:argv:--upstream"] == f"http://127.0.0.1:{port}"
            assert "lying_proxy.py sha256 " in reading["facts"]["proxy:proc:script"]
        assert site.query("SELECT count(*) FROM request") == [(0,)]
    finally:
        subprocess.run(stop, capture_output=True, timeout=60)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
