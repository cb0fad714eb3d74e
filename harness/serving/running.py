"""What code an engine runs, as flat facts the arms are compared on (harness/serving/identity.py).

Why: argv, environment and the server's reported config say how an engine was started,
not what runs. A baseline started in a directory whose copy of the engine's package
shadows the installed one has the same argv and environment (an adversarial review
bought a PASS that way). The facts below name the executable and its digest, the
working directory, the loaded shared objects (a digest and a count; the names go in
`libs` so a difference can show them), the main script, each engine package's version,
location and files, and the model files (harness.probes.process_code reads them).

What could not be read is a problem, never an equal "unreadable" on both sides.
Which packages: `arms.engine_packages` and the top-level of `python -m NAME` (`harness`
for the simulator, `vllm`, `sglang`) must be found; the engine profile's (ENGINE_PACKAGES)
and a console script's name (`/venv/bin/vllm`) are recorded whether found or not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from harness.probes.process_code import ModelFile, ProcessCode
from harness.reasons import Reason, listed

# The Python package each engine profile (harness/loadgen/engines.py) runs; a native
# engine (llama.cpp's llama-server, Ollama, TGI's router) is its executable.
ENGINE_PACKAGES: dict[str, tuple[str, ...]] = {
    "vllm": ("vllm",), "sglang": ("sglang",), "llama-cpp-python": ("llama_cpp",),
}
LIBS = "proc:libs"
WEIGHTS = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".npz", ".ckpt")


@dataclass(frozen=True)
class Running:
    """One process's code facts, what could not be read, and its shared objects."""

    facts: dict[str, str]
    problems: list[str]
    libs: frozenset[str]


def _digest(lines: Sequence[str]) -> str:
    return hashlib.sha256("".join(line + "\n" for line in lines).encode()).hexdigest()


def _files(files: Sequence[ModelFile]) -> str:
    size = sum(f.size or 0 for f in files)
    return (f"{len(files)} files, {size} bytes, sha256 "
            + _digest([f"{f.name} {f.size} {f.digest}" for f in files]))


def running_facts(code: ProcessCode, expected: Sequence[str] = (),
                  model_arg: str | None = None) -> Running:
    """Facts `proc:*`, `pkg:NAME.*`, `model:*` of one process; `expected` packages must
    be found (the engine's), others (a guess from a console script's name) may not be."""
    facts: dict[str, str] = {}
    problems: list[str] = []
    pid = code.pid
    if code.gone:
        return Running({}, [f"pid {pid} exited while its code was read"], frozenset())

    def need(key: str, value: str | None, what: str) -> None:
        facts[key] = value if value is not None else "unreadable"
        if value is None:
            problems.append(f"the {what} of pid {pid} is not readable")

    need("proc:exe", code.exe, "executable")
    need("proc:exe_sha256", None if code.exe_sha256 is None else
         f"{code.exe_sha256} ({code.exe_size} bytes)", "executable's content")
    need("proc:cwd", code.cwd, "working directory")
    libs = frozenset(code.libs or ())
    need(LIBS, None if code.libs is None else
         f"{len(libs)} shared objects, sha256 {_digest(sorted(libs))}", "memory map")
    if code.script is not None:
        need("proc:script", None if code.script_sha256 is None else
             f"{code.script} sha256 {code.script_sha256}", f"main script {code.script}")
    _packages(code, expected, facts, problems)
    _model(code, model_arg, facts, problems)
    return Running(facts, problems, libs)


def _packages(code: ProcessCode, expected: Sequence[str], facts: dict[str, str],
              problems: list[str]) -> None:
    pid = code.pid
    if expected and code.python is None:
        problems.append(f"the interpreter of pid {pid} could not be run to locate "
                        f"{', '.join(expected)} (its argv[0] does not resolve to its "
                        "executable)")
    for pkg in code.packages:
        key = f"pkg:{pkg.name}"
        if not pkg.found:
            facts[f"{key}.location"] = "not found"
            if pkg.name in expected:
                problems.append(f"package {pkg.name} is not found by pid {pid}'s interpreter")
            continue
        facts[f"{key}.version"] = f"{pkg.dist or '-'} {pkg.version or '-'}"
        facts[f"{key}.location"] = pkg.location or "unreadable"
        if pkg.files is None or pkg.listed is None or pkg.digest is None:
            facts[f"{key}.files"] = "unreadable"
            problems.append(f"the files of package {pkg.name} ({pkg.location}) are not "
                            "readable")
        else:
            facts[f"{key}.files"] = f"{pkg.files} files, sha256 {pkg.digest}"
            if pkg.files < pkg.listed:
                problems.append(f"{pkg.listed - pkg.files} of {pkg.listed} files of "
                                f"package {pkg.name} ({pkg.location}) are not readable")


def _model(code: ProcessCode, model_arg: str | None, facts: dict[str, str],
           problems: list[str]) -> None:
    if code.model_missing:
        facts["model:path"] = "not found"
        problems.append(f"the model {model_arg or ''} of pid {code.pid} was not found on "
                        "its host (neither a path nor a Hugging Face hub snapshot)")
        return
    model = code.model
    if model is None:
        if model_arg and "://" in model_arg:
            facts["model:path"] = f"remote: {model_arg}"  # read by the engine, not here
        return
    facts["model:path"] = model.path
    config = next((f for f in model.files if f.name == "./config.json"), None)
    facts["model:config"] = (config.digest or "unreadable") if config else "absent"
    weights = [f for f in model.files if f.name.endswith(WEIGHTS)]
    other = [f for f in model.files if not f.name.endswith(WEIGHTS)]
    facts["model:weights"] = _files(weights)
    facts["model:files"] = _files(other)
    bad = [f.name for f in model.files if f.digest is None]
    if bad:
        problems.append(f"{len(bad)} model file(s) of pid {code.pid} not readable: "
                        + ", ".join(bad[:3]))


def libs_detail(baseline: frozenset[str], accelerated: frozenset[str], shown: int = 4) -> str:
    """The shared objects only one side maps, by file name, for a difference's message."""
    def names(paths: frozenset[str]) -> str:
        base = sorted({p.rsplit("/", 1)[-1] for p in paths})
        more = len(base) - shown
        return ", ".join(base[:shown]) + (f" and {more} more" if more > 0 else "")

    parts = [f"only baseline: {names(baseline - accelerated)}" if baseline - accelerated
             else "", f"only accelerated: {names(accelerated - baseline)}"
             if accelerated - baseline else ""]
    return "; ".join(p for p in parts if p)


def libs_detail_why(baseline: frozenset[str], accelerated: frozenset[str],
                    shown: int = 4) -> Reason:
    """`libs_detail` as a Reason (harness.reasons), for the report's languages."""
    def only(arm: str, paths: frozenset[str]) -> Reason:
        base = sorted({p.rsplit("/", 1)[-1] for p in paths})
        more = len(base) - shown
        return Reason("g3.libs_only", {
            "arm": arm, "names": ", ".join(base[:shown]),
            "more": Reason("g3.more_files", {"n": more}) if more > 0 else ""})

    return listed([only(arm, paths) for arm, paths in (
        ("baseline", baseline - accelerated), ("accelerated", accelerated - baseline))
        if paths])
