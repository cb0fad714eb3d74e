"""Read gate.yaml into a SiteConfig, turning every problem into one ConfigError line.

The message names the file, the key path as a user would write it
(`layouts[1].instances[0].port`), what was expected and what was found; YAML syntax
errors carry line and column. `--set key=VALUE` overrides (harness.config.overrides) are
applied to the file's mapping before validation, and a problem they cause names the
`--set`, not the file.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from harness.config.checks import check_site
from harness.config.logo import logo_data_uri
from harness.config.models import SiteConfig
from harness.config.overrides import (
    Override,
    apply_overrides,
    blame,
    key_text,
    parse_key,
    parse_overrides,
)
from harness.errors import ConfigError


@dataclass(frozen=True)
class LoadedConfig:
    """A validated config plus where it came from (paths in it are relative to `base`)."""

    config: SiteConfig
    path: Path
    raw: dict[str, Any]  # the mapping validated: the file's, with the overrides applied
    overrides: tuple[str, ...] = ()  # normalised "key=value" of each --set, in order

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
        """What a resume compares. The overrides count even when one sets a value the file
        already had: a run is resumed as it was started. Without overrides the digest is
        the snapshot's alone, as before there were any (stored runs still resume)."""
        text = self.snapshot()
        if self.overrides:
            text += "\n--set " + json.dumps(list(self.overrides), ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()

    def logo_uri(self) -> str | None:
        """report.logo as a data: URI for the report's first page (None: no logo)."""
        logo = self.config.report.logo
        return logo_data_uri(self.resolve(logo), logo) if logo else None


def user_loc(loc: Sequence[int | str]) -> tuple[int | str, ...]:
    """pydantic's error location without the names it adds for a union field's members
    (`PlaybookAction`) or validators: only the keys a user wrote."""
    return tuple(p for p in loc if isinstance(p, int)
                 or not (p[:1].isupper() or p.startswith("function-")))


def key_path(loc: tuple[int | str, ...]) -> str:
    """('layouts', 1, 'instances', 0, 'port') -> 'layouts[1].instances[0].port'."""
    return key_text(user_loc(loc)) or "(top level)"


# Keys that were accepted once and are no longer read, each with why (a sentence that
# ends "remove the key" well); a config that still sets one is told so, not asked to
# check its spelling. None today: gates.g4's duration, window, concurrency and criteria,
# once refused here, are G4's settings now.
RETIRED: dict[str, str] = {}


def _model_fields(loc: Sequence[int | str]) -> list[str]:
    """The keys the model at `loc` accepts ([] where it is not a model: a free mapping)."""
    node: Any = SiteConfig
    for part in loc:
        node = _unwrap(node, part)
        if node is None:
            return []
    return list(node.model_fields) if _is_model(node) else []


def _is_model(node: Any) -> bool:
    return isinstance(node, type) and issubclass(node, BaseModel)


def _unwrap(node: Any, part: int | str) -> Any:
    """The type one step further in: a model's field, a list's item, a union's member."""
    while typing.get_origin(node) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(node) if a is not type(None)]
        named = [a for a in members if getattr(a, "__name__", None) == part]
        if named:
            return named[0]
        if len(members) != 1:
            return None
        node = members[0]
    if isinstance(part, int):
        args = typing.get_args(node)
        return args[0] if typing.get_origin(node) is list and args else None
    if _is_model(node) and part in node.model_fields:
        return node.model_fields[part].annotation
    return None


def _unknown(loc: tuple[int | str, ...]) -> str:
    key = key_text(loc)
    if key in RETIRED:
        return f"no longer a setting: {RETIRED[key]}; remove the key"
    close = difflib.get_close_matches(str(loc[-1]), _model_fields(loc[:-1]), n=1) \
        if loc else []
    if close:
        return f"unknown key (did you mean `{close[0]}`?)"
    return "unknown key (check the spelling; see `gate init` for every key)"


_CREDENTIALS = re.compile(r"(://[^:/@\s]*:)[^@\s]*@")


def _describe(error: dict[str, Any]) -> str:
    kind = error.get("type", "")
    found = error.get("input")
    if kind == "extra_forbidden":
        return _unknown(user_loc(error.get("loc", ())))
    if kind == "missing":
        return "required key is missing"
    shown = json.dumps(found, default=str) if not isinstance(found, dict) else "a mapping"
    shown = _CREDENTIALS.sub(r"\1***@", shown)  # a URL's password is never echoed
    if len(shown) > 60:
        shown = shown[:57] + "..."
    msg = str(error.get("msg", "a valid value"))
    return f"expected {msg[:1].lower() + msg[1:]}, found {shown}"


def _bounded(error: dict[str, Any]) -> str | None:
    """A G3 or G4 decision setting past its bound says which bound and why it exists."""
    from harness.config.decision import G4_SETTINGS, SETTINGS

    key = key_path(error.get("loc", ()))
    setting = next((s for s in (*SETTINGS, *G4_SETTINGS) if s.key == key), None)
    if setting is None or error.get("type") not in ("greater_than_equal", "less_than_equal",
                                                    "greater_than", "less_than"):
        return None
    default = setting.show(setting.default) if setting.seconds else f"{setting.default:g}"
    return (f"{json.dumps(error.get('input'))} is outside the allowed range "
            f"({setting.bound()}; default {default}): {setting.why}")


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


def _unicode_problem(raw: Any, source: str, overrides: Sequence[Override]) -> None:
    """Refuse text that is not valid Unicode: the file's, then each override's value
    (a --set from argv can carry surrogate escapes of undecodable bytes)."""
    places: list[tuple[Any, str | None, str | None]] = [(raw, source, None)]
    places += [(o.value, None, o.flag) for o in overrides]
    for node, file, flag in places:
        invalid = _not_utf8(node)
        if invalid is None:
            continue
        where, found = invalid
        shown = _shown(found)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise ConfigError(f'text is not valid Unicode: "{shown}" has a lone surrogate',
                          file=file, key=flag or where,
                          hint="write the character itself, or one \\U0001F600-style escape; "
                               "YAML does not join \\ud83d\\ude00-style pairs")


def _culprit(loc: tuple[int | str, ...], overrides: Sequence[Override],
             in_file: bool) -> Override | None:
    """The override a problem at `loc` is blamed on; None: the file's own problem (it has
    it without the overrides too, or no override touches that key)."""
    return None if in_file or not overrides else blame(loc, overrides)


def _validation_error(exc: ValidationError, source: str, file_raw: dict[str, Any],
                      overrides: Sequence[Override]) -> ConfigError:
    errors = exc.errors()
    # Prefer the most specific error: union members each add their own complaint.
    first = max(errors, key=lambda e: len(e.get("loc", ())))
    message = _bounded(dict(first)) or _describe(dict(first))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    loc = user_loc(first["loc"])
    in_file = False
    if overrides:
        try:
            SiteConfig.model_validate(file_raw)
        except ValidationError as alone:
            in_file = any(user_loc(e["loc"]) == loc and e["type"] == first["type"]
                          for e in alone.errors())
    culprit = _culprit(loc, overrides, in_file)
    if culprit is None:
        return ConfigError(message + more, file=source, key=key_path(first["loc"]))
    where = key_path(first["loc"])
    inner = f"{where}: " if where != culprit.key else ""
    return ConfigError(inner + message + more, key=culprit.flag)


def _check(config: SiteConfig, source: str, base: Path, file_raw: dict[str, Any],
           overrides: Sequence[Override]) -> None:
    """The cross-key checks; a problem the file alone does not have is the override's."""
    try:
        check_site(config, source, base)
    except ConfigError as exc:
        if not overrides or not exc.key:
            raise
        try:
            path = parse_key(exc.key, exc.key)
        except ConfigError:
            raise exc from None
        in_file = False
        try:
            check_site(SiteConfig.model_validate(file_raw), source, base)
        except ConfigError as alone:
            in_file = (alone.key, alone.message) == (exc.key, exc.message)
        except ValidationError:
            pass
        culprit = _culprit(path, overrides, in_file)
        if culprit is None:
            raise
        inner = f"{exc.key}: " if exc.key != culprit.key else ""
        raise ConfigError(inner + exc.message, key=culprit.flag, hint=exc.hint) from None


def parse_config(text: str, source: str, overrides: Sequence[Override] = (),
                 base: Path | None = None) -> tuple[SiteConfig, dict[str, Any]]:
    """Validate `text` (read from `source`) with `overrides` applied; paths in the config
    (report.logo) are relative to `base`, by default the source's directory. Returns the
    config and the mapping that was validated."""
    file_raw = _yaml_load(text, source)
    if not isinstance(file_raw, dict):
        raise ConfigError("expected a mapping at the top level", file=source)
    _unicode_problem(file_raw, source, overrides)
    raw = apply_overrides(file_raw, overrides) if overrides else file_raw
    try:
        config = SiteConfig.model_validate(raw)
    except ValidationError as exc:
        raise _validation_error(exc, source, file_raw, overrides) from None
    _check(config, source, base if base is not None else Path(source).parent, file_raw,
           overrides)
    return config, raw


def load_config(path: str | Path, overrides: Sequence[str] = ()) -> LoadedConfig:
    """Read and validate the config at `path`, each `--set key=VALUE` of `overrides`
    applied first (harness.config.overrides)."""
    parsed = parse_overrides(overrides)
    p = Path(path).expanduser()
    if not p.exists():
        raise ConfigError(
            "config file not found", file=str(p), hint="run `gate init` to write one, or pass -c"
        )
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read: {exc}", file=str(p)) from None
    config, raw = parse_config(text, str(p), parsed, p.resolve().parent)
    return LoadedConfig(config=config, path=p.resolve(), raw=raw,
                        overrides=tuple(o.text for o in parsed))
