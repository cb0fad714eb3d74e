"""/metrics: the engine's counters as vLLM V1 (and LMCache) expose them.

Names, label sets and bucket bounds are the ones in the captured vLLM 0.25.1 exposition
(fixtures/vllm-metrics_er0080_v0.25.1_idle.prom) and the LMCache excerpts; a collector reads
EngineStats at scrape time so the request path only adds integers. One CollectorRegistry
per app (no global registry). Durations are observed in wall seconds, as a client measures
them; gate_sim_speed_factor says how much faster than modelled time that is.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.samples import Sample

from harness.sim.engine import Engine, Rates, kv_usage
from harness.sim.stats import FINISH_REASONS, SOURCES, Histogram

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class Identity:
    model: str
    profile: str
    tp: int
    instance: int
    external_tier: bool
    speed: float
    max_model_len: int  # the profile's (vllm:cache_config_info: max concurrency)
    tier_counters: bool = True  # False: no counter tells a tier read from a recompute


class SimCollector:
    def __init__(self, engine: Engine, ident: Identity) -> None:
        self.engine = engine
        self.ident = ident
        self.created = time.time()

    def collect(self) -> Iterator[Metric]:
        yield from self._vllm()
        if self.ident.external_tier and self.ident.tier_counters:
            yield from self._lmcache()
        yield from self._sim()

    # -- vLLM --------------------------------------------------------------------------
    def _vllm(self) -> Iterator[Metric]:
        e, st = self.engine, self.engine.stats
        base = ["engine", "model_name"]
        lv = ["0", self.ident.model]

        def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
            g = GaugeMetricFamily(name, doc, labels=base)
            g.add_metric(lv, value)
            return g

        def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
            c = CounterMetricFamily(name, doc, labels=base)
            c.add_metric(lv, value, created=self.created)
            return c

        yield gauge("vllm:num_requests_running",
                    "Number of requests in model execution batches.", e.running)
        yield gauge("vllm:num_requests_waiting",
                    "Number of requests waiting to be processed.", st.waiting)
        w = GaugeMetricFamily("vllm:num_requests_waiting_by_reason",
                              "Number of waiting requests by reason.", labels=[*base, "reason"])
        w.add_metric([*lv, "capacity"], st.waiting)
        w.add_metric([*lv, "deferred"], 0)
        yield w
        yield gauge("vllm:kv_cache_usage_perc",
                    "KV-cache usage. 1 means 100 percent usage.", kv_usage(e))
        yield counter("vllm:prefix_cache_queries",
                      "Prefix cache queries, in terms of number of queried tokens.",
                      st.prefix_queries)
        yield counter("vllm:prefix_cache_hits",
                      "Prefix cache hits, in terms of number of cached tokens.", st.prefix_hits)
        if self.ident.tier_counters:
            yield counter("vllm:external_prefix_cache_queries",
                          "External prefix cache queries from KV connector cross-instance cache "
                          "sharing, in terms of number of queried tokens.", st.external_queries)
            yield counter("vllm:external_prefix_cache_hits",
                          "External prefix cache hits from KV connector cross-instance cache "
                          "sharing, in terms of number of cached tokens.", st.external_hits)
        yield counter("vllm:num_preemptions",
                      "Cumulative number of preemption from the engine.", 0)
        yield counter("vllm:prompt_tokens", "Number of prefill tokens processed.",
                      st.prompt_tokens)
        if self.ident.tier_counters:
            src = CounterMetricFamily("vllm:prompt_tokens_by_source",
                                      "Number of prompt tokens by source.",
                                      labels=[*base, "source"])
            for s in SOURCES:
                src.add_metric([*lv, s], st.by_source[s], created=self.created)
            yield src
            yield counter("vllm:prompt_tokens_cached",
                          "Number of cached prompt tokens (local + external).",
                          st.by_source["local_cache_hit"] + st.by_source["external_kv_transfer"])
        yield counter("vllm:generation_tokens", "Number of generation tokens processed.",
                      st.generation_tokens)
        ok = CounterMetricFamily("vllm:request_success",
                                 "Count of successfully processed requests.",
                                 labels=[*base, "finished_reason"])
        for reason in FINISH_REASONS:
            ok.add_metric([*lv, reason], st.success[reason], created=self.created)
        yield ok
        for name, doc, h in (
            ("vllm:request_prompt_tokens", "Number of prefill tokens processed.",
             st.prompt_hist),
            ("vllm:request_generation_tokens", "Number of generation tokens processed.",
             st.generation_hist),
            ("vllm:request_max_num_generation_tokens",
             "Histogram of maximum number of requested generation tokens.", st.max_tokens_hist),
            ("vllm:time_to_first_token_seconds",
             "Histogram of time to first token in seconds.", st.ttft),
            ("vllm:request_time_per_output_token_seconds",
             "Histogram of time_per_output_token_seconds per request.", st.tpot),
            ("vllm:e2e_request_latency_seconds",
             "Histogram of e2e request latency in seconds.", st.e2e),
            ("vllm:request_queue_time_seconds",
             "Histogram of time spent in WAITING phase for request.", st.queue_time),
            ("vllm:request_inference_time_seconds",
             "Histogram of time spent in RUNNING phase for request.", st.inference_time),
            ("vllm:request_prefill_time_seconds",
             "Histogram of time spent in PREFILL phase for request.", st.prefill_time),
            ("vllm:request_decode_time_seconds",
             "Histogram of time spent in DECODE phase for request.", st.decode_time),
        ):
            yield self._histogram(name, doc, h, base, lv)
        labels = cache_config_labels(e.rates, self.ident.max_model_len)
        info = GaugeMetricFamily("vllm:cache_config_info",
                                 "Information of the LLMEngine CacheConfig",
                                 labels=list(labels))
        info.add_metric(list(labels.values()), 1.0)
        yield info

    def _histogram(self, name: str, doc: str, h: Histogram, labels: list[str],
                   values: list[str]) -> Metric:
        fam = HistogramMetricFamily(name, doc, labels=labels)
        cum = h.cumulative()
        buckets = [(_le(b), float(c)) for b, c in zip(h.bounds, cum, strict=False)]
        buckets.append(("+Inf", float(cum[-1])))
        fam.add_metric(values, buckets, h.sum)
        fam.samples.append(Sample(name + "_created", dict(zip(labels, values, strict=True)),
                                  self.created))
        return fam

    # -- LMCache -----------------------------------------------------------------------
    def _lmcache(self) -> Iterator[Metric]:
        st = self.engine.stats
        labels = ["model_name", "worker_id"]
        workers = [str(w) for w in range(self.ident.tp)]
        model = self.ident.model
        for name, doc, value in (
            ("lmcache:num_retrieve_requests", "Total number of retrieve requests sent to "
             "lmcache", st.lm_retrieve_requests),
            ("lmcache:num_store_requests", "Total number of store requests sent to lmcache",
             st.lm_store_requests),
            ("lmcache:num_requested_tokens", "Total number of tokens requested from lmcache",
             st.lm_requested_tokens),
            ("lmcache:num_hit_tokens", "Total number of tokens hit in lmcache",
             st.lm_hit_tokens),
            ("lmcache:num_stored_tokens", "Total number of tokens stored in lmcache",
             st.lm_stored_tokens),
            ("lmcache:num_remote_read_requests", "Total number of reads from the remote "
             "backend", st.lm_remote_reads),
            ("lmcache:num_remote_read_bytes", "Total number of bytes read from the remote "
             "backend", st.lm_remote_read_bytes),
            ("lmcache:num_lookup_requests", "Total number of lookup requests sent to lmcache",
             st.lm_lookup_requests),
            ("lmcache:num_lookup_requested_tokens", "Total number of tokens requested during "
             "lookup from lmcache", st.lm_lookup_tokens),
        ):
            c = CounterMetricFamily(name, doc, labels=labels)
            for w in workers:  # LMCache reports per TP worker, each the same token counts
                c.add_metric([model, w], value, created=self.created)
            yield c
        h = st.lm_retrieve_time
        fam = HistogramMetricFamily("lmcache:time_to_retrieve", "Time to retrieve from cache "
                                    "(seconds)", labels=labels)
        cum = h.cumulative()
        for w in workers:
            buckets = [(_le(b), float(c))
                       for b, c in zip(h.bounds, cum, strict=False)]
            buckets.append(("+Inf", float(cum[-1])))
            fam.add_metric([model, w], buckets, h.sum)
        yield fam

    # -- the simulator itself ----------------------------------------------------------
    def _sim(self) -> Iterator[Metric]:
        i = self.ident
        g = GaugeMetricFamily("gate_sim_speed_factor",
                              "Modelled durations are divided by this factor (1 = real time).",
                              labels=["model_name"])
        g.add_metric([i.model], i.speed)
        yield g
        info = GaugeMetricFamily("gate_sim_info", "This endpoint is the gate simulator.",
                                 labels=["external_tier", "instance", "model_name", "profile",
                                         "tp"])
        info.add_metric(["on" if i.external_tier else "off", str(i.instance), i.model,
                         i.profile, str(i.tp)], 1.0)
        yield info
        yield from self._schedule_lag()
        tier = self.engine.tier
        t = GaugeMetricFamily("gate_sim_tier_chunks", "Chunks in the external tier's index.",
                              labels=["model_name"])
        t.add_metric([i.model], float(tier.count()) if tier is not None else 0.0)
        yield t


    def _schedule_lag(self) -> Iterator[Metric]:
        """How late the step clock woke behind its modelled schedule (see ScheduleLag):
        a load phase takes the before/after delta and says when the simulator lagged."""
        model = self.ident.model
        lag = self.engine.schedule_lag
        wakes, total, worst = (lag.wakes, lag.total, lag.max) if lag else (0, 0.0, 0.0)
        c = CounterMetricFamily("gate_sim_schedule_wakes", "Step-clock wakes.",
                                labels=["model_name"])
        c.add_metric([model], float(wakes), created=self.created)
        yield c
        c = CounterMetricFamily("gate_sim_schedule_lag_seconds",
                                "Wall seconds the step clock woke behind its modelled "
                                "schedule, summed over wakes.", labels=["model_name"])
        c.add_metric([model], total, created=self.created)
        yield c
        g = GaugeMetricFamily("gate_sim_schedule_lag_max_seconds",
                              "The latest wake behind the modelled schedule since start, s.",
                              labels=["model_name"])
        g.add_metric([model], worst)
        yield g


class EngineProcessCollector:
    """`process_resident_memory_bytes` and `process_start_time_seconds`, in place of
    prometheus_client's ProcessCollector.

    Why: G4 judges the engine's memory growth on `process_resident_memory_bytes`, and
    ProcessCollector reports the simulator's own Python process, whose RSS grows ~20 % in
    its first half minute (heap, caches): a short soak read that as an engine leak the
    modelled engine does not have. The RSS here is the modelled engine's (Engine.rss_bytes:
    the profile's host memory, plus --memory-leak). The start time stays the real
    process's, from /proc as ProcessCollector reads it, so a restart (a new process)
    moves it, which G3's cold-restart check and G4's restart count read. ProcessCollector's
    other families (virtual memory, CPU seconds, open and max fds) are left out: nothing
    in the harness reads them off an engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.started = process_start_time()  # in the engine's process (after a fork)

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily("process_resident_memory_bytes",
                                "Resident memory size in bytes.", value=self.engine.rss_bytes())
        yield GaugeMetricFamily("process_start_time_seconds",
                                "Start time of the process since unix epoch in seconds.",
                                value=self.started)


def process_start_time() -> float:
    """This process's start, seconds since the epoch, as ProcessCollector computes it
    (/proc/self/stat's start ticks after boot + /proc/stat's btime); now where /proc
    cannot say."""
    try:
        stat = Path("/proc/self/stat").read_bytes()
        ticks = float(stat.rsplit(b")", 1)[1].split()[19])
        for line in Path("/proc/stat").read_bytes().splitlines():
            if line.startswith(b"btime "):
                return float(line.split()[1]) + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        pass
    return time.time()


def cache_config_labels(rates: Rates, max_model_len: int) -> dict[str, str]:
    """vllm:cache_config_info's labels, every one vLLM 0.25.1 writes, in its order and
    formats (str() of the Python value: "True", "None", "16", "0.9"). The sizes come from
    the profile at this TP (its GPU prefix cache is the KV cache); the rest are vLLM's
    defaults, the same for both arms: the tier (an LMCache connector) is vLLM's
    kv_transfer_config, not its cache config."""
    blocks = rates.gpu_cache_tokens // rates.block_size
    tokens = blocks * rates.block_size
    return {
        "_block_size_resolved": "True",
        "block_size": str(rates.block_size),
        "cache_dtype": "auto",
        "calculate_kv_scales": "False",
        "enable_prefix_caching": "True",
        "engine": "0",
        "gpu_memory_utilization": str(0.9),
        "hash_block_size": "None",
        "is_attention_free": "False",
        "kv_cache_dtype_skip_layers": "[]",
        "kv_cache_max_concurrency": str(tokens / max_model_len),
        "kv_cache_memory_bytes": "None",
        "kv_cache_size_tokens": str(tokens),
        "kv_offloading_backend": "native",
        "kv_offloading_size": "None",
        "kv_sharing_fast_prefill": "False",
        "mamba_block_size": "None",
        "mamba_cache_dtype": "auto",
        "mamba_cache_mode": "none",
        "mamba_page_size_padded": "None",
        "mamba_ssm_cache_dtype": "auto",
        "num_cpu_blocks": "None",
        "num_gpu_blocks": str(blocks),
        "num_gpu_blocks_override": "None",
        "prefix_caching_hash_algo": "sha256",
        "skip_page_size_padded": "None",
        "sliding_window": "None",
        "user_specified_block_size": "False",
        "user_specified_mamba_block_size": "False",
    }


def build_registry(engine: Engine, ident: Identity) -> CollectorRegistry:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(EngineProcessCollector(engine))
    PlatformCollector(registry=reg)
    GCCollector(registry=reg)
    reg.register(SimCollector(engine, ident))
    return reg


def render(reg: CollectorRegistry) -> bytes:
    return generate_latest(reg)


def _le(bound: float) -> str:
    """A bucket bound as Prometheus prints it ("0.001", "1.0", "2560.0")."""
    return repr(float(bound))
