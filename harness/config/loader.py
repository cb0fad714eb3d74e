"""Read gate.yaml into a SiteConfig, turning every problem into one ConfigError line.

The message names the file, the key path as a user would write it
(`layouts[1].instances[0].port`), what was expected and what was found; YAML syntax
errors carry line and column.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harness.config.checks import check_site
from harness.config.models import SiteConfig
from harness.errors import ConfigError


@dataclass(frozen=True)
class LoadedConfig:
    """A validated config plus where it came from (paths in it are relative to `base`)."""

    config: SiteConfig
    path: Path
    raw: dict[str, Any]

    @property
    def base(self) -> Path:
        return self.path.parent

    def resolve(self, relative: str) -> Path:
        p = Path(relative).expanduser()
        return p if p.is_absolute() else (self.base / p)

    @property
    def inventory_path(self) -> Path:
        return self.resolve(self.config.inventory)

    @property
    def known_hosts_path(self) -> Path:
        return self.resolve(self.config.known_hosts)

    def snapshot(self) -> str:
        """The config as canonical JSON, the text that is hashed and stored on a run."""
        return json.dumps(self.config.model_dump(mode="json"), sort_keys=True)

    def digest(self) -> str:
        return hashlib.sha256(self.snapshot().encode()).hexdigest()


def key_path(loc: tuple[int | str, ...]) -> str:
    """('layouts', 1, 'instances', 0, 'port') -> 'layouts[1].instances[0].port'.

    pydantic adds the chosen union member's name for union fields (`PlaybookAction`);
    those are not keys a user wrote, so they are dropped.
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part[:1].isupper() or part.startswith("function-"):
            continue
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


def _describe(error: dict[str, Any]) -> str:
    kind = error.get("type", "")
    found = error.get("input")
    if kind == "extra_forbidden":
        return "unknown key (check the spelling; see `gate init` for every key)"
    if kind == "missing":
        return "required key is missing"
    shown = json.dumps(found, default=str) if not isinstance(found, dict) else "a mapping"
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"expected {error.get('msg', 'a valid value').lower()}, found {shown}"


def _bounded(error: dict[str, Any]) -> str | None:
    """A G3 decision setting past its bound says which bound and why it exists."""
    from harness.config.decision import SETTINGS

    key = key_path(error.get("loc", ()))
    setting = next((s for s in SETTINGS if s.key == key), None)
    if setting is None or error.get("type") not in ("greater_than_equal", "less_than_equal",
                                                    "greater_than", "less_than"):
        return None
    return (f"{json.dumps(error.get('input'))} is outside the allowed range "
            f"({setting.bound()}; default {setting.default:g}): {setting.why}")


def _yaml_load(text: str, source: str) -> Any:
    """yaml.safe_load, with every YAML problem a ConfigError carrying line and column.

    Some values fail in Python, not in YAML: a `\\U` escape past U+10FFFF (chr() out of
    range), a timestamp such as 2024-13-45: a ValueError, whose place is where the loader
    stopped."""
    loader = yaml.SafeLoader(text)
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark else "unknown place"
        raise ConfigError(
            f"YAML syntax error at {where}: {exc.problem}", file=source
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"YAML error: {exc}", file=source) from None
    except ValueError as exc:  # chr() past U+10FFFF, a timestamp like 2024-13-45, ...
        mark = loader.get_mark()
        what = ("a \\U escape past U+10FFFF" if "chr()" in str(exc) else str(exc))
        raise ConfigError(f"YAML value near line {mark.line + 1} column {mark.column + 1} "
                          f"cannot be read: {what}", file=source) from None
    finally:
        loader.dispose()


def _not_utf8(node: Any, loc: tuple[int | str, ...] = ()) -> tuple[str, str] | None:
    """(key path, the text) of the first string, key or value, that is not valid Unicode:
    YAML escapes such as "\\ud800" make lone surrogates, which the config digest and the
    store cannot encode as UTF-8."""

    def bad(text: str) -> bool:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False

    def path(parts: tuple[int | str, ...]) -> str:  # as written: key_path drops some names
        out = ""
        for part in parts:
            out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + part
        return out or "(top level)"

    if isinstance(node, str):
        return (path(loc), node) if bad(node) else None
    if isinstance(node, dict):
        for key, value in node.items():
            name = key if isinstance(key, str) else str(key)
            if bad(name):
                return path((*loc, _shown(name))), name
            found = _not_utf8(value, (*loc, name))
            if found:
                return found
    if isinstance(node, list):
        for i, value in enumerate(node):
            found = _not_utf8(value, (*loc, i))
            if found:
                return found
    return None


def _shown(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def parse_config(text: str, source: str) -> tuple[SiteConfig, dict[str, Any]]:
    raw = _yaml_load(text, source)
    invalid = _not_utf8(raw)
    if invalid is not None:
        where, found = invalid
        shown = _shown(found)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise ConfigError(f'text is not valid Unicode: "{shown}" has a lone surrogate',
                          file=source, key=where,
                          hint="write the character itself, or one \\U0001F600-style escape; "
                               "YAML does not join \\ud83d\\ude00-style pairs")
    if not isinstance(raw, dict):
        raise ConfigError("expected a mapping at the top level", file=source)
    try:
        config = SiteConfig.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors()
        # Prefer the most specific error: union members each add their own complaint.
        first = max(errors, key=lambda e: len(e.get("loc", ())))
        message = _bounded(dict(first)) or _describe(dict(first))
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ConfigError(message + more, file=source, key=key_path(first["loc"])) from None
    check_site(config, source)
    return config, raw


def load_config(path: str | Path) -> LoadedConfig:
    p = Path(path).expanduser()
    if not p.exists():
        raise ConfigError(
            "config file not found", file=str(p), hint="run `gate init` to write one, or pass -c"
        )
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", file=str(p)) from None
    config, raw = parse_config(text, str(p))
    return LoadedConfig(config=config, path=p.resolve(), raw=raw)
