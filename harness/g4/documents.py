"""The soak's spec and its working set: the documents it asks about in turn, made on the
gate's side (the engine's tokenizer calibrates them, as G3's) and shipped in the spec."""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.config.models import SiteConfig
from harness.errors import GateError
from harness.loadgen.records import Endpoint, RequestSpec
from harness.loadgen.soak_counters import gpu_cache_tokens
from harness.loadgen.soak_spool import SoakSpec
from harness.serving.arms import Endpoint as ArmEndpoint
from harness.serving.cells import doc_seed, docs_for

# G4's documents are drawn apart from G2's and G3's: a prefix those gates computed must not
# reach the soak's engines as a warm one.
SEED_OFFSET = 2_000_000


def soak_documents(config: SiteConfig, url: str) -> list[RequestSpec]:
    """gates.g4.documents of them, else enough for the concurrency and more than twice
    what the engine's GPU prefix cache holds when /metrics says its size, so each prefix
    is evicted before it comes round again and is loaded from the tier."""
    from harness.loadgen import doc_qa
    from harness.probes.prometheus import scrape

    wl = config.workload
    n = config.gates.g4.documents or 0
    if not n:
        n = docs_for(config.gates.g4.concurrency, wl.docs_per_concurrency, wl.min_docs)
        try:
            cache = gpu_cache_tokens(scrape(url))
        except GateError:
            cache = None
        if cache:
            n = max(n, math.ceil(2 * cache / (wl.doc_tokens + wl.question_tokens)) + 1)
    work = doc_qa(n, wl.doc_tokens, wl.question_tokens, doc_seed(wl.seed, SEED_OFFSET),
                  max_tokens=wl.max_tokens, tokenize_url=url, model=config.model.name)
    return list(work.specs)


def soak_spec(config: SiteConfig, eps: Sequence[ArmEndpoint], run_id: int) -> SoakSpec:
    """What the detached soak runs: the accelerated arm's endpoints, its documents and
    the load and windows of gates.g4 (tagged with the run, as every request the gate
    sends is)."""
    g4 = config.gates.g4
    return SoakSpec(
        endpoints=tuple(Endpoint(e.url, config.model.name, e.instance) for e in eps),
        documents=tuple(soak_documents(config, eps[0].url)), concurrency=g4.concurrency,
        duration_s=g4.duration, window_s=g4.window, api=config.workload.api,
        tag=f"gate-r{run_id}")
