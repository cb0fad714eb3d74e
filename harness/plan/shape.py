"""The model's shape as the planner needs it: what one token's KV cache weighs.

Why its own type: the shape comes from three places (the site config's `model:`, a local
Hugging Face config.json, the what-if flags) and every figure of the plan starts from
the bytes per token; one frozen type keeps them from disagreeing. Reading a config.json
from disk is the caller's business: `from_hf_config` takes its parsed mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.errors import UsageError

DTYPE_BYTES: dict[str, int] = {"bf16": 2, "fp16": 2, "fp8": 1, "fp32": 4}

# torch_dtype spellings of a Hugging Face config.json -> the KV cache dtype they imply
HF_DTYPES: dict[str, str] = {
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32",
    "float": "fp32", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8",
}


@dataclass(frozen=True)
class ModelShape:
    """Layers x KV heads x head dim at a KV dtype; `max_context` in tokens (None: not known)."""

    layers: int
    kv_heads: int
    head_dim: int
    dtype: str
    max_context: int | None = None
    name: str = ""

    def __post_init__(self) -> None:
        if min(self.layers, self.kv_heads, self.head_dim) <= 0:
            raise ValueError(f"a model shape is positive: {self}")
        if self.dtype not in DTYPE_BYTES:
            raise ValueError(f"unknown KV dtype {self.dtype!r}")
        if self.max_context is not None and self.max_context <= 0:
            raise ValueError(f"max_context must be positive: {self.max_context}")

    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def kv_bytes_per_token(self) -> int:
        """K and V of every layer: layers x kv_heads x head_dim x 2 x dtype bytes."""
        return self.layers * self.kv_heads * self.head_dim * 2 * self.dtype_bytes

    def kv_bytes_per_token_gpu(self, tp: int) -> int:
        """One GPU's share under tensor parallelism: the KV heads are split over the TP
        ranks (the caller has checked that tp divides kv_heads)."""
        return self.kv_bytes_per_token // tp


def _positive_int(data: Mapping[str, object], key: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        found = "missing" if value is None else f"{value!r}"
        raise UsageError(f"{key} must be a positive integer (found {found})", key=key)
    return value


def from_hf_config(data: Mapping[str, object], *, dtype: str | None = None) -> ModelShape:
    """The shape in a Hugging Face config.json (already parsed): num_hidden_layers,
    num_key_value_heads (absent: num_attention_heads, a model without GQA), head_dim
    (absent: hidden_size / num_attention_heads), torch_dtype (or `dtype`), and
    max_position_embeddings. A multimodal config keeps these under `text_config`.
    `dtype` (the KV cache's, e.g. an fp8 cache of a bf16 model) wins over the file's."""
    text = data.get("text_config")
    if "num_hidden_layers" not in data and isinstance(text, Mapping):
        data = text
    layers = _positive_int(data, "num_hidden_layers")
    heads_key = ("num_key_value_heads" if data.get("num_key_value_heads") is not None
                 else "num_attention_heads")
    kv_heads = _positive_int(data, heads_key)
    if data.get("head_dim") is not None:
        head_dim = _positive_int(data, "head_dim")
    else:
        hidden = _positive_int(data, "hidden_size")
        heads = _positive_int(data, "num_attention_heads")
        if hidden % heads:
            raise UsageError(f"hidden_size {hidden} does not divide by num_attention_heads "
                             f"{heads}: give head_dim", key="head_dim")
        head_dim = hidden // heads
    if dtype is None:
        raw = data.get("torch_dtype", data.get("dtype"))
        if not isinstance(raw, str) or raw not in HF_DTYPES:
            found = "missing" if raw is None else repr(raw)
            raise UsageError(f"torch_dtype {found} is not one of "
                             f"{', '.join(sorted(HF_DTYPES))}", key="torch_dtype",
                             hint="or give the KV cache's dtype with --dtype")
        dtype = HF_DTYPES[raw]
    max_context = (_positive_int(data, "max_position_embeddings")
                   if data.get("max_position_embeddings") is not None else None)
    name = data.get("_name_or_path")
    return ModelShape(layers=layers, kv_heads=kv_heads, head_dim=head_dim, dtype=dtype,
                      max_context=max_context, name=name if isinstance(name, str) else "")
