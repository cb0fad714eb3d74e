"""Import WeasyPrint without ~50 compiler and linker runs.

WeasyPrint opens pango, harfbuzz, fontconfig... through cffi, trying several names for
each library (Windows, macOS and Linux spellings). cffi asks `ctypes.util.find_library`
for every name it cannot open as given, and on Linux that runs `ldconfig -p`, then `gcc`
and `ld`, per name: about 50 processes before the first page, 0.15 s of CPU in them and
more of wall time (a third of WeasyPrint's import on a busy machine; a Chinese one-gate
PDF is held to 3 s, docs/report.md). Here the linker cache is read once and answers those
names while WeasyPrint's libraries load; afterwards `find_library` is what it was.

WeasyPrint also imports fontTools' subsetter and variable-font instancer when it loads
(0.1-0.15 s of CPU, most of it fontTools.varLib), and uses them only where HarfBuzz
cannot subset a font and for variable fonts: both are loaded on first use instead.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import importlib
import importlib.util
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from types import ModuleType

_ENTRY = re.compile(r"^\s*(?P<name>lib\S+?)\.so(?:\.\S+)? \((?P<tags>[^)]*)\) => (?P<path>\S+)")


def _linker_cache() -> dict[str, str] | None:
    """lib name (`libpango-1.0`) -> its soname file from `ldconfig -p`; None when that
    cannot be read (then nothing is changed)."""
    ldconfig = shutil.which("ldconfig") or next(
        (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if shutil.which(p)), None)
    if ldconfig is None:
        return None
    try:
        out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, timeout=10,
                             check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found: dict[str, str] = {}
    for line in out.splitlines():
        m = _ENTRY.match(line)
        if m:  # the first entry is the one the dynamic linker takes
            found.setdefault(m["name"], m["path"].rsplit("/", 1)[-1])
    return found


def _finder(cache: dict[str, str]) -> Callable[[str], str | None]:
    def find(name: str) -> str | None:
        return cache.get(name if name.startswith("lib") else f"lib{name}")
    return find


SUBSET, INSTANCER = "fontTools.subset", "fontTools.varLib.instancer"


def _lazy_subset() -> None:
    """fontTools.subset as a module that loads when an attribute is first read."""
    if SUBSET in sys.modules:
        return
    spec = importlib.util.find_spec(SUBSET)
    if spec is None or spec.loader is None:
        return
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[SUBSET] = module
    spec.loader.exec_module(module)
    setattr(sys.modules["fontTools"], "subset", module)  # noqa: B010 (`from fontTools import subset`)


def _instantiate_variable_font(font: object, limits: object, *, static: bool = False) -> object:
    """fontTools' instantiateVariableFont as WeasyPrint calls it (font, axis values,
    static=True), imported when WeasyPrint first meets a variable font."""
    real = importlib.import_module(INSTANCER)
    return real.instantiateVariableFont(font, limits, static=static)


@contextlib.contextmanager
def _lazy_instancer() -> Iterator[None]:
    """While WeasyPrint imports: `from fontTools.varLib.instancer import
    instantiateVariableFont` finds a stand-in that imports the real one when called."""
    if INSTANCER in sys.modules:
        yield
        return
    stand_in = ModuleType(INSTANCER)
    setattr(stand_in, "instantiateVariableFont", _instantiate_variable_font)  # noqa: B010
    sys.modules[INSTANCER] = stand_in
    try:
        yield
    finally:
        if sys.modules.get(INSTANCER) is stand_in:
            del sys.modules[INSTANCER]


def import_weasyprint() -> ModuleType:
    """`weasyprint`, its native libraries found through the linker cache read once, the
    parts of fontTools it rarely needs loaded when it needs them."""
    if "weasyprint" in sys.modules:
        return _module(sys.modules["weasyprint"])
    importlib.import_module("fontTools")  # the package the lazy subsetter hangs on
    _lazy_subset()
    with _lazy_instancer():
        return _import_weasyprint()


def _import_weasyprint() -> ModuleType:
    cache = _linker_cache()
    original = ctypes.util.find_library
    if cache is not None:
        setattr(ctypes.util, "find_library", _finder(cache))  # noqa: B010 (restored below)
        try:
            import weasyprint
            return _module(weasyprint)
        except OSError:  # a library only gcc or ld find (LD_LIBRARY_PATH): as WeasyPrint does
            for name in [m for m in sys.modules if m.split(".")[0] == "weasyprint"]:
                del sys.modules[name]
        finally:
            setattr(ctypes.util, "find_library", original)  # noqa: B010
    import weasyprint
    return _module(weasyprint)


def _module(value: object) -> ModuleType:
    assert isinstance(value, ModuleType)
    return value
