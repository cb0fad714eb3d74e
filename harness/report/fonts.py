"""Pick the fonts through fontconfig; nothing is downloaded.

Chinese needs a CJK font. WenQuanYi Micro Hei is preferred because WeasyPrint subsets it in
about a second, where Noto CJK costs 8-16 s per PDF (PLATFORM-NOTES). Latin text uses
DejaVu Sans; the CJK font is the fallback so CJK characters in names render in English
reports too.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from harness.errors import UsageError

LATIN_FAMILY = "DejaVu Sans"
# Fast to subset first, then the rest of what Debian ships; Noto CJK last (slow).
PREFERENCE = ("wqy-microhei", "wqy-zenhei", "droid", "arphic", "noto")
INSTALL_HINT = "install fonts-wqy-microhei (apt-get install fonts-wqy-microhei)"


@dataclass(frozen=True)
class FontChoice:
    family: str
    file: str


@dataclass(frozen=True)
class Fonts:
    cjk: FontChoice | None

    def css_stack(self) -> str:
        names = [LATIN_FAMILY] + ([self.cjk.family] if self.cjk else [])
        return ", ".join(f'"{n}"' for n in names) + ", sans-serif"

    def families(self) -> list[str]:
        return [LATIN_FAMILY] + ([self.cjk.family] if self.cjk else [])


def _rank(path: str) -> int:
    low = path.lower()
    for i, key in enumerate(PREFERENCE):
        if key in low:
            return i
    return len(PREFERENCE)


def find_cjk_font() -> FontChoice | None:
    """The best installed font that covers Chinese, or None."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return None
    try:
        out = subprocess.run([fc_list, ":lang=zh", "--format", "%{file}\t%{family[0]}\n"],
                             capture_output=True, text=True, timeout=30, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = []
    for line in out.splitlines():
        path, _, family = line.partition("\t")
        if path and family and "mono" not in family.lower():
            found.append(FontChoice(family=family.strip(), file=path.strip()))
    if not found:
        return None
    return min(found, key=lambda f: (_rank(f.file), f.file))


def choose_fonts(lang: str) -> Fonts:
    """Fonts for a report; a Chinese report without a CJK font is a usage error."""
    cjk = find_cjk_font()
    if lang == "zh" and cjk is None:
        raise UsageError("no Chinese font found through fontconfig", key="--lang zh",
                         hint=INSTALL_HINT)
    return Fonts(cjk=cjk)
