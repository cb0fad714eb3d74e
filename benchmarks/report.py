"""Report rendering speed and memory (issue 8's targets), printed as numbers and ratios.

1. A G4-sized run: 1 000 000 request rows and 4 000 soak windows (the soak_window table,
   G4's section with its windows plot) -> HTML + PDF. Target <= 20 s and <= 1.5 GB RSS.
2. A one-gate (G3) PDF in Chinese, timed as the user runs it (`gate report RUN --lang zh`,
   a fresh process: imports, fonts and all). Target <= 3 s on a quiet 2-core machine
   (issue 27 item 6; it was 5 s).

Each render runs in its own process so its peak RSS is its own, not the fill's.

    .venv/bin/python benchmarks/report.py [--requests N] [--windows N] [--repeat N]
        [--g4-format both|html|pdf]

The test suite runs it tiny: a few rows, `--repeat 0` (no `gate report` timings; the one
zh PDF split into imports, build and PDF is still rendered) and `--g4-format html`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ZH_TARGET_S = 3.0  # one-gate zh PDF, `gate report` wall time
sys.path.insert(0, str(REPO / "tests"))


def render_child(db: str, run_id: int, out: str, lang: str, fmt: str) -> None:
    """Child mode: render once, print seconds per stage (wall, and CPU: on a loaded
    machine the wall time is mostly waiting for a core) and peak RSS as JSON. The
    collector is paced as `gate report` paces it (harness/report/pace.py)."""
    from harness.report.pace import fewer_collections

    with fewer_collections():
        _render_child(db, run_id, out, lang, fmt)


def _render_child(db: str, run_id: int, out: str, lang: str, fmt: str) -> None:
    t0, c0 = time.perf_counter(), time.process_time()
    from harness.report.weasy import import_weasyprint

    import_weasyprint()  # as write_pdf imports it; its cost counted with the imports

    from harness.report.api import write_report
    from harness.report.build import build_run_report
    from harness.report.fonts import choose_fonts
    from harness.report.i18n import translator
    from harness.store.db import Store

    t1, c1 = time.perf_counter(), time.process_time()
    store = Store(db)
    report = build_run_report(store, run_id, translator(lang), choose_fonts(lang))
    t2, c2 = time.perf_counter(), time.process_time()
    paths = write_report(report, Path(out), fmt)
    t3, c3 = time.perf_counter(), time.process_time()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    try:  # asked here, where weasyprint is loaded anyway (importing it costs ~1.5 s)
        from weasyprint.text.ffi import harfbuzz_subset  # type: ignore[attr-defined]

        harfbuzz = "yes" if harfbuzz_subset else "no (fontTools: slower)"
    except ImportError:
        harfbuzz = "unknown"
    print(json.dumps({"imports": t1 - t0, "build": t2 - t1, "write": t3 - t2,
                      "total": t3 - t0, "cpu": {"imports": c1 - c0, "build": c2 - c1,
                                                "write": c3 - c2, "total": c3 - c0},
                      "rss_mb": rss, "harfbuzz": harfbuzz,
                      "sizes_kb": [p.stat().st_size // 1024 for p in paths]}))


def child(db: str, run_id: int, out: Path, lang: str, fmt: str) -> dict[str, Any]:
    res = subprocess.run([sys.executable, __file__, "--child", db, str(run_id), str(out), lang,
                          fmt], capture_output=True, text=True, check=True)
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=1_000_000)
    ap.add_argument("--windows", type=int, default=4000)
    ap.add_argument("--repeat", type=int, default=3,
                    help="`gate report` runs timed (0: none, only the split render)")
    ap.add_argument("--g4-format", choices=("both", "html", "pdf"), default="both")
    ap.add_argument("--child", nargs=5, metavar=("DB", "RUN", "OUT", "LANG", "FMT"))
    args = ap.parse_args()
    if args.child:
        db, run, out, lang, fmt = args.child
        render_child(db, int(run), out, lang, fmt)
        return

    from report_support import fill

    from harness.store.db import Store

    with tempfile.TemporaryDirectory(prefix="gate-report-bench-") as tmp:
        root = Path(tmp)
        db = f"sqlite:///{root / 'gate.db'}"
        store = Store(db)
        t = time.perf_counter()
        g4 = fill.g4_run(store, windows=args.windows, requests=args.requests)
        fill_s = time.perf_counter() - t
        g3, _ = fill.g3_run(store, fill.PASS_PLANS, simulated=True)
        store.close()
        print(f"fill: G4 run {args.requests:,} requests + {args.windows:,} windows "
              f"in {fill_s:.1f} s (store API, batched inserts)")

        big = child(db, g4, root / "g4", "en", args.g4_format)
        shown = {"both": "HTML + PDF", "html": "HTML", "pdf": "PDF"}[args.g4_format]
        print(f"G4-sized run -> {shown}: {big['total']:.2f} s "
              f"(imports {big['imports']:.2f}, build {big['build']:.2f}, "
              f"write {big['write']:.2f}); peak RSS {big['rss_mb']:.0f} MB; "
              f"sizes {big['sizes_kb']} KB")
        print(f"  vs target 20 s: {big['total'] / 20:.2f}x of budget; "
              f"RSS vs 1.5 GB: {big['rss_mb'] / 1536:.2f}x of budget")

        walls, cpus = [], []
        for i in range(args.repeat):
            t = time.perf_counter()
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-m", "harness", "report", str(g3), "--db", db,
                            "--lang", "zh", "-o", str(root / f"g3-zh-{i}.pdf")],
                           check=True, capture_output=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            walls.append(time.perf_counter() - t)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        split = child(db, g3, root / "g3-split.pdf", "zh", "pdf")
        cpu = split["cpu"]
        parts = (f"imports {split['imports']:.2f}, build {split['build']:.2f}, "
                 f"PDF {split['write']:.2f}; CPU imports {cpu['imports']:.2f}, build "
                 f"{cpu['build']:.2f}, PDF {cpu['write']:.2f}, {cpu['total']:.2f} in all")
        if walls:
            print(f"one-gate G3 PDF, zh, `gate report` wall: min {min(walls):.2f} s, median "
                  f"{statistics.median(walls):.2f} s over {len(walls)} ({parts}); "
                  f"CPU {min(cpus):.2f} s; vs target {ZH_TARGET_S:g} s: "
                  f"{min(walls) / ZH_TARGET_S:.2f}x of budget")
        else:  # --repeat 0
            print(f"one-gate G3 PDF, zh, in one process: {split['total']:.2f} s ({parts}); "
                  "`gate report` not timed (--repeat 0)")
        print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"HarfBuzz subsetting: {split['harfbuzz']}")


if __name__ == "__main__":
    main()
