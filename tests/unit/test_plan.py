"""The planner's formulas on hand-checked examples, the seed's R1 first (docs/plan.md
works the same numbers through)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from harness.errors import UsageError
from harness.plan import (
    Context,
    Measured,
    ModelShape,
    PlanInput,
    Sourced,
    TierInput,
    TierPlan,
    compare,
    from_hf_config,
    judge,
    plan,
    predicted_ttft_p50,
)

QWEN32B = ModelShape(layers=64, kv_heads=8, head_dim=128, dtype="bf16", max_context=32768)
R1_PROMPT, R1_QUESTION, R1_C = 32064, 64, 16  # docs/sim.md: a 32 000-token doc + question
R1_BASE_TTFT, R1_TIER_TTFT = 37.97, 9.30
# One GPU's prefill speed under the planner's model: the baseline recomputes all 16
# prompts at once, so 16 x 32 064 tokens took 37.97 s.
R1_PREFILL = R1_C * R1_PROMPT / R1_BASE_TTFT


def r1(*, ttft: float | None = R1_TIER_TTFT, throughput: float | None = None,
       gds: bool = True, **layout: object) -> PlanInput:
    tier = TierInput(concurrency=R1_C, ttft_p50_s=Sourced(ttft, "R1"),
                     throughput_tps=Sourced(throughput, "R1"), retention_docs=64,
                     prefill_tok_s=Sourced(R1_PREFILL, "R1"))
    base = PlanInput(shape=QWEN32B, layout="TP1", tp=1, instances=1, instances_per_host=1,
                     contexts=(Context(R1_PROMPT, 1.0),), suffix_tokens=R1_QUESTION,
                     output_tokens=128, prefix_sharing=0.0, gds=gds, bounce_bytes_s=25e9,
                     tiers=(tier,))
    return replace(base, **layout)  # type: ignore[arg-type]


def one(inputs: PlanInput) -> TierPlan:
    (tier,) = plan(inputs)
    return tier


def test_kv_bytes_per_token_of_qwen25_32b() -> None:
    assert QWEN32B.kv_bytes_per_token == 64 * 8 * 128 * 2 * 2 == 262_144  # 256 KiB
    assert QWEN32B.kv_bytes_per_token_gpu(8) == 32_768
    assert replace(QWEN32B, dtype="fp8").kv_bytes_per_token == 131_072


def test_r1_peak_read_for_the_tier_ttft() -> None:
    """32 000 tokens x 256 KiB = 8.389 GB a request; 16 of them in the 9.30 s the target
    leaves after the questions' prefill (16 x 64 / P = 0.0758 s): 14.55 GB/s."""
    t = one(r1())
    assert t.cold_bytes == 32_000 * 262_144 == 8_388_608_000
    assert t.compute_s == pytest.approx(16 * 64 / R1_PREFILL) == pytest.approx(0.07579, abs=1e-5)
    assert t.bounce_s == 0.0
    assert t.time_left_s == pytest.approx(9.30 - 0.07579, abs=1e-5)
    assert t.read_peak_bytes_s == pytest.approx(16 * 8.388608e9 / 9.22421, rel=1e-5)
    assert t.read_peak_bytes_s == pytest.approx(14.55e9, rel=1e-3)
    assert t.read_peak_host_bytes_s == t.read_peak_bytes_s  # one host
    # docs/sim.md's 13.9 GB/s from the same TTFT: the simulator batches 16 requests as
    # f(16) = 15.25 solo times and adds 5 ms a read; the planner counts all 16
    sim = 15.25 * 8.388608 / (9.30 - 0.005 - 15.25 * 64 / 12_878)
    assert sim == pytest.approx(13.88, abs=0.01)
    assert t.read_peak_bytes_s is not None
    assert t.read_peak_bytes_s / 1e9 * 15.25 / 16 == pytest.approx(sim, rel=0.01)


def test_r1_averaged_read_is_the_throughput_s_little_law() -> None:
    """The seed's 5.23 GB/s averaged over the requests' lives: 0.6235 requests / s of
    8.389 GB, i.e. 79.8 output tokens / s at 128 a request and a 25.7 s life at c = 16;
    9.22 s of it loading, hence the averaged figure is the peak x 9.22 / 25.7."""
    throughput = 5.23e9 / 8.388608e9 * 128
    assert throughput == pytest.approx(79.80, abs=0.01)
    t = one(r1(throughput=throughput))
    assert t.read_avg_bytes_s == pytest.approx(5.23e9)
    assert t.request_life_s == pytest.approx(25.66, abs=0.01)
    assert t.read_peak_bytes_s is not None and t.time_left_s is not None
    assert t.request_life_s is not None
    assert t.read_avg_bytes_s == pytest.approx(
        t.read_peak_bytes_s * t.time_left_s / t.request_life_s)


def test_r1_write_capacity_and_hot_tier() -> None:
    t = one(r1())
    assert t.write_peak_bytes_s == pytest.approx(R1_PREFILL * 262_144)  # 3.54 GB/s
    assert t.write_peak_bytes_s == pytest.approx(3.542e9, rel=1e-3)
    assert t.capacity_bytes == 64 * 8_388_608_000  # 537 GB for G3's 64 documents
    # 16 sequences of 32 064 prompt + 128 output tokens decode at once
    assert t.hot_bytes_instance == 16 * (32_064 + 128) * 262_144
    assert t.hot_bytes_gpu == t.hot_bytes_instance


def test_without_gds_the_bounce_buffer_takes_its_copy_time_from_the_target() -> None:
    """16 x 8.389 GB through one GPU's 25 GB/s host copy: 5.37 s, leaving 3.86 s."""
    t = one(r1(gds=False))
    assert t.bounce_s == pytest.approx(16 * 8.388608e9 / 25e9) == pytest.approx(5.369, abs=1e-3)
    assert t.time_left_s == pytest.approx(9.30 - 0.07579 - 5.36871, abs=1e-4)
    assert t.read_peak_bytes_s == pytest.approx(16 * 8.388608e9 / 3.8555, rel=1e-4)


def test_two_instances_on_one_host_share_its_volume() -> None:
    """TP4x2 at c = 16: 8 requests an instance, both on one host; a GPU holds 2 of the
    8 KV heads, and copies a quarter of its instance's bytes without GDS."""
    t = one(r1(layout="TP4x2", tp=4, instances=2, instances_per_host=2, gds=False))
    assert (t.per_instance, t.per_host) == (8, 16)
    assert t.kv_bytes_per_token_gpu == 65_536
    assert t.compute_s == pytest.approx(8 * 64 / R1_PREFILL)
    assert t.bounce_s == pytest.approx(8 * 8.388608e9 / (4 * 25e9))
    assert t.read_peak_bytes_s == t.read_peak_host_bytes_s
    assert t.write_peak_bytes_s == pytest.approx(2 * R1_PREFILL * 262_144)
    assert t.hot_bytes_gpu == pytest.approx(8 * (32_064 + 128) * 262_144 / 4)
    # on two hosts, each host's volume serves half the layout
    apart = one(r1(tp=4, instances=2, instances_per_host=1))
    assert apart.read_peak_host_bytes_s == pytest.approx(apart.read_peak_bytes_s / 2)  # type: ignore[operator]


def test_prefix_sharing_and_a_context_mix() -> None:
    """A mix of 3/4 at 32 064 and 1/4 at 8 064 tokens: a mean prompt of 26 064, a mean
    prefix of 26 000 of which half is shared (held once, hot) and half loaded cold."""
    t = one(r1(contexts=(Context(32_064, 0.75), Context(8_064, 0.25)), prefix_sharing=0.5))
    assert t.prompt_tokens == pytest.approx(26_064)
    assert t.shared_tokens == pytest.approx(13_000) and t.cold_tokens == pytest.approx(13_000)
    assert t.cold_bytes == pytest.approx(13_000 * 262_144)
    assert t.capacity_bytes == pytest.approx((64 * 13_000 + 13_000) * 262_144)
    assert t.hot_bytes_instance == pytest.approx((16 * (13_000 + 64 + 128) + 13_000) * 262_144)


def test_a_target_below_the_compute_leaves_no_bandwidth_that_meets_it() -> None:
    t = one(r1(ttft=0.05))
    assert t.unreachable and t.read_peak_bytes_s is None
    assert "leaves no time to read" in t.notes[0]
    (row,) = compare(t, Measured(seq_read=Sourced(20e9, "fio")), 0.2)
    assert (row.status, row.margin, row.needed) == ("SHORT", None, None)


def test_without_a_prefill_speed_the_suffix_is_not_counted_and_said_so() -> None:
    inputs = r1()
    tier = replace(inputs.tiers[0], prefill_tok_s=Sourced(None))
    t = one(replace(inputs, tiers=(tier,)))
    assert t.compute_s is None and t.write_peak_bytes_s is None
    assert t.read_peak_bytes_s == pytest.approx(16 * 8.388608e9 / 9.30)
    assert "not counted" in t.notes[0]
    assert predicted_ttft_p50(t, 14e9, "baseline") is None
    assert predicted_ttft_p50(t, 14e9, "accelerated") is None


def test_the_predictor_reads_the_plan_backwards() -> None:
    """The baseline at the prefill speed the R1 baseline implies gives its 37.97 s back;
    the accelerated arm at the simulator's 13.82 GB/s tier gives 9.79 s (the simulator
    measures 9.30 s: the planner counts 16 requests where the simulator's batch counts
    15.25); at the seed's averaged 5.23 GB/s it would be 25.7 s, which is why a volume's
    read figure is held against the peak."""
    t = one(r1())
    assert predicted_ttft_p50(t, 1.0, "baseline") == pytest.approx(R1_BASE_TTFT)
    assert predicted_ttft_p50(t, 13.82e9, "accelerated") == pytest.approx(9.788, abs=1e-3)
    assert predicted_ttft_p50(t, 5.23e9, "accelerated") == pytest.approx(25.74, abs=0.01)
    # at the peak the plan asks for, the prediction is the target
    assert t.read_peak_host_bytes_s is not None
    assert predicted_ttft_p50(t, t.read_peak_host_bytes_s, "accelerated") == \
        pytest.approx(R1_TIER_TTFT)
    slow = one(r1(gds=False))
    assert predicted_ttft_p50(slow, 13.82e9, "accelerated") == pytest.approx(9.788 + 5.369,
                                                                             abs=2e-3)
    with pytest.raises(ValueError):
        predicted_ttft_p50(t, 0.0, "accelerated")


@pytest.mark.parametrize(("measured", "status", "margin"), [
    (9.0, "SHORT", -0.10), (10.0, "AT RISK", 0.0), (11.0, "AT RISK", 0.10),
    (12.0, "OK", 0.20), (13.0, "OK", 0.30),
])
def test_judge(measured: float, status: str, margin: float) -> None:
    got = judge(10.0, measured, 0.2)
    assert got[0] == status and got[1] == pytest.approx(margin)


def test_compare_holds_each_requirement_against_its_measurement() -> None:
    t = one(r1(throughput=79.8))
    rows = compare(t, Measured(seq_read=Sourced(12e9, "fio fx100 seq-read"),
                               seq_write=Sourced(6e9, "fio fx100 seq-write")), 0.2)
    got = {(r.requirement, r.status) for r in rows}
    assert got == {("read_peak", "SHORT"), ("read_avg", "OK"), ("write_peak", "OK")}
    peak = next(r for r in rows if r.requirement == "read_peak")
    assert peak.margin == pytest.approx(12 / 14.5506 - 1, abs=1e-4)  # -17.5 %
    # nothing measured: nothing compared
    assert compare(t, Measured(), 0.2) == ()


QWEN_HF = {"architectures": ["Qwen2ForCausalLM"], "hidden_size": 5120,
           "num_attention_heads": 40, "num_key_value_heads": 8, "num_hidden_layers": 64,
           "max_position_embeddings": 32768, "torch_dtype": "bfloat16",
           "_name_or_path": "Qwen/Qwen2.5-32B-Instruct"}


def test_a_hugging_face_config_gives_the_shape() -> None:
    shape = from_hf_config(QWEN_HF)
    assert shape == replace(QWEN32B, name="Qwen/Qwen2.5-32B-Instruct")
    assert from_hf_config(QWEN_HF, dtype="fp8").kv_bytes_per_token == 131_072
    # head_dim given (Gemma 3 keeps its text model under text_config)
    gemma = {"text_config": {"num_hidden_layers": 18, "num_attention_heads": 4,
                             "num_key_value_heads": 1, "head_dim": 256, "hidden_size": 640,
                             "max_position_embeddings": 32768}, "torch_dtype": "bfloat16"}
    got = from_hf_config(gemma, dtype="bf16")
    assert (got.layers, got.kv_heads, got.head_dim) == (18, 1, 256)
    # no GQA: as many KV heads as heads
    mha = {k: v for k, v in QWEN_HF.items() if k != "num_key_value_heads"}
    assert from_hf_config(mha).kv_heads == 40


@pytest.mark.parametrize(("change", "key"), [
    ({"num_hidden_layers": None}, "num_hidden_layers"),
    ({"num_key_value_heads": 0}, "num_key_value_heads"),
    ({"hidden_size": 5121}, "head_dim"),
    ({"torch_dtype": "int4"}, "torch_dtype"),
    ({"max_position_embeddings": "long"}, "max_position_embeddings"),
])
def test_a_bad_hugging_face_config_names_its_key(change: dict[str, object], key: str) -> None:
    data = {k: v for k, v in {**QWEN_HF, **change}.items() if v is not None}
    with pytest.raises(UsageError) as err:
        from_hf_config(data)
    assert err.value.key == key
