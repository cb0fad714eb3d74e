"""English left in a Chinese report: the words a reader of the zh report would see that are
ASCII words, less those that are no language's (units, product and tool names, the
verdict tokens kept for auditors) and those the site wrote or its tools printed (the
run's stored config, host names, facts read from the hosts, artifact file names).

The report's HTML is read as a reader sees it: text nodes and the text of the plots (SVG
data URIs), not tags, attributes, styles or an element marked `lang="en"` (the
glossary's English column, which is English on purpose) or `translate="no"` (identifiers:
config keys, paths, digests, command lines)."""

from __future__ import annotations

import base64
import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing
from html.parser import HTMLParser
from pathlib import Path

# A run of ASCII letters: what counts as a word (single letters are notation: c=16, x8,
# 1 s); digits and punctuation split words ("gpu1-gpu" -> gpu, gpu).
WORD = re.compile(r"[A-Za-z]{2,}")
# Tokens that are data, never language: hex digests and ids, hex-ish UUID pieces.
TOKEN = re.compile(r"[A-Za-z0-9/…\-][A-Za-z0-9_.:/+\-]*")
HEX = re.compile(r"^[0-9a-fA-F]{6,}$")
SVG = "data:image/svg+xml;base64,"
# gate's own commands named in a sentence ("gate status", "gate signoff 17"): typed as is
# and literals quoted as typed: an API's value ('length'), a config line (`load.placement:
# client`), a tool's command (`vllm bench`, `dcgmi diag`), a command's option value
COMMAND = re.compile(r"\bgate (?:status|signoff|resume|runs? [a-z]+|run|report|sync|export|"
                     r"fleet|demo|hosts check)\b|'[^'\n]*'|`[^`\n]*`|\b[a-z_]+\.[a-z_.]+: [a-z]+|"
                     r"\bvllm bench\b|\bdcgmi diag\b|--[a-z-]+ [a-z]+")
FILE = re.compile(r"\.(ya?ml|md|json|txt|log|db|sqlite|pdf|html|sock)$")
# An identifier, not words: a config key (`gates.g4.duration`), a snake_case name
# (`max_model_len`), a prefixed one (`vllm:external_prefix_cache_*`, `argv:--tier-dir`).
IDENT = re.compile(r"_|[A-Za-z0-9]\.[A-Za-z]|^[A-Za-z0-9]+:")

# Words that are no language's, with why each is allowed (compared case-sensitively:
# "Pass" would be an English word, "PASS" is the auditors' token).
ALLOWED: dict[str, str] = {
    # verdict and mark tokens the zh catalog keeps in parentheses for auditors
    # (reports/i18n/zh.yaml: "通过 (PASS)", "未运行 (not run)")
    **dict.fromkeys(("PASS", "STOP", "LOSS", "INCONCLUSIVE", "ERROR", "RUNNING", "not",
                     "run", "skipped", "recorded", "signed", "SIMULATED", "FORCED",
                     "PARTIAL", "ABORTED", "WEAKENED"), "auditor token"),
    # units and notation (gen: a PCIe link's generation, gen3; bf: bf16)
    **dict.fromkeys(("ms", "GB", "MB", "KB", "GiB", "KiB", "Gb", "tok", "IOPS", "us", "min",
                     "UTC", "p50", "p99", "CV", "gen", "bf", "token", "tokens", "sha"),
                    "unit or notation"),  # token: a term of art the zh catalog keeps
    # abbreviations Chinese technical writing uses as they are
    **dict.fromkeys(("TTFT", "TPOT", "EL", "GPU", "CPU", "NIC", "NVMe", "PCIe", "PCI", "ECC",
                     "CUDA", "GDS", "GPUD", "KV", "TP", "tp", "Xid", "RSS", "SMART", "IB",
                     "HCA", "NQN", "OS", "BOM", "URL", "IO", "QD", "DCGM", "UUID", "VBIOS",
                     "GUID", "ABBA"), "abbreviation"),
    # EL: of E2EL (end-to-end latency); GPUD: gdsio's GPU Direct transfers; tp: the
    # engines' tensor-parallel setting (tp=8); ABBA: the pairs' run order
    # methods named after people
    **dict.fromkeys(("Lan", "DeMets", "Student", "Brien", "Fleming", "Pocock"), "a name"),
    # products, engines, tools and their words (their names in every language)
    **dict.fromkeys(("gate", "vLLM", "vllm", "LMCache", "lmcache", "SGLang", "Ansible", "NVIDIA",
                     "nvidia", "smi", "lspci", "fio", "gdsio", "gdscheck", "dcgmi", "ethtool",
                     "nvme", "journalctl", "dmesg", "ibstat", "sudo", "cuFile", "XferType",
                     "Active", "choices"), "product or tool"),
    # cuFile, XferType: gdsio's words; Active: ibstat's port state; choices: the API's field
}


class _Text(HTMLParser):
    """Text nodes a reader sees, and the SVG plots' text."""

    def __init__(self, every: bool = False) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.every = every  # the lang="en" and translate="no" text too
        self._skip: list[str] = []  # open elements whose text is not checked

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if self._skip or tag in ("style", "script", "title", "metadata") or \
                (not self.every and (a.get("lang") == "en" or a.get("translate") == "no")):
            if tag not in _VOID:
                self._skip.append(tag)
            return
        src = a.get("src") or ""
        if tag == "img" and src.startswith(SVG):
            self.out.extend(svg_text(base64.b64decode(src[len(SVG):]).decode()))

    def handle_endtag(self, tag: str) -> None:
        if self._skip and self._skip[-1] == tag:
            self._skip.pop()

    def handle_data(self, data: str) -> None:
        if not self._skip and data.strip():
            self.out.append(data)


_VOID = {"img", "br", "hr", "meta", "link", "input", "col", "wbr"}


def svg_text(svg: str) -> list[str]:
    """The text of a matplotlib SVG (svg.fonttype none keeps text as <text>)."""
    inner = _Text()
    inner.feed(svg)
    return inner.out


def visible_text(html: str, every: bool = False) -> list[str]:
    """The text a reader sees; `every`: marked English and identifiers too."""
    parser = _Text(every)
    parser.feed(html)
    return parser.out


def words(text: str) -> Iterator[str]:
    """The ASCII words of `text`, data tokens (hex digests, UUIDs) left out."""
    for token in TOKEN.findall(text):
        if token.startswith(("/", "…/", "-")) or FILE.search(token) or IDENT.search(token):
            continue  # a path or file name, a command-line option, an identifier: as typed
        if any(HEX.match(piece) for piece in re.split(r"[-:/.]", token) if piece) and \
                not WORD.fullmatch(token):
            continue
        yield from WORD.findall(token)


def _strings(value: object, names: tuple[str, ...] = ("packages",)) -> Iterator[str]:
    """Every string value of a JSON-like value, and the keys of a mapping that holds names
    (`packages:` a BOM orders, which its software fact repeats); not other keys: the
    config's are shown only as identifiers (translate="no")."""
    if isinstance(value, dict):
        for k, v in value.items():
            if str(k) in names and isinstance(v, dict):
                yield from (str(x) for x in v)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
    elif isinstance(value, str):
        yield value


def site_words(db: Path) -> set[str]:
    """Words the site wrote or its tools printed, read from the store: the values of
    every run's stored config and arguments (names, hosts, commands, the reasons declared
    in gate.yaml), the gate host and operator, host names, and the values of the hosts'
    facts as gate's probes read them (tool output: models, OS names, versions)."""
    texts: list[str] = []
    with closing(sqlite3.connect(db)) as conn:
        for config, args, hostname, operator in conn.execute(
                "SELECT config_json, args, hostname, operator FROM run"):
            texts.extend(_strings(json.loads(config) if isinstance(config, str) else config))
            texts.extend(_strings(json.loads(args) if isinstance(args, str) else args))
            texts.extend(str(x) for x in (hostname, operator) if x)
        texts.append("true false")  # the config's booleans, as gate.yaml writes them
        for (host,) in conn.execute("SELECT DISTINCT host FROM host_fact"):
            texts.append(str(host))
        for key, value in conn.execute("SELECT key, value FROM host_fact"):
            if str(key) != "g1 plan" and not str(key).startswith("engine identity "):
                # not the harness's own words (the plan), nor an engine's argv and
                # environment (counted in the report, never shown)
                texts.extend(_strings(json.loads(value) if isinstance(value, str) and
                                      value[:1] in "[{\"" else value))
    return {w for text in texts for w in words(text)}


def stray(texts: Iterable[str], allowed: set[str]) -> dict[str, str]:
    """Each word not allowed -> the first text it was seen in (for the failure message)."""
    found: dict[str, str] = {}
    for text in texts:
        for w in words(COMMAND.sub("", text)):
            if w not in allowed and w not in ALLOWED and w not in found:
                found[w] = " ".join(text.split())[:160]
    return found
