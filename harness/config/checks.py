"""Checks across keys of a validated site config, each failing as one ConfigError that
names the key (the models check one field at a time; these need two or more).

Run at load, so a mistake surfaces before any host is touched, not hours into a G3.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

from harness.config.knobs import broad
from harness.config.logo import logo_data_uri
from harness.config.models import Arms, CommandAction, PlaybookAction, SiteConfig
from harness.errors import ConfigError

# The names an arm's command argv and playbook vars may use as `{placeholders}`; the G3
# arm control fills exactly these (harness/serving/arms.py `ArmControl.values`).
PLACEHOLDERS = ("arm", "layout", "tp", "instance", "port", "host", "address", "url")


def check_site(config: SiteConfig, source: str, base: Path | None = None) -> None:
    """Raise the first cross-key problem of `config` (read from `source`; relative paths
    in it are relative to `base`, by default the source's directory)."""
    g3 = config.gates.g3

    def fail(key: str, message: str, hint: str | None = None) -> ConfigError:
        return ConfigError(message, file=source, key=key, hint=hint)

    if not g3.drop_caches_on and not config.simulated and not g3.drop_caches_reason.strip():
        raise fail("gates.g3.drop_caches_on", "an empty list needs a reason: without a "
                   "page-cache drop a cold read may come from RAM and inflate the gain",
                   "set gates.g3.drop_caches_reason (the result will then need a reviewer's "
                   "sign-off), or list the groups whose page cache gate drops")
    names = {layout.name for layout in config.layouts}
    for layout, chosen in g3.criteria.items():
        key = f"gates.g3.criteria.{layout}"
        if layout not in names:
            raise fail(key, f"names no layout (layouts: {', '.join(sorted(names)) or 'none'})")
        if not chosen or len(set(chosen)) != len(chosen):
            raise fail(key, "needs one or both of ttft_p50_drop, throughput_gain, once each")
    if config.arms is not None:
        if config.arms.baseline.differs_by:
            raise fail("arms.baseline.differs_by", "allowed differences are declared on the "
                       "accelerated arm only", "move them to arms.accelerated.differs_by")
        _check_differs_by(config.arms.accelerated.differs_by, fail)
        _check_proxies(config.arms, fail)
    for key, message in port_clashes(config):
        raise fail(key, message, "give each a port of its own on that host")
    if config.arms is not None:
        for key, text in _arm_texts(config.arms):
            _check_placeholders(text, key, fail)
    _check_logo(config, source, base if base is not None else Path(source).parent)


def _url_port(url: str) -> tuple[str, int] | None:
    """(host, port) a URL reaches, its scheme's port when none is written; None when it
    names no host. A port out of range raises ValueError (urllib's words)."""
    parts = urlsplit(url)
    port = parts.port
    if not parts.hostname:
        return None
    return parts.hostname, port if port is not None else (443 if parts.scheme == "https" else 80)


def port_clashes(config: SiteConfig) -> list[tuple[str, str]]:
    """(key, message) of each port two things would listen on at once on one host: two
    instances of one layout (layouts run one at a time, each arm's engines on the layout's
    ports, so two layouts may share one), a declared proxy and an engine of a layout it
    fronts, a KV store G3 scrapes and any engine; and URL ports out of range."""
    found: list[tuple[str, str]] = []
    engines: dict[tuple[str, int], str] = {}  # (host, port) -> the first key, any layout
    for i, layout in enumerate(config.layouts):
        seen: dict[tuple[str, int], str] = {}
        for j, inst in enumerate(layout.instances):
            key = f"layouts[{i}].instances[{j}].port"
            where = (inst.host, inst.port)
            if where in seen:
                found.append((key, f"{inst.host}:{inst.port} is also {seen[where]}: both "
                                   f"instances of layout {layout.name} listen at once"))
            seen.setdefault(where, key)
            engines.setdefault(where, key)
    urls: list[tuple[str, str]] = []
    if config.arms is not None:
        for arm_name in ("baseline", "accelerated"):
            arm = getattr(config.arms, arm_name)
            for layout_name, eps in arm.endpoints.items():
                urls += [(f"arms.{arm_name}.endpoints.{layout_name}[{k}]", u)
                         for k, u in enumerate(eps)]
            for url, proxy in arm.proxies.items():
                key = f"arms.{arm_name}.proxies.{url}"
                try:
                    reached = _url_port(url)
                except ValueError as exc:
                    found.append((key, f"{url!r}: {exc}"))
                    continue
                if reached is None:
                    continue
                where = (proxy.host or reached[0], proxy.port or reached[1])
                fronted = [la for la, eps in arm.endpoints.items()
                           if url.rstrip("/") in {e.rstrip("/") for e in eps}]
                for layout in config.layouts:
                    if layout.name in fronted and where in {(x.host, x.port)
                                                            for x in layout.instances}:
                        found.append((key, f"the proxy listens on {where[0]}:{where[1]}, "
                                           f"where layout {layout.name}'s engine does"))
    urls += [(f"gates.g3.evidence.store_metrics[{k}]", u)
             for k, u in enumerate(config.gates.g3.evidence.store_metrics)]
    for key, url in urls:
        try:
            reached = _url_port(url)
        except ValueError as exc:
            found.append((key, f"{url!r}: {exc}"))
            continue
        if key.startswith("gates.") and reached is not None and reached in engines:
            found.append((key, f"{reached[0]}:{reached[1]} is also an engine's port "
                               f"({engines[reached]})"))
    return found


def _check_differs_by(patterns: list[str], fail: Callable[..., ConfigError]) -> None:
    """differs_by decides what G3 compares: a pattern allowing every key of a kind (`*`,
    `env:*`, `argv:--*`) would let any engine flag through (harness/config/knobs.py)."""
    for i, pattern in enumerate(patterns):
        why = broad(pattern)
        if why is not None:
            raise fail(f"arms.accelerated.differs_by[{i}]",
                       f"pattern {pattern!r} is too broad: {why}",
                       "name each key the accelerator changes, e.g. "
                       "argv:--kv-transfer-config, env:LMCACHE_* (docs/g3.md)")


def _check_proxies(arms: Arms, fail: Callable[..., ConfigError]) -> None:
    """A declared proxy is one of the arm's endpoint URLs, written as there."""
    for arm_name in ("baseline", "accelerated"):
        arm = getattr(arms, arm_name)
        urls = {u.rstrip("/") for eps in arm.endpoints.values() for u in eps}
        for url in arm.proxies:
            key = f"arms.{arm_name}.proxies.{url}"
            parts = urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise fail(key, f"{url!r} is not an http(s) URL with a host")
            if url.rstrip("/") not in urls:
                raise fail(key, "names no endpoint of the arm",
                           f"list it under arms.{arm_name}.endpoints.LAYOUT")


def _check_logo(config: SiteConfig, source: str, base: Path) -> None:
    """report.logo must be an image gate can embed, now rather than at the report."""
    logo = config.report.logo
    if not logo:  # "" as good as unset
        return
    path = Path(logo).expanduser()
    try:
        logo_data_uri(path if path.is_absolute() else base / path, logo)
    except ConfigError as exc:
        raise ConfigError(exc.message, file=source, key=exc.key, hint=exc.hint) from None


def _arm_texts(arms: Arms) -> Iterator[tuple[str, str]]:
    """(key path, text) of every string an arm action fills placeholders into."""
    for arm_name in ("baseline", "accelerated"):
        arm = getattr(arms, arm_name)
        for which in ("start", "stop", "restart"):
            action = getattr(arm, which)
            base = f"arms.{arm_name}.{which}"
            if isinstance(action, CommandAction):
                for i, word in enumerate(action.command):
                    yield f"{base}.command[{i}]", word
            elif isinstance(action, PlaybookAction):
                yield from _strings(action.vars, f"{base}.vars")


def _strings(value: object, key: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _strings(item, f"{key}[{i}]")
    elif isinstance(value, dict):
        for k, item in value.items():
            yield from _strings(item, f"{key}.{k}")


def _check_placeholders(text: str, key: str, fail: Callable[..., ConfigError]) -> None:
    known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
    except ValueError as exc:
        raise fail(key, f"bad placeholder in {text!r}: {exc}",
                   f"known: {known}; write {{{{ and }}}} for literal braces") from None
    for field in fields:
        name = field.split(".")[0].split("[")[0]
        if name not in PLACEHOLDERS:
            raise fail(key, f"unknown placeholder {{{field}}} in {text!r}",
                       f"known: {known}; write {{{{ and }}}} for literal braces")
