"""What `arms.accelerated.differs_by` may allow, and which of it needs a reviewer.

Why here: `differs_by` decides what G3 compares, so it is a decision setting. A pattern
that allows everything of a kind (`*`, `env:*`, `argv:--*`) would let any engine flag
through and is refused at load (exit 4). A pattern that names what the site's
accelerator is documented to change (its knobs, below) is the ordinary case; any other
pattern is allowed but weakens the test: a run it decides needs a reviewer's sign-off
(harness/config/decision.py), and page 1 lists it. The code an engine runs (its
executable, working directory, packages, model files, loaded libraries) and the
interpreter / preload variables may differ only by a pattern that names the key exactly.

The knobs, per engine family, from each project's own documentation:
- vLLM + LMCache: `--kv-transfer-config '{"kv_connector":"LMCacheConnectorV1",...}'` and
  LMCache's `LMCACHE_*` variables (docs.lmcache.ai "Configurations"; NVIDIA Dynamo's
  LMCache integration page lists LMCACHE_CHUNK_SIZE, LMCACHE_LOCAL_CPU,
  LMCACHE_MAX_LOCAL_CPU_SIZE).
- SGLang HiCache: `--enable-hierarchical-cache` and the `--hicache-*` flags
  (`--hicache-ratio`, `--hicache-size`, `--hicache-io-backend`, `--hicache-write-policy`,
  `--hicache-mem-layout`, `--hicache-storage-backend`, `--hicache-storage-prefetch-policy`;
  sglang docs/advanced_features/hicache_best_practices.md), and `SGLANG_HICACHE_*`
  variables (SGLANG_HICACHE_HF3FS_CONFIG_PATH, sglang benchmark/hf3fs).
- the simulator (harness/sim): `--external-tier`, `--tier-dir`, `--url-file` (each arm's
  own state file) and what its card reports of the tier.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable

# The prefixes of the compared facts (harness/serving/identity.py). `proxy:` holds a declared
# proxy's facts under the same prefixes (`proxy:argv:--port`).
PREFIXES = ("argv", "env", "server", "proc", "pkg", "model")
PROXY = "proxy"
# Facts of what code runs: executable, cwd, libraries, packages, model files.
CODE_PREFIXES = ("proc", "pkg", "model")

# Variables that choose which code an interpreter or the dynamic linker loads: a
# difference in one of them is a difference in the code that runs, never session noise
# (harness/serving/identity.py keeps them out of NOISE_ENV).
INTERPRETER_ENV = frozenset({
    "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH", "PYTHONPLATLIBDIR", "PYTHONEXECUTABLE",
    "PYTHONDONTWRITEBYTECODE", "PYTHONOPTIMIZE", "PYTHONINSPECT", "PYTHONWARNINGS",
    "VIRTUAL_ENV", "CONDA_PREFIX", "PATH",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_BIND_NOW", "LD_BIND_NOT",
    "LD_DYNAMIC_WEAK", "LD_HWCAP_MASK", "LD_ORIGIN_PATH", "LD_PROFILE",
    "CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST", "TORCHINDUCTOR_CACHE_DIR",
    "TRITON_CACHE_DIR", "VLLM_CACHE_ROOT", "HF_HOME", "HF_HUB_CACHE",
    "TRANSFORMERS_CACHE", "HF_HUB_OFFLINE",
})

KNOBS: dict[str, tuple[str, ...]] = {
    "vllm": ("argv:--kv-transfer-config", "env:LMCACHE_*"),
    "sglang": ("argv:--enable-hierarchical-cache", "argv:--hicache-*", "env:SGLANG_HICACHE_*"),
    "simulator": ("argv:--external-tier", "argv:--tier-dir", "argv:--url-file",
                  "server:gate_sim*external_tier"),
}

# Keys no narrow pattern matches; one that does matches every key of its prefix.
_PROBES = ("zq9-gate-probe", "ZQ9_GATE_PROBE", "zq9_gate_probe.zq9", "#99", "program", "zq9")
_WILD = re.compile(r"\[[^\]]*\]|[*?]")
MIN_LITERAL = 3  # characters of a wildcard pattern's longest literal run


def _prefix(pattern: str) -> tuple[str, str] | None:
    """(prefix, rest) of a pattern that starts with a known prefix literally, with a
    declared proxy's `proxy:` in front of it kept in the prefix."""
    head = ""
    if pattern.startswith(PROXY + ":"):
        head, pattern = PROXY + ":", pattern[len(PROXY) + 1:]
    name, sep, rest = pattern.partition(":")
    if not sep or name not in PREFIXES:
        return None
    return head + name, rest


def _longest_literal(rest: str) -> int:
    return max((len(run.lstrip("-")) for run in _WILD.split(rest)), default=0)


def broad(pattern: str) -> str | None:
    """Why a differs_by pattern is refused (too broad to be a decision), else None."""
    split = _prefix(pattern)
    if split is None:
        return ("must start with one of " + ", ".join(p + ":" for p in PREFIXES)
                + f" (or {PROXY}: and one of them)")
    prefix, rest = split
    if not rest:
        return "names no key after its prefix"
    for probe in _PROBES:
        for key in (f"{prefix}:{probe}", f"{prefix}:--{probe}", f"{prefix}:-{probe}"):
            if fnmatch.fnmatchcase(key, pattern):
                return f"matches every key of {prefix}: (e.g. {key})"
    if not _WILD.search(rest):
        return None  # an exact key
    if _longest_literal(rest) < MIN_LITERAL:
        return (f"a wildcard pattern needs at least {MIN_LITERAL} literal characters after "
                f"{prefix}: to say what it allows")
    bare = prefix.removeprefix(PROXY + ":")
    if bare in CODE_PREFIXES:
        return f"what code runs ({bare}:) may differ only by a key named exactly"
    hit = next((v for v in sorted(INTERPRETER_ENV) if bare == "env"
                and fnmatch.fnmatchcase(f"{prefix}:{v}", pattern)), None)
    if hit is not None:
        return f"matches the interpreter / preload variable {hit}: name it exactly"
    return None


def families(engine: str | None, simulated: bool) -> tuple[str, ...]:
    """Whose knobs count as documented: the configured engine's (every family's when it
    is detected: the simulator's flags name nothing in a real engine), and the
    simulator's on a simulated site."""
    named = tuple(KNOBS) if engine is None else ((engine,) if engine in KNOBS else ())
    return (*named, *(("simulator",) if simulated and "simulator" not in named else ()))


def documented(pattern: str, engine: str | None, simulated: bool) -> bool:
    """A knob of the site's accelerator: one of the listed patterns, or an exact key one
    of them matches (`env:LMCACHE_CHUNK_SIZE`)."""
    knobs = [k for f in families(engine, simulated) for k in KNOBS[f]]
    if pattern in knobs:
        return True
    return not _WILD.search(pattern) and any(fnmatch.fnmatchcase(pattern, k) for k in knobs)


def undocumented(patterns: Iterable[str], engine: str | None,
                 simulated: bool) -> list[str]:
    return [p for p in patterns if not documented(p, engine, simulated)]
