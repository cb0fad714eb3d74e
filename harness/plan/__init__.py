"""The planner: a customer's SLA turned into storage requirements (pure, no I/O).

A joint test starts from the SLA, not from hardware specs: concurrency and context
length fix the KV capacity and the prefill write peak, the TTFT and throughput targets
the read bandwidth the cold-recovery path must sustain. `plan` computes them per tier,
`compare` holds them against what G2 measured (OK / AT RISK / SHORT; never a gate),
`predicted_ttft_p50` reads the model backwards. Formulas and the seed's R1 worked
through: docs/plan.md. A library: it imports the foundation and itself only.
"""

from harness.plan.compare import Comparison, Measured, Status, compare, judge
from harness.plan.formulas import TierPlan, plan
from harness.plan.inputs import GB, Context, PlanInput, Sourced, TierInput
from harness.plan.predict import Arm, predicted_ttft_p50
from harness.plan.shape import DTYPE_BYTES, ModelShape, from_hf_config

__all__ = [
    "DTYPE_BYTES", "GB", "Arm", "Comparison", "Context", "Measured", "ModelShape",
    "PlanInput", "Sourced", "Status", "TierInput", "TierPlan", "compare", "from_hf_config",
    "judge", "plan", "predicted_ttft_p50",
]
