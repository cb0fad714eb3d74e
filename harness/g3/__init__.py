"""G3, the main gate: a paired A/B of the accelerator (see docs/g3.md). The engines,
arms, phases and cells it drives are harness.serving's, shared with G2 and G4.

plan.py      which repetitions, in which seeded ABBA order; the suite's plan (the checks
             it must produce); dry-run estimates
preflight.py the arms comparable before anything is measured
evidence.py  /metrics deltas and storage read bandwidth during a measured phase (the
             devices' counters: harness/serving/disks.py)
clocks.py, devices.py  the engine's clock and the devices' reads, judged
rules.py     pure judgments: arms comparable, restart cold, tier used, failures bounded,
             output at the fixed length
records.py   what a measured pair stores and how a resume reads it back
session.py   runs a cell's repetition pairs, stores every phase, decides with harness.stats
"""
