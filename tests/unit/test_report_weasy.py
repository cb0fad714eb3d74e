"""WeasyPrint's import without the parts of fontTools it rarely needs (harness/report/
weasy.py): its subsetter loads when first used, its variable-font instancer when first
called, and both still work. In a fresh interpreter, as `gate report` imports it."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = r"""
import json, sys
from harness.report.weasy import import_weasyprint
import_weasyprint()
before = {m: m in sys.modules for m in ("fontTools.varLib", "fontTools.varLib.instancer")}
from weasyprint.pdf import fonts
from fontTools import subset
options = subset.Options()  # the first attribute read loads the real subsetter
from fontTools.fontBuilder import FontBuilder
fb = FontBuilder(1000, isTTF=True)  # a tiny variable font, made here: none ships
fb.setupGlyphOrder([".notdef"])
fb.setupCharacterMap({})
from fontTools.pens.ttGlyphPen import TTGlyphPen
fb.setupGlyf({".notdef": TTGlyphPen(None).glyph()})
fb.setupHorizontalMetrics({".notdef": (500, 0)})
fb.setupHorizontalHeader()
fb.setupNameTable({"familyName": "V", "styleName": "R"})
fb.setupOS2()
fb.setupPost()
fb.setupFvar([("wght", 100, 400, 900, "Weight")], [])
static = fonts.instantiateVariableFont(fb.font, {"wght": 700}, static=True)
print(json.dumps({"before": before, "stand_in": fonts.instantiateVariableFont.__module__,
                  "subset": type(options).__module__, "fvar": "fvar" in static,
                  "instancer": "fontTools.varLib.instancer" in sys.modules}))
"""


def test_fonttools_parts_load_on_first_use_and_work() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True, timeout=120)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["before"] == {"fontTools.varLib": False, "fontTools.varLib.instancer": False}
    assert seen["stand_in"] == "harness.report.weasy"  # what WeasyPrint holds
    assert seen["subset"] == "fontTools.subset"  # the real Options, loaded on first read
    assert seen["fvar"] is False and seen["instancer"] is True  # instanced to a static font
