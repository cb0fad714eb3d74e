"""The simulated lab's engine: `gate sim`.

An OpenAI-compatible streaming server shaped like vLLM (harness.sim.server) over a model
of an engine (harness.sim.engine: prefill shared by the batch, decode slowing with it, a
GPU prefix cache, an optional external KV tier with its index on disk) with named,
calibrated profiles (harness.sim.profiles) and process control for demos and tests
(harness.sim.control). Nothing heavy is imported here.
"""
