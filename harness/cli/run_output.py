"""A finished run for machines: `gate run --json` (its verdict and checks on stdout) and
`--junit-xml FILE` (its checks as pytest's --junit-xml writes them, for CI systems).

Why from the store and not pytest's own junitxml: a check's outcome is the gate's word
(PASS, STOP-LOSS, INCONCLUSIVE, ERROR, SKIPPED) as stored and reported, not pytest's
passed / failed; a CI dashboard must show what the report shows. The run's verdict and
reason ride along as testsuite properties.
"""

from __future__ import annotations

import datetime as dt
import socket
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.runner import RunOutcome
    from harness.store import Store

# The gate's outcome -> the JUnit element pytest writes for a test that ended so (PASS:
# none). INCONCLUSIVE is not a pass: a failure, its word first in the message.
JUNIT_ELEMENT = {"STOP-LOSS": "failure", "INCONCLUSIVE": "failure", "ERROR": "error",
                 "SKIPPED": "skipped"}


def run_result(store: Store, gate: str, outcome: RunOutcome) -> dict[str, Any]:
    """The run as `gate run --json` prints it: verdict, exit code, marks, every check."""
    from harness.cli.run_view import iso, number
    from harness.labels import check_label
    from harness.store import runs as store_runs

    row = store_runs.get_run(store, outcome.run_id)
    return {
        "run": outcome.run_id, "gate": gate, "verdict": outcome.verdict.value,
        "exit_code": outcome.exit_code, "reason": outcome.reason, "status": outcome.status,
        "partial": outcome.partial, "needs_signoff": outcome.needs_signoff,
        "started_at": iso(row.started_at), "finished_at": iso(row.finished_at),
        "checks": [{"name": c.name, "label": check_label(gate, c.nodeid, c.name),
                    "nodeid": c.nodeid, "host": c.host, "outcome": c.outcome,
                    "message": c.message, "expected": c.expected,
                    "measured": number(c.measured), "stage": c.stage,
                    "duration": round(c.duration, 3)}
                   for c in store_runs.checks(store, outcome.run_id)],
    }


def junit_xml(result: dict[str, Any]) -> bytes:
    """`result` (run_result) as pytest's --junit-xml document (xunit2): one testsuite
    named for the gate, one testcase per check (classname: the check's module, name: the
    check and its host)."""
    checks = result["checks"]
    counts = {k: sum(1 for c in checks if JUNIT_ELEMENT.get(c["outcome"]) == k)
              for k in ("error", "failure", "skipped")}
    root = ET.Element("testsuites", name=f"gate {result['gate']}")
    suite = ET.SubElement(root, "testsuite", {
        "name": str(result["gate"]), "errors": str(counts["error"]),
        "failures": str(counts["failure"]), "skipped": str(counts["skipped"]),
        "tests": str(len(checks)),
        "time": f"{sum(float(c['duration']) for c in checks):.3f}",
        "timestamp": str(result["started_at"] or dt.datetime.now(dt.UTC).isoformat()),
        "hostname": socket.gethostname()})
    props = ET.SubElement(suite, "properties")
    for key in ("run", "verdict", "exit_code", "reason", "status", "partial",
                "needs_signoff"):
        ET.SubElement(props, "property", name=key, value=str(result[key]))
    for c in checks:
        module = str(c["nodeid"]).split("::", 1)[0].removesuffix(".py").replace("/", ".")
        name = str(c["name"]) + (f"[{c['host']}]" if c["host"] else "")
        case = ET.SubElement(suite, "testcase", classname=module, name=name,
                             time=f"{float(c['duration']):.3f}")
        element = JUNIT_ELEMENT.get(str(c["outcome"]))
        if element is None:
            continue
        message = str(c["message"]) if element == "skipped" else \
            f"{c['outcome']}: {c['message']}"
        body = ET.SubElement(case, element, message=message)
        if element == "skipped":
            body.set("type", "gate.skip")
        body.text = "\n".join(f"{k}: {c[k]}" for k in ("label", "expected", "measured",
                                                        "stage") if c[k] not in ("", None))
    doc: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=False)
    return b'<?xml version="1.0" encoding="utf-8"?>' + doc


def write_junit(path: Path, result: dict[str, Any]) -> None:
    """The document written whole, replacing `path` only once complete (a CI system
    reading it half written would count the missing checks as never run)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(junit_xml(result))
    tmp.replace(path)
