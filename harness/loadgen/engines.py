"""Engine profiles: what each OpenAI-compatible server answers besides the OpenAI API.

vLLM, SGLang, TGI, llama.cpp's llama-server, llama-cpp-python and Ollama all serve
/v1/completions, but differ in health, tokenize and metrics endpoints, in whether they
honour `ignore_eos` (G3 fixes output lengths with it), and in which counters can prove a
KV tier was read. A profile says so for one engine; `detect` picks it from what a server
answered (its /v1/models card, /version or /api/version, /info, /metrics prefixes), and
the site config (`engine:`) or `--engine` overrides the guess. Pure: answers in,
profile out; `harness.loadgen.probe.probe` does the fetching.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

EngineName = Literal["vllm", "sglang", "tgi", "llama.cpp", "llama-cpp-python", "ollama",
                     "generic"]
ENGINE_NAMES: tuple[str, ...] = get_args(EngineName)


@dataclass(frozen=True)
class Tokenize:
    """A tokenize route: POST `path` with {`field`: text} (+ "model" when `with_model`)."""

    path: str
    field: str
    with_model: bool

    def shape(self) -> str:
        model = ', "model"' if self.with_model else ""
        return f'POST {self.path} {{"{self.field}"{model}}}'


@dataclass(frozen=True)
class Profile:
    name: EngineName
    health: str              # GET path that answers 200 when the engine serves
    version: str | None      # GET path whose JSON has "version"
    tokenize: Tokenize | None
    ignore_eos: bool         # honours "ignore_eos": true on /v1/completions
    metric_prefix: str | None
    # Which counters prove the accelerated arm read KV from an external tier and the
    # baseline did not (docs/engines.md); '' when the engine exposes none.
    tier_counters: str = ""

    @property
    def proves_tier(self) -> bool:
        return bool(self.tier_counters)


PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile("vllm", "/health", "/version", Tokenize("/tokenize", "prompt", True), True,
            "vllm:", "vllm:prompt_tokens_by_source{source=external_kv_transfer}, "
            "vllm:external_prefix_cache_hits, lmcache:num_hit_tokens"),
    Profile("sglang", "/health", None, None, True, "sglang:",
            "sglang:prefetched_tokens (HiCache storage backend: Mooncake, 3FS, file)"),
    # TGI's POST /tokenize {"inputs"} answers a list of tokens, which calibration does not
    # read yet: its prompt lengths are estimates (or --calibrate-with-usage).
    Profile("tgi", "/health", "/info", None, False, "tgi_"),
    Profile("llama.cpp", "/health", None, Tokenize("/tokenize", "content", False), True,
            "llamacpp:"),
    Profile("llama-cpp-python", "/v1/models", None,
            Tokenize("/extras/tokenize", "input", True), False, None),
    Profile("ollama", "/api/version", "/api/version", None, False, None),
    Profile("generic", "/v1/models", None, None, False, None),
)}


@dataclass(frozen=True)
class Detection:
    profile: Profile
    version: str | None
    why: list[str] = field(default_factory=list)  # what pointed to it
    overridden: bool = False                      # named by the config / --engine

    @property
    def name(self) -> str:
        return self.profile.name

    def to_dict(self) -> dict[str, Any]:
        return {"engine": self.name, "engine_version": self.version, "why": self.why,
                "overridden": self.overridden}


# /v1/models `owned_by` values the engines write (captures in tests/fixtures/engines)
_OWNED_BY = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llama.cpp",
             "llama-cpp-python": "llama-cpp-python", "me": "llama-cpp-python",
             "library": "ollama"}


def _card(models: Any) -> dict[str, Any]:
    data = models.get("data") if isinstance(models, dict) else None
    first = data[0] if isinstance(data, list) and data else None
    return first if isinstance(first, dict) else {}


def _version(doc: Any) -> str | None:
    v = doc.get("version") if isinstance(doc, dict) else None
    return str(v) if isinstance(v, str | int | float) and v != "" else None


def detect(answers: Mapping[str, Any], metric_names: set[str] | frozenset[str] = frozenset(),
           override: str | None = None) -> Detection:
    """The engine behind `answers` (path -> parsed JSON of what it answered with 200, e.g.
    "/v1/models", "/version", "/info", "/api/version", "/props") and the names on its
    /metrics. `override` (config `engine:` / --engine) wins; the version is still read."""
    card = _card(answers.get("/v1/models"))
    why: list[str] = []
    name: str | None = None
    prefixes = {p.metric_prefix: p.name for p in PROFILES.values() if p.metric_prefix}
    for prefix, engine in prefixes.items():
        if any(n.startswith(prefix) for n in metric_names):
            name = engine
            why.append(f"/metrics has {prefix}* families")
            break
    owner = card.get("owned_by")
    if isinstance(owner, str) and owner in _OWNED_BY:
        by_owner = _OWNED_BY[owner]
        why.append(f"/v1/models owned_by {owner!r}")
        name = name or by_owner
    if isinstance(answers.get("/info"), dict) and "model_id" in answers["/info"]:
        why.append("/info has model_id (TGI)")
        name = name or "tgi"
    if owner is not None and owner == card.get("id") and card.get("created") == 0:
        why.append("/v1/models lists one model owned by itself, created 0 (TGI)")
        name = name or "tgi"
    if isinstance(answers.get("/api/version"), dict):
        why.append("/api/version answers (Ollama)")
        name = name or "ollama"
    if name is None and isinstance(card.get("meta"), dict) and "n_ctx_train" in card["meta"]:
        why.append("/v1/models card has meta.n_ctx_train (llama.cpp family)")
        name = "llama.cpp"
    profile = PROFILES[name or "generic"]
    if not why:
        why.append("no engine-specific answer: generic OpenAI server")
    overridden = override is not None
    if override is not None:
        if override not in PROFILES:
            raise ValueError(f"unknown engine {override!r}: one of {', '.join(ENGINE_NAMES)}")
        if override != profile.name:
            why.append(f"configured as {override} (detected {profile.name})")
        profile = PROFILES[override]
    version = None
    for path in (profile.version, "/version", "/info", "/api/version"):
        if path and (version := _version(answers.get(path))):
            break
    return Detection(profile=profile, version=version, why=why, overridden=overridden)
