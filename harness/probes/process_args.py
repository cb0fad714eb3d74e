"""What to read of a process's code, derived from its argv and environment (pure).

Why separate from the probe: these are guesses about how an engine was launched (which
interpreter, which package, which model) and each one is a rule worth a unit test; the
probe (harness.probes.process_code) only reads what they name.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence

from harness.probes.code_script import CodeQuery

_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Python options that take a value (`-W ignore`, `-Wignore`, `-X dev`, ...).
_VALUED = frozenset("WX")
# Options naming the model, across engines (vLLM --model, SGLang --model-path, TGI
# --model-id, llama.cpp -m / --model); vLLM's `serve MODEL` is positional.
MODEL_OPTIONS = ("--model", "--model-path", "--model_path", "--model-id")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


def is_python(exe: str | None, argv: Sequence[str]) -> bool:
    """A CPython interpreter: its executable's (or argv[0]'s) name is pythonX.Y."""
    names = [posixpath.basename(exe or ""), posixpath.basename(argv[0]) if argv else ""]
    return any(_PYTHON.match(n.removesuffix(" (deleted)")) for n in names if n)


def python_main(argv: Sequence[str]) -> tuple[str, str] | None:
    """("module", NAME) for `python [opts] -m NAME`, ("script", PATH) for `python [opts]
    PATH`, None for -c, stdin or no main."""
    i = 1
    while i < len(argv):
        word = argv[i]
        if word == "--check-hash-based-pycs":
            i += 2
            continue
        if word == "--":
            return ("script", argv[i + 1]) if i + 1 < len(argv) else None
        if word == "-" or not word.startswith("-"):
            return None if word == "-" else ("script", word)
        if word.startswith("--"):  # --version, --help ...
            i += 1
            continue
        body, j = word[1:], 0
        while j < len(body):
            ch = body[j]
            if ch in "mc" or ch in _VALUED:
                value = body[j + 1:] or (argv[i + 1] if i + 1 < len(argv) else "")
                if ch == "m":
                    return ("module", value) if value else None
                if ch == "c":
                    return None
                i += 0 if body[j + 1:] else 1
                break
            j += 1
        i += 1
    return None


def interpreters(argv0: str, env: Mapping[str, str] | None) -> tuple[str, ...]:
    """Where argv[0] may be: itself when it names a path (relative to the process's cwd),
    else each directory of the process's PATH. The probe runs the first that is the
    process's executable, so a venv's bin/python stays the venv's."""
    if not argv0:
        return ()
    if "/" in argv0:
        return (argv0,)
    path = (env or {}).get("PATH", "")
    return tuple(posixpath.join(d or ".", argv0) for d in path.split(":"))[:32]


def packages(argv: Sequence[str], configured: Sequence[str],
             profile: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(expected, guessed): the packages to locate. Expected ones (configured, the
    top-level of `-m NAME`) must be found; the engine profile's (a site may name the
    engine its simulator stands in for) and a console script's name (`/venv/bin/vllm` ->
    vllm) are guesses that may not be packages: recorded either way."""
    expected = list(configured)
    guessed: list[str] = list(profile)
    main = python_main(argv)
    if main is not None and main[0] == "module":
        expected.append(main[1].split(".")[0])
    elif main is not None:
        name = posixpath.basename(main[1]).replace("-", "_").removesuffix(".py")
        if posixpath.basename(posixpath.dirname(main[1])) == "bin":
            guessed.append(name)
    exp = tuple(dict.fromkeys(n for n in expected if _NAME.match(n)))
    return exp, tuple(n for n in dict.fromkeys(guessed) if _NAME.match(n) and n not in exp)


def model_argument(argv: Sequence[str], python: bool) -> str | None:
    """The model the engine was given: MODEL_OPTIONS (`-m` too, for a non-Python
    engine such as llama.cpp), else the word after `serve` (`vllm serve MODEL`)."""
    for i, word in enumerate(argv[1:], 1):
        name, eq, value = word.partition("=")
        if name in MODEL_OPTIONS or (not python and name == "-m"):
            if eq:
                return value or None
            return argv[i + 1] if i + 1 < len(argv) else None
    for i, word in enumerate(argv[1:], 1):
        if word == "serve" and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            return argv[i + 1]
    return None


def _option(argv: Sequence[str], name: str) -> str | None:
    for i, word in enumerate(argv):
        if word == name and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


def hub_dirs(model: str, argv: Sequence[str], env: Mapping[str, str] | None) -> tuple[str, ...]:
    """The Hugging Face hub cache directories where a model id's snapshot may be
    (--download-dir, HF_HUB_CACHE, HF_HOME/hub, TRANSFORMERS_CACHE, XDG_CACHE_HOME,
    HOME/.cache), as `<hub>/models--ORG--NAME`; none for a path or a URI."""
    if "://" in model or model.startswith((".", "/", "~")) or not _HUB_ID.match(model):
        return ()
    e = env or {}
    roots = [_option(argv, "--download-dir"), e.get("HF_HUB_CACHE"),
             posixpath.join(e["HF_HOME"], "hub") if e.get("HF_HOME") else None,
             e.get("TRANSFORMERS_CACHE"),
             posixpath.join(e["XDG_CACHE_HOME"], "huggingface", "hub")
             if e.get("XDG_CACHE_HOME") else None,
             posixpath.join(e["HOME"], ".cache", "huggingface", "hub") if e.get("HOME")
             else None]
    repo = "models--" + model.replace("/", "--")
    return tuple(dict.fromkeys(posixpath.join(r, repo) for r in roots if r))


def _pythons(exe: str | None, argv: Sequence[str],
             env: Mapping[str, str] | None) -> tuple[str, ...]:
    """argv[0]'s candidates first (a venv), the executable itself last."""
    found = interpreters(argv[0], env) if argv else ()
    last = (exe,) if exe and not exe.endswith(" (deleted)") and exe not in found else ()
    return (*found, *last)


def code_query(pid: int, ticks: int, exe: str | None, argv: Sequence[str],
               env: Mapping[str, str] | None, *, configured: Sequence[str] = (),
               profile: Sequence[str] = ()) -> tuple[CodeQuery, tuple[str, ...]]:
    """(what to read of the process, the packages that must be found)."""
    python = is_python(exe, argv)
    expected, guessed = packages(argv, configured, profile) if python else ((), ())
    main = python_main(argv) if python else None
    model = model_argument(argv, python)
    remote = model is not None and "://" in model
    models = (model,) if model and not remote else ()
    revision = _option(argv, "--revision") or "main"
    query = CodeQuery(
        pid, ticks, pythons=_pythons(exe, argv, env) if python else (),
        packages=(*expected, *guessed),
        script=main[1] if main is not None and main[0] == "script" else None,
        models=models, hubs=hub_dirs(model, argv, env) if models and model else (),
        revision=revision if "\n" not in revision else "main")
    return query, expected
