"""Evidence packs: what a customer's auditor needs to check a report, in one tar.gz.

    <pack>/manifest.json        sha256 + size of every other file, runs, row counts
    <pack>/store.sqlite         only these runs' rows (a fresh store at the same schema)
    <pack>/report/report.pdf    the rendered report (+ .html and the model as JSON)
    <pack>/artifacts/run<N>/... the runs' raw artifact files as recorded in the store

`verify_pack` re-hashes every member against the manifest and names each file that is
changed, missing or not listed.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

from harness import __version__
from harness.digests import sha256_file, sha256_stream
from harness.errors import GateError, UsageError
from harness.report.build import build_campaign_report, build_run_report
from harness.report.fonts import choose_fonts
from harness.report.frames import campaign_run_ids, load_run
from harness.report.i18n import translator
from harness.report.model import Report
from harness.report.redact import redact_text
from harness.store.copy import close_for_copy, copy_runs
from harness.store.db import Store

PACK_FORMAT = "gate-evidence-pack"
PACK_VERSION = 1


class PackMismatchError(GateError):
    """An evidence pack's files do not match its manifest (exit 3, files named)."""


def _copy_artifacts(store: Store, run_ids: list[int], root: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for rid in run_ids:
        frames = load_run(store, rid, with_requests=False)
        used: set[str] = set()
        for a in frames.artifacts.itertuples(index=False):
            src = Path(str(a.path))
            name = src.name or "artifact"
            while name in used:
                name = f"{len(used)}-{src.name}"
            used.add(name)
            rel = f"artifacts/run{rid}/{name}"
            entry: dict[str, Any] = {"run_id": rid, "source": str(src), "pack_path": rel,
                                     "sha256_recorded": str(a.sha256)}
            if not src.is_file():
                entry["status"] = "missing"
            else:
                dest = root / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, dest)
                found = sha256_file(dest)
                entry["sha256_found"] = found
                entry["status"] = "ok" if found == entry["sha256_recorded"] else "changed"
            out.append(entry)
    return out


def _report(store: Store, run_ids: list[int], campaign: str | None, lang: str) -> Report:
    t = translator(lang)
    fonts = choose_fonts(lang)
    if campaign is not None:
        return build_campaign_report(store, campaign, t, fonts)
    return build_run_report(store, run_ids[0], t, fonts)


def export_pack(store: Store, out: Path, *, run_id: int | None = None,
                campaign: str | None = None, lang: str = "en") -> tuple[Path, list[str]]:
    """Write the pack; returns its path and warnings (missing / changed artifacts)."""
    from harness.report.api import write_report
    from harness.store.db import known_revisions

    if (run_id is None) == (campaign is None):
        raise UsageError("give a run id or --campaign NAME, not both", key="gate export")
    if not out.parent.is_dir():
        raise UsageError(f"directory {out.parent} does not exist", key="-o")
    if run_id is not None:
        load_run(store, run_id, with_requests=False)  # names a missing run as a UsageError
        run_ids = [run_id]
    else:
        assert campaign is not None
        run_ids = campaign_run_ids(store, campaign)
        if not run_ids:
            raise UsageError(f"campaign {campaign!r} has no runs", key="--campaign")
    report = _report(store, run_ids, campaign, lang)
    top = out.name.removesuffix(".gz").removesuffix(".tgz").removesuffix(".tar") or "pack"
    with tempfile.TemporaryDirectory(prefix="gate-pack-") as tmp:
        root = Path(tmp) / top
        (root / "report").mkdir(parents=True)
        pack_store = Store(f"sqlite:///{root / 'store.sqlite'}")
        copied = copy_runs(store, pack_store, run_ids)
        close_for_copy(pack_store)
        artifacts = _copy_artifacts(store, run_ids, root)
        write_report(report, root / "report" / "report", "both")
        (root / "report" / "report-model.json").write_text(
            report.model_dump_json(indent=1), encoding="utf-8")
        files = {p.relative_to(root).as_posix(): {"sha256": sha256_file(p),
                                                  "size": p.stat().st_size}
                 for p in sorted(root.rglob("*")) if p.is_file()}
        manifest = {
            "format": PACK_FORMAT, "version": PACK_VERSION, "harness_version": __version__,
            "report_schema": report.schema_version, "store_schema": known_revisions()[1],
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "source_store": redact_text(store.url), "campaign": campaign, "runs": run_ids,
            "rows": copied.rows, "tables_not_copied": copied.skipped,
            "artifacts": artifacts, "files": files,
        }
        (root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True),
                                            encoding="utf-8")
        with tarfile.open(out, "w:gz") as tar:
            tar.add(root, arcname=top)
    warnings = [f"artifact {a['source']} of run {a['run_id']} is {a['status']}"
                for a in artifacts if a["status"] != "ok"]
    return out, warnings


def _safe_member(name: str) -> bool:
    p = PurePosixPath(name)
    return not p.is_absolute() and ".." not in p.parts


def verify_pack(path: Path) -> int:
    """Check every file against the manifest; returns the number of files verified."""
    try:
        tar = tarfile.open(path, "r:*")  # noqa: SIM115 (closed by the with below)
    except (OSError, tarfile.TarError) as exc:
        raise UsageError(f"not a readable evidence pack: {exc}", file=str(path)) from None
    with tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        manifests = [m for m in members if PurePosixPath(m.name).name == "manifest.json"
                     and len(PurePosixPath(m.name).parts) <= 2]
        if len(manifests) != 1:
            raise UsageError("no manifest.json in the pack", file=str(path))
        top = PurePosixPath(manifests[0].name).parent
        raw = tar.extractfile(manifests[0])
        try:
            manifest = json.load(io.TextIOWrapper(raw, encoding="utf-8")) if raw else {}
        except ValueError:
            raise PackMismatchError("manifest.json is not valid JSON", file=str(path)) from None
        if manifest.get("format") != PACK_FORMAT:
            raise UsageError("not a gate evidence pack (manifest format)", file=str(path))
        listed: dict[str, dict[str, Any]] = dict(manifest.get("files") or {})
        problems: list[str] = []
        seen: set[str] = set()
        for m in members:
            if m is manifests[0]:
                continue
            if not _safe_member(m.name):
                problems.append(f"{m.name} (unsafe path)")
                continue
            rel = PurePosixPath(m.name).relative_to(top).as_posix()
            seen.add(rel)
            entry = listed.get(rel)
            if entry is None:
                problems.append(f"{rel} (not in the manifest)")
                continue
            f = tar.extractfile(m)
            if f is None or sha256_stream(f) != entry.get("sha256"):
                problems.append(f"{rel} (sha256 differs)")
        problems += [f"{rel} (missing)" for rel in sorted(set(listed) - seen)]
    if problems:
        raise PackMismatchError(f"{len(problems)} file(s) do not match the manifest: "
                                + ", ".join(problems), file=str(path))
    return len(seen)
