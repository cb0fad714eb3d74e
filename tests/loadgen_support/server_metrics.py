"""vLLM-named Prometheus families for the test server, in a private registry per server
(never prometheus_client's global one), so /metrics has the real exposition format."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


class EngineMetrics:
    """vLLM-named families in a private registry (never the global one)."""

    def __init__(self, model: str, external: bool) -> None:
        self.registry = CollectorRegistry()
        lab = ["engine", "model_name"]
        self.labels = {"engine": "0", "model_name": model}
        r = self.registry
        self.prompt = Counter("vllm:prompt_tokens", "Prompt tokens.", lab, registry=r)
        self.gen = Counter("vllm:generation_tokens", "Generation tokens.", lab, registry=r)
        self.q = Counter("vllm:prefix_cache_queries", "Prefix cache queries, tokens.", lab,
                         registry=r)
        self.h = Counter("vllm:prefix_cache_hits", "Prefix cache hits, tokens.", lab,
                         registry=r)
        self.by_source = Counter("vllm:prompt_tokens_by_source", "Prompt tokens by source.",
                                 [*lab, "source"], registry=r)
        self.running = Gauge("vllm:num_requests_running", "Running.", lab, registry=r)
        self.waiting = Gauge("vllm:num_requests_waiting", "Waiting.", lab, registry=r)
        self.kv = Gauge("vllm:kv_cache_usage_perc", "KV usage.", lab, registry=r)
        self.ttft = Histogram("vllm:time_to_first_token_seconds", "TTFT.", lab, registry=r,
                              buckets=(0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25,
                                       0.5, 1.0, 2.5, 5.0, 10.0))
        self.success = Counter("vllm:request_success", "Finished.", [*lab, "finished_reason"],
                               registry=r)
        self.external = external
        if external:
            self.eq = Counter("vllm:external_prefix_cache_queries", "External queries.", lab,
                              registry=r)
            self.eh = Counter("vllm:external_prefix_cache_hits", "External hits.", lab,
                              registry=r)
            lm = ["model_name", "worker_id"]
            self.lm_labels = {"model_name": model, "worker_id": "0"}
            self.lm_req = Counter("lmcache:num_requested_tokens", "Requested.", lm, registry=r)
            self.lm_hit = Counter("lmcache:num_hit_tokens", "Hit.", lm, registry=r)
        # labelled children looked up once: .labels() per request costs a lock + a dict
        self.c_prompt = self.prompt.labels(**self.labels)
        self.c_gen = self.gen.labels(**self.labels)
        self.c_q = self.q.labels(**self.labels)
        self.c_h = self.h.labels(**self.labels)
        self.c_running = self.running.labels(**self.labels)
        self.c_ttft = self.ttft.labels(**self.labels)
        self.c_success = self.success.labels(finished_reason="length", **self.labels)
        self.c_src = {src: self.by_source.labels(source=src, **self.labels)
                      for src in ("local_compute", "local_cache_hit", "external_kv_transfer")}
        self.waiting.labels(**self.labels)
        self.kv.labels(**self.labels)

    def render(self) -> bytes:
        return generate_latest(self.registry)
