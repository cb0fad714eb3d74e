"""Write examples/site/gate.yaml from `gate init`'s template with the example site's
values (harness/config/template.py: EXAMPLE_SITE); tests/unit/test_config_template.py
fails when the file and the template differ.

Run: .venv/bin/python scripts/example_site.py
"""

from __future__ import annotations

from pathlib import Path

from harness.config.template import example_site

TARGET = Path(__file__).resolve().parent.parent / "examples" / "site" / "gate.yaml"

if __name__ == "__main__":
    if TARGET.is_symlink():
        TARGET.unlink()  # it once pointed at the hand-written template
    TARGET.write_text(example_site(), encoding="utf-8")
    print(TARGET)
