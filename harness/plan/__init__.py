"""The planner: a customer's SLA turned into storage requirements (pure, no I/O).

A joint test starts from the SLA, not from hardware specs: concurrency and context
length fix the KV capacity and the prefill write peak, the TTFT and throughput targets
the read bandwidth the cold-recovery path must sustain. `plan` computes them per tier,
`compare` holds them against what G2 measured (OK / AT RISK / SHORT; never a gate),
`predicted_ttft_p50` reads the model backwards. Formulas and the seed's R1 worked
through: docs/plan.md. `site` builds the inputs from flags, a site config and G2's figures
(`g2`), and `versus` predicts each arm per tier: `gate plan` and G3's report use them
alike. A library: it imports the foundation, the config models and itself only (never the
simulator, the store or the workflow).
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
